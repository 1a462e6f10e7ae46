//go:build integration

package integration

// kafka-streams-groups.sh (Apache Kafka 4.4's StreamsGroupCommand) and
// kafka-groups.sh against a streams group (KIP-1071) of a running Kafka
// Streams app: list with states, describe offsets, state and members (also
// --verbose), the refusals of --reset-offsets, --delete-offsets and
// --delete while the app runs, and all three once it has stopped, with
// Kafka 4.4's exact texts.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// streamsOffsetRows parses kafka-streams-groups.sh --describe --offsets
// --verbose: CURRENT-OFFSET and LOG-END-OFFSET and OFFSET-LAG of each
// partition of topic.
func streamsOffsetRows(out, group, topic string) map[string][3]string {
	rows := map[string][3]string{}
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) >= 7 && f[0] == group && f[1] == topic {
			rows[f[2]] = [3]string{f[3], f[5], f[6]}
		}
	}
	return rows
}

// committedOffsets is the group's committed offset of each partition of
// topic (OffsetFetch, by franz-go's admin client).
func committedOffsets(t *testing.T, b *Broker, group, topic string) map[int32]int64 {
	t.Helper()
	resp, err := b.Admin().FetchOffsets(ctxT(t, 30*time.Second), group)
	if err != nil {
		t.Fatalf("fetching the offsets of %s: %v", group, err)
	}
	got := map[int32]int64{}
	resp.Each(func(o kadm.OffsetResponse) {
		if o.Topic == topic && o.Err == nil {
			got[o.Partition] = o.At
		}
	})
	return got
}

