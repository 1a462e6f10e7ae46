package broker

// CreateAcls: v1-3 (client and controller listeners)
//
// Behavior (KafkaApis forwards it to the controller; ControllerApis and
// AclApis.handleCreateAcls answer it there):
//   - Without an authorizer every creation answers SECURITY_DISABLED "No
//     Authorizer is configured." (CreateAclsRequest.getErrorResponse), in
//     request order; a broker answers that itself.
//   - With StandardAuthorizer a broker forwards the request in an Envelope
//     (forward_apis.go); the controller requires ALTER on CLUSTER of the
//     (forwarded) principal (CLUSTER_AUTHORIZATION_FAILED on every creation
//     otherwise), refuses a CLUSTER resource not named kafka-cluster and an
//     empty name (INVALID_REQUEST), and the controller's AclControlManager
//     (controller/acls.go) validates and writes the rest.
//
// Version notes: v0 was removed in 4.0 (KIP-896); v1: pattern types
// (KIP-290); v2: flexible; v3: the USER resource type.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security/authorizer"
)

func init() {
	regKey(30, 1, 3, onBroker, handleCreateAcls)
	regKey(30, 1, 3, onController, handleControllerCreateAcls)
}

// noAuthorizer is the message Kafka's controller gives for ACL changes
// without an authorizer.
const noAuthorizer = "No Authorizer is configured."

func handleCreateAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	if b.authz != nil {
		return handleForwarded(ctx, b, req)
	}
	return protocol.Response{Msg: aclsDisabled(req.Msg)}, nil
}

// aclsDisabled is the SECURITY_DISABLED answer of CreateAcls and DeleteAcls.
func aclsDisabled(m kmsg.Request) kmsg.Response {
	switch r := m.(type) {
	case *kmsg.CreateACLsRequest:
		resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
		for range r.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, strPtr(noAuthorizer)
			resp.Results = append(resp.Results, res)
		}
		return resp
	case *kmsg.DeleteACLsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
		for range r.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = kerr.SecurityDisabled.Code, strPtr(noAuthorizer)
			resp.Results = append(resp.Results, res)
		}
		return resp
	}
	return m.ResponseKind()
}

func handleControllerCreateAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.CreateACLsRequest)
	if b.authz == nil {
		return protocol.Response{Msg: aclsDisabled(r)}, nil
	}
	if !b.authorizeCluster(req, opAlter) {
		return protocol.Response{Msg: clusterAuthFailed(req)}, nil
	}
	// AclApis: the CLUSTER resource has one name, and names are not empty.
	failed := make([]*string, len(r.Creations))
	valid := *r
	valid.Creations = nil
	for i, c := range r.Creations {
		switch {
		case authorizer.ResourceType(c.ResourceType) == resCluster && c.ResourceName != authorizer.ClusterName:
			failed[i] = strPtr("The only valid name for the CLUSTER resource is " + authorizer.ClusterName)
		case c.ResourceName == "":
			failed[i] = strPtr("Invalid empty resource name")
		default:
			valid.Creations = append(valid.Creations, c)
		}
	}
	var results []kmsg.CreateACLsResponseResult
	if len(valid.Creations) > 0 {
		out, err := handleControllerAPI(ctx, b, &protocol.Request{Key: req.Key, Version: req.Version, CorrelationID: req.CorrelationID,
			ClientID: req.ClientID, Msg: &valid, Listener: req.Listener, RemoteAddr: req.RemoteAddr, Principal: req.Principal})
		if err != nil {
			return out, err
		}
		results = out.Msg.(*kmsg.CreateACLsResponse).Results
	}
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	for i := range r.Creations {
		if failed[i] != nil {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = kerr.InvalidRequest.Code, failed[i]
			resp.Results = append(resp.Results, res)
			continue
		}
		if len(results) == 0 {
			return protocol.Response{}, errMissingResults
		}
		resp.Results = append(resp.Results, results[0])
		results = results[1:]
	}
	return protocol.Response{Msg: resp}, nil
}
