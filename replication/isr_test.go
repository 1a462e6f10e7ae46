package replication

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
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
// With a leader without KIP-320 (Fetch v11) the follower truncates through
// OffsetForLeaderEpoch instead, by the same rules.
func TestReplicationIsrRejoinAfterEmptyEpoch(t *testing.T) {
	for _, v := range []int16{17, 11} {
		t.Run(fmt.Sprint("fetch v", v), func(t *testing.T) { testIsrRejoinAfterEmptyEpoch(t, v) })
	}
}

func testIsrRejoinAfterEmptyEpoch(t *testing.T, fetchVersion int16) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testReplicationConfig()
		c := newCluster(t, 3, cfg)
		c.fetchVersion = fetchVersion
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

// registerBrokers registers brokers in a harness's image, unfenced, with
// brokerEpochOf epochs.
func (h *harness) registerBrokers(ids ...int32) {
	h.t.Helper()
	var recs []metadatacache.Record
	for _, id := range ids {
		r := metadatacache.NewRegisterBrokerRecord()
		r.BrokerID, r.BrokerEpoch, r.Fenced = id, brokerEpochOf(id), false
		recs = append(recs, r)
	}
	h.apply(recs...)
}

// followerFetch fetches partition 0 of topic as replica id with broker
// epoch epoch (Fetch v15, ReplicaState) and returns the partition's error.
func (h *harness) followerFetch(topic string, id int32, epoch, offset int64) int16 {
	h.t.Helper()
	req := fetchReq(15, 0, 1, 1<<20, fetchPartSpec{topic: topic, offset: offset, epoch: 0})
	req.ReplicaID = -1
	req.ReplicaState.ID, req.ReplicaState.Epoch = id, epoch
	return h.fetch(req).Topics[0].Partitions[0].ErrorCode
}

// The high watermark does not move while the ISR is below the effective
// min.insync.replicas (min of min.insync.replicas and the replica count),
// even for acks=1 appends (KAFKA-15583).
func TestHighWatermarkStrictMinIsr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.registerBrokers(1, 2, 3)
		h.createTopic("t", 1, []int32{1, 2, 3}, 1, []int32{1}, map[string]string{"min.insync.replicas": "2"})
		h.createTopic("one", 1, []int32{1}, 1, nil, map[string]string{"min.insync.replicas": "2"})
		if p := h.produce("t", 0, batch(2, "a")); p.ErrorCode != 0 {
			t.Fatalf("acks=1: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		part, _ := h.rm.Partition("t", 0)
		if hw := part.HighWatermark(); hw != 0 {
			t.Fatalf("HW %d with ISR {1} under min.insync.replicas=2", hw)
		}
		// one replica: the effective min ISR is 1
		if p := h.produce("one", 0, batch(2, "a")); p.ErrorCode != 0 {
			t.Fatalf("acks=1: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		if one, _ := h.rm.Partition("one", 0); one.HighWatermark() != 2 {
			t.Fatalf("HW %d of a one-replica partition with min.insync.replicas=2", one.HighWatermark())
		}
		// node 2 joins the ISR and fetches: the high watermark follows it
		c := metadatacache.NewPartitionChangeRecord()
		c.TopicID, c.PartitionID, c.Isr = topicID("t"), 0, []int32{1, 2}
		h.apply(c)
		if code := h.followerFetch("t", 2, brokerEpochOf(2), 2); code != 0 {
			t.Fatalf("follower fetch: %v", kerr.ErrorForCode(code))
		}
		if hw := part.HighWatermark(); hw != 2 {
			t.Fatalf("HW %d with ISR {1,2}", hw)
		}
	})
}

