//go:build integration

package integration

// Kafka's own transaction tools against the broker: kafka-transactions.sh
// (org.apache.kafka.tools.TransactionsCommand: list, describe,
// describe-producers, find-hanging, abort) and kafka-dump-log.sh on the
// __transaction_state log (--transaction-log-decoder) and on a data segment
// with COMMIT and ABORT control batches.

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// writeHangingTxn makes the transaction kafka-transactions.sh find-hanging
// exists for: it initializes txnID's producer id at the coordinator, then
// writes one transactional batch to topic-partition with a Produce v11
// request (before KIP-890's implicit AddPartitionsToTxn) without ever adding
// the partition to the transaction. With the broker's
// transaction.partition.verification.enable=false nothing checks it, so the
// partition has an open transaction its coordinator knows nothing of.
// It returns the producer id, epoch and the batch's offset.
func writeHangingTxn(t testing.TB, addr, txnID, topic string, partition int32) (int64, int16, int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID = kmsg.StringPtr(txnID)
	init.TransactionTimeoutMillis = 600000
	init.ProducerID, init.ProducerEpoch = -1, -1
	var iresp *kmsg.InitProducerIDResponse
	waitFor(t, 30*time.Second, "InitProducerId for "+txnID, func() error {
		// franz-go sends it to the transaction coordinator and retries
		// while __transaction_state is being created.
		resp, err := init.RequestWith(ctxT(t, 15*time.Second), cl)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		iresp = resp
		return err
	})

	batch := transactionalBatch(iresp.ProducerID, iresp.ProducerEpoch, 0, []byte("hanging-0"), []byte("hanging;seq=0"))
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr(txnID)
	req.Acks = -1
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	pc, err := protocol.Dial(ctx, addr, "kgo-it-hanging")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	kresp, err := pc.RequestVersion(ctx, req, 11)
	if err != nil {
		t.Fatalf("Produce v11 of the hanging batch: %v", err)
	}
	presp := kresp.(*kmsg.ProduceResponse)
	if len(presp.Topics) != 1 || len(presp.Topics[0].Partitions) != 1 {
		t.Fatalf("Produce v11: malformed response %+v", presp)
	}
	pr := presp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(pr.ErrorCode); err != nil {
		t.Fatalf("Produce v11 of a transactional batch without AddPartitionsToTxn: %v (error message %v)", err, pr.ErrorMessage)
	}
	return iresp.ProducerID, iresp.ProducerEpoch, pr.BaseOffset
}

// transactionalBatch encodes a v2 record batch of one record with the
// transactional attribute (bit 4) set.
func transactionalBatch(pid int64, epoch int16, seq int32, key, value []byte) []byte {
	rec := kmsg.Record{Key: key, Value: value}
	body := rec.AppendTo(nil) // Length 0: one varint byte
	rec.Length = int32(len(body) - 1)
	recBytes := rec.AppendTo(nil)
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           0x10,
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           1,
		Records:              recBytes,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(raw[17:], crc)
	return raw
}

// toolTable parses the tab-separated table TransactionsCommand prints
// (header row first) into one map per row.
func toolTable(t testing.TB, out string) []map[string]string {
	t.Helper()
	ls := lines(out)
	if len(ls) == 0 {
		t.Fatalf("no table in %q", out)
	}
	split := func(l string) []string {
		var f []string
		for _, c := range strings.Split(strings.TrimRight(l, "\t"), "\t") {
			f = append(f, strings.TrimSpace(c))
		}
		return f
	}
	hdr := split(ls[0])
	var rows []map[string]string
	for _, l := range ls[1:] {
		m := map[string]string{}
		for i, v := range split(l) {
			if i < len(hdr) {
				m[hdr[i]] = v
			}
		}
		rows = append(rows, m)
	}
	return rows
}

func rowWith(rows []map[string]string, k, v string) map[string]string {
	for _, r := range rows {
		if r[k] == v {
			return r
		}
	}
	return nil
}

