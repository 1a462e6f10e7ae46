//go:build integration

package integration

// The transactional side of TestRollingReplacement: a franz-go transactional
// producer writes transactions of four records over two partitions of an
// RF=3 topic, committing every other one and aborting the rest, while a
// read_committed reader follows the topic across every swap. The reader
// gets its aborted transactions from whichever replica leads, built from
// .txnindex files and producer state the other implementation may have
// written; the transactions themselves move between transaction
// coordinators (__transaction_state) of both kinds. Checks: the reader never
// sees an aborted record nor one twice, and at the end every committed
// transaction is there whole (a commit whose EndTransaction failed may have
// gone either way, but whole or not at all); every replica holds the same
// batches.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	rollingTxnTopic = "rolling-txn"
	rollingTxnParts = 2
	rollingTxnSize  = 4 // records per transaction
)

type txnOutcome int

const (
	txnCommitted txnOutcome = iota + 1
	txnAborted
	txnUnknown // a commit whose EndTransaction failed
)

type rollingTxn struct {
	r *rolling

	mu       sync.Mutex
	outcomes []txnOutcome   // by transaction number
	seen     map[string]int // read_committed: value -> times read
	errs     map[string]int // producer errors (the transaction was aborted or its fate unknown)
	readErrs map[string]int // reader fetch errors (retried)
	stop     chan struct{}
	wg       sync.WaitGroup
	cancel   context.CancelFunc
}

func (r *rolling) startTxn() *rollingTxn {
	t := r.t
	cr, err := r.adm.CreateTopic(ctxT(t, 60*time.Second), rollingTxnParts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, rollingTxnTopic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", rollingTxnTopic, err)
	}
	x := &rollingTxn{r: r, seen: map[string]int{}, errs: map[string]int{}, readErrs: map[string]int{}, stop: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	x.cancel = cancel
	x.wg.Add(2)
	go x.produceLoop(ctx)
	go x.readLoop(ctx)
	return x
}

func (x *rollingTxn) client(opts ...kgo.Opt) *kgo.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(x.r.c.BrokerAddrs()...),
		kgo.DialTimeout(2 * time.Second), kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond)}, opts...)...)
	if err != nil {
		x.r.t.Fatal(err)
	}
	return cl
}

func txnValue(n, i int) string { return fmt.Sprintf("t%06d-%d", n, i) }

// produceLoop runs one transaction every 100ms. After a failed
// EndTransaction the client is replaced (franz-go retries none of its
// errors; a new client re-initializes the producer id, fencing the old).
func (x *rollingTxn) produceLoop(ctx context.Context) {
	defer x.wg.Done()
	newClient := func() *kgo.Client {
		return x.client(kgo.TransactionalID("rolling-txn"), kgo.DefaultProduceTopic(rollingTxnTopic),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(30*time.Second),
			kgo.ProduceRequestTimeout(5*time.Second), kgo.ProducerLinger(0))
	}
	cl := newClient()
	defer func() { cl.Close() }()
	note := func(what string, err error) {
		x.mu.Lock()
		x.errs[what+": "+err.Error()]++
		x.mu.Unlock()
	}
	for n := 0; ; n++ {
		select {
		case <-x.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
		x.mu.Lock()
		x.outcomes = append(x.outcomes, txnAborted) // until committed
		x.mu.Unlock()
		if err := cl.BeginTransaction(); err != nil {
			note("begin", err)
			cl.Close()
			cl = newClient()
			continue
		}
		var perr error
		var pmu sync.Mutex
		for i := range rollingTxnSize {
			cl.Produce(ctx, &kgo.Record{Partition: int32(i % rollingTxnParts), Value: []byte(txnValue(n, i))}, func(_ *kgo.Record, err error) {
				if err != nil {
					pmu.Lock()
					perr = err
					pmu.Unlock()
				}
			})
		}
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := cl.Flush(fctx)
		cancel()
		pmu.Lock()
		if err == nil {
			err = perr
		}
		pmu.Unlock()
		commit := n%2 == 0 && err == nil
		if err != nil {
			note("produce", err)
		}
		ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = cl.EndTransaction(ectx, kgo.TransactionEndTry(commit))
		cancel()
		x.mu.Lock()
		switch {
		case err == nil && commit:
			x.outcomes[n] = txnCommitted
		case err != nil && commit:
			x.outcomes[n] = txnUnknown
		}
		x.mu.Unlock()
		if err != nil {
			note(fmt.Sprintf("end(commit=%v)", commit), err)
			cl.Close()
			cl = newClient()
		}
	}
}

func (x *rollingTxn) readLoop(ctx context.Context) {
	defer x.wg.Done()
	offs := map[int32]kgo.Offset{}
	for p := range int32(rollingTxnParts) {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl := x.client(kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{rollingTxnTopic: offs}))
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		x.mu.Lock()
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.Canceled) {
				x.readErrs[err.Error()]++
			}
		})
		fs.EachRecord(func(rec *kgo.Record) { x.seen[string(rec.Value)]++ })
		x.mu.Unlock()
	}
}

