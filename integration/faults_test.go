//go:build integration

package integration

// TestFaults, the fault-injection suite: real clusters (3 combined nodes, or
// 3 controllers + 3 brokers) under the workload of faults_workload_test.go,
// each fault kind on clusters of its own, many runs per cluster, and the
// acknowledged-record, consumer, replica and metadata-log checks at the end
// of each cluster's life. Per kind it reports acknowledged, lost,
// duplicated, reordered, diverged replicas, the write-resume time (from the
// fault to the first acknowledgement of a record enqueued after it, on every
// partition the fault touched: what a client sees, including its own request
// timeout on a connection to a paused or cut-off broker) and the time until
// the majority side names a new leader (partition leader in Metadata from a
// surviving broker, or active controller in DescribeQuorum from a surviving
// controller).
//
// Modes (see README "Tests"):
//
//	go test -tags integration -run TestFaults ./integration/   short: 1 run per kind (make test, ~3-4 min)
//	make faults                                               long: KGO_FAULT_RUNS per kind (default 40)
//	make faults KGO_FAULT_RUNS=100                            1,200 runs over the 12 kinds (3-4 hours)
//	make faults-reference                                     the same against Apache Kafka 4.4
//
// The kinds: kill -9 of a partition leader, of the active controller, of
// every node; SIGSTOP of a leader, of the active controller, of a leader's
// successor after a kill and restart; a leader or the active controller
// cut off from the majority, a leader's packets dropped one way (network
// namespaces, faults_net_test.go); a leader's log dir full (a tmpfs); a
// leader's disk slow or failing (faults_disk_test.go: slow-disk, 200-500ms
// per write and sync for 8s, writes must go on or resume; failing-disk,
// EIO on every write under the log dir, the node must halt with exit code
// 1 as Kafka does and rejoin every ISR once restarted on a healthy disk).
// The two disk kinds need the fault injection of kgo-broker's test binary
// (make build-invariants, cmd/kgo-broker/diskfault_invariants.go) and skip
// against Apache Kafka, which has no such seam.
//
// Environment: KGO_FAULT_RUNS (runs per kind; unset = short mode),
// KGO_FAULT_CYCLE (runs per cluster before a fresh one and the checks,
// default 25), KGO_FAULT_KINDS (comma list, default all), KGO_FAULT_SEED,
// KGO_FAULT_RESULTS (default integration/faults-results: <impl>.json and
// summary.md, ignored by git), KGO_FAULT_SHARD=i/n (run the kinds whose
// index is i modulo n: make faults KGO_FAULT_PARALLEL=n runs n suites at
// once, sharing the results dir), KGO_REQUIRE_FAULTS=1 (a fault that cannot
// run here fails instead of skipping), KGO_FAULT_NETNS=0 (no network
// namespaces: nodes on 127.0.0.<id>, the network kinds skip).
//
// Network faults need root, ip netns and iptables (scripts/install-faults.sh);
// the disk-full fault needs root (a tmpfs per node); slow-disk and
// failing-disk need KGO_BROKER_BIN built with -tags invariants (its build
// info is read; make faults and make test run that binary). Without netns
// every node runs on 127.0.0.<id> and only the network kinds skip.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

const faultParts = 6

type faultTopology int

const (
	topoCombined faultTopology = iota // 3 broker,controller nodes
	topoSplit                         // 3 controllers (1-3) + 3 brokers (4-6)
)

func (tp faultTopology) String() string {
	if tp == topoSplit {
		return "3 controllers + 3 brokers"
	}
	return "3 combined"
}

func (tp faultTopology) options() ClusterOptions {
	if tp == topoSplit {
		return ClusterOptions{Controllers: 3, Brokers: 3}
	}
	return ClusterOptions{Combined: 3}
}

// faultKind is one kind of fault and how one run of it goes.
type faultKind struct {
	name  string
	topo  faultTopology
	needs string // "netns", "tmpfs", "diskhook" or ""
	run   func(e *faultEnv) runResult
}

var faultKinds = []faultKind{
	{"kill-leader", topoCombined, "", (*faultEnv).killLeader},
	{"kill-controller", topoSplit, "", (*faultEnv).killController},
	{"kill-all", topoCombined, "", (*faultEnv).killAll},
	{"pause-leader", topoCombined, "", (*faultEnv).pauseLeader},
	{"pause-controller", topoSplit, "", (*faultEnv).pauseController},
	{"partition-leader", topoCombined, "netns", (*faultEnv).partitionLeader},
	{"partition-controller", topoSplit, "netns", (*faultEnv).partitionController},
	{"oneway-leader", topoCombined, "netns", (*faultEnv).onewayLeader},
	{"disk-full", topoCombined, "tmpfs", (*faultEnv).diskFull},
	// The sequence of the ISR bug being fixed at the time of writing: kill -9
	// and restart a leader, then SIGSTOP its successor; the successor could
	// stay out of the ISR for minutes after SIGCONT.
	{"kill-then-pause-successor", topoCombined, "", (*faultEnv).killThenPauseSuccessor},
	// The storage fault injection of kgo-broker's test binary
	// (cmd/kgo-broker/diskfault_invariants.go): no Kafka counterpart.
	{"slow-disk", topoCombined, "diskhook", (*faultEnv).slowDisk},
	{"failing-disk", topoCombined, "diskhook", (*faultEnv).failingDisk},
}

