package broker

// WriteShareGroupState: v0-1 (client listeners; inter-broker)
//
// Sent by a share-partition leader as acknowledgements move its start offset
// and in-flight batches.
//
// Behavior (KafkaApis.handleWriteShareGroupStateRequest,
// ShareCoordinatorService.writeState):
//   - CLUSTER_ACTION on the cluster, or every partition answers
//     CLUSTER_AUTHORIZATION_FAILED.
//   - The share coordinator (sharecoord.Coordinator.WriteState) answers each
//     partition from the shard of its __share_group_state partition:
//     NOT_COORDINATOR
//     "Unable to write share group state: ..." where this node does not lead
//     it, COORDINATOR_LOAD_IN_PROGRESS while it loads, the shard's own
//     checks otherwise (sharecoord/doc.go).
//   - No group id, no topics, or a topic without partitions: an empty
//     response.
//
// Version notes: v1: DeliveryCompleteCount (KIP-1226).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(85, 0, 1, onBroker, handleWriteShareGroupState) }

func handleWriteShareGroupState(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.WriteShareGroupStateRequest)
	switch {
	case !b.shareStateAuthorized(req):
		return protocol.Response{Msg: writeShareGroupStateError(r, kerr.ClusterAuthorizationFailed)}, nil
	case b.shareCoord == nil:
		return protocol.Response{Msg: writeShareGroupStateError(r, kerr.NotCoordinator)}, nil
	}
	return protocol.Response{Msg: b.shareCoord.WriteState(ctx, r)}, nil
}

// writeShareGroupStateError answers every partition of r with err.
func writeShareGroupStateError(r *kmsg.WriteShareGroupStateRequest, err *kerr.Error) *kmsg.WriteShareGroupStateResponse {
	resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	code, msg := shareStateErr(err, "write share group state")
	for _, t := range r.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
