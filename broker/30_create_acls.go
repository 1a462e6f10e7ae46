package broker

// CreateAcls: v1-3 (client and controller listeners)
//
// Behavior (AclApis.handleCreateAcls; a Kafka broker forwards it to the
// controller, whose answer this is):
//   - Without an authorizer every creation answers SECURITY_DISABLED "No
//     Authorizer is configured." (CreateAclsRequest.getErrorResponse), in
//     request order. kgo-broker has no authorizer, so nothing is forwarded.
//
// Version notes: v0 was removed in 4.0 (KIP-896); v1: pattern types
// (KIP-290); v2: flexible; v3: the USER resource type.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(30, 1, 3, onBoth, handleCreateAcls) }

// noAuthorizer is the message Kafka's controller gives for ACL changes
// without an authorizer.
const noAuthorizer = "No Authorizer is configured."

func handleCreateAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.CreateACLsRequest)
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	for range r.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, strPtr(noAuthorizer)
		resp.Results = append(resp.Results, res)
	}
	return protocol.Response{Msg: resp}, nil
}
