package broker

// DeleteShareGroupState: v0 (client listeners; inter-broker)
//
// Sent by the group coordinator when a share group's offsets are deleted.
//
// Behavior (KafkaApis.handleDeleteShareGroupStateRequest,
// ShareCoordinatorService.deleteState):
//   - CLUSTER_ACTION on the cluster, or every partition answers
//     CLUSTER_AUTHORIZATION_FAILED.
//   - The share coordinator (sharecoord.Coordinator.DeleteState) answers each
//     partition from the shard of its __share_group_state partition:
//     NOT_COORDINATOR
//     "Unable to delete share group state: ..." where this node does not lead
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

func init() { regKey(86, 0, 0, onBroker, handleDeleteShareGroupState) }

func handleDeleteShareGroupState(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DeleteShareGroupStateRequest)
	switch {
	case !b.shareStateAuthorized(req):
		return protocol.Response{Msg: deleteShareGroupStateError(r, kerr.ClusterAuthorizationFailed)}, nil
	case b.shareCoord == nil:
		return protocol.Response{Msg: deleteShareGroupStateError(r, kerr.NotCoordinator)}, nil
	}
	return protocol.Response{Msg: b.shareCoord.DeleteState(ctx, r)}, nil
}

// deleteShareGroupStateError answers every partition of r with err.
func deleteShareGroupStateError(r *kmsg.DeleteShareGroupStateRequest, err *kerr.Error) *kmsg.DeleteShareGroupStateResponse {
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	code, msg := shareStateErr(err, "delete share group state")
	for _, t := range r.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
