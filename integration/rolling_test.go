//go:build integration

package integration

// TestRollingReplacement replaces Apache Kafka 4.4 with kgo-broker and back
// the way an operator would, one node at a time, under load:
//
//   - three combined nodes (process.roles=broker,controller, static
//     controller.quorum.voters) of Apache Kafka 4.4, formatted by Kafka's
//     own kafka-storage.sh at its default release version (the features
//     kgo-broker does not implement at 0, as it needs to start);
//   - a topic with 3 partitions, RF=3 and min.insync.replicas=2, under the
//     fault suite's workload (faults_workload_test.go): an acks=all
//     idempotent franz-go producer remembering the offset of every
//     acknowledged record, a read_uncommitted and a read_committed reader;
//   - a consumer group consuming the topic (auto-committing), and an idle
//     group whose committed offsets must never change;
//   - a transactional producer and a read_committed reader on a second topic
//     (rolling_txn_test.go);
//   - each node in turn is stopped with SIGTERM (controlled shutdown, exit
//     code 0) and started as kgo-broker on the same data directory, node id,
//     listeners and server.properties, then, once every partition has its
//     full ISR and every voter has caught up, the next; then the same back to
//     Apache Kafka.
//
// After every step: every record acknowledged so far is in the leader's log
// at its offset, once; every follower's copy is the leader's (or a prefix of
// it, as the producer goes on); the producer has seen no error (franz-go
// retries retriable ones, so any error it hands back is not); the idle
// group's offsets are as committed and the live group's have not gone back;
// every voter's __cluster_metadata log holds the same batches up to the
// quorum's high watermark; and kafka-topics.sh --describe,
// kafka-consumer-groups.sh --describe and kafka-metadata-quorum.sh describe
// --status work. Metadata snapshots are taken every few seconds, so each
// swapped node loads a snapshot (and quorum-state) written by the other
// implementation. At the end the workload's own check runs (no record lost,
// duplicated, reordered or at another offset; replicas identical byte for
// byte; both readers consistent with the log) and the read_committed reader
// must have read every acknowledged record at its offset.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgo-broker/kgo-broker/storage"
)

const (
	rollingTopic     = "rolling"
	rollingParts     = 3
	rollingIdleGroup = "rolling-idle"
	rollingLiveGroup = "rolling-live"

	rollingImbalanceCheckSeconds = 10
)

func TestRollingReplacement(t *testing.T) {
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("a rolling replacement needs kgo-broker as KGO_BROKER_BIN")
	}
	start := time.Now()
	c := StartCluster(t, ClusterOptions{
		Combined:  3,
		Kind:      func(int32) nodeKind { return kindKafka },
		Overrides: rollingOverrides(),
		NoWait:    true,
	})
	for _, n := range c.Nodes {
		c.WaitNodeReady(n, 3*readyTimeout()) // three JVMs starting at once
	}
	t.Logf("3 Kafka nodes ready after %v", time.Since(start).Round(time.Millisecond))
	r := newRolling(t, c)
	r.setUp()
	r.check("Apache Kafka x3")
	for _, k := range []nodeKind{kindKgo, kindKafka} {
		for i, n := range c.Nodes {
			r.swap(n, k, i == len(c.Nodes)-1)
		}
	}
	r.finish()
	t.Logf("rolling replacement done in %v", time.Since(start).Round(time.Millisecond))
}

// TestRollingRestart is the operator's weekly rolling restart (issue 15): a
// three-node cluster of the broker under test (combined nodes) under the same
// load and checks as TestRollingReplacement, each node stopped with SIGTERM
// (controlled shutdown moves its leadership away first) and started again on
// its data, the next only once every ISR is full: no failed send, nothing
// lost, and the preferred leaders back within one
// leader.imbalance.check.interval.seconds. It runs against Apache Kafka 4.4
// too (KGO_BROKER_BIN=kafka-reference-broker).
func TestRollingRestart(t *testing.T) {
	requireKafkaTools(t)
	start := time.Now()
	c := StartCluster(t, ClusterOptions{
		Combined:  3,
		Overrides: rollingOverrides(),
		NoWait:    true,
	})
	for _, n := range c.Nodes {
		c.WaitNodeReady(n, 3*readyTimeout())
	}
	r := newRolling(t, c)
	r.setUp()
	r.check("before the restart")
	for i, n := range c.Nodes {
		r.swap(n, n.Kind, i == len(c.Nodes)-1)
	}
	r.finish()
	t.Logf("rolling restart done in %v", time.Since(start).Round(time.Millisecond))
}

