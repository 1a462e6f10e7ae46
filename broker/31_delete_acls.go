package broker

// DeleteAcls: v1-3 (client and controller listeners)
//
// Behavior (KafkaApis forwards it to the controller; ControllerApis and
// AclApis.handleDeleteAcls answer it there):
//   - Without an authorizer every filter answers SECURITY_DISABLED "No
//     Authorizer is configured." with no matching ACLs
//     (DeleteAclsRequest.getErrorResponse), in request order; a broker
//     answers that itself.
//   - With StandardAuthorizer a broker forwards it (forward_apis.go); the
//     controller requires ALTER on CLUSTER (CLUSTER_AUTHORIZATION_FAILED on
//     every filter otherwise) and deletes what each filter matches
//     (controller/acls.go).
//
// Version notes: v0 was removed in 4.0 (KIP-896); v1: pattern types
// (KIP-290); v2: flexible; v3: the USER resource type.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() {
	regKey(31, 1, 3, onBroker, handleDeleteAcls)
	regKey(31, 1, 3, onController, handleControllerDeleteAcls)
}

var errMissingResults = errors.New("the controller answered fewer results than asked")

func handleDeleteAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	if b.authz != nil {
		return handleForwarded(ctx, b, req)
	}
	return protocol.Response{Msg: aclsDisabled(req.Msg)}, nil
}

func handleControllerDeleteAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DeleteACLsRequest)
	if b.authz == nil {
		return protocol.Response{Msg: aclsDisabled(r)}, nil
	}
	if !b.authorizeCluster(req, opAlter) {
		return protocol.Response{Msg: clusterAuthFailed(req)}, nil
	}
	return handleControllerAPI(ctx, b, req)
}