// A follower outside the ISR that is caught up (within
// replica.lag.time.max.ms) and eligible holds the high watermark back as an
// ISR member would, so that it is not left behind a high watermark it can
// never reach before it joins (Partition.maybeIncrementLeaderHW's
// shouldWaitForReplicaToJoinIsr); a fenced one, or one lagging longer, does
// not.
func TestHighWatermarkWaitsForCaughtUpFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.registerBrokers(1, 2, 3)
		const lag = 10 * time.Second
		h.rm.isr.lag.Store(int64(lag))
		h.createTopic("t", 1, []int32{1, 2, 3}, 1, []int32{1}, nil)
		part, _ := h.rm.Partition("t", 0)
		h.produce("t", 0, batch(2, "a"))
		if hw := part.HighWatermark(); hw != 2 {
			t.Fatalf("HW %d", hw)
		}
		// both followers catch up; node 3's broker is then fenced
		for _, id := range []int32{2, 3} {
			if code := h.followerFetch("t", id, brokerEpochOf(id), 2); code != 0 {
				t.Fatalf("fetch: %v", kerr.ErrorForCode(code))
			}
		}
		f := metadatacache.NewFenceBrokerRecord()
		f.ID, f.Epoch = 3, brokerEpochOf(3)
		h.apply(f)
		h.produce("t", 0, batch(2, "b"))
		if hw := part.HighWatermark(); hw != 2 {
			t.Fatalf("HW %d passed caught-up node 2 (at 2)", hw)
		}
		// node 2 reaches 3: the high watermark follows it
		if code := h.followerFetch("t", 2, brokerEpochOf(2), 3); code != 0 {
			t.Fatalf("fetch: %v", kerr.ErrorForCode(code))
		}
		if hw := part.HighWatermark(); hw != 3 {
			t.Fatalf("HW %d, want node 2's 3", hw)
		}
		// node 2 stops fetching: once it has not been caught up for the lag
		// time the high watermark goes on without it
		time.Sleep(lag + time.Second)
		part.refreshHighWatermark()
		if hw := part.HighWatermark(); hw != 4 {
			t.Fatalf("HW %d after node 2 lagged for %v", hw, lag)
		}
	})
}

// A fetch with a broker epoch older than the follower's registration (a
// previous incarnation of the broker) is refused with NOT_LEADER_OR_FOLLOWER
// and changes nothing (Replica.updateFetchStateOrThrow, KIP-903).
func TestFollowerFetchStaleBrokerEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.registerBrokers(1, 2)
		h.createTopic("t", 1, []int32{1, 2}, 1, nil, nil)
		h.produce("t", 0, batch(2, "a"))
		part, _ := h.rm.Partition("t", 0)
		if code := h.followerFetch("t", 2, brokerEpochOf(2)-1, 2); code != kerr.NotLeaderForPartition.Code {
			t.Fatalf("stale broker epoch: %v", kerr.ErrorForCode(code))
		}
		if hw := part.HighWatermark(); hw != 0 {
			t.Fatalf("HW %d moved on a stale fetch", hw)
		}
		if code := h.followerFetch("t", 2, brokerEpochOf(2), 2); code != 0 {
			t.Fatalf("current broker epoch: %v", kerr.ErrorForCode(code))
		}
		if hw := part.HighWatermark(); hw != 2 {
			t.Fatalf("HW %d", hw)
		}
	})
}

// KIP-841: a follower whose broker is fenced or in controlled shutdown
// never joins the ISR, however caught up; it joins once unfenced.
func TestReplicationIsrIneligibleBrokers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testReplicationConfig()
		c := newCluster(t, 3, cfg)
		f := metadatacache.NewFenceBrokerRecord()
		f.ID, f.Epoch = 2, brokerEpochOf(2)
		s := metadatacache.NewBrokerRegistrationChangeRecord()
		s.BrokerID, s.BrokerEpoch, s.InControlledShutdown = 3, brokerEpochOf(3), 1
		c.apply(f, s)
		c.createTopic("t", []int32{1, 2, 3}, 1, []int32{1}, nil)
		if res := <-c.produceAsync(1, "t", 1, batch(2, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.waitFor("followers caught up", func() bool {
			return c.part(2, "t").Snapshot().LogEndOffset == 2 && c.part(3, "t").Snapshot().LogEndOffset == 2
		})
		time.Sleep(2 * cfg.LagTimeMax)
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1}) {
			t.Fatalf("ISR %v with node 2 fenced and node 3 shutting down", got)
		}
		u := metadatacache.NewUnfenceBrokerRecord()
		u.ID, u.Epoch = 2, brokerEpochOf(2)
		c.apply(u)
		c.waitFor("ISR {1,2}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2}) })
		time.Sleep(cfg.LagTimeMax)
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1, 2}) {
			t.Fatalf("ISR %v with node 3 shutting down", got)
		}
	})
}

