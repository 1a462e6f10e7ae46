package authorizer

import (
	"net/netip"
	"slices"
	"strings"
)

// entry is an ACL prepared for matching: its principal split, its host
// parsed.
type entry struct {
	acl       ACL
	name      string
	pattern   PatternType
	principal Principal
	anyone    bool // principal User:*
	anyHost   bool
	host      netip.Addr   // valid when the host is an IP address
	cidr      netip.Prefix // valid when the host is a CIDR block (KIP-1276)
	op        Operation
	perm      Permission
}

func (e *entry) matchesPrincipal(p Principal) bool {
	return e.anyone || e.principal == p
}

// matchesHost: "*", the client's address, or a CIDR block holding it
// (KIP-1276, CidrUtils.isInRange). Kafka compares the ACL's host string
// with the client's InetAddress.getHostAddress(); comparing parsed
// addresses is the same for the forms Java prints and accepts also the
// compressed IPv6 forms. A host that is not an address matches nothing.
func (e *entry) matchesHost(h netip.Addr) bool {
	return e.anyHost || (e.host.IsValid() && e.host == h) || (e.cidr.IsValid() && h.IsValid() && e.cidr.Contains(h))
}

// ParseCIDR parses a CIDR host (CidrUtils: an IPv4 or IPv6 block; the
// network and broadcast addresses are in it).
func ParseCIDR(host string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(host)
	if err != nil {
		return netip.Prefix{}, false
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, false
	}
	return p.Masked(), true
}

// result is StandardAuthorizerData.findResult: whether e allows (1), denies
// (-1) or does not match (0) the request.
func (e *entry) result(p Principal, host netip.Addr, op Operation) int {
	if !e.matchesPrincipal(p) || !e.matchesHost(host) {
		return 0
	}
	if e.op != OpAll {
		if e.perm == PermissionAllow {
			switch op {
			case OpDescribe:
				switch e.op {
				case OpDescribe, OpRead, OpWrite, OpDelete, OpAlter:
				default:
					return 0
				}
			case OpDescribeConfigs:
				if e.op != OpDescribeConfigs && e.op != OpAlterConfigs {
					return 0
				}
			default:
				if op != e.op {
					return 0
				}
			}
		} else if op != e.op {
			return 0
		}
	}
	if e.perm == PermissionAllow {
		return 1
	}
	return -1
}

// typeIndex holds one resource type's ACLs.
type typeIndex struct {
	literal  map[string][]*entry // LITERAL, by exact name ("*" excluded)
	wildcard []*entry            // LITERAL "*"
	prefixed map[string][]*entry // PREFIXED, by prefix
	lengths  []int               // the prefix lengths present, ascending
	all      []*entry
}

// Index is an immutable set of ACLs indexed for authorization. Build one
// with NewIndex whenever the ACLs change.
type Index struct {
	types map[ResourceType]*typeIndex
	acls  []ACL
}

// NewIndex indexes acls. ACLs of unknown resource or pattern types are
// kept for listing but never match a request.
func NewIndex(acls []ACL) *Index {
	idx := &Index{types: map[ResourceType]*typeIndex{}, acls: slices.Clone(acls)}
	for _, a := range idx.acls {
		e := &entry{acl: a, name: a.ResourceName, pattern: a.PatternType, op: a.Operation, perm: a.Permission}
		t, n, _ := strings.Cut(a.Principal, ":")
		e.principal = Principal{t, n}
		e.anyone = a.Principal == WildcardPrincipal
		e.anyHost = a.Host == Wildcard
		if !e.anyHost {
			if h, err := netip.ParseAddr(a.Host); err == nil {
				e.host = h.Unmap()
			} else if p, ok := ParseCIDR(a.Host); ok && strings.Contains(a.Host, "/") {
				e.cidr = p
			}
		}
		ti := idx.types[a.ResourceType]
		if ti == nil {
			ti = &typeIndex{literal: map[string][]*entry{}, prefixed: map[string][]*entry{}}
			idx.types[a.ResourceType] = ti
		}
		ti.all = append(ti.all, e)
		switch a.PatternType {
		case PatternLiteral:
			if a.ResourceName == Wildcard {
				ti.wildcard = append(ti.wildcard, e)
			} else {
				ti.literal[a.ResourceName] = append(ti.literal[a.ResourceName], e)
			}
		case PatternPrefixed:
			if _, ok := ti.prefixed[a.ResourceName]; !ok {
				ti.lengths = append(ti.lengths, len(a.ResourceName))
			}
			ti.prefixed[a.ResourceName] = append(ti.prefixed[a.ResourceName], e)
		}
	}
	for _, ti := range idx.types {
		slices.Sort(ti.lengths)
		ti.lengths = slices.Compact(ti.lengths)
	}
	return idx
}

