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
