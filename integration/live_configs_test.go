//go:build integration

package integration

// Dynamic broker configs (KIP-226): kafka-configs.sh --entity-type brokers
// (--entity-default | --entity-name 1) --alter changes take effect without
// a restart, and the changes Kafka refuses are refused with Kafka 4.4's
// error codes and messages. Runs unchanged against the reference broker
// (KGO_BROKER_BIN=$PWD/integration/testdata/kafka-reference-broker).

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLiveBrokerConfigs(t *testing.T) {
	b := StartBroker(t, BrokerOptions{})
	const topic = "live-configs"
	createTopic(t, b, topic, 1, nil)
	configs := func(args ...string) {
		t.Helper()
		MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh",
			append([]string{"--bootstrap-server", b.Addr, "--entity-type", "brokers"}, args...)...)
	}
	// Uncompressed: the limit applies to the batch as it is stored.
	cl := b.Client(kgo.RecordRetries(0), kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	defer cl.Close()
	produce := func(size int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: make([]byte, size)}).FirstErr()
	}
	// A record of 3000 bytes makes a batch over 2000 and under 10000 bytes.
	waitProduce := func(what string, wantTooLarge bool) {
		t.Helper()
		waitFor(t, 30*time.Second, what, func() error {
			err := produce(3000)
			if wantTooLarge {
				if errors.Is(err, kerr.MessageTooLarge) {
					return nil
				}
				return fmt.Errorf("3000-byte record: %v, want MESSAGE_TOO_LARGE", err)
			}
			return err
		})
	}
	if err := produce(3000); err != nil {
		t.Fatalf("3000-byte record with the default message.max.bytes: %v", err)
	}

	// The cluster-wide default.
	configs("--entity-default", "--alter", "--add-config", "message.max.bytes=2000")
	waitProduce("message.max.bytes=2000 at the cluster default", true)
	if err := produce(100); err != nil {
		t.Fatalf("100-byte record under message.max.bytes=2000: %v", err)
	}
	// This broker's own value wins over the default.
	configs("--entity-name", "1", "--alter", "--add-config", "message.max.bytes=10000")
	waitProduce("message.max.bytes=10000 for broker 1", false)
	configs("--entity-name", "1", "--alter", "--delete-config", "message.max.bytes")
	waitProduce("broker 1's message.max.bytes deleted (the default 2000 again)", true)
	configs("--entity-default", "--alter", "--delete-config", "message.max.bytes")
	waitProduce("the default message.max.bytes deleted", false)

	// log.segment.bytes at the cluster default reaches the existing
	// topic's log (DynamicLogConfig): 2.5 MiB make at least three
	// segments of 1 MiB.
	const segTopic = "live-segments"
	createTopic(t, b, segTopic, 1, nil)
	configs("--entity-default", "--alter", "--add-config", "log.segment.bytes=1048576")
	waitFor(t, 60*time.Second, "1 MiB segments in "+segTopic+"-0", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for range 5 {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: segTopic, Value: make([]byte, 100<<10)}).FirstErr(); err != nil {
				return err
			}
		}
		segs, _ := filepath.Glob(filepath.Join(b.DataDir, segTopic+"-0", "*.log"))
		if len(segs) < 3 {
			return fmt.Errorf("%d segments", len(segs))
		}
		return nil
	})
	configs("--entity-default", "--alter", "--delete-config", "log.segment.bytes")

	// num.replica.fetchers resizes the fetcher pool live: DescribeConfigs
	// reports the dynamic value, and kgo-broker logs the resize (the
	// reference broker's harness log has WARN and above only).
	reference := strings.Contains(brokerBin, "kafka-reference-broker")
	configs("--entity-name", "1", "--alter", "--add-config", "num.replica.fetchers=2")
	waitFor(t, 30*time.Second, "num.replica.fetchers=2 described and applied", func() error {
		v, src := describeBrokerConfig(t, b, "1", "num.replica.fetchers")
		if v != "2" || src != kmsg.ConfigSourceDynamicBrokerConfig {
			return fmt.Errorf("num.replica.fetchers %q from %v", v, src)
		}
		if reference {
			return nil
		}
		if log := b.Log(); !strings.Contains(log, "resized the replica fetcher pool") {
			return errors.New("no fetcher pool resize in the broker log")
		}
		return nil
	})

	// Refusals: each is INVALID_REQUEST (KAFKA-13609) with Kafka's message.
	const invalid = 42
	cases := []struct {
		name, res, key, val string
		legacy, validate    bool
		want                string
	}{
		{"read-only node.id", "1", "node.id", "5", false, false, "Cannot update these configs dynamically: [node.id]"},
		{"read-only node.id, validate only", "1", "node.id", "5", false, true, "Cannot update these configs dynamically: [node.id]"},
		{"read-only node.id, AlterConfigs", "1", "node.id", "5", true, false, "Cannot update these configs dynamically: [node.id]"},
		{"read-only log.dirs", "", "log.dirs", "/x", false, false, "Cannot update these configs dynamically: [log.dirs]"},
		{"read-only process.roles", "1", "process.roles", "broker", false, false, "Cannot update these configs dynamically: [process.roles]"},
		{"listeners at the default", "", "listeners", "PLAINTEXT://:1", false, false,
			"Cannot update these configs at default cluster level, broker id must be specified: [listeners]"},
		{"listener keystore at the default", "", "listener.name.plaintext.ssl.keystore.location", "/x", false, false,
			"Cannot update these configs at default cluster level, broker id must be specified: [listener.name.plaintext.ssl.keystore.location]"},
		{"keystore without a listener prefix", "1", "ssl.keystore.location", "/x", false, false,
			"These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
		{"not an INT", "1", "message.max.bytes", "abc", false, false, "Invalid value abc for configuration message.max.bytes: Not a number of type INT"},
		{"not an INT, AlterConfigs", "", "message.max.bytes", "x", true, false, "Invalid value x for configuration message.max.bytes: Not a number of type INT"},
		{"out of range", "", "message.max.bytes", "-5", false, false, "Invalid value -5 for configuration message.max.bytes: Value must be at least 0"},
		{"num.replica.fetchers=0", "1", "num.replica.fetchers", "0", false, false, "Invalid value 0 for configuration num.replica.fetchers: Value must be at least 1"},
		{"num.replica.fetchers more than doubled", "1", "num.replica.fetchers", "5", false, false,
			"Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed for num.replica.fetchers=5, value should not be greater than double the current value 2 for configuration Invalid dynamic configuration"},
		{"log.cleaner.threads more than doubled", "1", "log.cleaner.threads", "10", false, false,
			"Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to more than double the current value 1 for configuration Invalid dynamic configuration"},
		{"KafkaConfig requirement", "", "log.retention.ms", "0", false, false,
			"requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{"cordoned.log.dirs outside log.dirs", "1", "cordoned.log.dirs", "/nonexistent", false, false,
			"requirement failed: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : /nonexistent"},
		{"throttle rate below 0", "", "leader.replication.throttled.rate", "-1", false, false,
			"Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"},
		{"another broker's id", "2", "message.max.bytes", "1000", false, false, "Unexpected broker id, expected 1, but received 2"},
		{"a broker name that is no id", "x", "message.max.bytes", "1000", false, false, "Node id must be an integer, but it is: x"},
	}
	for _, tc := range cases {
		code, msg := alterBrokerConfig(t, b, tc.res, tc.legacy, tc.validate, map[string]string{tc.key: tc.val})
		if code != invalid || msg != tc.want {
			t.Errorf("%s: %d %q\nwant %d %q", tc.name, code, msg, invalid, tc.want)
		}
	}
	// Several read-only keys are named together, in java.util.HashSet order.
	code, msg := alterBrokerConfig(t, b, "1", false, false, map[string]string{"node.id": "5", "log.dirs": "/x", "process.roles": "broker"})
	if want := "Cannot update these configs dynamically: [node.id, process.roles, log.dirs]"; code != invalid || msg != want {
		t.Errorf("three read-only keys: %d %q, want %q", code, msg, want)
	}
	// The preprocessing of the operations and resources
	// (ConfigAdminManager.preprocess).
	op := func(name string, o kmsg.IncrementalAlterConfigOp, v *string) kmsg.IncrementalAlterConfigsRequestResourceConfig {
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = name, o, v
		return c
	}
	set, str := kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr
	for _, tc := range []struct {
		name string
		typ  kmsg.ConfigResourceType
		res  string
		cfgs []kmsg.IncrementalAlterConfigsRequestResourceConfig
		code int16
		want string
	}{
		{"APPEND to an INT", kmsg.ConfigResourceTypeBroker, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			op("message.max.bytes", kmsg.IncrementalAlterConfigOpAppend, str("5"))}, 40, "Config value append is not allowed for config key: message.max.bytes"},
		{"APPEND to an unknown key", kmsg.ConfigResourceTypeBroker, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			op("unknown.zz", kmsg.IncrementalAlterConfigOpAppend, str("a"))}, 40, "Unknown config name: unknown.zz"},
		{"a key twice", kmsg.ConfigResourceTypeBroker, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			op("message.max.bytes", set, str("5")), op("message.max.bytes", set, str("6"))}, invalid, "Error due to duplicate config keys"},
		{"SET null", kmsg.ConfigResourceTypeBroker, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			op("message.max.bytes", set, nil)}, invalid, "Null value not supported for : message.max.bytes"},
		{"unknown resource type", 99, "1", []kmsg.IncrementalAlterConfigsRequestResourceConfig{
			op("a", set, str("5"))}, invalid, "Unknown resource type 99"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rs := kmsg.NewIncrementalAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName, rs.Configs = tc.typ, tc.res, tc.cfgs
		req.Resources = append(req.Resources, rs)
		r := rawRequest(t, b, b.Port, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if msg := r.ErrorMessage; r.ErrorCode != tc.code || msg == nil || *msg != tc.want {
			t.Errorf("%s: %d %v, want %d %q", tc.name, r.ErrorCode, msg, tc.code, tc.want)
		}
	}
	for _, typ := range []kmsg.ConfigResourceType{kmsg.ConfigResourceTypeBrokerLogger, 99} {
		req := kmsg.NewPtrAlterConfigsRequest()
		rs := kmsg.NewAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName = typ, "1"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "root", str("DEBUG")
		rs.Configs = append(rs.Configs, c)
		req.Resources = append(req.Resources, rs)
		r := rawRequest(t, b, b.Port, req, 2).(*kmsg.AlterConfigsResponse).Resources[0]
		if want := fmt.Sprintf("Unknown resource type %d", typ); r.ErrorCode != invalid || r.ErrorMessage == nil || *r.ErrorMessage != want {
			t.Errorf("AlterConfigs of resource type %d: %d %v, want %q", typ, r.ErrorCode, r.ErrorMessage, want)
		}
	}
	// Accepted without a change: validate only, and a key Kafka does not
	// define (a custom config).
	if code, msg := alterBrokerConfig(t, b, "", false, true, map[string]string{"message.max.bytes": "2000"}); code != 0 {
		t.Errorf("validate-only message.max.bytes=2000: %d %q", code, msg)
	}
	if code, msg := alterBrokerConfig(t, b, "", false, true, map[string]string{"custom.key.zz": "1"}); code != 0 {
		t.Errorf("validate-only custom key: %d %q", code, msg)
	}
	if err := produce(3000); err != nil {
		t.Fatalf("3000-byte record after a validate-only message.max.bytes=2000: %v", err)
	}
	// kafka-configs.sh prints the refusal and exits 1.
	r := KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-server", b.Addr,
		"--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.dirs=/x")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout+r.Stderr, "Cannot update these configs dynamically: [log.dirs]") {
		t.Errorf("kafka-configs.sh log.dirs at the default:\n%s", r)
	}
}

