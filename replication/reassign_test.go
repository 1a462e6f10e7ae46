package replication

import (
	"slices"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

// A partition reassignment (KIP-455) as the replica managers see it: the
// controller's first record adds a replica outside the ISR, which creates
// its log and fetches from the leader until the leader adds it to the ISR;
// the completing record removes the old leader, which stops and deletes
// its log while the partition lives on, and the new leader serves
// everything that was written before.
func TestReplicationReassignment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.createTopic("t", []int32{1}, 1, []int32{1}, nil)
		if res := <-c.produceAsync(1, "t", -1, batch(5, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		// [1] -> [2]: replicas [2 1], adding [2], removing [1].
		start := metadatacache.NewPartitionChangeRecord()
		start.TopicID, start.PartitionID = topicID("t"), 0
		start.Replicas, start.AddingReplicas, start.RemovingReplicas = []int32{2, 1}, []int32{2}, []int32{1}
		c.apply(start)
		c.waitFor("the adding replica in the ISR", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2}) })
		if got, want := c.logValues(2, "t"), c.logValues(1, "t"); !slices.Equal(got, want) || len(got) != 5 {
			t.Fatalf("adding replica's log %v, leader's %v", got, want)
		}
		if _, ok := c.node(3).rm.Partition("t", 0); ok {
			t.Fatal("node 3 holds a partition it is no replica of")
		}
		// Completion: replicas [2], ISR [2], leader 2.
		done := metadatacache.NewPartitionChangeRecord()
		done.TopicID, done.PartitionID = topicID("t"), 0
		done.Replicas, done.Isr, done.Leader = []int32{2}, []int32{2}, 2
		done.AddingReplicas, done.RemovingReplicas = []int32{}, []int32{}
		c.apply(done)
		c.waitFor("node 1 to drop its replica", func() bool {
			_, ok := c.node(1).rm.Partition("t", 0)
			return !ok
		})
		c.node(1).logs.mu.Lock()
		deleted := slices.Contains(c.node(1).logs.deleted, storage.TopicPartition{Topic: "t", Partition: 0})
		c.node(1).logs.mu.Unlock()
		if !deleted {
			t.Fatal("node 1 kept the log of a replica moved away")
		}
		if res := <-c.produceAsync(2, "t", -1, batch(1, "b")); res.ErrorCode != 0 {
			t.Fatalf("produce to the new leader: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		if got := c.logValues(2, "t"); len(got) != 6 {
			t.Fatalf("new leader's log %v", got)
		}
	})
}