func TestStreamsGroupsTool(t *testing.T) {
	t.Parallel()
	b := startTxnBroker(t, streamsOverrides(nil))
	requireStreamsAPIs(t, b.Addr)
	const app = "it-sg-tool"
	in, out, repartition := app+"-in", app+"-out", app+"-by-word-repartition"
	createTopic(t, b, in, 3, nil)
	createTopic(t, b, out, 2, nil)
	tasks := []string{"0_0", "0_1", "0_2", "1_0", "1_1", "1_2"}
	w := watchCounts(t, b.Addr, out)
	p := startStreamsApp(t, b.Addr, app, in, out, t.TempDir(), "protocol=streams", "s.client.id="+app+"-a")
	awaitStreamsAssignment(t, b, app, tasks, nil, app+"-a")
	produceWords(t, b.Client(), in, 0)
	w.waitTotal(t, streamsPhase, 120*time.Second, p)
	inEnd := endOffsets(t, b, in)
	log := func(what string, res ToolResult) {
		t.Helper()
		t.Logf("%s (exit %d, %v):\n%s%s", what, res.ExitCode, res.Duration.Round(100*time.Millisecond), res.Stdout, res.Stderr)
	}
	both := func(res ToolResult) string { return res.Stdout + res.Stderr }

	// --list, --list --state, and kafka-groups.sh's listing of every kind.
	res := streamsGroupsTool(t, b, "--list")
	log("--list", res)
	if res.ExitCode != 0 || !containsLine(lines(res.Stdout), app) {
		t.Errorf("--list does not list %s", app)
	}
	res = streamsGroupsTool(t, b, "--list", "--state")
	log("--list --state", res)
	if !containsFields(lines(res.Stdout), "GROUP", "STATE") || !containsFields(lines(res.Stdout), app, "Stable") {
		t.Errorf("--list --state: want the header GROUP STATE and %s Stable", app)
	}
	res = KafkaTool(t, quickToolJVM, "kafka-groups.sh", "--bootstrap-server", b.Addr, "--list")
	log("kafka-groups.sh --list", res)
	if !containsFields(lines(res.Stdout), "GROUP", "TYPE", "PROTOCOL") || !containsFields(lines(res.Stdout), app, "Streams", "streams") {
		t.Errorf("kafka-groups.sh --list: want the header GROUP TYPE PROTOCOL and %s Streams streams", app)
	}
	// --describe: the offsets (default), lag 0 once everything is
	// committed, the input partitions at their end offsets.
	waitFor(t, 60*time.Second, "--describe to show lag 0 on the 6 partitions", func() error {
		res := streamsGroupsTool(t, b, "--describe", "--group", app)
		if !containsFields(lines(res.Stdout), "GROUP", "TOPIC", "PARTITION", "OFFSET-LAG") {
			return fmt.Errorf("no header GROUP TOPIC PARTITION OFFSET-LAG:\n%s", both(res))
		}
		for _, topic := range []string{in, repartition} {
			for part := 0; part < 3; part++ {
				if !containsFields(lines(res.Stdout), app, topic, fmt.Sprint(part), "0") {
					return fmt.Errorf("no row %s %s %d 0:\n%s", app, topic, part, both(res))
				}
			}
		}
		return nil
	})
	res = streamsGroupsTool(t, b, "--describe", "--group", app, "--offsets", "--verbose")
	log("--describe --offsets --verbose", res)
	if !containsFields(lines(res.Stdout), "GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LEADER-EPOCH", "LOG-END-OFFSET", "OFFSET-LAG") {
		t.Errorf("--describe --offsets --verbose: no header GROUP TOPIC PARTITION CURRENT-OFFSET LEADER-EPOCH LOG-END-OFFSET OFFSET-LAG")
	}
	rows := streamsOffsetRows(res.Stdout, app, in)
	for part, end := range inEnd {
		e := fmt.Sprint(end)
		if rows[fmt.Sprint(part)] != [3]string{e, e, "0"} {
			t.Errorf("--describe --offsets --verbose: %s partition %d: %v, want current offset = log end offset = %d, lag 0", in, part, rows[fmt.Sprint(part)], end)
		}
	}

	// --describe --state (and --verbose): the coordinator, the sticky
	// assignor, Stable, one member.
	res = streamsGroupsTool(t, b, "--describe", "--group", app, "--state")
	log("--describe --state", res)
	if !containsFields(lines(res.Stdout), "GROUP", "COORDINATOR", "(ID)", "ASSIGNOR", "STATE", "#MEMBERS") ||
		!containsFields(lines(res.Stdout), app, b.Addr, "(1)", "sticky", "Stable", "1") {
		t.Errorf("--describe --state: want %s %s (1) sticky Stable 1", app, b.Addr)
	}
	res = streamsGroupsTool(t, b, "--describe", "--group", app, "--state", "--verbose")
	log("--describe --state --verbose", res)
	if !containsFields(lines(res.Stdout), "GROUP", "COORDINATOR", "(ID)", "ASSIGNOR", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS") {
		t.Errorf("--describe --state --verbose: no header with GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH")
	}
	var groupEpoch string
	for _, l := range lines(res.Stdout) {
		if f := strings.Fields(l); len(f) == 8 && f[0] == app {
			if f[4] != "Stable" || f[5] != f[6] || f[7] != "1" {
				t.Errorf("--describe --state --verbose: %q, want Stable, the group epoch = the target assignment epoch, 1 member", l)
			}
			groupEpoch = f[5]
		}
	}
	if groupEpoch == "" {
		t.Errorf("--describe --state --verbose: no row of %s", app)
	}

	// --describe --members (and --verbose): the instance holds all six
	// active tasks, current and target, over the streams protocol.
	res = streamsGroupsTool(t, b, "--describe", "--group", app, "--members")
	log("--describe --members", res)
	if !containsFields(lines(res.Stdout), "GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS") {
		t.Errorf("--describe --members: no header GROUP MEMBER PROCESS CLIENT-ID ASSIGNMENTS")
	}
	ms := streamsMembers(res.Stdout, app)
	for _, m := range ms {
		slices.Sort(m.Active)
	}
	if len(ms) != 1 || ms[0].ClientID != app+"-a-StreamThread-1-consumer" || strings.Join(ms[0].Active, " ") != strings.Join(tasks, " ") {
		t.Fatalf("--describe --members: %+v, want one member %s-a-StreamThread-1-consumer with active tasks %v", ms, app, tasks)
	}
	res = streamsGroupsTool(t, b, "--describe", "--group", app, "--members", "--verbose")
	log("--describe --members --verbose", res)
	if !containsFields(lines(res.Stdout), "GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL", "MEMBER-EPOCH", "PROCESS", "CLIENT-ID", "ASSIGNMENTS") {
		t.Errorf("--describe --members --verbose: no header GROUP TARGET-ASSIGNMENT-EPOCH TOPOLOGY-EPOCH MEMBER MEMBER-PROTOCOL MEMBER-EPOCH PROCESS CLIENT-ID ASSIGNMENTS")
	}
	if !containsFields(lines(res.Stdout), app, groupEpoch, "0", ms[0].ID, "streams", groupEpoch, ms[0].Process, ms[0].ClientID,
		"ACTIVE:", "0:[0,1,2];", "1:[0,1,2];", "TARGET-ACTIVE:", "0:[0,1,2];", "1:[0,1,2];") {
		t.Errorf("--describe --members --verbose: want %s %s 0 %s streams %s %s %s ACTIVE: 0:[0,1,2]; 1:[0,1,2]; TARGET-ACTIVE: 0:[0,1,2]; 1:[0,1,2];",
			app, groupEpoch, ms[0].ID, groupEpoch, ms[0].Process, ms[0].ClientID)
	}

	// While the app runs: the reset, the offset deletion and the group
	// deletion are refused, with Kafka's messages.
	res = streamsGroupsTool(t, b, "--reset-offsets", "--group", app, "--all-input-topics", "--to-earliest", "--execute")
	log("--reset-offsets of the active group", res)
	if !strings.Contains(both(res), "Error: Assignments can only be reset if the group '"+app+"' is inactive, but the current state is Stable.") {
		t.Errorf("--reset-offsets of an active group was not refused with Kafka's message")
	}
	res = streamsGroupsTool(t, b, "--delete-offsets", "--group", app, "--input-topic", in)
	log("--delete-offsets of the active group", res)
	if !strings.Contains(both(res), "Error: Encountered some partition-level error, see the follow-up details.") {
		t.Errorf("--delete-offsets of an active group: no \"Error: Encountered some partition-level error, see the follow-up details.\"")
	}
	for part := 0; part < 3; part++ {
		if !containsFields(lines(res.Stdout), in, fmt.Sprint(part), "Error:", "org.apache.kafka.common.errors.GroupSubscribedToTopicException:",
			"Deleting", "offsets", "of", "a", "topic", "is", "forbidden", "while", "the", "consumer", "group", "is", "actively", "subscribed", "to", "it.") {
			t.Errorf("--delete-offsets of an active group: partition %d was not refused with GroupSubscribedToTopicException", part)
		}
	}
	res = streamsGroupsTool(t, b, "--delete", "--group", app)
	log("--delete of the active group", res)
	if !strings.Contains(both(res), "* Group '"+app+"' could not be deleted due to: org.apache.kafka.common.errors.GroupNotEmptyException: Streams group '"+app+"' is not EMPTY.") {
		t.Errorf("--delete of an active group was not refused with Kafka's message")
	}
	if got := committedOffsets(t, b, app, in); len(got) != 3 || got[0] != inEnd[0] || got[1] != inEnd[1] || got[2] != inEnd[2] {
		t.Errorf("after the refusals the committed offsets of %s are %v, want %v", in, got, inEnd)
	}

	// The app closes cleanly (its member leaves): Empty.
	p.Stop()
	waitFor(t, 60*time.Second, "the group to be Empty", func() error {
		res := streamsGroupsTool(t, b, "--describe", "--group", app, "--state")
		if !containsFields(lines(res.Stdout), app, b.Addr, "(1)", "sticky", "Empty", "0") {
			return fmt.Errorf("%s", both(res))
		}
		log("--describe --state of the stopped app", res)
		if !strings.Contains(both(res), "Streams group '"+app+"' has no active members.") {
			t.Errorf("--describe --state of an Empty group: no \"Streams group '%s' has no active members.\"", app)
		}
		return nil
	})
	res = streamsGroupsTool(t, b, "--list", "--state")
	if !containsFields(lines(res.Stdout), app, "Empty") {
		t.Errorf("--list --state after the stop: want %s Empty:\n%s", app, both(res))
	}
	// --reset-offsets: --dry-run plans offset 0 and changes nothing;
	// --execute commits 0 for the input partitions.
	res = streamsGroupsTool(t, b, "--reset-offsets", "--group", app, "--all-input-topics", "--to-earliest", "--dry-run")
	log("--reset-offsets --dry-run", res)
	if !containsFields(lines(res.Stdout), "GROUP", "TOPIC", "PARTITION", "NEW-OFFSET") {
		t.Errorf("--reset-offsets --dry-run: no header GROUP TOPIC PARTITION NEW-OFFSET")
	}
	for part := 0; part < 3; part++ {
		if !containsFields(lines(res.Stdout), app, in, fmt.Sprint(part), "0") {
			t.Errorf("--reset-offsets --dry-run: no row %s %s %d 0", app, in, part)
		}
	}
	if got := committedOffsets(t, b, app, in); got[0] != inEnd[0] || got[1] != inEnd[1] || got[2] != inEnd[2] {
		t.Errorf("--dry-run changed the committed offsets of %s to %v (were %v)", in, got, inEnd)
	}
	res = streamsGroupsTool(t, b, "--reset-offsets", "--group", app, "--input-topic", in, "--to-earliest", "--execute")
	log("--reset-offsets --execute", res)
	for part := 0; part < 3; part++ {
		if !containsFields(lines(res.Stdout), app, in, fmt.Sprint(part), "0") {
			t.Errorf("--reset-offsets --execute: no row %s %s %d 0", app, in, part)
		}
	}
	if got := committedOffsets(t, b, app, in); len(got) != 3 || got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Errorf("after --reset-offsets --to-earliest --execute the committed offsets of %s are %v, want 0 on all 3", in, got)
	}

	// --delete-offsets of the input topic: its offsets are gone, the
	// repartition topic's stay.
	res = streamsGroupsTool(t, b, "--delete-offsets", "--group", app, "--input-topic", in)
	log("--delete-offsets", res)
	if !strings.Contains(res.Stdout, "Request succeeded for deleting offsets from group "+app+".") {
		t.Errorf("--delete-offsets: no \"Request succeeded for deleting offsets from group %s.\"", app)
	}
	for part := 0; part < 3; part++ {
		if !containsFields(lines(res.Stdout), in, fmt.Sprint(part), "Successful") {
			t.Errorf("--delete-offsets: no row %s %d Successful", in, part)
		}
	}
	if got := committedOffsets(t, b, app, in); len(got) != 0 {
		t.Errorf("after --delete-offsets %s still has committed offsets %v", in, got)
	}
	if got := committedOffsets(t, b, app, repartition); len(got) != 3 {
		t.Errorf("after --delete-offsets of %s the repartition topic has committed offsets %v, want its 3", in, got)
	}

	// --delete: the group is gone.
	res = streamsGroupsTool(t, b, "--delete", "--group", app)
	log("--delete", res)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Deletion of requested streams groups ('"+app+"') was successful.") {
		t.Errorf("--delete: exit %d, no \"Deletion of requested streams groups ('%s') was successful.\"", res.ExitCode, app)
	}
	res = streamsGroupsTool(t, b, "--describe", "--group", app)
	log("--describe of the deleted group", res)
	if res.ExitCode == 0 || !strings.Contains(both(res), "GroupIdNotFoundException: Group "+app+" not found.") {
		t.Errorf("--describe of the deleted group: exit %d, want a failure with GroupIdNotFoundException: Group %s not found.", res.ExitCode, app)
	}
}