// TestTxnToolsTransactionsCommand: an open transaction of a Java producer
// that halted (on partition 1: its coordinator lists the partition) and a
// hanging one (on partition 0: written without AddPartitionsToTxn), as
// kafka-transactions.sh lists, describes and finds them; abort ends the
// hanging one with an ABORT marker, after which the partition's last stable
// offset is its log end offset and read_committed sees nothing of it.
func TestTxnToolsTransactionsCommand(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, map[string]string{"transaction.partition.verification.enable": "false"})
	requireTxnAPIs(t, b.Addr, txnAdminAPIs...)
	const topic, openID, hangID = "it-txn-tools", "it-txn-tools-open", "it-txn-tools-hanging"
	createTopic(t, b, topic, 2, nil)
	tool := func(args ...string) ToolResult {
		t.Helper()
		return MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-transactions.sh", append([]string{"--bootstrap-server", b.Addr}, args...)...)
	}

	h := mustTxnTool(t, 0, b.Addr, "hang", "topic="+topic, "partition=1", "txnid="+openID, "txntimeout=600000")
	openOff := eventsOf(h.Events, "sent")[0].Int("offset")
	pid, epoch, hangOff := writeHangingTxn(t, b.Addr, hangID, topic, 0)
	t.Logf("open transaction %s at %s-1@%d; hanging one (producer %d epoch %d) at %s-0@%d", openID, topic, openOff, pid, epoch, topic, hangOff)

	// list: both transactional ids, on coordinator 1.
	rows := toolTable(t, tool("list").Stdout)
	open := rowWith(rows, "TransactionalId", openID)
	hang := rowWith(rows, "TransactionalId", hangID)
	if open == nil || open["Coordinator"] != "1" || open["TransactionState"] != "Ongoing" {
		t.Errorf("list: %s row %v, want coordinator 1 and state Ongoing (all rows %v)", openID, open, rows)
	}
	if hang == nil || hang["Coordinator"] != "1" || hang["ProducerId"] != fmt.Sprint(pid) || hang["TransactionState"] != "Empty" {
		t.Errorf("list: %s row %v, want coordinator 1, producer %d, state Empty (all rows %v)", hangID, hang, pid, rows)
	}

	// describe: the open transaction and its partition.
	rows = toolTable(t, tool("describe", "--transactional-id", openID).Stdout)
	if len(rows) != 1 || rows[0]["TransactionState"] != "Ongoing" || rows[0]["TopicPartitions"] != topic+"-1" ||
		rows[0]["TransactionTimeoutMs"] != "600000" || rows[0]["CoordinatorId"] != "1" || rows[0]["CurrentTransactionStartTimeMs"] == "None" {
		t.Errorf("describe %s: %v, want Ongoing on %s-1 with timeout 600000 on coordinator 1", openID, rows, topic)
	}

	// describe-producers: the hanging producer and its open transaction's first offset.
	rows = toolTable(t, tool("describe-producers", "--topic", topic, "--partition", "0").Stdout)
	if r := rowWith(rows, "ProducerId", fmt.Sprint(pid)); r == nil || r["ProducerEpoch"] != fmt.Sprint(epoch) ||
		r["CurrentTransactionStartOffset"] != fmt.Sprint(hangOff) || r["LastSequence"] != "0" || r["LatestCoordinatorEpoch"] != "-1" {
		t.Errorf("describe-producers %s-0: %v, want producer %d epoch %d, last sequence 0, coordinator epoch -1, transaction from %d", topic, rows, pid, epoch, hangOff)
	}

	// find-hanging: partition 0 only (the coordinator lists partition 1 in
	// the open transaction, so that one is not hanging).
	rows = toolTable(t, tool("find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0").Stdout)
	if len(rows) != 1 || rows[0]["Topic"] != topic || rows[0]["Partition"] != "0" || rows[0]["ProducerId"] != fmt.Sprint(pid) ||
		rows[0]["StartOffset"] != fmt.Sprint(hangOff) {
		t.Errorf("find-hanging --broker-id 1: %v, want exactly %s-0, producer %d, start offset %d", rows, topic, pid, hangOff)
	}
	lso, err := b.Admin().ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup(topic, 0); o.Offset != hangOff {
		t.Errorf("%s-0 last stable offset %d before the abort, want %d (the hanging transaction's start)", topic, o.Offset, hangOff)
	}

	// abort: an ABORT marker ends the hanging transaction.
	r := tool("abort", "--topic", topic, "--partition", "0", "--start-offset", fmt.Sprint(hangOff))
	if strings.TrimSpace(r.Stdout) != "" {
		t.Logf("abort printed: %s", r.Stdout)
	}
	rows = toolTable(t, tool("describe-producers", "--topic", topic, "--partition", "0").Stdout)
	if r := rowWith(rows, "ProducerId", fmt.Sprint(pid)); r == nil || r["CurrentTransactionStartOffset"] != "None" {
		t.Errorf("describe-producers %s-0 after abort: %v, want producer %d with no open transaction", topic, rows, pid)
	}
	leo := endOffsets(t, b, topic)
	lso, err = b.Admin().ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup(topic, 0); o.Offset != leo[0] || leo[0] != hangOff+2 {
		t.Errorf("%s-0 after abort: last stable offset %d, log end offset %d, want both %d (record + abort marker)", topic, o.Offset, leo[0], hangOff+2)
	}
	if o, _ := lso.Lookup(topic, 1); o.Offset != openOff {
		t.Errorf("%s-1: last stable offset %d, want %d (its transaction is still open)", topic, o.Offset, openOff)
	}
	recs, _ := javaConsume(t, b.Addr, topic, "read_committed")
	for _, rec := range recs {
		if rec.Partition == 0 {
			t.Errorf("read_committed after abort returned %+v from the aborted hanging transaction", rec)
		}
	}
}