// An accepted AlterPartition commits the ISR at once, before the image
// brings the PartitionChangeRecord (Partition.handleAlterPartitionUpdate):
// a shrink lets the high watermark go on without the removed follower, and
// the image, when it comes, changes nothing.
func TestReplicationAlterPartitionAnswerCommitsIsr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testReplicationConfig()
		c := newCluster(t, 3, cfg)
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, nil)
		if res := <-c.produceAsync(1, "t", -1, batch(2, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.holdImages.Store(true) // the controller answers; its records reach no image yet
		c.node(3).down.Store(true)
		res := <-c.produceAsync(1, "t", -1, batch(2, "b"))
		if res.ErrorCode != 0 {
			t.Fatalf("acks=all across the shrink: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		lp := c.part(1, "t")
		if s := lp.Snapshot(); !slices.Equal(s.ISR, []int32{1, 2}) || s.HighWatermark != 4 {
			t.Fatalf("leader %+v before the image", s)
		}
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1, 2, 3}) {
			t.Fatalf("image ISR %v: the change should still be held", got)
		}
		c.releaseImages()
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1, 2}) {
			t.Fatalf("image ISR %v", got)
		}
		if s := lp.Snapshot(); !slices.Equal(s.ISR, []int32{1, 2}) || s.HighWatermark != 4 {
			t.Fatalf("leader %+v after the image", s)
		}
	})
}

// A leader starting another leader epoch keeps what it knows of its
// followers' logs; their lag clocks restart as caught up if in the ISR
// (Replica.resetReplicaState with isNewLeader false).
func TestLeaderReelectedKeepsFollowerState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.registerBrokers(1, 2, 3)
		h.createTopic("t", 1, []int32{1, 2, 3}, 1, []int32{1, 2}, nil)
		h.produce("t", 0, batch(2, "a"))
		h.followerFetch("t", 2, brokerEpochOf(2), 2)
		h.followerFetch("t", 3, brokerEpochOf(3), 1)
		time.Sleep(time.Minute)
		h.changeLeader("t", 0, 1) // leader epoch 1, same leader
		part, _ := h.rm.Partition("t", 0)
		part.stateMu.Lock()
		defer part.stateMu.Unlock()
		f2, f3 := part.followers[2], part.followers[3]
		if f2 == nil || f3 == nil || f2.logEndOffset != 2 || f3.logEndOffset != 1 {
			t.Fatalf("follower state lost on re-election: %+v %+v", f2, f3)
		}
		if !f2.lastCaughtUp.Equal(time.Now()) || !f3.lastCaughtUp.IsZero() || f2.lastFetchLeaderLEO != 2 {
			t.Fatalf("lag clocks: in ISR %+v, out %+v", f2, f3)
		}
	})
}

// A follower whose only difference from the leader is an empty epoch at its
// log end gets the leader's high watermark in the diverging-epoch answer;
// with nothing to fetch after the truncation, the leader's fetch session
// never sends that high watermark again (it did not change), so the
// follower takes it from the answer once its truncation is done.
func TestReplicationDivergingEpochAnswerHighWatermark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, nil)
		if res := <-c.produceAsync(1, "t", -1, batch(3, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.waitFor("HW 3 everywhere", func() bool {
			return c.part(2, "t").HighWatermark() == 3 && c.part(3, "t").HighWatermark() == 3
		})
		// node 3 is cut off before it learned the last high watermark, leads
		// epoch 1 without appending, and node 2 takes over in epoch 2
		c.node(3).down.Store(true)
		p3 := c.part(3, "t")
		p3.stateMu.Lock()
		p3.hw.Store(2)
		p3.stateMu.Unlock()
		c.elect("t", 3, nil)
		c.waitFor("node 3 leads", func() bool { return p3.Snapshot().IsLeader })
		c.elect("t", 2, []int32{1, 2})
		c.waitFor("node 2 leads", func() bool { return c.part(2, "t").Snapshot().IsLeader })
		c.node(3).down.Store(false)
		c.waitFor("ISR {1,2,3}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) })
		time.Sleep(5 * time.Second)
		if s := p3.Snapshot(); s.HighWatermark != 3 || s.LogEndOffset != 3 {
			t.Fatalf("node 3 %+v, want high watermark 3", s)
		}
	})
}

