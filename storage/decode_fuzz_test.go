package storage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"os"
	"reflect"
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Fuzz targets for the decoders of files this package reads back from disk: the
// producer state snapshot, the text checkpoints (recovery point, log start,
// replication offset, leader epoch), partition.metadata, the clean-shutdown
// marker and the offset and time indexes. None may panic; where there is an
// encoder, what decodes must encode to something that decodes to the same value.

// memFile puts data at name in a fresh in-memory file system.
func memFile(t *testing.T, name string, data []byte) vfs.FS {
	t.Helper()
	fs := vfs.NewMem()
	f, err := fs.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return fs
}

func FuzzDecodeProducerSnapshot(f *testing.F) {
	f.Add(newProducerState().encodeSnapshot())
	ps := newProducerState()
	u := ps.begin(OriginClient, 0)
	u.append(BatchHeader{BaseOffset: 10, LastOffsetDelta: 4, NumRecords: 5, ProducerID: 9, ProducerEpoch: 2, BaseSequence: 20, MaxTimestamp: 1234}, nil)
	u.append(BatchHeader{BaseOffset: 15, LastOffsetDelta: 0, NumRecords: 1, ProducerID: 10, ProducerEpoch: 0, BaseSequence: 0, MaxTimestamp: 99, Attributes: attrTransactional}, nil)
	u.append(BatchHeader{BaseOffset: 16, LastOffsetDelta: 2, NumRecords: 3, ProducerID: math.MaxInt64, ProducerEpoch: math.MaxInt16, BaseSequence: math.MaxInt32 - 1, MaxTimestamp: -1}, nil)
	u.commit()
	f.Add(ps.encodeSnapshot())
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff}) // bad crc, huge count
	f.Fuzz(func(t *testing.T, b []byte) {
		// fix the crc (when the input has room for it) so the fuzzer gets past it
		if len(b) >= 6 && len(b)%2 == 0 {
			b = append([]byte(nil), b...)
			binary.BigEndian.PutUint32(b[2:], crc32.Checksum(b[6:], crc32c))
		}
		m, err := decodeSnapshot(b)
		if err != nil {
			return
		}
		if len(m) > len(b)/snapshotEntrySize {
			t.Fatalf("%d entries from %d bytes", len(m), len(b))
		}
		re := (&producerState{entries: m}).encodeSnapshot()
		m2, err := decodeSnapshot(re)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if !reflect.DeepEqual(m, m2) {
			t.Fatalf("round trip:\n%+v\n%+v", m, m2)
		}
		if re2 := (&producerState{entries: m2}).encodeSnapshot(); !bytes.Equal(re, re2) {
			t.Fatalf("encoding not stable")
		}
	})
}

// FuzzReadOffsetCheckpoint covers readCheckpoint and the "<topic> <partition>
// <offset>" entries of the recovery-point, log-start and replication-offset
// checkpoints.
func FuzzReadOffsetCheckpoint(f *testing.F) {
	fs := vfs.NewMem()
	for _, m := range []map[TopicPartition]int64{
		{},
		{{"t", 0}: 5},
		{{"a", 0}: 0, {"a", 1}: math.MaxInt64, {"__consumer_offsets", 49}: 123, {"b.c_d-e", math.MaxInt32}: -1},
	} {
		if err := writeOffsetCheckpoint(fs, "/cp", m); err != nil {
			f.Fatal(err)
		}
		b, err := vfs.ReadFile(fs, "/cp")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("0\n999999999999\n"))
	f.Add([]byte("0\r\n1\r\nt 0 5\r\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := memFile(t, "/cp", b)
		m, err := readOffsetCheckpoint(fs, "/cp")
		if err != nil {
			return
		}
		if err := writeOffsetCheckpoint(fs, "/cp2", m); err != nil {
			t.Fatal(err)
		}
		m2, err := readOffsetCheckpoint(fs, "/cp2")
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		if len(m) != len(m2) {
			t.Fatalf("round trip: %v != %v", m, m2)
		}
		for tp, o := range m {
			if o2, ok := m2[tp]; !ok || o2 != o {
				t.Fatalf("round trip: %v != %v", m, m2)
			}
		}
	})
}

