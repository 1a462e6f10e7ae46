package main

// Scale mode (BENCH_SCALE=<partitions>, issue 16): one node of each broker
// with that many partitions (topics of 1,000 partitions, RF 1), one after the
// other: the time to create them (CreateTopics until Metadata names a leader
// for every partition, and until DescribeLogDirs lists a log for every one:
// both brokers name leaders before the logs exist), idle RSS and RSS per
// partition, idle CPU once every log exists, the time a
// restarted node takes to replay its metadata and logs and serve again (exec
// until a Metadata response names a leader for every partition), and produce
// throughput spread over 1,000 partitions (the load generator). Writes
// scale-latest.{md,json} in the results dir.

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

type scaleResult struct {
	Partitions     int
	CreateSeconds  float64
	LogsSeconds    float64 // CreateTopics until every partition's log exists
	BaseRSS        int64   // bytes, idle before the topics
	IdleRSS        int64   // bytes, idle with them
	IdleCPU        float64
	IdleSeconds    float64
	RestartSeconds float64
	SpreadRecPerS  float64
	SpreadMBPerS   float64
	SpreadP99Ms    float64
	SpreadCPUPerGB float64
	Err            string
}

func (r scaleResult) RSSPerPartition() float64 {
	return float64(r.IdleRSS-r.BaseRSS) / float64(r.Partitions)
}

const scaleTopicSize = 1000

// leadersReady reports how many partitions of topics with the prefix have a leader.
func leadersReady(ctx context.Context, adm *kadm.Client, prefix string) (int, error) {
	md, err := adm.Metadata(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, t := range md.Topics {
		if !strings.HasPrefix(t.Topic, prefix) {
			continue
		}
		for _, p := range t.Partitions {
			if p.Err == nil && p.Leader >= 0 {
				n++
			}
		}
	}
	return n, nil
}

// logsReady reports how many partitions of topics with the prefix have a
// log on the broker (DescribeLogDirs).
func logsReady(ctx context.Context, adm *kadm.Client, prefix string) (int, error) {
	ds, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		return 0, err
	}
	n := 0
	ds.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if strings.HasPrefix(p.Topic, prefix) {
				n++
			}
		})
	})
	return n, nil
}

func waitLogs(ctx context.Context, b *broker, prefix string, want int, timeout time.Duration) error {
	return waitCount(ctx, b, "with a log", want, timeout, func(adm *kadm.Client) (int, error) { return logsReady(ctx, adm, prefix) })
}

func waitLeaders(ctx context.Context, b *broker, prefix string, want int, timeout time.Duration) error {
	return waitCount(ctx, b, "with a leader", want, timeout, func(adm *kadm.Client) (int, error) { return leadersReady(ctx, adm, prefix) })
}

