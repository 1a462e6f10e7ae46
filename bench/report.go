package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// --- machine and versions ---------------------------------------------------------------

func cmdOut(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func machineInfo(dir string) map[string]string {
	m := map[string]string{"nproc": fmt.Sprint(runtime.NumCPU()), "kernel": cmdOut("uname", "-r")}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m["cpu"] = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "MemTotal:") {
				var kb int64
				fmt.Sscan(strings.TrimSpace(strings.TrimPrefix(line, "MemTotal:")), &kb)
				m["memory"] = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	src := cmdOut("findmnt", "-no", "SOURCE,FSTYPE", "-T", dir)
	disk := src
	if f := strings.Fields(src); len(f) > 0 {
		dev := filepath.Base(f[0])
		rot, err := os.ReadFile("/sys/block/" + dev + "/queue/rotational")
		if err == nil {
			if strings.TrimSpace(string(rot)) == "0" {
				disk += ", non-rotational"
			} else {
				disk += ", reported rotational"
			}
		}
		if strings.HasPrefix(dev, "vd") {
			disk += " (virtio block device)"
		}
	}
	m["disk"] = disk + "; data dir " + dir
	return m
}

func versions(s settings) map[string]string {
	v := map[string]string{}
	v["kgo-broker"] = cmdOut(s.KgoBin, "version")
	commit := os.Getenv("BENCH_KGO_COMMIT")
	if commit == "" {
		commit = cmdOut("git", "-C", s.Root, "rev-parse", "--short=12", "HEAD")
		if st := cmdOut("git", "-C", s.Root, "status", "--porcelain"); st != "" && st != "?" {
			commit += " + the work tree's uncommitted changes (BENCH_CLEAN=1 measures HEAD alone)"
		}
	}
	v["commit"] = commit
	kv := "?"
	if b, err := os.ReadFile(filepath.Join(s.Root, "scripts", "versions.env")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "KAFKA_VERSION=") {
				kv = strings.TrimPrefix(line, "KAFKA_VERSION=")
			}
		}
	}
	v["kafka"] = kv
	java := cmdOut("java", "-version")
	v["java"] = strings.ReplaceAll(strings.SplitN(java, "\n", 2)[0], `"`, "")
	if lines := strings.Split(java, "\n"); len(lines) > 1 {
		v["java"] += "; " + strings.TrimSpace(lines[len(lines)-1])
	}
	v["go"] = runtime.Version()
	return v
}

// --- statistics ------------------------------------------------------------------------

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// med is the median of f over the successful results; NaN and the first
// failure's note when none succeeded.
func med(rs []result, f func(result) float64) (float64, string) {
	var xs []float64
	note := ""
	for _, r := range rs {
		if r.OK {
			xs = append(xs, f(r))
		} else if note == "" {
			note = r.NA
		}
	}
	if len(xs) == 0 {
		if note == "" {
			note = "n/a"
		}
		return math.NaN(), note
	}
	return median(xs), ""
}

func fmtNum(x float64) string {
	switch {
	case math.IsNaN(x):
		return "n/a"
	case x == 0:
		return "0"
	case math.Abs(x) >= 1000:
		return fmt.Sprintf("%.0f", x)
	case math.Abs(x) >= 100:
		return fmt.Sprintf("%.1f", x)
	case math.Abs(x) >= 10:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3g", x)
	}
}

func ratio(kgoV, kafkaV float64) float64 {
	// A zero (e.g. a latency under EndToEndLatency's whole-millisecond resolution)
	// makes no meaningful ratio.
	if math.IsNaN(kgoV) || math.IsNaN(kafkaV) || kafkaV == 0 || kgoV == 0 {
		return math.NaN()
	}
	return kgoV / kafkaV
}

func fmtRatio(r float64) string {
	if math.IsNaN(r) {
		return "n/a"
	}
	return fmt.Sprintf("**%.2f**", r)
}

// summary is the medians of one scenario on one broker.
type summary struct {
	Rec, MB, Avg, P50, P99, P999, CPUGB, Foreign, Rebalance float64
	Note                                                    string
}

