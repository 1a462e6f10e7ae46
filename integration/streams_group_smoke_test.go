//go:build integration

package integration

// A quick check of streams groups (KIP-1071) on kgo-broker: the Kafka
// Streams 4.4 app of streams_test.go with group.protocol=streams reaches
// RUNNING, its internal topics are created by the broker (the heartbeat's
// MISSING_INTERNAL_TOPICS), and it counts the input exactly.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestStreamsGroupProtocolSmoke(t *testing.T) {
	b := startTxnBroker(t, nil)
	app := "it-streams-protocol"
	in, out := app+"-in", app+"-out"
	createTopic(t, b, in, 3, nil)
	createTopic(t, b, out, 2, nil)
	w := watchCounts(t, b.Addr, out)
	start := time.Now()
	p := startJava(t, "384m", "StreamsCount", "bootstrap="+b.Addr, "app="+app, "in="+in, "out="+out,
		"state="+t.TempDir(), "s.group.protocol=streams")
	p.WaitEvent(120*time.Second, "the Streams app to reach RUNNING", func(e JavaEvent) bool {
		return e.Str("event") == "state" && e.Str("state") == "RUNNING"
	})
	t.Logf("Streams app (group.protocol=streams) RUNNING after %v", time.Since(start).Round(100*time.Millisecond))
	pcl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100))
	produceWords(t, pcl, in, 0)
	w.waitTotal(t, streamsPhase, 120*time.Second, p)
	produceWords(t, pcl, in, 1)
	produceWords(t, pcl, in, 2)
	w.waitTotal(t, 3*streamsPhase, 120*time.Second, p)
	t.Logf("3000 input records counted %v after the start", time.Since(start).Round(100*time.Millisecond))
	w.check(t, 3*streamsPhase/streamsWords)
	for _, e := range eventsOf(p.Events(), "error") {
		t.Errorf("the Streams app reported: %s", e)
	}
}

// TestStreamsGroupProtocolTwoInstances: a second instance joins while the
// first processes, the tasks move between them (revoked by one before the
// other gets them), then the first closes cleanly and the second takes
// everything; under exactly-once the counts stay exact throughout.
func TestStreamsGroupProtocolTwoInstances(t *testing.T) {
	b := startTxnBroker(t, nil)
	app := "it-streams-protocol-2"
	in, out := app+"-in", app+"-out"
	createTopic(t, b, in, 4, nil)
	createTopic(t, b, out, 2, nil)
	w := watchCounts(t, b.Addr, out)
	start := func() *bgProc {
		p := startJava(t, "384m", "StreamsCount", "bootstrap="+b.Addr, "app="+app, "in="+in, "out="+out,
			"state="+t.TempDir(), "s.group.protocol=streams")
		p.WaitEvent(120*time.Second, "the Streams app to reach RUNNING", func(e JavaEvent) bool {
			return e.Str("event") == "state" && e.Str("state") == "RUNNING"
		})
		return p
	}
	p1 := start()
	pcl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100))
	produceWords(t, pcl, in, 0)
	w.waitTotal(t, streamsPhase, 120*time.Second, p1)
	p2 := start()
	produceWords(t, pcl, in, 1)
	w.waitTotal(t, 2*streamsPhase, 120*time.Second, p2)
	// Both members hold tasks once the group is stable.
	cl := b.Client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{app}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		g := resp.Groups[0]
		var held []int
		for _, m := range g.Members {
			n := 0
			for _, ts := range m.Assignment.ActiveTasks {
				n += len(ts.Partitions)
			}
			held = append(held, n)
		}
		if g.State == "Stable" && len(held) == 2 && held[0] > 0 && held[1] > 0 {
			t.Logf("group %s: %s at epoch %d, active tasks per member %v", app, g.State, g.Epoch, held)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s: %s (error %d), active tasks per member %v", app, g.State, g.ErrorCode, held)
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Kafka's tool lists and describes the group.
	for _, args := range [][]string{{"--list"}, {"--describe", "--group", app}, {"--describe", "--group", app, "--members"},
		{"--describe", "--group", app, "--offsets"}, {"--describe", "--group", app, "--state"}} {
		res := MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-streams-groups.sh",
			append([]string{"--bootstrap-server", b.Addr}, args...)...)
		t.Logf("kafka-streams-groups.sh %v:\n%s", args, res.Stdout)
	}
	p1.Stop()
	produceWords(t, pcl, in, 2)
	w.waitTotal(t, 3*streamsPhase, 120*time.Second, p2)
	w.check(t, 3*streamsPhase/streamsWords)
	for _, p := range []*bgProc{p1, p2} {
		for _, e := range eventsOf(p.Events(), "error") {
			t.Errorf("a Streams app reported: %s", e)
		}
	}
}

// TestStreamsGroupProtocolBrokerKill: the broker is killed (kill -9) and
// restarted under a running app; the coordinator rebuilds the streams group
// from __consumer_offsets and the app goes on with exact counts.
func TestStreamsGroupProtocolBrokerKill(t *testing.T) {
	b := startTxnBroker(t, nil)
	app := "it-streams-protocol-kill"
	in, out := app+"-in", app+"-out"
	createTopic(t, b, in, 3, nil)
	createTopic(t, b, out, 2, nil)
	w := watchCounts(t, b.Addr, out)
	p := startJava(t, "384m", "StreamsCount", "bootstrap="+b.Addr, "app="+app, "in="+in, "out="+out,
		"state="+t.TempDir(), "s.group.protocol=streams")
	p.WaitEvent(120*time.Second, "the Streams app to reach RUNNING", func(e JavaEvent) bool {
		return e.Str("event") == "state" && e.Str("state") == "RUNNING"
	})
	pcl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100), kgo.RecordDeliveryTimeout(120*time.Second))
	produceWords(t, pcl, in, 0)
	w.waitTotal(t, streamsPhase, 120*time.Second, p)
	b.Kill()
	b.Start()
	b.WaitReady()
	produceWords(t, pcl, in, 1)
	produceWords(t, pcl, in, 2)
	w.waitTotal(t, 3*streamsPhase, 180*time.Second, p)
	w.check(t, 3*streamsPhase/streamsWords)
	for _, e := range eventsOf(p.Events(), "error") {
		t.Logf("the Streams app reported (thread replaced): %s", e)
	}
}