// rollingOverrides are the cluster configs of the rolling tests.
func rollingOverrides() map[string]string {
	return map[string]string{
		"offsets.topic.replication.factor":         "3",
		"offsets.topic.num.partitions":             "3",
		"transaction.state.log.replication.factor": "3",
		"transaction.state.log.num.partitions":     "3",
		"transaction.state.log.min.isr":            "2",
		"replica.lag.time.max.ms":                  "5000",
		"replica.fetch.backoff.ms":                 "200",
		// A snapshot every few seconds, so that every swapped node
		// starts from one the other implementation wrote.
		"metadata.log.max.snapshot.interval.ms": "5000",
		// The roll leaves the last node leading nothing: the active
		// controller's periodic preferred election (auto.leader.rebalance.enable,
		// on by default) must give its partitions back within one interval.
		"leader.imbalance.check.interval.seconds": strconv.Itoa(rollingImbalanceCheckSeconds),
	}
}

type rolling struct {
	t    *testing.T
	c    *Cluster
	w    *workload
	adm  *kadm.Client
	idle map[int32]int64 // the idle group's committed offsets
	txn  *rollingTxn

	mu       sync.Mutex
	live     map[int32]int64 // the live group's offsets at the last check
	liveErrs map[string]int
	stopLive context.CancelFunc
	liveDone chan struct{}
}

func newRolling(t *testing.T, c *Cluster) *rolling {
	return &rolling{t: t, c: c, adm: kadm.NewClient(c.Client(nil)), live: map[int32]int64{}, liveErrs: map[string]int{}}
}

