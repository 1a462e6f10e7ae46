package storage

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Segment and partition directory deletion as Kafka does it (lifecycle.go bury,
// delete.go): files renamed .deleted at once, removed file.delete.delay.ms later.

const testDeleteDelay = time.Minute

func deleteCfg() Config {
	c := smallCfg()
	c.FileDeleteDelayMs = testDeleteDelay.Milliseconds()
	return c
}

// fourSegments appends to l so that it has segments at 0 (with an aborted
// transaction: a .txnindex), 3, 5 and the active one at 7:
//
//	0: txn pid 7 [0,1], ABORT [2]   3: [3,4]   5: [5,6]   7 (active): [7,8]
func fourSegments(t *testing.T, l *Log, ts int64) {
	t.Helper()
	mustAppend(t, l, txnBatch(ts, 2, 7, 0), 0)
	mustAppend(t, l, marker(ts, 7, ControlAbort), 0)
	for range 3 {
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, batch(ts, 2), 0)
	}
	if got := segmentBases(l); !equalInts(got, []int64{0, 3, 5, 7}) {
		t.Fatalf("segments %v", got)
	}
}

func segmentBases(l *Log) []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []int64
	for _, s := range l.mu.segments {
		out = append(out, s.base)
	}
	return out
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// dirNames lists the file names in dir.
func dirNames(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	ents, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// deletedFiles lists the .deleted files in dir.
func deletedFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	var out []string
	for _, n := range dirNames(t, fs, dir) {
		if strings.HasSuffix(n, deletedSuffix) {
			out = append(out, n)
		}
	}
	return out
}

// wantDeletedFiles is the .deleted names of the segments at bases (segment 0 has
// a transaction index).
func wantDeletedFiles(bases ...int64) []string {
	var out []string
	for _, b := range bases {
		sufs := []string{logSuffix, indexSuffix, timeIndexSuffix}
		if b == 0 {
			sufs = append(sufs, txnIndexSuffix)
		}
		for _, suf := range sufs {
			out = append(out, filepath.Base(segmentName("", b, suf+deletedSuffix)))
		}
	}
	sort.Strings(out)
	return out
}

// checkLiveFiles: every segment of l has its files under their own names, and
// every buried one under .deleted names, while its deletion is pending.
func checkLiveFiles(t *testing.T, l *testLog) {
	t.Helper()
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, s := range l.mu.segments {
		if s.suffix != "" {
			t.Fatalf("live segment %d has suffix %q", s.base, s.suffix)
		}
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
			if _, err := l.fs.Stat(segmentName(l.dir, s.base, suf)); err != nil {
				t.Fatalf("live segment %d: %v", s.base, err)
			}
		}
	}
	for _, g := range l.mu.graveyard {
		if g.seg.suffix != deletedSuffix {
			t.Fatalf("buried segment %d has suffix %q", g.seg.base, g.seg.suffix)
		}
	}
}

