package broker

// AlterClientQuotas: v0-1 (client and controller listeners)
//
// Behavior: a broker forwards the request to the active controller in an
// Envelope (forward_apis.go), as Kafka's KafkaApis does; the controller
// validates it as ClientQuotaControlManager and writes ClientQuotaRecords
// (controller/quotas.go), which every node's image replays. The brokers
// enforce the quotas from their image (quotas.go): producer_byte_rate and
// consumer_byte_rate per (user, client-id), request_percentage,
// controller_mutation_rate (on the controller), and connection_creation_rate
// per ip. kafka-configs.sh --alter --add-config producer_byte_rate=1048576
// --entity-type users|clients|ips sends this; --describe reads the quotas
// back with DescribeClientQuotas (48).
//
// Version notes: v1: flexible.

import "github.com/twmb/franz-go/pkg/kmsg"

func init() {
	regKey(49, 0, 1, onBroker, handleForwarded)
	regKey(49, 0, 1, onController, handleControllerAPI)
}

// quotaTimedOut is errorResponse for AlterClientQuotas: code on every entry.
func quotaTimedOut(req *kmsg.AlterClientQuotasRequest, out *kmsg.AlterClientQuotasResponse, code int16) {
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = code
		for _, ent := range e.Entity {
			x := kmsg.NewAlterClientQuotasResponseEntryEntity()
			x.Type, x.Name = ent.Type, ent.Name
			re.Entity = append(re.Entity, x)
		}
		out.Entries = append(out.Entries, re)
	}
}
