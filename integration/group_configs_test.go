//go:build integration

package integration

// Group configs (ConfigResource type GROUP; KIP-848's consumer.* keys,
// KIP-932's share.* keys): kafka-configs.sh --entity-type groups alters,
// describes and deletes them with Kafka 4.4's answers and refusals (an
// unknown key, a value outside the broker's group.* bounds, a bad
// share.auto.offset.reset), ListConfigResources lists the group, and a
// KIP-848 consumer group's heartbeat interval follows its
// consumer.heartbeat.interval.ms.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestGroupConfigs(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	configs := func(args ...string) ToolResult {
		return KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh",
			append([]string{"--bootstrap-server", b.Addr, "--entity-type", "groups"}, args...)...)
	}
	ok := func(what string, r ToolResult, want string) {
		t.Helper()
		if r.ExitCode != 0 || r.Stdout != want {
			t.Errorf("%s: want exit 0 and stdout %q:\n%s", what, want, r)
		}
	}
	fails := func(what string, r ToolResult, want ...string) {
		t.Helper()
		if r.ExitCode != 1 {
			t.Errorf("%s: want exit 1:\n%s", what, r)
			return
		}
		for _, w := range want {
			if !strings.Contains(r.Stdout+r.Stderr, w) {
				t.Errorf("%s: want %q in the output:\n%s", what, w, r)
			}
		}
	}

	// kafka-configs.sh looks the group up in ListGroups and
	// ListConfigResources first.
	ok("describe before", configs("--describe", "--entity-name", "g1"), "The group 'g1' doesn't exist and doesn't have dynamic config.\n")
	ok("alter", configs("--alter", "--entity-name", "g1", "--add-config",
		"share.auto.offset.reset=earliest,share.delivery.count.limit=3,consumer.heartbeat.interval.ms=6000"),
		"Completed updating config for group g1.\n")
	ok("describe", configs("--describe", "--entity-name", "g1"), "Dynamic configs for group g1 are:\n"+
		"  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=6000, DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}\n"+
		"  share.auto.offset.reset=earliest sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest}\n"+
		"  share.delivery.count.limit=3 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=3, DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n")
	all := configs("--describe", "--entity-name", "g1", "--all")
	for _, want := range []string{
		"All configs for group g1 are:\n",
		"  share.delivery.count.limit=3 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=3, DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n",
		"  share.isolation.level=read_uncommitted sensitive=false synonyms={DEFAULT_CONFIG:share.isolation.level=read_uncommitted}\n",
		"  share.record.lock.duration.ms=30000 sensitive=false synonyms={DEFAULT_CONFIG:group.share.record.lock.duration.ms=30000}\n",
		"  streams.assignor.name=sticky sensitive=false synonyms={DEFAULT_CONFIG:group.streams.assignors=sticky}\n",
		"  consumer.session.timeout.ms=45000 sensitive=false synonyms={DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n",
	} {
		if !strings.Contains(all.Stdout, want) {
			t.Errorf("describe --all: want %q:\n%s", want, all)
		}
	}
	if n := len(lines(all.Stdout)); all.ExitCode != 0 || n != 22 {
		t.Errorf("describe --all: %d lines, want the header and 21 keys:\n%s", n, all)
	}

	// Refusals leave the group's configs as they are.
	fails("unknown key", configs("--alter", "--entity-name", "g1", "--add-config", "foo=1"),
		"Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: Unknown group config name: foo")
	fails("above the broker's maximum", configs("--alter", "--entity-name", "g1", "--add-config", "share.delivery.count.limit=11"),
		"Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: share.delivery.count.limit must be in the range 2 to 10 inclusive.")
	fails("below the broker's minimum", configs("--alter", "--entity-name", "g1", "--add-config", "consumer.session.timeout.ms=44000"),
		"Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.")
	fails("bad reset", configs("--alter", "--entity-name", "g1", "--add-config", "share.auto.offset.reset=EARLIEST"),
		"Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: Invalid value EARLIEST for configuration share.auto.offset.reset")
	fails("no name", configs("--alter", "--entity-name", "", "--add-config", "share.delivery.count.limit=3"))
	ok("by_duration", configs("--alter", "--entity-name", "g2", "--add-config", "share.auto.offset.reset=by_duration:PT1H"),
		"Completed updating config for group g2.\n")

	// DescribeConfigs itself: sources, types, flags, documentation, the
	// error message, an internal key listed once set.
	ok("internal key", configs("--alter", "--entity-name", "g2", "--add-config", "streams.num.warmup.replicas=3"),
		"Completed updating config for group g2.\n")
	if got := describeGroupRaw(t, b, "g2", "", "x"); got != groupDescribeGolden {
		t.Errorf("DescribeConfigs:\n got  %s\n want %s", got, groupDescribeGolden)
	}
	// In Kafka's order (GroupConfig's HashMaps), the internal key first.
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "g2"
	dreq.Resources = append(dreq.Resources, dr)
	var order []string
	for _, c := range rawRequest(t, b, b.Port, dreq, 4).(*kmsg.DescribeConfigsResponse).Resources[0].Configs {
		order = append(order, c.Name)
	}
	if got, want := strings.Join(order, ","), "streams.num.warmup.replicas,consumer.session.timeout.ms,streams.assignor.name,consumer.assignment.interval.ms,"+
		"errors.deadletterqueue.copy.record.enable,share.auto.offset.reset,streams.rack.aware.assignment.tags,share.renew.acknowledge.enable,"+
		"streams.initial.rebalance.delay.ms,share.session.timeout.ms,streams.assignment.interval.ms,share.heartbeat.interval.ms,"+
		"streams.heartbeat.interval.ms,share.delivery.count.limit,errors.deadletterqueue.topic.name,consumer.heartbeat.interval.ms,"+
		"share.record.lock.duration.ms,share.assignment.interval.ms,share.isolation.level,streams.session.timeout.ms,"+
		"share.partition.max.record.locks,streams.num.standby.replicas"; got != want {
		t.Errorf("DescribeConfigs order:\n got  %s\n want %s", got, want)
	}

	// A dynamic broker config of a key's broker synonym: the group's value
	// and synonyms follow it.
	brokers := KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-server", b.Addr,
		"--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "group.consumer.assignment.interval.ms=2000")
	if brokers.ExitCode != 0 {
		t.Errorf("cluster default group.consumer.assignment.interval.ms:\n%s", brokers)
	}
	want := "  consumer.assignment.interval.ms=2000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:group.consumer.assignment.interval.ms=2000, DEFAULT_CONFIG:group.consumer.assignment.interval.ms=1000}\n"
	waitFor(t, 30*time.Second, "the cluster default in the group's describe", func() error {
		if r := configs("--describe", "--entity-name", "g1", "--all"); !strings.Contains(r.Stdout, want) {
			return fmt.Errorf("want %q:\n%s", want, r)
		}
		return nil
	})

	// The broker's preprocess checks (ConfigAdminManager.preprocess), then
	// the controller's.
	for _, tc := range []struct {
		name    string
		configs []kmsg.IncrementalAlterConfigsRequestResourceConfig
		want    string
	}{
		{"", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: kmsg.StringPtr("3")}},
			"42 Default group resources are not allowed."},
		{"g3", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "streams.rack.aware.assignment.tags", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("a")}},
			"40 Can't APPEND to key streams.rack.aware.assignment.tags because its type is not LIST."},
		// An unknown operation: Kafka's controller fails with a
		// NullPointerException (and renounces leadership).
		{"g3", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Op: 9, Value: kmsg.StringPtr("3")}},
			"-1 "},
		{"g3", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit"}, {Name: "share.isolation.level"}},
			"42 Null value not supported for : share.delivery.count.limit, share.isolation.level"},
		{"g3", []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: kmsg.StringPtr("3")}, {Name: "share.delivery.count.limit", Value: kmsg.StringPtr("4")}},
			"42 Error due to duplicate config keys"},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rs := kmsg.NewIncrementalAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName, rs.Configs = kmsg.ConfigResourceTypeGroupConfig, tc.name, tc.configs
		req.Resources = append(req.Resources, rs)
		rr := rawRequest(t, b, b.Port, req, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		msg := ""
		if rr.ErrorMessage != nil {
			msg = *rr.ErrorMessage
		}
		if got := fmt.Sprintf("%d %s", rr.ErrorCode, msg); got != tc.want {
			t.Errorf("IncrementalAlterConfigs: got %q, want %q", got, tc.want)
		}
	}
	// Legacy AlterConfigs replaces the group's configs.
	for _, tc := range []struct {
		name         string
		configs      []kmsg.AlterConfigsRequestResourceConfig
		validateOnly bool
		want         string
	}{
		{"", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: kmsg.StringPtr("3")}}, false, "42 Default group resources are not allowed."},
		{"g3", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit"}}, false, "42 Null value not supported for : share.delivery.count.limit"},
		{"g3", []kmsg.AlterConfigsRequestResourceConfig{{Name: "foo", Value: kmsg.StringPtr("1")}}, false, "40 Unknown group config name: foo"},
		{"g3", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.session.timeout.ms", Value: kmsg.StringPtr("40000")}}, false,
			"40 share.session.timeout.ms must be in the range 45000 to 60000 inclusive."},
		{"g3", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.isolation.level", Value: kmsg.StringPtr("read_committed")}}, true, "0 "},
		{"g3", []kmsg.AlterConfigsRequestResourceConfig{{Name: "share.delivery.count.limit", Value: kmsg.StringPtr("4")}}, false, "0 "},
	} {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.ValidateOnly = tc.validateOnly
		rs := kmsg.NewAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName, rs.Configs = kmsg.ConfigResourceTypeGroupConfig, tc.name, tc.configs
		req.Resources = append(req.Resources, rs)
		rr := rawRequest(t, b, b.Port, req, 2).(*kmsg.AlterConfigsResponse).Resources[0]
		msg := ""
		if rr.ErrorMessage != nil {
			msg = *rr.ErrorMessage
		}
		if got := fmt.Sprintf("%d %s", rr.ErrorCode, msg); got != tc.want {
			t.Errorf("AlterConfigs %q %v: got %q, want %q", tc.name, tc.configs, got, tc.want)
		}
	}
	ok("describe g3", configs("--describe", "--entity-name", "g3"), "Dynamic configs for group g3 are:\n"+
		"  share.delivery.count.limit=4 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=4, DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n")

	// ListConfigResources lists the groups with configs (Kafka's from its
	// GroupConfigManager, updated when the broker's metadata catches up).
	waitFor(t, 30*time.Second, "ListConfigResources to list g1, g2 and g3", func() error {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = []int8{32}
		resp := rawRequest(t, b, b.Port, req, 1).(*kmsg.ListConfigResourcesResponse)
		var names []string
		for _, r := range resp.ConfigResources {
			names = append(names, r.Name)
		}
		slices.Sort(names)
		if resp.ErrorCode != 0 || !slices.Equal(names, []string{"g1", "g2", "g3"}) {
			return fmt.Errorf("error %d, %v", resp.ErrorCode, names)
		}
		return nil
	})

	// A KIP-848 member of g1 is told the group's heartbeat interval.
	var hb *kmsg.ConsumerGroupHeartbeatResponse
	waitFor(t, 60*time.Second, "a ConsumerGroupHeartbeat answer", func() error {
		fc := kmsg.NewPtrFindCoordinatorRequest() // creates __consumer_offsets
		fc.CoordinatorKeys = []string{"g1"}
		rawRequest(t, b, b.Port, fc, 4)
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "g1", "m1-0123456789abcdef", 0, 30000
		r.SubscribedTopicNames, r.Topics = []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		hb = rawRequest(t, b, b.Port, r, 1).(*kmsg.ConsumerGroupHeartbeatResponse)
		return kerr.ErrorForCode(hb.ErrorCode)
	})
	if hb.HeartbeatIntervalMillis != 6000 {
		t.Errorf("heartbeat interval %d, want g1's 6000", hb.HeartbeatIntervalMillis)
	}

	ok("delete", configs("--alter", "--entity-name", "g1", "--delete-config", "share.auto.offset.reset,consumer.heartbeat.interval.ms"),
		"Completed updating config for group g1.\n")
	ok("describe after delete", configs("--describe", "--entity-name", "g1"), "Dynamic configs for group g1 are:\n"+
		"  share.delivery.count.limit=3 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=3, DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n")
	ok("describe every group", configs("--describe"), "Dynamic configs for group g1 are:\n"+
		"  share.delivery.count.limit=3 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=3, DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n"+
		"Dynamic configs for group g2 are:\n"+
		"  share.auto.offset.reset=by_duration:PT1H sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=by_duration:PT1H, DEFAULT_CONFIG:share.auto.offset.reset=latest}\n"+
		"  streams.num.warmup.replicas=3 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:streams.num.warmup.replicas=3, DEFAULT_CONFIG:group.streams.num.warmup.replicas=2}\n"+
		"Dynamic configs for group g3 are:\n"+
		"  share.delivery.count.limit=4 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.delivery.count.limit=4, DEFAULT_CONFIG:group.share.delivery.count.limit=5}\n")
}