// alterBrokerConfig sends one BROKER resource (IncrementalAlterConfigs SET,
// or legacy AlterConfigs) and returns its error code and message.
func alterBrokerConfig(t *testing.T, b *Broker, name string, legacy, validateOnly bool, kv map[string]string) (int16, string) {
	t.Helper()
	var code int16
	var msg *string
	if legacy {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rs := kmsg.NewAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeBroker, name
		for k, v := range kv {
			c := kmsg.NewAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rs.Configs = append(rs.Configs, c)
		}
		req.Resources = append(req.Resources, rs)
		resp := rawRequest(t, b, b.Port, req, 2).(*kmsg.AlterConfigsResponse)
		code, msg = resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage
	} else {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.ValidateOnly = validateOnly
		rs := kmsg.NewIncrementalAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeBroker, name
		for k, v := range kv {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			rs.Configs = append(rs.Configs, c)
		}
		req.Resources = append(req.Resources, rs)
		resp := rawRequest(t, b, b.Port, req, 1).(*kmsg.IncrementalAlterConfigsResponse)
		code, msg = resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage
	}
	if msg == nil {
		return code, ""
	}
	return code, *msg
}

// describeBrokerConfig is one key of DescribeConfigs for a BROKER resource.
func describeBrokerConfig(t *testing.T, b *Broker, name, key string) (string, kmsg.ConfigSource) {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	rs := kmsg.NewDescribeConfigsRequestResource()
	rs.ResourceType, rs.ResourceName, rs.ConfigNames = kmsg.ConfigResourceTypeBroker, name, []string{key}
	req.Resources = append(req.Resources, rs)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl) // franz-go sends it to broker name
	if err != nil {
		t.Fatalf("DescribeConfigs %s: %v", name, err)
	}
	for _, r := range resp.Resources {
		for _, c := range r.Configs {
			if c.Name == key && c.Value != nil {
				return *c.Value, c.Source
			}
		}
	}
	return "", kmsg.ConfigSourceUnknown
}

