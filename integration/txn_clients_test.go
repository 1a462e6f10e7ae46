//go:build integration

package integration

// Transactions from the other clients the suite uses: franz-go's
// GroupTransactSession (exactly-once read-process-write across group
// rebalances) and kcat / librdkafka's transactional producer.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// gtsWorker is one franz-go GroupTransactSession member copying in to out:
// each polled batch is one transaction holding the copies (value
// from=<partition>:<offset>;<value>) and the group's offsets.
type gtsWorker struct {
	id        string
	sess      *kgo.GroupTransactSession
	stop      chan struct{}
	done      chan struct{}
	committed atomic.Int64 // records in committed transactions
	aborted   atomic.Int64 // records in transactions End aborted
	err       error

	// newSess makes a fresh session with the same options: after End
	// fails, franz-go's documentation says the session should not go on
	// ("no returned error is retryable"), so the worker does what an
	// application does, a new session (whose InitProducerId fences and
	// aborts the old one's transaction). endErrs are those failures.
	newSess func() (*kgo.GroupTransactSession, error)
	mu      sync.Mutex
	endErrs []string
}

// EndErrors are the End failures the worker restarted its session after.
func (w *gtsWorker) EndErrors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.endErrs...)
}

// startGTSWorker starts a worker; work is a simulated processing time per
// transaction, which keeps transactions in flight while the group rebalances.
func startGTSWorker(t testing.TB, seeds []string, id, group, in, out string, work time.Duration, extra ...kgo.Opt) *gtsWorker {
	t.Helper()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(20 * time.Second),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(in),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.DefaultProduceTopic(out),
		kgo.SessionTimeout(6 * time.Second),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.RequestRetries(30),
		kgo.RetryTimeout(30 * time.Second),
	}, extra...)
	newSess := func() (*kgo.GroupTransactSession, error) { return kgo.NewGroupTransactSession(opts...) }
	sess, err := newSess()
	if err != nil {
		t.Fatal(err)
	}
	w := &gtsWorker{id: id, sess: sess, newSess: newSess, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(work)
	t.Cleanup(func() { w.Stop() })
	return w
}

func (w *gtsWorker) run(work time.Duration) {
	defer close(w.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stop:
			cancel()
		case <-w.done:
		}
	}()
	for {
		select {
		case <-w.stop:
			return
		default:
		}
		fs := w.sess.PollRecords(ctx, 20)
		if ctx.Err() != nil {
			return
		}
		if fs.IsClientClosed() {
			return
		}
		recs := fs.Records()
		if len(recs) == 0 {
			continue
		}
		if err := w.sess.Begin(); err != nil {
			w.err = fmt.Errorf("%s: Begin: %w", w.id, err)
			return
		}
		for _, r := range recs {
			w.sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: []byte(fmt.Sprintf("from=%d:%d;%s", r.Partition, r.Offset, r.Value))}, nil)
		}
		time.Sleep(work) // simulated processing: the transaction is open meanwhile
		committed, err := w.sess.End(ctx, kgo.TryCommit)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			// End aborts on a failed flush or commit (a rebalance, a
			// coordinator moving) and reports it as committed=false
			// without an error; the next poll starts over from the
			// group's committed offsets. An error means the session is
			// done: start a new one.
			if errors.Is(err, kgo.ErrClientClosed) {
				return
			}
			w.mu.Lock()
			w.endErrs = append(w.endErrs, err.Error())
			w.mu.Unlock()
			w.aborted.Add(int64(len(recs)))
			w.sess.Close()
			if w.sess, err = w.newSess(); err != nil {
				w.err = fmt.Errorf("%s: new session: %w", w.id, err)
				return
			}
			continue
		}
		if committed {
			w.committed.Add(int64(len(recs)))
		} else {
			w.aborted.Add(int64(len(recs)))
		}
	}
}

// Stop ends the loop (between transactions when possible) and closes the
// session, which leaves the group.
func (w *gtsWorker) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
	w.sess.Close()
}

// groupCommitted is the sum of group's committed offsets of topic. Each
// call uses a new client, so that no cached coordinator outlives a killed
// node.
func groupCommitted(t testing.TB, seeds []string, group, topic string) (int64, error) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RequestRetries(2), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctxT(t, 10*time.Second), group)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		return -1, fmt.Errorf("OffsetFetch %s: %w", group, err)
	}
	var n int64
	for _, ps := range offs {
		for _, o := range ps {
			if o.Topic == topic {
				n += o.At
			}
		}
	}
	return n, nil
}

