package controller

// CreateAcls (30) and DeleteAcls (31), as Kafka's AclControlManager: each
// new ACL is validated (validateNewAcl: a concrete resource type, LITERAL or
// PREFIXED, a concrete operation, ALLOW or DENY, a non-empty name; else
// INVALID_REQUEST "Invalid resourceType TOPIC"...; a principal Type:Name; a
// host "*", a name or an address, or from metadata.version 4.4-IV1 a CIDR
// block, KIP-1276), gets a fresh random id
// and is written as an AccessControlEntryRecord; an ACL that already exists
// (or is created twice in one request) succeeds without a record. A delete
// filter with an unknown half answers INVALID_REQUEST ("Unknown
// patternFilter." / "Unknown entryFilter."); every ACL a filter matches is
// removed with a RemoveAccessControlEntryRecord, all filters' removals in
// one atomic batch. The broker in front (broker/30_create_acls.go) has
// already authorized the request (ALTER on CLUSTER) and refused CLUSTER
// resources not named kafka-cluster and empty names, as Kafka's AclApis.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/security/authorizer"
)

var (
	resourceTypeNames = map[authorizer.ResourceType]string{0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER",
		5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
	patternTypeNames = map[authorizer.PatternType]string{0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
	operationNames   = map[authorizer.Operation]string{0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE",
		6: "DELETE", 7: "ALTER", 8: "DESCRIBE", 9: "CLUSTER_ACTION", 10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS",
		12: "IDEMPOTENT_WRITE", 13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
	permissionNames = map[authorizer.Permission]string{0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}
)

// validateNewACL is AclControlManager.validateNewAcl. cidr is whether
// metadata.version allows CIDR hosts (4.4-IV1, KIP-1276).
func validateNewACL(a authorizer.ACL, cidr bool) *apiError {
	switch a.ResourceType {
	case authorizer.ResourceUnknown, authorizer.ResourceAny:
		return newAPIError(kerr.InvalidRequest, "Invalid resourceType %s", resourceTypeNames[a.ResourceType])
	}
	switch a.PatternType {
	case authorizer.PatternLiteral, authorizer.PatternPrefixed:
	default:
		return newAPIError(kerr.InvalidRequest, "Invalid patternType %s", patternTypeNames[a.PatternType])
	}
	switch a.Operation {
	case authorizer.OpUnknown, authorizer.OpAny:
		return newAPIError(kerr.InvalidRequest, "Invalid operation %s", operationNames[a.Operation])
	}
	switch a.Permission {
	case authorizer.PermissionAllow, authorizer.PermissionDeny:
	default:
		return newAPIError(kerr.InvalidRequest, "Invalid permissionType %s", permissionNames[a.Permission])
	}
	if a.ResourceName == "" {
		return newAPIError(kerr.InvalidRequest, "Resource name should not be empty")
	}
	if !strings.Contains(a.Principal, ":") {
		return newAPIError(kerr.InvalidRequest, "Could not parse principal from `%s` (no colon is present separating the principal type from the principal name)", a.Principal)
	}
	return validateHostPattern(a.Host, cidr)
}

// validateHostPattern is AclControlManager.validateHostPattern: a host is
// "*", a name or address, or (from metadata.version 4.4-IV1) a CIDR block.
func validateHostPattern(host string, cidr bool) *apiError {
	switch {
	case host == "":
		return newAPIError(kerr.InvalidRequest, "Host pattern cannot be null or empty")
	case host == authorizer.Wildcard || !strings.Contains(host, "/"):
		return nil
	case !cidr:
		return newAPIError(kerr.UnsupportedVersion, "CIDR-based ACL host patterns require metadata version 4.4-IV1 or higher.")
	}
	if _, ok := authorizer.ParseCIDR(host); !ok {
		return newAPIError(kerr.InvalidRequest, "Invalid CIDR notation '%s': Could not parse [%s]", host, host)
	}
	return nil
}

// CreationACL converts a CreateAcls creation (codes Kafka does not know
// become UNKNOWN, as fromCode).
func CreationACL(c kmsg.CreateACLsRequestCreation) authorizer.ACL {
	rt, pt, op, perm := authorizer.Normalize(int8(c.ResourceType), int8(c.ResourcePatternType), int8(c.Operation), int8(c.PermissionType))
	return authorizer.ACL{ResourceType: rt, ResourceName: c.ResourceName, PatternType: pt, Principal: c.Principal,
		Host: c.Host, Operation: op, Permission: perm}
}

// DeletionFilter converts a DeleteAcls filter.
func DeletionFilter(f kmsg.DeleteACLsRequestFilter) authorizer.Filter {
	rt, pt, op, perm := authorizer.Normalize(int8(f.ResourceType), int8(f.ResourcePatternType), int8(f.Operation), int8(f.PermissionType))
	return authorizer.Filter{ResourceType: rt, Name: f.ResourceName, PatternType: pt, Principal: f.Principal,
		Host: f.Host, Operation: op, Permission: perm}
}

func (c *Controller) createACLs(ctx context.Context, req *kmsg.CreateACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	existing := map[authorizer.ACL]bool{}
	ids := map[[16]byte]bool{}
	var cidr bool
	c.view(func(s *state) {
		cidr = s.metadataVersion() >= metadatacache.MV4_4_IV1
		for id, a := range s.acls {
			existing[a] = true
			ids[id] = true
		}
	})
	var recs []metadatacache.Record
	for _, cr := range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		a := CreationACL(cr)
		if e := validateNewACL(a, cidr); e != nil {
			res.ErrorCode, res.ErrorMessage = e.code(), e.message()
			resp.Results = append(resp.Results, res)
			continue
		}
		if !existing[a] {
			existing[a] = true
			id := newTopicID()
			for ids[id] {
				id = newTopicID()
			}
			ids[id] = true
			r := metadatacache.NewAccessControlEntryRecord()
			r.SetVersion(0)
			r.ID, r.ResourceType, r.ResourceName, r.PatternType = id, int8(a.ResourceType), a.ResourceName, int8(a.PatternType)
			r.Principal, r.Host, r.Operation, r.PermissionType = a.Principal, a.Host, int8(a.Operation), int8(a.Permission)
			recs = append(recs, r)
		}
		resp.Results = append(resp.Results, res)
	}
	if len(recs) > maxRecordsPerUserOp {
		return aclCreateError(req, errBatchTooLarge)
	}
	if _, err := c.write(ctx, recs); err != nil {
		return aclCreateError(req, bareAPIError(kerr.NotController))
	}
	return resp
}

func aclCreateError(req *kmsg.CreateACLsRequest, e *apiError) *kmsg.CreateACLsResponse {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		res := kmsg.NewCreateACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = e.code(), e.message()
		resp.Results = append(resp.Results, res)
	}
	return resp
}

func (c *Controller) deleteACLs(ctx context.Context, req *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	type idACL struct {
		id  [16]byte
		acl authorizer.ACL
	}
	var all []idACL
	c.view(func(s *state) {
		for id, a := range s.acls {
			all = append(all, idACL{id, a})
		}
	})
	// The ACLs in id order, so that answers are stable.
	sort.Slice(all, func(i, j int) bool { return string(all[i].id[:]) < string(all[j].id[:]) })
	removed := map[[16]byte]bool{}
	var recs []metadatacache.Record
	for _, kf := range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		f := DeletionFilter(kf)
		if half := f.Unknown(); half != "" {
			e := newAPIError(kerr.InvalidRequest, "Unknown %s.", half)
			res.ErrorCode, res.ErrorMessage = e.code(), e.message()
			resp.Results = append(resp.Results, res)
			continue
		}
		for _, ia := range all {
			if !f.Matches(ia.acl) {
				continue
			}
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			a := ia.acl
			m.ResourceType, m.ResourceName, m.ResourcePatternType = kmsg.ACLResourceType(a.ResourceType), a.ResourceName, kmsg.ACLResourcePatternType(a.PatternType)
			m.Principal, m.Host, m.Operation, m.PermissionType = a.Principal, a.Host, kmsg.ACLOperation(a.Operation), kmsg.ACLPermissionType(a.Permission)
			res.MatchingACLs = append(res.MatchingACLs, m)
			if !removed[ia.id] {
				removed[ia.id] = true
				r := metadatacache.NewRemoveAccessControlEntryRecord()
				r.SetVersion(0)
				r.ID = ia.id
				recs = append(recs, r)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	if len(recs) > maxRecordsPerUserOp {
		return aclDeleteError(req, errBatchTooLarge)
	}
	if _, err := c.write(ctx, recs); err != nil {
		return aclDeleteError(req, bareAPIError(kerr.NotController))
	}
	return resp
}

func aclDeleteError(req *kmsg.DeleteACLsRequest, e *apiError) *kmsg.DeleteACLsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		res := kmsg.NewDeleteACLsResponseResult()
		res.ErrorCode, res.ErrorMessage = e.code(), e.message()
		resp.Results = append(resp.Results, res)
	}
	return resp
}

// replayACL applies an ACL record to the controller's state.
func (s *state) replayACL(r metadatacache.Record) error {
	switch r := r.(type) {
	case *metadatacache.AccessControlEntryRecord:
		rt, pt, op, perm := authorizer.Normalize(r.ResourceType, r.PatternType, r.Operation, r.PermissionType)
		s.acls[r.ID] = authorizer.ACL{ResourceType: rt, ResourceName: r.ResourceName, PatternType: pt,
			Principal: r.Principal, Host: r.Host, Operation: op, Permission: perm}
	case *metadatacache.RemoveAccessControlEntryRecord:
		if _, ok := s.acls[r.ID]; !ok {
			return fmt.Errorf("Unable to replay RemoveAccessControlEntryRecord(id=%s): no acl with that ID found.", uuidString(r.ID))
		}
		delete(s.acls, r.ID)
	}
	return nil
}
