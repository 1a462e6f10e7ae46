//go:build integration

package integration

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kgo-broker/kgo-broker/storage"
)

// TestTxnMarkersDumpLog writes transactions the way a transaction
// coordinator finishes them (transactional produce, then WriteTxnMarkers),
// without a coordinator: verification is off, so the produce is not checked.
// Kafka's own tools then read the result: kafka-transactions.sh
// describe-producers (DescribeProducers) while a transaction is open, and,
// after a clean stop, kafka-dump-log.sh over the segments (the control
// batches as endTxnMarker records) and the .txnindex (the aborted
// transactions with their last stable offsets).
func TestTxnMarkersDumpLog(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{"transaction.partition.verification.enable": "false"}})
	const topic = "it-txn"
	createTopic(t, b, topic, 1, map[string]string{"segment.bytes": "1048576"})
	ctx := ctxT(t, 60*time.Second)
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 11) // verify-only produce: not verified with verification off
	cl := b.Client(kgo.MaxVersions(vs))
	txnID := "it-txn-app"
	produce := func(pid int64, seq int32, n int, value string) {
		t.Helper()
		var recs []storage.Record
		for i := 0; i < n; i++ {
			recs = append(recs, storage.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(value), Timestamp: time.Now().UnixMilli()})
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis, req.TransactionID = -1, 5000, &txnID
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = storage.BuildBatch(storage.BatchOptions{Transactional: true,
			Producer: &storage.BatchProducer{ID: pid, Epoch: 0, BaseSequence: seq}}, recs...)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce: %v", kerr.ErrorForCode(code))
		}
	}
	marker := func(pid int64, commit bool) {
		t.Helper()
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch = pid, 0, commit, 7
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = topic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("marker: %v", kerr.ErrorForCode(code))
		}
	}
	produce(1001, 0, 3, "aborted")   // 0-2
	produce(1002, 0, 2, "committed") // 3-4
	marker(1001, false)              // 5
	produce(1003, 0, 1, "open")      // 6

	r := MustKafkaTool(t, RunOpts{}, "kafka-transactions.sh", "--bootstrap-server", b.Addr,
		"describe-producers", "--topic", topic, "--partition", "0")
	found := map[string][]string{}
	for _, l := range strings.Split(r.Stdout, "\n") {
		f := strings.Fields(l)
		if len(f) >= 6 && strings.HasPrefix(f[0], "100") {
			found[f[0]] = f
		}
	}
	// ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
	if f := found["1001"]; len(f) < 6 || f[2] != "7" || f[3] != "2" || f[5] != "None" {
		t.Errorf("producer 1001 (aborted): %v\n%s", f, r)
	}
	if f := found["1002"]; len(f) < 6 || f[2] != "-1" || f[5] != "3" {
		t.Errorf("producer 1002 (open at 3): %v\n%s", f, r)
	}
	if f := found["1003"]; len(f) < 6 || f[5] != "6" {
		t.Errorf("producer 1003 (open at 6): %v\n%s", f, r)
	}
	marker(1002, true)  // 7
	marker(1003, false) // 8

	c := b.Client(kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	var values []string
	for len(values) < 2 {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) { values = append(values, fmt.Sprintf("%d:%s", r.Offset, r.Value)) })
	}
	if got := strings.Join(values, " "); got != "3:committed 4:committed" {
		t.Errorf("read_committed: %s", got)
	}
	c.Close()
	cl.Close()
	b.Stop(0)

	partDir := filepath.Join(b.DataDir, topic+"-0")
	deep := dumpLogCheck(t, partDir, true)
	for _, want := range []string{
		"baseSequence: 0 lastSequence: 2 producerId: 1001 producerEpoch: 0",
		"isTransactional: true",
		"isControl: true",
		"endTxnMarker: ABORT coordinatorEpoch: 7",
		"endTxnMarker: COMMIT coordinatorEpoch: 7",
	} {
		if !strings.Contains(deep, want) {
			t.Errorf("--deep-iteration lacks %q:\n%s", want, tail(deep, 60))
		}
	}
	txnIdx := globSorted(t, filepath.Join(partDir, "*.txnindex"))
	if len(txnIdx) != 1 {
		t.Fatalf("transaction indexes %v", txnIdx)
	}
	r = MustKafkaTool(t, RunOpts{}, "kafka-dump-log.sh", "--files", txnIdx[0])
	// aborted at 5 while 1002 was open from 3; aborted at 8 with nothing open
	for _, want := range []string{
		"producerId: 1001 firstOffset: 0 lastOffset: 5 lastStableOffset: 3",
		"producerId: 1003 firstOffset: 6 lastOffset: 8 lastStableOffset: 9",
	} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("%s lacks %q:\n%s", filepath.Base(txnIdx[0]), want, r)
		}
	}
}
