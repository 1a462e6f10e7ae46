package txn

import (
	"bytes"
	"reflect"
	"testing"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

func fuzzTransits() []transit {
	parts := tpSet{{"foo", 0}: {}, {"foo", 2}: {}, {"bar", 1}: {}}
	return []transit{
		{producerID: 1000, prevProducerID: 1000, nextProducerID: -1, producerEpoch: 0, timeoutMs: 60000, state: Empty,
			partitions: tpSet{}, startMs: -1, lastUpdateMs: 1_700_000_000_000},
		{producerID: 1000, prevProducerID: 999, nextProducerID: -1, producerEpoch: 3, timeoutMs: 60000, state: Ongoing,
			partitions: parts, startMs: 1_700_000_000_000, lastUpdateMs: 1_700_000_000_500, clientTV: 2},
		{producerID: 7, prevProducerID: 7, nextProducerID: 1001, producerEpoch: 32767, timeoutMs: 1000, state: PrepareCommit,
			partitions: parts, startMs: 5, lastUpdateMs: 6, clientTV: 2},
		{producerID: 1001, prevProducerID: 7, nextProducerID: -1, producerEpoch: 0, timeoutMs: 1000, state: CompleteAbort,
			partitions: tpSet{}, startMs: 5, lastUpdateMs: 6, clientTV: 2},
	}
}

// transitOf is the transit that writes m's current state.
func transitOf(m *metadata) transit {
	t := m.next(m.state)
	t.prevProducerID = m.prevProducerID
	return t
}

// FuzzTxnRecord: a __transaction_state record (read back from the log when a
// coordinator partition loads) never panics the decoder or replay; what
// decodes re-encodes, at the version it was read at, to a record that
// decodes the same.
func FuzzTxnRecord(f *testing.F) {
	for _, t := range fuzzTransits() {
		for _, tv := range []int16{TV0, TV1, TV2} {
			v := encodeValue(t, tv)
			f.Add(encodeKey("txn-1"), v, false)
			f.Add(encodeKey("txn-1"), v[:len(v)-3], false) // truncated
		}
	}
	f.Add(encodeKey("gone"), []byte(nil), true)
	f.Add([]byte{0, 1, 0, 0}, []byte{0, 0}, false)
	f.Add([]byte{0}, []byte{}, false)
	f.Fuzz(func(t *testing.T, k, v []byte, tombstone bool) {
		if tombstone {
			v = nil
		} else if v == nil {
			v = []byte{}
		}
		s := &shard{log: zap.NewNop(), txns: map[string]*metadata{}, markers: map[string]*pendingComplete{}}
		if err := s.Replay(coordinator.Loaded{Key: k, Value: v}); err != nil {
			t.Fatalf("replay returned %v; bad records are skipped", err)
		}
		d, err := decodeRecord(k, v)
		if err != nil {
			return
		}
		k2 := encodeKey(d.txnID)
		if dk, err := decodeRecord(k2, nil); err != nil || dk.txnID != d.txnID {
			t.Fatalf("key %x decodes to %q, which encodes to %x: %v", k, d.txnID, k2, err)
		}
		if d.meta == nil {
			return
		}
		version := int16(v[0])<<8 | int16(v[1])
		tv := TV0
		if version == 1 {
			tv = TV1
		}
		v2 := encodeValue(transitOf(d.meta), tv)
		d2, err := decodeRecord(k2, v2)
		if err != nil {
			t.Fatalf("re-encoded value %x does not decode: %v", v2, err)
		}
		m1, m2 := *d.meta, *d2.meta
		if version == 0 {
			// v0 has no tagged fields: they read back as their defaults.
			m1.prevProducerID, m1.nextProducerID, m1.clientTV = -1, -1, 0
		}
		if m1.state == Empty {
			// Kafka writes no partitions for Empty, and reads none back.
			m1.partitions = tpSet{}
		}
		if !reflect.DeepEqual(m1, m2) {
			t.Fatalf("value %x decodes to %+v, re-encoded to %+v", v, m1, m2)
		}
	})
}

// The value bytes of Kafka's TransactionLog.valueToBytes, field by field.
func TestValueLayout(t *testing.T) {
	tr := transit{producerID: 1000, prevProducerID: 999, nextProducerID: -1, producerEpoch: 3, timeoutMs: 60000,
		state: Ongoing, partitions: tpSet{{"t", 0}: {}, {"t", 2}: {}}, startMs: 5, lastUpdateMs: 6, clientTV: 2}
	v1 := []byte{
		0, 1, // version
		0, 0, 0, 0, 0, 0, 0x03, 0xe8, // producer id
		0, 3, // epoch
		0, 0, 0xea, 0x60, // timeout
		1,      // Ongoing
		2,      // compact array: one topic
		2, 't', // compact string
		3,          // two partitions
		0, 0, 0, 0, // 0
		0, 0, 0, 2, // 2
		0,                      // topic tags
		0, 0, 0, 0, 0, 0, 0, 6, // last update
		0, 0, 0, 0, 0, 0, 0, 5, // start
		2,                                  // two tags (next producer id -1 and next epoch are defaults)
		0, 8, 0, 0, 0, 0, 0, 0, 0x03, 0xe7, // tag 0: previous producer id 999
		2, 2, 0, 2, // tag 2: client transaction version 2
	}
	if got := encodeValue(tr, TV2); !bytes.Equal(got, v1) {
		t.Fatalf("v1:\n got %x\nwant %x", got, v1)
	}
	v0 := append([]byte{0, 0}, v1[2:16]...) // version 0, same fixed fields
	v0 = append(v0, 1)                      // Ongoing
	v0 = append(v0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2)
	v0 = append(v0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 5)
	if got := encodeValue(tr, TV0); !bytes.Equal(got, v0) {
		t.Fatalf("v0:\n got %x\nwant %x", got, v0)
	}
	if got, want := encodeKey("t"), []byte{0, 0, 0, 1, 't'}; !bytes.Equal(got, want) {
		t.Fatalf("key: got %x want %x", got, want)
	}
}
