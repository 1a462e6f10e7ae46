package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func smallCfg() Config {
	c := DefaultConfig()
	c.SegmentBytes = 2048
	c.IndexIntervalBytes = 200
	return c
}

// A write torn by a crash: the injecting FS keeps only part of the last append.
func TestRecoveryTornTail(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	var sw vfs.Switch
	fs := vfs.NewInjecting(mem, sw.Inject)
	cfg := smallCfg()
	l := openTest(t, fs, clk, cfg)
	for i := 0; i < 40; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 3), 2)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	// the next append reaches the disk only partly (reported as written), then we crash
	sw.Set(func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpWrite && strings.HasSuffix(op.Path, ".log") {
			return vfs.Fault{Torn: true, Keep: 30}
		}
		return vfs.Fault{}
	})
	mustAppend(t, l.Log, batch(clk.Ms(), 3), 2)
	sw.Set(nil)
	// make the torn bytes "durable" so the crash image holds them
	for _, s := range l.mu.segments {
		s.log.Sync()
	}
	crashed := mem.CrashClone()
	l2 := openTest(t, crashed, clk, cfg, func(o *LogOptions) {
		o.HadCleanShutdown = false
		o.RecoveryPoint = leo - 10
	})
	defer l2.Close()
	if l2.LogEndOffset() != leo {
		t.Fatalf("recovered leo %d, want %d", l2.LogEndOffset(), leo)
	}
	if got := readAll(t, l2.Log, 0); len(got) != int(leo) {
		t.Fatalf("%d records", len(got))
	}
	mustAppend(t, l2.Log, batch(clk.Ms(), 1), 2)
	if got := readAll(t, l2.Log, leo); len(got) != 1 || got[0].Offset != leo {
		t.Fatalf("append after recovery: %+v", got)
	}
}

// Unsynced data is lost in a crash; recovery must cope with the preallocated index
// files that were never trimmed.
func TestRecoveryAfterCrashLosesUnsynced(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := smallCfg()
	l := openTest(t, mem, clk, cfg)
	for i := 0; i < 20; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 1)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	synced := l.LogEndOffset()
	for i := 0; i < 5; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 1)
	}
	crashed := mem.CrashClone()
	l2 := openTest(t, crashed, clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false; o.RecoveryPoint = synced })
	defer l2.Close()
	if l2.LogEndOffset() < synced {
		t.Fatalf("lost synced data: leo %d < %d", l2.LogEndOffset(), synced)
	}
	readAll(t, l2.Log, 0)
}

// A flipped byte in the middle of the active segment: everything from that batch on
// is truncated, and later segments are removed.
func TestRecoveryCorruptBatch(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := smallCfg()
	l := openTest(t, mem, clk, cfg)
	for i := 0; i < 60; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 1)
	}
	segs := l.NumSegments()
	base := l.mu.segments[1].base
	l.Close()
	if segs < 3 {
		t.Fatalf("want >= 3 segments, have %d", segs)
	}
	// corrupt the 3rd batch of the second segment
	f, _ := mem.OpenFile(segmentName(l.dir, base, logSuffix), os.O_RDWR, 0)
	one := int64(len(batch(0, 2)))
	var b [1]byte
	f.ReadAt(b[:], 2*one+70)
	b[0] ^= 0xff
	f.WriteAt(b[:], 2*one+70)
	f.Close()
	l2 := openTest(t, mem, clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false; o.RecoveryPoint = 0 })
	defer l2.Close()
	if l2.LogEndOffset() != base+4 {
		t.Fatalf("leo %d, want %d", l2.LogEndOffset(), base+4)
	}
	if l2.NumSegments() != 2 {
		t.Fatalf("%d segments", l2.NumSegments())
	}
	readAll(t, l2.Log, 0)
}

// Missing or garbage index files are rebuilt even after a clean shutdown.
func TestIndexRebuild(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := smallCfg()
	l := openTest(t, mem, clk, cfg)
	for i := 0; i < 30; i++ {
		mustAppend(t, l.Log, batch(clk.Ms()+int64(i), 2), 1)
	}
	first := l.mu.segments[0]
	want := append([]offsetEntry(nil), first.idx.entries...)
	wantT := append([]timeEntry(nil), first.tidx.entries...)
	l.Close()
	if len(want) == 0 {
		t.Fatal("no index entries")
	}
	mem.Remove(segmentName(l.dir, 0, indexSuffix))
	f, _ := mem.OpenFile(segmentName(l.dir, 0, timeIndexSuffix), os.O_RDWR, 0)
	f.WriteAt([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 9}, 0)
	f.Close()
	l2 := openTest(t, mem, clk, cfg)
	defer l2.Close()
	got := l2.mu.segments[0]
	if len(got.idx.entries) != len(want) {
		t.Fatalf("rebuilt %d entries, want %d", len(got.idx.entries), len(want))
	}
	for i := range want {
		if got.idx.entries[i] != want[i] {
			t.Fatalf("entry %d: %+v want %+v", i, got.idx.entries[i], want[i])
		}
	}
	for i := range wantT {
		if got.tidx.entries[i] != wantT[i] {
			t.Fatalf("time entry %d: %+v want %+v", i, got.tidx.entries[i], wantT[i])
		}
	}
	readAll(t, l2.Log, 0)
}

