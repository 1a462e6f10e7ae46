package broker

// InitializeShareGroupState: v0 (client listeners; inter-broker)
//
// Sent by the group coordinator (through the Persister) when a share group
// first consumes a partition, or its start offset is altered.
//
// Behavior (KafkaApis.handleInitializeShareGroupStateRequest,
// ShareCoordinatorService.initializeState):
//   - CLUSTER_ACTION on the cluster, or every partition answers
//     CLUSTER_AUTHORIZATION_FAILED.
//   - The share coordinator (sharecoord.Coordinator.InitializeState) answers each
//     partition from the shard of its __share_group_state partition:
//     NOT_COORDINATOR
//     "Unable to initialize share group state: ..." where this node does not lead
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

func init() { regKey(83, 0, 0, onBroker, handleInitializeShareGroupState) }

func handleInitializeShareGroupState(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.InitializeShareGroupStateRequest)
	switch {
	case !b.shareStateAuthorized(req):
		return protocol.Response{Msg: initializeShareGroupStateError(r, kerr.ClusterAuthorizationFailed)}, nil
	case b.shareCoord == nil:
		return protocol.Response{Msg: initializeShareGroupStateError(r, kerr.NotCoordinator)}, nil
	}
	return protocol.Response{Msg: b.shareCoord.InitializeState(ctx, r)}, nil
}

// initializeShareGroupStateError answers every partition of r with err.
func initializeShareGroupStateError(r *kmsg.InitializeShareGroupStateRequest, err *kerr.Error) *kmsg.InitializeShareGroupStateResponse {
	resp := r.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	code, msg := shareStateErr(err, "initialize share group state")
	for _, t := range r.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