// groupDescribeGolden is Kafka 4.4.0's DescribeConfigs v4 answer (with
// synonyms and documentation) for g2, "" and a group without configs,
// summarized by describeGroupRaw.
const groupDescribeGolden = `[g2 err=0 msg="" n=22] consumer.assignment.interval.ms="1000" src=5 s=false ro=false type=3 doc=true syn={5:group.consumer.assignment.interval.ms="1000"};` +
	` consumer.heartbeat.interval.ms="5000" src=5 s=false ro=false type=3 doc=true syn={5:group.consumer.heartbeat.interval.ms="5000"};` +
	` consumer.session.timeout.ms="45000" src=5 s=false ro=false type=3 doc=true syn={5:group.consumer.session.timeout.ms="45000"};` +
	` errors.deadletterqueue.copy.record.enable="false" src=5 s=false ro=false type=1 doc=true syn={5:errors.deadletterqueue.copy.record.enable="false"};` +
	` errors.deadletterqueue.topic.name="" src=5 s=false ro=false type=2 doc=true syn={5:errors.deadletterqueue.topic.name=""};` +
	` share.assignment.interval.ms="1000" src=5 s=false ro=false type=3 doc=true syn={5:group.share.assignment.interval.ms="1000"};` +
	` share.auto.offset.reset="by_duration:PT1H" src=8 s=false ro=false type=2 doc=true syn={8:share.auto.offset.reset="by_duration:PT1H",5:share.auto.offset.reset="latest"};` +
	` share.delivery.count.limit="5" src=5 s=false ro=false type=3 doc=true syn={5:group.share.delivery.count.limit="5"};` +
	` share.heartbeat.interval.ms="5000" src=5 s=false ro=false type=3 doc=true syn={5:group.share.heartbeat.interval.ms="5000"};` +
	` share.isolation.level="read_uncommitted" src=5 s=false ro=false type=2 doc=true syn={5:share.isolation.level="read_uncommitted"};` +
	` share.partition.max.record.locks="2000" src=5 s=false ro=false type=3 doc=true syn={5:group.share.partition.max.record.locks="2000"};` +
	` share.record.lock.duration.ms="30000" src=5 s=false ro=false type=3 doc=true syn={5:group.share.record.lock.duration.ms="30000"};` +
	` share.renew.acknowledge.enable="true" src=5 s=false ro=false type=1 doc=true syn={5:share.renew.acknowledge.enable="true"};` +
	` share.session.timeout.ms="45000" src=5 s=false ro=false type=3 doc=true syn={5:group.share.session.timeout.ms="45000"};` +
	` streams.assignment.interval.ms="1000" src=5 s=false ro=false type=3 doc=true syn={5:group.streams.assignment.interval.ms="1000"};` +
	` streams.assignor.name="sticky" src=5 s=false ro=false type=2 doc=true syn={5:group.streams.assignors="sticky"};` +
	` streams.heartbeat.interval.ms="5000" src=5 s=false ro=false type=3 doc=true syn={5:group.streams.heartbeat.interval.ms="5000"};` +
	` streams.initial.rebalance.delay.ms="3000" src=5 s=false ro=false type=3 doc=true syn={5:group.streams.initial.rebalance.delay.ms="3000"};` +
	` streams.num.standby.replicas="0" src=5 s=false ro=false type=3 doc=true syn={5:group.streams.num.standby.replicas="0"};` +
	` streams.num.warmup.replicas="3" src=8 s=false ro=false type=3 doc=true syn={8:streams.num.warmup.replicas="3",5:group.streams.num.warmup.replicas="2"};` +
	` streams.rack.aware.assignment.tags="" src=5 s=false ro=false type=7 doc=true syn={5:group.streams.rack.aware.assignment.tags=""};` +
	` streams.session.timeout.ms="45000" src=5 s=false ro=false type=3 doc=true syn={5:group.streams.session.timeout.ms="45000"};` +
	`[ err=42 msg="Group name must not be empty" n=0][x err=0 msg="" n=1] share.delivery.count.limit="5" src=5 s=false ro=false type=3 doc=true syn={5:group.share.delivery.count.limit="5"};`

