package broker

// DescribeClientQuotas: v0-1 (client listeners)
//
// Behavior (ClientQuotasImage.describe, which a KRaft broker answers from
// its metadata image):
//   - The quotas in the image (ClientQuotaRecords, which AlterClientQuotas
//     writes; 49_alter_client_quotas.go) that match the filter: EXACT (0) the entity part with that name, DEFAULT (1) the
//     default entity of the type, SPECIFIED (2) any entity with that type;
//     strict: entities with exactly the filtered types. No quotas: an empty
//     (non-null) list.
//   - INVALID_REQUEST for an empty or repeated entity type, a match string
//     where the match type forbids one (or none where EXACT needs one), or
//     ip combined with user or client-id, or an unknown match type;
//     UNSUPPORTED_VERSION for an entity type other than user, client-id and
//     ip.
//   - The brokers enforce these quotas (quotas.go).
//
// kafka-configs.sh --describe --entity-type users (and clients) reads quotas
// this way before it describes the users' SCRAM credentials.
//
// Version notes: v1: flexible.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(48, 0, 1, onBroker, handleDescribeClientQuotas) }

// Client quota entity types (ClientQuotaEntity).
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

func handleDescribeClientQuotas(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	exact, typed, err := quotaFilter(r.Components)
	if err != nil {
		resp.ErrorCode, resp.ErrorMessage = err.code.Code, strPtr(err.msg)
		return protocol.Response{Msg: resp}, nil
	}
	resp.ErrorMessage = strPtr("") // Kafka's success answer carries an empty, not a null, message
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, q := range b.meta.Image().ClientQuotas() {
		if !quotaMatches(q, exact, typed, r.Strict) {
			continue
		}
		e := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, part := range q.Entity {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = part.Type, part.Name
			e.Entity = append(e.Entity, ent)
		}
		for _, k := range sortedKeys(q.Values) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, q.Values[k]
			e.Values = append(e.Values, v)
		}
		resp.Entries = append(resp.Entries, e)
	}
	return protocol.Response{Msg: resp}, nil
}

type apiError struct {
	code *kerr.Error
	msg  string
}

// quotaFilter validates the filter components as ClientQuotasImage.describe
// does: exact holds EXACT (name) and DEFAULT (nil) matches by type, typed
// the SPECIFIED types.
func quotaFilter(components []kmsg.DescribeClientQuotasRequestComponent) (map[string]*string, map[string]bool, *apiError) {
	exact, typed := map[string]*string{}, map[string]bool{}
	invalid := func(format string, args ...any) *apiError {
		return &apiError{kerr.InvalidRequest, fmt.Sprintf(format, args...)}
	}
	for _, c := range components {
		_, isExact := exact[c.EntityType]
		switch {
		case c.EntityType == "":
			return nil, nil, invalid("Invalid empty entity type.")
		case isExact || typed[c.EntityType]:
			return nil, nil, invalid("Entity type %s cannot appear more than once in the filter.", c.EntityType)
		case c.EntityType != quotaEntityIP && c.EntityType != quotaEntityUser && c.EntityType != quotaEntityClientID:
			return nil, nil, &apiError{kerr.UnsupportedVersion, "Unsupported entity type " + c.EntityType}
		}
		switch c.MatchType {
		case 0:
			if c.Match == nil {
				return nil, nil, invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[c.EntityType] = c.Match
		case 1:
			if c.Match != nil {
				return nil, nil, invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[c.EntityType] = nil
		case 2:
			if c.Match != nil {
				return nil, nil, invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			typed[c.EntityType] = true
		default:
			return nil, nil, invalid("Unknown match type %d", c.MatchType)
		}
	}
	has := func(t string) bool { _, ok := exact[t]; return ok || typed[t] }
	if has(quotaEntityIP) && (has(quotaEntityUser) || has(quotaEntityClientID)) {
		return nil, nil, invalid("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return exact, typed, nil
}

func quotaMatches(q *metadatacache.ClientQuota, exact map[string]*string, typed map[string]bool, strict bool) bool {
	if strict && len(q.Entity) != len(exact)+len(typed) {
		return false
	}
	part := func(t string) (*string, bool) {
		for _, p := range q.Entity {
			if p.Type == t {
				return p.Name, true
			}
		}
		return nil, false
	}
	for t, want := range exact {
		name, ok := part(t)
		if !ok || (name == nil) != (want == nil) || (name != nil && *name != *want) {
			return false
		}
	}
	for t := range typed {
		if _, ok := part(t); !ok {
			return false
		}
	}
	return true
}
