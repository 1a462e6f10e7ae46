package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/raft"
)

func aclCreation(rt, pt, op, perm int8, name, principal string) kmsg.CreateACLsRequestCreation {
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(rt), name, kmsg.ACLResourcePatternType(pt)
	c.Principal, c.Host, c.Operation, c.PermissionType = principal, "*", kmsg.ACLOperation(op), kmsg.ACLPermissionType(perm)
	return c
}

// TestCreateDeleteACLs follows AclControlManagerTest: validation errors,
// duplicates succeed without a second ACL, a filter deletes what it
// matches, and the image holds the result.
func TestCreateDeleteACLs(t *testing.T) {
	e := newTestEnv(t, nil)
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	req.Creations = []kmsg.CreateACLsRequestCreation{
		aclCreation(2, 3, 3, 3, "foo", "User:alice"), // TOPIC foo LITERAL READ ALLOW
		aclCreation(2, 3, 3, 3, "foo", "User:alice"), // duplicate: success, one ACL
		aclCreation(3, 4, 3, 2, "g", "User:bob"),     // GROUP g PREFIXED READ DENY
		aclCreation(1, 3, 3, 3, "x", "User:alice"),   // ANY resource type
		aclCreation(2, 2, 3, 3, "x", "User:alice"),   // MATCH pattern
		aclCreation(2, 3, 1, 3, "x", "User:alice"),   // ANY operation
		aclCreation(2, 3, 3, 1, "x", "User:alice"),   // ANY permission
		aclCreation(2, 3, 3, 3, "", "User:alice"),    // empty name
		aclCreation(99, 3, 3, 3, "x", "User:alice"),  // unknown code
	}
	resp := e.do(req).(*kmsg.CreateACLsResponse)
	want := []struct {
		code int16
		msg  string
	}{{0, ""}, {0, ""}, {0, ""},
		{kerr.InvalidRequest.Code, "Invalid resourceType ANY"}, {kerr.InvalidRequest.Code, "Invalid patternType MATCH"},
		{kerr.InvalidRequest.Code, "Invalid operation ANY"}, {kerr.InvalidRequest.Code, "Invalid permissionType ANY"},
		{kerr.InvalidRequest.Code, "Resource name should not be empty"}, {kerr.InvalidRequest.Code, "Invalid resourceType UNKNOWN"}}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results", len(resp.Results))
	}
	for i, w := range want {
		r := resp.Results[i]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != w.code || msg != w.msg {
			t.Errorf("creation %d: %d %q, want %d %q", i, r.ErrorCode, msg, w.code, w.msg)
		}
	}
	if n := len(e.c.cache.Image().ACLs()); n != 2 {
		t.Fatalf("image has %d ACLs, want 2", n)
	}

	del := kmsg.NewPtrDeleteACLsRequest()
	del.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 2, 2, 1, 1 // TOPIC, MATCH, ANY, ANY
	name := "foo"
	f.ResourceName = &name
	bad := kmsg.NewDeleteACLsRequestFilter()
	bad.ResourceType, bad.ResourcePatternType, bad.Operation, bad.PermissionType = 2, 1, 0, 1
	none := kmsg.NewDeleteACLsRequestFilter()
	none.ResourceType, none.ResourcePatternType, none.Operation, none.PermissionType = 5, 1, 1, 1
	del.Filters = []kmsg.DeleteACLsRequestFilter{f, bad, none, f}
	dr := e.do(del).(*kmsg.DeleteACLsResponse)
	if len(dr.Results) != 4 || dr.Results[0].ErrorCode != 0 || len(dr.Results[0].MatchingACLs) != 1 ||
		dr.Results[0].MatchingACLs[0].Principal != "User:alice" || dr.Results[1].ErrorCode != kerr.InvalidRequest.Code ||
		*dr.Results[1].ErrorMessage != "Unknown entryFilter." || len(dr.Results[2].MatchingACLs) != 0 ||
		len(dr.Results[3].MatchingACLs) != 1 {
		t.Fatalf("delete results %+v", dr.Results)
	}
	acls := e.c.cache.Image().ACLs()
	if len(acls) != 1 || acls[0].ResourceName != "g" {
		t.Fatalf("image ACLs after delete: %+v", acls)
	}
	e.c.view(func(s *state) {
		if len(s.acls) != 1 {
			t.Errorf("controller state has %d ACLs", len(s.acls))
		}
	})
}

