//go:build integration

package integration

// Transactions driven by Apache Kafka 4.4's own Java producer and consumer
// (integration/java/TxnTool.java): commit and abort as seen by both
// isolation levels, consume-transform-produce with sendOffsetsToTransaction,
// zombie fencing, and the coordinator aborting a timed-out transaction.

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// startTxnBroker starts a single node for a transaction test and checks
// that it advertises the transaction APIs.
func startTxnBroker(t *testing.T, extra map[string]string) *Broker {
	t.Helper()
	javaClasspath(t) // compile (or skip) before a broker is started
	b := StartBroker(t, BrokerOptions{Overrides: txnOverrides(extra)})
	requireTxnAPIs(t, b.Addr)
	return b
}

// TestTxnJavaCommitAbort: a transactional Java producer commits and aborts
// transactions over two partitions. read_committed sees exactly the
// committed records, read_uncommitted every record; each transaction left
// one control batch per partition; while a transaction is open the last
// stable offset stops at its first record and moves on once it is aborted.
func TestTxnJavaCommitAbort(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	const topic, plan, per = "it-txn-basic", "CACCA", 6
	createTopic(t, b, topic, 2, nil)

	r := mustTxnTool(t, 0, b.Addr, "produce", "topic="+topic, "txnid=it-txn-basic", "plan="+plan, fmt.Sprint("per=", per), "partitions=2")
	txns := eventsOf(r.Events, "txn")
	if len(txns) != len(plan) {
		t.Fatalf("producer reported %d transactions, want %d:\n%s", len(txns), len(plan), r)
	}
	committed, aborted := map[string]bool{}, map[string]bool{}
	for _, e := range txns {
		for _, po := range e.Strs("offsets") {
			if e.Str("outcome") == "commit" {
				committed[po] = true
			} else {
				aborted[po] = true
			}
		}
	}

	check := func(isolation string, want map[string]bool, wantN int) {
		t.Helper()
		recs, _ := javaConsume(t, b.Addr, topic, isolation)
		got := map[string]bool{}
		for _, rec := range recs {
			po := fmt.Sprintf("%d:%d", rec.Partition, rec.Offset)
			if got[po] {
				t.Errorf("%s: offset %s read twice", isolation, po)
			}
			got[po] = true
			if !want[po] {
				t.Errorf("%s: read %s %s=%s, which is not a record it should see", isolation, po, rec.Key, rec.Value)
			}
			if isolation == "read_committed" && strings.Contains(rec.Value, "plan=A") {
				t.Errorf("read_committed returned a record of an aborted transaction: %s %s", po, rec.Value)
			}
		}
		if len(recs) != wantN {
			t.Errorf("%s read %d records, want %d", isolation, len(recs), wantN)
		}
	}
	all := map[string]bool{}
	for po := range committed {
		all[po] = true
	}
	for po := range aborted {
		all[po] = true
	}
	// Every transaction wrote to both partitions, so each partition ends in
	// len(plan) control batches (one offset each) after its records; once
	// they are written (waitStable) no transaction is open.
	leo := waitStable(t, []string{b.Addr}, topic)
	for p := int32(0); p < 2; p++ {
		if want := int64(len(plan)*per/2 + len(plan)); leo[p] != want {
			t.Errorf("partition %d: log end offset %d, want %d (%d records + %d markers)", p, leo[p], want, len(plan)*per/2, len(plan))
		}
	}
	check("read_committed", committed, 3*per)
	check("read_uncommitted", all, len(plan)*per)

	// An open transaction holds the last stable offset at its first record
	// until the coordinator aborts it (transaction.timeout.ms=10000).
	h := mustTxnTool(t, 0, b.Addr, "hang", "topic="+topic, "txnid=it-txn-basic-open", "partition=0", "txntimeout=10000")
	open := eventsOf(h.Events, "sent")[0].Int("offset")
	if open != leo[0] {
		t.Errorf("the open transaction's record is at offset %d, want %d (the old log end offset)", open, leo[0])
	}
	lso, err := b.Admin().ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatalf("ListOffsets read_committed: %v", err)
	}
	if o, _ := lso.Lookup(topic, 0); o.Offset != open {
		t.Errorf("partition 0 with an open transaction at %d: last stable offset %d, want %d", open, o.Offset, open)
	}
	if got := endOffsets(t, b, topic)[0]; got != open+1 {
		t.Errorf("partition 0 with an open transaction at %d: log end offset %d, want %d", open, got, open+1)
	}
	waitFor(t, 30*time.Second, "the timed-out transaction to be aborted (LSO = LEO)", func() error {
		lso, err := b.Admin().ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		o, _ := lso.Lookup(topic, 0)
		if o.Offset != open+2 {
			return fmt.Errorf("last stable offset %d, want %d (the record and the abort marker)", o.Offset, open+2)
		}
		return nil
	})
	check("read_committed", committed, 3*per)
}

