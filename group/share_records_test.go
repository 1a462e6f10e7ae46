package group

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"slices"
	"testing"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// TestShareRecordBytes pins the encodings against Kafka's schemas
// (ShareGroup*Key/Value.json, version 0): int16 record type + key fields,
// int16 value version + flexible value. The expected bytes are what Kafka
// 4.4's generated classes (kafka-group-coordinator-4.4.0.jar,
// ApiMessage.write at version 0 after the version) produce for the same
// values.
func TestShareRecordBytes(t *testing.T) {
	rack := "r"
	m := &shareMember{id: "m", rackID: &rack, clientID: "c", clientHost: "h", topics: []string{"t"},
		epoch: 2, prevEpoch: 1, assigned: partSet{{id: [16]byte{1}, p: 0}: {}}}
	meta := newShareStateMeta()
	meta.initialized[[16]byte{1}] = initTopic{name: "t", parts: map[int32]struct{}{0: {}, 1: {}}}
	meta.deleting[[16]byte{2}] = "u"
	uuid1 := "01000000000000000000000000000000"
	uuid2 := "02000000000000000000000000000000"
	for _, c := range []struct {
		name       string
		r          record
		key, value string
	}{
		{"metadata", shareGroupMetadataRecord("g", 3, 0), "000b" + "00016" + "7",
			"0000" + "00000003" + "0000000000000000" + "00"},
		{"member", shareMemberMetadataRecord("g", m), "000a" + "000167" + "00016d",
			"0000" + "0272" + "0263" + "0268" + "02" + "0274" + "00"},
		{"target metadata", shareTargetMetadataRecord("g", 4, 0), "000c000167", "0000" + "00000004" + "00"},
		{"target metadata with timestamp", shareTargetMetadataRecord("g", 4, 5), "000c000167",
			"0000" + "00000004" + "01" + "00" + "08" + "0000000000000005"},
		{"target member", shareTargetMemberRecord("g", "m", m.assigned), "000d00016700016d",
			"0000" + "02" + uuid1 + "02" + "00000000" + "00" + "00"},
		{"current", shareCurrentAssignmentRecord("g", m), "000e00016700016d",
			"0000" + "00000002" + "00000001" + "00" + "02" + uuid1 + "02" + "00000000" + "00" + "00"},
		{"state partitions", shareStatePartitionRecord("g", meta), "000f000167",
			"0000" + "01" + "02" + uuid1 + "0274" + "03" + "00000000" + "00000001" + "00" + "02" + uuid2 + "0275" + "00" + "00"},
	} {
		if k := hex.EncodeToString(c.r.Key); k != c.key {
			t.Errorf("%s key %s, want %s", c.name, k, c.key)
		}
		if v := hex.EncodeToString(c.r.Value); v != c.value {
			t.Errorf("%s value %s, want %s", c.name, v, c.value)
		}
	}
}

func shareFuzzRecords() []record {
	rack := "r"
	m := &shareMember{id: "m", rackID: &rack, clientID: "c", clientHost: "h", topics: []string{"t", "u"},
		epoch: 2, prevEpoch: 1, assigned: partSet{{id: [16]byte{1}, p: 0}: {}, {id: [16]byte{1}, p: 3}: {}}}
	meta := newShareStateMeta()
	meta.initializing[[16]byte{1}] = initTopic{name: "t", parts: map[int32]struct{}{2: {}}}
	meta.initialized[[16]byte{1}] = initTopic{name: "t", parts: map[int32]struct{}{0: {}, 1: {}}}
	meta.deleting[[16]byte{2}] = "u"
	return []record{
		shareGroupMetadataRecord("sg", 3, 0),
		shareMemberMetadataRecord("sg", m),
		shareTargetMetadataRecord("sg", 3, 1000),
		shareTargetMemberRecord("sg", "m", m.assigned),
		shareCurrentAssignmentRecord("sg", m),
		shareStatePartitionRecord("sg", meta),
	}
}

// FuzzReplayShareRecord: a share group record never panics replay, and
// what it loads re-encodes to a record that loads the same state.
func FuzzReplayShareRecord(f *testing.F) {
	for _, r := range shareFuzzRecords() {
		f.Add(r.Key, r.Value, false)
		f.Add(r.Key, []byte(nil), true)
		if len(r.Value) > 3 {
			f.Add(r.Key, r.Value[:len(r.Value)-3], false)
		}
	}
	f.Fuzz(func(t *testing.T, k, v []byte, tombstone bool) {
		if tombstone {
			v = nil
		} else if v == nil {
			v = []byte{}
		}
		full := fuzzShard()
		for _, r := range shareFuzzRecords() {
			full.replay(0, coordinator.NoProducer, r.Key, r.Value)
		}
		full.replay(0, coordinator.NoProducer, k, v)
		s := fuzzShard()
		s.replay(0, coordinator.NoProducer, k, v)
		if tombstone || len(k) < 2 {
			return
		}
		s2 := fuzzShard()
		ver := int16(k[0])<<8 | int16(k[1])
		if !isShareKey(ver) {
			return
		}
		withMember := ver == keyShareGroupMemberMetadata || ver == keyShareGroupTargetMember || ver == keyShareGroupCurrentMember
		gid, mid, ok := readKey(k, withMember)
		if !ok {
			return
		}
		if ver == keyShareGroupStatePartition {
			m := s.shareMeta[gid]
			if m == nil {
				return
			}
			r := shareStatePartitionRecord(gid, m)
			s2.replay(0, coordinator.NoProducer, r.Key, r.Value)
			if !reflect.DeepEqual(s2.shareMeta[gid], m) {
				t.Fatalf("state partition metadata round trip: %+v != %+v", m, s2.shareMeta[gid])
			}
			return
		}
		g := s.sgs[gid]
		if g == nil {
			return
		}
		var r record
		switch ver {
		case keyShareGroupMetadata:
			r = shareGroupMetadataRecord(gid, g.epoch, g.metadataHash)
		case keyShareGroupTargetMetadata:
			r = shareTargetMetadataRecord(gid, g.assignmentEpoch, g.assignmentTs)
		case keyShareGroupTargetMember:
			r = shareTargetMemberRecord(gid, mid, g.target[mid])
		case keyShareGroupMemberMetadata:
			r = shareMemberMetadataRecord(gid, g.members[mid])
		case keyShareGroupCurrentMember:
			r = shareCurrentAssignmentRecord(gid, g.members[mid])
		}
		s2.replay(0, coordinator.NoProducer, r.Key, r.Value)
		g2 := s2.sgs[gid]
		if g2 == nil || g2.epoch != g.epoch || g2.metadataHash != g.metadataHash || g2.assignmentEpoch != g.assignmentEpoch ||
			g2.assignmentTs != g.assignmentTs || !g2.target[mid].equal(g.target[mid]) {
			t.Fatalf("share group round trip: %+v != %+v", g, g2)
		}
		if m := g.members[mid]; m != nil {
			m2 := g2.members[mid]
			if m2 == nil || !reflect.DeepEqual(m2.rackID, m.rackID) || m2.clientID != m.clientID || m2.clientHost != m.clientHost ||
				!slices.Equal(m2.topics, m.topics) || m2.epoch != m.epoch || m2.prevEpoch != m.prevEpoch ||
				m2.state != m.state || !m2.assigned.equal(m.assigned) {
				t.Fatalf("share member round trip: %+v != %+v", m, m2)
			}
		}
		_ = bytes.Equal
	})
}
