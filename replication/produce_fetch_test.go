package replication

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

func TestProduceFetchRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 2, []int32{1}, 1, nil, nil)

		p := h.produce("t", 0, batch(3, "a"))
		if p.ErrorCode != 0 || p.BaseOffset != 0 || p.LogStartOffset != 0 || p.LogAppendTime != -1 {
			t.Fatalf("first produce: %+v", p)
		}
		p = h.produce("t", 0, batch(2, "b"))
		if p.ErrorCode != 0 || p.BaseOffset != 3 {
			t.Fatalf("second produce: %+v", p)
		}
		part, _ := h.rm.Partition("t", 0)
		if hw := part.HighWatermark(); hw != 5 {
			t.Fatalf("high watermark %d, want 5", hw)
		}

		for v := int16(4); v <= 18; v++ {
			resp := h.fetch(fetchReq(v, 0, 1, 1<<20, fetchPartSpec{topic: "t", partition: 0, offset: 1, epoch: -1},
				fetchPartSpec{topic: "t", partition: 1, offset: 0, epoch: -1}))
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 2 {
				t.Fatalf("v%d: shape %+v", v, resp)
			}
			p0 := resp.Topics[0].Partitions[0]
			if p0.ErrorCode != 0 || p0.HighWatermark != 5 || p0.LastStableOffset != 5 || p0.LogStartOffset != 0 {
				t.Fatalf("v%d: partition 0 %+v", v, p0)
			}
			// Whole batches: the batch holding offset 1 starts at 0.
			if got := values(t, p0.RecordBatches); !slices.Equal(got, []string{"a-v0", "a-v1", "a-v2", "b-v0", "b-v1"}) {
				t.Fatalf("v%d: values %v", v, got)
			}
			if got := offsets(t, p0.RecordBatches); !slices.Equal(got, []int64{0, 1, 2, 3, 4}) {
				t.Fatalf("v%d: offsets %v", v, got)
			}
			p1 := resp.Topics[0].Partitions[1]
			if p1.ErrorCode != 0 || p1.HighWatermark != 0 || len(p1.RecordBatches) != 0 {
				t.Fatalf("v%d: partition 1 %+v", v, p1)
			}
		}
	})
}

func TestProduceErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.createTopic("other", 1, []int32{2}, 2, nil, nil)
		h.createTopic("isr2", 1, []int32{1, 2}, 1, []int32{1}, map[string]string{"min.insync.replicas": "2"})
		h.createTopic("small", 1, []int32{1}, 1, nil, map[string]string{"max.message.bytes": "100"})
		h.createTopic("__consumer_offsets", 1, []int32{1}, 1, nil, nil)
		ctx := context.Background()
		code := func(req *kmsg.ProduceRequest) int16 {
			return h.rm.Produce(ctx, req, "cli").Topics[0].Partitions[0].ErrorCode
		}

		cases := []struct {
			name string
			req  *kmsg.ProduceRequest
			want *kerr.Error
		}{
			{"unknown topic", produceReq(12, 1, 1000, "nope", 0, batch(1, "x")), kerr.UnknownTopicOrPartition},
			{"unknown partition", produceReq(12, 1, 1000, "t", 7, batch(1, "x")), kerr.UnknownTopicOrPartition},
			{"unknown topic id", produceReq(13, 1, 1000, "nope", 0, batch(1, "x")), kerr.UnknownTopicID},
			{"not leader", produceReq(12, 1, 1000, "other", 0, batch(1, "x")), kerr.NotLeaderForPartition},
			{"bad acks", produceReq(12, 2, 1000, "t", 0, batch(1, "x")), kerr.InvalidRequiredAcks},
			{"two batches", produceReq(12, 1, 1000, "t", 0, append(batch(1, "x"), batch(1, "y")...)), kerr.InvalidRecord},
			{"no records", produceReq(12, 1, 1000, "t", 0, nil), kerr.InvalidRecord},
			{"not enough replicas", produceReq(12, -1, 1000, "isr2", 0, batch(1, "x")), kerr.NotEnoughReplicas},
			{"too large", produceReq(12, 1, 1000, "small", 0, batch(5, "xxxxxxxxxxxxxxxxxxxx")), kerr.MessageTooLarge},
			{"internal topic", produceReq(12, 1, 1000, "__consumer_offsets", 0, batch(1, "x")), kerr.InvalidTopicException},
		}
		corrupt := batch(2, "c")
		corrupt[len(corrupt)-1] ^= 0xff
		cases = append(cases, struct {
			name string
			req  *kmsg.ProduceRequest
			want *kerr.Error
		}{"corrupt", produceReq(12, 1, 1000, "t", 0, corrupt), kerr.CorruptMessage})
		txn := storage.BuildBatch(storage.BatchOptions{Transactional: true, Producer: &storage.BatchProducer{ID: 5, BaseSequence: 0}}, records(1, "t")...)
		cases = append(cases, struct {
			name string
			req  *kmsg.ProduceRequest
			want *kerr.Error
		}{"transactional without id", produceReq(12, 1, 1000, "t", 0, txn), kerr.TransactionalIDAuthorizationFailed})

		for _, c := range cases {
			if got := code(c.req); got != c.want.Code {
				t.Errorf("%s: error %v, want %v", c.name, kerr.ErrorForCode(got), c.want)
			}
		}
		// acks=1 to a partition below min.insync.replicas is fine.
		if got := code(produceReq(12, 1, 1000, "isr2", 0, batch(1, "x"))); got != 0 {
			t.Errorf("acks=1 below min isr: %v", kerr.ErrorForCode(got))
		}
		// NOT_LEADER carries the current leader (KIP-951).
		resp := h.rm.Produce(ctx, produceReq(12, 1, 1000, "other", 0, batch(1, "x")), "cli")
		if cl := resp.Topics[0].Partitions[0].CurrentLeader; cl.LeaderID != 2 || cl.LeaderEpoch != 0 {
			t.Errorf("current leader %+v", cl)
		}
		// Nothing was appended to t by the failures.
		part, _ := h.rm.Partition("t", 0)
		if s := part.Snapshot(); s.LogEndOffset != 0 {
			t.Errorf("log end offset %d after failed produces", s.LogEndOffset)
		}
	})
}

func TestProduceInvalidTimestampRecordErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, map[string]string{"message.timestamp.after.max.ms": "1000"})
		recs := records(3, "ts")
		recs[1].Timestamp += 60_000 // a minute in the future
		resp := h.rm.Produce(context.Background(), produceReq(12, 1, 1000, "t", 0, storage.BuildBatch(storage.BatchOptions{}, recs...)), "cli")
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidTimestamp.Code || p.BaseOffset != -1 {
			t.Fatalf("answer %+v", p)
		}
		if len(p.ErrorRecords) != 1 || p.ErrorRecords[0].RelativeOffset != 1 || !strings.Contains(*p.ErrorRecords[0].ErrorMessage, "out of range") {
			t.Fatalf("record errors %+v", p.ErrorRecords)
		}
		if p.ErrorMessage == nil || *p.ErrorMessage != "One or more records have been rejected due to invalid timestamp" {
			t.Fatalf("message %v", p.ErrorMessage)
		}
	})
}

func TestProduceLogAppendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, map[string]string{"message.timestamp.type": "LogAppendTime"})
		time.Sleep(time.Hour) // fake time: records are an hour old
		p := h.produce("t", 0, storage.BuildBatch(storage.BatchOptions{}, storage.Record{Value: []byte("v"), Timestamp: 5}))
		now := time.Now().UnixMilli()
		if p.ErrorCode != 0 || p.LogAppendTime != now {
			t.Fatalf("answer %+v, want log append time %d", p, now)
		}
		resp := h.fetch(fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: 0, epoch: -1}))
		hdr, _ := storage.ParseBatchHeader(resp.Topics[0].Partitions[0].RecordBatches)
		if !hdr.LogAppendTime() || hdr.MaxTimestamp != now {
			t.Fatalf("stored batch %+v", hdr)
		}
	})
}

