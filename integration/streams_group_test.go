//go:build integration

package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// streamsOverrides are the broker settings of the streams group tests: a
// dead instance's member leaves after 6 s and heartbeats come every second
// (Kafka's defaults and minimums are 45 s and 5 s), and the first
// assignment is not delayed (Kafka's default waits 3 s).
func streamsOverrides(extra map[string]string) map[string]string {
	o := map[string]string{
		"group.streams.initial.rebalance.delay.ms": "0",
		"group.streams.min.session.timeout.ms":     "6000",
		"group.streams.session.timeout.ms":         "6000",
		"group.streams.min.heartbeat.interval.ms":  "1000",
		"group.streams.heartbeat.interval.ms":      "1000",
	}
	for k, v := range txnOverrides(extra) {
		o[k] = v
	}
	return o
}

// requireStreamsAPIs fails the test now, with a clear message, unless the
// broker at addr advertises the streams group APIs (KIP-1071) and finalizes
// streams.version >= 1; without them a Streams app with
// group.protocol=streams would only retry until the test timed out.
func requireStreamsAPIs(t testing.TB, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := protocol.Dial(ctx, addr, "kgo-it-streams")
	if err != nil {
		t.Fatalf("ApiVersions from %s: %v", addr, err)
	}
	defer cl.Close()
	var missing []string
	for _, k := range []int16{kmsg.StreamsGroupHeartbeat.Int16(), kmsg.StreamsGroupDescribe.Int16()} {
		if _, _, ok := cl.Versions(k); !ok {
			missing = append(missing, fmt.Sprintf("%s (%d)", kmsg.NameForKey(k), k))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("the broker at %s does not support streams groups (KIP-1071): its ApiVersions lacks %s", addr, strings.Join(missing, ", "))
	}
	// A group that does not exist: Kafka answers GROUP_ID_NOT_FOUND; a
	// broker that advertises the API but has no streams groups says so here.
	// franz-go finds the coordinator (creating __consumer_offsets); it is
	// retried while the coordinator loads.
	kcl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	awaitCoordinator(t, kcl, "it-streams-probe")
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{"it-streams-probe"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := req.RequestWith(rctx, kcl)
		rcancel()
		if err != nil {
			t.Fatalf("StreamsGroupDescribe to %s: %v", addr, err)
		}
		if len(resp.Groups) == 1 && resp.Groups[0].ErrorCode == kerr.GroupIDNotFound.Code {
			return
		}
		retriable := len(resp.Groups) == 1 && (resp.Groups[0].ErrorCode == kerr.NotCoordinator.Code ||
			resp.Groups[0].ErrorCode == kerr.CoordinatorNotAvailable.Code || resp.Groups[0].ErrorCode == kerr.CoordinatorLoadInProgress.Code)
		if !retriable || time.Now().After(deadline) {
			t.Fatalf("the broker at %s does not support streams groups (KIP-1071): StreamsGroupDescribe of an unknown group answered %s, want GROUP_ID_NOT_FOUND",
				addr, describeAnswer(resp))
		}
		time.Sleep(200 * time.Millisecond) // the coordinator's load has no event to await
	}
}

func describeAnswer(resp *kmsg.StreamsGroupDescribeResponse) string {
	var parts []string
	for _, g := range resp.Groups {
		msg := "<null>"
		if g.ErrorMessage != nil {
			msg = fmt.Sprintf("%q", *g.ErrorMessage)
		}
		parts = append(parts, fmt.Sprintf("group %s error %d (%v) message %s", g.Group, g.ErrorCode, kerr.ErrorForCode(g.ErrorCode), msg))
	}
	if len(parts) == 0 {
		return "no groups"
	}
	return strings.Join(parts, "; ")
}

// awaitCoordinator waits until FindCoordinator names a coordinator for
// group (the first one creates __consumer_offsets); franz-go 1.22 does not
// route the streams group requests to the coordinator by itself.
func awaitCoordinator(t testing.TB, cl *kgo.Client, group string) {
	t.Helper()
	waitFor(t, 60*time.Second, "a coordinator for group "+group, func() error {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = group, []string{group}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		code := resp.ErrorCode
		if len(resp.Coordinators) > 0 {
			code = resp.Coordinators[0].ErrorCode
		}
		return kerr.ErrorForCode(code)
	})
}