// TestACLsFromSnapshot: a controller restarted from a snapshot knows the
// ACLs (duplicates are still detected, deletes still find them).
func TestACLsFromSnapshot(t *testing.T) {
	e := newTestEnv(t, nil)
	e.node.SetSnapshotConfig(raft.SnapshotConfig{MaxBytesBetweenSnapshots: 1 << 40, RetentionBytes: 1, RetentionMs: -1})
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{aclCreation(2, 3, 3, 3, "foo", "User:alice"), aclCreation(3, 4, 3, 2, "g", "User:bob")}
	e.do(req)
	e.snapshot()
	e.c.writeNoOp()
	e.snapshot()
	e.stop()
	e.start(nil)
	if n := len(e.c.cache.Image().ACLs()); n != 2 {
		t.Fatalf("image has %d ACLs after restart", n)
	}
	before := e.c.cache.Image().Offset
	req = kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{aclCreation(2, 3, 3, 3, "foo", "User:alice")}
	if r := e.do(req).(*kmsg.CreateACLsResponse); r.Results[0].ErrorCode != 0 || e.c.cache.Image().Offset != before {
		t.Fatalf("duplicate after restart: %+v, offset %d -> %d", r.Results, before, e.c.cache.Image().Offset)
	}
	del := kmsg.NewPtrDeleteACLsRequest()
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType, f.Operation, f.PermissionType = 1, 1, 1, 1
	del.Filters = []kmsg.DeleteACLsRequestFilter{f}
	if r := e.do(del).(*kmsg.DeleteACLsResponse); len(r.Results[0].MatchingACLs) != 2 || len(e.c.cache.Image().ACLs()) != 0 {
		t.Fatalf("delete after restart: %+v", r.Results)
	}
}

// TestCreateACLHostsAndPrincipals: Kafka 4.4's principal and host checks
// (KIP-1276 CIDR blocks from metadata.version 4.4-IV1).
func TestCreateACLHostsAndPrincipals(t *testing.T) {
	e := newTestEnv(t, nil)
	mk := func(principal, host string) kmsg.CreateACLsRequestCreation {
		c := aclCreation(2, 3, 3, 3, "t", principal)
		c.Host = host
		return c
	}
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = []kmsg.CreateACLsRequestCreation{
		mk("User:a", "10.0.0.0/8"), mk("User:a", "2001:db8::/32"), mk("User:a", "host.example"),
		mk("nocolon", "*"), mk("User:a", ""), mk("User:a", "10.0.0.0/33"), mk("User:a", "10.0.0.0/"),
	}
	resp := e.do(req).(*kmsg.CreateACLsResponse)
	want := []struct {
		code int16
		msg  string
	}{{0, ""}, {0, ""}, {0, ""},
		{kerr.InvalidRequest.Code, "Could not parse principal from `nocolon` (no colon is present separating the principal type from the principal name)"},
		{kerr.InvalidRequest.Code, "Host pattern cannot be null or empty"},
		{kerr.InvalidRequest.Code, "Invalid CIDR notation '10.0.0.0/33': Could not parse [10.0.0.0/33]"},
		{kerr.InvalidRequest.Code, "Invalid CIDR notation '10.0.0.0/': Could not parse [10.0.0.0/]"}}
	for i, w := range want {
		r := resp.Results[i]
		msg := ""
		if r.ErrorMessage != nil {
			msg = *r.ErrorMessage
		}
		if r.ErrorCode != w.code || msg != w.msg {
			t.Errorf("creation %d: %d %q, want %d %q", i, r.ErrorCode, msg, w.code, w.msg)
		}
	}
	if e := validateHostPattern("10.0.0.0/8", false); e == nil || e.code() != kerr.UnsupportedVersion.Code {
		t.Errorf("a CIDR host before 4.4-IV1: %v", e)
	}
}
