//go:build integration

package integration

// Broker loggers (KIP-412, issue 15): kafka-configs.sh --entity-type
// broker-loggers describes the node's loggers and changes their levels at
// run time, with Kafka's answers to a logger that does not exist, a level
// that is not one, deleting the root logger's level and another node's id.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBrokerLoggers(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("the logger names are kgo-broker's")
	}
	b := StartBroker(t, BrokerOptions{})
	configs := func(args ...string) ToolResult {
		return KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh",
			append([]string{"--bootstrap-server", b.Addr, "--entity-type", "broker-loggers", "--entity-name", "1"}, args...)...)
	}
	level := func(logger string) string {
		r := configs("--describe")
		if r.ExitCode != 0 {
			t.Fatalf("describe:\n%s", r)
		}
		m := regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(logger) + `=(\w+) sensitive=false`).FindStringSubmatch(r.Stdout)
		if m == nil {
			t.Fatalf("no logger %s in:\n%s", logger, r.Stdout)
		}
		return m[1]
	}
	for _, l := range []string{"root", "raft", "replication", "storage", "controller", "group"} {
		if got := level(l); got != "INFO" {
			t.Fatalf("%s at %s, want INFO", l, got)
		}
	}

	// raft=DEBUG and group=DEBUG: described as set, the others stay at
	// INFO; the group coordinator's debug lines appear in the log once it
	// loads its partitions (the first FindCoordinator creates
	// __consumer_offsets), the storage's do not.
	if r := configs("--alter", "--add-config", "raft=DEBUG,group=DEBUG"); r.ExitCode != 0 {
		t.Fatalf("alter:\n%s", r)
	}
	if got := level("raft"); got != "DEBUG" {
		t.Fatalf("raft at %s after raft=DEBUG", got)
	}
	if got := level("storage"); got != "INFO" {
		t.Fatalf("storage at %s after raft=DEBUG", got)
	}
	adm := b.Admin()
	waitFor(t, 30*time.Second, "a DEBUG line from the group coordinator", func() error {
		if _, err := adm.FetchOffsets(ctxT(t, 10*time.Second), "it-broker-loggers"); err != nil {
			return err
		}
		if !regexp.MustCompile(`(?m)\tDEBUG\tgroup[.\t]`).MatchString(b.Log()) {
			return errors.New("none yet")
		}
		return nil
	})
	if regexp.MustCompile(`(?m)\tDEBUG\tstorage[.\t]`).MatchString(b.Log()) {
		t.Fatal("storage logged at DEBUG")
	}
	if r := configs("--alter", "--delete-config", "group"); r.ExitCode != 0 {
		t.Fatalf("delete:\n%s", r)
	}

	// Deleting raft's level: it inherits root's again.
	if r := configs("--alter", "--delete-config", "raft"); r.ExitCode != 0 {
		t.Fatalf("delete:\n%s", r)
	}
	if got := level("raft"); got != "INFO" {
		t.Fatalf("raft at %s after the delete", got)
	}

	// The same loggers through the CONTROLLER listener
	// (ControllerApis.handleIncrementalAlterConfigs, --bootstrap-controller).
	ctrl := fmt.Sprintf("127.0.0.1:%d", b.CtrlPort)
	if r := KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-controller", ctrl,
		"--entity-type", "broker-loggers", "--entity-name", "1", "--alter", "--add-config", "storage=WARN"); r.ExitCode != 0 {
		t.Fatalf("alter through the controller listener:\n%s", r)
	}
	if got := level("storage"); got != "WARN" {
		t.Fatalf("storage at %s after storage=WARN on the controller listener", got)
	}

	// Kafka's refusals (RuntimeLoggerManager.validateLogLevelConfigs).
	for _, tc := range []struct {
		args []string
		want string
	}{
		// the tool's own check, from its describe
		{[]string{"--alter", "--add-config", "no.such.logger=DEBUG"}, "Invalid broker logger(s): no.such.logger"},
		{[]string{"--alter", "--add-config", "raft=VERBOSE"}, "Cannot set the log level of raft to VERBOSE as it is not a supported log level. Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"},
		{[]string{"--alter", "--delete-config", "root"}, "Removing the log level of the root logger is not allowed"},
	} {
		r := configs(tc.args...)
		if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, tc.want) {
			t.Errorf("%v: exit %d, want an error with %q:\n%s", tc.args, r.ExitCode, tc.want, r)
		}
	}
	r := KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-server", b.Addr,
		"--entity-type", "broker-loggers", "--entity-name", "2", "--describe")
	if !strings.Contains(r.Stdout+r.Stderr, "The broker-logger '2' doesn't exist") {
		t.Errorf("another node's loggers: exit %d:\n%s", r.ExitCode, r)
	}

	// The node's own answers, without the tool's checks before them.
	cl := b.Client()
	for _, tc := range []struct {
		name, logger string
		op           kmsg.IncrementalAlterConfigOp
		code         int16
		msg          string
	}{
		{"1", "no.such.logger", kmsg.IncrementalAlterConfigOpSet, kerr.InvalidConfig.Code, "Logger no.such.logger does not exist!"},
		{"2", "raft", kmsg.IncrementalAlterConfigOpSet, kerr.InvalidRequest.Code, "Unexpected node id. Expected 1, but received 2"},
		{"x", "raft", kmsg.IncrementalAlterConfigOpSet, kerr.InvalidRequest.Code, "Node id must be an integer, but it is: x"},
		{"1", "raft", kmsg.IncrementalAlterConfigOpAppend, kerr.InvalidRequest.Code, "APPEND operation is not allowed for the BROKER_LOGGER resource"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rs := kmsg.NewIncrementalAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeBrokerLogger, tc.name
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = tc.logger, tc.op, kmsg.StringPtr("DEBUG")
		rs.Configs = append(rs.Configs, c)
		req.Resources = append(req.Resources, rs)
		// to node 1 itself: franz-go would route a BROKER_LOGGER resource
		// to the broker it names
		raw, err := cl.Broker(1).Request(ctxT(t, 10*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		resp := raw.(*kmsg.IncrementalAlterConfigsResponse)
		if len(resp.Resources) != 1 || resp.Resources[0].ErrorCode != tc.code || resp.Resources[0].ErrorMessage == nil || *resp.Resources[0].ErrorMessage != tc.msg {
			t.Errorf("%s %s %v: %+v, want code %d %q", tc.name, tc.logger, tc.op, resp.Resources, tc.code, tc.msg)
		}
	}
}
