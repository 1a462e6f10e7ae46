//go:build integration

package integration

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestLiveConfigsProbe(t *testing.T) {
	b := StartBroker(t, BrokerOptions{})
	type c struct {
		name, key, val string
		legacy, vo     bool
	}
	cases := []c{
		{"1", "node.id", "5", false, false},
		{"", "log.dirs", "/x", false, false},
		{"1", "process.roles", "broker", false, false},
		{"", "listener.name.plaintext.ssl.keystore.location", "/x", false, false},
		{"1", "ssl.keystore.location", "/x", false, false},
		{"", "listeners", "PLAINTEXT://:1", false, false},
		{"1", "message.max.bytes", "abc", false, false},
		{"", "message.max.bytes", "-5", false, false},
		{"1", "num.replica.fetchers", "100", false, false},
		{"1", "num.replica.fetchers", "0", false, false},
		{"", "num.replica.fetchers", "3", false, true},
		{"2", "message.max.bytes", "1000", false, false},
		{"x", "message.max.bytes", "1000", false, false},
		{"-1", "message.max.bytes", "1000", false, false},
		{"", "unknown.key.zz", "1", false, true},
		{"1", "log.cleaner.threads", "10", false, false},
		{"1", "log.cleaner.threads", "0", false, false},
		{"1", "node.id", "5", true, false},
		{"", "message.max.bytes", "x", true, false},
		{"", "log.retention.ms", "0", false, false},
		{"", "max.connections", "-1", false, false},
		{"", "max.connections.per.ip", "0", false, false},
		{"1", "node.id", "5", false, true},
		{"", "log.cleaner.dedupe.buffer.size", "1000", false, false},
		{"", "background.threads", "100", false, false},
		{"", "num.io.threads", "100", false, false},
		{"", "unclean.leader.election.enable", "yes", false, false},
		{"", "log.cleaner.io.max.bytes.per.second", "-1", false, false},
		{"", "listener.name.plaintext.max.connections", "5", false, true},
		{"", "leader.replication.throttled.rate", "-1", false, false},
		{"", "message.max.bytes", "", false, false},
	}
	for _, cs := range cases {
		var code int16
		var msg *string
		if cs.legacy {
			req := kmsg.NewPtrAlterConfigsRequest()
			req.ValidateOnly = cs.vo
			rs := kmsg.NewAlterConfigsRequestResource()
			rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeBroker, cs.name
			cf := kmsg.NewAlterConfigsRequestResourceConfig()
			cf.Name, cf.Value = cs.key, kmsg.StringPtr(cs.val)
			rs.Configs = append(rs.Configs, cf)
			req.Resources = append(req.Resources, rs)
			resp := rawRequest(t, b, b.Port, req, 2).(*kmsg.AlterConfigsResponse)
			code, msg = resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage
		} else {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.ValidateOnly = cs.vo
			rs := kmsg.NewIncrementalAlterConfigsRequestResource()
			rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeBroker, cs.name
			cf := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			cf.Name, cf.Value = cs.key, kmsg.StringPtr(cs.val)
			rs.Configs = append(rs.Configs, cf)
			req.Resources = append(req.Resources, rs)
			resp := rawRequest(t, b, b.Port, req, 1).(*kmsg.IncrementalAlterConfigsResponse)
			code, msg = resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage
		}
		m := "<nil>"
		if msg != nil {
			m = *msg
		}
		t.Logf("PROBE %+v => %d %q", cs, code, m)
	}
}
