package replication

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
)

// fakeVerifier answers AddOrVerify as a transaction coordinator would, and
// records what it was asked.
type fakeVerifier struct {
	mu     sync.Mutex
	calls  []verifyCall
	answer func(call verifyCall) map[storage.TopicPartition]int16
}

type verifyCall struct {
	txnID      string
	pid        int64
	epoch      int16
	partitions []storage.TopicPartition
	op         TxnOperation
}

func (f *fakeVerifier) AddOrVerify(ctx context.Context, txnID string, pid int64, epoch int16, parts []storage.TopicPartition, op TxnOperation) map[storage.TopicPartition]int16 {
	c := verifyCall{txnID, pid, epoch, append([]storage.TopicPartition(nil), parts...), op}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	answer := f.answer
	f.mu.Unlock()
	if answer == nil {
		return nil
	}
	return answer(c)
}

func (f *fakeVerifier) taken() []verifyCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.calls
	f.calls = nil
	return out
}

func (f *fakeVerifier) set(fn func(verifyCall) map[storage.TopicPartition]int16) {
	f.mu.Lock()
	f.answer = fn
	f.mu.Unlock()
}

func always(code int16) func(verifyCall) map[storage.TopicPartition]int16 {
	return func(c verifyCall) map[storage.TopicPartition]int16 {
		out := map[storage.TopicPartition]int16{}
		for _, tp := range c.partitions {
			out[tp] = code
		}
		return out
	}
}

func txnBatch(n int, pid int64, epoch int16, seq int32) []byte {
	return storage.BuildBatch(storage.BatchOptions{Transactional: true, Producer: &storage.BatchProducer{ID: pid, Epoch: epoch, BaseSequence: seq}}, records(n, "tx")...)
}

func txnProduce(version int16, txnID string, topic string, partition int32, recs []byte) *kmsg.ProduceRequest {
	req := produceReq(version, 1, 5000, topic, partition, recs)
	req.TransactionID = &txnID
	return req
}

func newTxnHarness(t *testing.T) (*harness, *fakeVerifier) {
	h := newHarness(t)
	f := &fakeVerifier{}
	h.rm.SetTxnSettings(TxnSettings{Verifier: f, Enabled: true, RetryBackoff: 20 * time.Millisecond,
		RetryBackoffMax: 100 * time.Millisecond, RequestTimeout: 30 * time.Second})
	return h, f
}

// produceTxn produces a transactional batch (transactional id "tx", acks=1).
func (h *harness) produceTxn(topic string, partition int32, recs []byte) kmsg.ProduceResponseTopicPartition {
	h.t.Helper()
	return h.rm.Produce(context.Background(), txnProduce(12, "tx", topic, partition, recs), "test").Topics[0].Partitions[0]
}

func (h *harness) marker(topic string, partition int32, pid int64, epoch int16, commit bool, coordEpoch int32, tv int16) int16 {
	h.t.Helper()
	return h.rm.AppendTxnMarkers(context.Background(), []TxnMarker{{Topic: topic, Partition: partition, ProducerID: pid,
		ProducerEpoch: epoch, Commit: commit, CoordinatorEpoch: coordEpoch, TransactionVersion: tv}}, 5*time.Second)[0]
}

