//go:build integration

package integration

// Kafka Streams 4.4 with group.protocol=streams (KIP-1071, a streams group:
// the broker assigns the tasks) against the broker: two instances of
// integration/java/StreamsCount.java (re-key -> repartition -> count() in a
// changelogged store, exactly_once_v2) share the six tasks and the standbys
// of the stateful ones; one is killed with SIGKILL and restarted; the counts
// stay exact and the broker moves the tasks, as kafka-streams-groups.sh
// --describe --members shows.

import (
	"context"
	"fmt"
	"slices"
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

// quickToolJVM is for the short-lived admin tools the streams group tests
// run many times: a client-only JVM (C1, serial GC) needs about a third less
// CPU to start than kafka-run-class.sh's server flags, on a loaded 2-core box.
var quickToolJVM = RunOpts{Timeout: 60 * time.Second, Env: []string{
	"KAFKA_JVM_PERFORMANCE_OPTS=-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"}}

// streamsGroupsTool runs kafka-streams-groups.sh against b (its main class:
// scripts/kafka-tool has no entry for the script).
func streamsGroupsTool(t testing.TB, b *Broker, args ...string) ToolResult {
	t.Helper()
	return KafkaTool(t, quickToolJVM, "org.apache.kafka.tools.streams.StreamsGroupCommand",
		append([]string{"--bootstrap-server", b.Addr}, args...)...)
}

// streamsMember is one row of kafka-streams-groups.sh --describe --members.
type streamsMember struct {
	ID, Process, ClientID string
	Active, Standby       []string // tasks as "<subtopology>_<partition>"
}

// streamsMembers parses kafka-streams-groups.sh --describe --members (not
// --verbose): GROUP MEMBER PROCESS CLIENT-ID ASSIGNMENTS, the assignments
// as "ACTIVE: 0:[1]; 1:[0,2]; STANDBY: ...".
func streamsMembers(out, group string) []streamsMember {
	var ms []streamsMember
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) < 4 || f[0] != group {
			continue
		}
		m := streamsMember{ID: f[1], Process: f[2], ClientID: f[3]}
		var into *[]string
		for _, tok := range f[4:] {
			switch tok {
			case "ACTIVE:":
				into = &m.Active
				continue
			case "STANDBY:":
				into = &m.Standby
				continue
			}
			if strings.HasSuffix(tok, ":") { // WARMUP:, TARGET-...: not parsed
				into = nil
				continue
			}
			sub, parts, ok := strings.Cut(strings.TrimSuffix(tok, ";"), ":")
			if !ok || into == nil {
				continue
			}
			for _, p := range strings.Split(strings.Trim(parts, "[]"), ",") {
				if p != "" {
					*into = append(*into, sub+"_"+p)
				}
			}
		}
		ms = append(ms, m)
	}
	return ms
}

// awaitStreamsAssignment waits until the group's members are exactly the
// instances whose consumers' client ids start with clients, each holds at
// least one active task, and together they hold each of the tasks
// (<subtopology>_<partition>) once. With stateful tasks given (the group's
// num.standby.replicas is 1), each of those also has one standby, on
// another member than its active one, when there are two members or more,
// and none with one; the stateless tasks have none.
func awaitStreamsAssignment(t *testing.T, b *Broker, group string, tasks, stateful []string, clients ...string) []streamsMember {
	t.Helper()
	var ms []streamsMember
	waitFor(t, 120*time.Second, fmt.Sprintf("group %s: %d members (%s) holding the %d tasks", group, len(clients), strings.Join(clients, ", "), len(tasks)), func() error {
		res := streamsGroupsTool(t, b, "--describe", "--group", group, "--members")
		ms = streamsMembers(res.Stdout, group)
		if len(ms) != len(clients) {
			return fmt.Errorf("%d members:\n%s%s", len(ms), res.Stdout, res.Stderr)
		}
		held, seen, standbys := map[string]int{}, map[int]bool{}, map[string]int{}
		for _, m := range ms {
			j := slices.IndexFunc(clients, func(c string) bool { return strings.HasPrefix(m.ClientID, c+"-StreamThread-") })
			if j < 0 || seen[j] {
				return fmt.Errorf("member %s with client id %s: not one of %v once:\n%s", m.ID, m.ClientID, clients, res.Stdout)
			}
			seen[j] = true
			if len(m.Active) == 0 {
				return fmt.Errorf("member %s (%s) holds no active task:\n%s", m.ID, m.ClientID, res.Stdout)
			}
			for _, task := range m.Active {
				held[task]++
			}
			for _, task := range m.Standby {
				standbys[task]++
				if slices.Contains(m.Active, task) {
					return fmt.Errorf("member %s (%s) holds task %s both active and standby:\n%s", m.ID, m.ClientID, task, res.Stdout)
				}
			}
		}
		if stateful != nil {
			for _, task := range tasks {
				want := 0
				if slices.Contains(stateful, task) {
					want = min(1, len(clients)-1)
				}
				if standbys[task] != want {
					return fmt.Errorf("task %s has %d standbys, want %d:\n%s", task, standbys[task], want, res.Stdout)
				}
			}
		}
		for _, task := range tasks {
			if held[task] != 1 {
				return fmt.Errorf("task %s is held %d times:\n%s", task, held[task], res.Stdout)
			}
		}
		if len(held) != len(tasks) {
			return fmt.Errorf("tasks %v held, want %v:\n%s", held, tasks, res.Stdout)
		}
		return nil
	})
	return ms
}