// TestTxnJavaConsumeTransformProduce: a Java read-process-write loop
// (sendOffsetsToTransaction with the consumer's group metadata) copies every
// input record to the output exactly once under read_committed, also across
// two aborted and retried transactions; the group's committed offsets end at
// the input's end, and a second run with more input processes only the new
// records.
func TestTxnJavaConsumeTransformProduce(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	const in, out, group = "it-txn-ctp-in", "it-txn-ctp-out", "it-txn-ctp"
	createTopic(t, b, in, 3, nil)
	createTopic(t, b, out, 2, nil)
	produceKeyed(t, b, in, 0, 300)

	r := mustTxnTool(t, 120*time.Second, b.Addr, "ctp", "in="+in, "out="+out, "group="+group, "txnid=it-txn-ctp", "batch=25", "abort=2,5")
	aborts := eventsOf(r.Events, "abort")
	if len(aborts) != 2 {
		t.Errorf("want 2 aborted transactions, the tool reported %d", len(aborts))
	}
	abortedN := 0
	for _, e := range aborts {
		abortedN += int(e.Int("n"))
	}
	if f := eventsOf(r.Events, "finished"); len(f) != 1 || f[0].Int("committedRecords") != 300 {
		t.Errorf("tool finished with %v, want committedRecords 300", f)
	}
	checkCopiedOnce(t, b, in, out, 300, abortedN)
	checkGroupAtEnd(t, b, group, in)

	// More input; the same group and transactional.id go on from the
	// committed offsets.
	produceKeyed(t, b, in, 300, 120)
	r = mustTxnTool(t, 120*time.Second, b.Addr, "ctp", "in="+in, "out="+out, "group="+group, "txnid=it-txn-ctp", "batch=25")
	if f := eventsOf(r.Events, "finished"); len(f) != 1 || f[0].Int("committedRecords") != 120 {
		t.Errorf("second run finished with %v, want committedRecords 120 (only the new input)", f)
	}
	checkCopiedOnce(t, b, in, out, 420, -1)
	checkGroupAtEnd(t, b, group, in)
}

// produceKeyed writes n keyed records k<from>..k<from+n-1> (value v<i>) with
// a plain idempotent producer.
func produceKeyed(t testing.TB, b *Broker, topic string, from, n int) {
	t.Helper()
	cl := b.Client(kgo.DefaultProduceTopic(topic))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("k%d", from+i)), Value: []byte(fmt.Sprintf("v%d", from+i))}
	}
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
	cl.Close()
}

