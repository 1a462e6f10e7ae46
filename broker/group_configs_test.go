package broker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

func setGroupConfig(t *testing.T, b *Broker, group string, kv ...string) {
	t.Helper()
	var recs []metadatacache.Record
	for i := 0; i+1 < len(kv); i += 2 {
		r := metadatacache.NewConfigRecord()
		r.ResourceType, r.ResourceName, r.Name, r.Value = metadatacache.ConfigResourceGroup, group, kv[i], strPtr(kv[i+1])
		recs = append(recs, r)
	}
	off := b.meta.Image().Offset + 1
	if err := b.meta.Apply(metadatacache.Batch{BaseOffset: off, LastOffset: off + int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
}

// TestDescribeGroupConfigs: DescribeConfigs of GROUP resources as
// ConfigHelper answers them: every non-internal GroupConfig key, the
// override (GROUP_CONFIG) else the broker's group.* value (DEFAULT_CONFIG
// with the broker key as synonym) else GroupConfig's default.
func TestDescribeGroupConfigs(t *testing.T) {
	b := apiTestBroker(t)
	setGroupConfig(t, b, "g", "share.auto.offset.reset", "earliest", "share.delivery.count.limit", " 3 ", "streams.num.warmup.replicas", "4")
	// A dynamic broker config of a group key's synonym is its current value.
	bcr := metadatacache.NewConfigRecord()
	bcr.ResourceType, bcr.ResourceName, bcr.Name, bcr.Value = metadatacache.ConfigResourceBroker, "1", "group.consumer.assignment.interval.ms", strPtr("2000")
	off := b.meta.Image().Offset + 1
	if err := b.meta.Apply(metadatacache.Batch{BaseOffset: off, LastOffset: off, Epoch: 1, Records: []metadatacache.Record{bcr}}); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	for _, name := range []string{"g", "other", ""} {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, name
		req.Resources = append(req.Resources, r)
	}
	resp := call[*kmsg.DescribeConfigsResponse](t, b, "PLAINTEXT", req, 4)
	if len(resp.Resources) != 3 {
		t.Fatalf("%d resources", len(resp.Resources))
	}
	if e := resp.Resources[2]; e.ErrorCode != kerr.InvalidRequest.Code || e.ErrorMessage == nil || *e.ErrorMessage != "Group name must not be empty" {
		t.Fatalf("empty name: %d %v", e.ErrorCode, e.ErrorMessage)
	}
	describe := func(rr kmsg.DescribeConfigsResponseResource) map[string]string {
		if rr.ErrorCode != 0 || rr.ErrorMessage == nil || *rr.ErrorMessage != "" {
			t.Fatalf("%s: error %d %v", rr.ResourceName, rr.ErrorCode, rr.ErrorMessage)
		}
		out := make(map[string]string)
		for _, c := range rr.Configs {
			var syn []string
			for _, s := range c.ConfigSynonyms {
				syn = append(syn, fmt.Sprintf("%d:%s=%s", s.Source, s.Name, *s.Value))
			}
			if c.IsSensitive || c.ReadOnly || c.Documentation == nil || *c.Documentation == "" {
				t.Errorf("%s %s: sensitive %v read-only %v doc %v", rr.ResourceName, c.Name, c.IsSensitive, c.ReadOnly, c.Documentation)
			}
			v := "null"
			if c.Value != nil {
				v = *c.Value
			}
			out[c.Name] = fmt.Sprintf("%s src=%d type=%d {%s}", v, c.Source, c.ConfigType, strings.Join(syn, ", "))
		}
		return out
	}
	g := describe(resp.Resources[0])
	for name, want := range map[string]string{
		"share.auto.offset.reset":            "earliest src=8 type=2 {8:share.auto.offset.reset=earliest, 5:share.auto.offset.reset=latest}",
		"share.delivery.count.limit":         "3 src=8 type=3 {8:share.delivery.count.limit= 3 , 5:group.share.delivery.count.limit=5}",
		"streams.num.warmup.replicas":        "4 src=8 type=3 {8:streams.num.warmup.replicas=4, 5:group.streams.num.warmup.replicas=2}",
		"share.isolation.level":              "read_uncommitted src=5 type=2 {5:share.isolation.level=read_uncommitted}",
		"share.record.lock.duration.ms":      "30000 src=5 type=3 {5:group.share.record.lock.duration.ms=30000}",
		"consumer.session.timeout.ms":        "45000 src=5 type=3 {5:group.consumer.session.timeout.ms=45000}",
		"streams.assignor.name":              "sticky src=5 type=2 {5:group.streams.assignors=sticky}",
		"streams.rack.aware.assignment.tags": " src=5 type=7 {5:group.streams.rack.aware.assignment.tags=}",
		"errors.deadletterqueue.topic.name":  " src=5 type=2 {5:errors.deadletterqueue.topic.name=}",
		"share.renew.acknowledge.enable":     "true src=5 type=1 {5:share.renew.acknowledge.enable=true}",
		"consumer.assignment.interval.ms":    "2000 src=2 type=3 {2:group.consumer.assignment.interval.ms=2000, 5:group.consumer.assignment.interval.ms=1000}",
	} {
		if g[name] != want {
			t.Errorf("g %s:\n got  %s\n want %s", name, g[name], want)
		}
	}
	if len(g) != 22 { // 21 non-internal keys and the internal override
		t.Errorf("g: %d keys: %v", len(g), g)
	}
	other := describe(resp.Resources[1])
	if len(other) != 21 || !strings.HasPrefix(other["share.auto.offset.reset"], "latest src=5") {
		t.Errorf("other: %d keys, share.auto.offset.reset %s", len(other), other["share.auto.offset.reset"])
	}
	if _, ok := other["streams.num.warmup.replicas"]; ok {
		t.Error("internal key listed without an override")
	}

	// ConfigNames limits the answer; synonyms and docs only when asked.
	req = kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName, r.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, "g", []string{"share.delivery.count.limit"}
	req.Resources = append(req.Resources, r)
	resp = call[*kmsg.DescribeConfigsResponse](t, b, "PLAINTEXT", req, 4)
	if cs := resp.Resources[0].Configs; len(cs) != 1 || *cs[0].Value != "3" || cs[0].Source != 8 || len(cs[0].ConfigSynonyms) != 0 || cs[0].Documentation != nil {
		t.Fatalf("named: %+v", cs)
	}

	// The lookup the coordinators use: overrides, then resolved settings.
	if o := b.GroupConfigs("g"); len(o) != 3 || o["share.auto.offset.reset"] != "earliest" {
		t.Fatalf("GroupConfigs %v", o)
	}
	gc := b.GroupConfig("g")
	if gc.ConsumerAssignmentInterval() != 2*time.Second {
		t.Errorf("assignment interval %v, want the dynamic broker config's 2s", gc.ConsumerAssignmentInterval())
	}
	if gc.ShareDeliveryCountLimit() != 3 || gc.ShareAutoOffsetReset().Raw != "earliest" || gc.ShareRecordLockDuration() != 30*time.Second {
		t.Fatalf("GroupConfig %+v", gc)
	}
	if b.GroupConfigs("other") != nil || b.GroupConfig("other").ShareDeliveryCountLimit() != 5 {
		t.Fatal("other group")
	}
}

// TestGroupDescribeOrder: the entries come in the order Kafka 4.4.0's
// GroupConfig gives them (the internal keys of originals().keySet(), then
// nonInternalValues().keySet(), printed by the 4.4.0 jar; a Kafka 4.4
// broker answers in this order).
func TestGroupDescribeOrder(t *testing.T) {
	want := "consumer.session.timeout.ms,streams.assignor.name,consumer.assignment.interval.ms,errors.deadletterqueue.copy.record.enable," +
		"share.auto.offset.reset,streams.rack.aware.assignment.tags,share.renew.acknowledge.enable,streams.initial.rebalance.delay.ms," +
		"share.session.timeout.ms,streams.assignment.interval.ms,share.heartbeat.interval.ms,streams.heartbeat.interval.ms," +
		"share.delivery.count.limit,errors.deadletterqueue.topic.name,consumer.heartbeat.interval.ms,share.record.lock.duration.ms," +
		"share.assignment.interval.ms,share.isolation.level,streams.session.timeout.ms,share.partition.max.record.locks,streams.num.standby.replicas"
	if got := strings.Join(groupDescribeOrder(nil), ","); got != want {
		t.Fatalf("order\n got  %s\n want %s", got, want)
	}
	// originals().keySet() of extractGroupConfigMap plus these overrides:
	// streams.assignor.name,consumer.session.timeout.ms,...,share.assignor.offload.enable,...,
	// streams.num.warmup.replicas,...,consumer.assignor.offload.enable,...,streams.acceptable.recovery.lag,
	// ...,streams.assignor.offload.enable,...,streams.task.offset.interval.ms,...
	internal := map[string]string{"streams.num.warmup.replicas": "1", "consumer.assignor.offload.enable": "true", "streams.acceptable.recovery.lag": "1",
		"share.assignor.offload.enable": "true", "streams.task.offset.interval.ms": "100000", "streams.assignor.offload.enable": "true"}
	wantInternal := "share.assignor.offload.enable,streams.num.warmup.replicas,consumer.assignor.offload.enable," +
		"streams.acceptable.recovery.lag,streams.assignor.offload.enable,streams.task.offset.interval.ms," + want
	if got := strings.Join(groupDescribeOrder(internal), ","); got != wantInternal {
		t.Fatalf("order with internal overrides\n got  %s\n want %s", got, wantInternal)
	}
}