func TestIdempotentProduce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.produce("t", 0, batch(2, "plain"))

		first := h.produce("t", 0, idemBatch(3, 7, 0, 0))
		if first.ErrorCode != 0 || first.BaseOffset != 2 {
			t.Fatalf("first %+v", first)
		}
		// A retry of the same batch answers its original offset, nothing appended.
		dup := h.produce("t", 0, idemBatch(3, 7, 0, 0))
		if dup.ErrorCode != 0 || dup.BaseOffset != 2 {
			t.Fatalf("duplicate %+v", dup)
		}
		part, _ := h.rm.Partition("t", 0)
		if s := part.Snapshot(); s.LogEndOffset != 5 || s.HighWatermark != 5 {
			t.Fatalf("after duplicate %+v", s)
		}
		if p := h.produce("t", 0, idemBatch(1, 7, 0, 5)); p.ErrorCode != kerr.OutOfOrderSequenceNumber.Code {
			t.Fatalf("gap: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		if p := h.produce("t", 0, idemBatch(1, 7, 0, 3)); p.ErrorCode != 0 || p.BaseOffset != 5 {
			t.Fatalf("next in sequence %+v", p)
		}
		// A bumped epoch restarts at sequence 0; the old epoch is fenced.
		if p := h.produce("t", 0, idemBatch(1, 7, 1, 0)); p.ErrorCode != 0 || p.BaseOffset != 6 {
			t.Fatalf("new epoch %+v", p)
		}
		if p := h.produce("t", 0, idemBatch(1, 7, 0, 4)); p.ErrorCode != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("old epoch: %v", kerr.ErrorForCode(p.ErrorCode))
		}
	})
}

func TestAcksAllPurgatory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1, 2}, 1, nil, nil)
		ctx := context.Background()

		done := make(chan *kmsg.ProduceResponse)
		go func() { done <- h.rm.Produce(ctx, produceReq(12, -1, 30_000, "t", 0, batch(2, "x")), "cli") }()
		synctest.Wait() // the produce is parked
		select {
		case <-done:
			t.Fatal("acks=all answered before the follower caught up")
		default:
		}
		start := time.Now()
		// The follower fetches at offset 2: it has both records.
		freq := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: 2, epoch: 0})
		freq.ReplicaID = 2
		if r := h.fetch(freq); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("follower fetch %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
		}
		resp := <-done
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("acks=all answer %+v", p)
		}
		if time.Since(start) != 0 {
			t.Fatalf("woken after %v, want at once", time.Since(start))
		}
		part, _ := h.rm.Partition("t", 0)
		if hw := part.HighWatermark(); hw != 2 {
			t.Fatalf("high watermark %d", hw)
		}

		// Without the follower, acks=all times out after timeout_ms.
		start = time.Now()
		resp = h.rm.Produce(ctx, produceReq(12, -1, 1500, "t", 0, batch(1, "y")), "cli")
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.RequestTimedOut.Code {
			t.Fatalf("timeout answer %+v", p)
		}
		if d := time.Since(start); d != 1500*time.Millisecond {
			t.Fatalf("timed out after %v", d)
		}
	})
}

func TestAcksAllLeaderChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1, 2}, 1, nil, nil)
		done := make(chan *kmsg.ProduceResponse)
		go func() {
			done <- h.rm.Produce(context.Background(), produceReq(12, -1, 30_000, "t", 0, batch(1, "x")), "cli")
		}()
		synctest.Wait()
		h.changeLeader("t", 0, 2)
		resp := <-done
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("answer after losing leadership %+v", p)
		}
	})
}

func TestFetchLongPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.produce("t", 0, batch(1, "a"))

		// Woken by an append, not by the timer.
		got := make(chan *kmsg.FetchResponse)
		start := time.Now()
		go func() {
			got <- h.fetch(fetchReq(12, 10_000, 1, 1<<20, fetchPartSpec{topic: "t", offset: 1, epoch: -1}))
		}()
		synctest.Wait()
		time.Sleep(2 * time.Second)
		h.produce("t", 0, batch(2, "b"))
		resp := <-got
		if d := time.Since(start); d != 2*time.Second {
			t.Fatalf("answered after %v, want 2s", d)
		}
		if v := values(t, resp.Topics[0].Partitions[0].RecordBatches); !slices.Equal(v, []string{"b-v0", "b-v1"}) {
			t.Fatalf("values %v", v)
		}

		// Nothing comes: the answer is empty after max_wait.
		start = time.Now()
		resp = h.fetch(fetchReq(12, 700, 1, 1<<20, fetchPartSpec{topic: "t", offset: 3, epoch: -1}))
		if d := time.Since(start); d != 700*time.Millisecond {
			t.Fatalf("empty answer after %v", d)
		}
		if p := resp.Topics[0].Partitions[0]; p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 3 {
			t.Fatalf("empty answer %+v", p)
		}

		// min_bytes: one small batch is not enough, the second is.
		small := len(batch(1, "c"))
		go func() {
			got <- h.fetch(fetchReq(12, 10_000, int32(small+10), 1<<20, fetchPartSpec{topic: "t", offset: 3, epoch: -1}))
		}()
		synctest.Wait()
		h.produce("t", 0, batch(1, "c"))
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("answered below min_bytes")
		default:
		}
		h.produce("t", 0, batch(1, "d"))
		resp = <-got
		if v := values(t, resp.Topics[0].Partitions[0].RecordBatches); !slices.Equal(v, []string{"c-v0", "d-v0"}) {
			t.Fatalf("values %v", v)
		}
	})
}

func TestFetchLongPollEndsOnLeaderChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1, 2}, 1, []int32{1}, nil)
		got := make(chan *kmsg.FetchResponse)
		go func() { got <- h.fetch(fetchReq(12, 10_000, 1, 1<<20, fetchPartSpec{topic: "t", offset: 0, epoch: 0})) }()
		synctest.Wait()
		h.changeLeader("t", 0, 2)
		resp := <-got
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.NotLeaderForPartition.Code && p.ErrorCode != kerr.FencedLeaderEpoch.Code {
			t.Fatalf("answer %+v", p)
		}
	})
}

func TestFetchErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.createTopic("other", 1, []int32{2}, 2, nil, nil)
		h.produce("t", 0, batch(3, "a"))
		one := func(v int16, s fetchPartSpec) kmsg.FetchResponseTopicPartition {
			resp := h.fetch(fetchReq(v, 0, 1, 1<<20, s))
			return resp.Topics[0].Partitions[0]
		}
		check := func(name string, p kmsg.FetchResponseTopicPartition, want *kerr.Error) {
			t.Helper()
			if p.ErrorCode != want.Code {
				t.Errorf("%s: %v, want %v", name, kerr.ErrorForCode(p.ErrorCode), want)
			}
			if p.HighWatermark != -1 || p.LogStartOffset != -1 || len(p.RecordBatches) != 0 {
				t.Errorf("%s: error answer carries data %+v", name, p)
			}
		}
		check("beyond end", one(12, fetchPartSpec{topic: "t", offset: 4, epoch: -1}), kerr.OffsetOutOfRange)
		check("negative", one(12, fetchPartSpec{topic: "t", offset: -1, epoch: -1}), kerr.OffsetOutOfRange)
		check("unknown topic", one(12, fetchPartSpec{topic: "nope", offset: 0, epoch: -1}), kerr.UnknownTopicOrPartition)
		check("unknown topic id", one(13, fetchPartSpec{topic: "nope", offset: 0, epoch: -1}), kerr.UnknownTopicID)
		check("not leader", one(12, fetchPartSpec{topic: "other", offset: 0, epoch: -1}), kerr.NotLeaderForPartition)
		h.changeLeader("t", 0, 1) // epoch 1
		check("fenced epoch", one(12, fetchPartSpec{topic: "t", offset: 0, epoch: 0}), kerr.FencedLeaderEpoch)
		check("unknown epoch", one(12, fetchPartSpec{topic: "t", offset: 0, epoch: 2}), kerr.UnknownLeaderEpoch)

		p := one(16, fetchPartSpec{topic: "other", offset: 0, epoch: -1})
		if p.CurrentLeader.LeaderID != 2 {
			t.Errorf("v16 not leader: current leader %+v", p.CurrentLeader)
		}
		// Between the high watermark and the log end: empty, no error.
		if p := one(12, fetchPartSpec{topic: "t", offset: 3, epoch: -1}); p.ErrorCode != 0 || p.HighWatermark != 3 {
			t.Errorf("at the end: %+v", p)
		}
	})
}

func TestFetchMaxBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 2, []int32{1}, 1, nil, nil)
		b := batch(10, "big")
		size := int32(len(b))
		h.produce("t", 0, b)
		h.produce("t", 0, batch(1, "next"))
		h.produce("t", 1, batch(10, "other"))

		// KIP-74: the first partition with records returns one whole batch even
		// when partition max bytes and response max bytes are smaller ...
		resp := h.fetch(fetchReq(12, 0, 1, 10, fetchPartSpec{topic: "t", partition: 0, offset: 0, maxBytes: 10, epoch: -1},
			fetchPartSpec{topic: "t", partition: 1, offset: 0, epoch: -1}))
		p0, p1 := resp.Topics[0].Partitions[0], resp.Topics[0].Partitions[1]
		if int32(len(p0.RecordBatches)) != size {
			t.Fatalf("first partition returned %d bytes, want the %d byte batch", len(p0.RecordBatches), size)
		}
		// ... and the response budget is then spent: nothing for the second.
		if len(p1.RecordBatches) != 0 || p1.HighWatermark != 10 {
			t.Fatalf("second partition %+v", p1)
		}
		// Partition max bytes bounds a partition to whole batches.
		resp = h.fetch(fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", partition: 0, offset: 0, maxBytes: size + 5, epoch: -1}))
		if got := len(resp.Topics[0].Partitions[0].RecordBatches); int32(got) != size {
			t.Fatalf("partition max bytes: %d bytes", got)
		}
	})
}

func TestFetchReadCommittedBoundedByHighWatermark(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1, 2}, 1, nil, nil)
		// ISR {1,2}: appends stay above the high watermark until 2 fetches.
		h.produce("t", 0, batch(2, "x"))
		for _, iso := range []int8{0, 1} {
			req := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: 0, epoch: -1})
			req.IsolationLevel = iso
			p := h.fetch(req).Topics[0].Partitions[0]
			if p.ErrorCode != 0 || len(p.RecordBatches) != 0 || p.HighWatermark != 0 || p.LastStableOffset != 0 {
				t.Fatalf("isolation %d: %+v", iso, p)
			}
		}
		freq := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: 0, epoch: -1})
		freq.ReplicaID = 2
		if p := h.fetch(freq).Topics[0].Partitions[0]; len(p.RecordBatches) == 0 {
			t.Fatal("a follower reads up to the log end")
		}
	})
}

func TestDeleteTopicDeletesLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 2, []int32{1}, 1, nil, nil)
		h.produce("t", 0, batch(1, "x"))
		h.deleteTopic("t")
		if _, ok := h.rm.Partition("t", 0); ok {
			t.Fatal("partition still held")
		}
		if len(h.logs.deleted) != 2 {
			t.Fatalf("deleted %v", h.logs.deleted)
		}
		if p := h.produce("t", 0, batch(1, "x")); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("produce after delete: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		// Recreated under the same name: a fresh log.
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		if p := h.produce("t", 0, batch(1, "x")); p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("produce after recreate: %+v", p)
		}
	})
}

// After a restart the metadata log is replayed image by image: old leader
// epochs must not rewrite the leader epoch cache, and an old incarnation of
// a topic name must not delete the current one's log.
func TestReplayedHistoryKeepsLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := newMemLogs()
		h := newHarnessLogs(t, logs)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.produce("t", 0, batch(3, "a"))
		h.changeLeader("t", 0, 1)
		h.changeLeader("t", 0, 1) // epoch 2 starts at 3
		h.produce("t", 0, batch(2, "b"))
		part, _ := h.rm.Partition("t", 0)
		part.mu.RLock()
		l := part.log
		part.mu.RUnlock()
		before := l.EpochEntries()

		// A new ReplicaManager over the same logs replays history: an older
		// topic "t" (another id) created and deleted, then the current one.
		h2 := newHarnessLogs(t, logs)
		var old [16]byte
		copy(old[:], "an-older-topic-t")
		h2.createTopicID("t", old, 1, []int32{1}, 1, nil, nil)
		r := metadatacache.NewRemoveTopicRecord()
		r.TopicID = old
		h2.apply(r)
		h2.createTopic("t", 1, []int32{1}, 1, nil, nil) // epoch 0 again
		if len(logs.deleted) != 0 {
			t.Fatalf("deleted %v", logs.deleted)
		}
		if got := l.EpochEntries(); !slices.Equal(flatten(got), flatten(before)) {
			t.Fatalf("epoch cache %v, was %v", got, before)
		}
		h2.changeLeader("t", 0, 1)
		h2.changeLeader("t", 0, 1)
		h2.changeLeader("t", 0, 1) // epoch 3: new, starts at 5
		if got := l.EpochEntries(); len(got) != len(before)+1 || got[len(got)-1] != [2]int64{3, 5} {
			t.Fatalf("epoch cache after a new epoch %v", got)
		}
		if p := h2.produce("t", 0, batch(1, "c")); p.ErrorCode != 0 || p.BaseOffset != 5 {
			t.Fatalf("produce %+v", p)
		}
	})
}