// checkCopiedOnce checks that out, read_committed, holds each of in's n
// records exactly once: in was written by produceKeyed (values v0..v<n-1>,
// no transactions, so each partition's offsets run from 0 to its end), and
// each copy's value is from=<partition>:<offset>;v<i>. With aborted >= 0,
// read_uncommitted must hold that many aborted copies besides.
func checkCopiedOnce(t *testing.T, b *Broker, in, out string, n, aborted int) {
	t.Helper()
	waitStable(t, []string{b.Addr}, out)
	ends := endOffsets(t, b, in)
	if sumOffsets(ends) != int64(n) {
		t.Fatalf("input %s holds %d records, want %d", in, sumOffsets(ends), n)
	}
	seenPO, seenV := map[string]int{}, map[string]int{}
	outRecs, _ := javaConsume(t, b.Addr, out, "read_committed")
	for _, r := range outRecs {
		var p int32
		var o int64
		var v string
		if _, err := fmt.Sscanf(r.Value, "from=%d:%d;%s", &p, &o, &v); err != nil || o < 0 || o >= ends[p] {
			t.Errorf("output record %d:%d %q copies no input record", r.Partition, r.Offset, r.Value)
			continue
		}
		seenPO[fmt.Sprintf("%d:%d", p, o)]++
		seenV[v]++
	}
	var bad []string
	for p, end := range ends {
		for o := int64(0); o < end; o++ {
			if c := seenPO[fmt.Sprintf("%d:%d", p, o)]; c != 1 {
				bad = append(bad, fmt.Sprintf("%s-%d@%d x%d", in, p, o, c))
			}
		}
	}
	for i := 0; i < n; i++ {
		if c := seenV[fmt.Sprintf("v%d", i)]; c != 1 {
			bad = append(bad, fmt.Sprintf("value v%d x%d", i, c))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%d input records are not in %s (read_committed) exactly once: %s", len(bad), out, strings.Join(firstN(bad, 20), ", "))
	}
	if len(outRecs) != n {
		t.Errorf("%s read_committed holds %d records, want %d", out, len(outRecs), n)
	}
	if aborted < 0 {
		return
	}
	unc, _ := javaConsume(t, b.Addr, out, "read_uncommitted")
	if len(unc) != n+aborted {
		t.Errorf("%s read_uncommitted holds %d records, want %d (%d committed + %d aborted)", out, len(unc), n+aborted, n, aborted)
	}
}

// checkGroupAtEnd checks that group's committed offsets for topic are the
// topic's end offsets.
func checkGroupAtEnd(t *testing.T, b *Broker, group, topic string) {
	t.Helper()
	ends := endOffsets(t, b, topic)
	offs, err := b.Admin().FetchOffsets(ctxT(t, 20*time.Second), group)
	if err != nil {
		t.Fatalf("OffsetFetch %s: %v", group, err)
	}
	for p, end := range ends {
		o, ok := offs.Lookup(topic, p)
		if !ok || o.At != end {
			t.Errorf("group %s: committed offset of %s-%d is %v (found %v), want the end offset %d", group, topic, p, o.At, ok, end)
		}
	}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("... %d more", len(s)-n))
	}
	return s
}

// TestTxnJavaZombieFencing: producer A begins a transaction and writes; B
// initTransactions with the same transactional.id, which bumps the epoch and
// aborts A's transaction. A's next send and its commit fail as Kafka 4.4
// fails them (InvalidProducerEpochException); B commits; read_committed shows only B's record.
func TestTxnJavaZombieFencing(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	const topic = "it-txn-fence"
	createTopic(t, b, topic, 1, nil)
	r := mustTxnTool(t, 0, b.Addr, "fence", "topic="+topic, "txnid=it-txn-fence")
	errs := map[string]JavaEvent{}
	for _, e := range eventsOf(r.Events, "error") {
		errs[e.Str("op")] = e
	}
	for _, op := range []string{"aSend", "aCommit"} {
		e, ok := errs[op]
		if !ok {
			t.Errorf("fenced producer A: %s succeeded, want %s\n%s", op, invalidEpoch, r)
			continue
		}
		t.Logf("fenced producer A: %s threw %s: %s", op, e.Str("exception"), e.Str("message"))
		// Kafka 4.4 (transaction.version 2, KIP-890): B's InitProducerId
		// aborted A's transaction with a bumped epoch, so A's produce is
		// answered INVALID_PRODUCER_EPOCH, which the client raises (also on
		// the commit that follows) rather than ProducerFencedException.
		if e.Str("exception") != invalidEpoch {
			t.Errorf("fenced producer A: %s threw %s (%s), want %s as Kafka 4.4 does", op, e.Str("exception"), e.Str("message"), invalidEpoch)
		}
	}
	if len(eventsOf(r.Events, "bCommitted")) != 1 {
		t.Fatalf("producer B did not commit:\n%s", r)
	}
	recs, _ := javaConsume(t, b.Addr, topic, "read_committed")
	if len(recs) != 1 || recs[0].Value != "producer=B;seq=0" {
		t.Errorf("read_committed = %+v, want only B's record", recs)
	}
	unc, _ := javaConsume(t, b.Addr, topic, "read_uncommitted")
	var vals []string
	for _, r := range unc {
		vals = append(vals, r.Value)
	}
	if !containsStr(vals, "producer=A;seq=0") || !containsStr(vals, "producer=B;seq=0") {
		t.Errorf("read_uncommitted = %v, want A's aborted record and B's", vals)
	}
}

