package group

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// fuzzShard is a loading shard of a coordinator that is never started: enough
// for replay, which is what reads __consumer_offsets records back.
func fuzzShard() *shard {
	clk := NewManualClock(time.Unix(1_700_000_000, 0))
	c := &Coordinator{cfg: Config{Clock: clk}, log: zap.NewNop(), clock: clk}
	return newShard(c, nil)
}

func fuzzRecords() []record {
	str := func(s string) *string { return &s }
	var recs []record
	recs = append(recs,
		offsetCommitRecord("g", "t", 3, offsetEntry{offset: 42, leaderEpoch: 5, metadata: "md", commitTs: 1000, expireTs: -1}),
		offsetCommitRecord("g", "t", 4, offsetEntry{offset: 7, leaderEpoch: -1, commitTs: 1000, expireTs: 2000}),
	)
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	v.ProtocolType, v.Generation, v.Protocol, v.Leader = "consumer", 4, str("range"), str("m1")
	v.CurrentStateTimestamp = 1000
	rm := kmsg.NewGroupMetadataValueMember()
	rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = "m1", str("i1"), "cl", "/127.0.0.1"
	rm.RebalanceTimeoutMillis, rm.SessionTimeoutMillis = 20000, 10000
	rm.Subscription, rm.Assignment = []byte{0, 1}, []byte{0, 2}
	v.Members = append(v.Members, rm)
	recs = append(recs, record{Key: groupMetadataKey("c"), Value: v.AppendTo(nil)})

	m := newConsumerMember("m")
	m.instanceID, m.rackID, m.clientID, m.clientHost = str("i"), nil, "client", "/10.0.0.1"
	m.topics, m.regex, m.rebalanceTimeoutMs, m.assignor = []string{"t", "u"}, str("t.*"), 30000, str("uniform")
	m.epoch, m.prevEpoch, m.state = 3, 2, msStable
	m.assigned = partSet{{id: [16]byte{1}, p: 0}: {}, {id: [16]byte{1}, p: 2}: {}}
	m.pending = partSet{{id: [16]byte{2}, p: 1}: {}}
	recs = append(recs,
		consumerGroupMetadataRecord("cg", 3, 0),
		consumerGroupMetadataRecord("cg", 4, -7),
		memberMetadataRecord("cg", m),
		targetMetadataRecord("cg", 3),
		targetMemberRecord("cg", "m", m.assigned),
		currentAssignmentRecord("cg", m),
	)
	return recs
}

