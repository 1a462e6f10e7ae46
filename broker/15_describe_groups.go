package broker

// DescribeGroups: v0-6 (group.Coordinator.DescribeGroups)
//
// Behavior:
//   - Classic groups: state, protocol type, and members (member id,
//     instance id, client id, client host). Protocol, member metadata and
//     assignments only while Stable, as Kafka.
//   - Unknown groups (and KIP-848 and share groups, which
//     ConsumerGroupDescribe and ShareGroupDescribe describe): state "Dead";
//     v6 adds GROUP_ID_NOT_FOUND with a message ("Group g is not a classic
//     group.", KIP-1043).
//   - Per group INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
//   - Authorized operations are not computed (INT32_MIN).
//
// Version notes: v1 throttle; v3 authorized operations; v4 instance id;
// v5 flexible; v6 error message.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(15, 0, 6, onBroker, handleDescribeGroups) }

func handleDescribeGroups(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeGroupsRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return protocol.Response{Msg: resp}, nil
	}
	resp := b.groups.DescribeGroups(r)
	if r.IncludeAuthorizedOperations {
		for i := range resp.Groups {
			if g := &resp.Groups[i]; g.ErrorCode == 0 {
				g.AuthorizedOperations = b.authorizedOperations(req, resGroup, g.Group)
			}
		}
	}
	return protocol.Response{Msg: resp}, nil
}
