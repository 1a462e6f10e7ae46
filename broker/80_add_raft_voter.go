package broker

// AddRaftVoter: v0-1 (client listeners)
//
// Behavior (KafkaApis forwards it to the controller; KIP-853):
//   - Forwarded to the active controller once the CONTROLLER listener
//     serves AddRaftVoter (dynamic quorums, raft/).
//   - Until then answered as Kafka's controller answers with kraft.version
//     0 (a static controller.quorum.voters quorum, all kgo-broker supports
//     today): INCONSISTENT_CLUSTER_ID "The given id "<id>" doesn't match the
//     cluster id "<cluster>"" when the request names another cluster, else
//     UNSUPPORTED_VERSION "Cluster doesn't support adding voter because the
//     kraft.version feature is 0".
//   - REQUEST_TIMED_OUT when no controller answers in time.
//
// Version notes: v1: AckWhenCommitted (KIP-1186).

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(80, 0, 1, onBroker, handleAddRaftVoter) }

func handleAddRaftVoter(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AddRaftVoterRequest)
	return forwardOr(ctx, b, req, func() kmsg.Response {
		resp := r.ResponseKind().(*kmsg.AddRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = staticQuorumAnswer(b, r.ClusterID, "adding")
		return resp
	}, func(resp kmsg.Response) {
		resp.(*kmsg.AddRaftVoterResponse).ErrorCode = kerr.RequestTimedOut.Code
	})
}

// staticQuorumAnswer is the error Kafka's raft client gives a voter change
// while kraft.version is 0 (KafkaRaftClient.handleAddVoterRequest and
// handleRemoveVoterRequest check the cluster id first).
func staticQuorumAnswer(b *Broker, clusterID *string, verb string) (int16, *string) {
	if clusterID != nil && *clusterID != b.clusterID {
		return kerr.InconsistentClusterID.Code, strPtr(fmt.Sprintf("The given id %q doesn't match the cluster id %q", *clusterID, b.clusterID))
	}
	return kerr.UnsupportedVersion.Code, strPtr("Cluster doesn't support " + verb + " voter because the kraft.version feature is 0")
}
