package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	franz "github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// scenario is one measurement, run against each broker.
type scenario struct {
	ID    string // stable id: produce-1k-acks1-p8, consume-1k-p8, fetch-1k-p8, e2e-1k-acks1
	Kind  string // produce, consume, fetch, e2e
	Title string
	Size  int    // record bytes
	Acks  string // producer acks
	Parts int
	// Records is the number of records produced / consumed / round trips.
	Records int64
	// Source is the produce scenario whose topic (of this repetition) a read scenario reads.
	Source string
	// Configs are topic configs for the scenario's topic (both brokers).
	Configs map[string]string
	// TxnMs makes a produce scenario transactional: ProducerPerformance
	// commits a transaction every TxnMs (--transaction-duration-ms).
	TxnMs int
	// PerTxn is the number of records per transaction of a txn-commit
	// scenario (franz-go: begin, produce, commit, one after another).
	PerTxn int
	// SSL runs the tool against the SSL listener with the test truststore
	// (--command-config; tls.go).
	SSL bool
	// Clients is the number of producers of a gen or rate scenario (the Go
	// load generator, loadgen.go).
	Clients int
	// RateOf and RatePct: a rate scenario offers RatePct percent of the
	// records/s Apache Kafka reached in scenario RateOf in the same
	// repetition (Rate when Kafka has no result), for RateSeconds.
	RateOf      string
	RatePct     float64
	Rate        float64
	RateSeconds float64
}

func sizeName(n int) string {
	if n == 1024 {
		return "1k"
	}
	return strconv.Itoa(n) + "b"
}

func sizeTitle(n int) string {
	if n == 1024 {
		return "1 KiB"
	}
	return strconv.Itoa(n) + " B"
}

