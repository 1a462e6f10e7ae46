package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/replication"
	"github.com/kgo-broker/kgo-broker/storage"
)

// txnImage is a metadata image with brokers 1-3 and __transaction_state
// (3 partitions led by broker leaders[p]).
func txnImage(t *testing.T, leaders ...int32) *metadatacache.Image {
	t.Helper()
	c := metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})
	var recs []metadatacache.Record
	for id := int32(1); id <= 3; id++ {
		r := metadatacache.NewRegisterBrokerRecord()
		r.BrokerID, r.BrokerEpoch, r.Fenced = id, 10, id == 3
		r.EndPoints = []metadatacache.BrokerEndpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}
		recs = append(recs, r)
	}
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = "__transaction_state", [16]byte{7}
	recs = append(recs, tr)
	for p, l := range leaders {
		pr := metadatacache.NewPartitionRecord()
		pr.PartitionID, pr.TopicID, pr.Replicas, pr.Isr, pr.Leader = int32(p), tr.TopicID, []int32{l}, []int32{l}, l
		recs = append(recs, pr)
	}
	if err := c.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	return c.Image()
}

// txnIDFor finds a transactional id whose __transaction_state partition is p (of n).
func txnIDFor(p, n int32) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("txn-%d", i)
		if coordinator.PartitionFor(id, n) == p {
			return id
		}
	}
}

// fakeCoordinators answers AddPartitionsToTxn per node; a request waits on
// hold (when set) so that calls queue behind it.
type fakeCoordinators struct {
	mu     sync.Mutex
	reqs   []sentReq
	hold   chan struct{}
	answer func(node int32, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error)
}

type sentReq struct {
	node int32
	req  *kmsg.AddPartitionsToTxnRequest
}

func (f *fakeCoordinators) send(ctx context.Context, node int32, r kmsg.Request) (kmsg.Response, error) {
	req := r.(*kmsg.AddPartitionsToTxnRequest)
	f.mu.Lock()
	f.reqs = append(f.reqs, sentReq{node, req})
	hold, answer := f.hold, f.answer
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if answer != nil {
		return answer(node, req)
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	for _, tx := range req.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = t.Topic
			for _, p := range t.Partitions {
				tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				tp.Partition = p
				tt.Partitions = append(tt.Partitions, tp)
			}
			rt.Topics = append(rt.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

func (f *fakeCoordinators) sent() []sentReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentReq(nil), f.reqs...)
}

func newTestVerifier(t *testing.T, f *fakeCoordinators, img *metadatacache.Image) *txnVerifier {
	v := newTxnVerifier(context.Background(), f.send, func() *metadatacache.Image { return img }, "PLAINTEXT", 50, time.Second, zap.NewNop())
	v.served = func() (int16, bool) { return 5, true }
	return v
}

var tpA, tpB = storage.TopicPartition{Topic: "a", Partition: 0}, storage.TopicPartition{Topic: "b", Partition: 1}

func TestTxnVerifierRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCoordinators{}
		v := newTestVerifier(t, f, txnImage(t, 1, 2, 3))
		ctx := context.Background()
		id := txnIDFor(1, 3) // led by broker 2
		errs := v.AddOrVerify(ctx, id, 5, 2, []storage.TopicPartition{tpA, tpB, {Topic: "a", Partition: 3}}, replication.TxnGenericErrorSupported)
		if len(errs) != 0 {
			t.Fatalf("errs %v", errs)
		}
		reqs := f.sent()
		if len(reqs) != 1 || reqs[0].node != 2 || reqs[0].req.Version != 5 {
			t.Fatalf("requests %+v", reqs)
		}
		tx := reqs[0].req.Transactions
		if len(tx) != 1 || tx[0].TransactionalID != id || tx[0].ProducerID != 5 || tx[0].ProducerEpoch != 2 || !tx[0].VerifyOnly ||
			len(tx[0].Topics) != 2 || tx[0].Topics[0].Topic != "a" || fmt.Sprint(tx[0].Topics[0].Partitions) != "[0 3]" {
			t.Fatalf("transaction %+v", tx)
		}
		// transaction.version 2 adds the partitions
		v.AddOrVerify(ctx, id, 5, 2, []storage.TopicPartition{tpA}, replication.TxnAddPartition)
		if reqs := f.sent(); reqs[1].req.Transactions[0].VerifyOnly {
			t.Fatal("an add was sent verify-only")
		}
		// no coordinator: no leader, a fenced leader, no such topic
		for _, img := range []*metadatacache.Image{txnImage(t, 1, -1, 3), txnImage(t, 3, 3, 3), metadatacache.EmptyImage("")} {
			v := newTestVerifier(t, f, img)
			errs := v.AddOrVerify(ctx, id, 5, 2, []storage.TopicPartition{tpA}, replication.TxnDefaultError)
			if errs[tpA] != kerr.CoordinatorNotAvailable.Code {
				t.Fatalf("no coordinator: %v", errs)
			}
		}
	})
}

