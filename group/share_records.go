package group

// Share group records of __consumer_offsets (KIP-932), in Kafka 4.4's
// formats (group-coordinator/src/main/resources/common/message/ShareGroup*.json;
// the key's leading int16 is the record type of CoordinatorRecordType):
//
//	key v10  ShareGroupMemberMetadataKey            value v0: rack id, client id, client host, subscribed topics
//	key v11  ShareGroupMetadataKey                  value v0: group epoch, metadata hash
//	key v12  ShareGroupTargetAssignmentMetadataKey  value v0: assignment epoch, tag 0 assignment timestamp (KIP-1263)
//	key v13  ShareGroupTargetAssignmentMemberKey    value v0: the member's target partitions
//	key v14  ShareGroupCurrentMemberAssignmentKey   value v0: member epoch, previous epoch, state, assigned partitions
//	key v15  ShareGroupStatePartitionMetadataKey    value v0: initializing, initialized and deleting topics
//
// Keys are not flexible (int16-length strings); values are (compact
// strings and arrays, tagged fields). A nil value is a tombstone.

import (
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record types of the share group keys.
const (
	keyShareGroupMemberMetadata = 10
	keyShareGroupMetadata       = 11
	keyShareGroupTargetMetadata = 12
	keyShareGroupTargetMember   = 13
	keyShareGroupCurrentMember  = 14
	keyShareGroupStatePartition = 15
)

func isShareKey(ver int16) bool {
	return ver >= keyShareGroupMemberMetadata && ver <= keyShareGroupStatePartition
}

func shareGroupMetadataRecord(group string, epoch int32, hash int64) record {
	w := newValue()
	w.i32(epoch)
	w.b = kbin.AppendInt64(w.b, hash)
	return record{Key: groupKey(keyShareGroupMetadata, group), Value: w.done()}
}

func shareMemberMetadataRecord(group string, m *shareMember) record {
	w := newValue()
	w.nstr(m.rackID)
	w.str(m.clientID)
	w.str(m.clientHost)
	w.arr(len(m.topics))
	for _, t := range m.topics {
		w.str(t)
	}
	return record{Key: memberKey(keyShareGroupMemberMetadata, group, m.id), Value: w.done()}
}

// shareTargetMetadataRecord carries the assignment timestamp as tag 0
// (KIP-1263), written only when set, as Kafka writes a tagged field that
// differs from its default.
func shareTargetMetadataRecord(group string, epoch int32, tsMs int64) record {
	return record{Key: groupKey(keyShareGroupTargetMetadata, group), Value: epochTag0LongValue(epoch, tsMs)}
}

// epochTag0LongValue is a value of an int32 epoch and an int64 in tag 0,
// written only when not 0 (Kafka writes a tagged field that differs from
// its default).
func epochTag0LongValue(epoch int32, tag0 int64) []byte {
	w := newValue()
	w.i32(epoch)
	if tag0 == 0 {
		return w.done()
	}
	w.uvarint(1) // one tagged field
	w.uvarint(0) // tag 0
	w.uvarint(8) // its size
	w.b = kbin.AppendInt64(w.b, tag0)
	return w.b
}

func shareTargetMemberRecord(group, member string, s partSet) record {
	w := newValue()
	w.topicParts(s.topicParts())
	return record{Key: memberKey(keyShareGroupTargetMember, group, member), Value: w.done()}
}

func shareCurrentAssignmentRecord(group string, m *shareMember) record {
	w := newValue()
	w.i32(m.epoch)
	w.i32(m.prevEpoch)
	w.i8(m.state)
	w.topicParts(m.assigned.topicParts())
	return record{Key: memberKey(keyShareGroupCurrentMember, group, m.id), Value: w.done()}
}

// initTopic is one topic of ShareGroupStatePartitionMetadata (Kafka's
// ShareGroup.InitMapValue): its name, partitions and, for initializing
// ones, when they started (in memory only: the time of the write or of the
// replay, as Kafka's replay takes its current time).
type initTopic struct {
	name  string
	parts map[int32]struct{}
	ts    int64
}

func (t initTopic) clone() initTopic {
	return initTopic{name: t.name, parts: maps.Clone(t.parts), ts: t.ts}
}

func (t initTopic) sorted() []int32 { return slices.Sorted(maps.Keys(t.parts)) }

// shareStateMeta is a group's ShareGroupStatePartitionMetadata (Kafka's
// ShareGroupStatePartitionMetadataInfo): which share partitions' state
// the share coordinator holds (initialized), is being asked to create
// (initializing) or to delete (deleting topics).
type shareStateMeta struct {
	initializing map[[16]byte]initTopic
	initialized  map[[16]byte]initTopic
	deleting     map[[16]byte]string
}

func newShareStateMeta() *shareStateMeta {
	return &shareStateMeta{initializing: map[[16]byte]initTopic{}, initialized: map[[16]byte]initTopic{}, deleting: map[[16]byte]string{}}
}

func (m *shareStateMeta) clone() *shareStateMeta {
	c := newShareStateMeta()
	for id, t := range m.initializing {
		c.initializing[id] = t.clone()
	}
	for id, t := range m.initialized {
		c.initialized[id] = t.clone()
	}
	maps.Copy(c.deleting, m.deleting)
	return c
}

func (m *shareStateMeta) empty() bool {
	return len(m.initializing)+len(m.initialized)+len(m.deleting) == 0
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := slices.Collect(maps.Keys(m))
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	return ids
}

func shareStatePartitionRecord(group string, m *shareStateMeta) record {
	w := newValue()
	topics := func(ts map[[16]byte]initTopic) {
		w.arr(len(ts))
		for _, id := range sortedIDs(ts) {
			t := ts[id]
			w.uuid(id)
			w.str(t.name)
			ps := t.sorted()
			w.arr(len(ps))
			for _, p := range ps {
				w.i32(p)
			}
			w.tags()
		}
	}
	topics(m.initializing)
	topics(m.initialized)
	w.arr(len(m.deleting))
	for _, id := range sortedIDs(m.deleting) {
		w.uuid(id)
		w.str(m.deleting[id])
		w.tags()
	}
	return record{Key: groupKey(keyShareGroupStatePartition, group), Value: w.done()}
}

// readShareStateMeta decodes a ShareGroupStatePartitionMetadataValue;
// ok is false for a malformed value.
func readShareStateMeta(v []byte, now int64) (*shareStateMeta, bool) {
	r := newReader(v)
	m := newShareStateMeta()
	topics := func(into map[[16]byte]initTopic) {
		n := r.arr()
		for i := int32(0); i < n && r.r.Ok(); i++ {
			id := r.uuid()
			t := initTopic{name: r.str(), parts: map[int32]struct{}{}, ts: now}
			np := r.arr()
			for j := int32(0); j < np && r.r.Ok(); j++ {
				t.parts[r.i32()] = struct{}{}
			}
			r.skipTags()
			into[id] = t
		}
	}
	topics(m.initializing)
	topics(m.initialized)
	n := r.arr()
	for i := int32(0); i < n && r.r.Ok(); i++ {
		id := r.uuid()
		m.deleting[id] = r.str()
		r.skipTags()
	}
	r.skipTags()
	return m, r.r.Ok()
}

// readShareTargetMetadata decodes a ShareGroupTargetAssignmentMetadataValue:
// the epoch and the KIP-1263 timestamp (tag 0; 0 when absent).
func readShareTargetMetadata(v []byte) (epoch int32, ts int64, ok bool) {
	return readEpochTag0Long(v)
}

// readEpochTag0Long decodes a value of an int32 epoch and an optional
// int64 in tag 0 (0 when absent): ShareGroupTargetAssignmentMetadataValue
// (its timestamp) and ConsumerGroupMetadataValue (its metadata hash).
func readEpochTag0Long(v []byte) (epoch int32, tag0 int64, ok bool) {
	r := newReader(v)
	epoch = r.i32()
	n := r.r.Uvarint()
	if int64(n) > int64(len(r.r.Src)) {
		return 0, 0, false
	}
	for i := uint32(0); i < n && r.r.Ok(); i++ {
		tag := r.r.Uvarint()
		size := r.r.Uvarint()
		b := r.r.Span(int(size))
		if tag == 0 && len(b) == 8 {
			rb := kbin.Reader{Src: b}
			tag0 = rb.Int64()
		}
	}
	return epoch, tag0, r.r.Ok()
}
