package authorizer

import (
	"net/netip"
	"testing"
)

var (
	alice = Principal{"User", "alice"}
	bob   = Principal{"User", "bob"}
	local = netip.MustParseAddr("127.0.0.1")
	other = netip.MustParseAddr("10.0.0.2")
)

func allow(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) ACL {
	return ACL{rt, name, pt, principal, host, op, PermissionAllow}
}

func deny(rt ResourceType, name string, pt PatternType, principal, host string, op Operation) ACL {
	return ACL{rt, name, pt, principal, host, op, PermissionDeny}
}

type check struct {
	p    Principal
	host netip.Addr
	op   Operation
	rt   ResourceType
	name string
	want bool
}

// The cases follow Kafka's StandardAuthorizerTest (testSimpleAuthorizations,
// testDenyPrecedenceWithOperationAll, testPrefixAcls, testAuthorizationWith
// ManyAcls, testSuperUsers, testAllowEveryoneIfNoAclFound...) and
// AuthorizerTest's implied-operation and host cases.
func TestAuthorize(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		acls   []ACL
		checks []check
	}{
		{
			name: "no ACLs denies by default",
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "foo", false},
				{alice, local, OpDescribe, ResourceCluster, ClusterName, false},
			},
		},
		{
			name: "allow.everyone.if.no.acl.found only where no ACL applies",
			cfg:  Config{AllowIfNoACL: true},
			acls: []ACL{allow(ResourceTopic, "foo", PatternLiteral, "User:bob", "*", OpRead)},
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "bar", true},
				{alice, local, OpRead, ResourceTopic, "foo", false}, // an ACL for bob exists
				{bob, local, OpRead, ResourceTopic, "foo", true},
				{alice, local, OpRead, ResourceGroup, "g", true},
			},
		},
		{
			name: "super users may do anything, even against DENY",
			cfg:  Config{SuperUsers: ParseSuperUsers(" User:admin ; User:alice;")},
			acls: []ACL{deny(ResourceTopic, "*", PatternLiteral, "User:*", "*", OpAll)},
			checks: []check{
				{alice, local, OpWrite, ResourceTopic, "foo", true},
				{Principal{"User", "admin"}, local, OpAlter, ResourceCluster, ClusterName, true},
				{bob, local, OpWrite, ResourceTopic, "foo", false},
			},
		},
		{
			name: "literal, prefixed and wildcard resources",
			acls: []ACL{
				allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpRead),
				allow(ResourceTopic, "pre", PatternPrefixed, "User:alice", "*", OpWrite),
				allow(ResourceGroup, "*", PatternLiteral, "User:alice", "*", OpRead),
			},
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "foo", true},
				{alice, local, OpRead, ResourceTopic, "foobar", false}, // literal is not a prefix
				{alice, local, OpRead, ResourceTopic, "fo", false},
				{alice, local, OpWrite, ResourceTopic, "prefix", true},
				{alice, local, OpWrite, ResourceTopic, "pre", true},
				{alice, local, OpWrite, ResourceTopic, "pr", false},
				{alice, local, OpRead, ResourceGroup, "any-group", true},
				{alice, local, OpRead, ResourceTransactionalID, "foo", false}, // other type
				{bob, local, OpRead, ResourceTopic, "foo", false},
			},
		},
		{
			name: "DENY wins over ALLOW, across literal, prefix and wildcard",
			acls: []ACL{
				allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpAll),
				deny(ResourceTopic, "fo", PatternPrefixed, "User:alice", "*", OpWrite),
				allow(ResourceTopic, "*", PatternLiteral, "User:*", "*", OpRead),
				deny(ResourceTopic, "*", PatternLiteral, "User:bob", "*", OpRead),
			},
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "foo", true},
				{alice, local, OpWrite, ResourceTopic, "foo", false},
				{alice, local, OpDelete, ResourceTopic, "foo", true},
				{bob, local, OpRead, ResourceTopic, "foo", false},
				{bob, local, OpRead, ResourceTopic, "x", false},
				{Principal{"User", "carol"}, local, OpRead, ResourceTopic, "x", true},
			},
		},
		{
			name: "DENY ALL denies every operation",
			acls: []ACL{
				allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpRead),
				deny(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpAll),
			},
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "foo", false},
				{alice, local, OpDescribe, ResourceTopic, "foo", false},
			},
		},
		{
			name: "implied operations, ALLOW only",
			acls: []ACL{
				allow(ResourceTopic, "r", PatternLiteral, "User:alice", "*", OpRead),
				allow(ResourceTopic, "w", PatternLiteral, "User:alice", "*", OpWrite),
				allow(ResourceTopic, "d", PatternLiteral, "User:alice", "*", OpDelete),
				allow(ResourceTopic, "a", PatternLiteral, "User:alice", "*", OpAlter),
				allow(ResourceTopic, "c", PatternLiteral, "User:alice", "*", OpCreate),
				allow(ResourceTopic, "ac", PatternLiteral, "User:alice", "*", OpAlterConfigs),
				allow(ResourceTopic, "dc", PatternLiteral, "User:alice", "*", OpDescribeConfigs),
				allow(ResourceTopic, "r", PatternLiteral, "User:bob", "*", OpAll),
				deny(ResourceTopic, "r", PatternLiteral, "User:bob", "*", OpRead),
			},
			checks: []check{
				{alice, local, OpDescribe, ResourceTopic, "r", true},
				{alice, local, OpDescribe, ResourceTopic, "w", true},
				{alice, local, OpDescribe, ResourceTopic, "d", true},
				{alice, local, OpDescribe, ResourceTopic, "a", true},
				{alice, local, OpDescribe, ResourceTopic, "c", false},
				{alice, local, OpDescribeConfigs, ResourceTopic, "ac", true},
				{alice, local, OpAlterConfigs, ResourceTopic, "dc", false},
				{alice, local, OpDescribe, ResourceTopic, "ac", false},
				{alice, local, OpRead, ResourceTopic, "w", false},
				// a DENY READ does not deny DESCRIBE
				{bob, local, OpDescribe, ResourceTopic, "r", true},
				{bob, local, OpRead, ResourceTopic, "r", false},
				{bob, local, OpWrite, ResourceTopic, "r", true},
			},
		},
		{
			name: "hosts: * or the exact address",
			acls: []ACL{
				allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "127.0.0.1", OpRead),
				allow(ResourceTopic, "v6", PatternLiteral, "User:alice", "0:0:0:0:0:0:0:1", OpRead),
				allow(ResourceTopic, "name", PatternLiteral, "User:alice", "localhost", OpRead),
			},
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "foo", true},
				{alice, other, OpRead, ResourceTopic, "foo", false},
				{alice, netip.MustParseAddr("::ffff:127.0.0.1"), OpRead, ResourceTopic, "foo", true},
				{alice, netip.MustParseAddr("::1"), OpRead, ResourceTopic, "v6", true},
				{alice, local, OpRead, ResourceTopic, "name", false},
			},
		},
		{
			name: "CIDR hosts (KIP-1276), network and broadcast addresses included",
			acls: []ACL{
				allow(ResourceTopic, "v4", PatternLiteral, "User:alice", "10.0.0.0/24", OpRead),
				allow(ResourceTopic, "v6", PatternLiteral, "User:alice", "2001:db8::/32", OpRead),
				deny(ResourceTopic, "v4", PatternLiteral, "User:alice", "10.0.0.128/25", OpRead),
				allow(ResourceTopic, "bad", PatternLiteral, "User:alice", "10.0.0.0/33", OpRead),
			},
			checks: []check{
				{alice, netip.MustParseAddr("10.0.0.0"), OpRead, ResourceTopic, "v4", true},
				{alice, netip.MustParseAddr("10.0.0.2"), OpRead, ResourceTopic, "v4", true},
				{alice, netip.MustParseAddr("10.0.0.255"), OpRead, ResourceTopic, "v4", false}, // the DENY /25
				{alice, netip.MustParseAddr("10.0.1.1"), OpRead, ResourceTopic, "v4", false},
				{alice, netip.MustParseAddr("::ffff:10.0.0.3"), OpRead, ResourceTopic, "v4", true},
				{alice, netip.MustParseAddr("2001:db8:1::5"), OpRead, ResourceTopic, "v6", true},
				{alice, netip.MustParseAddr("2001:db9::5"), OpRead, ResourceTopic, "v6", false},
				{alice, netip.MustParseAddr("10.0.0.1"), OpRead, ResourceTopic, "bad", false},
			},
		},
		{
			name: "User:* matches every principal type",
			acls: []ACL{allow(ResourceGroup, "g", PatternLiteral, "User:*", "*", OpRead)},
			checks: []check{
				{alice, local, OpRead, ResourceGroup, "g", true},
				{Principal{"Group", "x"}, local, OpRead, ResourceGroup, "g", true},
				{alice, local, OpDelete, ResourceGroup, "g", false},
			},
		},
		{
			name: "principal types differ",
			acls: []ACL{allow(ResourceTopic, "t", PatternLiteral, "Group:alice", "*", OpRead)},
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "t", false},
				{Principal{"Group", "alice"}, local, OpRead, ResourceTopic, "t", true},
			},
		},
		{
			name: "many prefixes",
			acls: []ACL{
				allow(ResourceTopic, "a", PatternPrefixed, "User:alice", "*", OpRead),
				deny(ResourceTopic, "abc", PatternPrefixed, "User:alice", "*", OpRead),
				allow(ResourceTopic, "abcd", PatternLiteral, "User:alice", "*", OpRead),
				allow(ResourceTopic, "b", PatternPrefixed, "User:bob", "*", OpRead),
			},
			checks: []check{
				{alice, local, OpRead, ResourceTopic, "ab", true},
				{alice, local, OpRead, ResourceTopic, "abcd", false},
				{alice, local, OpRead, ResourceTopic, "abx", true},
				{alice, local, OpRead, ResourceTopic, "bcd", false},
				{bob, local, OpRead, ResourceTopic, "bcd", true},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.cfg)
			a.Update(NewIndex(tc.acls))
			for _, c := range tc.checks {
				if got := a.Authorize(c.p, c.host, c.op, c.rt, c.name); got != c.want {
					t.Errorf("Authorize(%v, %v, op %d, type %d, %q) = %v, want %v", c.p, c.host, c.op, c.rt, c.name, got, c.want)
				}
			}
		})
	}
}