func TestProduceTransactionVerification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newTxnHarness(t)
		h.createTopic("t", 2, []int32{1}, 1, nil, nil)
		ctx := context.Background()
		part := func(resp *kmsg.ProduceResponse) kmsg.ProduceResponseTopicPartition {
			return resp.Topics[0].Partitions[0]
		}

		// the first write of the transaction is verified (v11: verify only)
		p := part(h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(2, 5, 0, 0)), "cli"))
		if p.ErrorCode != 0 || p.BaseOffset != 0 {
			t.Fatalf("verified produce %+v", p)
		}
		calls := f.taken()
		if len(calls) != 1 || calls[0].txnID != "tx" || calls[0].pid != 5 || calls[0].op != TxnGenericErrorSupported ||
			len(calls[0].partitions) != 1 || calls[0].partitions[0] != (storage.TopicPartition{Topic: "t", Partition: 0}) {
			t.Fatalf("calls %+v", calls)
		}
		// the open transaction needs no more asking
		if p := part(h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(1, 5, 0, 2)), "cli")); p.ErrorCode != 0 {
			t.Fatalf("second produce %+v", p)
		}
		if calls := f.taken(); len(calls) != 0 {
			t.Fatalf("asked again: %+v", calls)
		}
		// after the marker the next transaction is verified again
		if code := h.marker("t", 0, 5, 0, true, 0, 0); code != 0 {
			t.Fatalf("marker %v", kerr.ErrorForCode(code))
		}
		f.set(always(kerr.InvalidTxnState.Code))
		p = part(h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(1, 5, 0, 3)), "cli"))
		if p.ErrorCode != kerr.InvalidTxnState.Code || deref(p.ErrorMessage) != "Partition was not added to the transaction" || p.BaseOffset != -1 {
			t.Fatalf("not added: %+v (%s)", p, deref(p.ErrorMessage))
		}
		if len(f.taken()) != 1 {
			t.Fatal("not asked after the marker")
		}
		// the coordinator's retriable errors: NOT_ENOUGH_REPLICAS with the reason
		for _, code := range []int16{kerr.NotCoordinator.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code,
			kerr.NetworkException.Code, kerr.ConcurrentTransactions.Code} {
			f.set(always(code))
			p = part(h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(1, 5, 0, 3)), "cli"))
			name := kerr.ErrorForCode(code).(*kerr.Error).Message
			if p.ErrorCode != kerr.NotEnoughReplicas.Code || !strings.HasSuffix(deref(p.ErrorMessage), "Underlying error: "+name) {
				t.Fatalf("%s: %+v (%s)", name, p, deref(p.ErrorMessage))
			}
		}
		// others as they are, without a message
		f.set(always(kerr.InvalidProducerEpoch.Code))
		p = part(h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(1, 5, 0, 3)), "cli"))
		if p.ErrorCode != kerr.InvalidProducerEpoch.Code || p.ErrorMessage != nil {
			t.Fatalf("fenced: %+v", p)
		}
		// nothing was appended by the failures
		if pp, _ := h.rm.Partition("t", 0); pp.Snapshot().LogEndOffset != 4 {
			t.Fatalf("log end %d", pp.Snapshot().LogEndOffset)
		}
		f.taken()

		// operations by produce version
		f.set(nil)
		for i, c := range []struct {
			version int16
			op      TxnOperation
		}{{10, TxnDefaultError}, {11, TxnGenericErrorSupported}, {12, TxnAddPartition}} {
			pid := int64(100 + i)
			if p := part(h.rm.Produce(ctx, txnProduce(c.version, "v", "t", 1, txnBatch(1, pid, 0, 0)), "cli")); p.ErrorCode != 0 {
				t.Fatalf("v%d: %+v", c.version, p)
			}
			if calls := f.taken(); len(calls) != 1 || calls[0].op != c.op {
				t.Fatalf("v%d: calls %+v", c.version, calls)
			}
		}

		// two transactional producers in one request
		req := txnProduce(11, "tx", "t", 0, txnBatch(1, 7, 0, 0))
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = 1, txnBatch(1, 8, 0, 0)
		req.Topics[0].Partitions = append(req.Topics[0].Partitions, rp)
		resp := h.rm.Produce(ctx, req, "cli")
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != kerr.InvalidProducerIDMapping.Code || p.LogStartOffset != -1 {
				t.Fatalf("two producers: %+v", p)
			}
		}
		// no transactional id: every partition, whatever it is
		req = produceReq(11, 1, 1000, "nope", 0, txnBatch(1, 9, 0, 0))
		if p := part(h.rm.Produce(ctx, req, "cli")); p.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
			t.Fatalf("no transactional id: %+v", p)
		}
	})
}

// transaction.partition.verification.enable=false: verify-only clients are
// not verified, transaction.version 2 clients still have their partitions
// added.
func TestProduceVerificationDisabled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newTxnHarness(t)
		s := h.rm.txnSettings()
		s.Enabled = false
		h.rm.SetTxnSettings(s)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		ctx := context.Background()
		if p := h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(1, 5, 0, 0)), "cli").Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("v11: %+v", p)
		}
		if calls := f.taken(); len(calls) != 0 {
			t.Fatalf("v11 asked: %+v", calls)
		}
		if p := h.rm.Produce(ctx, txnProduce(12, "tx2", "t", 0, txnBatch(1, 6, 0, 0)), "cli").Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("v12: %+v", p)
		}
		if calls := f.taken(); len(calls) != 1 || calls[0].op != TxnAddPartition {
			t.Fatalf("v12 calls: %+v", calls)
		}
	})
}