// faultConfig is the suite's configuration from the environment.
type faultConfig struct {
	long    bool
	runs    int
	cycle   int
	kinds   map[string]bool
	seed    int64
	results string
	require bool
	impl    string // "kgo-broker" or "kafka"
	// shard, shards: this process runs the kinds whose index is shard
	// modulo shards (KGO_FAULT_SHARD=i/n, make faults KGO_FAULT_PARALLEL=n):
	// a run mostly waits on timeouts, so suites in parallel, each on its own
	// network namespaces, finish the long mode in a fraction of the time.
	shard, shards int
}

func loadFaultConfig(t *testing.T) faultConfig {
	cfg := faultConfig{runs: 1, cycle: 25, seed: time.Now().UnixNano(), require: os.Getenv("KGO_REQUIRE_FAULTS") != "",
		results: filepath.Join(repoRoot, "integration", "faults-results"), impl: "kgo-broker"}
	if strings.Contains(filepath.Base(brokerBin), "kafka-reference") {
		cfg.impl = "kafka"
	}
	atoi := func(k string, dst *int) {
		if s := os.Getenv(k); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < 1 {
				t.Fatalf("%s=%q: want a positive integer", k, s)
			}
			*dst = n
		}
	}
	if os.Getenv("KGO_FAULT_RUNS") != "" {
		cfg.long = true
		atoi("KGO_FAULT_RUNS", &cfg.runs)
	}
	atoi("KGO_FAULT_CYCLE", &cfg.cycle)
	if s := os.Getenv("KGO_FAULT_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("KGO_FAULT_SEED=%q: %v", s, err)
		}
		cfg.seed = n
	}
	if s := os.Getenv("KGO_FAULT_KINDS"); s != "" {
		cfg.kinds = map[string]bool{}
		for _, k := range strings.Split(s, ",") {
			cfg.kinds[strings.TrimSpace(k)] = true
		}
	}
	if s := os.Getenv("KGO_FAULT_RESULTS"); s != "" {
		cfg.results = s
	}
	cfg.shards = 1
	if s := os.Getenv("KGO_FAULT_SHARD"); s != "" {
		if _, err := fmt.Sscanf(s, "%d/%d", &cfg.shard, &cfg.shards); err != nil || cfg.shards < 1 || cfg.shard < 0 || cfg.shard >= cfg.shards {
			t.Fatalf("KGO_FAULT_SHARD=%q: want i/n with 0 <= i < n", s)
		}
	}
	return cfg
}

// kindStats is one kind's figures, summed over its clusters.
type kindStats struct {
	Kind, Impl, Topology, Network string
	Runs                          int
	Acked, Failed, Unacked        int64
	Lost, Duplicated, Reordered   int
	OffsetMismatch, PhantomReads  int
	ConsumerRewinds               int
	DivergedReplicas              int
	LaggingReplicas               int // never caught up by the end (a stuck follower)
	DivergedMetadata              int
	Stuck                         int // runs after which the cluster was not healthy again in time
	NoNewLeader, NoResume         int // runs in which that was not seen within the time allowed
	ResumeMs, NewLeaderMs         []int64
	RecoverMs                     []int64
	Notes                         []string
	Updated                       time.Time
	Seed                          int64
}

func (s *kindStats) add(cr checkResult) {
	s.Acked += cr.Acked
	s.Failed += cr.Failed
	s.Unacked += cr.Unacked
	s.Lost += cr.Lost
	s.Duplicated += cr.Duplicated
	s.Reordered += cr.Reordered
	s.OffsetMismatch += cr.OffsetMismatch
	s.PhantomReads += cr.PhantomReads
	s.ConsumerRewinds += cr.ConsumerRewinds
	s.DivergedReplicas += max(cr.DivergedReplicas, 0)
	s.LaggingReplicas += cr.LaggingReplicas
	s.DivergedMetadata += max(cr.DivergedMetadata, 0)
	if cr.DivergedReplicas < 0 || cr.DivergedMetadata < 0 {
		s.Stuck++
	}
	for _, n := range cr.Notes {
		if len(s.Notes) < 60 {
			s.Notes = append(s.Notes, n)
		}
	}
}

// runResult is one fault run's measurements.
type runResult struct {
	what      string
	m         measurement
	recover   time.Duration
	recovered bool
	note      string
	// sameLeader: the fault moves no leadership by design (a slow disk):
	// no new-leader time is recorded.
	sameLeader bool
	// failed: the run saw the product do what Kafka would not (reported as
	// a test error; the cluster may still have recovered).
	failed string
}

var (
	faultEnvOnce   sync.Once
	netnsReason    string
	tmpfsReasonStr string
	diskHookReason string
)