const invalidEpoch = "org.apache.kafka.common.errors.InvalidProducerEpochException"

func containsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestTxnJavaTimeout: a producer with transaction.timeout.ms=3000 begins,
// writes and stalls; the coordinator aborts the transaction (its state goes
// to CompleteAbort and the partition's last stable offset passes the abort
// marker); read_committed sees nothing of it; the producer's next send and
// commit fail as on Kafka.
func TestTxnJavaTimeout(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, nil)
	const topic, txnID = "it-txn-timeout", "it-txn-timeout"
	createTopic(t, b, topic, 1, nil)
	p := startJava(t, "256m", "TxnTool", "timeout", "bootstrap="+b.Addr, "deadline.ms=80000",
		"topic="+topic, "txnid="+txnID, "txntimeout=3000")
	sent := p.WaitEvent(40*time.Second, `{"event":"sent"}`, func(e JavaEvent) bool {
		return e.Str("event") == "sent" || e.Str("event") == "error"
	})
	if sent.Str("event") == "error" {
		t.Fatalf("the producer failed before it stalled: %s", sent)
	}
	start := time.Now()
	adm := b.Admin()
	waitFor(t, 30*time.Second, "the coordinator to abort the timed-out transaction", func() error {
		d, err := adm.DescribeTransactions(ctxT(t, 10*time.Second), txnID)
		if err != nil {
			return err
		}
		tx, ok := d[txnID]
		if !ok || tx.Err != nil {
			return fmt.Errorf("DescribeTransactions: %+v", tx)
		}
		if tx.State != "CompleteAbort" {
			return fmt.Errorf("state %s", tx.State)
		}
		lso, err := adm.ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		if o, _ := lso.Lookup(topic, 0); o.Offset != sent.Int("offset")+2 {
			return fmt.Errorf("state %s but last stable offset %d, want %d", tx.State, o.Offset, sent.Int("offset")+2)
		}
		return nil
	})
	t.Logf("aborted %v after the write (transaction.timeout.ms=3000)", time.Since(start).Round(100*time.Millisecond))
	if recs, _ := javaConsume(t, b.Addr, topic, "read_committed"); len(recs) != 0 {
		t.Errorf("read_committed returned %+v from the timed-out transaction", recs)
	}

	p.Send("go")
	p.WaitEvent(60*time.Second, `{"event":"done"}`, func(e JavaEvent) bool { return e.Str("event") == "done" })
	errs := map[string]JavaEvent{}
	for _, e := range eventsOf(p.Events(), "error") {
		errs[e.Str("op")] = e
	}
	for _, op := range []string{"send", "commit"} {
		e, ok := errs[op]
		if !ok {
			t.Errorf("after the timeout the producer's %s succeeded; want it to fail", op)
			continue
		}
		t.Logf("after the timeout: %s threw %s: %s", op, e.Str("exception"), e.Str("message"))
		// As on Kafka 4.4: the abort bumped the epoch (KIP-890).
		if e.Str("exception") != invalidEpoch {
			t.Errorf("after the timeout the producer's %s threw %s (%s), want %s", op, e.Str("exception"), e.Str("message"), invalidEpoch)
		}
	}
	if recs, _ := javaConsume(t, b.Addr, topic, "read_committed"); len(recs) != 0 {
		t.Errorf("read_committed returned %+v after the producer went on", recs)
	}
}
