package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// TestClientMetricsConfigs: CLIENT_METRICS resources in IncrementalAlterConfigs
// and AlterConfigs, with the answers Kafka 4.4.0 gave to the same requests.
func TestClientMetricsConfigs(t *testing.T) {
	e := newTestEnv(t, nil)
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
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeClientMetrics, name
		for _, o := range ops {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = o.name, o.op, o.v
			r.Configs = append(r.Configs, c)
		}
		req.Resources = append(req.Resources, r)
		rr := e.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources[0]
		return errOf(rr.ErrorCode, rr.ErrorMessage)
	}
	set := func(k, v string) op { return op{k, kmsg.IncrementalAlterConfigOpSet, strp(v)} }
	for _, tc := range []struct {
		name string
		ops  []op
		want string
	}{
		{"", []op{set("interval.ms", "1000")}, "INVALID_REQUEST: Subscription name can't be empty"},
		{"s", []op{set("metrics", "a"), set("metrics", "b")}, "INVALID_REQUEST: Error due to duplicate config keys"},
		{"s", []op{{"metrics", kmsg.IncrementalAlterConfigOpSet, nil}, {"match", kmsg.IncrementalAlterConfigOpSet, nil}}, "INVALID_REQUEST: Null value not supported for : metrics, match"},
		{"s", []op{{"metrics", kmsg.IncrementalAlterConfigOpAppend, strp("b")}}, "INVALID_CONFIG: Can't APPEND to key metrics because its type is not LIST."},
		{"s", []op{{"interval.ms", 9, strp("1")}}, "UNKNOWN_SERVER_ERROR"},
		{"s", []op{set("foo", "1"), set("interval.ms", "1")}, "INVALID_REQUEST: Unknown client metrics configuration: foo"},
		{"s", []op{set("interval.ms", "3600001")}, "INVALID_REQUEST: Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", []op{set("interval.ms", "5000000000")}, "INVALID_CONFIG: Invalid value 5000000000 for configuration interval.ms: Not a number of type INT"},
		{"s", []op{set("match", "client_id=a=b")}, "INVALID_CONFIG: Illegal client matching pattern: client_id=a=b"},
		{"gone", []op{{"interval.ms", kmsg.IncrementalAlterConfigOpDelete, nil}}, "NONE"},
		{"s", []op{set("metrics", " a , b "), set("interval.ms", " 200 ")}, "NONE"},
	} {
		if got := inc(tc.name, tc.ops...); got != tc.want {
			t.Errorf("%s %v: got %q, want %q", tc.name, tc.ops, got, tc.want)
		}
	}
	res := metadatacache.ConfigResource{Type: metadatacache.ConfigResourceClientMetrics, Name: "s"}
	if cfg := e.c.Image().Configs(res); len(cfg) != 2 || cfg["metrics"] != " a , b " || cfg["interval.ms"] != " 200 " {
		t.Fatalf("stored %v", cfg)
	}
	if cfg := e.c.Image().Configs(metadatacache.ConfigResource{Type: metadatacache.ConfigResourceClientMetrics, Name: "gone"}); cfg != nil {
		t.Fatalf("deleting a key of no subscription created one: %v", cfg)
	}

	// AlterConfigs replaces the subscription's configs.
	legacy := func(name string, cfgs ...kmsg.AlterConfigsRequestResourceConfig) string {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = 2
		r := kmsg.NewAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName, r.Configs = kmsg.ConfigResourceTypeClientMetrics, name, cfgs
		req.Resources = append(req.Resources, r)
		rr := e.do(req).(*kmsg.AlterConfigsResponse).Resources[0]
		return errOf(rr.ErrorCode, rr.ErrorMessage)
	}
	if got := legacy("s", kmsg.AlterConfigsRequestResourceConfig{Name: "interval.ms", Value: strp("2000")}); got != "NONE" {
		t.Fatal(got)
	}
	if cfg := e.c.Image().Configs(res); len(cfg) != 1 || cfg["interval.ms"] != "2000" {
		t.Fatalf("after AlterConfigs: %v", cfg)
	}
	for _, tc := range []struct {
		name string
		cfg  kmsg.AlterConfigsRequestResourceConfig
		want string
	}{
		{"", kmsg.AlterConfigsRequestResourceConfig{Name: "interval.ms", Value: strp("2000")}, "INVALID_REQUEST: Subscription name can't be empty"},
		{"s", kmsg.AlterConfigsRequestResourceConfig{Name: "foo", Value: strp("1")}, "INVALID_REQUEST: Unknown client metrics configuration: foo"},
		{"s", kmsg.AlterConfigsRequestResourceConfig{Name: "interval.ms"}, "INVALID_REQUEST: Null value not supported for : interval.ms"},
	} {
		if got := legacy(tc.name, tc.cfg); got != tc.want {
			t.Errorf("legacy %s %s: got %q, want %q", tc.name, tc.cfg.Name, got, tc.want)
		}
	}
}