func scenarios(s settings) []scenario {
	var out []scenario
	for _, size := range []int{1024, 100} {
		n := s.Records1K
		if size == 100 {
			n = s.Records100
		}
		for _, acks := range []string{"1", "all"} {
			for _, p := range []int{1, 8} {
				id := fmt.Sprintf("produce-%s-acks%s-p%d", sizeName(size), acks, p)
				title := fmt.Sprintf("produce %s acks=%s p=%d", sizeTitle(size), acks, p)
				if acks == "all" {
					title = fmt.Sprintf("produce %s acks=all idem p=%d", sizeTitle(size), p)
				}
				out = append(out, scenario{ID: id, Kind: "produce", Title: title, Size: size, Acks: acks, Parts: p, Records: n})
			}
		}
	}
	// Durable mode: an fsync before every acknowledgement. Kafka flushes each
	// partition's log (and indexes) inside its append; kgo-broker group-commits
	// (storage.Log.syncTo) and syncs a request's partitions together.
	out = append(out, scenario{ID: "produce-1k-acks1-p8-flush1", Kind: "produce",
		Title: "produce 1 KiB acks=1 p=8 flush.messages=1", Size: 1024, Acks: "1", Parts: 8,
		Records: s.Records1K, Configs: map[string]string{"flush.messages": "1"}})
	// Transactions (KIP-98/KIP-890): ProducerPerformance with a
	// transactional id, one commit every 100 ms, and the commit latency of
	// small transactions one after another (franz-go).
	out = append(out,
		scenario{ID: "produce-1k-txn100-p8", Kind: "produce", Title: "produce 1 KiB txn 100 ms p=8",
			Size: 1024, Acks: "all", Parts: 8, Records: s.Records1K, TxnMs: 100},
		scenario{ID: "txn-commit-1k-x10-p4", Kind: "txn", Title: "txn commit 10 × 1 KiB over p=4 (franz-go)",
			Size: 1024, Parts: 4, PerTxn: 10, Records: int64(s.E2ERecords)})
	out = append(out,
		scenario{ID: "consume-1k-p8", Kind: "consume", Title: "consume 1 KiB p=8 (consumer-perf-test, group)",
			Size: 1024, Parts: 8, Records: s.Records1K, Source: "produce-1k-acks1-p8"},
		scenario{ID: "fetch-1k-p8", Kind: "fetch", Title: "fetch 1 KiB p=8 (franz-go, assigned, no group)",
			Size: 1024, Parts: 8, Records: s.Records1K, Source: "produce-1k-acks1-p8"},
		scenario{ID: "e2e-1k-acks1", Kind: "e2e", Title: "e2e latency 1 KiB acks=1 (kafka-e2e-latency.sh)",
			Size: 1024, Acks: "1", Parts: 1, Records: int64(s.E2ERecords)},
	)
	// TLS: the same tools over both brokers' SSL listener (same PKCS12
	// keystore, TLS 1.3 by default on both).
	out = append(out,
		scenario{ID: "ssl-produce-1k-acks1-p8", Kind: "produce", Title: "produce 1 KiB acks=1 p=8 over SSL",
			Size: 1024, Acks: "1", Parts: 8, Records: s.Records1K, SSL: true},
		scenario{ID: "ssl-consume-1k-p8", Kind: "consume", Title: "consume 1 KiB p=8 over SSL (consumer-perf-test, group)",
			Size: 1024, Parts: 8, Records: s.Records1K, Source: "ssl-produce-1k-acks1-p8", SSL: true},
	)
	// The Go load generator: 4 producers pipelining over 32 partitions, to
	// saturate the broker rather than one Java client; then a constant rate
	// of half what Kafka reached, with a consumer attached, for end-to-end
	// latency at a load both sustain (OpenMessaging Benchmark style).
	rateSecs := 30.0
	if s.Quick {
		rateSecs = 10
	}
	for _, size := range []int{1024, 100} {
		n := s.Records1K * 2
		if size == 100 {
			n = s.Records100 * 2
		}
		gen := fmt.Sprintf("gen-%s-acks1-p32-c4", sizeName(size))
		out = append(out,
			scenario{ID: gen, Kind: "gen", Title: fmt.Sprintf("gen %s acks=1 p=32 ×4 producers (franz-go)", sizeTitle(size)),
				Size: size, Acks: "1", Parts: 32, Clients: 4, Records: n},
			scenario{ID: fmt.Sprintf("rate-%s-p8", sizeName(size)), Kind: "rate",
				Title: fmt.Sprintf("constant rate %s acks=1 p=8, 50%% of Kafka's gen maximum, e2e (franz-go)", sizeTitle(size)),
				Size:  size, Acks: "1", Parts: 8, Clients: 1, RateOf: gen, RatePct: 50,
				Rate: map[int]float64{1024: 20000, 100: 50000}[size], RateSeconds: rateSecs})
	}
	out = append(out, scenario{ID: "gen-1k-acksall-p32-c4", Kind: "gen", Title: "gen 1 KiB acks=all idem p=32 ×4 producers (franz-go)",
		Size: 1024, Acks: "all", Parts: 32, Clients: 4, Records: s.Records1K * 2})
	if s.Only != nil {
		keep := out[:0]
		for _, sc := range out {
			if s.Only.MatchString(sc.ID) {
				keep = append(keep, sc)
			}
		}
		out = keep
	}
	return out
}

// result is one run of one scenario against one broker.
type result struct {
	OK             bool
	NA             string // why there is no figure ("n/a: needs consumer groups")
	RecPerSec      float64
	MBPerSec       float64
	AvgMs          float64
	P50, P99, P999 float64
	MaxMs          float64
	RebalanceMs    float64 // consumer-perf-test: group join time
	Wall           float64 // seconds the tool ran
	CPU            float64 // broker CPU seconds during the run
	Bytes          float64 // payload bytes moved
	Foreign        float64 // average cores used by other processes on the machine during the run
	Note           string  // remark on a successful run
	Raw            string  `json:"-"`
}

// CPUPerGB is broker CPU seconds per GB (1e9 bytes) of payload.
func (r result) CPUPerGB() float64 {
	if r.Bytes <= 0 {
		return 0
	}
	return r.CPU / (r.Bytes / 1e9)
}

// toolRun is the outcome of one Kafka tool process.
type toolRun struct {
	Out      string
	Err      error
	Wall     float64
	ChildCPU float64
}

