package broker

// ReadShareGroupState: v0 (client listeners; inter-broker)
//
// Sent by a share-partition leader when it loads the partition.
//
// Behavior (KafkaApis.handleReadShareGroupStateRequest,
// ShareCoordinatorService.readState):
//   - CLUSTER_ACTION on the cluster, or every partition answers
//     CLUSTER_AUTHORIZATION_FAILED.
//   - The share coordinator (sharecoord.Coordinator.ReadState) answers each
//     partition from the shard of its __share_group_state partition:
//     NOT_COORDINATOR
//     "Unable to read share group state: ..." where this node does not lead
//     it, COORDINATOR_LOAD_IN_PROGRESS while it loads, the shard's own
//     checks otherwise (sharecoord/doc.go).
//   - No group id, no topics, or a topic without partitions: an empty
//     response.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(84, 0, 0, onBroker, handleReadShareGroupState) }

func handleReadShareGroupState(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ReadShareGroupStateRequest)
	switch {
	case !b.shareStateAuthorized(req):
		return protocol.Response{Msg: readShareGroupStateError(r, kerr.ClusterAuthorizationFailed)}, nil
	case b.shareCoord == nil:
		return protocol.Response{Msg: readShareGroupStateError(r, kerr.NotCoordinator)}, nil
	}
	return protocol.Response{Msg: b.shareCoord.ReadState(ctx, r)}, nil
}

// readShareGroupStateError answers every partition of r with err.
func readShareGroupStateError(r *kmsg.ReadShareGroupStateRequest, err *kerr.Error) *kmsg.ReadShareGroupStateResponse {
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	code, msg := shareStateErr(err, "read share group state")
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
