package broker

// Authorization (authorizer.class.name=org.apache.kafka.metadata.authorizer.
// StandardAuthorizer): each handler asks the node's authorizer
// (security/authorizer) the question Kafka 4.4's KafkaApis or ControllerApis
// asks (AuthHelper.authorize, authorizeClusterOperation, filterByAuthorized,
// authorizeByResourceType) with the request's principal and client
// address; for a request that arrived in an Envelope those are the
// forwarded client's (58_envelope.go). Without an authorizer (b.authz nil)
// everything is allowed, as Kafka's AuthHelper with no authorizer.
//
// The ACLs come from the metadata image: the node subscribes
// watchACLs to the image and installs a new immutable index whenever the
// image's ACLs change, so a check on the produce and fetch path is a few
// map lookups and allocates nothing.
//
// Requests the node sends itself in-process (a local inter-broker request,
// interbroker.go) carry no principal and are the node's own: allowed.

import (
	"net"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security/authorizer"
)

// Short names for the authorizer's enums in handlers.
const (
	opRead            = authorizer.OpRead
	opWrite           = authorizer.OpWrite
	opCreate          = authorizer.OpCreate
	opDelete          = authorizer.OpDelete
	opAlter           = authorizer.OpAlter
	opDescribe        = authorizer.OpDescribe
	opClusterAction   = authorizer.OpClusterAction
	opDescribeConfigs = authorizer.OpDescribeConfigs
	opAlterConfigs    = authorizer.OpAlterConfigs
	opIdempotentWrite = authorizer.OpIdempotentWrite

	resTopic   = authorizer.ResourceTopic
	resGroup   = authorizer.ResourceGroup
	resCluster = authorizer.ResourceCluster
	resTxnID   = authorizer.ResourceTransactionalID
)

// newAuthorizer builds the node's authorizer from its config, nil without
// one.
func newAuthorizer(cfg *config.Config) *authorizer.Authorizer {
	s := cfg.Authorizer()
	if !s.Enabled {
		return nil
	}
	return authorizer.New(authorizer.Config{SuperUsers: authorizer.ParseSuperUsers(s.SuperUsers), AllowIfNoACL: s.AllowIfNoACL})
}

// watchACLs is an image subscriber: it rebuilds the authorizer's index when
// the image's ACLs changed.
func watchACLs(a *authorizer.Authorizer) func(old, cur *metadatacache.Image) {
	return func(old, cur *metadatacache.Image) {
		if old != nil && cur.SameACLs(old) {
			return
		}
		a.Update(authorizer.NewIndex(imageACLs(cur)))
	}
}

func imageACLs(img *metadatacache.Image) []authorizer.ACL {
	acls := img.ACLs()
	out := make([]authorizer.ACL, 0, len(acls))
	for _, a := range acls {
		rt, pt, op, perm := authorizer.Normalize(a.ResourceType, a.PatternType, a.Operation, a.PermissionType)
		out = append(out, authorizer.ACL{ResourceType: rt, ResourceName: a.ResourceName, PatternType: pt,
			Principal: a.Principal, Host: a.Host, Operation: op, Permission: perm})
	}
	return out
}