func memberTasks(ms []streamsMember) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s=active%v,standby%v", strings.TrimSuffix(m.ClientID, "-StreamThread-1-consumer"), m.Active, m.Standby))
	}
	return strings.Join(parts, " ")
}

// TestStreamsGroupRestart: two instances of the app with
// group.protocol=streams and exactly_once_v2 share the 6 tasks (subtopology
// 0 reads the 3 input partitions, 1 the 3 of the repartition topic, which
// the broker created); with the group's num.standby.replicas=1 each of the
// 3 stateful tasks (subtopology 1, count()'s store) has a standby on the
// other instance. While the second third of the input trickles in,
// instance b is killed with SIGKILL: once its member's session (6 s) ends,
// a holds all 6 active tasks and no standby; b is restarted on its state
// dir and both hold active tasks, and the standbys, again. Every word's committed counts are exactly 1..250: nothing
// lost, nothing counted twice.
func TestStreamsGroupRestart(t *testing.T) {
	t.Parallel()
	start := time.Now()
	b := startTxnBroker(t, streamsOverrides(map[string]string{"group.streams.num.standby.replicas": "1"}))
	requireStreamsAPIs(t, b.Addr)
	const app = "it-sg-restart"
	in, out := app+"-in", app+"-out"
	createTopic(t, b, in, 3, nil)
	createTopic(t, b, out, 2, nil)
	tasks := []string{"0_0", "0_1", "0_2", "1_0", "1_1", "1_2"}
	stateful := []string{"1_0", "1_1", "1_2"} // count()'s store; subtopology 0 has none
	w := watchCounts(t, b.Addr, out)
	stateA, stateB := t.TempDir(), t.TempDir()
	instance := func(name, state string) *bgProc {
		p := startStreamsApp(t, b.Addr, app, in, out, state, "protocol=streams", "s.client.id="+app+"-"+name)
		p.name = "StreamsCount " + name
		return p
	}
	pa := instance("a", stateA)
	pb := instance("b", stateB)
	ms := awaitStreamsAssignment(t, b, app, tasks, stateful, app+"-a", app+"-b")
	t.Logf("both instances hold tasks %v after the test's start: %s", time.Since(start).Round(time.Second), memberTasks(ms))

	pcl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100), kgo.RecordDeliveryTimeout(120*time.Second))
	produceWords(t, pcl, in, 0)
	w.waitTotal(t, streamsPhase, 120*time.Second, pa)

	// Phase 2 trickles in (25 records every 50 ms), so that b dies with
	// records in flight (an open transaction, uncommitted offsets).
	produced := trickleWords(t, pcl, in)
	w.waitTotal(t, streamsPhase+200, 120*time.Second, pa)
	pb.Kill()
	killed := time.Now()
	t.Logf("killed instance b (kill -9) at %d committed updates", w.totalNow())
	ms = awaitStreamsAssignment(t, b, app, tasks, stateful, app+"-a")
	t.Logf("instance a holds all %d tasks %v after the kill: %s", len(tasks), time.Since(killed).Round(100*time.Millisecond), memberTasks(ms))
	<-produced
	w.waitTotal(t, 2*streamsPhase, 120*time.Second, pa)

	restart := time.Now()
	pb = instance("b", stateB)
	ms = awaitStreamsAssignment(t, b, app, tasks, stateful, app+"-a", app+"-b")
	t.Logf("b back and both hold tasks %v after its restart: %s", time.Since(restart).Round(100*time.Millisecond), memberTasks(ms))

	produceWords(t, pcl, in, 2)
	w.waitTotal(t, streamsPhases*streamsPhase, 180*time.Second, pa)
	w.check(t, streamsPhases*streamsPhase/streamsWords)
	for _, p := range []*bgProc{pa, pb} {
		for _, e := range eventsOf(p.Events(), "error") {
			t.Logf("%s reported (thread replaced): %s", p.name, e)
		}
	}
	t.Logf("final counts: %s", w.last())
}
