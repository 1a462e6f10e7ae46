package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kgo-broker/kgo-broker/storage"
)

// The partition side of transactions on a whole node, over the wire:
// transactional produce (verification off for verify-only clients, so that
// no transaction coordinator is needed; a transaction.version 2 produce is
// still added and finds no coordinator), WriteTxnMarkers, DescribeProducers,
// and a franz-go read_committed consumer dropping the aborted records.
func TestNodeTransactionMarkers(t *testing.T) {
	n := startNode(t, "", map[string]string{"transaction.partition.verification.enable": "false"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := n.client(t)
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "txn"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	n.awaitLeader(t, "txn", 0)
	txnID := "app-1"
	produce := func(version int16, pid int64, seq int32, values ...string) kmsg.ProduceResponseTopicPartition {
		t.Helper()
		var recs []storage.Record
		for _, v := range values {
			recs = append(recs, storage.Record{Key: []byte(v), Value: []byte(v), Timestamp: time.Now().UnixMilli()})
		}
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis, req.TransactionID = version, -1, 5000, &txnID
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "txn"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = storage.BuildBatch(storage.BatchOptions{Transactional: true,
			Producer: &storage.BatchProducer{ID: pid, Epoch: 0, BaseSequence: seq}}, recs...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		// franz-go sends the highest version both sides serve: pin it
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(0, version)
		resp, err := req.RequestWith(ctx, n.client(t, kgo.MaxVersions(vs)))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0]
	}
	markers := func(version int16, ms ...kmsg.WriteTxnMarkersRequestMarker) *kmsg.WriteTxnMarkersResponse {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		req.Markers = ms
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(27, version)
		// straight to the node: franz-go would route each partition to its
		// leader and refuse the unknown one itself
		raw, err := n.client(t, kgo.MaxVersions(vs)).Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if raw.GetVersion() != version {
			t.Fatalf("WriteTxnMarkers v%d sent, want v%d", raw.GetVersion(), version)
		}
		return raw.(*kmsg.WriteTxnMarkersResponse)
	}
	marker := func(pid int64, commit bool, coordEpoch int32, parts ...int32) kmsg.WriteTxnMarkersRequestMarker {
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, 0, commit, coordEpoch
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = "txn", parts
		m.Topics = append(m.Topics, mt)
		return m
	}

	// transaction.version 2: the partition is added from the produce; there
	// is no __transaction_state, so no coordinator
	p := produce(12, 99, 0, "x")
	if p.ErrorCode != kerr.NotEnoughReplicas.Code || !strings.Contains(deref(p.ErrorMessage), "COORDINATOR_NOT_AVAILABLE") {
		t.Fatalf("v12 without a coordinator: %+v (%s)", p, deref(p.ErrorMessage))
	}
	if p := produce(11, 1, 0, "aborted-1", "aborted-2"); p.ErrorCode != 0 { // 0-1
		t.Fatalf("produce: %v %+v", kerr.ErrorForCode(p.ErrorCode), p)
	}
	if p := produce(11, 2, 0, "committed-1"); p.ErrorCode != 0 { // 2
		t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	// one request: abort producer 1, commit producer 2, and a partition that
	// does not exist
	resp := markers(2, marker(1, false, 4, 0), marker(2, true, 4, 0, 7))
	if len(resp.Markers) != 2 || resp.Markers[0].ProducerID != 1 || resp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("markers %+v", resp.Markers)
	}
	if ps := resp.Markers[1].Topics[0].Partitions; len(ps) != 2 || ps[0].ErrorCode != 0 || ps[1].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("producer 2 %+v", ps)
	}
	// a zombie coordinator (older epoch) is fenced
	resp = markers(1, marker(1, false, 3, 0))
	if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.TransactionCoordinatorFenced.Code {
		t.Fatalf("zombie: %v", kerr.ErrorForCode(code))
	}
	if p := produce(11, 1, 2, "committed-2"); p.ErrorCode != 0 { // 5
		t.Fatalf("produce: %v", kerr.ErrorForCode(p.ErrorCode))
	}

	// DescribeProducers while producer 1's second transaction is open
	dp, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"txn": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]kadm.DescribedProducer{}
	dp.EachProducer(func(d kadm.DescribedProducer) { got[d.ProducerID] = d })
	if d := got[1]; d.CoordinatorEpoch != 4 || d.CurrentTxnStartOffset != 5 || d.LastSequence != 2 || d.ProducerEpoch != 0 {
		t.Fatalf("producer 1 %+v", d)
	}
	if d := got[2]; d.CoordinatorEpoch != 4 || d.CurrentTxnStartOffset != -1 || d.LastSequence != 0 {
		t.Fatalf("producer 2 %+v", d)
	}
	if len(got) != 2 {
		t.Fatalf("producers %+v", got)
	}
	// read_committed stops at the open transaction
	offs, err := adm.ListEndOffsets(ctx, "txn")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("txn", 0); o.Offset != 6 {
		t.Fatalf("end offset %+v", o)
	}
	if resp := markers(1, marker(1, true, 4, 0)); resp.Markers[0].Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit: %+v", resp)
	}

	c := n.client(t, kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"txn": {0: kgo.NewOffset().AtStart()}}))
	var values []string
	for len(values) < 2 {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, string(r.Value)) })
	}
	if strings.Join(values, ",") != "committed-1,committed-2" {
		t.Fatalf("read_committed %v", values)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
