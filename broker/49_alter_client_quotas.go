package broker

// AlterClientQuotas: v0-1 (client and controller listeners)
//
// Behavior: client quotas (KIP-546) are not implemented: kgo-broker's
// controller writes no ClientQuotaRecords and nothing is throttled. Every
// entry answers UNSUPPORTED_VERSION "Client quotas are not implemented by
// kgo-broker", validate_only or not, so kafka-configs.sh --alter
// --entity-type users|clients|ips fails at once instead of silently
// storing a quota that would not apply. A Kafka broker forwards the
// request to its controller, which stores the quota.
//
// Version notes: v1: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(49, 0, 1, onBoth, handleAlterClientQuotas) }

func handleAlterClientQuotas(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range r.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = kerr.UnsupportedVersion.Code
		re.ErrorMessage = strPtr("Client quotas are not implemented by kgo-broker")
		for _, ent := range e.Entity {
			x := kmsg.NewAlterClientQuotasResponseEntryEntity()
			x.Type, x.Name = ent.Type, ent.Name
			re.Entity = append(re.Entity, x)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return protocol.Response{Msg: resp}, nil
}
