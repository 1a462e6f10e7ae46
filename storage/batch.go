package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Record batch (magic v2) layout, DefaultRecordBatch.java. Big-endian.
const (
	offBaseOffset        = 0
	offLength            = 8
	offPartitionLeaderEp = 12
	offMagic             = 16
	offCRC               = 17
	offAttributes        = 21
	offLastOffsetDelta   = 23
	offBaseTimestamp     = 27
	offMaxTimestamp      = 35
	offProducerID        = 43
	offProducerEpoch     = 51
	offBaseSequence      = 53
	offRecordsCount      = 57

	// BatchHeaderSize is the size of a magic-2 batch header, the records start here.
	BatchHeaderSize = 61
	// batchLogOverhead is BaseOffset + Length: the bytes not counted by Length.
	batchLogOverhead = 12
	// minBatchLength is the smallest valid Length: the header after the Length field.
	minBatchLength = BatchHeaderSize - batchLogOverhead
)

// Attribute bits.
const (
	attrCompressionMask = 0x07
	attrTimestampType   = 0x08 // 1 = LogAppendTime
	attrTransactional   = 0x10
	attrControl         = 0x20
	attrDeleteHorizon   = 0x40
)

// No* values used by Kafka for absent producer fields and epochs.
const (
	NoProducerID           int64 = -1
	NoProducerEpoch        int16 = -1
	NoSequence             int32 = -1
	NoPartitionLeaderEpoch int32 = -1
	NoTimestamp            int64 = -1
)

// Compression is the codec in attribute bits 0-2.
type Compression int8

const (
	CompressionNone Compression = iota
	CompressionGzip
	CompressionSnappy
	CompressionLZ4
	CompressionZstd
)

func (c Compression) String() string {
	switch c {
	case CompressionNone:
		return "none"
	case CompressionGzip:
		return "gzip"
	case CompressionSnappy:
		return "snappy"
	case CompressionLZ4:
		return "lz4"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", int8(c))
}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// BatchHeader is the fixed 61-byte header of a magic-2 record batch.
type BatchHeader struct {
	BaseOffset           int64
	Length               int32
	PartitionLeaderEpoch int32
	Magic                int8
	CRC                  uint32
	Attributes           int16
	LastOffsetDelta      int32
	BaseTimestamp        int64
	MaxTimestamp         int64
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	NumRecords           int32
}

// Size is the batch's size on disk: Length plus the 12 bytes before it.
func (h BatchHeader) Size() int64 { return int64(h.Length) + batchLogOverhead }

// indexTimestamp is the batch's max timestamp for the time index: none for a
// batch the cleaner emptied (its header keeps a timestamp no record has, which
// kafka-dump-log.sh --verify-index-only would report as a mismatch).
func (h BatchHeader) indexTimestamp() int64 {
	if h.NumRecords == 0 {
		return NoTimestamp
	}
	return h.MaxTimestamp
}

// LastOffset is BaseOffset + LastOffsetDelta.
func (h BatchHeader) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is LastOffset + 1.
func (h BatchHeader) NextOffset() int64 { return h.LastOffset() + 1 }

// Compression returns the codec.
func (h BatchHeader) Compression() Compression {
	return Compression(h.Attributes & attrCompressionMask)
}

// IsControl reports the control bit.
func (h BatchHeader) IsControl() bool { return h.Attributes&attrControl != 0 }

// IsTransactional reports the transactional bit.
func (h BatchHeader) IsTransactional() bool { return h.Attributes&attrTransactional != 0 }

// LogAppendTime reports whether the timestamp type is LogAppendTime.
func (h BatchHeader) LogAppendTime() bool { return h.Attributes&attrTimestampType != 0 }

// HasProducerID reports whether the batch carries a producer id (idempotent/transactional).
func (h BatchHeader) HasProducerID() bool { return h.ProducerID >= 0 }

// LastSequence is the sequence of the last record, wrapping like DefaultRecordBatch.
func (h BatchHeader) LastSequence() int32 {
	if h.BaseSequence == NoSequence {
		return NoSequence
	}
	return incrementSequence(h.BaseSequence, h.LastOffsetDelta)
}

func incrementSequence(seq, delta int32) int32 {
	if seq > int32(^uint32(0)>>1)-delta {
		return delta - (int32(^uint32(0)>>1) - seq) - 1
	}
	return seq + delta
}

func errCorrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kerr.CorruptMessage}, args...)...)
}

func errInvalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{kerr.InvalidRecord}, args...)...)
}

// ParseBatchHeader decodes the header at the start of b. It checks only that b holds
// a whole header; use ValidateBatches to check a batch.
func ParseBatchHeader(b []byte) (BatchHeader, error) {
	if len(b) < BatchHeaderSize {
		return BatchHeader{}, errCorrupt("batch header needs %d bytes, have %d", BatchHeaderSize, len(b))
	}
	be := binary.BigEndian
	return BatchHeader{
		BaseOffset:           int64(be.Uint64(b[offBaseOffset:])),
		Length:               int32(be.Uint32(b[offLength:])),
		PartitionLeaderEpoch: int32(be.Uint32(b[offPartitionLeaderEp:])),
		Magic:                int8(b[offMagic]),
		CRC:                  be.Uint32(b[offCRC:]),
		Attributes:           int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta:      int32(be.Uint32(b[offLastOffsetDelta:])),
		BaseTimestamp:        int64(be.Uint64(b[offBaseTimestamp:])),
		MaxTimestamp:         int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:           int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:        int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:         int32(be.Uint32(b[offBaseSequence:])),
		NumRecords:           int32(be.Uint32(b[offRecordsCount:])),
	}, nil
}