// The cases follow Kafka's AuthorizerTest/BaseAuthorizerTest
// testAuthorizeByResourceType* cases.
func TestAuthorizeByResourceType(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		acls []ACL
		p    Principal
		want bool
	}{
		{"no ACLs", Config{}, nil, alice, false},
		{"no ACLs, allow everyone", Config{AllowIfNoACL: true}, nil, alice, true},
		{"super user", Config{SuperUsers: []string{"User:alice"}}, nil, alice, true},
		{"literal allow", Config{}, []ACL{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite)}, alice, true},
		{"other principal", Config{}, []ACL{allow(ResourceTopic, "t", PatternLiteral, "User:bob", "*", OpWrite)}, alice, false},
		{"other operation", Config{}, []ACL{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpRead)}, alice, false},
		{"ALL", Config{}, []ACL{allow(ResourceTopic, "t", PatternLiteral, "User:*", "*", OpAll)}, alice, true},
		{"literal denied", Config{}, []ACL{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite),
		}, alice, false},
		{"literal denied by a prefix", Config{}, []ACL{
			allow(ResourceTopic, "tt", PatternLiteral, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "t", PatternPrefixed, "User:alice", "*", OpWrite),
		}, alice, false},
		{"prefix not dominated", Config{}, []ACL{
			allow(ResourceTopic, "t", PatternPrefixed, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "tt", PatternPrefixed, "User:alice", "*", OpWrite),
		}, alice, true},
		{"wildcard deny", Config{}, []ACL{
			allow(ResourceTopic, "t", PatternLiteral, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpWrite),
		}, alice, false},
		{"wildcard allow", Config{}, []ACL{
			allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpWrite),
			deny(ResourceTopic, "x", PatternPrefixed, "User:alice", "*", OpWrite),
		}, alice, true},
		{"other host", Config{}, []ACL{allow(ResourceTopic, "t", PatternLiteral, "User:alice", "10.9.9.9", OpWrite)}, alice, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.cfg)
			a.Update(NewIndex(tc.acls))
			if got := a.AuthorizeByResourceType(tc.p, local, OpWrite, ResourceTopic); got != tc.want {
				t.Errorf("AuthorizeByResourceType = %v, want %v", got, tc.want)
			}
		})
	}
}

