package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/golang/snappy"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var codecs = []Compression{CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd}

func sampleRecords() []Record {
	rs := recs(1000, 50, "x")
	rs[3].Key = nil
	rs[4].Value = nil
	rs[5].Headers = []RecordHeader{{Key: "h1", Value: []byte("v1")}, {Key: "h2", Value: nil}}
	rs[6].Value = bytes.Repeat([]byte("big"), 40000) // > one 32 KiB xerial chunk
	return rs
}

func checkRecords(t *testing.T, got, want []Record, base int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Offset != base+int64(i) || g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) ||
			(g.Key == nil) != (w.Key == nil) || (g.Value == nil) != (w.Value == nil) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %+v want %+v", i, g, w)
		}
		for j := range w.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !bytes.Equal(g.Headers[j].Value, w.Headers[j].Value) || (g.Headers[j].Value == nil) != (w.Headers[j].Value == nil) {
				t.Fatalf("record %d header %d", i, j)
			}
		}
	}
}

func TestBuildDecodeAllCodecs(t *testing.T) {
	want := sampleRecords()
	for _, c := range codecs {
		t.Run(c.String(), func(t *testing.T) {
			b := BuildBatch(BatchOptions{BaseOffset: 100, Compression: c, Producer: &BatchProducer{ID: 7, Epoch: 1, BaseSequence: 10}}, want...)
			if err := ValidateBatches(b); err != nil {
				t.Fatal(err)
			}
			h, _ := ParseBatchHeader(b)
			if h.Compression() != c || h.NumRecords != 50 || h.LastOffsetDelta != 49 || h.ProducerID != 7 || h.BaseSequence != 10 ||
				h.BaseTimestamp != 1000 || h.MaxTimestamp != 1049 || h.LastSequence() != 59 {
				t.Fatalf("header %+v", h)
			}
			got, err := DecodeRecords(b)
			if err != nil {
				t.Fatal(err)
			}
			checkRecords(t, got, want, 100)
			// franz-go's own parser agrees
			var kb kmsg.RecordBatch
			if err := kb.ReadFrom(b); err != nil || kb.CRC != int32(h.CRC) || int(kb.Length) != len(b)-12 {
				t.Fatalf("kmsg: %v %+v", err, kb)
			}
			raw, err := kgo.DefaultDecompressor().Decompress(kb.Records, kgo.CompressionCodecType(c))
			if err != nil {
				t.Fatalf("kgo cannot decompress our %s: %v", c, err)
			}
			_ = raw
		})
	}
}

// Batches compressed by franz-go's producer code decode here.
func TestDecodeFranzGoCompressed(t *testing.T) {
	want := sampleRecords()
	plain := BuildBatch(BatchOptions{}, want...)
	body := plain[BatchHeaderSize:]
	for _, codec := range []kgo.CompressionCodec{kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		comp, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		out, typ := comp.Compress(new(bytes.Buffer), body)
		b := append(append([]byte(nil), plain[:BatchHeaderSize]...), out...)
		binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
		binary.BigEndian.PutUint16(b[offAttributes:], uint16(typ))
		binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
		got, err := DecodeRecords(b)
		if err != nil {
			t.Fatalf("codec %d: %v", typ, err)
		}
		checkRecords(t, got, want, 0)
	}
}

// Java's xerial framing and a raw snappy block both decode.
func TestSnappyXerialAndRaw(t *testing.T) {
	want := recs(5, 10, "s")
	plain := BuildBatch(BatchOptions{}, want...)
	body := plain[BatchHeaderSize:]
	var xer bytes.Buffer
	xer.Write([]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1})
	for _, chunk := range [][]byte{body[:len(body)/2], body[len(body)/2:]} {
		enc := snappy.Encode(nil, chunk)
		binary.Write(&xer, binary.BigEndian, uint32(len(enc)))
		xer.Write(enc)
	}
	for _, payload := range [][]byte{xer.Bytes(), snappy.Encode(nil, body)} {
		b := append(append([]byte(nil), plain[:BatchHeaderSize]...), payload...)
		binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
		binary.BigEndian.PutUint16(b[offAttributes:], uint16(CompressionSnappy))
		binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
		got, err := DecodeRecords(b)
		if err != nil {
			t.Fatal(err)
		}
		checkRecords(t, got, want, 0)
	}
}

