//go:build integration

package integration

// TestReassignUnderLoad (issue 15): an RF=3, min.insync.replicas=2 topic
// moved from brokers {1,2,3} to {2,3,4} with kafka-reassign-partitions.sh
// --execute --throttle while the fault suite's workload (an acks=all
// idempotent producer and two consumers, faults_workload_test.go) writes to
// every partition. Each partition starts with a backlog the new replica on
// broker 4 must copy; --throttle sets the leader and follower throttles of
// every broker involved (ReassignPartitionsCommand), and broker 4's follower
// quota is the bound of that copy. What must hold, as on Apache Kafka 4.4:
// no acknowledged record lost, duplicated or reordered; every replica of
// every partition byte-identical at the end; the copy's steady byte rate
// within 20% of the throttle; --verify clears the throttles; broker 1's
// removed replicas are deleted.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestReassignUnderLoad(t *testing.T) {
	requireKafkaTools(t)
	const (
		topic    = "it-reassign-load"
		parts    = 3
		backlog  = 4 << 20 // bytes per partition before the move
		throttle = 1000000 // bytes/s, --throttle
	)
	c := StartCluster(t, ClusterOptions{Combined: 3, Brokers: 1, Overrides: map[string]string{
		"replica.lag.time.max.ms":     "5000",
		"replica.fetch.backoff.ms":    "200",
		"log.segment.delete.delay.ms": "1000",
		// Fetches of 128 KiB per partition instead of 1 MiB, so that the
		// copy advances in steps small enough to measure its rate.
		"replica.fetch.max.bytes": "131072",
	}})
	cl := c.Client(nil)
	adm := kadm.NewClient(cl)

	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p := int32(0); p < parts; p++ {
		replicas := []int32{1, 2, 3}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{
			Partition: p, Replicas: append(replicas[p:], replicas[:p]...)})
	}
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 30*time.Second), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	w := newWorkload(t, c, topic, parts)
	waitFor(t, 60*time.Second, topic+" to have a full ISR", func() error { return w.replicasAre([]int32{1, 2, 3}) })

	// The backlog: incompressible 64 KiB records the workload's checker skips.
	fill := c.Client(nil, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(80<<10)) // a batch per record: a fetch returns at least one whole batch
	var recs []*kgo.Record
	for p := int32(0); p < parts; p++ {
		for i := 0; i < backlog/(64<<10); i++ {
			recs = append(recs, &kgo.Record{Partition: p, Value: append([]byte(workloadFillPrefix), randomBytes(64<<10)...)})
		}
	}
	if err := fill.ProduceSync(ctxT(t, 2*time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("backlog: %v", err)
	}
	fill.Close()

	w.Start()
	waitFor(t, 30*time.Second, "the workload's first acknowledgements", func() error {
		if _, ok := w.resumedAfter([]int32{0, 1, 2}, time.Now().Add(-time.Second)); !ok {
			return fmt.Errorf("no partition acknowledged yet")
		}
		return nil
	})

	tool := func(args ...string) ToolResult {
		return KafkaTool(t, RunOpts{Timeout: 120 * time.Second}, "kafka-reassign-partitions.sh",
			append([]string{"--bootstrap-server", c.Node(2).Addr}, args...)...)
	}
	var plan strings.Builder
	plan.WriteString(`{"version":1,"partitions":[`)
	for p := 0; p < parts; p++ {
		if p > 0 {
			plan.WriteString(",")
		}
		fmt.Fprintf(&plan, `{"topic":%q,"partition":%d,"replicas":[2,3,4]}`, topic, p)
	}
	plan.WriteString("]}")
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(plan.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if r := tool("--execute", "--reassignment-json-file", planFile, "--throttle", fmt.Sprint(throttle)); r.ExitCode != 0 ||
		!strings.Contains(r.Stdout, "Successfully started partition reassignment") {
		t.Fatalf("--execute:\n%s", r)
	}

	// Broker 4's copy, sampled from DescribeLogDirs until the move is done.
	type sample struct {
		at    time.Duration
		bytes int64
	}
	var samples []sample
	waitFor(t, 3*time.Minute, "the reassignment to complete", func() error {
		if dirs, err := adm.DescribeBrokerLogDirs(ctxT(t, 10*time.Second), 4, nil); err == nil {
			var n int64
			dirs.EachPartition(func(p kadm.DescribedLogDirPartition) {
				if p.Topic == topic {
					n += p.Size
				}
			})
			samples = append(samples, sample{time.Since(started), n})
		}
		return w.replicasAre([]int32{2, 3, 4})
	})
	took := time.Since(started)
	copied := samples[len(samples)-1].bytes
	// The steady rate: between a tenth and nine tenths of the copy, past
	// the first fetch (up to replica.fetch.max.bytes per partition before
	// the quota sees anything) and before the tail.
	var lo, hi sample
	for _, s := range samples {
		if lo.at == 0 && s.bytes >= copied/10 {
			lo = s
		}
		if s.bytes <= copied*9/10 {
			hi = s
		}
	}
	if copied < parts*backlog || hi.at <= lo.at {
		t.Logf("broker 4's copy (time since --execute, bytes): %v", samples)
		t.Fatalf("too few samples of broker 4's copy to measure a rate: %v", samples)
	}
	steady := float64(hi.bytes-lo.bytes) / (hi.at - lo.at).Seconds()
	t.Logf("MEASURE reassignment of %d partitions (%d bytes to broker 4) under load at --throttle %d B/s: done after %v, overall %.0f B/s, steady %.0f B/s (%.2fx the throttle)",
		parts, copied, throttle, took.Round(time.Millisecond), float64(copied)/took.Seconds(), steady, steady/throttle)
	// The throttle must hold (at most 20% over) for both; the lower bound
	// (the copy not slower than 80% of it) is kgo-broker's own: Apache Kafka
	// 4.4 on the 2-core test machine copied at 0.49x with these 128 KiB
	// fetches, bound by its fetch round trips rather than by the quota.
	low := 0.8 * throttle
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		low = 0
	}
	if steady < low || steady > 1.2*throttle {
		t.Logf("broker 4's copy (time since --execute, bytes): %v", samples)
		t.Errorf("steady copy rate %.0f B/s is not within [%.0f, %.0f] B/s (the throttle %d B/s)", steady, low, 1.2*throttle, throttle)
	}

	waitFor(t, 60*time.Second, "--verify to report completion and clear the throttles", func() error {
		r := tool("--verify", "--reassignment-json-file", planFile)
		if r.ExitCode != 0 || !strings.Contains(r.Stdout, "Clearing broker-level throttles") {
			return fmt.Errorf("--verify:\n%s", r)
		}
		return nil
	})
	waitFor(t, 60*time.Second, "broker 1 to delete its removed replicas", func() error {
		ents, err := os.ReadDir(c.Node(1).DataDir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), topic+"-") {
				return fmt.Errorf("%s is still in %s", e.Name(), c.Node(1).DataDir)
			}
		}
		return nil
	})

	// Writes acknowledged by the new replicas on every partition, then the checks.
	moved := time.Now()
	waitFor(t, 30*time.Second, "acknowledgements after the move", func() error {
		if _, ok := w.resumedAfter([]int32{0, 1, 2}, moved); !ok {
			return fmt.Errorf("not every partition acknowledged a record enqueued after the move")
		}
		return nil
	})
	res := w.Check(t)
	t.Logf("CHECK: %d acknowledged, %d failed, %d unacknowledged; lost %d, duplicated %d, reordered %d, offset mismatch %d, phantom reads %d, consumer rewinds %d, diverged replicas %d, lagging replicas %d",
		res.Acked, res.Failed, res.Unacked, res.Lost, res.Duplicated, res.Reordered, res.OffsetMismatch, res.PhantomReads, res.ConsumerRewinds, res.DivergedReplicas, res.LaggingReplicas)
	for _, n := range res.Notes {
		t.Logf("  %s", n)
	}
	if res.Lost+res.Duplicated+res.Reordered+res.OffsetMismatch+res.PhantomReads+res.ConsumerRewinds != 0 || res.DivergedReplicas != 0 || res.LaggingReplicas != 0 {
		t.Errorf("the checks failed (see CHECK above)")
	}
	if res.Acked == 0 || res.Failed != 0 {
		t.Errorf("%d acknowledged, %d failed sends: want some and none", res.Acked, res.Failed)
	}
}

// replicasAre is nil once every partition of the workload's topic has
// exactly these replicas, all in the ISR.
func (w *workload) replicasAre(want []int32) error {
	st, err := topicState(w.c.BrokerAddrs()[1], w.topic)
	if err != nil {
		return err
	}
	if len(st) != w.parts {
		return fmt.Errorf("%d partitions", len(st))
	}
	for p, s := range st {
		if !slices.Equal(slices.Sorted(slices.Values(s.replicas)), want) || !slices.Equal(slices.Sorted(slices.Values(s.isr)), want) {
			return fmt.Errorf("%s-%d: replicas %v isr %v, want %v", w.topic, p, s.replicas, s.isr, want)
		}
	}
	return nil
}
