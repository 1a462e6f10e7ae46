package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func quotaEntry(ops []kmsg.AlterClientQuotasRequestEntryOp, kv ...*string) kmsg.AlterClientQuotasRequestEntry {
	e := kmsg.NewAlterClientQuotasRequestEntry()
	for i := 0; i < len(kv); i += 2 {
		e.Entity = append(e.Entity, kmsg.AlterClientQuotasRequestEntryEntity{Type: *kv[i], Name: kv[i+1]})
	}
	e.Ops = ops
	return e
}

func set(key string, v float64) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Value: v}
}

func remove(key string) kmsg.AlterClientQuotasRequestEntryOp {
	return kmsg.AlterClientQuotasRequestEntryOp{Key: key, Remove: true}
}

// TestAlterClientQuotas checks ClientQuotaControlManager's validation and
// that accepted quotas reach the image.
func TestAlterClientQuotas(t *testing.T) {
	e := newTestEnv(t, nil)
	s := strp
	alter := func(validateOnly bool, entries ...kmsg.AlterClientQuotasRequestEntry) []kmsg.AlterClientQuotasResponseEntry {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		req.ValidateOnly, req.Entries = validateOnly, entries
		return e.do(req).(*kmsg.AlterClientQuotasResponse).Entries
	}
	cases := []struct {
		name  string
		entry kmsg.AlterClientQuotasRequestEntry
		code  int16
		msg   string
	}{
		{"user", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 1048576), set("request_percentage", 12.5)}, s("user"), s("alice")), 0, ""},
		{"default client", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("consumer_byte_rate", 2048)}, s("client-id"), nil), 0, ""},
		{"user and client", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("controller_mutation_rate", 1.5)}, s("user"), s("bob"), s("client-id"), s("c1")), 0, ""},
		{"ip", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("connection_creation_rate", 10)}, s("ip"), s("127.0.0.1")), 0, ""},
		{"empty", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 1)}), kerr.InvalidRequest.Code, "Invalid empty client quota entity"},
		{"bad type", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 1)}, s("group"), s("g")), kerr.InvalidRequest.Code, "Unhandled client quota entity type: group"},
		{"empty name", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 1)}, s("user"), s("")), kerr.InvalidRequest.Code, "Empty user not supported"},
		{"ip and user", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("connection_creation_rate", 1)}, s("ip"), s("1.2.3.4"), s("user"), s("u")), kerr.InvalidRequest.Code, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"},
		{"ip key on user", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("connection_creation_rate", 1)}, s("user"), s("u")), kerr.InvalidRequest.Code, "Invalid configuration key connection_creation_rate"},
		{"user key on ip", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 1)}, s("ip"), nil), kerr.InvalidRequest.Code, "Invalid configuration key producer_byte_rate"},
		{"zero", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 0)}, s("user"), s("u")), kerr.InvalidRequest.Code, "Quota producer_byte_rate must be greater than 0"},
		{"fraction", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 1.5)}, s("user"), s("u")), kerr.InvalidRequest.Code, "producer_byte_rate cannot be a fractional value."},
		{"too large", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("connection_creation_rate", 3e9)}, s("ip"), s("1.2.3.4")), kerr.InvalidRequest.Code, "Proposed value for connection_creation_rate is too large for an INT."},
		{"duplicate key", quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 1), set("producer_byte_rate", 2)}, s("user"), s("dup")), kerr.InvalidRequest.Code, "Ignoring duplicate entity ClientQuotaEntity(entries={user=dup})"},
	}
	for _, c := range cases {
		got := alter(false, c.entry)
		if len(got) != 1 || got[0].ErrorCode != c.code || (c.msg != "" && (got[0].ErrorMessage == nil || *got[0].ErrorMessage != c.msg)) {
			t.Errorf("%s: %+v, want code %d %q", c.name, got, c.code, c.msg)
		} else if c.code == 0 && got[0].ErrorMessage != nil {
			t.Errorf("%s: success with message %q", c.name, *got[0].ErrorMessage)
		}
	}
	// A repeated entity in one request is refused.
	got := alter(false, quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 5)}, s("user"), s("twice")),
		quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("consumer_byte_rate", 5)}, s("user"), s("twice")))
	if len(got) != 1 || got[0].ErrorCode != kerr.InvalidRequest.Code || *got[0].ErrorMessage != "Ignoring duplicate entity ClientQuotaEntity(entries={user=twice})" {
		t.Errorf("repeated entity: %+v", got)
	}
	// validate_only writes nothing.
	if got := alter(true, quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{set("producer_byte_rate", 7)}, s("user"), s("carol"))); got[0].ErrorCode != 0 {
		t.Fatalf("validate only: %+v", got)
	}
	values := func() map[string]map[string]float64 {
		out := map[string]map[string]float64{}
		for _, q := range e.c.cache.Image().ClientQuotas() {
			k := ""
			for _, p := range q.Entity {
				n := "<default>"
				if p.Name != nil {
					n = *p.Name
				}
				k += p.Type + "=" + n + " "
			}
			out[k] = q.Values
		}
		return out
	}
	v := values()
	if v["user=alice "]["producer_byte_rate"] != 1048576 || v["user=alice "]["request_percentage"] != 12.5 ||
		v["client-id=<default> "]["consumer_byte_rate"] != 2048 || v["client-id=c1 user=bob "]["controller_mutation_rate"] != 1.5 ||
		v["ip=127.0.0.1 "]["connection_creation_rate"] != 10 {
		t.Errorf("image quotas: %v", v)
	}
	if _, ok := v["user=carol "]; ok {
		t.Error("validate_only stored a quota")
	}
	// Removal; removing an absent key is accepted and writes nothing.
	got = alter(false, quotaEntry([]kmsg.AlterClientQuotasRequestEntryOp{remove("producer_byte_rate"), remove("request_percentage"), remove("consumer_byte_rate")}, s("user"), s("alice")))
	if got[0].ErrorCode != 0 {
		t.Fatalf("remove: %+v", got)
	}
	if _, ok := values()["user=alice "]; ok {
		t.Errorf("alice's quotas not removed: %v", values())
	}
	e.c.view(func(st *state) {
		if _, ok := st.quotas[quotaEntity{"user": s("alice")}.key()]; ok {
			t.Error("alice still in the controller state")
		}
	})
}
