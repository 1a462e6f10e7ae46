package broker

// RemoveRaftVoter: v0 (client listeners)
//
// Behavior (KafkaApis forwards it to the controller; KIP-853): as
// AddRaftVoter (80_add_raft_voter.go): forwarded once the CONTROLLER
// listener serves it; until then INCONSISTENT_CLUSTER_ID for another
// cluster's id, else UNSUPPORTED_VERSION "Cluster doesn't support removing
// voter because the kraft.version feature is 0".

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(81, 0, 0, onBroker, handleRemoveRaftVoter) }

func handleRemoveRaftVoter(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.RemoveRaftVoterRequest)
	return forwardOr(ctx, b, req, func() kmsg.Response {
		resp := r.ResponseKind().(*kmsg.RemoveRaftVoterResponse)
		resp.ErrorCode, resp.ErrorMessage = staticQuorumAnswer(b, r.ClusterID, "removing")
		return resp
	}, func(resp kmsg.Response) {
		resp.(*kmsg.RemoveRaftVoterResponse).ErrorCode = kerr.RequestTimedOut.Code
	})
}