// Failed writes and fsyncs surface as errors and leave the log usable.
func TestAppendIOErrors(t *testing.T) {
	clk := newClock()
	var sw vfs.Switch
	fs := vfs.NewInjecting(vfs.NewMem(), sw.Inject)
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	l := openTest(t, fs, clk, cfg)
	defer l.Close()
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 1)
	sw.Set(func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpWrite && strings.HasSuffix(op.Path, ".log") {
			return vfs.Fault{Keep: 10, Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	})
	if _, err := l.AppendAsLeader(batch(clk.Ms(), 2), 1); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("short write: %v", err)
	}
	if l.LogEndOffset() != 2 {
		t.Fatalf("leo moved: %d", l.LogEndOffset())
	}
	sw.Set(vfs.FailAfter(vfs.OpSync, 0, nil))
	if _, err := l.AppendAsLeader(batch(clk.Ms(), 2), 1); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("fsync: %v", err)
	}
	if l.DurableOffset() != 2 {
		t.Fatalf("durable offset moved on failed fsync: %d", l.DurableOffset())
	}
	sw.Set(nil)
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 1)
	if l.DurableOffset() != 6 {
		t.Fatalf("durable offset %d", l.DurableOffset())
	}
	if got := readAll(t, l.Log, 0); len(got) != 6 {
		t.Fatalf("%d records", len(got))
	}
}

// A failed index write undoes the append: the log end offset and the segment stay
// consistent and the next append succeeds.
// TestIndexWriteFailure: index entries reach their files when the segment is
// flushed, so a failed index write fails the flush (and leaves the recovery
// point where it was), not the append; once the fault is gone a flush writes
// them.
func TestIndexWriteFailure(t *testing.T) {
	clk := newClock()
	var sw vfs.Switch
	fs := vfs.NewInjecting(vfs.NewMem(), sw.Inject)
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1
	l := openTest(t, fs, clk, cfg)
	defer l.Close()
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	sw.Set(func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpWrite && strings.HasSuffix(op.Path, ".index") {
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	})
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	if err := l.Flush(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("flush: %v", err)
	}
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d after a failed flush", rp)
	}
	sw.Set(nil)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if rp := l.RecoveryPoint(); rp != 4 {
		t.Fatalf("recovery point %d", rp)
	}
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	if got := readAll(t, l.Log, 0); len(got) != 6 {
		t.Fatalf("%d records", len(got))
	}
}

// TestIndexesOnDiskAfterFlush: what a flush leaves in the index files (the
// entries written behind the appends) is what the segment has in memory, in
// Kafka's format, and survives a crash right after the flush.
func TestIndexesOnDiskAfterFlush(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 100
	l := openTest(t, mem, clk, cfg)
	defer l.Close()
	for i := 0; i < 50; i++ {
		clk.Advance(time.Millisecond)
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	s := l.mu.segments[0]
	if len(s.idx.entries) < 10 || len(s.tidx.entries) < 10 {
		t.Fatalf("%d offset and %d time index entries", len(s.idx.entries), len(s.tidx.entries))
	}
	b, err := vfs.ReadFile(crashed, segmentName(l.dir, s.base, indexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range s.idx.entries {
		if rel, pos := binary.BigEndian.Uint32(b[i*8:]), binary.BigEndian.Uint32(b[i*8+4:]); int32(rel) != e.rel || int32(pos) != e.pos {
			t.Fatalf("offset index entry %d on disk (%d, %d), in memory %+v", i, rel, pos, e)
		}
	}
	if n := len(s.idx.entries) * 8; len(b) < n+8 || !bytes.Equal(b[n:n+8], make([]byte, 8)) {
		t.Fatalf("no zero (preallocated) tail after the entries: %d bytes", len(b))
	}
	b, err = vfs.ReadFile(crashed, segmentName(l.dir, s.base, timeIndexSuffix))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range s.tidx.entries {
		if ts, rel := binary.BigEndian.Uint64(b[i*12:]), binary.BigEndian.Uint32(b[i*12+8:]); int64(ts) != e.ts || int32(rel) != e.rel {
			t.Fatalf("time index entry %d on disk (%d, %d), in memory %+v", i, ts, rel, e)
		}
	}
	// A crash after the flush: the indexes pass the sanity check as they are.
	l2 := openTest(t, crashed, clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false })
	defer l2.Close()
	s2 := l2.mu.segments[0]
	if !slices.Equal(s2.idx.entries, s.idx.entries) || !slices.Equal(s2.tidx.entries, s.tidx.entries) {
		t.Fatal("indexes after the crash differ")
	}
	if got := readAll(t, l2.Log, 0); len(got) != 100 {
		t.Fatalf("%d records after the crash", len(got))
	}
}