// A transaction.version 2 produce whose add answers CONCURRENT_TRANSACTIONS
// is retried by the leader every add.partitions.to.txn.retry.backoff.ms for
// up to add.partitions.to.txn.retry.backoff.max.ms.
func TestProduceAddPartitionRetriesConcurrentTransactions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newTxnHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		ctx := context.Background()
		n := 0
		f.set(func(c verifyCall) map[storage.TopicPartition]int16 {
			n++
			if n < 3 {
				return always(kerr.ConcurrentTransactions.Code)(c)
			}
			return nil
		})
		start := time.Now()
		if p := h.rm.Produce(ctx, txnProduce(12, "tx", "t", 0, txnBatch(1, 5, 0, 0)), "cli").Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("after retries: %+v", p)
		}
		if n != 3 || time.Since(start) != 40*time.Millisecond {
			t.Fatalf("%d calls in %v", n, time.Since(start))
		}
		// always concurrent: the answer after the retry time, unmapped for v12
		f.set(always(kerr.ConcurrentTransactions.Code))
		start = time.Now()
		p := h.rm.Produce(ctx, txnProduce(12, "tx", "t", 0, txnBatch(1, 6, 0, 0)), "cli").Topics[0].Partitions[0]
		if p.ErrorCode != kerr.ConcurrentTransactions.Code || time.Since(start) != 100*time.Millisecond {
			t.Fatalf("after %v: %+v", time.Since(start), p)
		}
	})
}

// KIP-890's point: a marker written while the verification is answered
// clears the guard, so the write that was verified cannot start a new
// transaction the coordinator does not know of (no hanging transaction).
func TestProduceVerificationRacesMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newTxnHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		ctx := context.Background()
		f.set(func(c verifyCall) map[storage.TopicPartition]int16 {
			// the coordinator aborts the transaction meanwhile (a timeout)
			if code := h.marker("t", 0, 5, 0, false, 0, 0); code != 0 {
				t.Errorf("marker %v", kerr.ErrorForCode(code))
			}
			return nil
		})
		p := h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(1, 5, 0, 0)), "cli").Topics[0].Partitions[0]
		if p.ErrorCode != kerr.InvalidTxnState.Code {
			t.Fatalf("write after the marker: %+v", p)
		}
		pp, _ := h.rm.Partition("t", 0)
		if s := pp.Snapshot(); s.LogEndOffset != 1 {
			t.Fatalf("log end %d: only the marker", s.LogEndOffset)
		}
	})
}

func TestAppendTxnMarkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.createTopic("other", 1, []int32{2}, 2, nil, nil)
		h.createTopic("follower", 1, []int32{1, 2}, 2, nil, nil)
		h.createTopic("isr2", 1, []int32{1, 2}, 1, []int32{1}, map[string]string{"min.insync.replicas": "2"})
		h.createTopic("slow", 1, []int32{1, 2}, 1, nil, nil)
		h.createTopic("__consumer_offsets", 1, []int32{1}, 1, nil, nil)
		if p := h.produceTxn("t", 0, txnBatch(2, 5, 3, 0)); p.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(p.ErrorCode))
		}
		cases := []struct {
			name string
			m    TxnMarker
			want int16
		}{
			{"older epoch", TxnMarker{Topic: "t", ProducerID: 5, ProducerEpoch: 2, CoordinatorEpoch: 1}, kerr.InvalidProducerEpoch.Code},
			{"commit", TxnMarker{Topic: "t", ProducerID: 5, ProducerEpoch: 3, Commit: true, CoordinatorEpoch: 1}, 0},
			{"zombie coordinator", TxnMarker{Topic: "t", ProducerID: 5, ProducerEpoch: 3, CoordinatorEpoch: 0}, kerr.TransactionCoordinatorFenced.Code},
			{"TV2 at the same epoch retried", TxnMarker{Topic: "t", ProducerID: 5, ProducerEpoch: 3, CoordinatorEpoch: 1, TransactionVersion: 2}, 0},
			{"TV2 bumped", TxnMarker{Topic: "t", ProducerID: 5, ProducerEpoch: 4, CoordinatorEpoch: 1, TransactionVersion: 2}, 0},
			{"no such topic", TxnMarker{Topic: "nope", ProducerID: 5}, kerr.UnknownTopicOrPartition.Code},
			{"no replica here", TxnMarker{Topic: "other", ProducerID: 5}, kerr.UnknownTopicOrPartition.Code},
			{"follower", TxnMarker{Topic: "follower", ProducerID: 5}, kerr.NotLeaderForPartition.Code},
			{"below min isr", TxnMarker{Topic: "isr2", ProducerID: 5}, kerr.NotEnoughReplicas.Code},
			{"internal topic", TxnMarker{Topic: "__consumer_offsets", ProducerID: 5}, 0},
		}
		for _, c := range cases {
			if got := h.rm.AppendTxnMarkers(context.Background(), []TxnMarker{c.m}, time.Second)[0]; got != c.want {
				t.Errorf("%s: %v, want %v", c.name, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
			}
		}
		// acks=all: several markers wait together, up to the timeout
		start := time.Now()
		codes := h.rm.AppendTxnMarkers(context.Background(), []TxnMarker{{Topic: "slow", ProducerID: 6}, {Topic: "t", ProducerID: 7}}, 1500*time.Millisecond)
		if codes[0] != kerr.RequestTimedOut.Code || codes[1] != 0 || time.Since(start) != 1500*time.Millisecond {
			t.Fatalf("codes %v after %v", codes, time.Since(start))
		}
		ps, err := h.rm.ActiveProducers("t", 0)
		if err != nil || len(ps) != 2 || ps[0].ProducerID != 5 || ps[0].ProducerEpoch != 4 || ps[0].CoordinatorEpoch != 1 || ps[0].CurrentTxnStartOffset != -1 {
			t.Fatalf("producers %+v %v", ps, err)
		}
		if _, err := h.rm.ActiveProducers("other", 0); err != kerr.NotLeaderForPartition {
			t.Fatalf("no replica: %v", err)
		}
		if _, err := h.rm.ActiveProducers("nope", 0); err != kerr.UnknownTopicOrPartition {
			t.Fatalf("unknown: %v", err)
		}
	})
}

