package broker

// ListGroups: v0-5 (group.Coordinator.ListGroups)
//
// Behavior:
//   - The groups of the __consumer_offsets partitions this node leads:
//     group id, protocol type ("consumer", or "" for simple groups), state
//     (v4+) and type "classic" / "consumer" / "share" (v5+; share groups,
//     KIP-932, have protocol type "share" and states Empty / Stable).
//   - StatesFilter (v4+) and TypesFilter (v5+) match case-insensitively.
//   - COORDINATOR_LOAD_IN_PROGRESS while a partition is still loading (the
//     groups of the loaded ones are listed too).
//
// Version notes: v1 throttle; v3 flexible; v4 states (KIP-518); v5 types (KIP-848).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(16, 0, 5, onBroker, handleListGroups) }

func handleListGroups(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ListGroupsRequest)
	if b.groups == nil {
		return protocol.Response{Msg: r.ResponseKind()}, nil
	}
	return protocol.Response{Msg: b.groups.ListGroups(r)}, nil
}