// After retention, DeleteRecords and truncation the deleted segments' files exist
// as .deleted until file.delete.delay.ms has passed on the log's clock, then go;
// the log reads the same throughout and after a reopen.
func TestSegmentDeletionDeferred(t *testing.T) {
	cases := []struct {
		name    string
		cfg     func(*Config)
		op      func(t *testing.T, l *testLog)
		deleted []int64
		records int // records left (from the log start offset)
	}{
		// every segment expired, the active one too: it is rolled and
		// deleted (UnifiedLog.deleteSegments), the log starts at its end
		{"retention.ms", func(c *Config) { c.RetentionMs = 1000 }, func(t *testing.T, l *testLog) {
			l.clk.Advance(2 * time.Second)
			l.UpdateHighWatermark(l.LogEndOffset())
			if n, err := l.DeleteOldSegments(); err != nil || n != 4 {
				t.Fatalf("DeleteOldSegments = %d, %v", n, err)
			}
			if l.LogStartOffset() != l.LogEndOffset() || l.NumSegments() != 1 {
				t.Fatalf("log start %d, end %d, %d segments", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
			}
		}, []int64{0, 3, 5, 7}, 0},
		{"retention.bytes", func(c *Config) { c.RetentionBytes = 1 }, func(t *testing.T, l *testLog) {
			l.UpdateHighWatermark(l.LogEndOffset())
			if n, err := l.DeleteOldSegments(); err != nil || n != 3 {
				t.Fatalf("DeleteOldSegments = %d, %v", n, err)
			}
		}, []int64{0, 3, 5}, 2},
		{"DeleteRecords", nil, func(t *testing.T, l *testLog) {
			if err := l.IncrementLogStartOffset(5); err != nil {
				t.Fatal(err)
			}
		}, []int64{0, 3}, 4},
		{"truncate", nil, func(t *testing.T, l *testLog) {
			if err := l.Truncate(3); err != nil {
				t.Fatal(err)
			}
		}, []int64{5, 7}, 3}, // the aborted transaction (0-1) and its marker (2)
		{"truncate fully", nil, func(t *testing.T, l *testLog) {
			if err := l.TruncateFullyAndStartAt(100); err != nil {
				t.Fatal(err)
			}
		}, []int64{0, 3, 5, 7}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newClock()
			mem := vfs.NewMemFS()
			cfg := deleteCfg()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			l := openTest(t, mem, clk, cfg)
			fourSegments(t, l.Log, clk.Ms())
			tc.op(t, l)
			want := wantDeletedFiles(tc.deleted...)
			if got := deletedFiles(t, mem, l.dir); !slicesEqual(got, want) {
				t.Fatalf(".deleted files %v, want %v", got, want)
			}
			for _, b := range tc.deleted {
				if b == l.active().base {
					continue
				}
				if _, err := mem.Stat(segmentName(l.dir, b, logSuffix)); !os.IsNotExist(err) {
					t.Fatalf("segment %d still has its .log: %v", b, err)
				}
			}
			checkLiveFiles(t, l)
			before := readAll(t, l.Log, l.LogStartOffset())
			if len(before) != tc.records {
				t.Fatalf("%d records, want %d", len(before), tc.records)
			}
			// not yet: one millisecond short of the delay
			l.clk.Advance(testDeleteDelay - time.Millisecond)
			l.Maintain()
			if got := deletedFiles(t, mem, l.dir); !slicesEqual(got, want) {
				t.Fatalf(".deleted files before the delay %v, want %v", got, want)
			}
			l.clk.Advance(time.Millisecond)
			l.Maintain()
			if got := deletedFiles(t, mem, l.dir); len(got) != 0 {
				t.Fatalf(".deleted files after the delay: %v", got)
			}
			checkLiveFiles(t, l)
			if got := readAll(t, l.Log, l.LogStartOffset()); len(got) != len(before) {
				t.Fatalf("%d records after the deletion, want %d", len(got), len(before))
			}
			start, end := l.LogStartOffset(), l.LogEndOffset()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l2 := openTest(t, mem, clk, cfg, func(o *LogOptions) { o.LogStartOffset = start })
			defer l2.Close()
			if l2.LogStartOffset() != start || l2.LogEndOffset() != end {
				t.Fatalf("reopened [%d, %d), want [%d, %d)", l2.LogStartOffset(), l2.LogEndOffset(), start, end)
			}
			if got := readAll(t, l2.Log, start); len(got) != len(before) {
				t.Fatalf("%d records after reopening, want %d", len(got), len(before))
			}
		})
	}
}

func slicesEqual(a, b []string) bool {
	return strings.Join(a, ",") == strings.Join(b, ",")
}

// A reader holding a segment (a FileRegion handed out before the deletion) reads
// it after the rename until the delay has passed; then its descriptor is closed.
func TestBuriedSegmentStaysReadable(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	l := openTest(t, mem, clk, deleteCfg())
	defer l.Close()
	fourSegments(t, l.Log, clk.Ms())
	ri, err := l.Read(3, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ri.Region.ReadAll()
	if err != nil || len(want) == 0 {
		t.Fatalf("read %d bytes: %v", len(want), err)
	}
	if err := l.IncrementLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(3, 1<<20, 1<<62, true); err == nil {
		t.Fatal("a new read below the log start offset succeeded")
	}
	got, err := ri.Region.ReadAll()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("region after the rename: %d bytes, %v", len(got), err)
	}
	var buf bytes.Buffer
	if _, err := ri.Region.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("region WriteTo after the rename: %d bytes, %v", buf.Len(), err)
	}
	clk.Advance(testDeleteDelay)
	l.Maintain()
	if _, err := ri.Region.ReadAll(); err == nil {
		t.Fatal("the region still reads after the deletion closed its segment")
	}
}

