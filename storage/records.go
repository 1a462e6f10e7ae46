package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Record is one record of a batch (DefaultRecord.java), with its absolute offset and
// timestamp filled in from the batch header.
type Record struct {
	Attributes     int8
	TimestampDelta int64
	OffsetDelta    int32
	Offset         int64  // batch base offset + OffsetDelta
	Timestamp      int64  // batch base timestamp + TimestampDelta (max timestamp under LogAppendTime)
	Key            []byte // nil = null key
	Value          []byte // nil = null value
	Headers        []RecordHeader
}

// RecordHeader is a record header; Value nil = null.
type RecordHeader struct {
	Key   string
	Value []byte
}

// MaxDecompressedBytes bounds how much a batch may inflate to when decoded, so that a
// compression bomb cannot exhaust memory.
var MaxDecompressedBytes = 256 << 20

var errRecord = errors.New("found invalid record structure")

// varint/varlong (zig-zag) readers: never panic, never allocate.
func readVarlong(b []byte) (int64, []byte, error) {
	v, n := binary.Varint(b)
	if n <= 0 {
		return 0, b, errRecord
	}
	return v, b[n:], nil
}

func readVarint(b []byte) (int32, []byte, error) {
	v, rest, err := readVarlong(b)
	if err != nil || v != int64(int32(v)) {
		return 0, b, errRecord
	}
	return int32(v), rest, nil
}

func readBytes(b []byte) ([]byte, []byte, error) {
	n, b, err := readVarint(b)
	if err != nil {
		return nil, b, err
	}
	if n < 0 {
		if n != -1 {
			return nil, b, errRecord
		}
		return nil, b, nil
	}
	if int(n) > len(b) {
		return nil, b, errRecord
	}
	return b[:n:n], b[n:], nil
}

// parseRecord decodes the record at the start of b, returning the rest.
func parseRecord(b []byte, r *Record, headers bool) ([]byte, error) {
	length, b, err := readVarint(b)
	if err != nil {
		return b, err
	}
	if length < 0 || int(length) > len(b) {
		return b, fmt.Errorf("%w: invalid record size %d", errRecord, length)
	}
	body, rest := b[:length], b[length:]
	if len(body) < 1 {
		return rest, errRecord
	}
	r.Attributes = int8(body[0])
	body = body[1:]
	if r.TimestampDelta, body, err = readVarlong(body); err != nil {
		return rest, err
	}
	if r.OffsetDelta, body, err = readVarint(body); err != nil {
		return rest, err
	}
	if r.Key, body, err = readBytes(body); err != nil {
		return rest, err
	}
	if r.Value, body, err = readBytes(body); err != nil {
		return rest, err
	}
	nh, body, err := readVarint(body)
	if err != nil {
		return rest, err
	}
	if nh < 0 {
		return rest, fmt.Errorf("%w: invalid header count %d", errRecord, nh)
	}
	r.Headers = nil
	if headers && nh > 0 {
		// each header takes at least 2 bytes: never trust nh for the allocation
		r.Headers = make([]RecordHeader, 0, min(int(nh), len(body)/2))
	}
	for i := int32(0); i < nh; i++ {
		var k, v []byte
		if k, body, err = readBytes(body); err != nil {
			return rest, err
		}
		if k == nil {
			return rest, fmt.Errorf("%w: null header key", errRecord)
		}
		if v, body, err = readBytes(body); err != nil {
			return rest, err
		}
		if headers {
			r.Headers = append(r.Headers, RecordHeader{Key: string(k), Value: v})
		}
	}
	if len(body) != 0 {
		return rest, fmt.Errorf("%w: %d bytes left in record payload", errRecord, len(body))
	}
	return rest, nil
}

// walkBatchRecords decodes (decompressing if needed) the records of one validated
// batch, checks there are exactly NumRecords of them, and calls fn for each (fn may be
// nil). The Record passed to fn is reused between calls.
func walkBatchRecords(h BatchHeader, raw []byte, fn func(r *Record) error) error {
	data := raw[BatchHeaderSize:]
	if c := h.Compression(); c != CompressionNone {
		buf := getBuf()
		defer putBuf(buf)
		out, err := decompress(buf.b[:0], c, data)
		buf.b = out
		if err != nil {
			return errInvalid("cannot decompress %s batch at offset %d: %v", c, h.BaseOffset, err)
		}
		data = out
	}
	// Pooled: fn(&r) would move a local Record to the heap on every call.
	r := recordPool.Get().(*Record)
	defer func() { *r = Record{}; recordPool.Put(r) }()
	for i := int32(0); i < h.NumRecords; i++ {
		if len(data) == 0 {
			return errInvalid("batch at offset %d has %d records, header says %d", h.BaseOffset, i, h.NumRecords)
		}
		var err error
		if data, err = parseRecord(data, r, fn != nil); err != nil {
			return errInvalid("batch at offset %d record %d: %v", h.BaseOffset, i, err)
		}
		r.Offset = h.BaseOffset + int64(r.OffsetDelta)
		if h.LogAppendTime() {
			r.Timestamp = h.MaxTimestamp
		} else {
			r.Timestamp = h.BaseTimestamp + r.TimestampDelta
		}
		if fn != nil {
			if err := fn(r); err != nil {
				return err
			}
		}
	}
	if len(data) != 0 {
		return errInvalid("batch at offset %d has %d bytes after its %d records", h.BaseOffset, len(data), h.NumRecords)
	}
	return nil
}

