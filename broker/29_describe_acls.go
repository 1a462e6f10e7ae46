package broker

// DescribeAcls: v1-3 (client and controller listeners)
//
// Behavior (AclApis.handleDescribeAcls):
//   - DESCRIBE on CLUSTER is required (CLUSTER_AUTHORIZATION_FAILED at the
//     top level otherwise).
//   - Without an authorizer (authorizer.class.name unset) the answer is
//     SECURITY_DISABLED "No Authorizer is configured on the broker" and no
//     resources, as Kafka's.
//   - With StandardAuthorizer the ACLs matching the filter
//     (AclBindingFilter.matches: ANY and MATCH pattern types, null name,
//     principal and host match any) come from this node's metadata image,
//     grouped by resource pattern (DescribeAclsResponse.aclsResources), in
//     the order the image lists them (by ACL id); Kafka groups them in hash
//     order.
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

func init() { regKey(29, 1, 3, onBoth, handleDescribeAcls) }

func handleDescribeAcls(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeACLsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	if b.authz == nil {
		resp.ErrorCode = kerr.SecurityDisabled.Code
		resp.ErrorMessage = strPtr("No Authorizer is configured on the broker")
		return protocol.Response{Msg: resp}, nil
	}
	if !b.authorizeCluster(req, opDescribe) {
		return protocol.Response{Msg: clusterAuthFailed(req)}, nil
	}
	rt, pt, op, perm := authorizer.Normalize(int8(r.ResourceType), int8(r.ResourcePatternType), int8(r.Operation), int8(r.PermissionType))
	f := authorizer.Filter{ResourceType: rt, Name: r.ResourceName, PatternType: pt, Principal: r.Principal, Host: r.Host,
		Operation: op, Permission: perm}
	type pattern struct {
		rt   authorizer.ResourceType
		name string
		pt   authorizer.PatternType
	}
	at := map[pattern]int{}
	for _, a := range b.authz.Index().ACLs(f) {
		k := pattern{a.ResourceType, a.ResourceName, a.PatternType}
		i, ok := at[k]
		if !ok {
			res := kmsg.NewDescribeACLsResponseResource()
			res.ResourceType, res.ResourceName, res.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			resp.Resources = append(resp.Resources, res)
			i = len(resp.Resources) - 1
			at[k] = i
		}
		e := kmsg.NewDescribeACLsResponseResourceACL()
		e.Principal, e.Host, e.Operation, e.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, e)
	}
	return protocol.Response{Msg: resp}, nil
}