func summarize(rs []result) summary {
	var s summary
	s.Rec, s.Note = med(rs, func(r result) float64 { return r.RecPerSec })
	s.MB, _ = med(rs, func(r result) float64 { return r.MBPerSec })
	s.Avg, _ = med(rs, func(r result) float64 { return r.AvgMs })
	s.P50, _ = med(rs, func(r result) float64 { return r.P50 })
	s.P99, _ = med(rs, func(r result) float64 { return r.P99 })
	s.P999, _ = med(rs, func(r result) float64 { return r.P999 })
	s.CPUGB, _ = med(rs, func(r result) float64 { return r.CPUPerGB() })
	s.Rebalance, _ = med(rs, func(r result) float64 { return r.RebalanceMs })
	var fs []float64
	for _, r := range rs {
		if r.Wall > 0 {
			fs = append(fs, r.Foreign)
		}
	}
	s.Foreign = median(fs)
	return s
}

// --- report ----------------------------------------------------------------------------

// loadVerdict: the figures are worth publishing only when the rest of the
// machine was quiet while the tools ran.
func (rp *report) foreignLoad() (medianCores, maxCores float64) {
	var fs []float64
	for _, byKind := range rp.Results {
		for _, rs := range byKind {
			for _, r := range rs {
				if r.Wall > 0 {
					fs = append(fs, r.Foreign)
				}
			}
		}
	}
	if len(fs) == 0 {
		return math.NaN(), math.NaN()
	}
	sort.Float64s(fs)
	return median(fs), fs[len(fs)-1]
}

func writeReport(s settings, rp *report) error {
	md := renderMarkdown(rp)
	stamp := rp.Started.UTC().Format("20060102-150405")
	mode := "full"
	if rp.Quick {
		mode = "quick"
	}
	name := fmt.Sprintf("%s-%s", stamp, mode)
	// A quick (smoke test) run does not replace the published full results.
	latest := "latest"
	if rp.Quick {
		latest = "latest-quick"
	}
	files := map[string][]byte{latest + ".md": []byte(md), name + ".md": []byte(md)}
	js, err := json.MarshalIndent(rp, "", "  ")
	if err != nil {
		return err
	}
	files[latest+".json"] = js
	files[name+".json"] = js
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(s.OutDir, f), b, 0o644); err != nil {
			return err
		}
	}
	if err := renderChart(s, rp, filepath.Join(s.OutDir, latest+".png")); err != nil {
		log.Printf("chart: %v (the Markdown report is complete without it)", err)
	} else {
		b, _ := os.ReadFile(filepath.Join(s.OutDir, latest+".png"))
		_ = os.WriteFile(filepath.Join(s.OutDir, name+".png"), b, 0o644)
	}
	log.Printf("wrote %s/%s.{md,json,png} and %s.*", s.OutDir, latest, name)
	return nil
}

