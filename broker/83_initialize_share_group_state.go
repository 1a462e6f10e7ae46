package broker

// InitializeShareGroupState: v0 (client listeners; sent by share-partition leaders to the
// share coordinator)
//
// Behavior (ShareCoordinatorService with share groups off): no share
// coordinator runs, so every partition answers NOT_COORDINATOR "Unable to
// initialize share group state: This is not the correct coordinator.", as Kafka's broker
// does when share.version is 0. Nothing sends it to a kgo-broker cluster
// (see 76_share_group_heartbeat.go).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(83, 0, 0, onBroker, handleInitializeShareGroupState) }

func handleInitializeShareGroupState(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.InitializeShareGroupStateRequest)
	resp := r.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.NotCoordinator.Code
			rp.ErrorMessage = strPtr("Unable to initialize share group state: This is not the correct coordinator.")
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return protocol.Response{Msg: resp}, nil
}