// describeGroupRaw summarizes a DescribeConfigs v4 answer for the groups:
// per resource its error, then per key its value, source, flags, type,
// whether it has documentation, and its synonyms.
func describeGroupRaw(t *testing.T, b *Broker, groups ...string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	for _, g := range groups {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
		if g == "x" {
			r.ConfigNames = []string{"share.delivery.count.limit", "streams.num.warmup.replicas"}
		}
		req.Resources = append(req.Resources, r)
	}
	resp := rawRequest(t, b, b.Port, req, 4).(*kmsg.DescribeConfigsResponse)
	str := func(p *string) string {
		if p == nil {
			return "null"
		}
		return strconv.Quote(*p)
	}
	var sb strings.Builder
	for _, r := range resp.Resources {
		fmt.Fprintf(&sb, "[%s err=%d msg=%s n=%d]", r.ResourceName, r.ErrorCode, str(r.ErrorMessage), len(r.Configs))
		cs := slices.Clone(r.Configs)
		slices.SortFunc(cs, func(a, b kmsg.DescribeConfigsResponseResourceConfig) int { return strings.Compare(a.Name, b.Name) })
		for _, c := range cs {
			fmt.Fprintf(&sb, " %s=%s src=%d s=%v ro=%v type=%d doc=%v syn={", c.Name, str(c.Value), c.Source, c.IsSensitive, c.ReadOnly,
				c.ConfigType, c.Documentation != nil && *c.Documentation != "")
			for i, y := range c.ConfigSynonyms {
				if i > 0 {
					sb.WriteString(",")
				}
				fmt.Fprintf(&sb, "%d:%s=%s", y.Source, y.Name, str(y.Value))
			}
			sb.WriteString("};")
		}
	}
	return sb.String()
}