func waitCount(ctx context.Context, b *broker, what string, want int, timeout time.Duration, count func(*kadm.Client) (int, error)) error {
	cl, adm, err := admin(b)
	if err != nil {
		return err
	}
	defer cl.Close()
	deadline := time.Now().Add(timeout)
	for {
		n, err := count(adm)
		if err == nil && n >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d partitions %s after %v (%v)", n, want, what, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func runScaleOne(ctx context.Context, s settings, k kind, dir string, partitions int) (r scaleResult) {
	r.Partitions = partitions
	b, err := newBroker(s, k, dir)
	if err == nil {
		err = b.format(ctx, s)
	}
	if err == nil {
		err = b.start(ctx, s)
	}
	defer b.stop()
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.BaseRSS = b.IdleRSS

	cl, adm, err := admin(b)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	t0 := time.Now()
	for i := 0; i*scaleTopicSize < partitions; i++ {
		n := min(scaleTopicSize, partitions-i*scaleTopicSize)
		rs, err := adm.CreateTopics(ctx, int32(n), 1, nil, fmt.Sprintf("scale-%05d", i))
		if err == nil {
			err = rs.Error()
		}
		if err != nil {
			cl.Close()
			r.Err = "create: " + err.Error()
			return r
		}
	}
	cl.Close()
	if err := waitLeaders(ctx, b, "scale-", partitions, 30*time.Minute); err != nil {
		r.Err = err.Error()
		return r
	}
	r.CreateSeconds = time.Since(t0).Seconds()
	if err := waitLogs(ctx, b, "scale-", partitions, 30*time.Minute); err != nil {
		r.Err = err.Error()
		return r
	}
	r.LogsSeconds = time.Since(t0).Seconds()

	// Idle: every log exists; let the JIT and the first checkpoints settle, then 30 s.
	time.Sleep(10 * time.Second)
	before, err := readProc(b.Pid())
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.IdleSeconds = 30
	time.Sleep(30 * time.Second)
	after, err := readProc(b.Pid())
	if err != nil {
		r.Err = err.Error()
		return r
	}
	r.IdleCPU, r.IdleRSS = after.CPU-before.CPU, after.RSS

	// Restart: a graceful stop, then exec until every partition has a leader.
	b.stop()
	b.SkipIdleRSS = true
	t1 := time.Now()
	if err := b.start(ctx, s); err != nil {
		r.Err = "restart: " + err.Error()
		return r
	}
	if err := waitLeaders(ctx, b, "scale-", partitions, 30*time.Minute); err != nil {
		r.Err = "restart: " + err.Error()
		return r
	}
	r.RestartSeconds = time.Since(t1).Seconds()

	// Produce spread over 1,000 partitions of one topic.
	st0, _ := readProc(b.Pid())
	g, err := runGen(ctx, genOpts{Seeds: []string{b.Addr}, Topic: "scale-00000", Size: 1024, Acks: "1", Clients: 4,
		Records: s.Records1K * 2, Timeout: s.ToolTimeout})
	if err != nil {
		r.Err = "spread produce: " + err.Error()
		return r
	}
	st1, _ := readProc(b.Pid())
	r.SpreadRecPerS = float64(g.Records) / g.Wall.Seconds()
	r.SpreadMBPerS = float64(g.Bytes) / g.Wall.Seconds() / (1 << 20)
	r.SpreadP99Ms = ms(g.Ack, 99)
	r.SpreadCPUPerGB = (st1.CPU - st0.CPU) / (float64(g.Bytes) / 1e9)
	return r
}

func runScale(ctx context.Context, s settings, tmp string, partitions int) error {
	res := map[kind]scaleResult{}
	started := time.Now()
	load0 := loadAvg()
	for _, k := range []kind{kafka, kgo} {
		log.Printf("scale: %s with %d partitions", k.Title(), partitions)
		r := runScaleOne(ctx, s, k, filepath.Join(tmp, "scale-"+string(k)), partitions)
		if r.Err != "" {
			log.Printf("scale: %s: %s", k.Title(), r.Err)
		} else {
			log.Printf("scale: %s: create %.1f s (logs %.1f s), idle RSS %.0f MiB (%.1f KiB/partition), idle CPU %.2f s in %.0f s, restart %.1f s, spread %.0f rec/s",
				k.Title(), r.CreateSeconds, r.LogsSeconds, mib(r.IdleRSS), r.RSSPerPartition()/1024, r.IdleCPU, r.IdleSeconds, r.RestartSeconds, r.SpreadRecPerS)
		}
		res[k] = r
		if !s.Keep {
			_ = os.RemoveAll(filepath.Join(tmp, "scale-"+string(k)))
		}
	}
	var w strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&w, f, a...) }
	a, g := res[kafka], res[kgo]
	p("# Scale: %d partitions on one node (RF 1, topics of %d partitions)\n\n", partitions, scaleTopicSize)
	p("%s, load average %s at the start, %s at the end; Apache Kafka heap %s. `BENCH_SCALE=%d make bench`.\n\n",
		started.UTC().Format("2006-01-02 15:04 UTC"), load0, loadAvg(), s.KafkaHeap, partitions)
	if a.Err != "" || g.Err != "" {
		p("Errors: Apache Kafka: %s; kgo-broker: %s\n\n", orDash(a.Err), orDash(g.Err))
	}
	p("| Metric | Apache Kafka | kgo-broker | kgo/kafka |\n|---|--:|--:|--:|\n")
	row := func(name string, x, y float64) {
		p("| %s | %s | %s | %s |\n", name, fmtNum(x), fmtNum(y), fmtRatio(ratio(y, x)))
	}
	row("create: CreateTopics until every partition has a leader, s", a.CreateSeconds, g.CreateSeconds)
	row("create: CreateTopics until every partition's log exists (DescribeLogDirs), s", a.LogsSeconds, g.LogsSeconds)
	row("idle RSS before the topics, MiB", mib(a.BaseRSS), mib(g.BaseRSS))
	row("idle RSS with them, MiB", mib(a.IdleRSS), mib(g.IdleRSS))
	row("RSS per partition, KiB", a.RSSPerPartition()/1024, g.RSSPerPartition()/1024)
	row("idle CPU, s per 30 s", a.IdleCPU, g.IdleCPU)
	row("restart: exec until every partition has a leader, s", a.RestartSeconds, g.RestartSeconds)
	row("produce 1 KiB acks=1 over 1,000 partitions (4 franz-go producers), rec/s", a.SpreadRecPerS, g.SpreadRecPerS)
	row("  its send-to-ack p99, ms", a.SpreadP99Ms, g.SpreadP99Ms)
	row("  broker CPU, s/GB", a.SpreadCPUPerGB, g.SpreadCPUPerGB)
	p("\nRSS per partition is (idle RSS with the topics - idle RSS before) / partitions. Kafka's RSS includes its JVM heap as far as it was touched.\n")
	if err := os.WriteFile(filepath.Join(s.OutDir, "scale-latest.md"), []byte(w.String()), 0o644); err != nil {
		return err
	}
	js, _ := json.MarshalIndent(map[string]any{"started": started, "partitions": partitions, "results": res}, "", "  ")
	return os.WriteFile(filepath.Join(s.OutDir, "scale-latest.json"), js, 0o644)
}
