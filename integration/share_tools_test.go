//go:build integration

package integration

// kafka-share-groups.sh (Apache Kafka 4.4's ShareGroupCommand) against share
// groups (KIP-932, issue 17): list with states, describe offsets, members
// and state, reset offsets of an inactive group, delete offsets, delete the
// group; a group with a live member refuses a reset and a delete.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// shareGroupsTool runs kafka-share-groups.sh against b.
func shareGroupsTool(t *testing.T, b *Broker, args ...string) ToolResult {
	t.Helper()
	return KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-share-groups.sh", append([]string{"--bootstrap-server", b.Addr}, args...)...)
}

// shareOffsetRows parses kafka-share-groups.sh --describe (offsets): the
// START-OFFSET and LAG of each partition of topic.
func shareOffsetRows(t *testing.T, out, group, topic string) map[string][2]string {
	t.Helper()
	rows := map[string][2]string{}
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) >= 5 && f[0] == group && f[1] == topic {
			rows[f[2]] = [2]string{f[3], f[4]}
		}
	}
	return rows
}

func TestShareGroupsTool(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	b := StartBroker(t, BrokerOptions{Overrides: shareOverrides(nil)})
	const topic, group, per = "it-share-tool", "it-share-tool-g", 50
	createTopic(t, b, topic, 2, nil)
	setGroupConfig(t, b, group, "share.auto.offset.reset=earliest")
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := 0; i < per; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("v%d", int(p)*per+i))})
		}
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	consume := func(what string) javaRun {
		t.Helper()
		r := runShareTool(t, 120*time.Second, b.Addr, "consume", "topic="+topic, "group="+group, fmt.Sprint("expect=", 2*per), "idle.ms=1000")
		if r.ExitCode != 0 || len(eventsOf(r.Events, "done")) == 0 {
			t.Fatalf("ShareTool consume (%s) failed: %s\n%s", what, javaFailure(r), tail(r.String(), 80))
		}
		return r
	}
	consume("first")

	res := shareGroupsTool(t, b, "--list")
	t.Logf("--list:\n%s%s", res.Stdout, res.Stderr)
	if !containsLine(lines(res.Stdout), group) {
		t.Errorf("--list does not list %s:\n%s", group, res.Stdout)
	}
	res = shareGroupsTool(t, b, "--list", "--state")
	t.Logf("--list --state:\n%s%s", res.Stdout, res.Stderr)
	if !strings.Contains(res.Stdout, "STATE") || !containsFields(lines(res.Stdout), group, "Empty") {
		t.Errorf("--list --state does not show %s Empty:\n%s", group, res.Stdout)
	}
	// kafka-groups.sh lists every kind of group with its type (KIP-1043).
	res = KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-groups.sh", "--bootstrap-server", b.Addr, "--list")
	t.Logf("kafka-groups.sh --list:\n%s%s", res.Stdout, res.Stderr)
	if !containsFields(lines(res.Stdout), group, "Share", "share") {
		t.Errorf("kafka-groups.sh --list: want %s Share share:\n%s", group, res.Stdout)
	}
	res = KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-groups.sh", "--bootstrap-server", b.Addr, "--list", "--share")
	if !containsFields(lines(res.Stdout), group, "Share", "share") {
		t.Errorf("kafka-groups.sh --list --share: want %s Share share:\n%s", group, res.Stdout)
	}
	waitFor(t, 30*time.Second, "lag 0 on both partitions", func() error {
		res := shareGroupsTool(t, b, "--describe", "--group", group)
		rows := shareOffsetRows(t, res.Stdout, group, topic)
		if len(rows) != 2 || rows["0"][1] != "0" || rows["1"][1] != "0" {
			return fmt.Errorf("rows %v:\n%s%s", rows, res.Stdout, res.Stderr)
		}
		return nil
	})
	res = shareGroupsTool(t, b, "--describe", "--group", group, "--state")
	t.Logf("--describe --state:\n%s%s", res.Stdout, res.Stderr)
	if !containsFieldsPrefix(lines(res.Stdout), group, "(1)", "Empty", "0") ||
		!strings.Contains(res.Stdout+res.Stderr, "Share group '"+group+"' has no active members.") {
		t.Errorf("--describe --state: want %s <coordinator> (1) Empty 0 and no active members:\n%s", group, res.Stdout)
	}

	// A live member: the reset and the delete are refused, --members shows it.
	member := b.Client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("it-share-tool-member"))
	pollCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	member.PollRecords(pollCtx, 1)
	cancel()
	waitFor(t, 30*time.Second, "--describe --members to show the member", func() error {
		res := shareGroupsTool(t, b, "--describe", "--group", group, "--members")
		if !strings.Contains(res.Stdout, "it-share-tool-member") {
			return fmt.Errorf("%s%s", res.Stdout, res.Stderr)
		}
		t.Logf("--describe --members:\n%s", res.Stdout)
		return nil
	})
	res = shareGroupsTool(t, b, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	t.Logf("--reset-offsets with a member:\n%s%s", res.Stdout, res.Stderr)
	if !strings.Contains(res.Stdout+res.Stderr, "Share group '"+group+"' is not empty.") {
		t.Errorf("--reset-offsets of a group with a member was not refused:\n%s%s", res.Stdout, res.Stderr)
	}
	res = shareGroupsTool(t, b, "--delete", "--group", group)
	t.Logf("--delete with a member:\n%s%s", res.Stdout, res.Stderr)
	if !strings.Contains(res.Stdout+res.Stderr, "GroupNotEmptyException: Share group '"+group+"' is not EMPTY.") {
		t.Errorf("--delete of a group with a member was not refused:\n%s%s", res.Stdout, res.Stderr)
	}
	member.Close()
	waitFor(t, 60*time.Second, "the group to be Empty", func() error {
		res := shareGroupsTool(t, b, "--describe", "--group", group, "--state")
		if !containsFieldsPrefix(lines(res.Stdout), group, "Empty", "0") {
			return fmt.Errorf("%s%s", res.Stdout, res.Stderr)
		}
		return nil
	})

	// Reset to the earliest offset: every record is delivered again.
	res = shareGroupsTool(t, b, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	t.Logf("--reset-offsets --to-earliest:\n%s%s", res.Stdout, res.Stderr)
	if res.ExitCode != 0 || !containsFields(lines(res.Stdout), group, topic, "0", "0") || !containsFields(lines(res.Stdout), group, topic, "1", "0") {
		t.Fatalf("--reset-offsets failed or did not list NEW-OFFSET 0 for both partitions: %s%s", res.Stdout, res.Stderr)
	}
	res = shareGroupsTool(t, b, "--describe", "--group", group)
	t.Logf("--describe after the reset:\n%s%s", res.Stdout, res.Stderr)
	if rows := shareOffsetRows(t, res.Stdout, group, topic); rows["0"] != [2]string{"0", fmt.Sprint(per)} || rows["1"] != [2]string{"0", fmt.Sprint(per)} {
		t.Errorf("after --to-earliest: rows %v, want start offset 0 and lag %d on both", rows, per)
	}
	again := consume("after the reset")
	if acc, _ := shareAccepted(t, again); len(acc) != 2*per {
		t.Errorf("after the reset %d values were accepted, want all %d", len(acc), 2*per)
	}

	res = shareGroupsTool(t, b, "--delete-offsets", "--group", group, "--topic", topic)
	t.Logf("--delete-offsets:\n%s%s", res.Stdout, res.Stderr)
	if res.ExitCode != 0 || !containsFields(lines(res.Stdout), topic, "Successful") {
		t.Errorf("--delete-offsets failed: %s%s", res.Stdout, res.Stderr)
	}
	res = shareGroupsTool(t, b, "--describe", "--group", group)
	t.Logf("--describe after --delete-offsets:\n%s%s", res.Stdout, res.Stderr)
	if rows := shareOffsetRows(t, res.Stdout, group, topic); len(rows) != 0 || !strings.Contains(res.Stdout+res.Stderr, "Share group '"+group+"' has no offset information.") {
		t.Errorf("after --delete-offsets the topic still has rows %v", rows)
	}
	res = shareGroupsTool(t, b, "--delete", "--group", group)
	t.Logf("--delete:\n%s%s", res.Stdout, res.Stderr)
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "Deletion of requested share groups ('"+group+"') was successful.") {
		t.Errorf("--delete failed: %s%s", res.Stdout, res.Stderr)
	}
	res = shareGroupsTool(t, b, "--list")
	if containsLine(lines(res.Stdout), group) {
		t.Errorf("--list still lists %s after --delete:\n%s", group, res.Stdout)
	}
}

// containsFields reports whether a line's first fields are want.
func containsFields(ls []string, want ...string) bool {
	for _, l := range ls {
		if f := strings.Fields(l); len(f) >= len(want) && strings.Join(f[:len(want)], " ") == strings.Join(want, " ") {
			return true
		}
	}
	return false
}

// containsFieldsPrefix reports whether a line has the fields of want, in
// order, among its fields (column layouts differ between tool verbs).
func containsFieldsPrefix(ls []string, want ...string) bool {
	for _, l := range ls {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != want[0] {
			continue
		}
		j := 1
		for _, x := range f[1:] {
			if j < len(want) && x == want[j] {
				j++
			}
		}
		if j == len(want) {
			return true
		}
	}
	return false
}
