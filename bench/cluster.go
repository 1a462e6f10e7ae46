package main

// Cluster mode (BENCH_CLUSTER=<nodes>, issue 16): replicated produce on a
// cluster of combined KRaft nodes of each broker, Apache Kafka's and
// kgo-broker's, never both clusters at once. Each node is the single-node
// benchmark's broker (the same server.properties keys) with its own node.id,
// ports and data dir, all nodes voters, and replication defaults for a
// replicated cluster (RF 3, min.insync.replicas 2, also for the internal
// topics). Per repetition and kind: format every node with its own tool and
// the shared clusterID, launch all (a node serves only once a quorum
// majority is up), wait until every node's own Metadata names every node,
// create topic repl (8 partitions, RF 3, min.insync.replicas=2) and wait
// until every node reports a leader and a full ISR for every partition,
// measure the idle RSS, run an unreported warm-up and then the load
// generator (1 KiB records, acks=all, idempotent, 4 producers seeded with
// every node), stop the cluster and delete its data. The order of the kinds
// flips every repetition, as in the main comparison. Writes
// cluster-latest.{md,json} in the results dir.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

const (
	clusterTopic      = "repl"
	clusterPartitions = 8
	clusterRF         = 3
	clusterMinISR     = 2
	clusterClients    = 4
	clusterRecordSize = 1024
)

// cluster is one running replicated cluster of one kind.
type cluster struct {
	Kind  kind
	Dir   string
	Nodes []*broker
}

// newCluster makes the nodes' dirs and configs under dir: node ids 1..n,
// every node a voter, each on its own free ports. The SSL keystore goes next
// to dir, not in it: dir is deleted after each repetition, the keystore is
// made once per run.
func newCluster(k kind, dir string, n int) (*cluster, error) {
	c := &cluster{Kind: k, Dir: dir}
	var voters []string
	for id := 1; id <= n; id++ {
		b, err := newNode(k, id, filepath.Join(dir, fmt.Sprintf("node%d", id)))
		if err != nil {
			return nil, err
		}
		// Idle RSS is measured for the cluster as a whole once its topic is ready.
		b.SkipIdleRSS = true
		c.Nodes = append(c.Nodes, b)
		voters = append(voters, voter(id, b.CtrlPort))
	}
	r := replication{Voters: strings.Join(voters, ","), Factor: clusterRF, MinISR: clusterMinISR}
	for _, b := range c.Nodes {
		if err := b.writeProps(r, filepath.Join(filepath.Dir(dir), "certs")); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *cluster) format(ctx context.Context, s settings) error {
	for _, b := range c.Nodes {
		if err := b.format(ctx, s); err != nil {
			return fmt.Errorf("node %d: %w", b.NodeID, err)
		}
	}
	return nil
}

// start launches every node, then waits until each answers Metadata naming
// every node of the cluster.
func (c *cluster) start(ctx context.Context, s settings) error {
	for _, b := range c.Nodes {
		if err := b.launch(s); err != nil {
			return fmt.Errorf("node %d: %w", b.NodeID, err)
		}
	}
	for _, b := range c.Nodes {
		if err := b.waitReady(ctx); err != nil {
			return fmt.Errorf("node %d: %w", b.NodeID, err)
		}
	}
	return c.waitFor(ctx, 180*time.Second, "every node's Metadata to name all nodes", func() error {
		for _, b := range c.Nodes {
			md, err := metadataFrom(b.Addr)
			if err != nil {
				return fmt.Errorf("node %d: %w", b.NodeID, err)
			}
			if len(md.Brokers) < len(c.Nodes) {
				return fmt.Errorf("node %d names %d of %d brokers", b.NodeID, len(md.Brokers), len(c.Nodes))
			}
		}
		return nil
	})
}

// stop stops every node at once: a node stopping alone would wait on a
// quorum that the others are leaving.
func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, b := range c.Nodes {
		wg.Add(1)
		go func() { defer wg.Done(); b.stop() }()
	}
	wg.Wait()
}