func TestValidateErrors(t *testing.T) {
	good := batch(1, 3)
	mut := func(f func(b []byte)) []byte {
		b := append([]byte(nil), good...)
		f(b)
		return b
	}
	fixCRC := func(b []byte) { binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c)) }
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, kerr.CorruptMessage},
		{"short header", good[:40], kerr.CorruptMessage},
		{"truncated", good[:len(good)-1], kerr.CorruptMessage},
		{"trailing garbage", append(append([]byte(nil), good...), 1, 2, 3), kerr.CorruptMessage},
		{"crc", mut(func(b []byte) { b[len(b)-1] ^= 1 }), kerr.CorruptMessage},
		{"magic 1", mut(func(b []byte) { b[offMagic] = 1 }), kerr.InvalidRecord},
		{"magic 9", mut(func(b []byte) { b[offMagic] = 9 }), kerr.CorruptMessage},
		{"length small", mut(func(b []byte) { binary.BigEndian.PutUint32(b[offLength:], 10) }), kerr.CorruptMessage},
		{"count", mut(func(b []byte) { binary.BigEndian.PutUint32(b[offRecordsCount:], 4); fixCRC(b) }), kerr.InvalidRecord},
		{"count and delta", mut(func(b []byte) {
			binary.BigEndian.PutUint32(b[offRecordsCount:], 4)
			binary.BigEndian.PutUint32(b[offLastOffsetDelta:], 3)
			fixCRC(b)
		}), kerr.InvalidRecord},
		{"codec 7", mut(func(b []byte) { b[offAttributes+1] |= 7; fixCRC(b) }), kerr.InvalidRecord},
	}
	for _, tc := range cases {
		if err := ValidateBatches(tc.b); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	two := append(append([]byte(nil), good...), good...)
	n := 0
	if err := WalkBatches(two, true, func(BatchHeader, []byte) error { n++; return nil }); err != nil || n != 2 {
		t.Fatalf("walk: %v %d", err, n)
	}
}

func TestDecompressionBomb(t *testing.T) {
	old := MaxDecompressedBytes
	MaxDecompressedBytes = 1 << 16
	defer func() { MaxDecompressedBytes = old }()
	big := []Record{{Value: make([]byte, 1<<17), Timestamp: 1}}
	for _, c := range codecs[1:] {
		b := BuildBatch(BatchOptions{Compression: c}, big...)
		if _, err := DecodeRecords(b); !errors.Is(err, kerr.InvalidRecord) {
			t.Errorf("%s: %v", c, err)
		}
	}
}

func FuzzParseBatches(f *testing.F) {
	for _, c := range codecs {
		f.Add(BuildBatch(BatchOptions{Compression: c}, recs(1, 3, "f")...))
	}
	f.Add(append(batch(1, 1), batch(2, 2)...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = WalkBatches(b, false, func(h BatchHeader, raw []byte) error {
			if int64(len(raw)) != h.Size() {
				t.Fatalf("raw %d size %d", len(raw), h.Size())
			}
			_ = walkBatchRecords(h, raw, func(*Record) error { return nil })
			return nil
		})
		_ = ValidateBatches(b)
	})
}

func FuzzDecodeRecords(f *testing.F) {
	for _, c := range codecs {
		f.Add(BuildBatch(BatchOptions{Compression: c}, sampleRecords()[:6]...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// fix the length and CRC so the fuzzer reaches the record decoder
		if len(b) >= BatchHeaderSize {
			b = append([]byte(nil), b...)
			b[offMagic] = 2
			binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
			binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
		}
		rs, err := DecodeRecords(b)
		if err == nil {
			h, _ := ParseBatchHeader(b)
			if int32(len(rs)) != h.NumRecords {
				t.Fatalf("%d records, header says %d", len(rs), h.NumRecords)
			}
		}
	})
}