func flatten(es [][2]int64) []int64 {
	var out []int64
	for _, e := range es {
		out = append(out, e[0], e[1])
	}
	return out
}

func TestProduceErrorMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("small", 1, []int32{1}, 1, nil, map[string]string{"max.message.bytes": "100"})
		p := h.produce("small", 0, batch(5, "xxxxxxxxxxxxxxxxxxxx"))
		if p.ErrorCode != kerr.MessageTooLarge.Code || p.ErrorMessage == nil || strings.HasPrefix(*p.ErrorMessage, "MESSAGE_TOO_LARGE") ||
			!strings.Contains(*p.ErrorMessage, "max.message.bytes") {
			t.Fatalf("answer %+v (message %q)", p, deref(p.ErrorMessage))
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// KIP-320: a last fetched epoch that the log ended earlier answers with the
// diverging epoch and its end offset instead of records.
func TestFetchDivergingEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.produce("t", 0, batch(3, "a")) // epoch 0: [0, 3)
		h.changeLeader("t", 0, 1)
		h.changeLeader("t", 0, 1)
		h.produce("t", 0, batch(2, "b")) // epoch 2: [3, 5)
		fetch := func(offset int64, lastEpoch int32) kmsg.FetchResponseTopicPartition {
			req := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: offset, epoch: 2})
			req.Topics[0].Partitions[0].LastFetchedEpoch = lastEpoch
			return h.fetch(req).Topics[0].Partitions[0]
		}
		for _, c := range []struct {
			offset     int64
			lastEpoch  int32
			divergeEp  int32
			divergeEnd int64
		}{
			{4, 1, 0, 3},   // epoch 1 never had data: it ends where epoch 0 does
			{4, 0, 0, 3},   // epoch 0 ended at 3, before the fetch offset
			{3, 0, -1, -1}, // consistent: records
			{4, 2, -1, -1},
		} {
			p := fetch(c.offset, c.lastEpoch)
			if p.ErrorCode != 0 || p.DivergingEpoch.Epoch != c.divergeEp || p.DivergingEpoch.EndOffset != c.divergeEnd {
				t.Errorf("offset %d last epoch %d: %+v", c.offset, c.lastEpoch, p)
			}
			if c.divergeEp >= 0 && len(p.RecordBatches) != 0 {
				t.Errorf("offset %d: records with a diverging epoch", c.offset)
			}
			if c.divergeEp < 0 && len(p.RecordBatches) == 0 {
				t.Errorf("offset %d: no records", c.offset)
			}
		}
	})
}

// Kafka's effective min.insync.replicas is at most the replica count
// (Partition.effectiveMinIsr): a single-replica topic with the default
// min.insync.replicas=2 of a cluster still takes acks=all writes.
func TestProduceEffectiveMinISR(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("rf1", 1, []int32{1}, 1, nil, map[string]string{"min.insync.replicas": "2"})
		got := h.rm.Produce(context.Background(), produceReq(12, -1, 1000, "rf1", 0, batch(1, "x")), "cli").Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.BaseOffset != 0 {
			t.Fatalf("acks=all on one replica with min.insync.replicas=2: %v at %d", kerr.ErrorForCode(got.ErrorCode), got.BaseOffset)
		}
	})
}
