package broker

// ShareGroupHeartbeat: v1 (client listeners; KIP-932, group.Coordinator.ShareGroupHeartbeat)
//
// Behavior:
//   - Member epoch 0 joins the share group (created if needed) with a
//     member id the client made up (KIP-1082); -1 leaves; other epochs
//     heartbeat. SubscribedTopicNames null means unchanged, RackId null
//     unchanged.
//   - The server assigns (assignor "simple"): partitions are shared among
//     members, each assigned to ceil(members / partitions) of them. Only
//     partitions whose share state the share coordinator holds are
//     assignable: the heartbeat that finds subscribed partitions without
//     it initializes them (InitializeShareGroupState through the
//     persister) before answering, and answers the persister's error if
//     that fails (the member was recorded; its retry with epoch 0 or its
//     previous epoch is accepted). No revocation: a member takes its
//     target at once. The assignment is returned on joins and whenever it
//     changed; targets are computed at most every
//     group.share.assignment.interval.ms.
//   - HeartbeatIntervalMs is group.share.heartbeat.interval.ms (GROUP
//     config share.heartbeat.interval.ms); members that stop heartbeating
//     are removed after group.share.session.timeout.ms (GROUP config
//     share.session.timeout.ms), and the share partitions release what
//     they had acquired.
//   - Errors: INVALID_REQUEST (malformed, with the reason),
//     GROUP_AUTHORIZATION_FAILED (no READ on the group),
//     TOPIC_AUTHORIZATION_FAILED (a subscribed topic without DESCRIBE),
//     GROUP_ID_NOT_FOUND (no such share group, or the id is a classic or
//     consumer group's), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH,
//     GROUP_MAX_SIZE_REACHED (group.share.max.size), NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE;
//     UNSUPPORTED_VERSION while share.version is 0 (share groups off).
//
// Version notes: v0 was the 4.0 early-access version, removed in 4.1; v1
// is the first stable one (KIP-932).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(76, 1, 1, onBroker, handleShareGroupHeartbeat) }

func handleShareGroupHeartbeat(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ShareGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	switch {
	case !b.shareGroupsEnabled():
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return protocol.Response{Msg: resp}, nil
	case b.groups == nil:
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	case !b.authorize(req, opRead, resGroup, r.GroupID):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return protocol.Response{Msg: resp}, nil
	}
	for _, t := range r.SubscribedTopicNames {
		if !b.authorize(req, opDescribe, resTopic, t) {
			resp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			return protocol.Response{Msg: resp}, nil
		}
	}
	return protocol.Response{Msg: b.groups.ShareGroupHeartbeat(ctx, r, req.ClientID, clientHost(req.RemoteAddr))}, nil
}