// One request in flight per coordinator; what comes meanwhile is batched,
// one entry per transactional id, the newer epoch winning.
func TestTxnVerifierBatchesPerCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCoordinators{hold: make(chan struct{})}
		v := newTestVerifier(t, f, txnImage(t, 1, 1, 2))
		ctx := context.Background()
		id0, id1, id2 := txnIDFor(0, 3), txnIDFor(1, 3), txnIDFor(2, 3)
		results := make([]map[storage.TopicPartition]int16, 6)
		var wg sync.WaitGroup
		call := func(i int, id string, epoch int16, tp storage.TopicPartition) {
			wg.Go(func() {
				results[i] = v.AddOrVerify(ctx, id, 1, epoch, []storage.TopicPartition{tp}, replication.TxnDefaultError)
			})
			synctest.Wait()
		}
		call(0, id0, 0, tpA) // in flight to broker 1
		call(1, id1, 0, tpA) // queued for broker 1
		call(2, id0, 3, tpB) // queued: a newer epoch of id0, in the next request
		call(3, id1, 0, tpB) // same epoch as the queued id1: the queued one is a retry
		call(4, id1, -1, tpA)
		call(5, id2, 0, tpA) // broker 2: its own request, at once
		if r := results[3]; r != nil {
			t.Fatalf("the retry was answered early: %v", r)
		}
		if results[1][tpA] != kerr.NetworkException.Code {
			t.Fatalf("replaced same-epoch call: %v", results[1])
		}
		if results[4][tpA] != kerr.InvalidProducerEpoch.Code {
			t.Fatalf("older epoch: %v", results[4])
		}
		if reqs := f.sent(); len(reqs) != 2 || reqs[1].node != 2 {
			t.Fatalf("requests before release %+v", reqs)
		}
		close(f.hold)
		wg.Wait()
		reqs := f.sent()
		if len(reqs) != 3 || reqs[2].node != 1 || len(reqs[2].req.Transactions) != 2 {
			t.Fatalf("requests %+v", reqs)
		}
		got := map[string]int16{}
		for _, tx := range reqs[2].req.Transactions {
			got[tx.TransactionalID] = tx.ProducerEpoch
		}
		if got[id0] != 3 || got[id1] != 0 {
			t.Fatalf("second request %v", got)
		}
		for _, i := range []int{0, 2, 3, 5} {
			if len(results[i]) != 0 {
				t.Fatalf("call %d: %v", i, results[i])
			}
		}
	})
}

func TestTxnVerifierErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeCoordinators{}
		img := txnImage(t, 1, 1, 1)
		v := newTestVerifier(t, f, img)
		ctx := context.Background()
		id := txnIDFor(0, 3)
		perPartition := func(codes map[storage.TopicPartition]int16) func(int32, *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
			return func(_ int32, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
				resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
				rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
				rt.TransactionalID = req.Transactions[0].TransactionalID
				for tp, code := range codes {
					tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
					tt.Topic = tp.Topic
					p := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
					p.Partition, p.ErrorCode = tp.Partition, code
					tt.Partitions = append(tt.Partitions, p)
					rt.Topics = append(rt.Topics, tt)
				}
				resp.Transactions = append(resp.Transactions, rt)
				return resp, nil
			}
		}
		cases := []struct {
			name   string
			answer func(int32, *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error)
			op     replication.TxnOperation
			want   map[storage.TopicPartition]int16
		}{
			{"fenced", perPartition(map[storage.TopicPartition]int16{tpA: kerr.ProducerFenced.Code}), replication.TxnDefaultError,
				map[storage.TopicPartition]int16{tpA: kerr.InvalidProducerEpoch.Code}},
			{"abortable, old client", perPartition(map[storage.TopicPartition]int16{tpA: kerr.TransactionAbortable.Code}), replication.TxnDefaultError,
				map[storage.TopicPartition]int16{tpA: kerr.InvalidTxnState.Code}},
			{"abortable, v11 client", perPartition(map[storage.TopicPartition]int16{tpA: kerr.TransactionAbortable.Code}), replication.TxnGenericErrorSupported,
				map[storage.TopicPartition]int16{tpA: kerr.TransactionAbortable.Code}},
			{"only one partition unverified", perPartition(map[storage.TopicPartition]int16{tpB: kerr.InvalidTxnState.Code, tpA: 0}), replication.TxnDefaultError,
				map[storage.TopicPartition]int16{tpB: kerr.InvalidTxnState.Code}},
			{"top-level error", func(_ int32, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
				resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
				resp.ErrorCode = kerr.NotCoordinator.Code
				return resp, nil
			}, replication.TxnDefaultError, map[storage.TopicPartition]int16{tpA: kerr.NotCoordinator.Code, tpB: kerr.NotCoordinator.Code}},
			{"cluster authorization", func(_ int32, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
				resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
				resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				return resp, nil
			}, replication.TxnDefaultError, map[storage.TopicPartition]int16{tpA: kerr.InvalidTxnState.Code, tpB: kerr.InvalidTxnState.Code}},
			{"transport", func(int32, *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
				return nil, errors.New("connection refused")
			}, replication.TxnDefaultError, map[storage.TopicPartition]int16{tpA: kerr.NetworkException.Code, tpB: kerr.NetworkException.Code}},
			{"transaction missing from the answer", func(_ int32, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
				return req.ResponseKind(), nil
			}, replication.TxnDefaultError, map[storage.TopicPartition]int16{tpA: kerr.NetworkException.Code, tpB: kerr.NetworkException.Code}},
		}
		for _, c := range cases {
			f.mu.Lock()
			f.answer = c.answer
			f.mu.Unlock()
			got := v.AddOrVerify(ctx, id, 1, 0, []storage.TopicPartition{tpA, tpB}, c.op)
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
		// request.timeout.ms
		f.mu.Lock()
		f.answer, f.hold = nil, make(chan struct{})
		f.mu.Unlock()
		start := time.Now()
		got := v.AddOrVerify(ctx, id, 1, 0, []storage.TopicPartition{tpA}, replication.TxnDefaultError)
		if got[tpA] != kerr.NetworkException.Code || time.Since(start) != time.Second {
			t.Fatalf("timeout: %v after %v", got, time.Since(start))
		}
		// a coordinator that cannot verify (no AddPartitionsToTxn v4): go on
		f.mu.Lock()
		f.hold = nil
		f.mu.Unlock()
		v.served = func() (int16, bool) { return 3, true }
		n := len(f.sent())
		if got := v.AddOrVerify(ctx, id, 1, 0, []storage.TopicPartition{tpA}, replication.TxnDefaultError); len(got) != 0 || len(f.sent()) != n {
			t.Fatalf("unsupported: %v", got)
		}
	})
}
