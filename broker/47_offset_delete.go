package broker

// OffsetDelete: v0 (group.Coordinator.OffsetDelete)
//
// Behavior:
//   - Top level: GROUP_ID_NOT_FOUND (unknown or dead group), NON_EMPTY_GROUP
//     (a non-empty classic group not using the consumer protocol),
//     INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
//   - Per partition: UNKNOWN_TOPIC_OR_PARTITION, GROUP_SUBSCRIBED_TO_TOPIC
//     when the group's members subscribe to the topic; otherwise the
//     offset (if any) gets a tombstone.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(47, 0, 0, onBroker, handleOffsetDelete) }

func handleOffsetDelete(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.OffsetDeleteRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.OffsetDelete(r)}, nil
}
