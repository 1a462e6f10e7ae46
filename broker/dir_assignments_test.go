package broker

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

// dirImage: metadata.version mv, topic t (id 7) with partitions 0-2 on
// brokers 1 and 2; broker 1's directories: UNASSIGNED, dirA, dirB.
func dirImage(t *testing.T, mv int16) *metadatacache.Image {
	t.Helper()
	c := metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = metadatacache.MetadataVersionFeature, mv
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = "t", [16]byte{7}
	recs := []metadatacache.Record{fl, tr}
	unassigned := [16]byte{15: 1}
	for p, d := range [][16]byte{unassigned, {0xa}, {0xb}} {
		pr := metadatacache.NewPartitionRecord()
		pr.PartitionID, pr.TopicID, pr.Replicas, pr.Isr, pr.Leader = int32(p), tr.TopicID, []int32{1, 2}, []int32{1, 2}, 1
		pr.Directories = [][16]byte{d, {0xc}}
		recs = append(recs, pr)
	}
	if err := c.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	return c.Image()
}

// TestMisassigned: a replica whose log is in another directory than the
// metadata names (UNASSIGNED included) is reported with the directory it
// is in; one in the named directory, one without a local log and
// another broker's replicas are not; nothing below 3.7-IV2.
func TestMisassigned(t *testing.T) {
	dirs := map[string][16]byte{"/a": {0xa}, "/b": {0xb}}
	logDirOf := func(tp storage.TopicPartition) (string, bool) {
		switch tp.Partition {
		case 0, 1:
			return "/b", true
		}
		return "", false // partition 2: no local log yet
	}
	got := misassigned(dirImage(t, metadatacache.MV3_7_IV2), 1, logDirOf, dirs)
	want := map[tipKey][16]byte{{[16]byte{7}, 0}: {0xb}, {[16]byte{7}, 1}: {0xb}}
	if len(got) != len(want) || got[tipKey{[16]byte{7}, 0}] != want[tipKey{[16]byte{7}, 0}] || got[tipKey{[16]byte{7}, 1}] != want[tipKey{[16]byte{7}, 1}] {
		t.Fatalf("misassigned %v, want %v", got, want)
	}
	if got := misassigned(dirImage(t, metadatacache.MV3_7_IV2), 3, logDirOf, dirs); len(got) != 0 {
		t.Errorf("broker 3 hosts nothing: %v", got)
	}
	if got := misassigned(dirImage(t, metadatacache.MV3_7_IV2-1), 1, logDirOf, dirs); len(got) != 0 {
		t.Errorf("below 3.7-IV2: %v", got)
	}

	req, keys := assignmentsRequest(1, 42, got)
	if req.BrokerID != 1 || req.BrokerEpoch != 42 || len(keys) != 2 || len(req.Directories) != 1 ||
		req.Directories[0].ID != ([16]byte{0xb}) || len(req.Directories[0].Topics) != 1 ||
		len(req.Directories[0].Topics[0].Partitions) != 2 || req.Directories[0].Topics[0].Partitions[1].Partition != 1 {
		t.Fatalf("request %+v", req)
	}
	// A backlog goes out maxAssignmentsPerRequest at a time.
	big := map[tipKey][16]byte{}
	for p := int32(0); p < maxAssignmentsPerRequest+10; p++ {
		big[tipKey{[16]byte{7}, p}] = [16]byte{0xa}
	}
	if _, keys := assignmentsRequest(1, 42, big); len(keys) != maxAssignmentsPerRequest {
		t.Errorf("%d assignments in one request", len(keys))
	}
}

// TestDirAssignerRescan: a replica moved to another log dir (KIP-113) with
// no metadata change is reported once the mover asks for a rescan.
func TestDirAssignerRescan(t *testing.T) {
	img := dirImage(t, metadatacache.MV3_7_IV2)
	dirs := map[string][16]byte{"/a": {0xa}, "/b": {0xb}}
	var moved atomic.Bool
	logDirOf := func(tp storage.TopicPartition) (string, bool) {
		switch {
		case tp.Partition == 1 && moved.Load():
			return "/b", true
		case tp.Partition == 1:
			return "/a", true
		case tp.Partition == 2:
			return "/b", true
		}
		return "", false // partition 0: no local log
	}
	sent := make(chan *kmsg.AssignReplicasToDirsRequest, 4)
	send := func(_ context.Context, r kmsg.Request) (kmsg.Response, error) {
		req := r.(*kmsg.AssignReplicasToDirsRequest)
		sent <- req
		return req.ResponseKind(), nil
	}
	a := newDirAssigner(1, dirs, logDirOf, func() int64 { return 5 }, send, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.run(ctx)
	a.onImage(nil, img)
	select {
	case r := <-sent:
		t.Fatalf("nothing is misassigned, yet sent %+v", r)
	case <-time.After(100 * time.Millisecond):
	}
	moved.Store(true)
	a.rescan()
	select {
	case r := <-sent:
		if len(r.Directories) != 1 || r.Directories[0].ID != ([16]byte{0xb}) || r.Directories[0].Topics[0].Partitions[0].Partition != 1 {
			t.Fatalf("request %+v", r)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no AssignReplicasToDirs after the rescan")
	}
}