// read_committed fetches and ListOffsets with real markers: the last stable
// offset, the aborted transactions, commits after aborts, several producers
// interleaved, a marker held back until the follower replicated it, and an
// incremental fetch session.
func TestReadCommittedWithMarkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1, 2}, 1, nil, nil)
		follow := func() {
			t.Helper()
			part, _ := h.rm.Partition("t", 0)
			req := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: part.Snapshot().LogEndOffset, epoch: 0})
			req.ReplicaID = 2
			h.fetch(req)
		}
		consume := func(offset int64) kmsg.FetchResponseTopicPartition {
			t.Helper()
			req := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: offset, epoch: -1})
			req.IsolationLevel = 1
			return h.fetch(req).Topics[0].Partitions[0]
		}
		h.produceTxn("t", 0, txnBatch(2, 1, 0, 0)) // 0-1 p1 (to abort)
		h.produceTxn("t", 0, txnBatch(1, 2, 0, 0)) // 2 p2 (to commit)
		h.produce("t", 0, batch(1, "plain"))       // 3
		h.marker("t", 0, 1, 0, false, 0, 0)        // 4 abort p1
		follow()                                   // HW 5: the abort replicated
		if p := consume(0); p.LastStableOffset != 2 || p.HighWatermark != 5 || len(offsets(t, p.RecordBatches)) != 2 {
			t.Fatalf("p2 open: %+v", p)
		}
		if p := consume(0); len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 1 || p.AbortedTransactions[0].FirstOffset != 0 {
			t.Fatalf("aborted %+v", p.AbortedTransactions)
		}
		h.marker("t", 0, 2, 0, true, 0, 0) // 5 commit p2, not replicated
		if p := consume(0); p.LastStableOffset != 2 {
			t.Fatalf("the commit is not replicated yet: lso %d", p.LastStableOffset)
		}
		follow() // HW 6
		p := consume(0)
		if p.LastStableOffset != 6 || p.HighWatermark != 6 {
			t.Fatalf("after the commit replicated: %+v", p)
		}
		if got := offsets(t, p.RecordBatches); len(got) != 6 {
			t.Fatalf("records %v", got)
		}
		// read_committed ListOffsets latest is the last stable offset
		h.produceTxn("t", 0, txnBatch(1, 1, 0, 2)) // 6 p1 again (commit after abort)
		follow()
		lo := kmsg.NewPtrListOffsetsRequest()
		lo.Version, lo.ReplicaID, lo.IsolationLevel = 5, -1, 1
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp, lp.CurrentLeaderEpoch = -1, -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		if r := h.rm.ListOffsets(lo).Topics[0].Partitions[0]; r.ErrorCode != 0 || r.Offset != 6 {
			t.Fatalf("ListOffsets read_committed %+v", r)
		}
		lo.IsolationLevel = 0
		if r := h.rm.ListOffsets(lo).Topics[0].Partitions[0]; r.Offset != 7 {
			t.Fatalf("ListOffsets read_uncommitted %+v", r)
		}
		h.marker("t", 0, 1, 0, true, 0, 0) // 7
		follow()
		if p := consume(5); p.LastStableOffset != 8 || len(p.AbortedTransactions) != 0 || p.AbortedTransactions == nil {
			t.Fatalf("after the second commit: %+v", p)
		}
		// read_uncommitted answers carry no list at all
		req := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: 0, epoch: -1})
		if p := h.fetch(req).Topics[0].Partitions[0]; p.AbortedTransactions != nil {
			t.Fatalf("read_uncommitted %+v", p.AbortedTransactions)
		}

		// an incremental session: the partition comes back with new data and
		// its aborted transactions
		req = fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: 8, epoch: -1})
		req.IsolationLevel, req.SessionID, req.SessionEpoch = 1, 0, 0
		r := h.fetch(req)
		if r.SessionID == 0 || len(r.Topics) != 1 {
			t.Fatalf("session %+v", r)
		}
		sess := r.SessionID
		h.produceTxn("t", 0, txnBatch(1, 3, 0, 0)) // 8 p3
		h.marker("t", 0, 3, 0, false, 0, 0)        // 9 abort p3
		follow()
		inc := fetchReq(12, 0, 1, 1<<20)
		inc.IsolationLevel, inc.SessionID, inc.SessionEpoch = 1, sess, 1
		r = h.fetch(inc)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("incremental %+v", r)
		}
		p = r.Topics[0].Partitions[0]
		if p.LastStableOffset != 10 || len(p.AbortedTransactions) != 1 || p.AbortedTransactions[0].ProducerID != 3 {
			t.Fatalf("incremental partition %+v", p)
		}
	})
}

