package sharecoord

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The records of __share_group_state (Kafka's share-coordinator module:
// ShareSnapshotKey/Value.json and ShareUpdateKey/Value.json, framed by
// ShareCoordinatorRecordSerde like every coordinator record: the key opens
// with its record type, the value with its version):
//
//	key (both types, non-flexible):
//	  int16  record type: 0 ShareSnapshot, 1 ShareUpdate (CoordinatorRecordType)
//	  string group_id           (int16 length)
//	  uuid   topic_id           (16 bytes)
//	  int32  partition
//
//	ShareSnapshotValue v0 (flexible):          ShareUpdateValue v0 (flexible):
//	  int16  version 0                           int16  version 0
//	  int32  snapshot_epoch                      int32  snapshot_epoch
//	  int32  state_epoch                         int32  leader_epoch
//	  int32  leader_epoch                        int64  start_offset (-1: unchanged)
//	  int64  start_offset                        [state batch]  state_batches
//	  int64  create_timestamp                    tagged: 0 delivery_complete_count
//	  int64  write_timestamp
//	  [state batch] state_batches
//	  tagged: 0 delivery_complete_count (int32, default -1, KIP-1226)
//
//	state batch: int64 first_offset, int64 last_offset, int8 delivery_state,
//	             int16 delivery_count, tagged fields (none)
//	arrays: uvarint length+1 (compact); tagged fields: uvarint count, then
//	        uvarint tag, uvarint size, bytes. A field at its default is left out.
//	tombstone: a ShareSnapshot key with a null value (DeleteShareGroupState).
//
// kafka-dump-log.sh --share-group-state-decoder reads these bytes.

const (
	recordTypeSnapshot int16 = 0
	recordTypeUpdate   int16 = 1
	valueVersion       int16 = 0

	noDeliveryCompleteCount int32 = -1
)

var (
	errUnknownRecordType   = errors.New("unknown share coordinator record type")
	errUnknownValueVersion = errors.New("unknown share coordinator record value version")
	errTruncated           = errors.New("share coordinator record truncated")
)

// stateBatch is Kafka's PersisterStateBatch: offsets [first, last] in one
// delivery state with one delivery count.
type stateBatch struct {
	first, last int64
	state       int8
	count       int16
}

// recordKey names one share partition's state: group, topic id, partition
// (Kafka's SharePartitionKey).
type recordKey struct {
	group     string
	topicID   [16]byte
	partition int32
}

// snapshotValue is ShareSnapshotValue (and the in-memory state, Kafka's
// ShareGroupOffset).
type snapshotValue struct {
	snapshotEpoch, stateEpoch, leaderEpoch int32
	startOffset                            int64
	deliveryCompleteCount                  int32
	createMs, writeMs                      int64
	batches                                []stateBatch
}

// updateValue is ShareUpdateValue.
type updateValue struct {
	snapshotEpoch, leaderEpoch int32
	startOffset                int64
	deliveryCompleteCount      int32
	batches                    []stateBatch
}

func encodeKey(recordType int16, k recordKey) []byte {
	b := make([]byte, 0, 2+2+len(k.group)+16+4)
	b = binary.BigEndian.AppendUint16(b, uint16(recordType))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.group)))
	b = append(b, k.group...)
	b = append(b, k.topicID[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.partition))
}

func appendBatches(b []byte, batches []stateBatch) []byte {
	b = binary.AppendUvarint(b, uint64(len(batches))+1)
	for _, s := range batches {
		b = binary.BigEndian.AppendUint64(b, uint64(s.first))
		b = binary.BigEndian.AppendUint64(b, uint64(s.last))
		b = append(b, byte(s.state))
		b = binary.BigEndian.AppendUint16(b, uint16(s.count))
		b = append(b, 0) // no tagged fields
	}
	return b
}

func appendDeliveryCompleteTag(b []byte, dcc int32) []byte {
	if dcc == noDeliveryCompleteCount {
		return append(b, 0)
	}
	b = append(b, 1, 0, 4) // one tagged field: tag 0, 4 bytes
	return binary.BigEndian.AppendUint32(b, uint32(dcc))
}