func (c *cluster) seeds() []string {
	var out []string
	for _, b := range c.Nodes {
		out = append(out, b.Addr)
	}
	return out
}

// exited names the first node that is no longer running, with its log's tail.
func (c *cluster) exited() error {
	for _, b := range c.Nodes {
		if !b.alive() {
			return fmt.Errorf("%s node %d exited: %v; log %s:\n%s", c.Kind.Title(), b.NodeID, b.cmd.ProcessState, b.LogPath, tail(b.LogPath, 30))
		}
	}
	return nil
}

// usage sums the nodes' CPU seconds and RSS.
func (c *cluster) usage() (procStat, error) {
	var sum procStat
	for _, b := range c.Nodes {
		st, err := readProc(b.Pid())
		if err != nil {
			return sum, fmt.Errorf("node %d: %w", b.NodeID, err)
		}
		sum.CPU += st.CPU
		sum.RSS += st.RSS
		sum.HWM += st.HWM
	}
	return sum, nil
}

// waitFor polls check until it succeeds, a node exits, ctx ends or timeout.
func (c *cluster) waitFor(ctx context.Context, timeout time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if e := c.exited(); e != nil {
			return e
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %v for %s: %v", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// createTopic creates the topic, retrying while the controller cannot place
// rf replicas yet (nodes still registering), and waits until every node
// reports a leader and rf in-sync replicas for every partition. It returns
// how many partitions each node leads.
func (c *cluster) createTopic(ctx context.Context, topic string, parts, rf int, configs map[string]string) (map[int32]int, error) {
	cl, adm, err := admin(c.Nodes...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	err = c.waitFor(ctx, 60*time.Second, "CreateTopics "+topic, func() error {
		rs, err := adm.CreateTopics(ctx, int32(parts), int16(rf), cfg, topic)
		if err == nil {
			err = rs.Error()
		}
		if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	var leaders map[int32]int
	err = c.waitFor(ctx, 120*time.Second, "a leader and full ISR on every partition of "+topic, func() error {
		for _, b := range c.Nodes {
			l, err := topicReady(b.Addr, topic, parts, rf)
			if err != nil {
				return fmt.Errorf("node %d: %w", b.NodeID, err)
			}
			leaders = l
		}
		return nil
	})
	return leaders, err
}

// topicReady checks, in the Metadata of the broker at addr, that every
// partition of the topic has a leader, rf replicas and rf of them in sync.
func topicReady(addr, topic string, parts, rf int) (map[int32]int, error) {
	md, err := metadataFrom(addr, topic)
	if err != nil {
		return nil, err
	}
	if len(md.Topics) != 1 {
		return nil, fmt.Errorf("metadata has %d topics", len(md.Topics))
	}
	t := md.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return nil, err
	}
	if len(t.Partitions) != parts {
		return nil, fmt.Errorf("%d of %d partitions", len(t.Partitions), parts)
	}
	leaders := map[int32]int{}
	for _, p := range t.Partitions {
		switch {
		case p.ErrorCode != 0:
			return nil, fmt.Errorf("partition %d: %w", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		case p.Leader < 0:
			return nil, fmt.Errorf("partition %d has no leader", p.Partition)
		case len(p.Replicas) != rf || len(p.ISR) != rf:
			return nil, fmt.Errorf("partition %d: replicas %v, ISR %v", p.Partition, p.Replicas, p.ISR)
		}
		leaders[p.Leader]++
	}
	return leaders, nil
}

// clusterRun is one repetition on one kind's cluster.
type clusterRun struct {
	Rep          int
	StartSeconds float64 // launch of every node until every node's Metadata names all
	TopicSeconds float64 // CreateTopics until every node reports leaders and full ISRs
	IdleRSS      int64   // bytes, summed over the nodes, with the topic, before any load
	Leaders      string  // partitions led per node, e.g. "1:3 2:3 3:2"
	Records      int64
	Seconds      float64 // the load generator's first send until its last acknowledgement
	RecPerS      float64
	MBPerS       float64 // 2^20 bytes, as in latest.md
	P50Ms        float64 // send-to-ack
	P99Ms        float64
	P999Ms       float64
	CPUSeconds   float64 // summed over the nodes, during the measured run
	CPUPerGB     float64 // CPUSeconds per 10^9 payload bytes produced (not counting replicas)
	PeakRSS      int64   // bytes, VmHWM summed over the nodes after the run
	OtherCores   float64 // busy cores of everything but the nodes and bench itself during the run
	Err          string
}

func fmtLeaders(l map[int32]int) string {
	ids := make([]int, 0, len(l))
	for id := range l {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("%d:%d", id, l[int32(id)]))
	}
	return strings.Join(parts, " ")
}

// runClusterOne runs one repetition on a fresh cluster of kind k in dir and
// stops it (also on error or ctrl-C) before returning.
func runClusterOne(ctx context.Context, s settings, k kind, dir string, nodes, rep int) (r clusterRun) {
	r.Rep = rep + 1
	fail := func(stage string, err error) clusterRun {
		r.Err = stage + ": " + err.Error()
		return r
	}
	c, err := newCluster(k, dir, nodes)
	if err != nil {
		return fail("setup", err)
	}
	defer c.stop()
	if err := c.format(ctx, s); err != nil {
		return fail("format", err)
	}
	t0 := time.Now()
	if err := c.start(ctx, s); err != nil {
		return fail("start", err)
	}
	r.StartSeconds = time.Since(t0).Seconds()

	t1 := time.Now()
	leaders, err := c.createTopic(ctx, clusterTopic, clusterPartitions, clusterRF,
		map[string]string{"min.insync.replicas": fmt.Sprint(clusterMinISR)})
	if err != nil {
		return fail("create "+clusterTopic, err)
	}
	r.TopicSeconds = time.Since(t1).Seconds()
	r.Leaders = fmtLeaders(leaders)

	// Idle RSS: let the JIT, the replica fetchers and the first checkpoints settle.
	time.Sleep(5 * time.Second)
	idle, err := c.usage()
	if err != nil {
		return fail("idle", err)
	}
	r.IdleRSS = idle.RSS

	gen := genOpts{Seeds: c.seeds(), Topic: clusterTopic, Size: clusterRecordSize, Acks: "all",
		Clients: clusterClients, Timeout: s.ToolTimeout}
	// Warm-up (not reported), as in the main comparison: the JIT and the
	// replication paths get a first pass.
	warm := gen
	warm.Records = max(s.ClusterRecords/4, 5000)
	if _, err := runGen(ctx, warm); err != nil {
		if e := c.exited(); e != nil {
			err = e
		}
		return fail("warm-up", err)
	}

	gen.Records = s.ClusterRecords
	before, err := c.usage()
	if err != nil {
		return fail("produce", err)
	}
	busy0, self0 := systemBusy(), selfCPU()
	g, err := runGen(ctx, gen)
	if e := c.exited(); e != nil {
		err = e
	}
	if err != nil {
		return fail("produce", err)
	}
	after, err := c.usage()
	if err != nil {
		return fail("produce", err)
	}
	busy, self := systemBusy()-busy0, selfCPU()-self0
	r.Records = g.Records
	r.Seconds = g.Wall.Seconds()
	r.RecPerS = float64(g.Records) / r.Seconds
	r.MBPerS = float64(g.Bytes) / r.Seconds / (1 << 20)
	r.P50Ms, r.P99Ms, r.P999Ms = ms(g.Ack, 50), ms(g.Ack, 99), ms(g.Ack, 99.9)
	r.CPUSeconds = after.CPU - before.CPU
	r.CPUPerGB = r.CPUSeconds / (float64(g.Bytes) / 1e9)
	r.PeakRSS = after.HWM
	r.OtherCores = max(busy-r.CPUSeconds-self, 0) / r.Seconds
	return r
}

// oneLine is an error for a Markdown line: a node's exit carries its log's
// tail after a newline, which holds the reason; capped at n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// clusterMetric is one row of the report, the same for the Markdown and the
// medians in the JSON.
type clusterMetric struct {
	Key, Title string
	Value      func(clusterRun) float64
}

// otherLoad is the metric that describes the machine, not a broker: it gets
// no kgo/kafka ratio.
const otherLoad = "other_cores"

var clusterMetrics = []clusterMetric{
	{"rec_per_s", "produce rec/s", func(r clusterRun) float64 { return r.RecPerS }},
	{"mb_per_s", "produce MB/s", func(r clusterRun) float64 { return r.MBPerS }},
	{"p50_ms", "send-to-ack p50, ms", func(r clusterRun) float64 { return r.P50Ms }},
	{"p99_ms", "send-to-ack p99, ms", func(r clusterRun) float64 { return r.P99Ms }},
	{"p999_ms", "send-to-ack p99.9, ms", func(r clusterRun) float64 { return r.P999Ms }},
	{"cpu_s_per_gb", "broker CPU (sum over the nodes), s/GB", func(r clusterRun) float64 { return r.CPUPerGB }},
	{"cpu_cores", "broker CPU (sum over the nodes), cores during the run", func(r clusterRun) float64 { return r.CPUSeconds / r.Seconds }},
	{"idle_rss_mib", "idle RSS (sum over the nodes, topic created), MiB", func(r clusterRun) float64 { return mib(r.IdleRSS) }},
	{"peak_rss_mib", "peak RSS (sum of the nodes' VmHWM), MiB", func(r clusterRun) float64 { return mib(r.PeakRSS) }},
	{"start_s", "start: launch until every node's Metadata names all nodes, s", func(r clusterRun) float64 { return r.StartSeconds }},
	{"topic_s", "topic: CreateTopics until leaders and full ISRs on every node, s", func(r clusterRun) float64 { return r.TopicSeconds }},
	{otherLoad, "other load on the machine during the run, cores", func(r clusterRun) float64 { return r.OtherCores }},
}

// clusterMedian is the metric's median over the successful runs, NaN if none.
func clusterMedian(runs []clusterRun, m clusterMetric) float64 {
	var xs []float64
	for _, r := range runs {
		if r.Err == "" {
			xs = append(xs, m.Value(r))
		}
	}
	return median(xs)
}

func runCluster(ctx context.Context, s settings, tmp string, nodes int) error {
	if nodes < clusterRF {
		return fmt.Errorf("BENCH_CLUSTER=%d: need at least %d nodes for replication factor %d", nodes, clusterRF, clusterRF)
	}
	// Three JVMs must fit next to each other: the cluster's own heap setting.
	s.KafkaHeap = s.ClusterKafkaHeap
	started := time.Now()
	load0 := loadAvg()
	vers := versions(s)
	machine := machineInfo(tmp)
	log.Printf("cluster: %d nodes, %d records of 1 KiB acks=all, %d repetition(s), Kafka heap %s, load average %s, temp dir %s",
		nodes, s.ClusterRecords, s.N, s.KafkaHeap, load0, tmp)
	runs := map[kind][]clusterRun{}
	for rep := 0; rep < s.N; rep++ {
		order := []kind{kafka, kgo}
		if rep%2 == 1 {
			order = []kind{kgo, kafka}
		}
		for _, k := range order {
			dir := filepath.Join(tmp, fmt.Sprintf("cluster-r%d-%s", rep, k))
			log.Printf("cluster: rep %d: %s", rep+1, k.Title())
			r := runClusterOne(ctx, s, k, dir, nodes, rep)
			if !s.Keep {
				_ = os.RemoveAll(dir)
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if r.Err != "" {
				log.Printf("cluster: rep %d: %s: %s", rep+1, k.Title(), r.Err)
			} else {
				log.Printf("cluster: rep %d: %s: %.0f rec/s, %.1f MB/s, p50/p99/p99.9 %.2f/%.2f/%.2f ms, CPU %.1f s/GB, idle RSS %.0f MiB, leaders %s",
					rep+1, k.Title(), r.RecPerS, r.MBPerS, r.P50Ms, r.P99Ms, r.P999Ms, r.CPUPerGB, mib(r.IdleRSS), r.Leaders)
			}
			runs[k] = append(runs[k], r)
		}
	}
	load1 := loadAvg()

	var w strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&w, f, a...) }
	p("# Replicated cluster: %d combined nodes, RF %d, min.insync.replicas %d, acks=all\n\n", nodes, clusterRF, clusterMinISR)
	command := fmt.Sprintf("BENCH_CLUSTER=%d make bench", nodes)
	if s.Quick {
		command = "BENCH_QUICK=1 " + command + " (smoke test: too few records for the JIT to warm up; not a result)"
	}
	p("%s, load average %s at the start, %s at the end; Apache Kafka heap `KAFKA_HEAP_OPTS=%s` per node. `%s`.\n\n",
		started.UTC().Format("2006-01-02 15:04 UTC"), load0, load1, s.KafkaHeap, command)
	// The version string starts with "kgo-broker".
	p("%s, commit %s; Apache Kafka %s, %s; %s × %s, %s RAM.\n\n", vers["kgo-broker"], vers["commit"], vers["kafka"], vers["java"],
		machine["nproc"], machine["cpu"], machine["memory"])
	p("Medians of %d repetition(s) of %s records of 1 KiB (after an unreported warm-up of %s), %d franz-go producers seeded with all %d nodes, acks=all, idempotent, topic `%s` with %d partitions.\n\n",
		s.N, itoa(s.ClusterRecords), itoa(max(s.ClusterRecords/4, 5000)), clusterClients, nodes, clusterTopic, clusterPartitions)
	failed := false
	for _, k := range []kind{kafka, kgo} {
		for _, r := range runs[k] {
			if r.Err != "" {
				p("- error: rep %d, %s: %s\n", r.Rep, k.Title(), oneLine(r.Err, 600))
				failed = true
			}
		}
	}
	if failed {
		p("\n")
	}
	p("| Metric | Apache Kafka | kgo-broker | kgo/kafka |\n|---|--:|--:|--:|\n")
	medians := map[kind]map[string]float64{kafka: {}, kgo: {}}
	ratios := map[string]float64{}
	for _, m := range clusterMetrics {
		a, g := clusterMedian(runs[kafka], m), clusterMedian(runs[kgo], m)
		q := ratio(g, a)
		if m.Key == otherLoad {
			q = math.NaN()
		}
		p("| %s | %s | %s | %s |\n", m.Title, fmtNum(a), fmtNum(g), fmtRatio(q))
		// JSON has no NaN: a metric with no successful run is left out.
		for k, v := range map[kind]float64{kafka: a, kgo: g} {
			if !math.IsNaN(v) {
				medians[k][m.Key] = v
			}
		}
		if !math.IsNaN(q) {
			ratios[m.Key] = q
		}
	}
	p("\nThe producers send as fast as the cluster acknowledges, up to 2^16 records buffered per client, so send-to-ack latency includes the wait in the client's buffer: it is the latency at saturation, not at a load both clusters sustain. ")
	p("Broker CPU is utime+stime of the %d node processes (/proc) during the measured run, per 10^9 payload bytes produced (replica copies not counted); MB = 2^20 bytes as in latest.md. The load generator runs on the same machine and shares its cores; \"other load\" is the rest of the machine's busy time (not the nodes, not bench). Kafka's RSS includes its JVM heap as far as it was touched.\n\n", nodes)
	p("## Setup\n\n")
	p("- every node: process.roles=broker,controller, node.id 1..%d, all nodes in controller.quorum.voters, PLAINTEXT, CONTROLLER and SSL listeners on 127.0.0.1 (own ports), own data dir under one temp dir on the same disk; logs at WARN\n", nodes)
	p("- the single-node benchmark's server.properties keys (latest.md), with replication defaults for a cluster: default.replication.factor, offsets.topic.replication.factor and transaction.state.log.replication.factor %d, min.insync.replicas and transaction.state.log.min.isr %d\n", clusterRF, clusterMinISR)
	p("- formatted before the start with each broker's own tool and one cluster id (kafka-storage.sh format -t / kgo-broker format -t)\n")
	p("- per repetition and broker: a fresh cluster (format, start, topic, measure, stop, data deleted), never both clusters at once; the order flips every repetition (Kafka first in odd repetitions); data dirs are not kept between repetitions\n")
	p("- ready means: every node's own Metadata response names all %d nodes, then, after CreateTopics, every node's Metadata shows each of the %d partitions with a leader, %d replicas and %d in sync\n\n", nodes, clusterPartitions, clusterRF, clusterRF)
	p("## Every run\n\n| rep | broker | rec/s | MB/s | p50 ms | p99 ms | p99.9 ms | CPU s | CPU s/GB | idle RSS MiB | leaders (node:partitions) | start s | other load, cores | error |\n")
	p("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|---|\n")
	for _, k := range []kind{kafka, kgo} {
		for _, r := range runs[k] {
			p("| %d | %s | %s | %s | %s | %s | %s | %.2f | %s | %s | %s | %s | %.2f | %s |\n", r.Rep, k.Title(), fmtNum(r.RecPerS), fmtNum(r.MBPerS),
				fmtNum(r.P50Ms), fmtNum(r.P99Ms), fmtNum(r.P999Ms), r.CPUSeconds, fmtNum(r.CPUPerGB), fmtNum(mib(r.IdleRSS)), orDash(r.Leaders),
				fmtNum(r.StartSeconds), r.OtherCores, strings.ReplaceAll(orDash(oneLine(r.Err, 120)), "|", "/"))
		}
	}
	p("\n<details><summary>node 1's server.properties</summary>\n\n```properties\n%s```\n</details>\n",
		nodeProperties(1, 19092, 19093, 19094, "<tmp>/cluster-r<rep>-<broker>/node1/data",
			&benchCerts{Keystore: "<tmp>/certs/broker.keystore.p12", Password: "<test password>"},
			replication{Voters: "1@127.0.0.1:19093,2@127.0.0.1:<port>,3@127.0.0.1:<port>", Factor: clusterRF, MinISR: clusterMinISR}))
	md, js := clusterReportPaths(s)
	if err := os.WriteFile(md, []byte(w.String()), 0o644); err != nil {
		return err
	}
	b, err := json.MarshalIndent(map[string]any{
		"started": started, "finished": time.Now(), "nodes": nodes, "records": s.ClusterRecords, "repetitions": s.N,
		"quick": s.Quick, "kafka_heap": s.KafkaHeap, "load_start": load0, "load_end": load1,
		"versions": vers, "machine": machine, "runs": runs, "medians": medians, "kgo_over_kafka": ratios,
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(js, b, 0o644)
}

// clusterReportPaths are cluster-latest.{md,json}, or with BENCH_QUICK
// cluster-latest-quick.*, so that a smoke test leaves the full results alone
// (as latest-quick.* does for the main comparison).
func clusterReportPaths(s settings) (md, js string) {
	base := "cluster-latest"
	if s.Quick {
		base += "-quick"
	}
	return filepath.Join(s.OutDir, base+".md"), filepath.Join(s.OutDir, base+".json")
}
