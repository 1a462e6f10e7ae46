package broker

// SyncGroup: v0-5 (group.Coordinator.SyncGroup)
//
// Behavior:
//   - The leader's assignment is written to __consumer_offsets (a
//     GroupMetadata record) and then handed to every member; followers park
//     until then. Members missing from the leader's assignment get an empty
//     one.
//   - UNKNOWN_MEMBER_ID (unknown group or member, empty group),
//     ILLEGAL_GENERATION, FENCED_INSTANCE_ID, REBALANCE_IN_PROGRESS (group
//     preparing a rebalance), INCONSISTENT_GROUP_PROTOCOL (v5 protocol
//     type/name mismatch), INVALID_GROUP_ID, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS.
//
// Version notes:
//   - v1: throttle time; v3: group instance id; v4: flexible
//   - v5: protocol type and name in request and response (KIP-559)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(14, 0, 5, onBroker, handleSyncGroup) }

func handleSyncGroup(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.SyncGroupRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode, resp.MemberAssignment = kerr.NotCoordinator.Code, []byte{}
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.SyncGroup(ctx, r)}, nil
}
