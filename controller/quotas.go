package controller

// AlterClientQuotas (49), as Kafka's ClientQuotaControlManager.alterClientQuotas
// (KIP-546): each entry names an entity (user, client-id, user+client-id, or
// ip; a null name is the default entity) and ops that set or remove quota
// keys. Validation, per entity, in Kafka's order:
//   - an empty entity, an entity type other than user, client-id and ip, or
//     an empty name: INVALID_REQUEST;
//   - ip combined with user or client-id, or an ip that is neither an
//     address nor a resolvable host: INVALID_REQUEST;
//   - a key that the entity type does not have (producer_byte_rate,
//     consumer_byte_rate, request_percentage, controller_mutation_rate for
//     users and clients; connection_creation_rate for ips), a value <= 0, a
//     fraction for the integral keys, or a value beyond the key's type:
//     INVALID_REQUEST;
//   - a key given twice in one entry, or an entity given twice in one
//     request: INVALID_REQUEST "Ignoring duplicate entity ...".
// A valid entity writes one ClientQuotaRecord per changed key (none for an
// unchanged value or a removal of an absent key); all the request's records
// go in one atomic batch. validate_only answers the same without writing.

import (
	"context"
	"math"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// quotaKeyTypes are QuotaConfig's userAndClientQuotaConfigs and ipConfigs:
// the ConfigDef type of each key.
var (
	userClientQuotaKeys = map[string]string{
		"producer_byte_rate":       "LONG",
		"consumer_byte_rate":       "LONG",
		"request_percentage":       "DOUBLE",
		"controller_mutation_rate": "DOUBLE",
	}
	ipQuotaKeys = map[string]string{"connection_creation_rate": "INT"}
)

// quotaEntity is a ClientQuotaEntity: type -> name (nil: the default).
type quotaEntity map[string]*string

// key is a canonical map key of the entity.
func (e quotaEntity) key() string {
	types := make([]string, 0, len(e))
	for t := range e {
		types = append(types, t)
	}
	sort.Strings(types)
	var b strings.Builder
	for _, t := range types {
		b.WriteString(t)
		if n := e[t]; n != nil {
			b.WriteString("=" + *n)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// String is ClientQuotaEntity.toString: Java's HashMap order, in which
// client-id comes before user.
func (e quotaEntity) String() string {
	var parts []string
	for _, t := range []string{"client-id", "user", "ip"} {
		if n, ok := e[t]; ok {
			v := "null"
			if n != nil {
				v = *n
			}
			parts = append(parts, t+"="+v)
		}
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

type quotaResult struct {
	entity quotaEntity
	err    *apiError
}

// unresolvableIPEntities are the hosts named by req's ip entities that are
// neither address literals nor resolvable.
func unresolvableIPEntities(ctx context.Context, req *kmsg.AlterClientQuotasRequest) map[string]bool {
	var out map[string]bool
	for _, e := range req.Entries {
		for _, p := range e.Entity {
			if p.Type != "ip" || p.Name == nil || *p.Name == "" || out[*p.Name] {
				continue
			}
			if !resolvable(ctx, *p.Name) {
				if out == nil {
					out = map[string]bool{}
				}
				out[*p.Name] = true
			}
		}
	}
	return out
}

// alterClientQuotas runs under c.mu; unresolvable is what
// unresolvableIPEntities found before it was taken.
func (c *Controller) alterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest, unresolvable map[string]bool) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	current := map[string]map[string]float64{}
	c.view(func(s *state) {
		for k, vs := range s.quotas {
			current[k] = vs
		}
	})
	var results []*quotaResult
	byKey := map[string]*quotaResult{}
	var recs []metadatacache.Record
	for _, e := range req.Entries {
		// AlterClientQuotasRequest.entries: a repeated type keeps the last name.
		ent := quotaEntity{}
		for _, p := range e.Entity {
			ent[p.Type] = p.Name
		}
		k := ent.key()
		ops := map[string]*float64{}
		dupKey := false
		for _, op := range e.Ops {
			if _, ok := ops[op.Key]; ok {
				dupKey = true
				continue
			}
			v := op.Value
			if op.Remove {
				ops[op.Key] = nil
			} else {
				ops[op.Key] = &v
			}
		}
		res := byKey[k]
		if res == nil && dupKey {
			// The duplicate key's error is at once replaced by this one.
			res = &quotaResult{entity: ent}
			byKey[k] = res
			results = append(results, res)
		} else if res == nil {
			res = &quotaResult{entity: ent}
			byKey[k] = res
			results = append(results, res)
			var entRecs []metadatacache.Record
			entRecs, res.err = alterQuotaEntity(ent, ops, current[k], unresolvable)
			recs = append(recs, entRecs...)
			continue
		}
		res.err = newAPIError(kerr.InvalidRequest, "Ignoring duplicate entity %s", ent)
	}
	if !req.ValidateOnly && len(recs) > 0 {
		if _, err := c.write(ctx, recs); err != nil {
			return quotaErrorResponse(req, kerr.NotController.Code)
		}
	}
	for _, res := range results {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode, re.ErrorMessage = res.err.code(), res.err.message()
		for _, t := range []string{"user", "client-id", "ip"} {
			if n, ok := res.entity[t]; ok {
				x := kmsg.NewAlterClientQuotasResponseEntryEntity()
				x.Type, x.Name = t, n
				re.Entity = append(re.Entity, x)
			}
		}
		for t, n := range res.entity {
			if t != "user" && t != "client-id" && t != "ip" {
				x := kmsg.NewAlterClientQuotasResponseEntryEntity()
				x.Type, x.Name = t, n
				re.Entity = append(re.Entity, x)
			}
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

func quotaErrorResponse(req *kmsg.AlterClientQuotasRequest, code int16) *kmsg.AlterClientQuotasResponse {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	for _, e := range req.Entries {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode = code
		for _, ent := range e.Entity {
			x := kmsg.NewAlterClientQuotasResponseEntryEntity()
			x.Type, x.Name = ent.Type, ent.Name
			re.Entity = append(re.Entity, x)
		}
		resp.Entries = append(resp.Entries, re)
	}
	return resp
}

// alterQuotaEntity is alterClientQuotaEntity: the entity's records, or why
// it is refused.
func alterQuotaEntity(ent quotaEntity, ops map[string]*float64, current map[string]float64, unresolvable map[string]bool) ([]metadatacache.Record, *apiError) {
	if len(ent) == 0 {
		return nil, newAPIError(kerr.InvalidRequest, "Invalid empty client quota entity")
	}
	for _, t := range sortedTypes(ent) {
		if t != "user" && t != "client-id" && t != "ip" {
			return nil, newAPIError(kerr.InvalidRequest, "Unhandled client quota entity type: %s", t)
		}
		if n := ent[t]; n != nil && *n == "" {
			return nil, newAPIError(kerr.InvalidRequest, "Empty %s not supported", t)
		}
	}
	_, hasUser := ent["user"]
	_, hasClient := ent["client-id"]
	ip, hasIP := ent["ip"]
	keys := userClientQuotaKeys
	switch {
	case hasIP && (hasUser || hasClient):
		return nil, newAPIError(kerr.InvalidRequest, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId")
	case hasIP:
		if ip != nil && unresolvable[*ip] {
			return nil, newAPIError(kerr.InvalidRequest, "%s is not a valid IP or resolvable host.", *ip)
		}
		keys = ipQuotaKeys
	}
	var recs []metadatacache.Record
	entity := func() []metadatacache.ClientQuotaEntityData {
		var out []metadatacache.ClientQuotaEntityData
		for _, t := range sortedTypes(ent) {
			out = append(out, metadatacache.ClientQuotaEntityData{EntityType: t, EntityName: ent[t]})
		}
		return out
	}
	opKeys := make([]string, 0, len(ops))
	for k := range ops {
		opKeys = append(opKeys, k)
	}
	sort.Strings(opKeys)
	for _, k := range opKeys {
		v := ops[k]
		cur, has := current[k]
		if v == nil {
			if has {
				r := metadatacache.NewClientQuotaRecord()
				r.Entity, r.QuotaKey, r.Remove = entity(), k, true
				recs = append(recs, r)
			}
			continue
		}
		if err := validateQuotaValue(keys, k, *v); err != nil {
			return nil, err
		}
		if !has || cur != *v {
			r := metadatacache.NewClientQuotaRecord()
			r.Entity, r.QuotaKey, r.Value = entity(), k, *v
			recs = append(recs, r)
		}
	}
	return recs, nil
}

func sortedTypes(ent quotaEntity) []string {
	out := make([]string, 0, len(ent))
	for t := range ent {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// validateQuotaValue is validateQuotaKeyValue.
func validateQuotaValue(keys map[string]string, key string, v float64) *apiError {
	typ, ok := keys[key]
	if !ok {
		return newAPIError(kerr.InvalidRequest, "Invalid configuration key %s", key)
	}
	if v <= 0 {
		return newAPIError(kerr.InvalidRequest, "Quota %s must be greater than 0", key)
	}
	switch typ {
	case "INT":
		if v > math.MaxInt32 {
			return newAPIError(kerr.InvalidRequest, "Proposed value for %s is too large for an INT.", key)
		}
	case "LONG":
		if v > math.MaxInt64 {
			return newAPIError(kerr.InvalidRequest, "Proposed value for %s is too large for a LONG.", key)
		}
	default:
		return nil
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return newAPIError(kerr.InvalidRequest, "%s cannot be a fractional value.", key)
	}
	return nil
}

// resolvable is InetAddress.getByName succeeding: an address literal or a
// host that resolves.
func resolvable(ctx context.Context, host string) bool {
	if net.ParseIP(host) != nil {
		return true
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(lctx, host)
	return err == nil && len(addrs) > 0
}

// quotaEntityKey is the state's key of a ClientQuotaRecord's entity.
func quotaEntityKey(parts []metadatacache.ClientQuotaEntityData) string {
	ent := quotaEntity{}
	for _, p := range parts {
		ent[p.EntityType] = p.EntityName
	}
	return ent.key()
}

// MutationQuota is the controller mutation quota (KIP-599) of the request
// being handled, Kafka's ControllerMutationQuota: CreateTopics,
// CreatePartitions and DeleteTopics record the partitions each topic
// creates or deletes once the topic is valid, and a topic whose Record
// reports false answers THROTTLING_QUOTA_EXCEEDED. The node that serves the
// controller listener resolves it from the request's principal and client
// id (broker/quotas.go) and passes it with WithMutationQuota.
type MutationQuota interface {
	Record(partitions float64) bool
}

type mutationQuotaKey struct{}

// WithMutationQuota returns ctx carrying q for Handle.
func WithMutationQuota(ctx context.Context, q MutationQuota) context.Context {
	return context.WithValue(ctx, mutationQuotaKey{}, q)
}

// unbounded is UnboundedControllerMutationQuota.
type unbounded struct{}

func (unbounded) Record(float64) bool { return true }

func mutationQuotaOf(ctx context.Context) MutationQuota {
	if q, ok := ctx.Value(mutationQuotaKey{}).(MutationQuota); ok && q != nil {
		return q
	}
	return unbounded{}
}

// errThrottled is ThrottlingQuotaExceededException's ApiError: no message,
// as ApiError.fromThrowable drops the error's generic one.
var errThrottled = bareAPIError(kerr.ThrottlingQuotaExceeded)
