package replication

import (
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// TestNewLogInNamedDirectory: a new replica's log goes to the log dir
// whose directory.id the metadata names for this broker (KIP-858,
// LogManager.getOrCreateLog with a target directory); an UNASSIGNED
// replica goes where the log manager puts new logs (the least loaded dir).
func TestNewLogInNamedDirectory(t *testing.T) {
	logs, err := storage.OpenManager(storage.ManagerOptions{FS: vfs.NewMem(), LogDirs: []string{"/d1", "/d2"}, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	ids := map[string][16]byte{"/d1": {0: 1, 15: 0xd1}, "/d2": {0: 1, 15: 0xd2}}
	rm := New(Config{NodeID: 1, Logs: logs, Now: time.Now, LogDirByID: func(id [16]byte) (string, bool) {
		for d, did := range ids {
			if did == id {
				return d, true
			}
		}
		return "", false
	}})
	defer rm.Close()
	cache := metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})
	cache.Subscribe(rm.OnImage)
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = metadatacache.MetadataVersionFeature, metadatacache.MV3_7_IV2
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = "t", topicID("t")
	recs := []metadatacache.Record{fl, tr}
	// Partitions 0 and 1 named in /d2, partition 2 UNASSIGNED: without the
	// names, the least loaded dir would take 0 (/d1) and 1 (/d2).
	for p, d := range [][16]byte{ids["/d2"], ids["/d2"], {15: 1}} {
		pr := metadatacache.NewPartitionRecord()
		pr.PartitionID, pr.TopicID, pr.Replicas, pr.Isr, pr.Leader = int32(p), tr.TopicID, []int32{1}, []int32{1}, 1
		pr.Directories = [][16]byte{d}
		recs = append(recs, pr)
	}
	if err := cache.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	for p, want := range []string{"/d2", "/d2", "/d1"} {
		if got, ok := logs.LogDirOf(storage.TopicPartition{Topic: "t", Partition: int32(p)}); !ok || got != want {
			t.Errorf("t-%d in %q, want %s", p, got, want)
		}
	}
}
