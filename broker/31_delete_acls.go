package broker

// DeleteAcls: v1-3 (client and controller listeners)
//
// Behavior (AclApis.handleDeleteAcls; a Kafka broker forwards it to the
// controller, whose answer this is):
//   - Without an authorizer every filter answers SECURITY_DISABLED "No
//     Authorizer is configured." with no matching ACLs
//     (DeleteAclsRequest.getErrorResponse), in request order.
//
// Version notes: v0 was removed in 4.0 (KIP-896); v1: pattern types
// (KIP-290); v2: flexible; v3: the USER resource type.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(31, 1, 3, onBoth, handleDeleteAcls) }

func handleDeleteAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DeleteACLsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range r.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, strPtr(noAuthorizer)
		resp.Results = append(resp.Results, res)
	}
	return protocol.Response{Msg: resp}, nil
}
