// Command bench runs Apache Kafka 4.4.0 and kgo-broker side by side on this
// machine and writes a comparison (bench/results/latest.md, latest.png,
// latest.json and timestamped copies). It is what `make bench` runs, through
// bench/run.sh, which installs the tools first.
//
// Both brokers are single combined KRaft nodes (process.roles=broker,controller)
// with the same server.properties apart from ports and data directory, data on
// the same disk under one temp dir. Every repetition starts both on fresh
// storage, then runs each scenario against one and then the other (the order
// flips every repetition: A B, B A, ...), and stops them. Reported figures are
// medians over the repetitions.
//
// Environment:
//
//	BENCH_N=3            repetitions
//	BENCH_QUICK=1        small record counts (smoke test, a few minutes); writes
//	                     latest-quick.* so that the full results stay in latest.*
//	BENCH_SCENARIOS=re   only the scenarios whose id matches the regexp
//	BENCH_PROFILE=id,... profile kgo-broker (CPU + allocations) under those scenarios
//	                     instead of comparing; "1" = produce-1k-acks1-p8,fetch-1k-p8
//	BENCH_OUT=dir        results directory (default bench/results)
//	BENCH_PROFILE_DIR=d  where profiles go (default bench/results/profiles)
//	BENCH_RERENDER=f.json  only rewrite the report (Markdown, chart) from a results JSON
//	BENCH_TMP=dir        where the temp data dir goes (default $TMPDIR)
//	BENCH_KEEP=1         keep the temp dir (logs, data)
//	BENCH_WAIT_QUIET=s   before each run wait until other processes use < 0.25 cores,
//	                     at most s seconds in total (a shared machine)
//	BENCH_KGO_BIN=path   the kgo-broker binary (default bin/kgo-broker; run.sh sets it
//	                     with BENCH_CLEAN=1), BENCH_KGO_COMMIT its label in the report
//	BENCH_RECORDS_1K, BENCH_RECORDS_100B, BENCH_E2E_RECORDS   override the sizes
//	BENCH_SCALE=n        scale mode instead (bench/scale.go): n partitions on one node
//	BENCH_CONNS=n        connections mode instead (bench/conns.go): n idle client
//	                     connections to one node, RSS and CPU with them
//	KAFKA_HEAP_OPTS      Apache Kafka's heap (default -Xmx1G -Xms1G, kafka-server-start.sh's)
//	BENCH_CLUSTER=3      replicated cluster mode instead (bench/cluster.go): a cluster of 3
//	                     combined nodes of each broker, one cluster after the other,
//	                     topic of 8 partitions RF 3 min.insync.replicas 2, 1 KiB acks=all
//	                     produce with 4 clients; BENCH_N repetitions (1 with BENCH_QUICK),
//	                     kinds alternating; writes cluster-latest.{md,json} (with
//	                     BENCH_QUICK cluster-latest-quick.*)
//	BENCH_CLUSTER_RECORDS=n   records per measured run (default 400000, 20000 with BENCH_QUICK)
//	BENCH_CLUSTER_KAFKA_HEAP  KAFKA_HEAP_OPTS of each of the cluster's Kafka nodes
//	                     (default -Xmx384m -Xms384m: three JVMs side by side)
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type settings struct {
	Root        string // repository root
	KgoBin      string // kgo-broker binary (BENCH_KGO_BIN, default bin/kgo-broker)
	N           int
	Quick       bool
	Only        *regexp.Regexp
	Profile     []string
	OutDir      string
	TmpBase     string
	Keep        bool
	Records1K   int64
	Records100  int64
	E2ERecords  int
	KafkaHeap   string
	ToolTimeout time.Duration
	WaitQuiet   time.Duration
	// BENCH_CLUSTER mode: records per measured run, and each Kafka node's
	// heap (three JVMs side by side instead of one).
	ClusterRecords   int64
	ClusterKafkaHeap string
}

func envInt(name string, def int64) int64 {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			log.Fatalf("%s=%q: want a positive integer", name, v)
		}
		return n
	}
	return def
}