// On the OS file system: a region of a segment renamed .deleted still goes out
// with sendfile(2) (FileRegion.WriteTo to a socket).
func TestBuriedSegmentSendfileOS(t *testing.T) {
	clk := newClock()
	dir := filepath.Join(t.TempDir(), "topic-0")
	l := openTest(t, vfs.Default, clk, deleteCfg(), func(o *LogOptions) { o.Dir = dir })
	defer l.Close()
	fourSegments(t, l.Log, clk.Ms())
	ri, err := l.Read(3, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ri.Region.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.IncrementLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(segmentName(dir, 3, logSuffix)); !os.IsNotExist(err) {
		t.Fatalf("00000000000000000003.log after the deletion: %v", err)
	}
	if _, err := os.Stat(segmentName(dir, 3, logSuffix+deletedSuffix)); err != nil {
		t.Fatal(err)
	}

	// sendfile to a TCP socket
	b, n, err := sendOverTCP(t, ri.Region)
	if err != nil || n != int64(len(want)) || !bytes.Equal(b, want) {
		t.Fatalf("sendfile sent %d bytes (%d received, equal %v): %v", n, len(b), bytes.Equal(b, want), err)
	}

	clk.Advance(testDeleteDelay)
	l.Maintain()
	if _, err := os.Stat(segmentName(dir, 3, logSuffix+deletedSuffix)); !os.IsNotExist(err) {
		t.Fatalf("the .deleted file after the delay: %v", err)
	}
	if ri.Region.File.Fd() != vfs.NoFd {
		t.Fatal("the buried segment's descriptor is still open after its deletion")
	}
}

// Without Maintain, the deletion is scheduled on a timer (Kafka's scheduler): a
// log with the real clock deletes its .deleted files once the delay has passed.
func TestSegmentDeletionScheduled(t *testing.T) {
	mem := vfs.NewMemFS()
	cfg := smallCfg()
	cfg.FileDeleteDelayMs = 50
	l := openTest(t, mem, newClock(), cfg, func(o *LogOptions) { o.Now = time.Now })
	defer l.Close()
	fourSegments(t, l.Log, time.Now().UnixMilli())
	if err := l.IncrementLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if got := deletedFiles(t, mem, l.dir); len(got) == 0 {
		t.Fatal("no .deleted files right after the deletion")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(deletedFiles(t, mem, l.dir)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf(".deleted files never went: %v", deletedFiles(t, mem, l.dir))
		}
		time.Sleep(10 * time.Millisecond)
	}
	checkLiveFiles(t, l)
}

// A segment whose base offset is deleted twice within the delay (the new
// segment of a full truncation reuses it): each rename replaces the older
// .deleted file, as in Kafka; nothing fails and the live segment stays.
func TestSegmentDeletionSameBaseTwice(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	l := openTest(t, mem, clk, deleteCfg())
	defer l.Close()
	for i := range 2 {
		mustAppend(t, l.Log, batch(clk.Ms(), 3), 0)
		if err := l.TruncateFullyAndStartAt(0); err != nil {
			t.Fatalf("truncation %d: %v", i, err)
		}
		clk.Advance(time.Second)
	}
	mustAppend(t, l.Log, batch(clk.Ms(), 1), 0)
	if got := deletedFiles(t, mem, l.dir); len(got) != 3 {
		t.Fatalf(".deleted files %v", got)
	}
	clk.Advance(testDeleteDelay)
	l.Maintain()
	if got := deletedFiles(t, mem, l.dir); len(got) != 0 {
		t.Fatalf(".deleted files after the delay: %v", got)
	}
	if got := readAll(t, l.Log, 0); len(got) != 1 {
		t.Fatalf("%d records", len(got))
	}
	checkLiveFiles(t, l)
}

// The log cleaner's swap renames the segments it replaces .deleted; a reader of
// one of them reads on until the delay has passed.
func TestCleanerReplacedSegmentsDeferred(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := compactCfg()
	cfg.FileDeleteDelayMs = testDeleteDelay.Milliseconds()
	l := openTest(t, mem, clk, cfg)
	defer l.Close()
	ts := clk.Ms()
	mustAppend(t, l.Log, kv(ts, "a", "1", "b", "1"), 0) // 0-1
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "a", "2"), 0) // 2
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "z", "1"), 0) // 3
	ri, err := l.Read(2, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ri.Region.ReadAll()
	cleanLog(t, l.Log)
	if got, w := dump(t, l.Log), "1:b=1 2:a=2 3:z=1"; got != w {
		t.Fatalf("after cleaning %s, want %s", got, w)
	}
	if got, w := deletedFiles(t, mem, l.dir), wantDeletedFiles(2); !slicesEqual(got[len(got)-3:], w) {
		t.Fatalf(".deleted files %v", got)
	}
	if got := deletedFiles(t, mem, l.dir); len(got) != 6 { // segments 0 and 2
		t.Fatalf(".deleted files %v", got)
	}
	checkLiveFiles(t, l)
	if got, err := ri.Region.ReadAll(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("region of a replaced segment: %v", err)
	}
	clk.Advance(testDeleteDelay)
	l.Maintain()
	if got := deletedFiles(t, mem, l.dir); len(got) != 0 {
		t.Fatalf(".deleted files after the delay: %v", got)
	}
	if got, w := dump(t, l.Log), "1:b=1 2:a=2 3:z=1"; got != w {
		t.Fatalf("after the deletion %s, want %s", got, w)
	}
}

