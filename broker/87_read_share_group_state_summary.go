package broker

// ReadShareGroupStateSummary: v0-1 (client listeners; sent by share-partition leaders to the
// share coordinator)
//
// Behavior (ShareCoordinatorService with share groups off): no share
// coordinator runs, so every partition answers NOT_COORDINATOR "Unable to
// read share group state summary: This is not the correct coordinator.", as Kafka's broker
// does when share.version is 0. Nothing sends it to a kgo-broker cluster
// (see 76_share_group_heartbeat.go).
//
// Version notes: v1: DeliveryCompleteCount (KIP-1226).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(87, 0, 1, onBroker, handleReadShareGroupStateSummary) }

func handleReadShareGroupStateSummary(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ReadShareGroupStateSummaryRequest)
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.NotCoordinator.Code
			rp.ErrorMessage = strPtr("Unable to read share group state summary: This is not the correct coordinator.")
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return protocol.Response{Msg: resp}, nil
}
