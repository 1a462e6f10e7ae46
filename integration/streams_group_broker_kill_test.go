//go:build integration

package integration

// Streams groups (KIP-1071) across a kill -9 of the broker: the Kafka
// Streams 4.4 app of streams_test.go with group.protocol=streams (its
// internal topics created by the broker from the heartbeat's
// MISSING_INTERNAL_TOPICS) counts the input exactly before and after. The
// app's own kill and the broker's task moves are in streams_group_test.go.

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStreamsGroupProtocolBrokerKill: the broker is killed (kill -9) and
// restarted under a running app; the coordinator rebuilds the streams group
// from __consumer_offsets and the app goes on with exact counts.
func TestStreamsGroupProtocolBrokerKill(t *testing.T) {
	t.Parallel()
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