func renderMarkdown(rp *report) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	mode := "full"
	if rp.Quick {
		mode = "quick (BENCH_QUICK=1: smoke test sizes, not for comparison)"
	}
	w("# kgo-broker vs Apache Kafka %s\n\n", rp.Versions["kafka"])
	w("Generated by `make bench` (bench/) on %s, %s mode, medians of %d repetition(s); run time %s.\n",
		rp.Started.UTC().Format("2006-01-02 15:04 MST"), mode, rp.N, rp.Finished.Sub(rp.Started).Round(time.Second))
	w("Ratios are **kgo-broker / Apache Kafka**: above 1 is better for throughput, below 1 is better for latency, CPU, memory and start time.\n\n")

	medF, maxF := rp.foreignLoad()
	w("**Machine load:** load average %s at start, %s at end; other processes used a median of %.2f cores (max %.2f) of %s while the tools ran.",
		rp.LoadStart, rp.LoadEnd, medF, maxF, rp.Machine["nproc"])
	if medF > 0.2 || maxF > 0.8 {
		w(" **LOAD WAS HIGH: other work competed for the CPUs during the runs; these figures are not fit for publishing.**\n\n")
	} else {
		w(" The machine was quiet enough for the figures to be meaningful.\n\n")
	}
	if rp.Waited > 0 {
		w("BENCH_WAIT_QUIET: the runs waited %v in total for the machine to be quiet.\n\n", rp.Waited.Round(time.Second))
	}
	for _, x := range rp.Warnings {
		w("> %s\n\n", x)
	}

	// Producer.
	w("## Produce (kafka-producer-perf-test.sh, unthrottled)\n\n")
	w("| Scenario | Kafka rec/s | kgo rec/s | Kafka MB/s | kgo MB/s | throughput kgo/kafka | Kafka p50 / p99 / p99.9 ms | kgo p50 / p99 / p99.9 ms | p99 kgo/kafka | Kafka CPU s/GB | kgo CPU s/GB | CPU kgo/kafka |\n")
	w("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, sc := range rp.Scenarios {
		if sc.Kind != "produce" {
			continue
		}
		a, g := summarize(rp.Results[sc.ID][kafka]), summarize(rp.Results[sc.ID][kgo])
		w("| %s × %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			sc.Title, itoa(sc.Records), cell(a, a.Rec), cell(g, g.Rec), fmtNum(a.MB), fmtNum(g.MB), fmtRatio(ratio(g.Rec, a.Rec)),
			lat3(a), lat3(g), fmtRatio(ratio(g.P99, a.P99)), fmtNum(a.CPUGB), fmtNum(g.CPUGB), fmtRatio(ratio(g.CPUGB, a.CPUGB)))
	}
	w("\nLatency is the perf tool's send-to-ack latency with throttling off, so it includes time queued in the producer's buffer (a saturation latency, not an idle one). Producer defaults otherwise (batch.size 16384, linger.ms 5); acks=1 runs set enable.idempotence=false, acks=all runs enable.idempotence=true. Payload MB as the tool counts them (MiB).\n\n")

	// The Go load generator.
	hasGen := false
	for _, sc := range rp.Scenarios {
		hasGen = hasGen || sc.Kind == "gen" || sc.Kind == "rate"
	}
	if hasGen {
		w("## Load generator (franz-go, bench/loadgen.go)\n\n")
		w("| Scenario | Kafka rec/s | kgo rec/s | Kafka MB/s | kgo MB/s | throughput kgo/kafka | Kafka p50 / p99 / p99.9 ms | kgo p50 / p99 / p99.9 ms | p99 kgo/kafka | Kafka CPU s/GB | kgo CPU s/GB | CPU kgo/kafka |\n")
		w("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, sc := range rp.Scenarios {
			if sc.Kind != "gen" && sc.Kind != "rate" {
				continue
			}
			a, g := summarize(rp.Results[sc.ID][kafka]), summarize(rp.Results[sc.ID][kgo])
			title := sc.Title + " × " + itoa(sc.Records)
			if sc.Kind == "rate" {
				title = fmt.Sprintf("%s, %.0f s", sc.Title, sc.RateSeconds)
			}
			w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
				title, cell(a, a.Rec), cell(g, g.Rec), fmtNum(a.MB), fmtNum(g.MB), fmtRatio(ratio(g.Rec, a.Rec)),
				lat3(a), lat3(g), fmtRatio(ratio(g.P99, a.P99)), fmtNum(a.CPUGB), fmtNum(g.CPUGB), fmtRatio(ratio(g.CPUGB, a.CPUGB)))
		}
		w("\ngen rows: 4 franz-go producers (one client and connection set each, linger 0, batches up to 1 MiB, 64 Ki records buffered each, no compression) over 32 partitions, as fast as the broker acknowledges; latency is send to acknowledgement, buffering included. rate rows: one producer offering a constant rate (half of Kafka's records/s in the 1 KiB or 100 B gen row of the same repetition, or the default when Kafka has none) with a franz-go consumer attached; latency is end to end, from each record's intended send time to its consumption (no coordinated omission). HDR histograms, 3 significant digits. The generator runs in the bench process; its CPU is not the broker's.\n\n")
	}

	// Transactions.
	hasTxn := false
	for _, sc := range rp.Scenarios {
		hasTxn = hasTxn || sc.Kind == "txn"
	}
	if hasTxn {
		w("## Transaction commits (franz-go, one transaction after another)\n\n")
		w("| Scenario | Kafka txn/s | kgo txn/s | txn/s kgo/kafka | Kafka commit p50 / p99 / p99.9 ms | kgo commit p50 / p99 / p99.9 ms | p99 kgo/kafka |\n")
		w("|---|--:|--:|--:|--:|--:|--:|\n")
		for _, sc := range rp.Scenarios {
			if sc.Kind != "txn" {
				continue
			}
			a, g := summarize(rp.Results[sc.ID][kafka]), summarize(rp.Results[sc.ID][kgo])
			w("| %s × %s | %s | %s | %s | %s | %s | %s |\n", sc.Title, itoa(sc.Records), cell(a, a.Rec), cell(g, g.Rec),
				fmtRatio(ratio(g.Rec, a.Rec)), lat3(a), lat3(g), fmtRatio(ratio(g.P99, a.P99)))
		}
		w("\nEach transaction: BeginTransaction, the records produced and flushed (AddPartitionsToTxn or, with transaction.version 2, the partition leaders' implicit add), then EndTransaction(commit), timed alone: the commit latency. The produce table's txn row is kafka-producer-perf-test.sh --transactional-id --transaction-duration-ms 100.\n\n")
	}

	// Reads.
	w("## Consume\n\n")
	w("| Scenario | Kafka rec/s | kgo rec/s | Kafka MB/s | kgo MB/s | throughput kgo/kafka | Kafka CPU s/GB | kgo CPU s/GB | CPU kgo/kafka |\n")
	w("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, sc := range rp.Scenarios {
		if sc.Kind != "consume" && sc.Kind != "fetch" {
			continue
		}
		a, g := summarize(rp.Results[sc.ID][kafka]), summarize(rp.Results[sc.ID][kgo])
		w("| %s × %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sc.Title, itoa(sc.Records),
			cell(a, a.Rec), cell(g, g.Rec), fmtNum(a.MB), fmtNum(g.MB), fmtRatio(ratio(g.Rec, a.Rec)),
			fmtNum(a.CPUGB), fmtNum(g.CPUGB), fmtRatio(ratio(g.CPUGB, a.CPUGB)))
	}
	w("\nBoth read the topic the `produce 1 KiB acks=1 p=8` scenario wrote in the same repetition, from the start. kafka-consumer-perf-test.sh subscribes with a consumer group (its MB/s includes joining the group); the franz-go row assigns the 8 partitions directly (no group) and runs inside the bench process.\n\n")

	// End to end.
	for _, sc := range rp.Scenarios {
		if sc.Kind != "e2e" {
			continue
		}
		a, g := summarize(rp.Results[sc.ID][kafka]), summarize(rp.Results[sc.ID][kgo])
		w("## End-to-end latency (%s × %s round trips)\n\n", sc.Title, itoa(sc.Records))
		w("| Metric | Apache Kafka | kgo-broker | kgo/kafka |\n|---|--:|--:|--:|\n")
		notes := func(rs []result) string {
			for _, r := range rs {
				if r.NA != "" || r.Note != "" {
					return r.NA + r.Note
				}
			}
			return ""
		}
		if na, ng := notes(rp.Results[sc.ID][kafka]), notes(rp.Results[sc.ID][kgo]); na != "" || ng != "" {
			w("| note | %s | %s | |\n", orDash(na), orDash(ng))
		}
		w("| avg ms | %s | %s | %s |\n", fmtNum(a.Avg), fmtNum(g.Avg), fmtRatio(ratio(g.Avg, a.Avg)))
		w("| p50 ms | %s | %s | %s |\n", fmtNum(a.P50), fmtNum(g.P50), fmtRatio(ratio(g.P50, a.P50)))
		w("| p99 ms | %s | %s | %s |\n", fmtNum(a.P99), fmtNum(g.P99), fmtRatio(ratio(g.P99, a.P99)))
		w("| p99.9 ms | %s | %s | %s |\n\n", fmtNum(a.P999), fmtNum(g.P999), fmtRatio(ratio(g.P999, a.P999)))
		w("One record at a time: send (linger.ms 0), poll until it comes back, next. Kafka 4.4's tool truncates its percentiles to whole milliseconds; the average is exact.\n\n")
	}

	// Resources.
	w("## Resources\n\n| Metric | Apache Kafka | kgo-broker | kgo/kafka |\n|---|--:|--:|--:|\n")
	st := func(k kind) float64 { return median(rp.Startup[k]) }
	w("| start: process exec to first Metadata response, s | %s | %s | %s |\n", fmtNum(st(kafka)), fmtNum(st(kgo)), fmtRatio(ratio(st(kgo), st(kafka))))
	rss := func(m map[kind][]int64, k kind) float64 {
		var xs []float64
		for _, v := range m[k] {
			xs = append(xs, mib(v))
		}
		return median(xs)
	}
	w("| idle RSS 3 s after start (VmRSS), MiB | %s | %s | %s |\n", fmtNum(rss(rp.IdleRSS, kafka)), fmtNum(rss(rp.IdleRSS, kgo)), fmtRatio(ratio(rss(rp.IdleRSS, kgo), rss(rp.IdleRSS, kafka))))
	w("| peak RSS over a repetition (VmHWM), MiB | %s | %s | %s |\n", fmtNum(rss(rp.PeakRSS, kafka)), fmtNum(rss(rp.PeakRSS, kgo)), fmtRatio(ratio(rss(rp.PeakRSS, kgo), rss(rp.PeakRSS, kafka))))
	for _, group := range []struct{ name, kinds string }{{"produce", "produce"}, {"consume + fetch", "consume fetch"}} {
		cpu := func(k kind) float64 {
			var c, by float64
			for _, sc := range rp.Scenarios {
				if !strings.Contains(group.kinds, sc.Kind) {
					continue
				}
				for _, r := range rp.Results[sc.ID][k] {
					if r.OK {
						c += r.CPU
						by += r.Bytes
					}
				}
			}
			if by == 0 {
				return math.NaN()
			}
			return c / (by / 1e9)
		}
		w("| broker CPU s per GB, all %s runs (utime+stime from /proc/<pid>/stat) | %s | %s | %s |\n", group.name, fmtNum(cpu(kafka)), fmtNum(cpu(kgo)), fmtRatio(ratio(cpu(kgo), cpu(kafka))))
	}
	w("\nApache Kafka runs with kafka-server-start.sh's default heap (`KAFKA_HEAP_OPTS=%s`) and kafka-run-class.sh's JVM options (G1, MaxGCPauseMillis=20); with -Xms the JVM reserves the heap but RSS counts only touched pages. GB = 10^9 payload bytes.\n\n", rp.KafkaHeap)

	// Setup.
	w("## Setup\n\n")
	w("| | |\n|---|---|\n")
	w("| machine | %s × %s, %s RAM, kernel %s |\n", rp.Machine["nproc"], rp.Machine["cpu"], rp.Machine["memory"], rp.Machine["kernel"])
	w("| disk | %s |\n", rp.Machine["disk"])
	w("| kgo-broker | %s, commit %s |\n", rp.Versions["kgo-broker"], rp.Versions["commit"])
	w("| Apache Kafka | %s (kafka.Kafka from the Maven Central jars, via scripts/kafka-tool); %s |\n", rp.Versions["kafka"], rp.Versions["java"])
	w("| bench | %s; tools are Apache Kafka %s's perf tools (ProducerPerformance, ConsumerPerformance, EndToEndLatency, -Xmx512M / -Xmx256M) |\n", rp.Versions["go"], rp.Versions["kafka"])
	w("| sizes | 1 KiB runs %s records, 100 B runs %s records, e2e %d round trips; %d repetition(s) |\n", itoa(rp.Records1K), itoa(rp.Records100B), rp.E2ERecords, rp.N)
	w("| brokers | both single combined KRaft nodes (process.roles=broker,controller, static voter on the CONTROLLER listener), PLAINTEXT on 127.0.0.1 (and SSL with the same PKCS12 test keystore for the ssl-* scenarios), each on its own ports; storage formatted before the timed start (kafka-storage.sh format / kgo-broker format); identical server.properties (below) apart from ports and log.dirs; logs at WARN |\n")
	w("| flush policy | Kafka's default for both: log.flush.interval.messages=Long.MAX, no flush timer; segments fsynced when rolled; the `flush.messages=1` scenario sets that topic config on its topic (an fsync before every acknowledgement) |\n")
	w("| procedure | per repetition: fresh data dirs, start both brokers, one unreported warm-up produce run on each, then every scenario against one broker and then the other (order flips every repetition), a new topic per run (RF 1); both brokers stay up, the idle one uses next to no CPU |\n")
	w("\n<details><summary>server.properties</summary>\n\n```properties\n%s```\n</details>\n\n", serverProperties(19092, 19093, 19094, "<tmp>/r<rep>-<broker>/data",
		&benchCerts{Keystore: "<tmp>/certs/broker.keystore.p12", Password: "<test password>"}))

	// Raw.
	w("<details><summary>Every run</summary>\n\n")
	w("| rep | scenario | broker | rec/s | MB/s | avg ms | p50 | p99 | p99.9 | broker CPU s | wall s | other load, cores | note |\n")
	w("|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, sc := range rp.Scenarios {
		for _, k := range []kind{kafka, kgo} {
			for i, r := range rp.Results[sc.ID][k] {
				w("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %.2f | %.1f | %.2f | %s |\n", i+1, sc.ID, k.Title(),
					fmtNum(r.RecPerSec), fmtNum(r.MBPerSec), fmtNum(r.AvgMs), fmtNum(r.P50), fmtNum(r.P99), fmtNum(r.P999),
					r.CPU, r.Wall, r.Foreign, strings.ReplaceAll(r.NA+r.Note, "|", "/"))
			}
		}
	}
	w("\n</details>\n\n![chart](%s.png)\n", map[bool]string{true: "latest-quick", false: "latest"}[rp.Quick])
	return b.String()
}

