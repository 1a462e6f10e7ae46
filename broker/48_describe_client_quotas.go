package broker

// DescribeClientQuotas: v0-1 (client listeners)
//
// Behavior (Kafka's ClientQuotasImage.describe, answered by the broker from
// its metadata image; the quotas are not enforced yet):
//   - Each filter component names an entity type (user, client-id, ip) with
//     a match: EXACT (0) a name, DEFAULT (1) the default entity, ANY (2) any
//     named entity. An entity matches when every component matches one of
//     its parts; with Strict it must have no other parts.
//   - A type named twice, an unknown match type or an EXACT match without a
//     name: INVALID_REQUEST, as Kafka.
//
// kafka-configs.sh --describe --entity-type users (and clients) reads quotas
// this way before it describes the users' SCRAM credentials.
//
// Version notes:
//   - v1: flexible

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(48, 0, 1, onBroker, handleDescribeClientQuotas) }

func handleDescribeClientQuotas(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	fail := func(msg string) (protocol.Response, error) {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, &msg
		return protocol.Response{Msg: resp}, nil
	}
	seen := map[string]bool{}
	for _, c := range r.Components {
		if seen[c.EntityType] {
			return fail(fmt.Sprintf("Entity type %s cannot appear more than once in the filter.", c.EntityType))
		}
		seen[c.EntityType] = true
		switch c.MatchType {
		case 0:
			if c.Match == nil {
				return fail("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
		case 1, 2:
		default:
			return fail(fmt.Sprintf("Unknown match type %d", c.MatchType))
		}
	}
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{} // null only with an error
	for _, q := range b.meta.Image().ClientQuotas() {
		if !quotaMatches(q, r.Components, r.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, part := range q.Entity {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = part.Type, part.Name
			e.Entity = append(e.Entity, ee)
		}
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return protocol.Response{Msg: resp}, nil
}

func quotaMatches(q *metadatacache.ClientQuota, comps []kmsg.DescribeClientQuotasRequestComponent, strict bool) bool {
	if len(q.Values) == 0 {
		return false
	}
	parts := map[string]*string{}
	for _, p := range q.Entity {
		parts[p.Type] = p.Name
	}
	for _, c := range comps {
		name, ok := parts[c.EntityType]
		if !ok {
			return false
		}
		switch c.MatchType {
		case 0:
			if name == nil || *name != *c.Match {
				return false
			}
		case 1:
			if name != nil {
				return false
			}
		case 2:
			if name == nil {
				return false
			}
		}
	}
	return !strict || len(parts) == len(comps)
}