// checkFraming checks what ByteBufferLogInputStream/FileLogInputStream check before a
// batch is even looked at: the length, and magic 2. It returns the batch size.
func checkFraming(h BatchHeader, avail int) (int, error) {
	if h.Length < minBatchLength {
		return 0, errCorrupt("record batch size %d is less than the minimum batch size %d", h.Length, minBatchLength)
	}
	size := int64(h.Length) + batchLogOverhead
	if size > int64(avail) {
		return 0, errCorrupt("record batch size %d exceeds the %d available bytes", size, avail)
	}
	switch {
	case h.Magic == 0 || h.Magic == 1:
		return 0, errInvalid("record batch magic %d is not supported (only magic 2)", h.Magic)
	case h.Magic != 2:
		return 0, errCorrupt("invalid magic byte %d", h.Magic)
	}
	return int(size), nil
}

// checkBatch validates one whole batch (header already parsed): CRC32C over
// bytes [21:end] and the offset/count consistency LogValidator.validateBatch checks.
func checkBatch(h BatchHeader, raw []byte) error {
	if crc := crc32.Checksum(raw[offAttributes:], crc32c); crc != h.CRC {
		return errCorrupt("record batch at offset %d is corrupt (stored crc = %d, computed crc = %d)", h.BaseOffset, h.CRC, crc)
	}
	if h.LastOffsetDelta < 0 {
		return errInvalid("batch has an invalid offset range: last offset delta %d", h.LastOffsetDelta)
	}
	// a batch the log cleaner rewrote keeps its offset range with fewer records, or
	// none (MemoryRecords.filterTo: overrideLastOffset, writeEmptyHeader)
	if h.NumRecords < 0 || int64(h.NumRecords) > int64(h.LastOffsetDelta)+1 {
		return errInvalid("invalid reported count for record batch: %d", h.NumRecords)
	}
	if h.Compression() > CompressionZstd {
		return errInvalid("unknown compression type id %d", h.Compression())
	}
	return nil
}

// checkProducedCounts adds what LogValidator checks of a produced batch and the log
// does not require of a stored one: at least one record, one per offset.
func checkProducedCounts(h BatchHeader) error {
	if h.NumRecords <= 0 {
		return errInvalid("invalid reported count for record batch: %d", h.NumRecords)
	}
	if int64(h.LastOffsetDelta)+1 != int64(h.NumRecords) {
		return errInvalid("inconsistent batch offset range [0, %d] and record count %d", h.LastOffsetDelta, h.NumRecords)
	}
	return nil
}

// WalkBatches calls fn for every batch in b, a concatenation of whole magic-2 batches,
// after checking framing and (when verify) CRC and counts. raw aliases b.
func WalkBatches(b []byte, verify bool, fn func(h BatchHeader, raw []byte) error) error {
	for len(b) > 0 {
		h, err := ParseBatchHeader(b)
		if err != nil {
			return err
		}
		size, err := checkFraming(h, len(b))
		if err != nil {
			return err
		}
		raw := b[:size]
		if verify {
			if err := checkBatch(h, raw); err != nil {
				return err
			}
		}
		if fn != nil {
			if err := fn(h, raw); err != nil {
				return err
			}
		}
		b = b[size:]
	}
	return nil
}

// ValidateBatches checks every batch in b: framing, magic 2, CRC32C, offset range and
// record count, and that the records decode to exactly NumRecords records.
func ValidateBatches(b []byte) error {
	if len(b) == 0 {
		return errCorrupt("empty record set")
	}
	return WalkBatches(b, true, func(h BatchHeader, raw []byte) error {
		if err := checkProducedCounts(h); err != nil {
			return err
		}
		return walkBatchRecords(h, raw, nil)
	})
}

// SetBaseOffset rewrites the base offset of the batch at the start of b. It lies outside
// the CRC, so nothing else changes.
func SetBaseOffset(b []byte, off int64) { binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(off)) }

// SetPartitionLeaderEpoch rewrites the partition leader epoch (outside the CRC).
func SetPartitionLeaderEpoch(b []byte, epoch int32) {
	binary.BigEndian.PutUint32(b[offPartitionLeaderEp:], uint32(epoch))
}

// setMaxTimestamp does what DefaultRecordBatch.setMaxTimestamp does: set the timestamp
// type bit and the max timestamp, then recompute the CRC (both are inside it).
func setMaxTimestamp(b []byte, logAppendTime bool, ts int64) {
	attrs := binary.BigEndian.Uint16(b[offAttributes:])
	if logAppendTime {
		attrs |= attrTimestampType
	} else {
		attrs &^= attrTimestampType
	}
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
}
