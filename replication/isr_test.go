package replication

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The sequence that kept a follower out of the ISR for minutes: the leader
// is killed (kill -9) and restarted, its successor leads an epoch in which
// it appends nothing, is stopped (SIGSTOP) until a third node leads, and
// resumes. Its leader-epoch-checkpoint ends with the empty epoch, which no
// other replica has: the new leader answers its fetches with a diverging
// epoch at its own log end, and the follower must drop that entry
// (UnifiedLog.truncateTo truncates the epoch cache even when the offset is
// at the log end) to fetch again and rejoin the ISR within
// replica.lag.time.max.ms.
func TestReplicationIsrRejoinAfterEmptyEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testReplicationConfig()
		c := newCluster(t, 3, cfg)
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, map[string]string{"min.insync.replicas": "2"})
		for i := range 3 {
			if res := <-c.produceAsync(1, "t", -1, batch(2, "a"+string(rune('0'+i)))); res.ErrorCode != 0 {
				t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
			}
		}
		// kill -9 of the leader: the controller elects node 2 (epoch 1)
		c.crash(1)
		c.elect("t", 2, []int32{2, 3})
		c.waitFor("node 2 leads", func() bool { return c.part(2, "t").Snapshot().IsLeader })
		c.restartCrashed(1)
		c.waitFor("ISR {1,2,3}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) })
		// SIGSTOP of node 2 before it appended anything in epoch 1: node 3
		// leads epoch 2 and takes records
		c.node(2).down.Store(true)
		c.elect("t", 3, []int32{1, 3})
		c.waitFor("node 3 leads", func() bool { return c.part(3, "t").Snapshot().IsLeader })
		for i := range 3 {
			if res := <-c.produceAsync(3, "t", -1, batch(2, "b"+string(rune('0'+i)))); res.ErrorCode != 0 {
				t.Fatalf("produce to node 3: %v", kerr.ErrorForCode(res.ErrorCode))
			}
		}
		if e := c.part(2, "t").log.EpochEntries(); len(e) == 0 || e[len(e)-1] != [2]int64{1, 6} {
			t.Fatalf("node 2's epoch cache %v: the sequence no longer leaves its empty epoch", e)
		}
		// SIGCONT: node 2 catches up and is back in the ISR well within
		// replica.lag.time.max.ms
		c.node(2).down.Store(false)
		resumed := time.Now()
		c.waitFor("ISR {1,2,3}", func() bool {
			return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) || time.Since(resumed) > cfg.LagTimeMax
		})
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1, 2, 3}) {
			s := c.part(2, "t").Snapshot()
			t.Fatalf("ISR %v %v after node 2 resumed (node 2 at %d, epochs %v; leader at %d)", got, cfg.LagTimeMax,
				s.LogEndOffset, c.part(2, "t").log.EpochEntries(), c.part(3, "t").Snapshot().LogEndOffset)
		}
		want := c.logValues(3, "t")
		for _, id := range []int32{1, 2} {
			if got := c.logValues(id, "t"); !slices.Equal(got, want) {
				t.Fatalf("node %d log %v, want %v", id, got, want)
			}
		}
		if e := c.part(2, "t").log.EpochEntries(); !slices.Equal(e, c.part(3, "t").log.EpochEntries()) {
			t.Fatalf("node 2 epochs %v, leader %v", e, c.part(3, "t").log.EpochEntries())
		}
	})
}
