package authorizer

import (
	"net/netip"
	"strings"
	"sync/atomic"
)

// ResourceType is Kafka's ResourceType code.
type ResourceType int8

// Kafka's resource types (org.apache.kafka.common.resource.ResourceType).
const (
	ResourceUnknown         ResourceType = 0
	ResourceAny             ResourceType = 1
	ResourceTopic           ResourceType = 2
	ResourceGroup           ResourceType = 3
	ResourceCluster         ResourceType = 4
	ResourceTransactionalID ResourceType = 5
	ResourceDelegationToken ResourceType = 6
	ResourceUser            ResourceType = 7
)

// PatternType is Kafka's PatternType code.
type PatternType int8

// Kafka's pattern types (org.apache.kafka.common.resource.PatternType).
const (
	PatternUnknown  PatternType = 0
	PatternAny      PatternType = 1
	PatternMatch    PatternType = 2
	PatternLiteral  PatternType = 3
	PatternPrefixed PatternType = 4
)

// Operation is Kafka's AclOperation code.
type Operation int8

// Kafka's operations (org.apache.kafka.common.acl.AclOperation).
const (
	OpUnknown         Operation = 0
	OpAny             Operation = 1
	OpAll             Operation = 2
	OpRead            Operation = 3
	OpWrite           Operation = 4
	OpCreate          Operation = 5
	OpDelete          Operation = 6
	OpAlter           Operation = 7
	OpDescribe        Operation = 8
	OpClusterAction   Operation = 9
	OpDescribeConfigs Operation = 10
	OpAlterConfigs    Operation = 11
	OpIdempotentWrite Operation = 12
	OpCreateTokens    Operation = 13
	OpDescribeTokens  Operation = 14
	OpTwoPhaseCommit  Operation = 15
)

// Permission is Kafka's AclPermissionType code.
type Permission int8

// Kafka's permission types (org.apache.kafka.common.acl.AclPermissionType).
const (
	PermissionUnknown Permission = 0
	PermissionAny     Permission = 1
	PermissionDeny    Permission = 2
	PermissionAllow   Permission = 3
)

// Wildcard is the resource name and host that match any (ResourcePattern.
// WILDCARD_RESOURCE, StandardAuthorizerData.WILDCARD); WildcardPrincipal the
// principal that matches any.
const (
	Wildcard          = "*"
	WildcardPrincipal = "User:*"
	// ClusterName is the only name of the CLUSTER resource.
	ClusterName = "kafka-cluster"
)

// ACL is one access control entry: a resource pattern and an entry
// (Kafka's StandardAcl). Principal is "Type:Name".
type ACL struct {
	ResourceType ResourceType
	ResourceName string
	PatternType  PatternType
	Principal    string
	Host         string
	Operation    Operation
	Permission   Permission
}

// Principal is the requester: Kafka's KafkaPrincipal without its subclass.
type Principal struct {
	Type, Name string
}

// Config is the authorizer's static configuration.
type Config struct {
	// SuperUsers are "Type:Name" principals (super.users, split on ';').
	SuperUsers []string
	// AllowIfNoACL is allow.everyone.if.no.acl.found.
	AllowIfNoACL bool
}

// ParseSuperUsers splits super.users as StandardAuthorizer.getConfiguredSuperUsers
// does: on ';', trimmed, empty entries dropped.
func ParseSuperUsers(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ";") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// Authorizer answers authorization questions against the current Index. It
// is safe for concurrent use; Update swaps the Index atomically.
type Authorizer struct {
	superUsers   map[Principal]struct{}
	allowIfNoACL bool
	idx          atomic.Pointer[Index]
}

// New returns an Authorizer with no ACLs.
func New(cfg Config) *Authorizer {
	a := &Authorizer{superUsers: map[Principal]struct{}{}, allowIfNoACL: cfg.AllowIfNoACL}
	for _, s := range cfg.SuperUsers {
		t, n, _ := strings.Cut(s, ":")
		a.superUsers[Principal{t, n}] = struct{}{}
	}
	a.idx.Store(NewIndex(nil))
	return a
}

// Update installs a new set of ACLs.
func (a *Authorizer) Update(idx *Index) { a.idx.Store(idx) }

// Index returns the current ACL index.
func (a *Authorizer) Index() *Index { return a.idx.Load() }

// IsSuperUser reports whether p is in super.users.
func (a *Authorizer) IsSuperUser(p Principal) bool {
	_, ok := a.superUsers[p]
	return ok
}

// Authorize reports whether p, connecting from host, may perform op on the
// resource of type rt named name (a LITERAL resource, as Kafka's
// Action). It allocates nothing.
func (a *Authorizer) Authorize(p Principal, host netip.Addr, op Operation, rt ResourceType, name string) bool {
	if a.IsSuperUser(p) {
		return true
	}
	return a.idx.Load().authorize(p, host.Unmap(), op, rt, name, a.allowIfNoACL)
}

// AuthorizeByResourceType is Authorizer.authorizeByResourceType: whether p
// may perform op on at least one resource of type rt. A super user, or one
// the ACLs (or allow.everyone.if.no.acl.found) allow on an arbitrary name,
// may; otherwise p needs an ALLOW (op or ALL, no implied operations) on a
// pattern no DENY of its covers: a literal not denied literally nor by a
// prefix of it, or a prefix no shorter deny prefix covers. A DENY on the
// "*" literal or the empty prefix denies outright.
func (a *Authorizer) AuthorizeByResourceType(p Principal, host netip.Addr, op Operation, rt ResourceType) bool {
	if a.Authorize(p, host, op, rt, "hardcode") {
		return true
	}
	host = host.Unmap()
	t := a.idx.Load().types[rt]
	if t == nil {
		return false
	}
	var (
		denyLiteral, denyPrefix = map[string]bool{}, map[string]bool{}
		allow                   []*entry
	)
	for _, e := range t.all {
		if !e.matchesPrincipal(p) || !e.matchesHost(host) || (e.op != op && e.op != OpAll) {
			continue
		}
		switch e.perm {
		case PermissionDeny:
			switch e.pattern {
			case PatternLiteral:
				if e.name == Wildcard {
					return false
				}
				denyLiteral[e.name] = true
			case PatternPrefixed:
				if e.name == "" {
					return false
				}
				denyPrefix[e.name] = true
			}
		case PermissionAllow:
			if e.pattern == PatternLiteral && e.name == Wildcard {
				return true
			}
			allow = append(allow, e)
		}
	}
	for _, e := range allow {
		if e.pattern == PatternLiteral && denyLiteral[e.name] {
			continue
		}
		dominated := false
		for i := 1; i <= len(e.name); i++ {
			if denyPrefix[e.name[:i]] {
				dominated = true
				break
			}
		}
		if !dominated {
			return true
		}
	}
	return false
}

// Operations lists, of ops, those p may perform on the resource
// (authorized operations, KIP-430), as a bit set over the operation codes.
func (a *Authorizer) Operations(p Principal, host netip.Addr, rt ResourceType, name string, ops []Operation) int32 {
	var set int32
	for _, op := range ops {
		if a.Authorize(p, host, op, rt, name) {
			set |= 1 << op
		}
	}
	return set
}
