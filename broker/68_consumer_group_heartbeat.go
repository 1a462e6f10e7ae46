package broker

// ConsumerGroupHeartbeat: v0-1 (KIP-848; group.Coordinator.ConsumerGroupHeartbeat)
//
// Behavior:
//   - Member epoch 0 joins (or rejoins) the group, creating it if needed
//     (an empty classic group of the same id is converted); -1 leaves; -2
//     is a static member's temporary leave; other epochs heartbeat.
//   - The server computes the target assignment (group.consumer.assignors:
//     uniform, range) when the group epoch moves (membership, subscription
//     or subscribed topics' partitions changed) and reconciles each member
//     towards it: revocations first (the epoch stays until the member stops
//     reporting them), then partitions freed by others.
//   - The assignment is returned on full requests (epoch 0, or all of
//     rebalance timeout, topic names and owned partitions set) and whenever
//     it changed. HeartbeatIntervalMs is group.consumer.heartbeat.interval.ms.
//   - Errors: INVALID_REQUEST (malformed request, with the reason),
//     INVALID_REGULAR_EXPRESSION, UNSUPPORTED_ASSIGNOR, GROUP_ID_NOT_FOUND
//     (no such consumer group, or a non-empty classic group),
//     UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, FENCED_INSTANCE_ID,
//     UNRELEASED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
//   - Members that stop heartbeating are removed after
//     group.consumer.session.timeout.ms; members that do not revoke within
//     their rebalance timeout are fenced.
//
// Version notes: v1 adds SubscribedTopicRegex (evaluated against the topics
// of the metadata image, internal topics excluded).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(68, 0, 1, onBroker, handleConsumerGroupHeartbeat) }

func handleConsumerGroupHeartbeat(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ConsumerGroupHeartbeatRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.ConsumerGroupHeartbeat(r, req.ClientID, clientHost(req.RemoteAddr))}, nil
}
