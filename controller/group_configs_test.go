package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/raft"
)

func groupBrokerConfig(t *testing.T) *config.Config {
	t.Helper()
	bc, err := config.New(map[string]string{"process.roles": "broker,controller", "node.id": "1",
		"controller.quorum.voters": "1@localhost:9093", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
		"controller.listener.names": "CONTROLLER", "log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return bc
}

// TestGroupConfigs: GROUP resources (type 32) in IncrementalAlterConfigs
// and AlterConfigs, validated as ControllerConfigurationValidator and
// GroupConfig.validate do (messages from Kafka 4.4.0 with a default broker
// config), stored as ConfigRecords, replayed after a restart from a
// snapshot.
func TestGroupConfigs(t *testing.T) {
	bc := groupBrokerConfig(t)
	withGroups := func(c *Config) { c.ValidateGroupConfigs = bc.ValidateGroupConfigs }
	e := newTestEnv(t, withGroups)
	e.node.SetSnapshotConfig(raft.SnapshotConfig{MaxBytesBetweenSnapshots: 1 << 40, RetentionBytes: 1, RetentionMs: -1})
	e.addBroker(1)
	type op struct {
		name string
		op   kmsg.IncrementalAlterConfigOp
		v    *string
	}
	inc := func(name string, ops ...op) string {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, name
		for _, o := range ops {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = o.name, o.op, o.v
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		rr := e.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		if rr.ResourceType != kmsg.ConfigResourceTypeGroupConfig || rr.ResourceName != name {
			t.Fatalf("answer for %v %q", rr.ResourceType, rr.ResourceName)
		}
		return errOf(rr.ErrorCode, rr.ErrorMessage)
	}
	set := func(k, v string) op { return op{k, kmsg.IncrementalAlterConfigOpSet, strp(v)} }
	del := func(k string) op { return op{k, kmsg.IncrementalAlterConfigOpDelete, nil} }
	for _, tc := range []struct {
		name string
		ops  []op
		want string
	}{
		{"", []op{set("share.auto.offset.reset", "earliest")}, "INVALID_REQUEST: Default group resources are not allowed."},
		{"g", []op{set("share.delivery.count.limit", "3"), set("share.delivery.count.limit", "4")}, "INVALID_REQUEST: Error due to duplicate config keys"},
		{"g", []op{{"share.delivery.count.limit", kmsg.IncrementalAlterConfigOpSet, nil}, {"share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, nil}}, "INVALID_REQUEST: Null value not supported for : share.delivery.count.limit, share.auto.offset.reset"},
		{"g", []op{{"streams.rack.aware.assignment.tags", kmsg.IncrementalAlterConfigOpAppend, strp("a")}}, "INVALID_CONFIG: Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST."},
		{"g", []op{{"share.delivery.count.limit", 9, strp("3")}}, "UNKNOWN_SERVER_ERROR"},
		{"g", []op{set("foo", "1")}, "INVALID_CONFIG: Unknown group config name: foo"},
		{"g", []op{set("share.auto.offset.reset", "bogus")}, "INVALID_CONFIG: Invalid value bogus for configuration share.auto.offset.reset: Invalid value `bogus` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{"g", []op{set("share.record.lock.duration.ms", "14000")}, "INVALID_CONFIG: share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{"g", []op{set("share.delivery.count.limit", "1")}, "INVALID_CONFIG: Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{"g", []op{set("consumer.session.timeout.ms", "61000")}, "INVALID_CONFIG: consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"g", []op{set("share.isolation.level", "x")}, "INVALID_CONFIG: Invalid value x for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{"gone", []op{del("share.auto.offset.reset")}, "NONE"},
		{"g", []op{set("share.auto.offset.reset", "earliest"), set("share.delivery.count.limit", "3"), set("consumer.session.timeout.ms", "50000")}, "NONE"},
		// The stored configs are validated with the new ones: the
		// unchanged overrides still pass, a bad one fails the request.
		{"g", []op{set("share.isolation.level", "read_committed"), set("share.partition.max.record.locks", "4001")}, "INVALID_CONFIG: share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{"g", []op{set("share.isolation.level", "read_committed"), del("consumer.session.timeout.ms")}, "NONE"},
	} {
		if got := inc(tc.name, tc.ops...); got != tc.want {
			t.Errorf("%q %v: got %q, want %q", tc.name, tc.ops, got, tc.want)
		}
	}
	want := map[string]string{"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3", "share.isolation.level": "read_committed"}
	check := func(when string) {
		t.Helper()
		got := e.c.Image().GroupConfigs("g")
		if len(got) != len(want) {
			t.Fatalf("%s: stored %v, want %v", when, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("%s: stored %v, want %v", when, got, want)
			}
		}
		if g := e.c.Image().GroupConfigs("gone"); g != nil {
			t.Fatalf("%s: deleting a key of a group without configs created some: %v", when, g)
		}
	}
	check("after IncrementalAlterConfigs")

	// validate_only checks without writing.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = true
	r := kmsg.NewIncrementalAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g"
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.delivery.count.limit", strp("4")
	r.Configs = append(r.Configs, c)
	req.Resources = append(req.Resources, r)
	if rr := e.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]; rr.ErrorCode != 0 {
		t.Fatalf("validate only: %s", errOf(rr.ErrorCode, rr.ErrorMessage))
	}
	check("after validate_only")

	// A snapshot and a restart replay the group's configs.
	e.snapshot()
	e.c.writeNoOp()
	e.snapshot()
	e.stop()
	e.start(withGroups)
	check("after a restart from a snapshot")
	var stateCfg map[string]string
	e.c.view(func(s *state) { stateCfg = s.configs[configResource{resourceGroup, "g"}] })
	if len(stateCfg) != 3 {
		t.Fatalf("controller state after restart: %v", stateCfg)
	}

	// AlterConfigs replaces the group's configs.
	legacy := func(name string, cfgs ...kmsg.AlterConfigsRequestResourceConfig) string {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = 2
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeGroupConfig, name, cfgs
		req.Resources = append(req.Resources, r)
		rr := e.do(req).(*kmsg.AlterConfigsResponse).Resources[0]
		return errOf(rr.ErrorCode, rr.ErrorMessage)
	}
	for _, tc := range []struct {
		name string
		cfgs []kmsg.AlterConfigsRequestResourceConfig
		want string
	}{
		{"", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: strp("3")}}, "INVALID_REQUEST: Default group resources are not allowed."},
		{"g", []kmsg.AlterConfigsRequestResourceConfig{{Name: "foo", Value: strp("1")}}, "INVALID_CONFIG: Unknown group config name: foo"},
		{"g", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit"}}, "INVALID_REQUEST: Null value not supported for : share.delivery.count.limit"},
		{"g", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: strp("3")}, {Name: "share.delivery.count.limit", Value: strp("4")}}, "INVALID_REQUEST: Error due to duplicate config keys"},
		{"g", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: strp("11")}}, "INVALID_CONFIG: share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{"g", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.session.timeout.ms", Value: strp("50000")}}, "NONE"},
	} {
		if got := legacy(tc.name, tc.cfgs...); got != tc.want {
			t.Errorf("legacy %q %v: got %q, want %q", tc.name, tc.cfgs, got, tc.want)
		}
	}
	want = map[string]string{"share.session.timeout.ms": "50000"}
	check("after AlterConfigs")
	if got := legacy("g"); got != "NONE" {
		t.Fatal(got)
	}
	if g := e.c.Image().GroupConfigs("g"); g != nil {
		t.Fatalf("AlterConfigs without configs kept %v", g)
	}
}