func cell(s summary, v float64) string {
	if s.Note != "" && math.IsNaN(v) {
		return s.Note
	}
	return fmtNum(v)
}

func lat3(s summary) string {
	if math.IsNaN(s.P99) {
		return "n/a"
	}
	return fmt.Sprintf("%s / %s / %s", fmtNum(s.P50), fmtNum(s.P99), fmtNum(s.P999))
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// --- chart (gnuplot) -------------------------------------------------------------------

func gp(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "?"
	}
	return fmt.Sprintf("%g", x)
}

func renderChart(s settings, rp *report, out string) error {
	if _, err := exec.LookPath("gnuplot"); err != nil {
		return fmt.Errorf("gnuplot not installed (bench/run.sh installs gnuplot-nox)")
	}
	dir, err := os.MkdirTemp("", "kgo-bench-chart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var tput, lat, rat strings.Builder
	short := func(sc scenario) string {
		t := strings.NewReplacer("produce ", "", " ×4 producers (franz-go)", " gen", "gen ", "", " idem", "", " flush.messages=1", " fsync", " (consumer-perf-test, group)", " group",
			" (franz-go, assigned, no group)", " franz-go", "consume ", "consume\\n", "fetch ", "fetch\\n").Replace(sc.Title)
		return t
	}
	for _, sc := range rp.Scenarios {
		a, g := summarize(rp.Results[sc.ID][kafka]), summarize(rp.Results[sc.ID][kgo])
		switch sc.Kind {
		case "produce", "consume", "fetch", "gen":
			fmt.Fprintf(&tput, "\"%s\"\t%s\t%s\n", short(sc), gp(a.MB), gp(g.MB))
			fmt.Fprintf(&rat, "\"%s\\nMB/s\"\t%s\n", strings.Replace(short(sc), " acks", "\\nacks", 1), gp(ratio(g.MB, a.MB)))
		}
		switch sc.Kind {
		case "produce":
			fmt.Fprintf(&lat, "\"%s\"\t%s\t%s\n", short(sc), gp(a.P99), gp(g.P99))
		case "gen":
			fmt.Fprintf(&lat, "\"%s\"\t%s\t%s\n", short(sc), gp(a.P99), gp(g.P99))
		case "rate":
			fmt.Fprintf(&lat, "\"rate e2e p99\\n(%s)\"\t%s\t%s\n", sizeTitle(sc.Size), gp(a.P99), gp(g.P99))
			fmt.Fprintf(&rat, "\"rate e2e\\np99 %s\"\t%s\n", sizeName(sc.Size), gp(ratio(g.P99, a.P99)))
		case "e2e":
			fmt.Fprintf(&lat, "\"e2e avg\\n(1 KiB)\"\t%s\t%s\n", gp(a.Avg), gp(g.Avg))
			fmt.Fprintf(&rat, "\"e2e avg\\nlatency\"\t%s\n", gp(ratio(g.Avg, a.Avg)))
		}
	}
	st := func(m map[kind][]float64, k kind) float64 { return median(m[k]) }
	rss := func(m map[kind][]int64, k kind) float64 {
		var xs []float64
		for _, v := range m[k] {
			xs = append(xs, float64(v))
		}
		return median(xs)
	}
	fmt.Fprintf(&rat, "\"start\\ntime\"\t%s\n", gp(ratio(st(rp.Startup, kgo), st(rp.Startup, kafka))))
	fmt.Fprintf(&rat, "\"idle\\nRSS\"\t%s\n", gp(ratio(rss(rp.IdleRSS, kgo), rss(rp.IdleRSS, kafka))))
	fmt.Fprintf(&rat, "\"peak\\nRSS\"\t%s\n", gp(ratio(rss(rp.PeakRSS, kgo), rss(rp.PeakRSS, kafka))))
	for name, body := range map[string]string{"tput.dat": tput.String(), "lat.dat": lat.String(), "ratio.dat": rat.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	title := fmt.Sprintf("kgo-broker vs Apache Kafka %s, %s, median of %d (%s)", rp.Versions["kafka"],
		rp.Started.UTC().Format("2006-01-02"), rp.N, map[bool]string{true: "QUICK MODE", false: "full mode"}[rp.Quick])
	medF, maxF := rp.foreignLoad()
	if medF > 0.2 || maxF > 0.8 {
		title += " - MACHINE WAS LOADED"
	}
	script := fmt.Sprintf(`
set terminal pngcairo size 1500,1500 font "sans,10"
set output %q
set datafile separator "\t"
set datafile missing "?"
set style data histogram
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics
set key top left
set xtics nomirror font ",9"
set yrange [0:*]
set bmargin 4
set multiplot layout 3,1 title %q font ",13"
set title "Throughput, MB/s (higher is better)"
plot 'tput.dat' using 2:xtic(1) title 'Apache Kafka' lc rgb '#4472c4', '' using 3 title 'kgo-broker' lc rgb '#ed7d31'
set title "Latency, ms: produce p99 (saturated, unthrottled) and end-to-end average (lower is better)"
set logscale y
set yrange [*:*]
plot 'lat.dat' using 2:xtic(1) title 'Apache Kafka' lc rgb '#4472c4', '' using 3 title 'kgo-broker' lc rgb '#ed7d31'
unset logscale y
set yrange [0:*]
set title "kgo-broker / Apache Kafka (throughput: >1 better; latency, start time, RSS: <1 better)"
set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lc rgb '#000000' lw 1.5 front
plot 'ratio.dat' using 2:xtic(1) notitle lc rgb '#70ad47', '' using 0:2:(sprintf("%%.2f", $2)) with labels offset 0,0.8 notitle
unset multiplot
`, out, title)
	if err := os.WriteFile(filepath.Join(dir, "chart.gp"), []byte(script), 0o644); err != nil {
		return err
	}
	cmd := exec.Command("gnuplot", "chart.gp")
	cmd.Dir = dir
	if o, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("gnuplot: %v\n%s", err, o)
	}
	return nil
}
