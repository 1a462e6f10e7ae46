package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// TestQuotasFromImage: the image's ClientQuotaRecords reach the quota
// managers, and a request over its request_percentage answers with
// throttle_time_ms and mutes the connection (Response.Throttle).
func TestQuotasFromImage(t *testing.T) {
	b := apiTestBroker(t)
	b.quotas = newClientQuotas(b.cfg, nil)
	b.quotas.onImage(nil, b.meta.Image())
	if got := b.quotas.produce.Limit("alice", "any"); got != 1024 {
		t.Fatalf("alice's producer_byte_rate %v, want 1024", got)
	}
	if b.quotas.request.Enabled() {
		t.Fatal("request quota enabled without request_percentage")
	}
	// request_percentage 1e-9 for client-id c: any handler time exceeds it.
	q := metadatacache.NewClientQuotaRecord()
	c := "c"
	q.Entity = []metadatacache.ClientQuotaEntityData{{EntityType: "client-id", EntityName: &c}}
	q.QuotaKey, q.Value = "request_percentage", 1e-9
	off := b.meta.Image().Offset + 1
	if err := b.meta.Apply(metadatacache.Batch{BaseOffset: off, LastOffset: off, Epoch: 1, Records: []metadatacache.Record{q}}); err != nil {
		t.Fatal(err)
	}
	b.quotas.onImage(nil, b.meta.Image())
	serve := func(clientID string) protocol.Response {
		r := kmsg.NewPtrDescribeClientQuotasRequest()
		r.SetVersion(1)
		resp, err := b.Handle(context.Background(), &protocol.Request{Key: r.Key(), Version: 1, Msg: r, Listener: "PLAINTEXT",
			ClientID: clientID, Principal: protocol.Principal{Type: "User", Name: "ANONYMOUS"}})
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := serve("c")
	ms := resp.Msg.(*kmsg.DescribeClientQuotasResponse).ThrottleMillis
	if ms <= 0 || ms > 1000 || resp.Throttle != time.Duration(ms)*time.Millisecond {
		t.Fatalf("throttle_time_ms %d, mute %v: want the request quota's (at most one window)", ms, resp.Throttle)
	}
	if resp := serve("other"); resp.Throttle != 0 || resp.Msg.(*kmsg.DescribeClientQuotasResponse).ThrottleMillis != 0 {
		t.Fatalf("another client id throttled: %v", resp.Throttle)
	}
	if st := b.quotas.request.Stats(); len(st) == 0 {
		t.Fatal("no request-time metrics")
	}
}