// DecodeRecords decodes every record of the batches in b (decompressing gzip, snappy
// raw or xerial-framed, lz4 frame, zstd). Key, Value and header values are copies,
// so they stay valid after b is reused.
func DecodeRecords(b []byte) ([]Record, error) {
	var out []Record
	err := WalkBatches(b, true, func(h BatchHeader, raw []byte) error {
		return walkBatchRecords(h, raw, func(r *Record) error {
			c := *r
			c.Key = cloneBytes(r.Key)
			c.Value = cloneBytes(r.Value)
			if len(r.Headers) > 0 {
				c.Headers = make([]RecordHeader, len(r.Headers))
				for i, hd := range r.Headers {
					c.Headers[i] = RecordHeader{Key: hd.Key, Value: cloneBytes(hd.Value)}
				}
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

type pooledBuf struct{ b []byte }

var bufPool = sync.Pool{New: func() any { return new(pooledBuf) }}

var recordPool = sync.Pool{New: func() any { return new(Record) }}

func getBuf() *pooledBuf { return bufPool.Get().(*pooledBuf) }
func putBuf(b *pooledBuf) {
	if cap(b.b) <= 8<<20 {
		bufPool.Put(b)
	}
}

var errTooLarge = errors.New("decompressed size exceeds the limit")

// readAllLimited appends r to dst, failing once more than MaxDecompressedBytes come out.
func readAllLimited(dst []byte, r io.Reader) ([]byte, error) {
	limit := MaxDecompressedBytes
	for {
		if len(dst) == cap(dst) {
			dst = append(dst, 0)[:len(dst)]
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

var (
	gzipReaders sync.Pool // *gzip.Reader
	lz4Readers  = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// zstdMaxWindow bounds the window a zstd frame may ask for (the Java producer's
// default levels use at most a few MiB).
const zstdMaxWindow = 32 << 20

var zstdReaders sync.Pool // *zstd.Decoder, concurrency 1

func snappyBlock(dst, src []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return dst, err
	}
	// a snappy op of k bytes emits at most ~22k bytes (a 3-byte copy of 64): a larger
	// claimed length is a lie, refused before allocating
	if n < 0 || n > 24*len(src)+64 {
		return dst, errors.New("snappy: claimed length impossible for the input size")
	}
	if len(dst)+n > MaxDecompressedBytes {
		return dst, errTooLarge
	}
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	out, err := snappy.Decode(dst[start:], src)
	if err != nil {
		return dst[:start], err
	}
	return dst[:start+len(out)], nil
}

func decompress(dst []byte, c Compression, src []byte) ([]byte, error) {
	switch c {
	case CompressionGzip:
		zr, _ := gzipReaders.Get().(*gzip.Reader)
		var err error
		if zr == nil {
			zr, err = gzip.NewReader(bytes.NewReader(src))
		} else {
			err = zr.Reset(bytes.NewReader(src))
		}
		if err != nil {
			return dst, err
		}
		defer gzipReaders.Put(zr)
		return readAllLimited(dst, zr)
	case CompressionSnappy:
		if len(src) >= 16 && bytes.HasPrefix(src, xerialMagic) {
			// Java xerial framing: 8-byte magic, int32 version, int32 compatible
			// version, then [int32 length][snappy block] chunks.
			b := src[16:]
			for len(b) > 0 {
				if len(b) < 4 {
					return dst, errors.New("truncated xerial chunk length")
				}
				n := binary.BigEndian.Uint32(b)
				b = b[4:]
				if uint64(n) > uint64(len(b)) {
					return dst, errors.New("truncated xerial chunk")
				}
				var err error
				if dst, err = snappyBlock(dst, b[:n]); err != nil {
					return dst, err
				}
				b = b[n:]
			}
			return dst, nil
		}
		return snappyBlock(dst, src)
	case CompressionLZ4:
		zr := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(zr)
		zr.Reset(bytes.NewReader(src))
		return readAllLimited(dst, zr)
	case CompressionZstd:
		// streamed, so that a frame header claiming a huge content size allocates
		// nothing; memory is bounded by the window (zstdMaxWindow) and the limit
		zr, _ := zstdReaders.Get().(*zstd.Decoder)
		if zr == nil {
			var err error
			if zr, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdMaxWindow)); err != nil {
				return dst, err
			}
		}
		if err := zr.Reset(bytes.NewReader(src)); err != nil {
			return dst, err
		}
		out, err := readAllLimited(dst, zr)
		_ = zr.Reset(nil)
		zstdReaders.Put(zr)
		return out, err
	case CompressionNone:
		return append(dst, src...), nil
	}
	return dst, fmt.Errorf("unknown compression %d", c)
}

var zstdEnc = sync.OnceValue(func() *zstd.Encoder {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(1<<20))
	if err != nil {
		panic(err)
	}
	return e
})

func compress(c Compression, src []byte) []byte {
	var buf bytes.Buffer
	switch c {
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		w.Write(src)
		w.Close()
	case CompressionSnappy:
		// Java's xerial framing, which the Java producer writes and every client reads.
		buf.Write(xerialMagic)
		buf.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		for len(src) > 0 {
			chunk := src[:min(len(src), 32<<10)]
			enc := snappy.Encode(nil, chunk)
			var l [4]byte
			binary.BigEndian.PutUint32(l[:], uint32(len(enc)))
			buf.Write(l[:])
			buf.Write(enc)
			src = src[len(chunk):]
		}
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		w.Write(src)
		w.Close()
	case CompressionZstd:
		return zstdEnc().EncodeAll(src, nil)
	default:
		return append([]byte(nil), src...)
	}
	return buf.Bytes()
}

// BatchProducer carries the idempotent-producer fields of a batch.
type BatchProducer struct {
	ID           int64
	Epoch        int16
	BaseSequence int32
}

// BatchOptions shape a batch built by BuildBatch. The zero value is a plain
// uncompressed CreateTime batch at offset 0 without producer id and epoch -1.
type BatchOptions struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32 // 0 in the zero value; set NoPartitionLeaderEpoch for -1
	Compression          Compression
	Control              bool
	Transactional        bool
	LogAppendTime        bool           // set the timestamp type bit; MaxTimestamp = LogAppendTimeMs
	LogAppendTimeMs      int64          // with LogAppendTime
	Producer             *BatchProducer // nil = producer id -1, epoch -1, sequence -1
}

// ControlRecordKey returns the key of a control record (ControlRecordType.java):
// int16 version 0, int16 type (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, 3 SNAPSHOT_HEADER,
// 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS).
func ControlRecordKey(typ int16) []byte {
	return []byte{0, 0, byte(uint16(typ) >> 8), byte(typ)}
}

func appendVarint(b []byte, v int64) []byte { return binary.AppendVarint(b, v) }

func appendVarBytes(b, v []byte) []byte {
	if v == nil {
		return appendVarint(b, -1)
	}
	return append(appendVarint(b, int64(len(v))), v...)
}

// BuildBatch encodes records into one magic-2 batch with correct Length and CRC.
// Record offsets are assigned 0..n-1 (Record.Offset and OffsetDelta are ignored);
// BaseTimestamp is the first record's Timestamp, MaxTimestamp the largest.
// With no records it returns nil.
func BuildBatch(o BatchOptions, records ...Record) []byte {
	if len(records) == 0 {
		return nil
	}
	base := records[0].Timestamp
	maxTs := base
	var body, rec []byte
	for i, r := range records {
		maxTs = max(maxTs, r.Timestamp)
		rec = rec[:0]
		rec = append(rec, byte(r.Attributes))
		rec = appendVarint(rec, r.Timestamp-base)
		rec = appendVarint(rec, int64(i))
		rec = appendVarBytes(rec, r.Key)
		rec = appendVarBytes(rec, r.Value)
		rec = appendVarint(rec, int64(len(r.Headers)))
		for _, h := range r.Headers {
			rec = appendVarBytes(rec, []byte(h.Key))
			rec = appendVarBytes(rec, h.Value)
		}
		body = appendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	if o.Compression != CompressionNone {
		body = compress(o.Compression, body)
	}
	attrs := uint16(o.Compression) & attrCompressionMask
	if o.LogAppendTime {
		attrs |= attrTimestampType
		maxTs = o.LogAppendTimeMs
	}
	if o.Transactional {
		attrs |= attrTransactional
	}
	if o.Control {
		attrs |= attrControl
	}
	pid, pepoch, seq := NoProducerID, NoProducerEpoch, NoSequence
	if o.Producer != nil {
		pid, pepoch, seq = o.Producer.ID, o.Producer.Epoch, o.Producer.BaseSequence
	}
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(o.BaseOffset))
	be.PutUint32(b[offLength:], uint32(BatchHeaderSize-batchLogOverhead+len(body)))
	be.PutUint32(b[offPartitionLeaderEp:], uint32(o.PartitionLeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], uint32(len(records)-1))
	be.PutUint64(b[offBaseTimestamp:], uint64(base))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], uint64(pid))
	be.PutUint16(b[offProducerEpoch:], uint16(pepoch))
	be.PutUint32(b[offBaseSequence:], uint32(seq))
	be.PutUint32(b[offRecordsCount:], uint32(len(records)))
	b = append(b, body...)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
	return b
}
