package broker

// ConsumerGroupDescribe: v0-1 (KIP-848; group.Coordinator.ConsumerGroupDescribe)
//
// Behavior:
//   - Per group: state (Empty, Assigning, Reconciling, Stable), group epoch,
//     assignment epoch, assignor, and members with their epoch, client,
//     subscription, current and target assignment (topic ids and names).
//   - GROUP_ID_NOT_FOUND for unknown groups and for classic groups ("is not
//     a consumer group"), which is what makes the admin client fall back to
//     DescribeGroups; INVALID_GROUP_ID, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS.
//   - Authorized operations are not computed (INT32_MIN).
//
// Version notes: v1 adds the member type (1: consumer protocol).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(69, 0, 1, onBroker, handleConsumerGroupDescribe) }

func handleConsumerGroupDescribe(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ConsumerGroupDescribeRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewConsumerGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return protocol.Response{Msg: resp}, nil
	}
	resp := b.groups.ConsumerGroupDescribe(r)
	if r.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = b.authorizedOperations(req, resGroup, g.Group)
			}
		}
	}
	return protocol.Response{Msg: resp}, nil
}