func loadSettings() settings {
	root, err := os.Getwd()
	if err != nil {
		log.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(root, "scripts", "kafka-tool")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			log.Fatal("run bench from inside the kgo-broker repository (scripts/kafka-tool not found)")
		}
		root = parent
	}
	s := settings{
		Root:      root,
		Quick:     os.Getenv("BENCH_QUICK") != "" && os.Getenv("BENCH_QUICK") != "0",
		OutDir:    filepath.Join(root, "bench", "results"),
		TmpBase:   os.Getenv("BENCH_TMP"),
		Keep:      os.Getenv("BENCH_KEEP") != "" && os.Getenv("BENCH_KEEP") != "0",
		KafkaHeap: os.Getenv("KAFKA_HEAP_OPTS"),
	}
	s.KgoBin = os.Getenv("BENCH_KGO_BIN")
	if s.KgoBin == "" {
		s.KgoBin = filepath.Join(root, "bin", "kgo-broker")
	}
	if s.KafkaHeap == "" {
		s.KafkaHeap = "-Xmx1G -Xms1G"
	}
	if v := os.Getenv("BENCH_OUT"); v != "" {
		s.OutDir, _ = filepath.Abs(v)
	}
	// Sizes: full mode is about 5-10 s per producer run on a 2-core machine, so
	// that 3 repetitions of everything fit in ~20 minutes.
	s.N = int(envInt("BENCH_N", 3))
	if s.Quick {
		s.Records1K = envInt("BENCH_RECORDS_1K", 20000)
		s.Records100 = envInt("BENCH_RECORDS_100B", 50000)
		s.E2ERecords = int(envInt("BENCH_E2E_RECORDS", 500))
		s.ClusterRecords = envInt("BENCH_CLUSTER_RECORDS", 20000)
		s.ToolTimeout = 2 * time.Minute
		if os.Getenv("BENCH_N") == "" {
			s.N = 1
		}
	} else {
		s.Records1K = envInt("BENCH_RECORDS_1K", 400000)
		s.Records100 = envInt("BENCH_RECORDS_100B", 2000000)
		s.E2ERecords = int(envInt("BENCH_E2E_RECORDS", 5000))
		s.ClusterRecords = envInt("BENCH_CLUSTER_RECORDS", 400000)
		s.ToolTimeout = 5 * time.Minute
	}
	s.ClusterKafkaHeap = os.Getenv("BENCH_CLUSTER_KAFKA_HEAP")
	if s.ClusterKafkaHeap == "" {
		s.ClusterKafkaHeap = "-Xmx384m -Xms384m"
	}
	s.WaitQuiet = time.Duration(envInt("BENCH_WAIT_QUIET", 0)) * time.Second
	if v := os.Getenv("BENCH_SCENARIOS"); v != "" {
		s.Only = regexp.MustCompile(v)
	}
	if v := os.Getenv("BENCH_PROFILE"); v != "" && v != "0" {
		if v == "1" || v == "default" {
			v = "produce-1k-acks1-p8,fetch-1k-p8"
		}
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				s.Profile = append(s.Profile, id)
			}
		}
	}
	return s
}

func main() {
	log.SetFlags(log.Ltime)
	log.SetPrefix("bench: ")
	s := loadSettings()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	tmp, err := os.MkdirTemp(s.TmpBase, "kgo-bench-")
	if err != nil {
		log.Fatal(err)
	}
	if s.Keep {
		log.Printf("temp dir (kept): %s", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	if err := os.MkdirAll(s.OutDir, 0o755); err != nil {
		log.Fatal(err)
	}

	if f := os.Getenv("BENCH_RERENDER"); f != "" {
		// Rewrite the Markdown and the chart from a results JSON (no measuring).
		b, err := os.ReadFile(f)
		if err != nil {
			log.Fatal(err)
		}
		var rp report
		if err := json.Unmarshal(b, &rp); err != nil {
			log.Fatal(err)
		}
		if err := writeReport(s, &rp); err != nil {
			log.Fatal(err)
		}
		return
	}
	if v := os.Getenv("BENCH_SCALE"); v != "" && v != "0" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			log.Fatalf("BENCH_SCALE=%q: want a number of partitions", v)
		}
		if err := runScale(ctx, s, tmp, n); err != nil {
			log.Fatal(err)
		}
		fmt.Println(filepath.Join(s.OutDir, "scale-latest.md"))
		return
	}
	if v := os.Getenv("BENCH_CONNS"); v != "" && v != "0" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			log.Fatalf("BENCH_CONNS=%q: want a number of connections", v)
		}
		if err := runConns(ctx, s, tmp, n); err != nil {
			log.Fatal(err)
		}
		fmt.Println(filepath.Join(s.OutDir, "conns-latest.md"))
		return
	}
	if v := os.Getenv("BENCH_CLUSTER"); v != "" && v != "0" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			log.Fatalf("BENCH_CLUSTER=%q: want a number of nodes", v)
		}
		// Not log.Fatal, which would skip the deferred removal of the temp
		// dir: remove it here (the nodes are stopped when runCluster returns).
		if err := runCluster(ctx, s, tmp, n); err != nil {
			log.Printf("cluster: %v", err)
			if !s.Keep {
				os.RemoveAll(tmp)
			}
			os.Exit(1)
		}
		md, _ := clusterReportPaths(s)
		fmt.Println(md)
		return
	}
	if len(s.Profile) > 0 {
		if err := runProfiles(ctx, s, tmp); err != nil {
			log.Printf("profile: %v", err)
			os.Exit(1)
		}
		return
	}
	rep, err := runComparison(ctx, s, tmp)
	if err != nil {
		log.Printf("%v", err)
		os.Exit(1)
	}
	if err := writeReport(s, rep); err != nil {
		log.Printf("report: %v", err)
		os.Exit(1)
	}
	if s.Quick {
		fmt.Println(filepath.Join(s.OutDir, "latest-quick.md"))
	} else {
		fmt.Println(filepath.Join(s.OutDir, "latest.md"))
	}
}
