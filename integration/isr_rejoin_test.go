//go:build integration

package integration

// A follower rejoins the ISR after leading an epoch in which it appended
// nothing (replication/fetcher.go truncateFollower, storage Log.Truncate at
// the log end offset): the sequence that once kept it out for minutes.

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// leaderAndIsr reads partition 0's leader and ISR from the broker at addr.
func leaderAndIsr(addr, topic string) (int32, []int32, error) {
	md, err := metadataFrom(addr, topic)
	if err != nil {
		return -1, nil, err
	}
	if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 1 {
		return -1, nil, fmt.Errorf("no partition 0 of %s in %+v", topic, md.Topics)
	}
	p := md.Topics[0].Partitions[0]
	isr := slices.Clone(p.ISR)
	slices.Sort(isr)
	return p.Leader, isr, nil
}

// TestReplicationIsrRejoinAfterStoppedSuccessor: on three combined nodes,
// the leader of an RF=3 partition is killed (SIGKILL) and restarted; its
// successor, before it appended anything in its epoch, is stopped
// (SIGSTOP) until another node leads and takes records; once it resumes
// (SIGCONT) it must be back in the ISR within a few seconds (Kafka 4.4:
// under a second), not minutes.
func TestReplicationIsrRejoinAfterStoppedSuccessor(t *testing.T) {
	c := StartCluster(t, ClusterOptions{Combined: 3, Overrides: map[string]string{
		"replica.lag.time.max.ms":  "5000",
		"replica.fetch.backoff.ms": "200",
	}})
	const topic = "it-isr-rejoin"
	adm := kadm.NewClient(c.Client(nil))
	cr, err := adm.CreateTopic(ctxT(t, 30*time.Second), 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLeaders(t, c, topic, 1)
	pcl := c.Client(nil, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.ProducerLinger(0))
	produce := func(prefix string, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("%s%03d", prefix, i))})
		}
		if err := pcl.ProduceSync(ctxT(t, 90*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("produce acks=all: %v", err)
		}
	}
	state := func(from *ClusterNode) (int32, []int32) {
		l, isr, err := leaderAndIsr(from.Addr, topic)
		if err != nil {
			return -1, nil
		}
		return l, isr
	}
	full := func(from *ClusterNode) error {
		if l, isr := state(from); l < 0 || !slices.Equal(isr, []int32{1, 2, 3}) {
			return fmt.Errorf("leader %d ISR %v", l, isr)
		}
		return nil
	}
	waitFor(t, 30*time.Second, "ISR 1,2,3", func() error { return full(c.Node(1)) })
	produce("a", 100)

	first, _ := state(c.Node(1))
	other := c.Node(first%3 + 1)
	c.Node(first).Kill()
	var second int32
	waitFor(t, 60*time.Second, "a new leader", func() error {
		if second, _ = state(other); second < 0 || second == first {
			return fmt.Errorf("leader %d", second)
		}
		return nil
	})
	t.Logf("killed leader %d; node %d leads", first, second)
	c.Node(first).Start()
	c.WaitNodeReady(c.Node(first), readyTimeout())
	waitFor(t, 60*time.Second, "ISR 1,2,3 after the restart", func() error { return full(other) })

	// SIGSTOP the successor before it appends anything in its epoch (its
	// process group: the reference broker runs Kafka as a child)
	stopped := c.Node(second)
	if err := syscall.Kill(-stopped.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			_ = syscall.Kill(-stopped.PID(), syscall.SIGCONT)
		}
	})
	var third int32
	live := c.Node(second%3 + 1)
	waitFor(t, 60*time.Second, "a third leader", func() error {
		var isr []int32
		if third, isr = state(live); third < 0 || third == second || slices.Contains(isr, second) {
			return fmt.Errorf("leader %d ISR %v", third, isr)
		}
		return nil
	})
	t.Logf("stopped node %d; node %d leads", second, third)
	produce("b", 100)

	if err := syscall.Kill(-stopped.PID(), syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	start := time.Now()
	waitFor(t, 30*time.Second, fmt.Sprintf("node %d back in the ISR", second), func() error { return full(live) })
	t.Logf("MEASURE node %d back in the ISR %v after SIGCONT", second, time.Since(start).Round(time.Millisecond))
	produce("c", 10)
}
