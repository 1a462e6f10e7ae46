package replication

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
)

func isrOf(c *rcluster, name string) []int32 {
	isr := slices.Clone(c.meta(name).Isr)
	slices.Sort(isr)
	return isr
}

// Followers fetch, the leader's high watermark follows the ISR, and acks=all
// completes once every ISR member has the batch.
func TestReplicationAcksAllRF3(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, map[string]string{"min.insync.replicas": "2"})

		for i := range 5 {
			res := <-c.produceAsync(1, "t", -1, batch(3, "b"+string(rune('0'+i))))
			if res.ErrorCode != 0 {
				t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(res.ErrorCode))
			}
			if res.BaseOffset != int64(3*i) {
				t.Fatalf("produce %d: base offset %d", i, res.BaseOffset)
			}
		}
		leader := c.part(1, "t")
		if hw := leader.HighWatermark(); hw != 15 {
			t.Fatalf("leader HW %d, want 15", hw)
		}
		want := c.logValues(1, "t")
		for _, id := range []int32{2, 3} {
			p := c.part(id, "t")
			// The follower had the batch before the leader's HW passed it.
			if s := p.Snapshot(); s.LogEndOffset != 15 || s.IsLeader {
				t.Fatalf("node %d: %+v", id, s)
			}
			c.waitFor("follower HW", func() bool { return p.HighWatermark() == 15 })
			if got := c.logValues(id, "t"); !slices.Equal(got, want) {
				t.Fatalf("node %d log %v, want %v", id, got, want)
			}
			// Leader epochs come from the batches.
			p.mu.RLock()
			e, ok := p.log.LatestEpoch()
			p.mu.RUnlock()
			if !ok || e != 0 {
				t.Fatalf("node %d latest epoch %d %v", id, e, ok)
			}
		}
		// One fetcher per leader on each follower, with an incremental session.
		for _, id := range []int32{2, 3} {
			r := c.node(id).rm.repl.Load()
			if n := r.fetchers.numFetchers(); n != 1 {
				t.Fatalf("node %d: %d fetchers", id, n)
			}
			if r := c.node(1).rm.repl.Load(); r.fetchers.numFetchers() != 0 {
				t.Fatalf("leader runs fetchers")
			}
		}
		if n := c.node(1).rm.sessions.len(); n != 2 {
			t.Fatalf("leader has %d fetch sessions, want 2", n)
		}
	})
}