// Len is the number of ACLs.
func (idx *Index) Len() int { return len(idx.acls) }

// ACLs returns the ACLs that match f (StandardAuthorizer.acls), in the
// order the Index was built with.
func (idx *Index) ACLs(f Filter) []ACL {
	var out []ACL
	for _, a := range idx.acls {
		if f.Matches(a) {
			out = append(out, a)
		}
	}
	return out
}

// authorize is StandardAuthorizerData.findAclRule for a non-super user:
// the resource's own ACLs (literal and prefixes) first, a DENY there ends
// the search; then the wildcard ACLs.
func (idx *Index) authorize(p Principal, host netip.Addr, op Operation, rt ResourceType, name string, allowIfNoACL bool) bool {
	t := idx.types[rt]
	if t == nil {
		return allowIfNoACL
	}
	var found, allowed bool
	check := func(es []*entry) (denied bool) {
		for _, e := range es {
			found = true
			switch e.result(p, host, op) {
			case 1:
				allowed = true
			case -1:
				return true
			}
		}
		return false
	}
	if check(t.literal[name]) {
		return false
	}
	for _, l := range t.lengths {
		if l > len(name) {
			break
		}
		if check(t.prefixed[name[:l]]) {
			return false
		}
	}
	if check(t.wildcard) {
		return false
	}
	if allowed {
		return true
	}
	if found {
		return false
	}
	return allowIfNoACL
}

// Filter is an AclBindingFilter: a ResourcePatternFilter and an
// AccessControlEntryFilter. A nil Name, Principal or Host matches any.
type Filter struct {
	ResourceType ResourceType
	Name         *string
	PatternType  PatternType
	Principal    *string
	Host         *string
	Operation    Operation
	Permission   Permission
}

// Unknown reports which half of the filter has an unknown value
// (ResourcePatternFilter.isUnknown, AccessControlEntryFilter.isUnknown):
// "patternFilter", "entryFilter" or "".
func (f Filter) Unknown() string {
	if f.ResourceType == ResourceUnknown || f.PatternType == PatternUnknown {
		return "patternFilter"
	}
	if f.Operation == OpUnknown || f.Permission == PermissionUnknown {
		return "entryFilter"
	}
	return ""
}

// Matches is AclBindingFilter.matches.
func (f Filter) Matches(a ACL) bool {
	return f.matchesPattern(a) && f.matchesEntry(a)
}

// matchesPattern is ResourcePatternFilter.matches: ANY matches every
// pattern type, MATCH every pattern that would apply to a resource named
// Name (the literal itself, the "*" literal, prefixes of it).
func (f Filter) matchesPattern(a ACL) bool {
	if f.ResourceType != ResourceAny && f.ResourceType != a.ResourceType {
		return false
	}
	if f.PatternType != PatternAny && f.PatternType != PatternMatch && f.PatternType != a.PatternType {
		return false
	}
	if f.Name == nil {
		return true
	}
	if f.PatternType == PatternAny || f.PatternType == a.PatternType {
		return *f.Name == a.ResourceName
	}
	switch a.PatternType {
	case PatternLiteral:
		return *f.Name == a.ResourceName || a.ResourceName == Wildcard
	case PatternPrefixed:
		return strings.HasPrefix(*f.Name, a.ResourceName)
	}
	return false
}

// matchesEntry is AccessControlEntryFilter.matches.
func (f Filter) matchesEntry(a ACL) bool {
	if f.Principal != nil && *f.Principal != a.Principal {
		return false
	}
	if f.Host != nil && *f.Host != a.Host {
		return false
	}
	if f.Operation != OpAny && f.Operation != a.Operation {
		return false
	}
	return f.Permission == PermissionAny || f.Permission == a.Permission
}

// Normalize maps codes Kafka does not know to the UNKNOWN values, as
// fromCode does when Kafka reads a request.
func Normalize(rt int8, pt int8, op int8, perm int8) (ResourceType, PatternType, Operation, Permission) {
	r, p, o, m := ResourceType(rt), PatternType(pt), Operation(op), Permission(perm)
	if r < 0 || r > ResourceUser {
		r = ResourceUnknown
	}
	if p < 0 || p > PatternPrefixed {
		p = PatternUnknown
	}
	if o < 0 || o > OpTwoPhaseCommit {
		o = OpUnknown
	}
	if m < 0 || m > PermissionAllow {
		m = PermissionUnknown
	}
	return r, p, o, m
}
