package broker

// ReadShareGroupStateSummary: v0-1 (client listeners; inter-broker)
//
// Sent by the group coordinator for DescribeShareGroupOffsets and lag.
//
// Behavior (KafkaApis.handleReadShareGroupStateSummaryRequest,
// ShareCoordinatorService.readStateSummary):
//   - CLUSTER_ACTION on the cluster, or every partition answers
//     CLUSTER_AUTHORIZATION_FAILED.
//   - The share coordinator (sharecoord.Coordinator.ReadStateSummary) answers each
//     partition from the shard of its __share_group_state partition:
//     NOT_COORDINATOR
//     "Unable to read share group state summary: ..." where this node does not lead
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

func init() { regKey(87, 0, 1, onBroker, handleReadShareGroupStateSummary) }

func handleReadShareGroupStateSummary(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ReadShareGroupStateSummaryRequest)
	switch {
	case !b.shareStateAuthorized(req):
		return protocol.Response{Msg: readShareGroupStateSummaryError(r, kerr.ClusterAuthorizationFailed)}, nil
	case b.shareCoord == nil:
		return protocol.Response{Msg: readShareGroupStateSummaryError(r, kerr.NotCoordinator)}, nil
	}
	return protocol.Response{Msg: b.shareCoord.ReadStateSummary(ctx, r)}, nil
}

// readShareGroupStateSummaryError answers every partition of r with err.
func readShareGroupStateSummaryError(r *kmsg.ReadShareGroupStateSummaryRequest, err *kerr.Error) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := r.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	code, msg := shareStateErr(err, "read share group state summary")
	for _, t := range r.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, code, msg
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
