package broker

// JoinGroup: v0-9 (group.Coordinator.JoinGroup)
//
// Behavior:
//   - INVALID_GROUP_ID for an empty group id; INVALID_SESSION_TIMEOUT outside
//     group.min/max.session.timeout.ms; NOT_COORDINATOR /
//     COORDINATOR_LOAD_IN_PROGRESS from the coordinator.
//   - v4+ first join without a member id: MEMBER_ID_REQUIRED with the new
//     member id (KIP-394); static members (group.instance.id, v5+, KIP-345)
//     join directly and replace the previous member of their instance id.
//   - The request parks until the join phase completes: at once when every
//     member has rejoined, after group.initial.rebalance.delay.ms for a new
//     group, or after the rebalance timeout. The leader gets the member list.
//   - INCONSISTENT_GROUP_PROTOCOL, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
//     GROUP_MAX_SIZE_REACHED, COORDINATOR_NOT_AVAILABLE as Kafka.
//
// Version notes:
//   - v1: rebalance timeout; v2: throttle time; v4: MEMBER_ID_REQUIRED
//   - v5: group instance id; v6: flexible; v7: protocol type in the response
//   - v8: reason (KIP-800); v9: skip assignment for static leaders (KIP-814)

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(11, 0, 9, onBroker, handleJoinGroup) }

func handleJoinGroup(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.JoinGroupRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.MemberID, resp.Generation = kerr.NotCoordinator.Code, r.MemberID, -1
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.JoinGroup(ctx, r, req.ClientID, clientHost(req.RemoteAddr))}, nil
}

// clientHost is the member host Kafka reports: InetAddress.toString(),
// "/127.0.0.1".
func clientHost(addr net.Addr) string {
	if addr == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		host = addr.String()
	}
	return "/" + host
}
