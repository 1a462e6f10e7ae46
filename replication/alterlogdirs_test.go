package replication

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// TestAlterLogDir (KIP-113): a replica's log moves from /d1 to /d2 while it
// is served: DescribeLogDirs shows the future replica in /d2 (is_future,
// its lag) during the copy, which an exceeded quota holds back for a
// second; then the log is in /d2 with every record, the partition serves
// from it, and OnLogMoved reports it.
func TestAlterLogDir(t *testing.T) {
	logs, err := storage.OpenManager(storage.ManagerOptions{FS: vfs.NewMem(), LogDirs: []string{"/d1", "/d2"}, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	moved := make(chan storage.TopicPartition, 1)
	rm := New(Config{NodeID: 1, Logs: logs, Now: time.Now,
		OnLogMoved:        func(tp storage.TopicPartition) { moved <- tp },
		AlterLogDirsQuota: &holdQuota{until: time.Now().Add(time.Second)}})
	defer rm.Close()
	cache := metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})
	cache.Subscribe(rm.OnImage)
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = metadatacache.MetadataVersionFeature, metadatacache.MV3_7_IV2
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = "t", topicID("t")
	pr := metadatacache.NewPartitionRecord()
	pr.PartitionID, pr.TopicID, pr.Replicas, pr.Isr, pr.Leader = 0, tr.TopicID, []int32{1}, []int32{1}, 1
	if err := cache.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: 2, Epoch: 1, Records: []metadatacache.Record{fl, tr, pr}}); err != nil {
		t.Fatal(err)
	}
	tp := storage.TopicPartition{Topic: "t", Partition: 0}
	if dir, _ := logs.LogDirOf(tp); dir != "/d1" {
		_, ok := rm.Partition("t", 0)
		t.Fatalf("log in %s (partition %v, topics %d)", dir, ok, len(cache.Image().Topics()))
	}
	cur, _ := logs.Log(tp)
	value := bytes.Repeat([]byte("x"), 1000)
	for range 40 {
		b := storage.BuildBatch(storage.BatchOptions{}, storage.Record{Value: value})
		if _, err := cur.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := rm.AlterLogDir(tp, "/d2"); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	var sawFuture bool
	for _, d := range rm.DescribeLogDirs(req).Dirs {
		for _, tt := range d.Topics {
			for _, p := range tt.Partitions {
				if d.Dir == "/d2" && p.IsFuture {
					sawFuture = true
					t.Logf("future replica in %s: size %d, lag %d", d.Dir, p.Size, p.OffsetLag)
				}
			}
		}
	}
	if !sawFuture {
		t.Fatal("DescribeLogDirs shows no future replica during the move")
	}
	start := time.Now()
	select {
	case got := <-moved:
		if got != tp {
			t.Fatalf("moved %v", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the move did not finish")
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("moved in %v while the quota was exceeded", took)
	}
	if dir, _ := logs.LogDirOf(tp); dir != "/d2" {
		t.Fatalf("after the move the log is in %s", dir)
	}
	p, _ := rm.Partition("t", 0)
	p.mu.RLock()
	l := p.log
	p.mu.RUnlock()
	if l.Dir() != "/d2/t-0" || l.LogEndOffset() != 40 {
		t.Fatalf("partition serves %s at %d", l.Dir(), l.LogEndOffset())
	}
	if _, _, ok := logs.FutureLog(tp); ok {
		t.Fatal("future log left")
	}
}

// holdQuota is an alter-log-dirs quota exceeded until a time.
type holdQuota struct{ until time.Time }

func (q *holdQuota) IsThrottled(string, int32) bool { return true }
func (q *holdQuota) IsQuotaExceeded() bool          { return time.Now().Before(q.until) }
func (q *holdQuota) Record(int64)                   {}