// checkOnceFromInput reads in and out (read_committed, up to sentinels) and
// checks that out holds a copy of each of in's records exactly once.
func checkOnceFromInput(t *testing.T, seeds []string, in, out string, n int) {
	t.Helper()
	waitStable(t, seeds, out)
	inRecs := readTopic(t, seeds, in, kgo.ReadCommitted(), 90*time.Second)
	want := map[string]int{}
	for _, r := range inRecs {
		want[fmt.Sprintf("from=%d:%d;%s", r.Partition, r.Offset, r.Value)] = 0
	}
	if len(want) != n {
		t.Fatalf("input %s holds %d records, want %d", in, len(want), n)
	}
	outRecs := readTopic(t, seeds, out, kgo.ReadCommitted(), 90*time.Second)
	var extra []string
	for _, r := range outRecs {
		if _, ok := want[string(r.Value)]; !ok {
			extra = append(extra, fmt.Sprintf("%d:%d %s", r.Partition, r.Offset, r.Value))
			continue
		}
		want[string(r.Value)]++
	}
	var bad []string
	for v, c := range want {
		if c != 1 {
			bad = append(bad, fmt.Sprintf("%s x%d", v, c))
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%d of %d input records are not in %s (read_committed) exactly once: %s", len(bad), n, out, strings.Join(firstN(bad, 20), ", "))
	}
	if len(extra) > 0 {
		t.Errorf("%s holds %d records that copy no input record: %s", out, len(extra), strings.Join(firstN(extra, 10), ", "))
	}
	t.Logf("%s: %d committed records, each of the %d inputs exactly once: %v", out, len(outRecs), n, len(bad) == 0 && len(extra) == 0)
}

// TestTxnFranzGroupTransactSession: franz-go's GroupTransactSession copies
// 3000 records exactly once while the group rebalances twice: a second
// member joins at a quarter of the way, the first leaves at 60%.
func TestTxnFranzGroupTransactSession(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{Overrides: txnOverrides(nil)})
	requireTxnAPIs(t, b.Addr)
	const in, out, group, n = "it-txn-gts-in", "it-txn-gts-out", "it-txn-gts", 3000
	createTopic(t, b, in, 4, nil)
	createTopic(t, b, out, 2, nil)
	produceKeyed(t, b, in, 0, n)
	seeds := []string{b.Addr}

	waitCommitted := func(what string, atLeast int64, workers ...*gtsWorker) {
		t.Helper()
		waitFor(t, 90*time.Second, what, func() error {
			for _, w := range workers {
				select {
				case <-w.done:
					return fmt.Errorf("worker %s ended: %v", w.id, w.err)
				default:
				}
			}
			if got, err := groupCommitted(t, seeds, group, in); err != nil || got < atLeast {
				return fmt.Errorf("group offsets sum to %d (%v), want >= %d", got, err, atLeast)
			}
			return nil
		})
	}
	w1 := startGTSWorker(t, seeds, "it-txn-gts-1", group, in, out, 10*time.Millisecond)
	waitCommitted("the first member to commit a quarter of the input", n/4, w1)
	w2 := startGTSWorker(t, seeds, "it-txn-gts-2", group, in, out, 10*time.Millisecond)
	waitCommitted("both members to commit 60% of the input", n*6/10, w1, w2)
	if w2.committed.Load() == 0 {
		// The rebalance must have given w2 partitions by now; wait for its first commit.
		waitFor(t, 60*time.Second, "the second member's first commit", func() error {
			if w2.committed.Load() == 0 {
				return fmt.Errorf("member 2 committed nothing (member 1: %d)", w1.committed.Load())
			}
			return nil
		})
	}
	w1.Stop()
	waitCommitted("the second member to commit the rest", n, w2)
	w2.Stop()
	t.Logf("member 1 committed %d records (%d aborted), member 2 %d (%d aborted)",
		w1.committed.Load(), w1.aborted.Load(), w2.committed.Load(), w2.aborted.Load())
	if w1.err != nil || w2.err != nil {
		t.Errorf("workers ended with %v, %v", w1.err, w2.err)
	}
	// no node fails here: a rebalance aborts (committed=false), it is
	// never an error that ends a session
	if e := append(w1.EndErrors(), w2.EndErrors()...); len(e) > 0 {
		t.Errorf("End failed without a fault: %q", e)
	}
	checkOnceFromInput(t, seeds, in, out, n)
}