func FuzzLoadEpochCache(f *testing.F) {
	fs := vfs.NewMem()
	c := &epochCache{fs: fs, file: "/" + leaderEpochCheckpointFile}
	f.Add([]byte(""))
	for _, e := range []epochEntry{{0, 0}, {3, 100}, {math.MaxInt32, math.MaxInt64}} {
		c.assign(e.epoch, e.start)
		if err := c.flush(); err != nil {
			f.Fatal(err)
		}
		b, err := vfs.ReadFile(fs, c.file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("0\n1\n-1 -1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := memFile(t, "/"+leaderEpochCheckpointFile, b)
		c, err := loadEpochCache(fs, "/")
		if err != nil {
			return
		}
		// exercise the lookups on whatever was loaded (entries need not be monotonic)
		if l, ok := c.latest(); ok {
			c.endOffsetFor(l.epoch, l.start)
		}
		c.endOffsetFor(0, 0)
		if err := fs.MkdirAll("/copy", 0o755); err != nil {
			t.Fatal(err)
		}
		c.file = "/copy/" + leaderEpochCheckpointFile
		if err := c.flush(); err != nil {
			t.Fatal(err)
		}
		c2, err := loadEpochCache(fs, "/copy")
		if err != nil {
			t.Fatalf("re-encoded checkpoint does not decode: %v", err)
		}
		if !reflect.DeepEqual(c.entries, c2.entries) {
			t.Fatalf("round trip: %v != %v", c.entries, c2.entries)
		}
	})
}

func FuzzReadPartitionMetadata(f *testing.F) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/d", 0o755); err != nil {
		f.Fatal(err)
	}
	for _, id := range [][16]byte{{}, {1, 2, 3}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
		if err := writePartitionMetadata(fs, "/d", id); err != nil {
			f.Fatal(err)
		}
		b, err := vfs.ReadFile(fs, "/d/"+partitionMetadataFile)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("version: 0\r\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA==\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs := memFile(t, "/"+partitionMetadataFile, b)
		id, ok, err := readPartitionMetadata(fs, "/")
		if err != nil || !ok {
			return
		}
		if err := fs.MkdirAll("/x", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writePartitionMetadata(fs, "/x", id); err != nil {
			t.Fatal(err)
		}
		id2, ok, err := readPartitionMetadata(fs, "/x")
		if err != nil || !ok || id2 != id {
			t.Fatalf("round trip %x: %x %v %v", id, id2, ok, err)
		}
	})
}