// A failed rename to .deleted is an I/O error: the log dir goes offline (KIP-112),
// as Kafka's LocalLog.maybeHandleIOException does; so is a failed removal later.
func TestSegmentDeletionFailureTakesDirOffline(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(op vfs.Op) bool
	}{
		{"rename", func(op vfs.Op) bool {
			return op.Kind == vfs.OpRename && strings.HasSuffix(op.Path, "00000000000000000003.log")
		}},
		{"remove", func(op vfs.Op) bool {
			return op.Kind == vfs.OpRemove && strings.HasSuffix(op.Path, deletedSuffix)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMemFS()
			var sw vfs.Switch
			fs := vfs.NewInjecting(mem, sw.Inject)
			clk := newClock()
			failed := make(chan string, 1)
			m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1"}, Now: clk.Now, Config: deleteCfg(),
				OnDirFailure: func(dir string) { failed <- dir }})
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			l, err := m.GetOrCreateLog(TopicPartition{"t", 0}, [16]byte{1}, deleteCfg())
			if err != nil {
				t.Fatal(err)
			}
			fourSegments(t, l, clk.Ms())
			sw.Set(func(op vfs.Op) vfs.Fault {
				if tc.fail(op) {
					return vfs.Fault{Err: vfs.ErrInjected}
				}
				return vfs.Fault{}
			})
			err = l.IncrementLogStartOffset(5)
			if tc.name == "rename" {
				if !errors.Is(err, errKafkaStorage) || !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("IncrementLogStartOffset: %v", err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				clk.Advance(testDeleteDelay)
				if err := m.Maintain(); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case dir := <-failed:
				if dir != "/d1" {
					t.Fatalf("failed dir %s", dir)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the log dir did not go offline")
			}
			if !l.Offline() || !m.DirOffline("/d1") {
				t.Fatal("log or dir online after the failure")
			}
			if _, err := l.Read(5, 1<<20, 1<<62, true); !errors.Is(err, errKafkaStorage) {
				t.Fatalf("read after the failure: %v", err)
			}
			sw.Set(nil)
		})
	}
}

// .deleted files left by a shutdown (Close drops pending deletions, as Kafka's
// scheduler does) or a crash are removed when the log is opened again
// (LogLoader); a KRaft snapshot's .checkpoint.deleted is left to raft.
func TestLeftoverDeletedFilesRemovedOnOpen(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	l := openTest(t, mem, clk, deleteCfg())
	fourSegments(t, l.Log, clk.Ms())
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := l.IncrementLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got, want := deletedFiles(t, mem, l.dir), wantDeletedFiles(0, 3); !slicesEqual(got, want) {
		t.Fatalf(".deleted files after Close %v, want %v", got, want)
	}
	raftSnap := filepath.Join(l.dir, "00000000000000000010-0000000001.checkpoint.deleted")
	for _, fs := range []*vfs.MemFS{mem, crashed} {
		for _, name := range []string{raftSnap, segmentName(l.dir, 1, snapshotSuffix+deletedSuffix)} {
			if err := vfs.WriteFileAtomic(fs, name, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, fs := range map[string]*vfs.MemFS{"shutdown": mem, "crash": crashed} {
		l2 := openTest(t, fs, clk, deleteCfg(), func(o *LogOptions) {
			o.LogStartOffset = 5
			o.HadCleanShutdown = name == "shutdown"
		})
		if got := deletedFiles(t, fs, l2.dir); len(got) != 1 || got[0] != filepath.Base(raftSnap) {
			t.Fatalf("%s: .deleted files after opening: %v", name, got)
		}
		if got := readAll(t, l2.Log, 5); len(got) != 4 || l2.LogStartOffset() != 5 {
			t.Fatalf("%s: %d records from %d", name, len(got), l2.LogStartOffset())
		}
		checkLiveFiles(t, l2)
		l2.Close()
	}
}

// A .deleted leftover that cannot be removed fails the open (LogLoader lets the
// IOException out: the log dir goes offline at startup).
func TestLeftoverDeletedRemoveFailure(t *testing.T) {
	mem := vfs.NewMemFS()
	dir := "/data/topic-0"
	if err := mem.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := vfs.WriteFileAtomic(mem, segmentName(dir, 0, logSuffix+deletedSuffix), []byte("x")); err != nil {
		t.Fatal(err)
	}
	fs := vfs.NewInjecting(mem, vfs.FailAfter(vfs.OpRemove, 0, func(p string) bool { return strings.HasSuffix(p, deletedSuffix) }))
	if _, err := OpenLog(LogOptions{FS: fs, Dir: dir, Now: newClock().Now}); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("OpenLog: %v", err)
	}
}