// TestTxnDumpLog: kafka-dump-log.sh decodes the broker's
// __transaction_state segments (--transaction-log-decoder: the
// transactional id, producer id and states) and shows the COMMIT and ABORT
// control batches (endTxnMarker) of a data segment.
func TestTxnDumpLog(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	const topic, txnID = "it-txn-dump", "it-txn-dump"
	createTopic(t, b, topic, 1, nil)
	mustTxnTool(t, 0, b.Addr, "produce", "topic="+topic, "txnid="+txnID, "plan=CA", "per=3")
	// Both markers written and the coordinator's CompleteAbort recorded
	// before the broker stops (every file final and flushed).
	waitStable(t, []string{b.Addr}, topic)
	waitFor(t, 30*time.Second, txnID+" to be CompleteAbort", func() error {
		d, err := b.Admin().DescribeTransactions(ctxT(t, 10*time.Second), txnID)
		if err != nil {
			return err
		}
		if st := d[txnID].State; st != "CompleteAbort" {
			return fmt.Errorf("state %q (%v)", st, d[txnID].Err)
		}
		return nil
	})
	b.Stop(0)

	// The coordinator partition of txnID is whichever __transaction_state
	// partition has records; pass every segment.
	var segs []string
	for _, dir := range globSorted(t, filepath.Join(b.DataDir, "__transaction_state-*")) {
		segs = append(segs, globSorted(t, filepath.Join(dir, "*.log"))...)
	}
	if len(segs) == 0 {
		t.Fatalf("no __transaction_state-*/*.log under %s", b.DataDir)
	}
	out := MustKafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-dump-log.sh", "--transaction-log-decoder", "--files", strings.Join(segs, ",")).Stdout
	var txnLines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, txnID) {
			txnLines = append(txnLines, l)
		}
	}
	if len(txnLines) == 0 {
		t.Fatalf("--transaction-log-decoder shows no record of %s:\n%s", txnID, tail(out, 60))
	}
	t.Logf("--transaction-log-decoder, a record of %s:\n%s", txnID, txnLines[len(txnLines)-1])
	joined := strings.Join(txnLines, "\n")
	for _, want := range []string{
		`"transactionalId":"` + txnID + `"`,
		`"producerId":`,
		`"transactionStatus":"Ongoing"`,
		`"transactionStatus":"PrepareCommit"`,
		`"transactionStatus":"CompleteCommit"`,
		`"transactionStatus":"PrepareAbort"`,
		`"transactionStatus":"CompleteAbort"`,
		`"topic":"` + topic + `"`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("--transaction-log-decoder records of %s lack %s:\n%s", txnID, want, tail(joined, 40))
		}
	}

	data := globSorted(t, filepath.Join(b.DataDir, topic+"-0", "*.log"))
	out = MustKafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-dump-log.sh", "--deep-iteration", "--files", strings.Join(data, ",")).Stdout
	var markers []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "endTxnMarker") {
			markers = append(markers, l)
		}
	}
	if len(markers) != 2 || !strings.Contains(markers[0], "endTxnMarker: COMMIT") || !strings.Contains(markers[1], "endTxnMarker: ABORT") {
		t.Errorf("data segment: want a COMMIT then an ABORT marker, got %q\n%s", markers, tail(out, 40))
	}
	if n := strings.Count(out, "isTransactional: true"); n < 4 {
		t.Errorf("data segment: %d batches with isTransactional: true, want >= 4 (2+ data, 2 control)", n)
	}
	if n := strings.Count(out, "isControl: true"); n != 2 {
		t.Errorf("data segment: %d batches with isControl: true, want 2", n)
	}
}