// FuzzReplayRecord: a __consumer_offsets record (read back from the log when a
// coordinator partition loads) never panics replay, on an empty shard or on one
// that holds groups already; what it loads re-encodes to a record that loads the
// same state.
func FuzzReplayRecord(f *testing.F) {
	for _, r := range fuzzRecords() {
		f.Add(r.Key, r.Value, false)
		f.Add(r.Key, []byte(nil), true)
		if len(r.Value) > 3 {
			f.Add(r.Key, r.Value[:len(r.Value)-3], false) // truncated value
		}
	}
	f.Add([]byte{0}, []byte{}, false)
	f.Fuzz(func(t *testing.T, k, v []byte, tombstone bool) {
		if tombstone {
			v = nil
		} else if v == nil {
			v = []byte{}
		}
		full := fuzzShard()
		for _, r := range fuzzRecords() {
			full.replay(0, coordinator.NoProducer, r.Key, r.Value)
		}
		full.replay(0, coordinator.NoProducer, k, v)

		s := fuzzShard()
		s.replay(0, coordinator.NoProducer, k, v)
		if tombstone || len(k) < 2 {
			return
		}
		s2 := fuzzShard()
		switch ver := int16(k[0])<<8 | int16(k[1]); ver {
		case 0, 1:
			var key kmsg.OffsetCommitKey
			if key.ReadFrom(k) != nil {
				return
			}
			o, ok := s.offsets[key.Group][key.Topic][key.Partition]
			if !ok {
				return
			}
			if o.expireTs < 0 {
				o.expireTs = -1 // a negative expire timestamp is none
			}
			r := offsetCommitRecord(key.Group, key.Topic, key.Partition, o)
			s2.replay(0, coordinator.NoProducer, r.Key, r.Value)
			if o2 := s2.offsets[key.Group][key.Topic][key.Partition]; o2 != o {
				t.Fatalf("offset commit round trip: %+v != %+v", o, o2)
			}
		case 2:
			var key kmsg.GroupMetadataKey
			if key.ReadFrom(k) != nil {
				return
			}
			g := s.groups[key.Group]
			if g == nil {
				return
			}
			assignment := map[string][]byte{}
			for id, m := range g.members {
				assignment[id] = m.assignment
			}
			r := g.record(assignment, 0)
			s2.replay(0, coordinator.NoProducer, r.Key, r.Value)
			g2 := s2.groups[key.Group]
			if g2 == nil || g2.generation != g.generation || !reflect.DeepEqual(g2.protocolName, g.protocolName) ||
				!reflect.DeepEqual(g2.leader, g.leader) || len(g2.members) != len(g.members) {
				t.Fatalf("group metadata round trip: %+v != %+v", g, g2)
			}
			for id, m := range g.members {
				m2 := g2.members[id]
				if m2 == nil || m2.clientID != m.clientID || m2.clientHost != m.clientHost ||
					!reflect.DeepEqual(m2.instanceID, m.instanceID) || m2.sessionTimeout != m.sessionTimeout ||
					!bytes.Equal(m2.assignment, m.assignment) {
					t.Fatalf("group metadata round trip of member %q: %+v != %+v", id, m, m2)
				}
			}
		case keyConsumerGroupMetadata, keyConsumerGroupTargetMetadata:
			gid, _, ok := readKey(k, false)
			if !ok || s.cgs[gid] == nil {
				return
			}
			g := s.cgs[gid]
			var r record
			if ver == keyConsumerGroupMetadata {
				r = consumerGroupMetadataRecord(gid, g.epoch, g.metadataHash)
			} else {
				r = targetMetadataRecord(gid, g.assignmentEpoch)
			}
			s2.replay(0, coordinator.NoProducer, r.Key, r.Value)
			if g2 := s2.cgs[gid]; g2 == nil || g2.epoch != g.epoch || g2.metadataHash != g.metadataHash || g2.assignmentEpoch != g.assignmentEpoch {
				t.Fatalf("consumer group epoch round trip")
			}
		case keyConsumerGroupMemberMetadata, keyConsumerGroupCurrentMember, keyConsumerGroupTargetMember:
			gid, mid, ok := readKey(k, true)
			if !ok || s.cgs[gid] == nil {
				return
			}
			g := s.cgs[gid]
			if ver == keyConsumerGroupTargetMember {
				r := targetMemberRecord(gid, mid, g.target[mid])
				s2.replay(0, coordinator.NoProducer, r.Key, r.Value)
				if !s2.cgs[gid].target[mid].equal(g.target[mid]) {
					t.Fatalf("target assignment round trip: %v != %v", g.target[mid], s2.cgs[gid].target[mid])
				}
				return
			}
			m := g.members[mid]
			if m == nil {
				return
			}
			var r record
			if ver == keyConsumerGroupMemberMetadata {
				r = memberMetadataRecord(gid, m)
			} else {
				r = currentAssignmentRecord(gid, m)
			}
			s2.replay(0, coordinator.NoProducer, r.Key, r.Value)
			m2 := s2.cgs[gid].members[mid]
			if ver == keyConsumerGroupMemberMetadata {
				if !reflect.DeepEqual(m2.instanceID, m.instanceID) || !reflect.DeepEqual(m2.rackID, m.rackID) ||
					m2.clientID != m.clientID || m2.clientHost != m.clientHost || !slices.Equal(m2.topics, m.topics) ||
					!reflect.DeepEqual(m2.regex, m.regex) || m2.rebalanceTimeoutMs != m.rebalanceTimeoutMs ||
					!reflect.DeepEqual(m2.assignor, m.assignor) {
					t.Fatalf("member metadata round trip: %+v != %+v", m, m2)
				}
			} else if m2.epoch != m.epoch || m2.prevEpoch != m.prevEpoch || m2.state != m.state ||
				!m2.assigned.equal(m.assigned) || !m2.pending.equal(m.pending) {
				t.Fatalf("current assignment round trip: %+v != %+v", m, m2)
			}
		}
	})
}