// acks=all answers NOT_ENOUGH_REPLICAS when the ISR is below
// min.insync.replicas, and the ISR grows as followers catch up.
func TestReplicationIsrExpansion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.node(2).down.Store(true)
		c.node(3).down.Store(true)
		c.createTopic("t", []int32{1, 2, 3}, 1, []int32{1}, map[string]string{"min.insync.replicas": "2"})
		if res := <-c.produceAsync(1, "t", -1, batch(2, "a")); res.ErrorCode != kerr.NotEnoughReplicas.Code {
			t.Fatalf("acks=all with ISR {1}: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		if res := <-c.produceAsync(1, "t", 1, batch(2, "a")); res.ErrorCode != 0 {
			t.Fatalf("acks=1: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(2).down.Store(false)
		c.waitFor("ISR {1,2}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2}) })
		if res := <-c.produceAsync(1, "t", -1, batch(2, "b")); res.ErrorCode != 0 {
			t.Fatalf("acks=all with ISR {1,2}: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(3).down.Store(false)
		c.waitFor("ISR {1,2,3}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) })
		if got := c.part(1, "t").Snapshot().ISR; len(got) != 3 {
			t.Fatalf("leader's ISR %v", got)
		}
		if c.alters.Load() < 2 {
			t.Fatalf("%d AlterPartition requests", c.alters.Load())
		}
	})
}

// A follower that stops fetching leaves the ISR after replica.lag.time.max.ms;
// acks=all then completes with the remaining ISR; it rejoins once back.
func TestReplicationIsrShrink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testReplicationConfig()
		c := newCluster(t, 3, cfg)
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, map[string]string{"min.insync.replicas": "2"})
		if res := <-c.produceAsync(1, "t", -1, batch(2, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(3).down.Store(true)
		start := time.Now()
		done := c.produceAsync(1, "t", -1, batch(2, "b")) // waits for node 3 until it is dropped
		c.waitFor("ISR {1,2}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2}) })
		if waited := time.Since(start); waited < cfg.LagTimeMax {
			t.Fatalf("ISR shrank after %v, before replica.lag.time.max.ms", waited)
		}
		if res := <-done; res.ErrorCode != 0 {
			t.Fatalf("acks=all across the shrink: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		if res := <-c.produceAsync(1, "t", -1, batch(2, "c")); res.ErrorCode != 0 {
			t.Fatalf("acks=all with ISR {1,2}: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(3).down.Store(false)
		c.waitFor("ISR {1,2,3}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) })
		c.waitFor("node 3 caught up", func() bool { return c.part(3, "t").Snapshot().LogEndOffset == 6 })
	})
}

// An acks=all produce waiting for a follower that leaves the ISR, taking
// it below min.insync.replicas, is never acknowledged: the high watermark
// does not advance while the ISR is below min.insync.replicas (KAFKA-15583,
// Kafka 3.7's "strict min ISR"), so it times out; the next one answers
// NOT_ENOUGH_REPLICAS before appending. Once the follower is back in the
// ISR the high watermark passes both.
func TestReplicationNotEnoughReplicasAfterAppend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, map[string]string{"min.insync.replicas": "3"})
		if res := <-c.produceAsync(1, "t", -1, batch(2, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(2).down.Store(true)
		res := <-c.produceAsync(1, "t", -1, batch(2, "b"))
		if res.ErrorCode != kerr.RequestTimedOut.Code {
			t.Fatalf("acks=all across the shrink: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1, 3}) {
			t.Fatalf("ISR %v", got)
		}
		lp := c.part(1, "t")
		if hw := lp.HighWatermark(); hw != 2 {
			t.Fatalf("HW %d under min ISR, want 2", hw)
		}
		if res := <-c.produceAsync(1, "t", -1, batch(2, "c")); res.ErrorCode != kerr.NotEnoughReplicas.Code {
			t.Fatalf("acks=all with ISR {1,3}: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(2).down.Store(false)
		c.waitFor("ISR {1,2,3}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) })
		c.waitFor("HW 4", func() bool { return lp.HighWatermark() == 4 })
	})
}

// AlterPartition failures are retried after the backoff; the high
// watermark waits for a follower that is being added (maximal ISR).
func TestReplicationAlterPartitionRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2, testReplicationConfig())
		c.ctrlDown.Store(true)
		c.createTopic("t", []int32{1, 2}, 1, []int32{1}, nil)
		if res := <-c.produceAsync(1, "t", 1, batch(2, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		lp := c.part(1, "t")
		c.waitFor("a pending expansion", func() bool {
			lp.stateMu.Lock()
			defer lp.stateMu.Unlock()
			return lp.isrChg.pending != nil
		})
		time.Sleep(5 * time.Second)
		if got := isrOf(c, "t"); !slices.Equal(got, []int32{1}) {
			t.Fatalf("ISR %v while the controller is away", got)
		}
		// The pending member counts for the high watermark: an acks=1
		// append is not committed before node 2 has it.
		c.node(2).down.Store(true)
		if res := <-c.produceAsync(1, "t", 1, batch(2, "b")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		time.Sleep(time.Second)
		if hw := lp.HighWatermark(); hw != 2 {
			t.Fatalf("HW %d with node 2 pending in the ISR, want 2", hw)
		}
		c.node(2).down.Store(false)
		c.ctrlDown.Store(false)
		c.waitFor("ISR {1,2}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2}) })
		c.waitFor("HW 4", func() bool { return lp.HighWatermark() == 4 })
	})
}

// A former leader with records the new leader never got truncates them on
// the new leader's diverging-epoch answer (KIP-320) and then follows.
func TestReplicationDivergingEpochTruncation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, nil)
		if res := <-c.produceAsync(1, "t", -1, batch(3, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		// Node 1 is cut off and appends alone (acks=1).
		c.node(1).down.Store(true)
		for range 2 {
			if res := <-c.produceAsync(1, "t", 1, batch(2, "lost")); res.ErrorCode != 0 {
				t.Fatalf("acks=1: %v", kerr.ErrorForCode(res.ErrorCode))
			}
		}
		// Node 2 becomes leader (epoch 1) and takes new records.
		c.elect("t", 2, []int32{2, 3})
		c.waitFor("node 2 leads", func() bool { return c.part(2, "t").Snapshot().IsLeader })
		if res := <-c.produceAsync(2, "t", -1, batch(1, "new")); res.ErrorCode != 0 {
			t.Fatalf("produce to node 2: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(1).down.Store(false)
		c.waitFor("node 1 matches the new leader", func() bool {
			s := c.part(1, "t").Snapshot()
			return !s.IsLeader && s.LogEndOffset == 4
		})
		want := c.logValues(2, "t")
		if got := c.logValues(1, "t"); !slices.Equal(got, want) {
			t.Fatalf("node 1 log %v, want %v", got, want)
		}
		c.waitFor("ISR {1,2,3}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) })
	})
}

// With a leader that has no diverging epochs (Fetch v11), the former
// leader truncates through OffsetForLeaderEpoch before fetching.
func TestReplicationOffsetForLeaderEpochTruncation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.fetchVersion = 11
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, nil)
		if res := <-c.produceAsync(1, "t", -1, batch(3, "a")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.node(1).down.Store(true)
		for range 2 {
			if res := <-c.produceAsync(1, "t", 1, batch(2, "lost")); res.ErrorCode != 0 {
				t.Fatalf("acks=1: %v", kerr.ErrorForCode(res.ErrorCode))
			}
		}
		c.elect("t", 2, []int32{2, 3})
		for range 3 {
			if res := <-c.produceAsync(2, "t", -1, batch(2, "new")); res.ErrorCode != 0 {
				t.Fatalf("produce to node 2: %v", kerr.ErrorForCode(res.ErrorCode))
			}
		}
		c.node(1).down.Store(false)
		c.waitFor("node 1 matches the new leader", func() bool { return c.part(1, "t").Snapshot().LogEndOffset == 9 })
		want := c.logValues(2, "t")
		if got := c.logValues(1, "t"); !slices.Equal(got, want) {
			t.Fatalf("node 1 log %v, want %v", got, want)
		}
	})
}

// A follower whose log ends before the leader's log start truncates fully
// and starts at the leader's log start offset.
func TestReplicationOffsetOutOfRange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2, testReplicationConfig())
		c.node(2).down.Store(true)
		c.createTopic("t", []int32{1, 2}, 1, []int32{1}, nil)
		for range 3 {
			if res := <-c.produceAsync(1, "t", 1, batch(2, "x")); res.ErrorCode != 0 {
				t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
			}
		}
		lp := c.part(1, "t")
		lp.mu.RLock()
		lp.stateMu.Lock()
		lp.hw.Store(6)
		lp.stateMu.Unlock()
		err := lp.log.IncrementLogStartOffset(4)
		lp.mu.RUnlock()
		if err != nil {
			t.Fatal(err)
		}
		// Node 2 has an old record at offset 0..1 of its own.
		fp := c.part(2, "t")
		fp.mu.RLock()
		_, err = fp.log.AppendAsFollower(batch(1, "stale"))
		fp.mu.RUnlock()
		if err != nil {
			t.Fatal(err)
		}
		c.node(2).down.Store(false)
		c.waitFor("node 2 at the leader's end", func() bool { return fp.Snapshot().LogEndOffset == 6 })
		if s := fp.Snapshot(); s.LogStartOffset != 4 {
			t.Fatalf("follower log start %d, want 4", s.LogStartOffset)
		}
		if got := c.logValues(2, "t"); !slices.Equal(got, c.logValues(1, "t")) {
			t.Fatalf("follower %v, leader %v", got, c.logValues(1, "t"))
		}
	})
}

// Becoming leader stops the fetcher; becoming follower of another leader
// moves the partition to that leader's fetcher.
func TestReplicationFetcherFollowsLeadership(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 3, testReplicationConfig())
		c.createTopic("t", []int32{1, 2, 3}, 1, nil, nil)
		tp := storage.TopicPartition{Topic: "t", Partition: 0}
		f, ok := c.node(3).rm.repl.Load().fetchers.fetcherFor(tp)
		if !ok || f.leader != 1 {
			t.Fatalf("node 3 fetcher %v %v", f, ok)
		}
		c.elect("t", 3, nil)
		if _, ok := c.node(3).rm.repl.Load().fetchers.fetcherFor(tp); ok {
			t.Fatalf("node 3 still fetches as leader")
		}
		f, ok = c.node(1).rm.repl.Load().fetchers.fetcherFor(tp)
		if !ok || f.leader != 3 {
			t.Fatalf("node 1 fetcher %v %v", f, ok)
		}
		s, _ := f.state(tp)
		if s.leaderEpoch != 1 {
			t.Fatalf("node 1 fetch state %+v", s)
		}
		if res := <-c.produceAsync(3, "t", -1, batch(2, "z")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.waitFor("followers' HW", func() bool {
			return c.part(1, "t").HighWatermark() == 2 && c.part(2, "t").HighWatermark() == 2
		})
	})
}

// The high watermark is checkpointed on Close and read back on start.
func TestReplicationHighWatermarkCheckpoint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2, testReplicationConfig())
		c.createTopic("t", []int32{1, 2}, 1, nil, nil)
		if res := <-c.produceAsync(1, "t", -1, batch(4, "h")); res.ErrorCode != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(res.ErrorCode))
		}
		c.waitFor("follower HW", func() bool { return c.part(2, "t").HighWatermark() == 4 })
		fs := c.node(2).logs.fs
		c.restart(2)
		got, err := storage.ReadOffsetCheckpointFile(fs, "/data/"+storage.ReplicationOffsetCheckpointFile)
		if err != nil {
			t.Fatal(err)
		}
		if got[storage.TopicPartition{Topic: "t", Partition: 0}] != 4 {
			t.Fatalf("checkpoint %v", got)
		}
		if hw := c.part(2, "t").HighWatermark(); hw != 4 {
			t.Fatalf("HW after restart %d, want 4", hw)
		}
	})
}

