package raft

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Raft batch framing (BatchBuilder.java, DefaultRecordBatch.java): magic 2,
// PartitionLeaderEpoch = epoch, producer id/epoch/sequence -1, CreateTime,
// base timestamp = max timestamp = append time, every record with timestamp
// delta 0, no headers, a null key (control records: key {int16 0, int16 type})
// and the opaque value given to Append. Uncompressed.
//
//	0 BaseOffset int64 | 8 Length int32 | 12 PartitionLeaderEpoch int32 | 16 Magic int8
//	17 CRC uint32 (CRC-32C of bytes 21..end) | 21 Attributes int16 (bit 5 control)
//	23 LastOffsetDelta int32 | 27 BaseTimestamp int64 | 35 MaxTimestamp int64
//	43 ProducerId int64 | 51 ProducerEpoch int16 | 53 BaseSequence int32
//	57 RecordsCount int32 | 61 records: varint length, int8 attrs, varlong tsDelta,
//	   varint offsetDelta, varint keyLen + key, varint valueLen + value, varint headers
//
// The codec is local so that raft depends on storage only for the log itself.

const (
	batchHeaderSize = 61
	attrControl     = 0x20
	attrCompression = 0x07
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// errBadBatch reports a malformed batch (framing, magic, CRC, records).
var errBadBatch = errors.New("raft: corrupt record batch")

type batchHeader struct {
	baseOffset int64
	length     int32
	epoch      int32
	attrs      int16
	lastDelta  int32
	maxTs      int64
	count      int32
}

func (h batchHeader) lastOffset() int64 { return h.baseOffset + int64(h.lastDelta) }
func (h batchHeader) control() bool     { return h.attrs&attrControl != 0 }

// EncodeEntry renders e as one magic-2 batch at e.Offset.
func EncodeEntry(e Entry) []byte {
	var body, rec []byte
	for i, v := range e.Records {
		rec = rec[:0]
		rec = append(rec, 0)                     // attributes
		rec = binary.AppendVarint(rec, 0)        // timestamp delta
		rec = binary.AppendVarint(rec, int64(i)) // offset delta
		if e.Control {
			typ := e.ControlType
			if i < len(e.ControlTypes) {
				typ = e.ControlTypes[i]
			}
			rec = binary.AppendVarint(rec, 4)
			rec = append(rec, 0, 0, byte(uint16(typ)>>8), byte(typ))
		} else {
			rec = binary.AppendVarint(rec, -1)
		}
		if v == nil {
			rec = binary.AppendVarint(rec, -1)
		} else {
			rec = binary.AppendVarint(rec, int64(len(v)))
			rec = append(rec, v...)
		}
		rec = binary.AppendVarint(rec, 0) // headers
		body = binary.AppendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	b := make([]byte, batchHeaderSize, batchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint64(b[0:], uint64(e.Offset))
	be.PutUint32(b[8:], uint32(batchHeaderSize-12+len(body)))
	be.PutUint32(b[12:], uint32(e.Epoch))
	b[16] = 2
	var attrs uint16
	if e.Control {
		attrs |= attrControl
	}
	be.PutUint16(b[21:], attrs)
	be.PutUint32(b[23:], uint32(len(e.Records)-1))
	be.PutUint64(b[27:], uint64(e.AppendTimeMs))
	be.PutUint64(b[35:], uint64(e.AppendTimeMs))
	be.PutUint64(b[43:], ^uint64(0)) // producer id -1
	be.PutUint16(b[51:], ^uint16(0)) // producer epoch -1
	be.PutUint32(b[53:], ^uint32(0)) // base sequence -1
	be.PutUint32(b[57:], uint32(len(e.Records)))
	b = append(b, body...)
	be.PutUint32(b[17:], crc32.Checksum(b[21:], crc32c))
	return b
}

// walkBatches calls fn for each whole batch of b after checking framing, magic
// and (when verify) the CRC. raw aliases b.
func walkBatches(b []byte, verify bool, fn func(h batchHeader, raw []byte) error) error {
	be := binary.BigEndian
	for len(b) > 0 {
		if len(b) < batchHeaderSize {
			return fmt.Errorf("%w: %d trailing bytes", errBadBatch, len(b))
		}
		h := batchHeader{
			baseOffset: int64(be.Uint64(b[0:])), length: int32(be.Uint32(b[8:])), epoch: int32(be.Uint32(b[12:])),
			attrs: int16(be.Uint16(b[21:])), lastDelta: int32(be.Uint32(b[23:])), maxTs: int64(be.Uint64(b[35:])),
			count: int32(be.Uint32(b[57:])),
		}
		size := int64(h.length) + 12
		if h.length < batchHeaderSize-12 || size > int64(len(b)) || b[16] != 2 || h.lastDelta < 0 {
			return fmt.Errorf("%w at offset %d", errBadBatch, h.baseOffset)
		}
		raw := b[:size]
		if verify && crc32.Checksum(raw[21:], crc32c) != be.Uint32(raw[17:]) {
			return fmt.Errorf("%w: CRC mismatch at offset %d", errBadBatch, h.baseOffset)
		}
		if err := fn(h, raw); err != nil {
			return err
		}
		b = b[size:]
	}
	return nil
}

// batchRecord is one record of a batch: its offset delta, key and value.
type batchRecord struct {
	offsetDelta int64
	key, value  []byte // nil when null
}

// decodeRecords decodes the records of one uncompressed batch; keys and
// values alias raw.
func decodeRecords(h batchHeader, raw []byte) ([]batchRecord, error) {
	if h.attrs&attrCompression != 0 {
		return nil, fmt.Errorf("%w: compressed raft batch at %d", errBadBatch, h.baseOffset)
	}
	if h.count < 0 || int64(h.count) > int64(len(raw)) {
		return nil, fmt.Errorf("%w: record count %d", errBadBatch, h.count)
	}
	out := make([]batchRecord, 0, h.count)
	b := raw[batchHeaderSize:]
	bad := fmt.Errorf("%w: records of batch at %d", errBadBatch, h.baseOffset)
	for i := int32(0); i < h.count; i++ {
		l, n := binary.Varint(b)
		if n <= 0 || l < 0 || int64(len(b)-n) < l {
			return nil, bad
		}
		r := b[n : n+int(l)]
		b = b[n+int(l):]
		if len(r) < 1 {
			return nil, bad
		}
		r = r[1:]                             // attributes
		if _, n := binary.Varint(r); n <= 0 { // timestamp delta
			return nil, bad
		} else {
			r = r[n:]
		}
		var rec batchRecord
		if d, n := binary.Varint(r); n <= 0 {
			return nil, bad
		} else {
			rec.offsetDelta, r = d, r[n:]
		}
		for j := 0; j < 2; j++ { // key, value
			kl, n := binary.Varint(r)
			if n <= 0 || int64(len(r)-n) < max(kl, 0) {
				return nil, bad
			}
			r = r[n:]
			if kl >= 0 {
				if j == 0 {
					rec.key = r[:kl:kl]
				} else {
					rec.value = r[:kl:kl]
				}
				r = r[kl:]
			}
		}
		out = append(out, rec)
	}
	if len(b) != 0 {
		return nil, bad
	}
	return out, nil
}

// recordValues decodes the record values of one uncompressed batch (copies).
func recordValues(h batchHeader, raw []byte) ([][]byte, error) {
	recs, err := decodeRecords(h, raw)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(recs))
	for i, r := range recs {
		if r.value != nil {
			out[i] = append([]byte{}, r.value...)
		}
	}
	return out, nil
}

// controlRecord is one record of a control batch: its offset, key type and value.
type controlRecord struct {
	offset int64
	typ    int16
	value  []byte
}

// controlRecords decodes the records of a control batch (ControlRecordType
// from each key: {int16 version, int16 type}).
func controlRecords(h batchHeader, raw []byte) ([]controlRecord, error) {
	recs, err := decodeRecords(h, raw)
	if err != nil {
		return nil, err
	}
	out := make([]controlRecord, 0, len(recs))
	for _, r := range recs {
		if len(r.key) < 4 {
			return nil, fmt.Errorf("%w: control record key of batch at %d", errBadBatch, h.baseOffset)
		}
		out = append(out, controlRecord{offset: h.baseOffset + r.offsetDelta,
			typ: int16(binary.BigEndian.Uint16(r.key[2:4])), value: r.value})
	}
	return out, nil
}

// entriesFromBatches splits raw batches into Entries carrying offsets, epochs
// and Raw (what the core needs); framing and CRC are verified.
func entriesFromBatches(b []byte) ([]Entry, error) {
	var out []Entry
	err := walkBatches(b, true, func(h batchHeader, raw []byte) error {
		out = append(out, Entry{Offset: h.baseOffset, LastOffset: h.lastOffset(), Epoch: h.epoch,
			AppendTimeMs: h.maxTs, Control: h.control(), Raw: append([]byte(nil), raw...)})
		return nil
	})
	return out, err
}

// Batch is a committed batch of records as delivered to listeners.
type Batch struct {
	BaseOffset   int64
	LastOffset   int64
	Epoch        int32
	AppendTimeMs int64
	Records      [][]byte
	// SizeInBytes is the size of the encoded batch.
	SizeInBytes int
}

// decodeBatches decodes raw batches into listener Batches; control batches are
// passed with control=true (and no records) so the caller can skip them.
func decodeBatches(b []byte, fn func(bt Batch, control bool) error) error {
	return walkBatches(b, true, func(h batchHeader, raw []byte) error {
		bt := Batch{BaseOffset: h.baseOffset, LastOffset: h.lastOffset(), Epoch: h.epoch, AppendTimeMs: h.maxTs, SizeInBytes: len(raw)}
		if !h.control() {
			recs, err := recordValues(h, raw)
			if err != nil {
				return err
			}
			bt.Records = recs
		}
		return fn(bt, h.control())
	})
}

var errStopDecode = errors.New("stop")
