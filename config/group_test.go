package config

import (
	"testing"
	"time"
)

func groupTestConfig(t testing.TB, props map[string]string) *Config {
	t.Helper()
	base := map[string]string{"process.roles": "broker,controller", "node.id": "1",
		"controller.quorum.voters": "1@localhost:9093", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
		"controller.listener.names": "CONTROLLER", "log.dirs": t.TempDir()}
	for k, v := range props {
		base[k] = v
	}
	c, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The messages are Kafka 4.4.0's GroupConfig.validate answers, run against
// the 4.4.0 jars with a default broker config.
func TestValidateGroupConfigsKafkaMessages(t *testing.T) {
	c := groupTestConfig(t, nil)
	for _, tc := range []struct {
		in   map[string]string
		want string
	}{
		{map[string]string{"foo": "1"}, "Unknown group config name: foo"},
		{map[string]string{"zzz": "1", "aaa": "1", "foo": "1", "bar": "1", "share.delivery.count.limit": "3"}, "Unknown group config name: aaa"},
		{map[string]string{"x.y": "1", "b": "1", "a": "1"}, "Unknown group config name: a"},
		{map[string]string{"foo": "1", "unknown.key": "1"}, "Unknown group config name: unknown.key"},
		{map[string]string{"apple": "1", "zebra": "1"}, "Unknown group config name: zebra"},
		{map[string]string{"share.auto.offset.reset": "bogus"}, "Invalid value bogus for configuration share.auto.offset.reset: Invalid value `bogus` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{map[string]string{"share.auto.offset.reset": "EARLIEST"}, "Invalid value EARLIEST for configuration share.auto.offset.reset: Invalid value `EARLIEST` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{map[string]string{"share.auto.offset.reset": "by_duration:PT1H"}, ""},
		{map[string]string{"share.auto.offset.reset": "by_duration:-PT1H"}, "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{map[string]string{"share.auto.offset.reset": "by_duration:xx"}, "Invalid value by_duration:xx for configuration share.auto.offset.reset: Invalid value `by_duration:xx` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'."},
		{map[string]string{"share.isolation.level": "READ_COMMITTED"}, "Invalid value READ_COMMITTED for configuration share.isolation.level: String must be one of: read_committed, read_uncommitted"},
		{map[string]string{"share.record.lock.duration.ms": "999"}, "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000"},
		{map[string]string{"share.record.lock.duration.ms": "14000"}, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{map[string]string{"share.record.lock.duration.ms": "70000"}, "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."},
		{map[string]string{"share.record.lock.duration.ms": "abc"}, "Invalid value abc for configuration share.record.lock.duration.ms: Not a number of type INT"},
		{map[string]string{"share.delivery.count.limit": "1"}, "Invalid value 1 for configuration share.delivery.count.limit: Value must be at least 2"},
		{map[string]string{"share.delivery.count.limit": "11"}, "share.delivery.count.limit must be in the range 2 to 10 inclusive."},
		{map[string]string{"share.partition.max.record.locks": "5000"}, "share.partition.max.record.locks must be in the range 100 to 4000 inclusive."},
		{map[string]string{"consumer.session.timeout.ms": "0"}, "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"},
		{map[string]string{"consumer.session.timeout.ms": "44000"}, "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{map[string]string{"consumer.heartbeat.interval.ms": "4000"}, "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{map[string]string{"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "15000"}, ""},
		{map[string]string{"share.session.timeout.ms": "45000", "share.heartbeat.interval.ms": "45000"}, "share.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."},
		{map[string]string{"streams.num.standby.replicas": "3"}, "streams.num.standby.replicas must be less than or equal to 2"},
		{map[string]string{"streams.task.offset.interval.ms": "100"}, "streams.task.offset.interval.ms must be greater than or equal to 15000"},
		{map[string]string{"streams.num.warmup.replicas": "21"}, "streams.num.warmup.replicas must be less than or equal to 20"},
		{map[string]string{"streams.assignor.name": "x"}, "streams.assignor.name 'x' is not a registered task assignor. Registered assignors are: [sticky]."},
		{map[string]string{"streams.rack.aware.assignment.tags": "a,b,a"}, "streams.rack.aware.assignment.tags must not contain duplicate tag keys."},
		{map[string]string{"errors.deadletterqueue.topic.name": "__x"}, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"},
		{map[string]string{"consumer.assignor.offload.enable": "maybe"}, "Invalid value maybe for configuration consumer.assignor.offload.enable: Expected value to be either true or false"},
		{map[string]string{"streams.acceptable.recovery.lag": "-1"}, "Invalid value -1 for configuration streams.acceptable.recovery.lag: Value must be at least 0"},
		{map[string]string{"consumer.assignment.interval.ms": "20000"}, "consumer.assignment.interval.ms must be in the range 0 to 15000 inclusive."},
		{map[string]string{"share.renew.acknowledge.enable": "false"}, ""},
		{map[string]string{"streams.initial.rebalance.delay.ms": "-1"}, "Invalid value -1 for configuration streams.initial.rebalance.delay.ms: Value must be at least 0"},
		{map[string]string{"consumer.session.timeout.ms": " 50000 "}, ""},
	} {
		err := c.ValidateGroupConfigs(tc.in)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%v:\n got  %q\n want %q", tc.in, got, tc.want)
		}
	}
}

func TestValidateGroupConfigsSessionExceedsHeartbeat(t *testing.T) {
	c := groupTestConfig(t, map[string]string{"group.consumer.min.session.timeout.ms": "1000", "group.consumer.max.heartbeat.interval.ms": "50000"})
	err := c.ValidateGroupConfigs(map[string]string{"consumer.heartbeat.interval.ms": "45000"})
	if err == nil || err.Error() != "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms" {
		t.Fatalf("got %v", err)
	}
}

func TestResolveGroupConfig(t *testing.T) {
	c := groupTestConfig(t, map[string]string{"group.share.record.lock.duration.ms": "20000", "group.share.max.record.lock.duration.ms": "40000"})
	g := c.ResolveGroupConfig(nil)
	if g.ShareRecordLockDuration() != 20*time.Second || g.ShareDeliveryCountLimit() != 5 || g.SharePartitionMaxRecordLocks() != 2000 ||
		g.ShareAutoOffsetReset().Kind != ShareResetLatest || g.ShareIsolationLevel() != 0 || g.ConsumerSessionTimeout() != 45*time.Second ||
		g.ConsumerHeartbeatInterval() != 5*time.Second || g.ShareSessionTimeout() != 45*time.Second || g.ShareHeartbeatInterval() != 5*time.Second ||
		g.StreamsAssignorName() != "sticky" || !g.ShareRenewAcknowledgeEnable() || g.ErrorsDLQTopicName() != "" {
		t.Fatalf("defaults: %+v", g)
	}
	g = c.ResolveGroupConfig(map[string]string{"share.record.lock.duration.ms": "90000", "share.auto.offset.reset": "by_duration:P1DT2H",
		"share.isolation.level": "read_committed", "share.delivery.count.limit": "bogus", "consumer.session.timeout.ms": "50000"})
	if g.ShareRecordLockDuration() != 40*time.Second { // clamped to the broker's current maximum
		t.Errorf("lock duration %v", g.ShareRecordLockDuration())
	}
	if r := g.ShareAutoOffsetReset(); r.Kind != ShareResetByDuration || r.Duration != 26*time.Hour {
		t.Errorf("reset %+v", r)
	}
	if g.ShareIsolationLevel() != 1 || g.ShareDeliveryCountLimit() != 5 || g.ConsumerSessionTimeout() != 50*time.Second {
		t.Errorf("%+v", g)
	}
	var zero GroupConfig
	if zero.ShareDeliveryCountLimit() != 5 || zero.ConsumerSessionTimeout() != 45*time.Second {
		t.Errorf("zero value: %d %v", zero.ShareDeliveryCountLimit(), zero.ConsumerSessionTimeout())
	}
}

func TestParseISODuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"PT1H": time.Hour, "P1D": 24 * time.Hour, "PT1.5S": 1500 * time.Millisecond,
		"pt2m": 2 * time.Minute, "-PT1H": -time.Hour, "PT0S": 0} {
		if got, ok := parseISODuration(in); !ok || got != want {
			t.Errorf("%s: %v %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "P", "PT", "P1DT", "1H", "PT1X"} {
		if _, ok := parseISODuration(in); ok {
			t.Errorf("%s accepted", in)
		}
	}
}

// FuzzGroupConfigs: any key and value validate, resolve and describe
// without a panic, and a value that validates resolves to itself.
func FuzzGroupConfigs(f *testing.F) {
	c := groupTestConfig(f, nil)
	for _, s := range [][2]string{{"share.auto.offset.reset", "by_duration:P1DT2H3M4.5S"}, {"share.delivery.count.limit", " 3 "},
		{"streams.rack.aware.assignment.tags", "a, b"}, {"consumer.session.timeout.ms", "99999999999"}, {"x", "y"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, name, value string) {
		m := map[string]string{name: value}
		err := c.ValidateGroupConfigs(m)
		g := c.ResolveGroupConfig(m)
		_ = g.ShareAutoOffsetReset()
		_ = g.StreamsRackAwareAssignmentTags()
		_, _ = g.Value(name)
		for _, k := range GroupKeys() {
			_, _ = c.GroupDescribeValue(k, m, nil, nil)
		}
		if k, ok := LookupGroupKey(name); ok && err == nil && k.Type == TypeInt {
			if _, ok := g.Override(name); !ok {
				t.Fatalf("%s=%q validated but not resolved", name, value)
			}
		}
	})
}