// runTool runs scripts/kafka-tool with a timeout, in its own process group so a
// timeout kills the JVM too.
func runTool(ctx context.Context, s settings, timeout time.Duration, args ...string) toolRun {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.Command(kafkaTool(s), args...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return toolRun{Err: err}
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		err = fmt.Errorf("%s: %w", args[0], ctx.Err())
	}
	tr := toolRun{Out: buf.String(), Err: err, Wall: time.Since(t0).Seconds()}
	if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			tr.ChildCPU = tv(ru.Utime) + tv(ru.Stime)
		}
	}
	return tr
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func selfCPU() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return tv(ru.Utime) + tv(ru.Stime)
}

// ProducerPerformance's final line:
// "N records sent, X records/sec (Y MB/sec), A ms avg latency, M ms max latency, P50 ms 50th, P95 ms 95th, P99 ms 99th, P999 ms 99.9th."
var perfTotalRE = regexp.MustCompile(`(?m)^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency, ([\d.]+) ms 50th, ([\d.]+) ms 95th, ([\d.]+) ms 99th, ([\d.]+) ms 99.9th`)

// EndToEndLatency: "Avg latency: 1.2345 ms" and "Percentiles: 50th = 1, 99th = 3, 99.9th = 9".
var (
	e2eAvgRE = regexp.MustCompile(`Avg latency: ([\d.]+) ms`)
	e2ePctRE = regexp.MustCompile(`Percentiles: 50th = ([\d.]+), 99th = ([\d.]+), 99.9th = ([\d.]+)`)
)

func atof(s string) float64 { f, _ := strconv.ParseFloat(s, 64); return f }

func topicName(sc scenario, rep int) string { return fmt.Sprintf("bench-%s-r%d", sc.ID, rep) }

// admin is an admin client seeded with the brokers (one node, or a cluster's).
func admin(bs ...*broker) (*franz.Client, *kadm.Client, error) {
	var seeds []string
	for _, b := range bs {
		seeds = append(seeds, b.Addr)
	}
	cl, err := franz.NewClient(franz.SeedBrokers(seeds...), franz.ClientID("kgo-bench-admin"))
	if err != nil {
		return nil, nil, err
	}
	return cl, kadm.NewClient(cl), nil
}

