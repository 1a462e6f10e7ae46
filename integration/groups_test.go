//go:build integration

package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kgo-broker/kgo-broker/group"
)

// produceValues writes values round-robin over the topic's partitions.
func produceValues(t testing.TB, b *Broker, topic string, values []string) {
	t.Helper()
	cl := b.Client()
	recs := make([]*kgo.Record, len(values))
	for i, v := range values {
		recs[i] = &kgo.Record{Topic: topic, Value: []byte(v)}
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func valuesN(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	return out
}

// consoleGroupConsume runs kafka-console-consumer.sh in a group until it
// has read n messages and returns the values it printed (sorted).
func consoleGroupConsume(t *testing.T, b *Broker, topic, group string, n int, extra ...string) []string {
	t.Helper()
	args := append([]string{"--bootstrap-server", b.Addr, "--topic", topic, "--group", group,
		"--from-beginning", "--max-messages", fmt.Sprint(n), "--timeout-ms", "60000"}, extra...)
	r := MustKafkaTool(t, RunOpts{Timeout: 120 * time.Second}, "kafka-console-consumer.sh", args...)
	if !strings.Contains(r.Stderr, fmt.Sprintf("Processed a total of %d messages", n)) {
		t.Fatalf("console consumer did not process %d messages:\n%s", n, r)
	}
	return lines(r.Stdout)
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g := map[string]int{}
	for _, v := range got {
		g[v]++
	}
	for _, v := range want {
		if g[v] != 1 {
			t.Errorf("%s: %q read %d times, want once (got %v)", what, v, g[v], got)
		}
		delete(g, v)
	}
	for v := range g {
		t.Errorf("%s: unexpected %q", what, v)
	}
}

// TestGroupsConsoleConsumerAndTool: kafka-console-consumer.sh --group reads
// each record once across runs (committed offsets), and
// kafka-consumer-groups.sh lists, describes, resets and deletes the group.
func TestGroupsConsoleConsumerAndTool(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	const topic, group = "it-groups", "it-g"
	createTopic(t, b, topic, 3, nil)

	first := valuesN("a", 9)
	produceValues(t, b, topic, first)
	sameSet(t, "first run", consoleGroupConsume(t, b, topic, group, 9), first)
	second := valuesN("b", 6)
	produceValues(t, b, topic, second)
	// --from-beginning does not apply: the group has committed offsets.
	sameSet(t, "second run", consoleGroupConsume(t, b, topic, group, 6), second)

	r := MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--list")
	if !contains(lines(r.Stdout), group) {
		t.Fatalf("--list does not show %s:\n%s", group, r)
	}
	r = MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--list", "--state", "Empty")
	if !strings.Contains(r.Stdout, group) || !strings.Contains(r.Stdout, "Empty") {
		t.Fatalf("--list --state Empty:\n%s", r)
	}

	r = MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--describe", "--group", group)
	rows := describeRows(r.Stdout, group)
	if len(rows) != 3 {
		t.Fatalf("--describe: want 3 partition rows:\n%s", r)
	}
	var total int64
	for _, row := range rows {
		// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
		if row[1] != topic || row[3] != row[4] || row[5] != "0" {
			t.Errorf("--describe row %v: want current offset = log end offset, lag 0", row)
		}
		total += mustAtoi64(t, "current offset", row[3])
	}
	if total != 15 {
		t.Errorf("--describe: committed offsets sum to %d, want 15:\n%s", total, r)
	}

	// An active member: --describe --members shows it with its partitions.
	ctx, cancel := context.WithCancel(context.Background())
	member := b.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ClientID("it-member"))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			member.PollFetches(ctx)
		}
	}()
	waitFor(t, 60*time.Second, "the member in --describe --members", func() error {
		r = KafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--describe", "--group", group, "--members")
		for _, row := range describeRows(r.Stdout, group) {
			// GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS
			if len(row) >= 5 && row[3] == "it-member" && row[4] == "3" && strings.HasPrefix(row[2], "/127.0.0.1") {
				return nil
			}
		}
		return fmt.Errorf("no member row yet:\n%s", r)
	})
	// Resetting needs an inactive group.
	r = KafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--reset-offsets",
		"--group", group, "--topic", topic, "--to-earliest", "--execute")
	if r.ExitCode == 0 && !strings.Contains(r.Stdout+r.Stderr, "inactive") {
		t.Errorf("--reset-offsets on an active group:\n%s", r)
	}
	cancel()
	<-done
	member.Close() // leaves the group

	r = MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--reset-offsets",
		"--group", group, "--topic", topic, "--to-earliest", "--execute")
	rows = describeRows(r.Stdout, group)
	if len(rows) != 3 {
		t.Fatalf("--reset-offsets: want 3 rows:\n%s", r)
	}
	for _, row := range rows {
		// GROUP TOPIC PARTITION NEW-OFFSET
		if row[3] != "0" {
			t.Errorf("--reset-offsets row %v: want new offset 0", row)
		}
	}
	// After the reset the group reads everything again.
	sameSet(t, "after reset", consoleGroupConsume(t, b, topic, group, 15), append(first, second...))

	r = MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--delete", "--group", group)
	if !strings.Contains(r.Stdout, "Deletion of requested consumer groups ('"+group+"') was successful.") {
		t.Fatalf("--delete:\n%s", r)
	}
	r = MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--list")
	if contains(lines(r.Stdout), group) {
		t.Fatalf("--list after --delete still shows %s:\n%s", group, r)
	}
	r = KafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--describe", "--group", group)
	// Kafka 4.x: DescribeGroups v6 answers GROUP_ID_NOT_FOUND (KIP-1043).
	if !strings.Contains(r.Stdout, "Group "+group+" not found.") {
		t.Errorf("--describe of a deleted group:\n%s", r)
	}
}