// The follower session sends every partition first, then only changed ones,
// and forgets those dropped; errors start over with a full request.
func TestFollowerSessionIncremental(t *testing.T) {
	a := storage.TopicPartition{Topic: "a", Partition: 0}
	b := storage.TopicPartition{Topic: "b", Partition: 1}
	pa := sessionPart{topicID: topicID("a"), fetchOffset: 5, logStartOffset: 0, maxBytes: 100, leaderEpoch: 1, lastFetchedEpoch: 1}
	pb := sessionPart{topicID: topicID("b"), fetchOffset: 7, logStartOffset: 0, maxBytes: 100, leaderEpoch: 2, lastFetchedEpoch: 2}
	var s followerSession
	count := func(req *kmsg.FetchRequest) (n int) {
		for _, t := range req.Topics {
			n += len(t.Partitions)
		}
		return n
	}

	req := kmsg.NewPtrFetchRequest()
	s.build(req, map[storage.TopicPartition]sessionPart{a: pa, b: pb})
	if req.SessionID != 0 || req.SessionEpoch != 0 || count(req) != 2 {
		t.Fatalf("full request: id %d epoch %d, %d partitions", req.SessionID, req.SessionEpoch, count(req))
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.SessionID = 42
	if !s.handleResponse(resp) {
		t.Fatal("full response refused")
	}

	pa.fetchOffset = 9
	req = kmsg.NewPtrFetchRequest()
	s.build(req, map[storage.TopicPartition]sessionPart{a: pa, b: pb})
	if req.SessionID != 42 || req.SessionEpoch != 1 || count(req) != 1 || req.Topics[0].Partitions[0].FetchOffset != 9 {
		t.Fatalf("incremental request: %+v", req)
	}
	resp = kmsg.NewPtrFetchResponse()
	resp.SessionID = 42
	s.handleResponse(resp)

	req = kmsg.NewPtrFetchRequest()
	s.build(req, map[storage.TopicPartition]sessionPart{a: pa})
	if req.SessionEpoch != 2 || count(req) != 0 || len(req.ForgottenTopics) != 1 ||
		req.ForgottenTopics[0].TopicID != topicID("b") || req.ForgottenTopics[0].Partitions[0] != 1 {
		t.Fatalf("forgetting request: %+v", req)
	}
	resp = kmsg.NewPtrFetchResponse()
	resp.ErrorCode = kerr.InvalidFetchSessionEpoch.Code
	if s.handleResponse(resp) {
		t.Fatal("session error accepted")
	}
	req = kmsg.NewPtrFetchRequest()
	s.build(req, map[storage.TopicPartition]sessionPart{a: pa})
	if req.SessionID != 0 || req.SessionEpoch != 0 || count(req) != 1 {
		t.Fatalf("request after a session error: %+v", req)
	}
}

// num.replica.fetchers spreads one leader's partitions over several
// fetchers; idle fetchers stop when their partitions go.
func TestReplicationNumFetchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testReplicationConfig()
		cfg.NumFetchers = 3
		c := newCluster(t, 2, cfg)
		var names []string
		for i := range 8 {
			name := "n" + string(rune('a'+i))
			names = append(names, name)
			c.createTopic(name, []int32{1, 2}, 1, nil, nil)
		}
		fm := c.node(2).rm.repl.Load().fetchers
		if n := fm.numFetchers(); n < 2 || n > 3 {
			t.Fatalf("%d fetchers for 8 partitions and num.replica.fetchers=3", n)
		}
		for _, name := range names {
			if res := <-c.produceAsync(1, name, -1, batch(1, name)); res.ErrorCode != 0 {
				t.Fatalf("produce %s: %v", name, kerr.ErrorForCode(res.ErrorCode))
			}
		}
		for _, name := range names {
			if got := c.logValues(2, name); len(got) != 1 {
				t.Fatalf("%s on node 2: %v", name, got)
			}
		}
		for _, name := range names {
			c.elect(name, 2, nil)
		}
		synctest.Wait()
		if n := fm.numFetchers(); n != 0 {
			t.Fatalf("%d fetchers left on the new leader", n)
		}
	})
}