// createTopic creates the topic and waits until every partition has a leader.
func createTopic(ctx context.Context, b *broker, topic string, parts int, configs map[string]string) error {
	cl, adm, err := admin(b)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	var cfg map[string]*string
	for k, v := range configs {
		if cfg == nil {
			cfg = map[string]*string{}
		}
		cfg[k] = &v
	}
	rs, err := adm.CreateTopics(ctx, int32(parts), 1, cfg, topic)
	if err != nil {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	if r, err := rs.On(topic, nil); err != nil || (r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists)) {
		if err == nil {
			err = r.Err
		}
		return fmt.Errorf("create %s: %w", topic, err)
	}
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == parts {
				ready := true
				for _, p := range td.Partitions {
					if p.Leader < 0 || p.Err != nil {
						ready = false
					}
				}
				if ready {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s has no leaders after 60s (last error %v)", topic, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// servesGroups tells whether the broker advertises the classic group protocol's APIs.
func servesGroups(ctx context.Context, b *broker) (bool, string) {
	cl, err := franz.NewClient(franz.SeedBrokers(b.Addr))
	if err != nil {
		return false, err.Error()
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return false, err.Error()
	}
	have := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = true
	}
	var missing []string
	for _, k := range []int16{10, 11, 12, 14, 8, 9} { // FindCoordinator JoinGroup Heartbeat SyncGroup OffsetCommit OffsetFetch
		if !have[k] {
			missing = append(missing, kmsg.NameForKey(k))
		}
	}
	if len(missing) > 0 {
		return false, "not served: " + strings.Join(missing, ", ")
	}
	return true, ""
}

// run runs one scenario against one broker. others are the brokers not under
// test (their CPU is subtracted from the machine's to get the foreign load).
func runScenario(ctx context.Context, s settings, sc scenario, rep int, b *broker, others []*broker) result {
	var r result
	topic := topicName(sc, rep)
	switch sc.Kind {
	case "produce", "e2e", "txn", "gen", "rate":
		if err := createTopic(ctx, b, topic, sc.Parts, sc.Configs); err != nil {
			r.NA = "error: " + err.Error()
			return r
		}
	case "consume", "fetch":
		topic = topicName(scenario{ID: sc.Source}, rep)
	}
	if sc.Kind == "consume" {
		if ok, why := servesGroups(ctx, b); !ok {
			r.NA = "n/a: needs consumer groups (" + why + ")"
			return r
		}
	}

	before, err := readProc(b.Pid())
	if err != nil {
		r.NA = "error: " + err.Error()
		return r
	}
	othersBefore := 0.0
	for _, o := range others {
		if st, err := readProc(o.Pid()); err == nil {
			othersBefore += st.CPU
		}
	}
	sys0, self0 := systemBusy(), selfCPU()
	var tr toolRun
	addr := b.Addr
	var clientConfig []string
	if sc.SSL {
		c, err := sslCerts("")
		if err != nil {
			r.NA = "error: " + err.Error()
			return r
		}
		addr, clientConfig = b.SSLAddr, []string{"--command-config", c.ClientConfig}
	}
	switch sc.Kind {
	case "produce":
		acksProps := []string{"acks=1", "enable.idempotence=false"}
		if sc.Acks == "all" {
			acksProps = []string{"acks=all", "enable.idempotence=true"}
		}
		args := append([]string{"kafka-producer-perf-test.sh", "--bootstrap-server", addr}, clientConfig...)
		args = append(args, "--topic", topic,
			"--num-records", strconv.FormatInt(sc.Records, 10), "--record-size", strconv.Itoa(sc.Size),
			"--throughput", "-1", "--command-property")
		args = append(args, acksProps...)
		args = append(args, "client.id=kgo-bench")
		if sc.TxnMs > 0 {
			args = append(args, "--transactional-id", fmt.Sprintf("kgo-bench-%s-r%d", sc.ID, rep),
				"--transaction-duration-ms", strconv.Itoa(sc.TxnMs))
		}
		tr = runTool(ctx, s, s.ToolTimeout, args...)
		r.Bytes = float64(sc.Records) * float64(sc.Size)
	case "txn":
		t0 := time.Now()
		lat, err := commitLatencies(ctx, b, topic, sc, rep, s.ToolTimeout)
		tr = toolRun{Wall: time.Since(t0).Seconds(), Err: err}
		r.Bytes = float64(sc.Records) * float64(sc.PerTxn) * float64(sc.Size)
		if err == nil {
			r.RecPerSec = float64(sc.Records) / tr.Wall // transactions per second
			r.MBPerSec = r.Bytes / tr.Wall / (1 << 20)
			r.AvgMs, r.P50, r.P99, r.P999, r.MaxMs = latencyStats(lat)
		}
	case "consume":
		args := append([]string{"kafka-consumer-perf-test.sh", "--bootstrap-server", addr}, clientConfig...)
		tr = runTool(ctx, s, s.ToolTimeout, append(args, "--topic", topic, "--num-records", strconv.FormatInt(sc.Records, 10),
			"--group", fmt.Sprintf("kgo-bench-%d-%d", rep, time.Now().UnixNano()), "--timeout", "30000",
			"--command-property", "auto.offset.reset=earliest")...)
		r.Bytes = float64(sc.Records) * float64(sc.Size)
	case "fetch":
		t0 := time.Now()
		n, bytes, err := fetchAll(ctx, b, topic, sc.Parts, sc.Records, s.ToolTimeout)
		tr = toolRun{Wall: time.Since(t0).Seconds(), Err: err}
		r.Bytes = float64(bytes)
		if err == nil {
			r.RecPerSec = float64(n) / tr.Wall
			r.MBPerSec = float64(bytes) / tr.Wall / (1 << 20)
		}
	case "gen", "rate":
		o := genOpts{Seeds: []string{b.Addr}, Topic: topic, Size: sc.Size, Acks: sc.Acks, Clients: sc.Clients,
			Records: sc.Records, Timeout: s.ToolTimeout}
		if sc.Kind == "rate" {
			o.Rate, o.Consume = sc.Rate, true
			o.Records = int64(sc.Rate * sc.RateSeconds)
		}
		t0 := time.Now()
		g, err := runGen(ctx, o)
		tr = toolRun{Wall: time.Since(t0).Seconds(), Err: err}
		r.Bytes = float64(g.Bytes)
		if err == nil {
			r.RecPerSec = float64(g.Records) / g.Wall.Seconds()
			r.MBPerSec = float64(g.Bytes) / g.Wall.Seconds() / (1 << 20)
			h := g.Ack
			if sc.Kind == "rate" {
				h = g.E2E
				r.Note = fmt.Sprintf("offered %.0f rec/s", sc.Rate)
			}
			r.AvgMs, r.MaxMs = h.Mean()/1000, float64(h.Max())/1000
			r.P50, r.P99, r.P999 = ms(h, 50), ms(h, 99), ms(h, 99.9)
		}
	case "e2e":
		tr = runTool(ctx, s, s.ToolTimeout, "kafka-e2e-latency.sh", "--bootstrap-server", b.Addr, "--topic", topic,
			"--num-records", strconv.FormatInt(sc.Records, 10), "--producer-acks", sc.Acks, "--record-size", strconv.Itoa(sc.Size))
		r.Bytes = 2 * float64(sc.Records) * float64(sc.Size)
	}
	after, err := readProc(b.Pid())
	if err != nil {
		r.NA = "error: broker died: " + err.Error()
		return r
	}
	othersAfter := 0.0
	for _, o := range others {
		if st, err := readProc(o.Pid()); err == nil {
			othersAfter += st.CPU
		}
	}
	sysCPU, self := systemBusy()-sys0, selfCPU()-self0
	r.CPU = after.CPU - before.CPU
	r.Wall = tr.Wall
	r.Raw = tr.Out
	_ = os.WriteFile(filepath.Join(b.Dir, fmt.Sprintf("%s-r%d.out", sc.ID, rep)), []byte(tr.Out), 0o644)
	if tr.Wall > 0 {
		foreign := sysCPU - r.CPU - (othersAfter - othersBefore) - tr.ChildCPU - self
		if foreign < 0 {
			foreign = 0
		}
		r.Foreign = foreign / tr.Wall
	}
	if tr.Err != nil && sc.Kind == "e2e" && e2ePctRE.MatchString(tr.Out) {
		// EndToEndLatency measures first and then commits offsets, which needs a
		// group coordinator: the figures are complete even when that last step fails.
		r.Note = "tool failed after measuring: " + firstLine(lastLine(tr.Out))
		tr.Err = nil
	}
	if tr.Err != nil {
		r.NA = "error: " + firstLine(tr.Err.Error())
		if l := lastLine(tr.Out); l != "" {
			r.NA += ": " + firstLine(l)
		}
		if sc.Kind == "consume" {
			r.NA = "n/a: consumer-perf-test failed (" + firstLine(tr.Err.Error()) + ")"
		}
		return r
	}
	switch sc.Kind {
	case "produce":
		ms := perfTotalRE.FindAllStringSubmatch(tr.Out, -1)
		if len(ms) == 0 {
			r.NA = "error: no summary line"
			return r
		}
		m := ms[len(ms)-1]
		if m[1] != strconv.FormatInt(sc.Records, 10) {
			r.NA = "error: " + m[1] + " records sent"
			return r
		}
		r.RecPerSec, r.MBPerSec, r.AvgMs, r.MaxMs = atof(m[2]), atof(m[3]), atof(m[4]), atof(m[5])
		r.P50, r.P99, r.P999 = atof(m[6]), atof(m[8]), atof(m[9])
	case "consume":
		// Header line then values: start.time, end.time, data.consumed.in.MB, MB.sec,
		// data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
		var header, values []string
		for _, line := range strings.Split(tr.Out, "\n") {
			f := strings.Split(strings.TrimSpace(line), ", ")
			if len(f) >= 10 && f[0] == "start.time" {
				header = f
			} else if header != nil && len(f) == len(header) {
				values = f
			}
		}
		if values == nil {
			r.NA = "n/a: no consumer-perf-test summary"
			return r
		}
		col := func(name string) float64 {
			for i, h := range header {
				if h == name {
					return atof(values[i])
				}
			}
			return 0
		}
		if got := int64(col("data.consumed.in.nMsg")); got < sc.Records {
			r.NA = fmt.Sprintf("n/a: consumed %d of %d records", got, sc.Records)
			return r
		}
		// Whole run (group join included): the tool's MB.sec and nMsg.sec.
		r.MBPerSec, r.RecPerSec = col("MB.sec"), col("nMsg.sec")
		r.RebalanceMs = col("rebalance.time.ms")
	case "e2e":
		m1 := e2eAvgRE.FindStringSubmatch(tr.Out)
		m2 := e2ePctRE.FindStringSubmatch(tr.Out)
		if m1 == nil || m2 == nil {
			r.NA = "error: no latency summary"
			return r
		}
		r.AvgMs, r.P50, r.P99, r.P999 = atof(m1[1]), atof(m2[1]), atof(m2[2]), atof(m2[3])
	}
	r.OK = true
	return r
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}

// fetchAll reads every partition of topic from the start with franz-go (direct
// partition assignment, no group) until want records arrived.
func fetchAll(ctx context.Context, b *broker, topic string, parts int, want int64, timeout time.Duration) (int64, int64, error) {
	offs := map[int32]franz.Offset{}
	for p := 0; p < parts; p++ {
		offs[int32(p)] = franz.NewOffset().AtStart()
	}
	cl, err := franz.NewClient(franz.SeedBrokers(b.Addr), franz.ClientID("kgo-bench-fetch"),
		franz.ConsumePartitions(map[string]map[int32]franz.Offset{topic: offs}),
		franz.FetchMaxBytes(50<<20), franz.FetchMaxPartitionBytes(1<<20))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var n, bytes int64
	for n < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return n, bytes, fmt.Errorf("fetched %d of %d records: %w", n, want, err)
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return n, bytes, ferr
		}
		fs.EachRecord(func(r *franz.Record) {
			n++
			bytes += int64(len(r.Value))
		})
	}
	return n, bytes, nil
}