// TestTxnKcat: kcat 1.7 (librdkafka 2.0) as a transactional producer
// (-X transactional.id: one transaction over all of stdin, committed at
// its end; left open by a SIGINT and aborted by the coordinator; librdkafka's transaction protocol is the
// pre-KIP-890 one, with AddPartitionsToTxn and EndTxn v3), and as a
// read_committed and read_uncommitted consumer.
func TestTxnKcat(t *testing.T) {
	t.Parallel()
	kcat := requireKcat(t)
	b := StartBroker(t, BrokerOptions{Overrides: txnOverrides(nil)})
	requireTxnAPIs(t, b.Addr)
	const topic = "it-txn-kcat"
	createTopic(t, b, topic, 1, nil)

	r := RunCommand(t, RunOpts{Timeout: 60 * time.Second, Stdin: "k1:c1\nk2:c2\nk3:c3\n"}, kcat,
		"-b", b.Addr, "-P", "-t", topic, "-p", "0", "-K", ":", "-m", "20", "-X", "transactional.id=it-txn-kcat-commit")
	if r.ExitCode != 0 {
		t.Fatalf("kcat transactional produce (commit at the end of stdin) failed:\n%s", r)
	}
	if !strings.Contains(r.Stderr, "ommit") {
		t.Logf("kcat did not mention the commit:\n%s", r)
	}

	// EndTxn returns once the coordinator has decided; the COMMIT marker
	// follows.
	waitFor(t, 30*time.Second, "the COMMIT marker (LSO = LEO = 4)", func() error {
		lso, err := b.Admin().ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		if o, _ := lso.Lookup(topic, 0); o.Offset != 4 {
			return fmt.Errorf("last stable offset %d", o.Offset)
		}
		return nil
	})
	const before = 4

	// A second transaction, never committed: kcat reads stdin in blocks, so
	// it is given enough lines for most of them to be produced while stdin
	// stays open. Once they are in the log, SIGINT: kcat 1.7.1 then exits 1
	// ("Program terminated while producing message") without ending the
	// transaction (its -h says it aborts), so the coordinator aborts it when
	// its transaction.timeout.ms (5s here) has passed.
	p := startProc(t, "kcat", kcat, "-b", b.Addr, "-P", "-t", topic, "-p", "0", "-K", ":", "-m", "20",
		"-X", "transactional.id=it-txn-kcat-abort", "-X", "linger.ms=0", "-X", "transaction.timeout.ms=5000")
	var in strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&in, "a%d:%s\n", i, strings.Repeat("x", 60))
	}
	if _, err := p.stdin.Write([]byte(in.String())); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "kcat's records of the open transaction to be in the log", func() error {
		select {
		case <-p.done:
			return fmt.Errorf("kcat exited: %s", p.Output())
		default:
		}
		if got := endOffsets(t, b, topic)[0]; got < before+2000 {
			return fmt.Errorf("log end offset %d, want >= %d", got, before+2000)
		}
		return nil
	})
	lso, err := b.Admin().ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := lso.Lookup(topic, 0); o.Offset != before {
		t.Errorf("last stable offset with kcat's transaction open: %d, want %d", o.Offset, before)
	}
	// kcat's handler only clears its run flag; its stdin read goes on
	// (SA_RESTART) until stdin closes.
	p.Signal(syscall.SIGINT)
	p.CloseStdin()
	p.Wait(60 * time.Second)
	t.Logf("kcat after SIGINT: %s\n%s", procExit(p.cmd), tail(p.Output(), 10))
	var leo int64
	waitFor(t, 30*time.Second, "the coordinator to abort kcat's timed-out transaction (LSO = LEO)", func() error {
		leo = endOffsets(t, b, topic)[0]
		lso, err := b.Admin().ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		if o, _ := lso.Lookup(topic, 0); o.Offset != leo {
			return fmt.Errorf("last stable offset %d, log end offset %d", o.Offset, leo)
		}
		return nil
	})
	aborted := int(leo - before - 1) // the records, then the ABORT marker

	consume := func(isolation string) string {
		t.Helper()
		r := RunCommand(t, RunOpts{Timeout: 60 * time.Second}, kcat, "-b", b.Addr, "-C", "-t", topic, "-p", "0",
			"-o", "beginning", "-e", "-q", "-X", "isolation.level="+isolation, "-f", "%k=%s\n")
		if r.ExitCode != 0 {
			t.Fatalf("kcat -C %s failed:\n%s", isolation, r)
		}
		return r.Stdout
	}
	if got, want := consume("read_committed"), "k1=c1\nk2=c2\nk3=c3\n"; got != want {
		t.Errorf("kcat read_committed: %q, want %q", got, want)
	}
	unc := lines(consume("read_uncommitted"))
	if len(unc) != 3+aborted || strings.Join(unc[:3], ",") != "k1=c1,k2=c2,k3=c3" {
		t.Errorf("kcat read_uncommitted: %d records (first %q), want the 3 committed then the %d aborted", len(unc), firstN(unc, 4), aborted)
	}
	for i, l := range unc[min(3, len(unc)):] {
		if !strings.HasPrefix(l, fmt.Sprintf("a%d=", i)) {
			t.Errorf("kcat read_uncommitted record %d: %.20q, want aborted record a%d", 3+i, l, i)
			break
		}
	}
	if recs, _ := javaConsume(t, b.Addr, topic, "read_committed"); len(recs) != 3 {
		t.Errorf("Java read_committed consumer: %d records, want 3: %+v", len(recs), recs)
	}
}
