//go:build integration

package integration

// Exactly-once on three nodes: a franz-go GroupTransactSession
// read-process-write run over RF=3, min.insync.replicas=2 topics (and an
// RF=3 __transaction_state and __consumer_offsets) while the transaction
// coordinator's node and then data partition leaders are killed with
// SIGKILL and restarted.

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnCoordinatorOf asks the cluster which node coordinates txnID.
func txnCoordinatorOf(t testing.TB, cl *kgo.Client, txnID string) int32 {
	t.Helper()
	var node int32 = -1
	waitFor(t, 30*time.Second, "the transaction coordinator of "+txnID, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1 // transaction
		req.CoordinatorKeys = []string{txnID}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if len(resp.Coordinators) != 1 {
			return fmt.Errorf("FindCoordinator: %d coordinators", len(resp.Coordinators))
		}
		c := resp.Coordinators[0]
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return err
		}
		node = c.NodeID
		return nil
	})
	return node
}

// leaderOf returns the leader of topic-partition as a live broker sees it.
func leaderOf(t testing.TB, c *Cluster, topic string, partition int32) int32 {
	t.Helper()
	var leader int32 = -1
	waitFor(t, 30*time.Second, fmt.Sprintf("a live leader of %s-%d", topic, partition), func() error {
		for _, n := range c.Brokers() {
			if isClosed(exitedChan(n)) {
				continue
			}
			md, err := metadataFrom(n.Addr, topic)
			if err != nil {
				continue
			}
			for _, tp := range md.Topics {
				for _, p := range tp.Partitions {
					if p.Partition == partition && p.ErrorCode == 0 && p.Leader >= 0 && !isClosed(exitedChan(c.Node(p.Leader))) {
						leader = p.Leader
						return nil
					}
				}
			}
		}
		return fmt.Errorf("no live broker names a live leader")
	})
	return leader
}

// TestTxnClusterFailover: 3 combined nodes. Two GroupTransactSession
// members copy 2000 records from an RF=3 input to an RF=3 output
// (min.insync.replicas=2). At 20% the node coordinating the first
// member's transactions is killed (kill -9); at 40% it is restarted and the
// output's partition-0 leader is killed; at 60% that one is restarted and
// the input's partition-0 leader is killed, and the rest is done on two
// nodes. The
// committed output holds every input record exactly once and nothing from
// an aborted transaction.
func TestTxnClusterFailover(t *testing.T) {
	t.Parallel()
	start := time.Now()
	c := StartCluster(t, ClusterOptions{Combined: 3, Overrides: txnOverrides(map[string]string{
		"offsets.topic.replication.factor":         "3",
		"offsets.topic.num.partitions":             "6",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.min.isr":            "2",
		"transaction.state.log.num.partitions":     "6",
		"default.replication.factor":               "3",
		"min.insync.replicas":                      "2",
		"replica.lag.time.max.ms":                  "5000",
		"replica.fetch.backoff.ms":                 "200",
		// Looser than the harness's clusterTimeouts: on two busy cores three
		// JVM nodes miss 1s quorum deadlines and the controller flaps.
		"controller.quorum.election.timeout.ms": "3000",
		"controller.quorum.fetch.timeout.ms":    "4000",
		"controller.quorum.request.timeout.ms":  "3000",
		"broker.session.timeout.ms":             "6000",
		"broker.heartbeat.interval.ms":          "1000",
	})})
	requireTxnAPIs(t, c.Node(1).Addr)
	t.Logf("cluster ready after %v", time.Since(start).Round(time.Second))
	const in, out, group, n = "it-txn-cl-in", "it-txn-cl-out", "it-txn-cl", 2000
	seeds := c.BrokerAddrs()
	cl := c.Client(nil, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DefaultProduceTopic(in))
	adm := kadm.NewClient(cl)
	for _, tp := range []struct {
		name  string
		parts int32
	}{{in, 4}, {out, 3}} {
		r, err := adm.CreateTopic(ctxT(t, 30*time.Second), tp.parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, tp.name)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			t.Fatalf("create %s: %v", tp.name, err)
		}
		waitLeaders(t, c, tp.name, int(tp.parts))
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))}
	}
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce the input: %v", err)
	}

	w1 := startGTSWorker(t, seeds, "it-txn-cl-1", group, in, out, 20*time.Millisecond)
	w2 := startGTSWorker(t, seeds, "it-txn-cl-2", group, in, out, 20*time.Millisecond)
	progress := func(what string, atLeast int64) {
		t.Helper()
		waitFor(t, 150*time.Second, what, func() error {
			for _, w := range []*gtsWorker{w1, w2} {
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
		t.Logf("%v: %s", time.Since(start).Round(time.Second), what)
	}
	kill := func(what string, id int32) *ClusterNode {
		t.Helper()
		node := c.Node(id)
		node.Kill()
		t.Logf("%v: killed node %d (%s)", time.Since(start).Round(time.Second), id, what)
		return node
	}
	restart := func(node *ClusterNode) {
		t.Helper()
		node.Start()
		c.WaitNodeReady(node, readyTimeout())
		t.Logf("%v: node %d back", time.Since(start).Round(time.Second), node.ID)
	}

	progress("20% committed", n/5)
	victim := kill("transaction coordinator of it-txn-cl-1", txnCoordinatorOf(t, cl, "it-txn-cl-1"))
	progress("40% committed with the coordinator's node down", 2*n/5)
	restart(victim)
	victim = kill("leader of "+out+"-0", leaderOf(t, c, out, 0))
	progress("60% committed with an output leader down", 3*n/5)
	restart(victim)
	victim = kill("leader of "+in+"-0", leaderOf(t, c, in, 0))
	progress("80% committed with an input leader down", 4*n/5)
	// The rest on two nodes (min.insync.replicas=2 still holds); a JVM
	// node's restart takes a minute on a busy machine.
	progress("all committed", n)
	w1.Stop()
	w2.Stop()
	t.Logf("member 1 committed %d records (%d in aborted transactions), member 2 %d (%d)",
		w1.committed.Load(), w1.aborted.Load(), w2.committed.Load(), w2.aborted.Load())
	// an End that fails while a node is down ends that session and the
	// worker starts a new one, as an application would
	for _, w := range []*gtsWorker{w1, w2} {
		if e := w.EndErrors(); len(e) > 0 {
			t.Logf("%s restarted its session after End failed %d times: %q", w.id, len(e), e)
		}
	}
	checkOnceFromInput(t, seeds, in, out, n)
}