func strp(s string) *string { return &s }

// TestFilter follows AclBindingFilterTest and ResourcePatternFilterTest.
func TestFilter(t *testing.T) {
	lit := allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpRead)
	pre := allow(ResourceTopic, "fo", PatternPrefixed, "User:alice", "*", OpRead)
	wild := allow(ResourceTopic, "*", PatternLiteral, "User:alice", "*", OpRead)
	any := Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}
	tests := []struct {
		name string
		f    Filter
		acl  ACL
		want bool
	}{
		{"any", any, lit, true},
		{"type", Filter{ResourceType: ResourceGroup, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}, lit, false},
		{"any pattern exact name", Filter{ResourceTopic, strp("foo"), PatternAny, nil, nil, OpAny, PermissionAny}, lit, true},
		{"any pattern does not match prefix", Filter{ResourceTopic, strp("foo"), PatternAny, nil, nil, OpAny, PermissionAny}, pre, false},
		{"match: literal", Filter{ResourceTopic, strp("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, lit, true},
		{"match: prefix", Filter{ResourceTopic, strp("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, pre, true},
		{"match: wildcard", Filter{ResourceTopic, strp("foo"), PatternMatch, nil, nil, OpAny, PermissionAny}, wild, true},
		{"match: other", Filter{ResourceTopic, strp("bar"), PatternMatch, nil, nil, OpAny, PermissionAny}, pre, false},
		{"prefixed exact", Filter{ResourceTopic, strp("fo"), PatternPrefixed, nil, nil, OpAny, PermissionAny}, pre, true},
		{"prefixed vs literal", Filter{ResourceTopic, strp("foo"), PatternPrefixed, nil, nil, OpAny, PermissionAny}, lit, false},
		{"principal", Filter{ResourceAny, nil, PatternAny, strp("User:bob"), nil, OpAny, PermissionAny}, lit, false},
		{"host", Filter{ResourceAny, nil, PatternAny, nil, strp("*"), OpAny, PermissionAny}, lit, true},
		{"operation", Filter{ResourceAny, nil, PatternAny, nil, nil, OpWrite, PermissionAny}, lit, false},
		{"permission", Filter{ResourceAny, nil, PatternAny, nil, nil, OpAny, PermissionDeny}, lit, false},
	}
	for _, tc := range tests {
		if got := tc.f.Matches(tc.acl); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
	if u := (Filter{ResourceType: ResourceUnknown, PatternType: PatternAny, Operation: OpAny, Permission: PermissionAny}).Unknown(); u != "patternFilter" {
		t.Errorf("Unknown = %q", u)
	}
	if u := (Filter{ResourceType: ResourceAny, PatternType: PatternAny, Operation: OpUnknown, Permission: PermissionAny}).Unknown(); u != "entryFilter" {
		t.Errorf("Unknown = %q", u)
	}
}

func TestAuthorizeAllocatesNothing(t *testing.T) {
	a := New(Config{SuperUsers: []string{"User:admin"}})
	a.Update(NewIndex([]ACL{
		allow(ResourceTopic, "foo", PatternLiteral, "User:alice", "*", OpWrite),
		allow(ResourceTopic, "f", PatternPrefixed, "User:alice", "127.0.0.1", OpWrite),
		deny(ResourceTopic, "*", PatternLiteral, "User:bob", "*", OpWrite),
	}))
	n := testing.AllocsPerRun(100, func() {
		a.Authorize(alice, local, OpWrite, ResourceTopic, "foobar")
		a.Authorize(bob, local, OpWrite, ResourceTopic, "foobar")
	})
	if n != 0 {
		t.Fatalf("Authorize allocates %v times", n)
	}
}
