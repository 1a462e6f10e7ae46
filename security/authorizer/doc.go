// Package authorizer is Kafka 4.4's StandardAuthorizer decision logic
// (org.apache.kafka.metadata.authorizer.StandardAuthorizerData), pure: it
// is told the ACLs and the settings and answers whether a principal from a
// host may perform an operation on a resource. It knows nothing of
// requests, the metadata log or the network.
//
//	metadata image ACLs ──► NewIndex (immutable, built once per ACL change)
//	                          │
//	super.users,              ▼
//	allow.everyone... ──► Authorizer.Authorize(principal, host, op, type, name)
//	                     Authorizer.AuthorizeByResourceType(principal, host, op, type)
//
// The rules, as StandardAuthorizerData.authorize:
//
//   - a super user (super.users, "User:alice;User:bob") may do anything;
//   - the ACLs that apply to a resource are the LITERAL ones with its exact
//     name, the PREFIXED ones whose name is a prefix of it, and the LITERAL
//     "*" wildcard ones, of its resource type;
//   - an ACL matches the request when its principal is the requester's or
//     "User:*", its host is "*", the client's address or a CIDR block
//     holding it (KIP-1276), and its operation
//     is the requested one, ALL, or (ALLOW ACLs only) one that implies it:
//     READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
//     DESCRIBE_CONFIGS;
//   - a matching DENY wins over any ALLOW; otherwise a matching ALLOW
//     allows; otherwise, if any ACL applies to the resource (whatever its
//     principal), the request is denied, and if none does the answer is
//     allow.everyone.if.no.acl.found (false by default).
//
// AuthorizeByResourceType is Kafka's Authorizer.authorizeByResourceType
// (the default method StandardAuthorizer inherits): allowed if the
// principal may act on some resource of the type that no DENY covers.
//
// Speed: an Index maps each resource type to its literal names, its
// prefixes (looked up by the prefix lengths present, so a check is a
// handful of map lookups on substrings of the name) and its wildcard
// ACLs; hosts are parsed once into netip.Addr. Authorize allocates
// nothing. An Authorizer holds the current Index behind an atomic
// pointer: the metadata image's subscriber swaps in a new one when the
// ACLs change, and readers never lock.
package authorizer
