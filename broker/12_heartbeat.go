package broker

// Heartbeat: v0-4 (group.Coordinator.Heartbeat)
//
// Behavior:
//   - Resets the member's session timer. REBALANCE_IN_PROGRESS while the
//     group prepares a rebalance (the member must rejoin); NONE in
//     CompletingRebalance and Stable.
//   - UNKNOWN_MEMBER_ID (unknown group or member, empty group),
//     ILLEGAL_GENERATION, FENCED_INSTANCE_ID, COORDINATOR_NOT_AVAILABLE (dead
//     group), INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
//   - Classic members of a KIP-848 group are not supported (UNKNOWN_MEMBER_ID).
//
// Version notes: v1 throttle time; v3 group instance id; v4 flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(12, 0, 4, onBroker, handleHeartbeat) }

func handleHeartbeat(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.HeartbeatRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.Heartbeat(r)}, nil
}