func TestFaults(t *testing.T) {
	cfg := loadFaultConfig(t)
	faultEnvOnce.Do(func() {
		netnsReason = netnsUnavailable()
		tmpfsReasonStr = tmpfsUnavailable()
		diskHookReason = diskHookUnavailable()
	})
	if cfg.impl == "kafka" {
		requireKafkaTools(t)
	}
	t.Logf("fault suite: %s, %s mode, shard %d/%d, %d runs per kind, %d per cluster, seed %d, network namespaces: %s",
		cfg.impl, map[bool]string{false: "short", true: "long"}[cfg.long], cfg.shard, cfg.shards, cfg.runs, cfg.cycle, cfg.seed,
		map[bool]string{true: "yes", false: "no (" + netnsReason + ")"}[netnsReason == ""])
	all := map[string]*kindStats{}
	for ki, k := range faultKinds {
		if cfg.kinds != nil && !cfg.kinds[k.name] || ki%cfg.shards != cfg.shard {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			reason := ""
			switch k.needs {
			case "netns":
				reason = netnsReason
			case "tmpfs":
				reason = tmpfsReasonStr
			case "diskhook":
				if cfg.impl == "kafka" {
					// Not a failure even with KGO_REQUIRE_FAULTS: nothing to
					// install would make it run.
					t.Skipf("SKIP: fault %s runs against kgo-broker only: Apache Kafka has no storage fault injection seam (kgo-broker's is in its -tags invariants test binary)", k.name)
				}
				reason = diskHookReason
			}
			if reason != "" {
				if cfg.require {
					t.Fatalf("KGO_REQUIRE_FAULTS is set but fault %s cannot run here: %s", k.name, reason)
				}
				t.Skipf("SKIP: fault %s cannot run here: %s (set KGO_REQUIRE_FAULTS=1 to make this a failure)", k.name, reason)
			}
			st := &kindStats{Kind: k.name, Impl: cfg.impl, Topology: k.topo.String(), Seed: cfg.seed,
				Network: map[bool]string{true: "netns", false: "loopback"}[netnsReason == ""]}
			all[k.name] = st
			rng := rand.New(rand.NewSource(cfg.seed + int64(ki)))
			for cyc := 0; st.Runs < cfg.runs; cyc++ {
				n := min(cfg.cycle, cfg.runs-st.Runs)
				t.Run(fmt.Sprintf("cluster%d", cyc), func(t *testing.T) {
					runFaultCluster(t, cfg, k, n, rng, st)
				})
				if t.Failed() && !cfg.long {
					break
				}
				if st.Stuck >= 3 {
					t.Errorf("%s: %d runs left the cluster unhealthy; giving up on this kind after %d runs", k.name, st.Stuck, st.Runs)
					break
				}
			}
			st.Updated = time.Now().UTC()
			t.Logf("RESULT %s", st.line())
		})
	}
	if len(all) > 0 {
		if err := saveFaultResults(cfg, all); err != nil {
			t.Errorf("saving results: %v", err)
		}
		t.Logf("fault suite summary (results in %s):\n%s", cfg.results, faultSummary(cfg))
	}
}

// faultEnv is one cluster under the workload.
type faultEnv struct {
	t     *testing.T
	c     *Cluster
	net   *faultNet
	w     *workload
	rng   *rand.Rand
	kind  faultKind
	tmpfs map[int32]string
	// diskCtl: each node's disk fault control file (KGO_TEST_DISK_FAULT_FILE)
	diskCtl map[int32]string

	recoverTimeout time.Duration
}