func FuzzParseCleanShutdown(f *testing.F) {
	for _, e := range []int64{0, 1, 42, -1, math.MaxInt64, math.MinInt64} {
		f.Add(cleanShutdownJSON(e))
	}
	f.Add([]byte(`{"brokerEpoch":7}`))
	f.Add([]byte(`{"broker_epoch":1e300}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := parseCleanShutdown(b)
		if !ok || e < 0 {
			return
		}
		if e2, ok := parseCleanShutdown(cleanShutdownJSON(e)); !ok || e2 != e {
			t.Fatalf("round trip %d: %d %v", e, e2, ok)
		}
	})
}

// FuzzLoadIndexes loads arbitrary offset and time index files: loading must not
// panic, and every entry it keeps must pass the sanity checks, so that lookups on
// a loaded index stay in range.
func FuzzLoadIndexes(f *testing.F) {
	var oi, ti []byte
	for i := 0; i < 4; i++ {
		oi = binary.BigEndian.AppendUint32(oi, uint32(i*10))
		oi = binary.BigEndian.AppendUint32(oi, uint32(i*4096))
		ti = binary.BigEndian.AppendUint64(ti, uint64(1000+i))
		ti = binary.BigEndian.AppendUint32(ti, uint32(i*10))
	}
	f.Add(oi, ti, int64(1<<20), int64(40))
	f.Add(append(oi, make([]byte, 64)...), append(ti, make([]byte, 60)...), int64(1<<20), int64(40))
	f.Add([]byte{1, 2, 3}, []byte{}, int64(0), int64(0))
	f.Fuzz(func(t *testing.T, oix, tix []byte, logSize, next int64) {
		const base, maxEntries = 100, 8
		fs := memFile(t, "/i", oix)
		fo, err := fs.Open("/i")
		if err != nil {
			t.Fatal(err)
		}
		defer fo.Close()
		ix, ok, err := loadOffsetIndex(fo, base, maxEntries, logSize)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			for i, e := range ix.entries {
				if e.rel < 0 || e.pos < 0 || int64(e.pos) >= logSize || (i > 0 && e.rel <= ix.entries[i-1].rel) {
					t.Fatalf("entry %d %+v kept", i, e)
				}
			}
			ix.lookup(base + 15)
			ix.truncateTo(base + 15)
		}
		fs = memFile(t, "/t", tix)
		ft, err := fs.Open("/t")
		if err != nil {
			t.Fatal(err)
		}
		defer ft.Close()
		tx, ok, err := loadTimeIndex(ft, base, maxEntries, next)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			for i, e := range tx.entries {
				if e.ts < 0 || e.rel < 0 || (i > 0 && (e.ts <= tx.entries[i-1].ts || e.rel < tx.entries[i-1].rel)) {
					t.Fatalf("entry %d %+v kept", i, e)
				}
			}
			tx.last()
			tx.lookup(1001)
			tx.truncateTo(base + 15)
		}
	})
}

// FuzzProducerStateBatches feeds arbitrary record batches to the producer
// state as a follower's append and the replay see them (end markers decoded
// from control records, ParseEndTxnMarker) and as a leader validates them:
// no panic, and the state stays consistent (every open transaction is in
// the ongoing list, the first unstable offset is one of them).
func FuzzProducerStateBatches(f *testing.F) {
	f.Add(append(BuildEndTxnMarker(3, 1, false, 7, 10), txnBatch(10, 2, 3, 0)...))
	f.Add(append(txnBatch(1, 2, 3, 0), BuildEndTxnMarker(3, 0, true, 1, 1)...))
	f.Add(marker(5, 4, ControlAbort))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, origin := range []AppendOrigin{originReplication, OriginCoordinator, OriginClient} {
			ps := newProducerState()
			off := int64(0)
			_ = WalkBatches(b, true, func(h BatchHeader, raw []byte) error {
				if off > 1<<40 {
					return io.EOF
				}
				h.BaseOffset = off
				off = h.NextOffset()
				ParseEndTxnMarker(h, raw)
				u := ps.begin(origin, 2)
				if u.append(h, raw) == nil {
					u.commit()
				}
				return nil
			})
			open := 0
			for pid, e := range ps.entries {
				if e.currentTxnFirstOffset < 0 {
					continue
				}
				open++
				found := false
				for _, tx := range ps.ongoing {
					found = found || tx.pid == pid && tx.first == e.currentTxnFirstOffset
				}
				if !found {
					t.Fatalf("producer %d open at %d is not ongoing: %+v", pid, e.currentTxnFirstOffset, ps.ongoing)
				}
			}
			if open != len(ps.ongoing) {
				t.Fatalf("%d open transactions, %d ongoing", open, len(ps.ongoing))
			}
			if fuo := ps.firstUnstableOffset(); (fuo < 0) != (len(ps.ongoing)+len(ps.unreplicated) == 0) {
				t.Fatalf("first unstable %d with %d ongoing, %d unreplicated", fuo, len(ps.ongoing), len(ps.unreplicated))
			}
		}
	})
}
