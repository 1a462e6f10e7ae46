package storage

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// corruptFirstBatch flips a byte in the records of the first batch of the segment
// file: its CRC no longer matches (a CorruptRecordException in Kafka), which is
// not an I/O error.
func corruptFirstBatch(t *testing.T, fs vfs.FS, path string) {
	t.Helper()
	f, err := fs.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	const at = BatchHeaderSize + 5
	if _, err := f.ReadAt(b, at); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, at); err != nil {
		t.Fatal(err)
	}
}

// dirtyCompacted appends n overwrites of one key (and one of another key to the
// active segment), so that the log has a cleanable section.
func dirtyCompacted(t *testing.T, clk *clock, l *Log, n int) {
	t.Helper()
	for i := range n {
		mustAppend(t, l, kv(clk.Ms(), "k", fmt.Sprint(i)), 0)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, kv(clk.Ms(), "z", "active"), 0)
}

// A cleaning that fails with an unexpected (non-I/O) error marks the partition
// uncleanable (LogCleaner.CleanerThread.tryCleanFilthiestLog,
// LogCleanerManager.markPartitionUncleanable): the cleaner skips it from then on,
// other partitions keep being cleaned, retention skips it too when it is compacted
// (LogCleanerManager.deletableLogs), and the mark goes with the log: deleting the
// partition or losing its log dir clears it, a truncation does not.
func TestUncleanablePartition(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	m, err := OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := compactCfg()
	bad := TopicPartition{"c", 0}
	good := TopicPartition{"c", 1}
	lb, err := m.GetOrCreateLog(bad, [16]byte{1}, cfg) // /d1
	if err != nil {
		t.Fatal(err)
	}
	lg, err := m.GetOrCreateLog(good, [16]byte{1}, cfg) // /d2
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lb.Dir(), "/d1/") || !strings.HasPrefix(lg.Dir(), "/d2/") {
		t.Fatalf("placement %s %s", lb.Dir(), lg.Dir())
	}
	dirtyCompacted(t, clk, lb, 30)
	dirtyCompacted(t, clk, lg, 30)
	corruptFirstBatch(t, mem, lb.Dir()+"/00000000000000000000.log")

	// both logs are equally dirty: the two passes clean one and fail the other,
	// in either order
	var failures []error
	cleaned := 0
	for range 2 {
		ok, err := m.Clean()
		switch {
		case err != nil:
			failures = append(failures, err)
		case ok:
			cleaned++
		}
	}
	if len(failures) != 1 || cleaned != 1 {
		t.Fatalf("cleaned %d, failures %v", cleaned, failures)
	}
	if err := failures[0]; !errors.Is(err, kerr.CorruptMessage) || !strings.Contains(err.Error(), "uncleanable") {
		t.Fatalf("failure %v", err)
	}
	if got := m.UncleanablePartitions("/d1"); len(got) != 1 || got[0] != bad {
		t.Fatalf("uncleanable in /d1: %v", got)
	}
	if got := m.UncleanablePartitions("/d2"); len(got) != 0 {
		t.Fatalf("uncleanable in /d2: %v", got)
	}
	if lg.FirstDirtyOffset() != 30 || lb.FirstDirtyOffset() >= 0 {
		t.Fatalf("first dirty: good %d, bad %d", lg.FirstDirtyOffset(), lb.FirstDirtyOffset())
	}
	if lb.Offline() || len(m.OfflineDirs()) != 0 {
		t.Fatal("a corrupt batch is not an I/O error: nothing goes offline")
	}
	// uncleanable-bytes: what the cleaner would clean, the whole first segment
	seg0, err := mem.Stat(lb.Dir() + "/00000000000000000000.log")
	if err != nil {
		t.Fatal(err)
	}
	st := m.Uncleanable()
	if st["/d1"].Partitions != 1 || st["/d1"].Bytes != seg0.Size() || st["/d2"] != (UncleanableStats{}) {
		t.Fatalf("stats %+v, first segment %d bytes", st, seg0.Size())
	}

	// the bad partition is skipped; the good one is cleaned again when dirty
	if ok, err := m.Clean(); ok || err != nil {
		t.Fatalf("pass over an uncleanable partition: %v %v", ok, err)
	}
	dirtyCompacted(t, clk, lg, 30)
	if ok, err := m.Clean(); !ok || err != nil {
		t.Fatalf("clean the good partition again: %v %v", ok, err)
	}
	if ok, err := m.Clean(); ok || err != nil {
		t.Fatalf("nothing left: %v %v", ok, err)
	}

	// compact,delete: retention leaves the uncleanable log alone, not the other
	retain := cfg
	retain.CleanupPolicy = "compact,delete"
	retain.RetentionMs = 1000
	lb.SetConfig(retain)
	lg.SetConfig(retain)
	nb, ng := lb.NumSegments(), lg.NumSegments()
	lb.UpdateHighWatermark(lb.LogEndOffset())
	lg.UpdateHighWatermark(lg.LogEndOffset())
	clk.Advance(time.Hour)
	if err := m.Maintain(); err != nil {
		t.Fatal(err)
	}
	if lb.NumSegments() != nb || lg.NumSegments() >= ng {
		t.Fatalf("retention: uncleanable %d -> %d segments, other %d -> %d", nb, lb.NumSegments(), ng, lg.NumSegments())
	}
	lb.SetConfig(cfg)

	// a truncation keeps the mark (Kafka clears it only with the log)
	if err := lb.Truncate(lb.LogEndOffset() - 1); err != nil {
		t.Fatal(err)
	}
	if got := m.UncleanablePartitions("/d1"); len(got) != 1 {
		t.Fatalf("uncleanable after truncation: %v", got)
	}

	// deleting the partition clears the mark; the partition created again is cleaned
	if err := m.DeleteLog(bad); err != nil {
		t.Fatal(err)
	}
	if got := m.UncleanablePartitions("/d1"); len(got) != 0 {
		t.Fatalf("uncleanable after deletion: %v", got)
	}
	if st := m.Uncleanable(); st["/d1"] != (UncleanableStats{}) {
		t.Fatalf("stats after deletion %+v", st)
	}
	lb2, err := m.GetOrCreateLog(bad, [16]byte{2}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(lb2.Dir(), "/d1/") {
		t.Fatalf("recreated in %s", lb2.Dir())
	}
	dirtyCompacted(t, clk, lb2, 30)
	if ok, err := m.Clean(); !ok || err != nil || lb2.FirstDirtyOffset() != 30 {
		t.Fatalf("clean the recreated partition: %v %v, first dirty %d", ok, err, lb2.FirstDirtyOffset())
	}

	// a log dir going offline clears the marks of its partitions
	dirtyCompacted(t, clk, lb2, 30)
	corruptFirstBatch(t, mem, lb2.Dir()+"/00000000000000000030.log")
	if ok, err := m.Clean(); ok || err == nil {
		t.Fatalf("clean the corrupt recreated partition: %v %v", ok, err)
	}
	if got := m.UncleanablePartitions("/d1"); len(got) != 1 {
		t.Fatalf("uncleanable: %v", got)
	}
	m.FailDir("/d1", errors.New("test"))
	if got := m.UncleanablePartitions("/d1"); len(got) != 0 {
		t.Fatalf("uncleanable in an offline dir: %v", got)
	}
}

// An I/O error while cleaning takes the log dir offline (Kafka's cleanLog catches
// IOException and calls LogDirFailureChannel.maybeAddOfflineLogDir); it does not
// mark the partition uncleanable.
func TestCleanerIOErrorTakesDirOffline(t *testing.T) {
	var sw vfs.Switch
	fs := vfs.NewInjecting(vfs.NewMemFS(), sw.Inject)
	clk := newClock()
	failed := make(chan string, 1)
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now,
		OnDirFailure: func(dir string) { failed <- dir }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreateLog(TopicPartition{"c", 0}, [16]byte{1}, compactCfg())
	if err != nil {
		t.Fatal(err)
	}
	dirtyCompacted(t, clk, l, 30)
	sw.Set(func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpWrite && strings.HasSuffix(op.Path, ".cleaned") {
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	})
	if ok, err := m.Clean(); ok || !errors.Is(err, vfs.ErrInjected) || !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("clean: %v %v", ok, err)
	}
	if dir := <-failed; dir != "/d1" {
		t.Fatalf("failed dir %s", dir)
	}
	if got := m.UncleanablePartitions("/d1"); len(got) != 0 {
		t.Fatalf("an I/O error marked %v uncleanable", got)
	}
}