// commitLatencies runs sc.Records transactions of sc.PerTxn records each,
// spread over the topic's partitions, one after another, and returns how
// long each commit took (EndTxn after the records were flushed: the
// PrepareCommit write; markers are written after the answer under
// transaction.version 2, as on Kafka).
func commitLatencies(ctx context.Context, b *broker, topic string, sc scenario, rep int, timeout time.Duration) ([]time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cl, err := franz.NewClient(franz.SeedBrokers(b.Addr), franz.ClientID("kgo-bench-txn"),
		franz.TransactionalID(fmt.Sprintf("kgo-bench-%s-r%d-%d", sc.ID, rep, time.Now().UnixNano())),
		franz.DefaultProduceTopic(topic), franz.RecordPartitioner(franz.RoundRobinPartitioner()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	value := bytes.Repeat([]byte{'x'}, sc.Size)
	lat := make([]time.Duration, 0, sc.Records)
	for i := int64(0); i < sc.Records; i++ {
		if err := cl.BeginTransaction(); err != nil {
			return nil, fmt.Errorf("transaction %d: begin: %w", i, err)
		}
		for j := 0; j < sc.PerTxn; j++ {
			cl.Produce(ctx, &franz.Record{Value: value}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			return nil, fmt.Errorf("transaction %d: flush: %w", i, err)
		}
		t0 := time.Now()
		if err := cl.EndTransaction(ctx, franz.TryCommit); err != nil {
			return nil, fmt.Errorf("transaction %d: commit: %w", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}

// latencyStats is avg, p50, p99, p99.9 and max in milliseconds.
func latencyStats(d []time.Duration) (avg, p50, p99, p999, maxMs float64) {
	if len(d) == 0 {
		return
	}
	ms := make([]float64, len(d))
	var sum float64
	for i, x := range d {
		ms[i] = float64(x) / float64(time.Millisecond)
		sum += ms[i]
	}
	sort.Float64s(ms)
	at := func(q float64) float64 { return ms[min(len(ms)-1, int(q*float64(len(ms))))] }
	return sum / float64(len(ms)), at(0.50), at(0.99), at(0.999), ms[len(ms)-1]
}