// describeRows returns the whitespace-split rows of a kafka-consumer-groups
// table whose first column is the group.
func describeRows(out, group string) [][]string {
	var rows [][]string
	for _, l := range lines(out) {
		f := strings.Fields(l)
		if len(f) > 0 && f[0] == group {
			rows = append(rows, f)
		}
	}
	return rows
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if strings.TrimSpace(x) == s {
			return true
		}
	}
	return false
}

// TestGroupsJavaConsumerProtocols: the Java consumer with
// group.protocol=classic and with group.protocol=consumer (KIP-848) each
// read every record exactly once across two runs.
func TestGroupsJavaConsumerProtocols(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	for _, proto := range []string{"classic", "consumer"} {
		t.Run(proto, func(t *testing.T) {
			topic, group := "it-proto-"+proto, "it-proto-g-"+proto
			createTopic(t, b, topic, 4, nil)
			first := valuesN("x", 12)
			produceValues(t, b, topic, first)
			// (4.4 deprecates --consumer-property for --command-property.)
			prop := []string{"--command-property", "group.protocol=" + proto}
			start := time.Now()
			sameSet(t, "first run", consoleGroupConsume(t, b, topic, group, 12, prop...), first)
			t.Logf("group.protocol=%s: first run (JVM start, join, 12 records, commit) took %v", proto, time.Since(start))
			second := valuesN("y", 8)
			produceValues(t, b, topic, second)
			sameSet(t, "second run", consoleGroupConsume(t, b, topic, group, 8, prop...), second)
			r := MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--list", "--type")
			wantType := map[string]string{"classic": "Classic", "consumer": "Consumer"}[proto]
			found := false
			for _, row := range describeRows(r.Stdout, group) {
				if len(row) >= 2 && strings.EqualFold(row[1], wantType) {
					found = true
				}
			}
			if !found {
				t.Errorf("--list --type does not show %s as %s:\n%s", group, wantType, r)
			}
			r = MustKafkaTool(t, RunOpts{}, "kafka-consumer-groups.sh", "--bootstrap-server", b.Addr, "--describe", "--group", group)
			var total int64
			for _, row := range describeRows(r.Stdout, group) {
				total += mustAtoi64(t, "current offset", row[3])
			}
			if total != 20 {
				t.Errorf("--describe: committed offsets sum to %d, want 20:\n%s", total, r)
			}
		})
	}

	// kafka-dump-log.sh --offsets-decoder reads every record the
	// coordinator wrote: classic group metadata, KIP-848 records, offsets.
	b.Stop(0)
	for _, proto := range []string{"classic", "consumer"} {
		g := "it-proto-g-" + proto
		dir := filepath.Join(b.DataDir, fmt.Sprintf("__consumer_offsets-%d", group.PartitionFor(g, 50)))
		segs := globSorted(t, filepath.Join(dir, "*.log"))
		r := MustKafkaTool(t, RunOpts{}, "kafka-dump-log.sh", append([]string{"--offsets-decoder", "--files"}, strings.Join(segs, ","))...)
		out := r.Stdout
		if strings.Contains(out, "Exception") || strings.Contains(out, "Error") || strings.Contains(out, "Unknown") {
			t.Errorf("kafka-dump-log.sh --offsets-decoder could not decode everything:\n%s", r)
		}
		want := []string{`"offset":`}
		if proto == "classic" {
			want = append(want, `"protocolType":"consumer"`)
		} else {
			want = append(want, `"memberEpoch":`, `"subscribedTopicNames":["it-proto-consumer"]`, `"assignmentEpoch":`)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("kafka-dump-log.sh --offsets-decoder output for %s lacks %s:\n%s", g, w, r)
			}
		}
		if testing.Verbose() {
			t.Logf("%s", out)
		}
	}
}
