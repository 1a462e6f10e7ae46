package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
)

// tp is one topic partition by topic id.
type tp struct {
	id [16]byte
	p  int32
}

// partSet is a set of topic partitions (assignments).
type partSet map[tp]struct{}

func (s partSet) clone() partSet {
	out := make(partSet, len(s))
	for k := range s {
		out[k] = struct{}{}
	}
	return out
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for k := range s {
		if _, ok := o[k]; !ok {
			return false
		}
	}
	return true
}

// topicParts lists the set by topic id, partitions ascending.
func (s partSet) topicParts() []topicParts {
	by := map[[16]byte][]int32{}
	for k := range s {
		by[k.id] = append(by[k.id], k.p)
	}
	out := make([]topicParts, 0, len(by))
	for id, ps := range by {
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		out = append(out, topicParts{id: id, parts: ps})
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].id[:]) < string(out[j].id[:]) })
	return out
}

func partSetOf(tps []topicParts) partSet {
	s := partSet{}
	for _, t := range tps {
		for _, p := range t.parts {
			s[tp{t.id, p}] = struct{}{}
		}
	}
	return s
}

// ---- KIP-848 record values (Kafka's *Value.json schemas, version 0) ----

// consumerGroupMetadataRecord is ConsumerGroupMetadataValue: the group epoch
// and, in tag 0, the subscription metadata hash (KIP-1101).
func consumerGroupMetadataRecord(group string, epoch int32, hash int64) record {
	return record{Key: groupKey(keyConsumerGroupMetadata, group), Value: epochTag0LongValue(epoch, hash)}
}

func memberMetadataRecord(group string, m *consumerMember) record {
	w := newValue()
	w.nstr(m.instanceID)
	w.nstr(m.rackID)
	w.str(m.clientID)
	w.str(m.clientHost)
	w.arr(len(m.topics))
	for _, t := range m.topics {
		w.str(t)
	}
	w.nstr(m.regex)
	w.i32(m.rebalanceTimeoutMs)
	w.nstr(m.assignor)
	return record{Key: memberKey(keyConsumerGroupMemberMetadata, group, m.id), Value: w.done()}
}

func targetMetadataRecord(group string, epoch int32) record {
	w := newValue()
	w.i32(epoch)
	return record{Key: groupKey(keyConsumerGroupTargetMetadata, group), Value: w.done()}
}

func targetMemberRecord(group, member string, s partSet) record {
	w := newValue()
	w.topicParts(s.topicParts())
	return record{Key: memberKey(keyConsumerGroupTargetMember, group, member), Value: w.done()}
}

func currentAssignmentRecord(group string, m *consumerMember) record {
	w := newValue()
	w.i32(m.epoch)
	w.i32(m.prevEpoch)
	w.i8(m.state)
	w.topicParts(m.assigned.topicParts())
	w.topicParts(m.pending.topicParts())
	return record{Key: memberKey(keyConsumerGroupCurrentMember, group, m.id), Value: w.done()}
}

// readKey splits a KIP-848 key into group and (for member keys) member.
func readKey(k []byte, withMember bool) (group, member string, ok bool) {
	r := kbin.Reader{Src: k[2:]}
	group = r.String()
	if withMember {
		member = r.String()
	}
	return group, member, r.Ok()
}

func newReader(v []byte) *fr {
	if len(v) < 2 {
		return &fr{r: kbin.Reader{}}
	}
	return &fr{r: kbin.Reader{Src: v[2:]}}
}