// The coordinator runtime's transactional writes (TxnOffsetCommit on
// __consumer_offsets): VerifyTransaction gives the guard AppendCoordinator
// must carry.
func TestCoordinatorTransactionalWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, f := newTxnHarness(t)
		h.createTopic("__consumer_offsets", 1, []int32{1}, 1, nil, nil)
		ctx := context.Background()
		rec := func() []byte {
			return storage.BuildBatch(storage.BatchOptions{Transactional: true, Producer: &storage.BatchProducer{ID: 9, Epoch: 1, BaseSequence: storage.NoSequence}},
				storage.Record{Key: []byte("k"), Value: []byte("v"), Timestamp: time.Now().UnixMilli()})
		}
		if _, err := h.rm.AppendCoordinator("__consumer_offsets", 0, 0, rec(), nil, false); err != kerr.InvalidTxnState && !isKerr(err, kerr.InvalidTxnState) {
			t.Fatalf("unverified write: %v", err)
		}
		f.set(always(kerr.ConcurrentTransactions.Code))
		if _, err := h.rm.VerifyTransaction(ctx, "__consumer_offsets", 0, "tx", 9, 1, TxnAddPartition); err != kerr.ConcurrentTransactions {
			t.Fatalf("coordinator error: %v", err)
		}
		f.set(nil)
		g, err := h.rm.VerifyTransaction(ctx, "__consumer_offsets", 0, "tx", 9, 1, TxnGenericErrorSupported)
		if err != nil || g == nil {
			t.Fatalf("guard %v %v", g, err)
		}
		if calls := f.taken(); len(calls) != 2 || calls[1].op != TxnGenericErrorSupported {
			t.Fatalf("calls %+v", calls)
		}
		if _, err := h.rm.AppendCoordinator("__consumer_offsets", 0, 0, rec(), g, false); err != nil {
			t.Fatalf("verified write: %v", err)
		}
		// the transaction is open: no guard, no request
		if g, err := h.rm.VerifyTransaction(ctx, "__consumer_offsets", 0, "tx", 9, 1, TxnGenericErrorSupported); g != nil || err != nil {
			t.Fatalf("open transaction: %v %v", g, err)
		}
		if calls := f.taken(); len(calls) != 0 {
			t.Fatalf("asked for an open transaction: %+v", calls)
		}
		if _, err := h.rm.AppendCoordinator("__consumer_offsets", 0, 0, rec(), nil, false); err != nil {
			t.Fatalf("write in the open transaction: %v", err)
		}
	})
}

func isKerr(err error, want *kerr.Error) bool {
	var ke *kerr.Error
	for e := err; e != nil; {
		if k, ok := e.(*kerr.Error); ok {
			ke = k
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return ke == want
}
