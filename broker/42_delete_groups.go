package broker

// DeleteGroups: v0-3 (group.Coordinator.DeleteGroups)
//
// Behavior:
//   - Per group: GROUP_ID_NOT_FOUND (unknown or dead), NON_EMPTY_GROUP (a
//     group with members), INVALID_GROUP_ID, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS. A deleted group's offsets and metadata
//     get tombstones in __consumer_offsets.
//   - Share groups (KIP-932): their share state is deleted first, through
//     the persister (DeleteShareGroupState), as Kafka's
//     GroupCoordinatorService.deleteGroups; its error fails the group's
//     deletion, which can be retried.
//
// Version notes: v1 no change; v2 flexible; v3 a per-group error message
// (KIP-1331), which Kafka fills only for streams groups (their internal
// topics failing to delete) and kgo-broker, without streams groups, leaves
// null.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(42, 0, 3, onBroker, handleDeleteGroups) }

func handleDeleteGroups(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DeleteGroupsRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.DeleteGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDeleteGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.DeleteGroups(ctx, r)}, nil
}
