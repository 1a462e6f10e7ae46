package config

import (
	"slices"
	"testing"
)

// The orders below are Kafka 4.4's answers (ListConfigResources' client
// metrics names, GetTelemetrySubscriptions' requested metrics).
func TestJavaHashOrder(t *testing.T) {
	got := JavaHashOrder([]string{"legacy", "s100", "s200", "sd", "se", "sp", "sub1", "sub3"}, true)
	want := []string{"sd", "se", "legacy", "sub3", "sub1", "s200", "s100", "sp"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	got = JavaHashOrder([]string{"a", "org.apache.kafka.producer."}, false)
	want = []string{"org.apache.kafka.producer.", "a"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestValidateClientMetrics(t *testing.T) {
	for _, c := range []struct {
		name    string
		configs map[string]string
		invReq  bool
		msg     string
	}{
		{"", map[string]string{"interval.ms": "1000"}, true, "Subscription name can't be empty"},
		{"s", map[string]string{"foo": "1", "interval.ms": "1"}, true, "Unknown client metrics configuration: foo"},
		{"s", map[string]string{"interval.ms": "abc"}, false, "Invalid value abc for configuration interval.ms: Not a number of type INT"},
		{"s", map[string]string{"interval.ms": "5000000000"}, false, "Invalid value 5000000000 for configuration interval.ms: Not a number of type INT"},
		{"s", map[string]string{"interval.ms": "3600001"}, true, "Invalid value 3600001 for interval.ms, interval must be between 100 and 3600000 (1 hour)"},
		{"s", map[string]string{"metrics": "a,,b"}, false, "Configuration 'metrics' values must not be empty."},
		{"s", map[string]string{"match": "client_id=a=b"}, false, "Illegal client matching pattern: client_id=a=b"},
		{"s", map[string]string{"match": "=x"}, false, "Illegal client matching pattern: =x"},
		{"s", map[string]string{"match": "client_id"}, false, "Illegal client matching pattern: client_id"},
		{"s", map[string]string{"match": "client_id=["}, false, "Illegal client matching pattern: client_id=["},
		{"s", map[string]string{"match": "foo=bar"}, false, "Illegal client matching pattern: foo=bar"},
		{"s", map[string]string{"metrics": "a,a", "interval.ms": " 200 ", "match": "client_id = x.* , client_software_name=y"}, false, ""},
		{"s", map[string]string{"metrics": ""}, false, ""},
	} {
		e := ValidateClientMetrics(c.name, c.configs)
		switch {
		case c.msg == "" && e != nil:
			t.Errorf("%v: %v", c.configs, e)
		case c.msg != "" && (e == nil || e.Msg != c.msg || e.InvalidRequest != c.invReq):
			t.Errorf("%v: got %+v, want %v %q", c.configs, e, c.invReq, c.msg)
		}
	}
	s, err := ParseClientMetrics("s", map[string]string{"metrics": " a , b,a", "match": "client_id = x.* "})
	if err != nil || !slices.Equal(s.Metrics, []string{"a", "b"}) || !s.Match["client_id"].MatchString("xyz") || s.Match["client_id"].MatchString("axyz") {
		t.Fatalf("%+v %v", s, err)
	}
	if v := ClientMetricsDescribeValue("match", "client_id = x.* , client_software_name=y"); v != "client_id = x.*,client_software_name=y" {
		t.Fatal(v)
	}
}