// num.replica.fetchers changed at run time (KIP-226) moves the followed
// partitions to the resized pool with their fetch state: replication goes
// on from where it was, nothing is fetched twice.
func TestReplicationResizeFetchers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCluster(t, 2, testReplicationConfig())
		var names []string
		for i := range 8 {
			name := "r" + string(rune('a'+i))
			names = append(names, name)
			c.createTopic(name, []int32{1, 2}, 1, nil, nil)
		}
		produce := func() {
			for _, name := range names {
				if res := <-c.produceAsync(1, name, -1, batch(1, name)); res.ErrorCode != 0 {
					t.Fatalf("produce %s: %v", name, kerr.ErrorForCode(res.ErrorCode))
				}
			}
		}
		produce()
		rm := c.node(2).rm
		if n, running := rm.NumReplicaFetchers(); n != 1 || running != 1 {
			t.Fatalf("before: num.replica.fetchers %d, %d running", n, running)
		}
		rm.SetNumReplicaFetchers(3)
		if n, running := rm.NumReplicaFetchers(); n != 3 || running < 2 || running > 3 {
			t.Fatalf("after resizing to 3: num.replica.fetchers %d, %d running", n, running)
		}
		produce()
		synctest.Wait()
		for _, name := range names {
			if got := c.logValues(2, name); len(got) != 2 {
				t.Fatalf("%s on node 2 after the resize: %v", name, got)
			}
		}
		rm.SetNumReplicaFetchers(1)
		if n, running := rm.NumReplicaFetchers(); n != 1 || running != 1 {
			t.Fatalf("after resizing to 1: num.replica.fetchers %d, %d running", n, running)
		}
		produce()
		synctest.Wait()
		for _, name := range names {
			if got := c.logValues(2, name); len(got) != 3 {
				t.Fatalf("%s on node 2 after the second resize: %v", name, got)
			}
		}
	})
}