func runFaultCluster(t *testing.T, cfg faultConfig, k faultKind, runs int, rng *rand.Rand, st *kindStats) {
	o := k.topo.options()
	o.Overrides = map[string]string{
		"replica.lag.time.max.ms":  "5000",
		"replica.fetch.backoff.ms": "200",
	}
	if cfg.impl == "kafka" {
		o.Env = append(o.Env, "KAFKA_HEAP_OPTS=-Xmx512M -Xms512M")
	}
	// How long a cluster gets to be healthy again after a fault: shorter in
	// short mode, where a stuck cluster fails the test anyway.
	recoverTimeout := 90 * time.Second
	if !cfg.long {
		recoverTimeout = 45 * time.Second
	}
	e := &faultEnv{t: t, rng: rng, kind: k, recoverTimeout: recoverTimeout}
	total := o.Combined + o.Controllers + o.Brokers
	if netnsReason == "" {
		e.net = newFaultNet(t, total)
		o.Placement = e.net.Placement
	}
	if k.needs == "tmpfs" {
		e.tmpfs = map[int32]string{}
		for id := int32(1); id <= int32(total); id++ {
			e.tmpfs[id] = mountTmpfs(t, 256)
		}
		o.DataDir = func(id int32) string { return filepath.Join(e.tmpfs[id], "data") }
	}
	if k.needs == "diskhook" {
		ctl := t.TempDir()
		e.diskCtl = map[int32]string{}
		for id := int32(1); id <= int32(total); id++ {
			e.diskCtl[id] = filepath.Join(ctl, fmt.Sprintf("disk-fault-%d", id))
		}
		o.NodeEnv = func(id int32) []string { return []string{diskFaultEnv + "=" + e.diskCtl[id]} }
	}
	started := time.Now()
	e.c = StartCluster(t, o)
	topic := "it-faults"
	adm := kadm.NewClient(e.c.Client(nil))
	cr, err := adm.CreateTopic(ctxT(t, 60*time.Second), faultParts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	e.w = newWorkload(t, e.c, topic, faultParts)
	e.w.convergeTimeout = recoverTimeout * 2 / 3
	if _, err := e.waitHealthy(90 * time.Second); err != nil {
		t.Fatalf("cluster not healthy after start: %v", err)
	}
	e.w.Start()
	if err := pollUntil(30*time.Second, nil, func() error {
		if _, ok := e.w.resumedAfter(e.allParts(), time.Now().Add(-time.Second)); !ok {
			return errors.New("no partition acknowledged yet")
		}
		return nil
	}); err != nil {
		t.Fatalf("workload: %v", err)
	}
	t.Logf("%s cluster (%s, %s) ready and producing after %v", k.topo, cfg.impl, st.Network, time.Since(started).Round(time.Millisecond))

	for i := 0; i < runs; i++ {
		// A second of steady writes between faults.
		time.Sleep(time.Second)
		r := k.run(e)
		st.Runs++
		switch {
		case r.sameLeader:
		case r.m.leaderOK:
			st.NewLeaderMs = append(st.NewLeaderMs, r.m.newLeader.Milliseconds())
		default:
			st.NoNewLeader++
		}
		if r.m.resumeOK {
			st.ResumeMs = append(st.ResumeMs, r.m.resume.Milliseconds())
		} else {
			st.NoResume++
		}
		if r.recovered {
			st.RecoverMs = append(st.RecoverMs, r.recover.Milliseconds())
		} else {
			st.Stuck++
		}
		newLeader := durOrNone(r.m.newLeader, r.m.leaderOK)
		if r.sameLeader {
			newLeader = "not expected"
		}
		t.Logf("FAULT %s run %d: %s; new leader %s; writes resumed %s; healthy again %s%s", k.name, st.Runs, r.what,
			newLeader, durOrNone(r.m.resume, r.m.resumeOK), durOrNone(r.recover, r.recovered), r.note)
		if r.failed != "" {
			t.Errorf("%s run %d (%s): %s", k.name, st.Runs, r.what, r.failed)
			if len(st.Notes) < 60 {
				st.Notes = append(st.Notes, fmt.Sprintf("run %d: %s", st.Runs, r.failed))
			}
		}
		if !r.recovered {
			t.Errorf("%s run %d (%s): the cluster was not healthy again within the time allowed: %s", k.name, st.Runs, r.what, r.note)
			if os.Getenv("KGO_FAULT_KEEP_GOING") == "" {
				break
			}
		}
	}

	cres := e.w.Check(t)
	checkMetadataLogs(e.c, &cres)
	st.add(cres)
	acked, _ := cres.Acked, cres.Failed
	t.Logf("CHECK %s: %d acknowledged, %d failed, %d unacknowledged; lost %d, duplicated %d, reordered %d, offset mismatch %d, phantom reads %d, consumer rewinds %d, diverged replicas %d, lagging replicas %d, diverged metadata logs %d",
		k.name, acked, cres.Failed, cres.Unacked, cres.Lost, cres.Duplicated, cres.Reordered, cres.OffsetMismatch, cres.PhantomReads, cres.ConsumerRewinds, cres.DivergedReplicas, cres.LaggingReplicas, cres.DivergedMetadata)
	for _, n := range cres.Notes {
		t.Logf("  %s", n)
	}
	if cres.Lost+cres.Duplicated+cres.Reordered+cres.OffsetMismatch+cres.PhantomReads+cres.ConsumerRewinds != 0 || cres.DivergedReplicas != 0 || cres.LaggingReplicas != 0 || cres.DivergedMetadata != 0 {
		t.Errorf("%s: the checks failed (see CHECK above)", k.name)
	}
	if acked == 0 {
		t.Errorf("%s: nothing was acknowledged", k.name)
	}
}

func durOrNone(d time.Duration, ok bool) string {
	if !ok {
		return "not within the time allowed"
	}
	return "after " + d.Round(time.Millisecond).String()
}

// ---------------------------------------------------------------------------
// Cluster state

func (e *faultEnv) allParts() []int32 {
	out := make([]int32, faultParts)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// states is the topic's partitions as a live broker sees them.
func (e *faultEnv) states() []partitionState {
	e.t.Helper()
	var last error
	for _, b := range e.c.Brokers() {
		if isClosed(exitedChan(b)) {
			continue
		}
		st, err := topicState(b.Addr, e.w.topic)
		if err == nil {
			return st
		}
		last = err
	}
	e.t.Fatalf("no broker answers Metadata: %v", last)
	return nil
}

// randomLeader picks a random partition and returns its leader and every
// partition that leader leads.
func (e *faultEnv) randomLeader() (int32, []int32) {
	st := e.states()
	v := st[e.rng.Intn(len(st))].leader
	return v, ledBy(st, v)
}

func ledBy(st []partitionState, id int32) []int32 {
	var out []int32
	for p, s := range st {
		if s.leader == id {
			out = append(out, int32(p))
		}
	}
	return out
}

func (e *faultEnv) others(ids ...int32) []int32 {
	var out []int32
	for _, n := range e.c.Nodes {
		if !slices.Contains(ids, n.ID) {
			out = append(out, n.ID)
		}
	}
	return out
}

// waitHealthy waits until every node runs, every broker lists every
// partition with a leader and the full ISR (the same leaders on every
// broker), and every voter has caught up with the quorum's high watermark.
// A node that exited is an error at once.
func (e *faultEnv) waitHealthy(timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	var dead error
	err := pollUntil(timeout, nil, func() error {
		for _, n := range e.c.Nodes {
			if isClosed(exitedChan(n)) {
				dead = fmt.Errorf("node %d exited: %s", n.ID, exitDesc(n.exitErr()))
				return nil
			}
		}
		var first []partitionState
		for _, b := range e.c.Brokers() {
			st, err := topicState(b.Addr, e.w.topic)
			if err != nil {
				return fmt.Errorf("broker %d: %w", b.ID, err)
			}
			for p, s := range st {
				if s.leader < 0 || len(s.replicas) != 3 || !slices.Equal(s.isr, s.replicas) {
					return fmt.Errorf("broker %d: %s-%d leader %d replicas %v isr %v", b.ID, e.w.topic, p, s.leader, s.replicas, s.isr)
				}
				if first != nil && (first[p].leader != s.leader || first[p].epoch != s.epoch) {
					return fmt.Errorf("brokers disagree on %s-%d: leader %d epoch %d vs leader %d epoch %d", e.w.topic, p, first[p].leader, first[p].epoch, s.leader, s.epoch)
				}
			}
			first = st
		}
		ld, q, err := e.c.Leader()
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
	if dead != nil {
		return time.Since(start), dead
	}
	return time.Since(start), err
}

// ---------------------------------------------------------------------------
// Measuring

// faultTarget says what a fault run waits for.
type faultTarget struct {
	leaders    []int32 // partitions led by these need a leader outside them
	parts      []int32 // partitions whose writes are watched (all when empty)
	controller int32   // the active controller must be another node (-1: any node)
	majority   []int32 // the nodes asked (the side that should go on)
}

type measurement struct {
	newLeader, resume  time.Duration
	leaderOK, resumeOK bool
}

// measure polls every 25ms until the majority side names a new leader and
// writes resumed, or until deadline.
func (e *faultEnv) measure(t0 time.Time, tg faultTarget, deadline time.Time, m *measurement) {
	parts := tg.parts
	if len(parts) == 0 {
		parts = e.allParts()
	}
	for !(m.leaderOK && m.resumeOK) && time.Now().Before(deadline) {
		if !m.resumeOK {
			m.resume, m.resumeOK = e.w.resumedAfter(parts, t0)
		}
		if !m.leaderOK && e.newLeaderNamed(tg) {
			m.newLeader, m.leaderOK = time.Since(t0), true
		}
		if !(m.leaderOK && m.resumeOK) {
			time.Sleep(25 * time.Millisecond)
		}
	}
}

func (e *faultEnv) newLeaderNamed(tg faultTarget) bool {
	if tg.controller != 0 {
		found := false
		for _, id := range tg.majority {
			n := e.c.Node(id)
			if !n.IsController || n.ID == tg.controller {
				continue
			}
			q, err := describeQuorumAt(n.CtrlAddr)
			if err == nil && q.LeaderID == n.ID {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if len(tg.leaders) == 0 {
		return true
	}
	for _, id := range tg.majority {
		n := e.c.Node(id)
		if !n.IsBroker {
			continue
		}
		st, err := topicState(n.Addr, e.w.topic)
		if err != nil {
			continue
		}
		ok := true
		for _, p := range tg.parts {
			if int(p) >= len(st) || st[p].leader < 0 || slices.Contains(tg.leaders, st[p].leader) {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// recoverAfter waits for health and fills r.
func (e *faultEnv) recoverAfter(r *runResult, since time.Time) {
	_, err := e.waitHealthy(e.recoverTimeout)
	r.recover, r.recovered = time.Since(since), err == nil
	if err != nil {
		r.note += "; " + err.Error() + e.epochDiagnosis()
	}
}

// epochDiagnosis lists, for every partition whose ISR is not full, each
// replica's log end (segment sizes) and leader-epoch-checkpoint, read from
// the node's log dir: what a stuck follower and its leader disagree on.
func (e *faultEnv) epochDiagnosis() string {
	var st []partitionState
	for _, b := range e.c.Brokers() {
		var err error
		if st, err = topicState(b.Addr, e.w.topic); err == nil {
			break
		}
	}
	var b strings.Builder
	for p, s := range st {
		if slices.Equal(s.isr, s.replicas) {
			continue
		}
		fmt.Fprintf(&b, "\n    %s-%d leader %d epoch %d isr %v:", e.w.topic, p, s.leader, s.epoch, s.isr)
		epochsOf := func(id int32) map[string]bool {
			m := map[string]bool{}
			cp, _ := os.ReadFile(filepath.Join(e.c.Node(id).DataDir, fmt.Sprintf("%s-%d", e.w.topic, p), "leader-epoch-checkpoint"))
			for i, l := range strings.Split(strings.TrimSpace(string(cp)), "\n") {
				if f := strings.Fields(l); i >= 2 && len(f) == 2 {
					m[f[0]] = true
				}
			}
			return m
		}
		var leaderEpochs map[string]bool
		if s.leader >= 0 {
			leaderEpochs = epochsOf(s.leader)
		}
		for _, r := range s.replicas {
			dir := filepath.Join(e.c.Node(r).DataDir, fmt.Sprintf("%s-%d", e.w.topic, p))
			cp, _ := os.ReadFile(filepath.Join(dir, "leader-epoch-checkpoint"))
			if lines := strings.Split(strings.TrimSpace(string(cp)), "\n"); leaderEpochs != nil && !slices.Contains(s.isr, r) && len(lines) > 2 {
				if f := strings.Fields(lines[len(lines)-1]); len(f) == 2 && !leaderEpochs[f[0]] {
					fmt.Fprintf(&b, " BUG (likely): follower %d's latest leader epoch %s (from offset %s) is one leader %d never had; if it starts at the follower's log end, storage.Log.Truncate leaves it in place on a diverging epoch (Kafka's UnifiedLog.truncateTo truncates the epoch cache even at the log end) and the follower fetches with lastFetchedEpoch %s forever;",
						r, f[0], f[1], s.leader, f[0])
				}
			}
			var size int64
			segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
			for _, sg := range segs {
				if fi, err := os.Stat(sg); err == nil {
					size += fi.Size()
				}
			}
			fmt.Fprintf(&b, " node %d: %d bytes of segments, leader-epoch-checkpoint %q;", r, size, strings.ReplaceAll(strings.TrimSpace(string(cp)), "\n", " | "))
		}
	}
	return b.String()
}

const (
	holdCap  = 15 * time.Second // how long a pause or partition is held at most
	totalCap = 60 * time.Second // how long a run is measured at most
)

// ---------------------------------------------------------------------------
// The faults

func (e *faultEnv) killLeader() runResult {
	v, parts := e.randomLeader()
	n := e.c.Node(v)
	t0 := time.Now()
	n.Kill()
	r := runResult{what: fmt.Sprintf("kill -9 node %d (leader of %v)", v, parts)}
	e.measure(t0, faultTarget{leaders: []int32{v}, parts: parts, majority: e.others(v)}, t0.Add(totalCap), &r.m)
	n.Start()
	e.c.WaitNodeReady(n, readyTimeout())
	e.recoverAfter(&r, t0)
	return r
}

func (e *faultEnv) killController() runResult {
	ld, _ := e.c.WaitLeader(30*time.Second, 0)
	t0 := time.Now()
	ld.Kill()
	r := runResult{what: fmt.Sprintf("kill -9 active controller %d", ld.ID)}
	e.measure(t0, faultTarget{controller: ld.ID, majority: e.others(ld.ID)}, t0.Add(totalCap), &r.m)
	ld.Start()
	e.c.WaitNodeReady(ld, readyTimeout())
	e.recoverAfter(&r, t0)
	return r
}

func (e *faultEnv) killAll() runResult {
	t0 := time.Now()
	for _, n := range e.c.Nodes {
		n.Kill()
	}
	for _, n := range e.c.Nodes {
		n.Start()
	}
	r := runResult{what: fmt.Sprintf("kill -9 all %d nodes, restart them", len(e.c.Nodes))}
	e.measure(t0, faultTarget{controller: -1, majority: e.others()}, t0.Add(totalCap+readyTimeout()), &r.m)
	for _, n := range e.c.Nodes {
		e.c.WaitNodeReady(n, readyTimeout())
	}
	e.recoverAfter(&r, t0)
	return r
}

// hold applies a fault, measures for at most holdCap, heals, measures on up
// to totalCap and waits for health.
func (e *faultEnv) hold(what string, tg faultTarget, apply, heal func()) runResult {
	r := runResult{what: what}
	apply()
	// From the moment the fault is wholly in place (an iptables-restore per
	// namespace takes some milliseconds).
	t0 := time.Now()
	e.measure(t0, tg, t0.Add(holdCap), &r.m)
	healed := time.Now()
	heal()
	if !(r.m.leaderOK && r.m.resumeOK) {
		r.note = fmt.Sprintf("; healed after %v with the fault still unanswered", healed.Sub(t0).Round(time.Millisecond))
	}
	e.measure(t0, tg, t0.Add(totalCap), &r.m)
	e.recoverAfter(&r, t0)
	return r
}

func (e *faultEnv) pauseLeader() runResult {
	v, parts := e.randomLeader()
	n := e.c.Node(v)
	return e.hold(fmt.Sprintf("SIGSTOP node %d (leader of %v)", v, parts),
		faultTarget{leaders: []int32{v}, parts: parts, majority: e.others(v)}, n.Pause, n.Resume)
}

// killThenPauseSuccessor kills a leader, restarts it, waits for health, and
// then pauses the partition's new leader: the measured fault is the pause.
func (e *faultEnv) killThenPauseSuccessor() runResult {
	st := e.states()
	p := e.rng.Intn(len(st))
	v := st[p].leader
	n := e.c.Node(v)
	n.Kill()
	// The restart waits for the successor, so that the pause hits a new leader.
	var m measurement
	e.measure(time.Now(), faultTarget{leaders: []int32{v}, parts: []int32{int32(p)}, majority: e.others(v)}, time.Now().Add(totalCap), &m)
	n.Start()
	e.c.WaitNodeReady(n, readyTimeout())
	var pre runResult
	e.recoverAfter(&pre, time.Now())
	if !pre.recovered {
		return runResult{what: fmt.Sprintf("kill -9 node %d (leader of partition %d), restart", v, p), note: pre.note}
	}
	st = e.states()
	s := st[p].leader
	sn := e.c.Node(s)
	return e.hold(fmt.Sprintf("kill -9 node %d (leader of partition %d), restart, then SIGSTOP its successor %d (leader of %v)", v, p, s, ledBy(st, s)),
		faultTarget{leaders: []int32{s}, parts: ledBy(st, s), majority: e.others(s)}, sn.Pause, sn.Resume)
}

func (e *faultEnv) pauseController() runResult {
	ld, _ := e.c.WaitLeader(30*time.Second, 0)
	return e.hold(fmt.Sprintf("SIGSTOP active controller %d", ld.ID),
		faultTarget{controller: ld.ID, majority: e.others(ld.ID)}, ld.Pause, ld.Resume)
}

func (e *faultEnv) partitionLeader() runResult {
	v, parts := e.randomLeader()
	others := e.others(v)
	return e.hold(fmt.Sprintf("isolate node %d (leader of %v) from %v", v, parts, others),
		faultTarget{leaders: []int32{v}, parts: parts, majority: others},
		func() { e.net.Partition([]int32{v}, others) }, e.net.Heal)
}

// partitionController splits the quorum: the active controller and the
// leader of a random partition on one side, the other two controllers and
// brokers on the other.
func (e *faultEnv) partitionController() runResult {
	ld, _ := e.c.WaitLeader(30*time.Second, 0)
	b, parts := e.randomLeader()
	side := []int32{ld.ID, b}
	rest := e.others(side...)
	return e.hold(fmt.Sprintf("split %v (active controller %d, leader %d of %v) from %v", side, ld.ID, b, parts, rest),
		faultTarget{controller: ld.ID, leaders: []int32{b}, parts: parts, majority: rest},
		func() { e.net.Partition(side, rest) }, e.net.Heal)
}

func (e *faultEnv) onewayLeader() runResult {
	v, parts := e.randomLeader()
	others := e.others(v)
	return e.hold(fmt.Sprintf("drop every packet from node %d (leader of %v) to %v", v, parts, others),
		faultTarget{leaders: []int32{v}, parts: parts, majority: others},
		func() { e.net.DropOneWay(v, others) }, e.net.Heal)
}

// diskFull fills the log dir (a tmpfs) of a partition leader, waits for
// the majority to name new leaders, empties it and restarts the node (kill
// -9 if it still runs: a failed log dir stays offline until a restart, in
// Kafka as in kgo-broker).
func (e *faultEnv) diskFull() runResult {
	v, parts := e.randomLeader()
	n := e.c.Node(v)
	r := runResult{what: fmt.Sprintf("fill node %d's log dir (leader of %v)", v, parts)}
	filler := filepath.Join(e.tmpfs[v], "filler")
	if err := fillDisk(filler); err != nil {
		e.t.Fatalf("filling %s: %v", filler, err)
	}
	full := time.Now()
	// Appends go on into the partly used last page of each file until one
	// needs a new page and fails, and the node halts (its only log dir, which
	// holds the metadata log, failed): the fault is timed from the exit, or
	// from the fill if the node keeps running.
	t0 := full
	select {
	case <-n.Exited():
		t0 = time.Now()
		r.note = fmt.Sprintf("; node %d exited by itself %v after the disk was full (%s)", v, t0.Sub(full).Round(time.Millisecond), exitDesc(n.exitErr()))
	case <-time.After(holdCap):
		r.note = fmt.Sprintf("; node %d still running %v after the disk was full", v, holdCap)
	}
	e.measure(t0, faultTarget{leaders: []int32{v}, parts: parts, majority: e.others(v)}, t0.Add(holdCap), &r.m)
	if err := os.Remove(filler); err != nil {
		e.t.Fatal(err)
	}
	n.Kill()
	n.Start()
	e.measure(t0, faultTarget{leaders: []int32{v}, parts: parts, majority: e.others(v)}, t0.Add(totalCap), &r.m)
	e.c.WaitNodeReady(n, readyTimeout())
	e.recoverAfter(&r, t0)
	return r
}

// ---------------------------------------------------------------------------
// Disks

func tmpfsUnavailable() string {
	if os.Geteuid() != 0 {
		return fmt.Sprintf("the disk-full fault mounts a tmpfs per node and needs root (euid %d)", os.Geteuid())
	}
	dir, err := os.MkdirTemp("", "kgo-it-tmpfs-probe-")
	if err != nil {
		return err.Error()
	}
	defer os.Remove(dir)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		return fmt.Sprintf("mount -t tmpfs failed: %v", err)
	}
	syscall.Unmount(dir, 0)
	return ""
}

// mountTmpfs mounts a tmpfs of mib MiB on a new temp dir, unmounted (after
// the nodes are gone) at the end of the test.
func mountTmpfs(t testing.TB, mib int) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kgo-it-tmpfs-")
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%dm", mib)); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", dir, err)
		}
		os.Remove(dir)
	})
	return dir
}

// fillDisk writes zeros to path until the file system is full.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				// The last partial pages too.
				for len(buf) > 512 {
					buf = buf[:len(buf)/2]
					for {
						if _, err := f.Write(buf); err != nil {
							break
						}
					}
				}
				return nil
			}
			return err
		}
	}
}

// ---------------------------------------------------------------------------
// Results

func (s *kindStats) line() string {
	return fmt.Sprintf("%s (%s, %s, %s): runs %d, acknowledged %d, lost %d, duplicated %d, reordered %d, diverged replicas %d, lagging replicas %d, diverged metadata %d, not healthy again %d; resume median %s max %s; new leader median %s max %s; healthy again median %s",
		s.Kind, s.Impl, s.Topology, s.Network, s.Runs, s.Acked, s.Lost, s.Duplicated, s.Reordered, s.DivergedReplicas, s.LaggingReplicas, s.DivergedMetadata, s.Stuck,
		msStat(s.ResumeMs, false), msStat(s.ResumeMs, true), msStat(s.NewLeaderMs, false), msStat(s.NewLeaderMs, true), msStat(s.RecoverMs, false))
}

func msStat(ms []int64, isMax bool) string {
	if len(ms) == 0 {
		return "-"
	}
	s := append([]int64(nil), ms...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	v := s[len(s)/2]
	if isMax {
		v = s[len(s)-1]
	}
	return fmt.Sprintf("%.2fs", float64(v)/1000)
}

func resultsFile(dir, impl string) string { return filepath.Join(dir, impl+".json") }

// saveFaultResults merges this run's kinds into <results>/<impl>.json and
// writes summary.md.
func saveFaultResults(cfg faultConfig, now map[string]*kindStats) error {
	if err := os.MkdirAll(cfg.results, 0o755); err != nil {
		return err
	}
	// suites in parallel (KGO_FAULT_SHARD) share the results dir
	lock, err := os.OpenFile(filepath.Join(cfg.results, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	path := resultsFile(cfg.results, cfg.impl)
	old := map[string]*kindStats{}
	if data, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(data, &old)
	}
	for k, v := range now {
		old[k] = v
	}
	data, err := json.MarshalIndent(old, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cfg.results, "summary.md"), []byte(faultSummary(cfg)), 0o644)
}

func loadResults(dir, impl string) map[string]*kindStats {
	m := map[string]*kindStats{}
	if data, err := os.ReadFile(resultsFile(dir, impl)); err == nil {
		_ = json.Unmarshal(data, &m)
	}
	return m
}

func divergedCell(s *kindStats) string {
	d := fmt.Sprint(s.DivergedReplicas + s.DivergedMetadata)
	if s.LaggingReplicas > 0 {
		d += fmt.Sprintf(" (+%d lagging)", s.LaggingReplicas)
	}
	return d
}

// faultSummary is the side-by-side table of kgo-broker's and Kafka's results.
func faultSummary(cfg faultConfig) string {
	kgo, kaf := loadResults(cfg.results, "kgo-broker"), loadResults(cfg.results, "kafka")
	var b strings.Builder
	fmt.Fprintf(&b, "| fault | runs | acked | lost | dup | reord | diverged | not healthy | resume med / max | new leader med / max | Kafka runs | Kafka acked / lost / dup / diverged | Kafka resume med / max | Kafka new leader med / max |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, k := range faultKinds {
		g, a := kgo[k.name], kaf[k.name]
		if g == nil && a == nil {
			continue
		}
		row := []string{k.name}
		if g != nil {
			row = append(row, fmt.Sprint(g.Runs), fmt.Sprint(g.Acked), fmt.Sprint(g.Lost), fmt.Sprint(g.Duplicated), fmt.Sprint(g.Reordered),
				divergedCell(g), fmt.Sprint(g.Stuck),
				msStat(g.ResumeMs, false)+" / "+msStat(g.ResumeMs, true), msStat(g.NewLeaderMs, false)+" / "+msStat(g.NewLeaderMs, true))
		} else {
			row = append(row, "-", "-", "-", "-", "-", "-", "-", "-", "-")
		}
		if a != nil {
			row = append(row, fmt.Sprint(a.Runs), fmt.Sprintf("%d / %d / %d / %s", a.Acked, a.Lost, a.Duplicated, divergedCell(a)),
				msStat(a.ResumeMs, false)+" / "+msStat(a.ResumeMs, true), msStat(a.NewLeaderMs, false)+" / "+msStat(a.NewLeaderMs, true))
		} else {
			row = append(row, "-", "-", "-", "-")
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	return b.String()
}