// TestLiveReplicaFetchersCluster: num.replica.fetchers raised at the
// cluster default on three nodes resizes every broker's fetcher pool
// without a restart, and replication goes on: acks=all produces with
// min.insync.replicas=3 (every follower must keep fetching) succeed after
// the resize and everything is consumed.
func TestLiveReplicaFetchersCluster(t *testing.T) {
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Combined: 3})
	const topic = "live-fetchers"
	adm := kadm.NewClient(c.Client(nil))
	cr, err := adm.CreateTopic(ctxT(t, 30*time.Second), 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("3")}, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLeaders(t, c, topic, 6)
	pcl := c.Client(nil, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer pcl.Close()
	if err := pcl.ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic, 60)...).FirstErr(); err != nil {
		t.Fatalf("produce acks=all before the resize: %v", err)
	}
	MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-server", c.Node(1).Addr,
		"--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "num.replica.fetchers=2")
	if !strings.Contains(brokerBin, "kafka-reference-broker") {
		for _, n := range c.Nodes {
			waitFor(t, 30*time.Second, fmt.Sprintf("node %d to resize its fetcher pool", n.ID), func() error {
				if !strings.Contains(n.Log(), `resized the replica fetcher pool	{"numReplicaFetchers": 2`) {
					return errors.New("not in its log yet")
				}
				return nil
			})
		}
	}
	for _, n := range c.Nodes {
		if v, src := describeBrokerConfig(t, n.Broker, strconv.Itoa(int(n.ID)), "num.replica.fetchers"); v != "2" || src != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
			t.Errorf("node %d: num.replica.fetchers %q from %v, want 2 from the dynamic default", n.ID, v, src)
		}
	}
	more := recordsFor(topic, 120)[60:]
	if err := pcl.ProduceSync(ctxT(t, 30*time.Second), more...).FirstErr(); err != nil {
		t.Fatalf("produce acks=all with min.insync.replicas=3 after the resize: %v", err)
	}
	if got := consumeAll(t, c.Node(2).Broker, topic, 120, 30*time.Second); len(got) != 120 {
		t.Errorf("consumed %d, want 120", len(got))
	}
}