// setUp creates the topic, commits the idle group's offsets and starts the
// workload and the live group.
func (r *rolling) setUp() {
	t := r.t
	ctx := ctxT(t, 60*time.Second)
	cr, err := r.adm.CreateTopic(ctx, rollingParts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, rollingTopic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", rollingTopic, err)
	}
	r.waitHealthy("the topic's full ISR", rollingTopic)
	r.w = newWorkload(t, r.c, rollingTopic, rollingParts)
	r.w.Start()
	r.txn = r.startTxn()
	// The idle group commits once, at offsets the workload has passed.
	waitFor(t, 60*time.Second, "100 acknowledged records", func() error {
		if a, _ := r.w.counts(); a < 100 {
			return fmt.Errorf("%d acknowledged", a)
		}
		return nil
	})
	r.idle = map[int32]int64{}
	offs := kadm.Offsets{}
	for p := int32(0); p < rollingParts; p++ {
		r.idle[p] = int64(5 + p)
		offs.Add(kadm.Offset{Topic: rollingTopic, Partition: p, At: r.idle[p], LeaderEpoch: -1})
	}
	resp, err := r.adm.CommitOffsets(ctx, rollingIdleGroup, offs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit %s: %v", rollingIdleGroup, err)
	}
	// The live group reads committed records and commits every 500ms.
	cl := r.c.Client(nil, kgo.ConsumerGroup(rollingLiveGroup), kgo.ConsumeTopics(rollingTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.AutoCommitInterval(500*time.Millisecond), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.DialTimeout(2*time.Second), kgo.RequestTimeoutOverhead(2*time.Second),
		kgo.MetadataMinAge(100*time.Millisecond))
	lctx, cancel := context.WithCancel(context.Background())
	r.stopLive, r.liveDone = cancel, make(chan struct{})
	go func() {
		defer close(r.liveDone)
		for lctx.Err() == nil {
			fs := cl.PollFetches(lctx)
			fs.EachError(func(_ string, _ int32, err error) {
				if !errors.Is(err, context.Canceled) {
					r.mu.Lock()
					r.liveErrs[err.Error()]++
					r.mu.Unlock()
				}
			})
		}
	}()
	waitFor(t, 60*time.Second, "the live group's first commits", func() error {
		o, err := r.groupOffsets(rollingLiveGroup)
		if err == nil && len(o) < rollingParts {
			err = fmt.Errorf("committed %v", o)
		}
		return err
	})
}

// swap stops n (SIGTERM) and starts it as kind k on its own data, then
// waits for the cluster to be whole again and checks it. After the last node
// of a roll it first waits for the preferred leaders.
func (r *rolling) swap(n *ClusterNode, k nodeKind, lastOfRoll bool) {
	t := r.t
	t.Helper()
	from := n.Kind
	t0 := time.Now()
	if code := n.Stop(90 * time.Second); code != 0 {
		t.Fatalf("%s node %d exited with code %d after SIGTERM, want 0 (controlled shutdown)", from, n.ID, code)
	}
	stopped := time.Since(t0)
	n.StartAs(k)
	r.c.WaitNodeReady(n, 2*readyTimeout())
	ready := time.Since(t0)
	r.waitHealthy(fmt.Sprintf("node %d (%s -> %s) back in every ISR", n.ID, from, k), rollingTopic, "__consumer_offsets", rollingTxnTopic, "__transaction_state")
	t.Logf("node %d %s -> %s: stopped in %v, serving after %v, every ISR full after %v", n.ID, from, k,
		stopped.Round(time.Millisecond), ready.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	if lastOfRoll {
		r.waitPreferred(fmt.Sprintf("the roll to %s", k))
	}
	var kinds []string
	for _, m := range r.c.Nodes {
		kinds = append(kinds, fmt.Sprintf("%d:%s", m.ID, m.Kind))
	}
	r.check(strings.Join(kinds, " "))
}

// waitPreferred waits until every partition of the rolling topics is led by
// its preferred replica (the first of its assignment) on every broker's
// Metadata, and fails if that took longer than one
// leader.imbalance.check.interval.seconds (plus the time an election and its
// propagation take).
func (r *rolling) waitPreferred(step string) {
	t := r.t
	t.Helper()
	t0 := time.Now()
	limit := time.Duration(rollingImbalanceCheckSeconds)*time.Second + 5*time.Second
	err := pollUntil(limit, nil, func() error {
		for _, topic := range []string{rollingTopic, rollingTxnTopic} {
			for _, b := range r.c.Brokers() {
				md, err := metadataFrom(b.Addr, topic)
				if err != nil {
					return fmt.Errorf("broker %d: %w", b.ID, err)
				}
				for _, mt := range md.Topics {
					for _, p := range mt.Partitions {
						if len(p.Replicas) == 0 || p.Leader != p.Replicas[0] {
							return fmt.Errorf("broker %d: %s-%d led by %d, replicas %v", b.ID, topic, p.Partition, p.Leader, p.Replicas)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: preferred leaders not restored within %v (leader.imbalance.check.interval.seconds=%d): %v", step, limit, rollingImbalanceCheckSeconds, err)
	}
	t.Logf("%s: every partition led by its preferred replica %v after every ISR was full", step, time.Since(t0).Round(time.Millisecond))
}

// waitHealthy waits until every broker lists every partition of topics with
// a leader and all three replicas in the ISR, and every voter has caught up
// with the quorum's high watermark.
func (r *rolling) waitHealthy(what string, topics ...string) {
	r.t.Helper()
	err := pollUntil(3*readyTimeout(), nil, func() error {
		for _, n := range r.c.Nodes {
			if isClosed(exitedChan(n)) {
				return fmt.Errorf("node %d exited: %s", n.ID, exitDesc(n.exitErr()))
			}
		}
		for _, topic := range topics {
			for _, b := range r.c.Brokers() {
				st, err := topicState(b.Addr, topic)
				if err != nil {
					return fmt.Errorf("broker %d: %w", b.ID, err)
				}
				for p, s := range st {
					if s.leader < 0 || len(s.replicas) != 3 || !slices.Equal(s.isr, s.replicas) {
						return fmt.Errorf("broker %d: %s-%d leader %d replicas %v isr %v", b.ID, topic, p, s.leader, s.replicas, s.isr)
					}
				}
			}
		}
		ld, q, err := r.c.Leader()
		if err != nil {
			return err
		}
		for id, leo := range q.Voters {
			if leo < q.HW {
				return fmt.Errorf("controller %d: voter %d at %d, high watermark %d", ld.ID, id, leo, q.HW)
			}
		}
		return nil
	})
	if err != nil {
		r.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// check runs the between-steps checks (see the file comment).
func (r *rolling) check(step string) {
	t := r.t
	t.Helper()
	t0 := time.Now()
	var fails []string
	failf := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }

	// The producer: no error handed back.
	r.w.mu.Lock()
	if len(r.w.errs) > 0 {
		failf("the producer was handed errors (not retried, so not retriable): %v", r.w.errs)
	}
	type ackedRec struct {
		seq int
		off int64
	}
	acked := make([][]ackedRec, rollingParts)
	for p, recs := range r.w.sent {
		for seq, s := range recs {
			if s.acked {
				acked[p] = append(acked[p], ackedRec{seq, s.off})
			}
		}
	}
	r.w.mu.Unlock()

	// Every acknowledged record at its offset in the leader's log, once;
	// every follower's copy the leader's or a prefix of it. A new leader's
	// high watermark may trail the old one's for a moment: wait for it to
	// pass every acknowledged offset.
	var logs map[int32][]*replicaLog
	err := pollUntil(60*time.Second, nil, func() error {
		var err error
		if logs, err = r.w.readAllReplicas(); err != nil {
			return err
		}
		for p, recs := range acked {
			if n := len(recs); n > 0 && logs[int32(p)][0].hw <= recs[n-1].off {
				return fmt.Errorf("%s-%d: leader %d's high watermark %d, acknowledged up to %d", rollingTopic, p, logs[int32(p)][0].node, logs[int32(p)][0].hw, recs[n-1].off)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: reading the replicas: %v", step, err)
	}
	for p := int32(0); p < rollingParts; p++ {
		rls := logs[p]
		byOff := map[int64]string{}
		count := map[string]int{}
		for _, b := range rls[0].batches {
			recs, err := storage.DecodeRecords(b)
			if err != nil {
				failf("%s-%d: decode: %v", rollingTopic, p, err)
				continue
			}
			for _, rec := range recs {
				byOff[rec.Offset] = string(rec.Value)
				count[string(rec.Value)]++
			}
		}
		bad := 0
		for _, a := range acked[p] {
			want := fmt.Sprintf("%d-%08d", p, a.seq)
			if got := byOff[a.off]; got != want || count[want] != 1 {
				if bad++; bad <= 5 {
					failf("%s-%d: acknowledged %s at offset %d; the leader's log has %q there and %d copies", rollingTopic, p, want, a.off, got, count[want])
				}
			}
		}
		if bad > 5 {
			failf("%s-%d: %d acknowledged records lost, moved or duplicated", rollingTopic, p, bad)
		}
		for _, rl := range rls[1:] {
			if d, prefix := diffBatches(rls[0], rl); d != "" && !prefix {
				failf("%s-%d: replica %d differs from leader %d: %s", rollingTopic, p, rl.node, rls[0].node, d)
			}
		}
	}

	// The groups' committed offsets.
	idle, err := r.groupOffsets(rollingIdleGroup)
	if err != nil {
		failf("fetch %s's offsets: %v", rollingIdleGroup, err)
	} else if !mapsEqual(idle, r.idle) {
		failf("%s's offsets are %v, committed %v", rollingIdleGroup, idle, r.idle)
	}
	live, err := r.groupOffsets(rollingLiveGroup)
	if err != nil {
		failf("fetch %s's offsets: %v", rollingLiveGroup, err)
	} else {
		for p, prev := range r.live {
			if live[p] < prev {
				failf("%s's offset of partition %d went back from %d to %d", rollingLiveGroup, p, prev, live[p])
			}
		}
		r.live = live
	}

	// Every voter's metadata log the same up to the high watermark.
	var mres checkResult
	checkMetadataLogs(r.c, &mres)
	if mres.DivergedMetadata != 0 {
		failf("metadata logs differ: %v", mres.Notes)
	}

	fails = append(fails, r.txn.check()...)
	fails = append(fails, r.kafkaTools()...)
	t.Logf("%s: checked in %v (%d/%d/%d acknowledged; live group at %v; %s)", step, time.Since(t0).Round(time.Millisecond),
		len(acked[0]), len(acked[1]), len(acked[2]), live, strings.Join(mres.Notes, "; "))
	if len(fails) > 0 {
		t.Fatalf("%s:\n  %s", step, strings.Join(fails, "\n  "))
	}
}

// groupOffsets fetches group's committed offsets of the test topic. A
// connection error is retried: the admin client keeps its connections to a
// node across the node's restart, and franz-go notices the old connection
// is gone only when it writes on it (EOF); when that happens to the
// FindCoordinator it sends while resharding, kadm hands the EOF back
// instead of retrying. Any answer the coordinator gives is returned as is.
func (r *rolling) groupOffsets(group string) (map[int32]int64, error) {
	var resp kadm.OffsetResponses
	var err error
	for try := 0; ; try++ {
		resp, err = r.adm.FetchOffsets(ctxT(r.t, 20*time.Second), group)
		if err == nil {
			err = resp.Error()
		}
		var ne net.Error
		if try < 5 && !errors.Is(err, context.DeadlineExceeded) && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)) {
			r.t.Logf("fetch %s's offsets: %v (a connection the client kept across a restart; retrying)", group, err)
			continue
		}
		break
	}
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == rollingTopic && o.At >= 0 {
			out[o.Partition] = o.At
		}
	})
	return out, nil
}

func mapsEqual(a, b map[int32]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

var (
	topicsIsrRe = regexp.MustCompile(`Partition: (\d+)\s+Leader: (-?\d+)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]*)`)
	quorumRe    = regexp.MustCompile(`(?m)^LeaderId:\s+(\d+)$`)
)

// kafkaTools runs Kafka 4.4's kafka-topics.sh, kafka-consumer-groups.sh and
// kafka-metadata-quorum.sh against the cluster (in parallel, each a JVM) and
// returns what is wrong with their answers.
func (r *rolling) kafkaTools() []string {
	bootstrap := strings.Join(r.c.BrokerAddrs(), ",")
	o := RunOpts{Timeout: 60 * time.Second, Hermetic: true, Env: []string{"KAFKA_HEAP_OPTS=-Xmx128M",
		"KAFKA_JVM_PERFORMANCE_OPTS=" + kafkaTestJVMOpts}}
	var wg sync.WaitGroup
	res := make([]ToolResult, 3)
	for i, args := range [][]string{
		{"kafka-topics.sh", "--bootstrap-server", bootstrap, "--describe", "--topic", rollingTopic},
		{"kafka-consumer-groups.sh", "--bootstrap-server", bootstrap, "--describe", "--group", rollingIdleGroup},
		{"kafka-metadata-quorum.sh", "--bootstrap-server", bootstrap, "describe", "--status"},
	} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = KafkaTool(r.t, o, args[0], args[1:]...)
		}()
	}
	wg.Wait()
	var fails []string
	for _, tr := range res {
		if tr.ExitCode != 0 || tr.TimedOut {
			fails = append(fails, tr.String())
		}
	}
	if len(fails) > 0 {
		return fails
	}
	// kafka-topics.sh: every partition with a leader and three in the ISR.
	ms := topicsIsrRe.FindAllStringSubmatch(res[0].Stdout, -1)
	if len(ms) != rollingParts {
		fails = append(fails, "kafka-topics.sh --describe lists "+strconv.Itoa(len(ms))+" partitions:\n"+res[0].String())
	}
	for _, m := range ms {
		if m[2] == "-1" || len(strings.Split(m[4], ",")) != 3 {
			fails = append(fails, "kafka-topics.sh --describe: "+m[0])
		}
	}
	// kafka-consumer-groups.sh: the idle group's offsets.
	for p, off := range r.idle {
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^%s\s+%s\s+%d\s+%d\s`, rollingIdleGroup, rollingTopic, p, off))
		if !row.MatchString(res[1].Stdout) {
			fails = append(fails, fmt.Sprintf("kafka-consumer-groups.sh --describe: no row for partition %d at offset %d:\n%s", p, off, res[1]))
			break
		}
	}
	// kafka-metadata-quorum.sh: a leader among the voters.
	if m := quorumRe.FindStringSubmatch(res[2].Stdout); m == nil || !strings.Contains(res[2].Stdout, "CurrentVoters:") {
		fails = append(fails, "kafka-metadata-quorum.sh describe --status:\n"+res[2].String())
	}
	return fails
}

// finish stops the live group and the workload and runs the final checks.
func (r *rolling) finish() {
	t := r.t
	if fails := r.txn.finish(); len(fails) > 0 {
		t.Errorf("transactions:\n  %s", strings.Join(fails, "\n  "))
	}
	res := r.w.Check(t)
	checkMetadataLogs(r.c, &res)
	// The live group commits the end of the log.
	ends, err := r.adm.ListEndOffsets(ctxT(t, 30*time.Second), rollingTopic)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, rollingLiveGroup+" at the end of the log", func() error {
		live, err := r.groupOffsets(rollingLiveGroup)
		if err != nil {
			return err
		}
		var behind []string
		ends.Each(func(o kadm.ListedOffset) {
			if live[o.Partition] != o.Offset {
				behind = append(behind, fmt.Sprintf("partition %d at %d of %d", o.Partition, live[o.Partition], o.Offset))
			}
		})
		if len(behind) > 0 {
			return errors.New(strings.Join(behind, ", "))
		}
		return nil
	})
	r.stopLive()
	<-r.liveDone
	for _, n := range res.Notes {
		t.Log(n)
	}
	t.Logf("acknowledged %d, failed %d, unacknowledged %d", res.Acked, res.Failed, res.Unacked)
	if res.Lost+res.Duplicated+res.Reordered+res.OffsetMismatch+res.PhantomReads+res.ConsumerRewinds+
		res.DivergedReplicas+res.LaggingReplicas+res.DivergedMetadata != 0 || res.Failed != 0 || res.Unacked != 0 {
		t.Fatalf("final check: %+v", res)
	}
	// The read_committed reader read every acknowledged record at its offset.
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	for p := 0; p < rollingParts; p++ {
		got := map[int64]string{}
		for _, cr := range r.w.consumed[1][p] {
			got[cr.off] = cr.val
		}
		for seq, s := range r.w.sent[p] {
			if want := fmt.Sprintf("%d-%08d", p, seq); s.acked && got[s.off] != want {
				t.Errorf("read_committed: %s-%d offset %d is %q, acknowledged %s", rollingTopic, p, s.off, got[s.off], want)
			}
		}
	}
	// Kafka's nodes asked kgo-broker only for APIs it serves (a Kafka 4.4
	// voter sends UpdateRaftVoter to every leader it follows).
	for _, n := range r.c.Nodes {
		if log := n.Log(); strings.Contains(log, "failed due to unsupported version error") {
			i := strings.Index(log, "failed due to unsupported version error")
			t.Errorf("node %d: a Kafka request refused as unsupported: ...%s", n.ID, log[max(0, i-300):i+40])
		}
	}
	r.mu.Lock()
	if len(r.liveErrs) > 0 {
		t.Logf("the live group's fetch errors (retried): %s", trimErrs(r.liveErrs))
	}
	r.mu.Unlock()
}