// clientAddr is the request's client address (the forwarded client's for
// an enveloped request).
func clientAddr(addr net.Addr) netip.Addr {
	if ta, ok := addr.(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	if addr != nil {
		if ap, err := netip.ParseAddrPort(addr.String()); err == nil {
			return ap.Addr().Unmap()
		}
	}
	return netip.Addr{}
}

// authorize is AuthHelper.authorize for a LITERAL resource.
func (b *Broker) authorize(req *protocol.Request, op authorizer.Operation, rt authorizer.ResourceType, name string) bool {
	if b.authz == nil || req.Principal.IsZero() {
		return true
	}
	return b.authz.Authorize(authorizer.Principal{Type: req.Principal.Type, Name: req.Principal.Name}, clientAddr(req.RemoteAddr), op, rt, name)
}

// authorizeCluster asks op on the CLUSTER resource.
func (b *Broker) authorizeCluster(req *protocol.Request, op authorizer.Operation) bool {
	return b.authorize(req, op, resCluster, authorizer.ClusterName)
}

// authorizeByResourceType is AuthHelper.authorizeByResourceType.
func (b *Broker) authorizeByResourceType(req *protocol.Request, op authorizer.Operation, rt authorizer.ResourceType) bool {
	if b.authz == nil || req.Principal.IsZero() {
		return true
	}
	return b.authz.AuthorizeByResourceType(authorizer.Principal{Type: req.Principal.Type, Name: req.Principal.Name}, clientAddr(req.RemoteAddr), op, rt)
}

// authorizing reports whether an authorizer is configured and the request
// is not the node's own, so handlers can skip building filters.
func (b *Broker) authorizing(req *protocol.Request) bool {
	return b.authz != nil && !req.Principal.IsZero()
}

// clusterDenied is the message of authorizeClusterOperation's
// ClusterAuthorizationException ("Request <request> is not authorized.").
func clusterDenied(req *protocol.Request) *string {
	return strPtr("Request " + kmsg.NameForKey(req.Key) + " is not authorized.")
}

// clusterAuthFailed is getErrorResponse(ClusterAuthorizationException) for
// the APIs that require a cluster operation: the request's response with
// CLUSTER_AUTHORIZATION_FAILED at the top level or on every resource.
func clusterAuthFailed(req *protocol.Request) kmsg.Response {
	code := kerr.ClusterAuthorizationFailed.Code
	msg := clusterDenied(req)
	resp := req.Msg.ResponseKind()
	resp.SetVersion(req.Version)
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		r.ErrorCode = code
	case *kmsg.BeginQuorumEpochResponse:
		r.ErrorCode = code
	case *kmsg.EndQuorumEpochResponse:
		r.ErrorCode = code
	case *kmsg.FetchResponse:
		r.ErrorCode = code
	case *kmsg.FetchSnapshotResponse:
		r.ErrorCode = code
	case *kmsg.DescribeQuorumResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.AlterPartitionResponse:
		r.ErrorCode = code
	case *kmsg.BrokerRegistrationResponse:
		r.ErrorCode = code
	case *kmsg.BrokerHeartbeatResponse:
		r.ErrorCode = code
	case *kmsg.UnregisterBrokerResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.AllocateProducerIDsResponse:
		r.ErrorCode = code
	case *kmsg.ControllerRegistrationResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.UpdateFeaturesResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
		if u, ok := req.Msg.(*kmsg.UpdateFeaturesRequest); ok && req.Version <= 1 {
			for _, f := range u.FeatureUpdates {
				res := kmsg.NewUpdateFeaturesResponseResult()
				res.Feature, res.ErrorCode, res.ErrorMessage = f.Feature, code, msg
				r.Results = append(r.Results, res)
			}
		}
	case *kmsg.DescribeClusterResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.ListPartitionReassignmentsResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.AlterPartitionAssignmentsResponse:
		out := errorResponse(req.Msg, code).(*kmsg.AlterPartitionAssignmentsResponse)
		out.SetVersion(req.Version)
		out.ErrorMessage = msg
		for i := range out.Topics {
			for j := range out.Topics[i].Partitions {
				out.Topics[i].Partitions[j].ErrorMessage = msg
			}
		}
		*r = *out
	case *kmsg.ElectLeadersResponse:
		out := errorResponse(req.Msg, code).(*kmsg.ElectLeadersResponse)
		out.SetVersion(req.Version)
		for i := range out.Topics {
			for j := range out.Topics[i].Partitions {
				out.Topics[i].Partitions[j].ErrorMessage = msg
			}
		}
		*r = *out
	case *kmsg.AddRaftVoterResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.RemoveRaftVoterResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.UpdateRaftVoterResponse:
		r.ErrorCode = code
	case *kmsg.DescribeACLsResponse:
		r.ErrorCode, r.ErrorMessage = code, msg
	case *kmsg.CreateACLsResponse:
		for range req.Msg.(*kmsg.CreateACLsRequest).Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			r.Results = append(r.Results, res)
		}
	case *kmsg.DeleteACLsResponse:
		for range req.Msg.(*kmsg.DeleteACLsRequest).Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode, res.ErrorMessage = code, msg
			r.Results = append(r.Results, res)
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		out := errorResponse(req.Msg, code).(*kmsg.AlterUserSCRAMCredentialsResponse)
		for i := range out.Results {
			out.Results[i].ErrorMessage = msg
		}
		return out
	default:
		return errorResponse(req.Msg, code)
	}
	return resp
}

// supportedOperations are the operations of each resource type
// (AclEntry.supportedOperations): what authorized-operations fields
// (KIP-430) report on.
var supportedOperations = map[authorizer.ResourceType][]authorizer.Operation{
	resTopic:   {opRead, opWrite, opCreate, opDescribe, opDelete, opAlter, opDescribeConfigs, opAlterConfigs},
	resGroup:   {opRead, opDescribe, opDelete, opDescribeConfigs, opAlterConfigs},
	resCluster: {opCreate, opClusterAction, opDescribeConfigs, opAlterConfigs, opIdempotentWrite, opAlter, opDescribe},
	resTxnID:   {opDescribe, opWrite, authorizer.OpTwoPhaseCommit},
}

// authorizedOperations is AuthHelper.authorizedOperations: the bit set
// (1<<code) of the resource's supported operations the request may
// perform; all of them without an authorizer.
func (b *Broker) authorizedOperations(req *protocol.Request, rt authorizer.ResourceType, name string) int32 {
	var set int32
	for _, op := range supportedOperations[rt] {
		if b.authorize(req, op, rt, name) {
			set |= 1 << op
		}
	}
	return set
}

// clusterAuthorizedOperations is the cluster's authorized operations as
// Metadata and DescribeCluster report them: 0 without DESCRIBE on the
// cluster.
func (b *Broker) clusterAuthorizedOperations(req *protocol.Request) int32 {
	if !b.authorizeCluster(req, opDescribe) {
		return 0
	}
	return b.authorizedOperations(req, resCluster, authorizer.ClusterName)
}