// check is the between-steps check: nothing aborted read, nothing read twice.
func (x *rollingTxn) check() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	var fails []string
	for v, k := range x.seen {
		var n, i int
		if _, err := fmt.Sscanf(v, "t%06d-%d", &n, &i); err != nil || n >= len(x.outcomes) {
			fails = append(fails, fmt.Sprintf("%s: read_committed read a foreign record %q", rollingTxnTopic, v))
			continue
		}
		if x.outcomes[n] == txnAborted && n < len(x.outcomes)-1 {
			fails = append(fails, fmt.Sprintf("%s: read_committed read %q of aborted transaction %d", rollingTxnTopic, v, n))
		}
		if k > 1 {
			fails = append(fails, fmt.Sprintf("%s: read_committed read %q %d times", rollingTxnTopic, v, k))
		}
		if len(fails) > 10 {
			break
		}
	}
	return fails
}

// finish stops producing, waits for the reader to have every committed
// transaction, and checks the outcomes and the replicas.
func (x *rollingTxn) finish() []string {
	close(x.stop)
	// Wait for the producer only (the reader keeps reading).
	deadline := time.Now().Add(60 * time.Second)
	var fails []string
	err := pollUntil(time.Until(deadline), nil, func() error {
		x.mu.Lock()
		defer x.mu.Unlock()
		for n, o := range x.outcomes {
			if o == txnCommitted && x.seen[txnValue(n, rollingTxnSize-1)] == 0 {
				return fmt.Errorf("committed transaction %d not read yet (%d transactions)", n, len(x.outcomes))
			}
		}
		return nil
	})
	if err != nil {
		fails = append(fails, fmt.Sprintf("%s: %v", rollingTxnTopic, err))
	}
	// The reader drains a little more: a transaction whose commit failed
	// may still become visible.
	time.Sleep(2 * time.Second)
	x.cancel()
	x.wg.Wait()
	fails = append(fails, x.check()...)
	x.mu.Lock()
	counts := map[txnOutcome]int{}
	for n, o := range x.outcomes {
		counts[o]++
		got := 0
		for i := range rollingTxnSize {
			got += min(x.seen[txnValue(n, i)], 1)
		}
		switch {
		case o == txnCommitted && got != rollingTxnSize:
			fails = append(fails, fmt.Sprintf("%s: committed transaction %d: %d of %d records read", rollingTxnTopic, n, got, rollingTxnSize))
		case o == txnUnknown && got != 0 && got != rollingTxnSize:
			fails = append(fails, fmt.Sprintf("%s: transaction %d (commit failed): %d of %d records read", rollingTxnTopic, n, got, rollingTxnSize))
		}
	}
	x.r.t.Logf("%s: %d transactions committed, %d aborted, %d with a failed commit; producer errors: %s; reader errors (retried): %s",
		rollingTxnTopic, counts[txnCommitted], counts[txnAborted], counts[txnUnknown], trimErrs(x.errs), trimErrs(x.readErrs))
	if counts[txnCommitted] == 0 {
		fails = append(fails, rollingTxnTopic+": no transaction committed")
	}
	x.mu.Unlock()
	// Every replica the same, control batches included.
	err = pollUntil(60*time.Second, nil, func() error {
		st, err := topicState(x.r.c.Nodes[0].Addr, rollingTxnTopic)
		if err != nil {
			return err
		}
		var diffs []string
		for p, s := range st {
			var logs []*replicaLog
			for _, id := range append([]int32{s.leader}, s.replicas...) {
				rl, err := readReplicaLog(x.r.c.Node(id).Addr, rollingTxnTopic, int32(p))
				if err != nil {
					return err
				}
				rl.node = id
				logs = append(logs, rl)
			}
			for _, rl := range logs[1:] {
				if d, _ := diffBatches(logs[0], rl); d != "" {
					diffs = append(diffs, fmt.Sprintf("%s-%d: replica %d vs leader %d: %s", rollingTxnTopic, p, rl.node, logs[0].node, d))
				}
			}
		}
		if len(diffs) > 0 {
			return errors.New(strings.Join(diffs, "; "))
		}
		return nil
	})
	if err != nil {
		fails = append(fails, err.Error())
	}
	return fails
}
