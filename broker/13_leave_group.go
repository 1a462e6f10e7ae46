package broker

// LeaveGroup: v0-5 (group.Coordinator.LeaveGroup)
//
// Behavior:
//   - v0-2: one member id, errors at the top level. v3+: a batch of members
//     (member id and/or group instance id, KIP-345); per-member
//     UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID; an empty member id with an
//     instance id removes that static member (admin removal).
//   - A group that loses members rebalances (or completes its join phase).
//   - Top level: UNKNOWN_MEMBER_ID for an unknown group,
//     COORDINATOR_NOT_AVAILABLE for a dead one, INVALID_GROUP_ID,
//     NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
//
// Version notes: v1 throttle; v3 batch; v4 flexible; v5 reason (KIP-800).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(13, 0, 5, onBroker, handleLeaveGroup) }

func handleLeaveGroup(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.LeaveGroupRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.LeaveGroup(r)}, nil
}