// The other sequence of the finding: every node is killed at once, and as
// they come back one leads an epoch for a moment, appending nothing, before
// the controller moves leadership on. Every replica must be back in the ISR
// with the leader's log within replica.lag.time.max.ms of the last restart.
func TestReplicationIsrAfterWholeClusterKill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testReplicationConfig()
		c := newCluster(t, 3, cfg)
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, map[string]string{"min.insync.replicas": "2"})
		for i := range 4 {
			if res := <-c.produceAsync(1, "t", -1, batch(2, "a"+string(rune('0'+i)))); res.ErrorCode != 0 {
				t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
			}
		}
		for id := int32(1); id <= 3; id++ {
			c.crash(id, vfs.CrashKeepAll())
		}
		// node 3 restarts first and leads epoch 1 for a moment
		c.restartCrashed(3)
		c.elect("t", 3, []int32{1, 2, 3})
		c.waitFor("node 3 leads", func() bool { return c.part(3, "t").Snapshot().IsLeader })
		c.restartCrashed(1)
		c.restartCrashed(2)
		c.elect("t", 1, []int32{1, 2, 3})
		restarted := time.Now()
		c.waitFor("node 1 leads", func() bool { return c.part(1, "t").Snapshot().IsLeader })
		if res := <-c.produceAsync(1, "t", -1, batch(2, "b")); res.ErrorCode != 0 {
			t.Fatalf("produce after the restart: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.waitFor("all caught up", func() bool {
			for id := int32(1); id <= 3; id++ {
				if s := c.part(id, "t").Snapshot(); s.LogEndOffset != 10 || s.HighWatermark != 10 {
					return time.Since(restarted) > cfg.LagTimeMax
				}
			}
			return true
		})
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1, 2, 3}) || time.Since(restarted) > cfg.LagTimeMax {
			t.Fatalf("ISR %v %v after the restart; node 3 %+v epochs %v", got, time.Since(restarted),
				c.part(3, "t").Snapshot(), c.part(3, "t").log.EpochEntries())
		}
		want := c.logValues(1, "t")
		for _, id := range []int32{2, 3} {
			if got := c.logValues(id, "t"); !slices.Equal(got, want) {
				t.Fatalf("node %d log %v, want %v", id, got, want)
			}
		}
	})
}

// A request a follower sends its leader besides Fetch (OffsetForLeaderEpoch
// to a leader without KIP-320, ListOffsets after OFFSET_OUT_OF_RANGE) that
// fails in transport drops the connection, as a failed Fetch does: a
// follower that kept using the dead one never fetched again.
func TestReplicationLostOffsetForLeaderEpochReconnects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.fetchVersion = 11
		var dropped atomic.Int32
		c.netFault = func(from, to int32, req kmsg.Request) netFate {
			if _, ok := req.(*kmsg.OffsetForLeaderEpochRequest); ok && from == 1 && dropped.Add(1) == 1 {
				return netFate{dropReq: true}
			}
			return netFate{}
		}
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, nil)
		if res := <-c.produceAsync(1, "t", -1, batch(3, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.elect("t", 2, nil)
		if res := <-c.produceAsync(2, "t", -1, batch(2, "b")); res.ErrorCode != 0 {
			t.Fatalf("produce to node 2: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.waitFor("node 1 caught up", func() bool { return c.part(1, "t").Snapshot().LogEndOffset == 5 })
		if dropped.Load() < 2 {
			t.Fatalf("%d OffsetForLeaderEpoch requests from node 1", dropped.Load())
		}
	})
}
