package group

// Records of __consumer_offsets, in Kafka's formats (the key starts with an
// int16 version that says the record type, the value with its own int16
// version), so kafka-dump-log.sh --offsets-decoder reads them:
//
//	key v0/v1  OffsetCommitKey            value OffsetCommitValue v1 (expire timestamp) or v3
//	key v2     GroupMetadataKey           value GroupMetadataValue v3 (classic groups)
//	key v3     ConsumerGroupMetadataKey   value ConsumerGroupMetadataValue v0 (group epoch)
//	key v5     ConsumerGroupMemberMetadataKey          value v0 (member subscription)
//	key v6     ConsumerGroupTargetAssignmentMetadataKey value v0 (assignment epoch)
//	key v7     ConsumerGroupTargetAssignmentMemberKey   value v0 (member target)
//	key v8     ConsumerGroupCurrentMemberAssignmentKey  value v0 (member epoch, state)
//
// A nil value is a tombstone. The KIP-848 values are flexible (compact
// strings and arrays, tagged fields) as in Kafka's JSON schemas; kmsg has no
// types for them, so they are encoded here.

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// record is one key/value pair to write; Value nil is a tombstone.
type record = coordinator.Record

func offsetCommitKey(group, topic string, partition int32) []byte {
	k := kmsg.OffsetCommitKey{Version: 1, Group: group, Topic: topic, Partition: partition}
	return k.AppendTo(nil)
}

func offsetCommitRecord(group, topic string, partition int32, o offsetEntry) record {
	v := kmsg.NewOffsetCommitValue()
	v.Version = 3
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp = o.offset, o.leaderEpoch, o.metadata, o.commitTs
	if o.expireTs >= 0 {
		v.Version = 1
		v.ExpireTimestamp = o.expireTs
	}
	return record{Key: offsetCommitKey(group, topic, partition), Value: v.AppendTo(nil)}
}

func groupMetadataKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: 2, Group: group}
	return k.AppendTo(nil)
}

// Record-type versions of the KIP-848 keys.
const (
	keyConsumerGroupMetadata       = 3
	keyConsumerGroupMemberMetadata = 5
	keyConsumerGroupTargetMetadata = 6
	keyConsumerGroupTargetMember   = 7
	keyConsumerGroupCurrentMember  = 8
)

func groupKey(version int16, group string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	return kbin.AppendString(b, group)
}

func memberKey(version int16, group, member string) []byte {
	return kbin.AppendString(groupKey(version, group), member)
}

// flexible value writer helpers (compact encodings, empty tag buffers).
type fw struct{ b []byte }

func newValue() *fw            { return &fw{b: []byte{0, 0}} } // value version 0
func (w *fw) i8(v int8)        { w.b = append(w.b, byte(v)) }
func (w *fw) i32(v int32)      { w.b = kbin.AppendInt32(w.b, v) }
func (w *fw) str(s string)     { w.b = kbin.AppendCompactString(w.b, s) }
func (w *fw) nstr(s *string)   { w.b = kbin.AppendCompactNullableString(w.b, s) }
func (w *fw) arr(n int)        { w.b = kbin.AppendCompactArrayLen(w.b, n) }
func (w *fw) uuid(id [16]byte) { w.b = append(w.b, id[:]...) }
func (w *fw) tags()            { w.b = append(w.b, 0) }
func (w *fw) bytes(v []byte)   { w.b = kbin.AppendCompactBytes(w.b, v) }
func (w *fw) done() []byte     { w.tags(); return w.b }
func (w *fw) uvarint(v uint32) { w.b = kbin.AppendUvarint(w.b, v) }
func (w *fw) raw(v []byte)     { w.b = append(w.b, v...) }
func (w *fw) topicParts(a []topicParts) {
	w.arr(len(a))
	for _, t := range a {
		w.uuid(t.id)
		w.arr(len(t.parts))
		for _, p := range t.parts {
			w.i32(p)
		}
		w.tags()
	}
}

// topicParts is a topic id and partitions, as KIP-848 records store them.
type topicParts struct {
	id    [16]byte
	parts []int32
}

// fr reads a flexible value (after its version).
type fr struct {
	r kbin.Reader
}

func (r *fr) i8() int8            { return r.r.Int8() }
func (r *fr) i32() int32          { return r.r.Int32() }
func (r *fr) str() string         { return r.r.CompactString() }
func (r *fr) nstr() *string       { return r.r.CompactNullableString() }
func (r *fr) arr() int32          { return r.r.CompactArrayLen() }
func (r *fr) bytes() []byte       { return r.r.CompactBytes() }
func (r *fr) uuid() (id [16]byte) { copy(id[:], r.r.Span(16)); return }

// skipTags skips a tagged-field section. Each tag takes at least two
// bytes, so a count beyond what is left is a bad record, not a loop of
// four billion reads past its end.
func (r *fr) skipTags() {
	n := r.r.Uvarint()
	if int64(n) > int64(len(r.r.Src)) {
		r.r.Span(len(r.r.Src) + 1) // fails the reader
		return
	}
	for i := uint32(0); i < n && r.r.Ok(); i++ {
		r.r.Uvarint()
		size := r.r.Uvarint()
		r.r.Span(int(size))
	}
}
func (r *fr) topicParts() []topicParts {
	n := r.arr()
	var out []topicParts
	for i := int32(0); i < n && r.r.Ok(); i++ {
		var t topicParts
		t.id = r.uuid()
		np := r.arr()
		for j := int32(0); j < np && r.r.Ok(); j++ {
			t.parts = append(t.parts, r.i32())
		}
		r.skipTags()
		out = append(out, t)
	}
	return out
}