func encodeSnapshotValue(v snapshotValue) []byte {
	b := make([]byte, 0, 48+len(v.batches)*20)
	b = binary.BigEndian.AppendUint16(b, uint16(valueVersion))
	b = binary.BigEndian.AppendUint32(b, uint32(v.snapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.stateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.leaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(v.startOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(v.createMs))
	b = binary.BigEndian.AppendUint64(b, uint64(v.writeMs))
	b = appendBatches(b, v.batches)
	return appendDeliveryCompleteTag(b, v.deliveryCompleteCount)
}

func encodeUpdateValue(v updateValue) []byte {
	b := make([]byte, 0, 32+len(v.batches)*20)
	b = binary.BigEndian.AppendUint16(b, uint16(valueVersion))
	b = binary.BigEndian.AppendUint32(b, uint32(v.snapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(v.leaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(v.startOffset))
	b = appendBatches(b, v.batches)
	return appendDeliveryCompleteTag(b, v.deliveryCompleteCount)
}

// reader decodes big-endian fields; the first short read sets err and
// every later read returns zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = errTruncated
		r.b = nil
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int8() int8 {
	if b := r.take(1); b != nil {
		return int8(b[0])
	}
	return 0
}

func (r *reader) int16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (r *reader) int32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (r *reader) int64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errTruncated
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// skipTags skips a tagged-field section, handing tag 0 (4 bytes) to dcc.
func (r *reader) tags(dcc *int32) {
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		if size > uint64(len(r.b)) {
			r.err = errTruncated
			return
		}
		body := r.take(int(size))
		if tag == 0 && dcc != nil {
			if len(body) != 4 {
				r.err = fmt.Errorf("delivery_complete_count tag of %d bytes", len(body))
				return
			}
			*dcc = int32(binary.BigEndian.Uint32(body))
		}
	}
}

// minBatchBytes is the encoded size of one state batch: the bound that
// keeps a forged array count from allocating more than the record holds.
const minBatchBytes = 8 + 8 + 1 + 2 + 1

func (r *reader) batches() []stateBatch {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n == 0 {
		r.err = errors.New("null state_batches")
		return nil
	}
	n--
	if n > uint64(len(r.b)/minBatchBytes) {
		r.err = errTruncated
		return nil
	}
	out := make([]stateBatch, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		s := stateBatch{first: r.int64(), last: r.int64(), state: r.int8(), count: r.int16()}
		r.tags(nil)
		out = append(out, s)
	}
	return out
}

// decodeKey returns the record type and key. An unknown record type is
// errUnknownRecordType (Kafka's serde skips those while loading).
func decodeKey(b []byte) (int16, recordKey, error) {
	r := &reader{b: b}
	typ := r.int16()
	if r.err != nil {
		return 0, recordKey{}, r.err
	}
	if typ != recordTypeSnapshot && typ != recordTypeUpdate {
		return typ, recordKey{}, fmt.Errorf("%w %d", errUnknownRecordType, typ)
	}
	n := r.int16()
	if n < 0 {
		return typ, recordKey{}, errors.New("null group_id")
	}
	var k recordKey
	k.group = string(r.take(int(n)))
	copy(k.topicID[:], r.take(16))
	k.partition = r.int32()
	if r.err != nil {
		return typ, recordKey{}, r.err
	}
	if len(r.b) != 0 {
		return typ, recordKey{}, fmt.Errorf("%d trailing bytes after the key", len(r.b))
	}
	return typ, k, nil
}

func valueReader(b []byte) (*reader, error) {
	r := &reader{b: b}
	if v := r.int16(); r.err != nil {
		return nil, r.err
	} else if v != valueVersion {
		return nil, fmt.Errorf("%w %d", errUnknownValueVersion, v)
	}
	return r, nil
}

func finish(r *reader) error {
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%d trailing bytes after the value", len(r.b))
	}
	return nil
}

func decodeSnapshotValue(b []byte) (snapshotValue, error) {
	r, err := valueReader(b)
	if err != nil {
		return snapshotValue{}, err
	}
	v := snapshotValue{snapshotEpoch: r.int32(), stateEpoch: r.int32(), leaderEpoch: r.int32(), startOffset: r.int64(),
		createMs: r.int64(), writeMs: r.int64(), deliveryCompleteCount: noDeliveryCompleteCount}
	v.batches = r.batches()
	r.tags(&v.deliveryCompleteCount)
	return v, finish(r)
}

func decodeUpdateValue(b []byte) (updateValue, error) {
	r, err := valueReader(b)
	if err != nil {
		return updateValue{}, err
	}
	v := updateValue{snapshotEpoch: r.int32(), leaderEpoch: r.int32(), startOffset: r.int64(),
		deliveryCompleteCount: noDeliveryCompleteCount}
	v.batches = r.batches()
	r.tags(&v.deliveryCompleteCount)
	return v, finish(r)
}
