//go:build integration

package integration

// kafka-cluster.sh (issue 15): cluster-id, list-endpoints on the broker and
// the controller listeners, and unregister of a broker that is gone
// (UnregisterBroker, forwarded to the controller, which writes an
// UnregisterBrokerRecord), with Kafka's answer for an id that is not
// registered.

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestKafkaClusterTool(t *testing.T) {
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Combined: 1, Brokers: 2})
	bootstrap := c.Node(1).Addr
	tool := func(args ...string) ToolResult {
		return KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-cluster.sh", args...)
	}
	if r := tool("cluster-id", "--bootstrap-server", bootstrap); r.ExitCode != 0 || !strings.Contains(r.Stdout, "Cluster ID: "+c.ClusterID) {
		t.Fatalf("cluster-id, want %s:\n%s", c.ClusterID, r)
	}
	row := func(out string, id int32) string {
		m := regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+\S+\s+\d+\s+\S+\s+(\w+)\s+broker`, id)).FindStringSubmatch(out)
		if m == nil {
			return ""
		}
		return m[1]
	}
	endpoints := func() string {
		r := tool("list-endpoints", "--bootstrap-server", bootstrap, "--include-fenced-brokers")
		if r.ExitCode != 0 {
			t.Fatalf("list-endpoints:\n%s", r)
		}
		return r.Stdout
	}
	out := endpoints()
	for _, id := range []int32{1, 2, 3} {
		if st := row(out, id); st != "unfenced" {
			t.Fatalf("broker %d is %q, want unfenced:\n%s", id, st, out)
		}
	}
	r := tool("list-endpoints", "--bootstrap-controller", c.Node(1).CtrlAddr)
	if r.ExitCode != 0 || !regexp.MustCompile(`(?m)^1\s+\S+\s+\d+\s+\S+\s+controller`).MatchString(r.Stdout) {
		t.Fatalf("list-endpoints --bootstrap-controller:\n%s", r)
	}

	// Broker 3 goes away: fenced once its session ends, then unregistered.
	if code := c.Node(3).Stop(60 * time.Second); code != 0 {
		t.Fatalf("node 3 exited with %d", code)
	}
	waitFor(t, 60*time.Second, "broker 3 fenced", func() error {
		if st := row(endpoints(), 3); st != "fenced" {
			return fmt.Errorf("broker 3 is %q", st)
		}
		return nil
	})
	if r := tool("unregister", "--bootstrap-server", bootstrap, "--id", "3"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "Broker 3 is no longer registered.") {
		t.Fatalf("unregister 3:\n%s", r)
	}
	waitFor(t, 30*time.Second, "broker 3 gone from the endpoints", func() error {
		if out := endpoints(); row(out, 3) != "" {
			return fmt.Errorf("still listed:\n%s", out)
		}
		return nil
	})
	r = tool("unregister", "--bootstrap-server", bootstrap, "--id", "3")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "Broker ID 3 is not currently registered") {
		t.Fatalf("unregister 3 again:\n%s", r)
	}
}
