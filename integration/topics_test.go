//go:build integration

package integration

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKafkaTopics drives kafka-topics.sh (org.apache.kafka.tools.TopicCommand)
// through create, list, describe, alter, create-again and delete, checking the
// exact output Kafka 4.4's tool prints against a real Kafka broker.
func TestKafkaTopics(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-topics"
	bs := []string{"--bootstrap-server", b.Addr}
	topics := func(args ...string) ToolResult {
		t.Helper()
		return KafkaTool(t, RunOpts{}, "kafka-topics.sh", append(slices.Clone(bs), args...)...)
	}
	must := func(args ...string) ToolResult {
		t.Helper()
		r := topics(args...)
		if r.ExitCode != 0 {
			t.Fatalf("kafka-topics.sh failed:\n%s", r)
		}
		return r
	}
	list := func() []string {
		t.Helper()
		return lines(must("--list").Stdout)
	}

	// --create
	r := must("--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1",
		"--config", "retention.ms=1000", "--config", "cleanup.policy=delete")
	if got, want := r.Stdout, "Created topic "+topic+".\n"; got != want {
		t.Fatalf("--create stdout = %q, want %q\n%s", got, want, r)
	}

	// --list includes it (the broker may publish the new metadata a moment after
	// CreateTopics returns, as Kafka's does).
	waitFor(t, 10*time.Second, "--list to include "+topic, func() error {
		if l := list(); !slices.Contains(l, topic) {
			return fmt.Errorf("--list = %q", l)
		}
		return nil
	})
	if l := list(); !slices.IsSorted(l) {
		t.Errorf("--list output not sorted: %q", l)
	}

	// --describe: topic line and one line per partition, TAB separated.
	describe := func(partitions int) {
		t.Helper()
		r := must("--describe", "--topic", topic)
		ls := lines(r.Stdout)
		if len(ls) != 1+partitions {
			t.Fatalf("--describe printed %d lines, want %d:\n%s", len(ls), 1+partitions, r)
		}
		head := regexp.MustCompile(`^Topic: ` + topic + `\tTopicId: ([A-Za-z0-9_-]{22})\tPartitionCount: (\d+)\tReplicationFactor: 1\tConfigs: (.*)$`)
		m := head.FindStringSubmatch(ls[0])
		if m == nil {
			t.Fatalf("--describe topic line %q does not match %q", ls[0], head)
		}
		if m[1] == "AAAAAAAAAAAAAAAAAAAAAA" {
			t.Errorf("TopicId is the zero uuid: %q", ls[0])
		}
		if m[2] != fmt.Sprint(partitions) {
			t.Errorf("PartitionCount: %s, want %d", m[2], partitions)
		}
		// Only non-default configs appear (ConfigSource != DEFAULT_CONFIG): the two
		// set at creation, plus min.insync.replicas=1, which Kafka 4.4's controller
		// writes as a cluster-level default at bootstrap (KIP-966, ELR enabled), so
		// DescribeConfigs reports it with source DYNAMIC_DEFAULT_BROKER_CONFIG (3).
		// TopicCommand keeps the response's order, which is not specified; compare
		// as a set.
		got := strings.Split(m[3], ",")
		slices.Sort(got)
		if want := []string{"cleanup.policy=delete", "min.insync.replicas=1", "retention.ms=1000"}; !slices.Equal(got, want) {
			t.Errorf("Configs: %q, want (in any order) %q (line %q)", m[3], strings.Join(want, ","), ls[0])
		}
		for p := 0; p < partitions; p++ {
			want := fmt.Sprintf("\tTopic: %s\tPartition: %d\tLeader: 1\tReplicas: 1\tIsr: 1\tElr: \tLastKnownElr: ", topic, p)
			if ls[1+p] != want {
				t.Errorf("--describe partition line %d:\n got %q\nwant %q", p, ls[1+p], want)
			}
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	describe(3)

	// --alter --partitions 5
	r = must("--alter", "--topic", topic, "--partitions", "5")
	if strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("--alter printed %q, want nothing", r.Stdout)
	}
	waitTopicReady(t, b, topic, 5)
	describe(5)

	// Creating it again fails: exit code 1 and TopicExistsException's message.
	r = topics("--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
	if r.ExitCode != 1 {
		t.Fatalf("second --create exit code %d, want 1:\n%s", r.ExitCode, r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "already exists") {
		t.Fatalf("second --create does not say 'already exists':\n%s", r)
	}
	if !strings.Contains(r.Stdout, "Error while executing topic command") {
		t.Errorf("second --create: want 'Error while executing topic command' on stdout:\n%s", r)
	}

	// --delete, then --list lacks it.
	r = must("--delete", "--topic", topic)
	if strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("--delete printed %q, want nothing", r.Stdout)
	}
	waitFor(t, 10*time.Second, "--list to lack "+topic, func() error {
		if l := list(); slices.Contains(l, topic) {
			return fmt.Errorf("--list = %q", l)
		}
		return nil
	})

	// Describing the deleted topic fails with exit code 1.
	r = topics("--describe", "--topic", topic)
	if r.ExitCode != 1 || !strings.Contains(r.Stdout, "does not exist") {
		t.Errorf("--describe of a deleted topic: want exit 1 and 'does not exist':\n%s", r)
	}
}
