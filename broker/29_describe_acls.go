package broker

// DescribeAcls: v1-3 (client and controller listeners)
//
// Behavior (AclApis.handleDescribeAcls):
//   - kgo-broker has no authorizer (authorizer.class.name is accepted but
//     not acted on), so, as Kafka without one, every request answers
//     SECURITY_DISABLED "No Authorizer is configured on the broker" and no
//     resources. ACL records another controller wrote are kept in the
//     metadata image but not enforced.
//
// Version notes: v0 was removed in 4.0 (KIP-896); v1: pattern types
// (KIP-290); v2: flexible; v3: the USER resource type.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(29, 1, 3, onBoth, handleDescribeAcls) }

func handleDescribeAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = kerr.SecurityDisabled.Code
	resp.ErrorMessage = strPtr("No Authorizer is configured on the broker")
	return protocol.Response{Msg: resp}, nil
}
