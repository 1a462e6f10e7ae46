package storage

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func compactCfg() Config {
	c := DefaultConfig()
	c.CleanupPolicy = "compact"
	c.SegmentBytes = 1 << 20
	c.IndexIntervalBytes = 100
	c.DeleteRetentionMs = 1000
	c.MinCleanableDirtyRatio = 1e-9
	return c
}

// kv builds one batch of keyed records; a value "" is a tombstone.
func kv(ts int64, pairs ...string) []byte {
	var rs []Record
	for i := 0; i+1 < len(pairs); i += 2 {
		r := Record{Key: []byte(pairs[i]), Timestamp: ts}
		if pairs[i+1] != "" {
			r.Value = []byte(pairs[i+1])
		}
		rs = append(rs, r)
	}
	return BuildBatch(BatchOptions{}, rs...)
}

func cleanLog(t *testing.T, l *Log) CleanerStats {
	t.Helper()
	st, err := l.cleanOnce(newOffsetMap(1<<20, 0.9), 4096, func(int) {}, -1)
	if err != nil {
		t.Fatalf("clean: %v", err)
	}
	return st
}

// dump renders every record as offset:key=value (value <nil> for a tombstone).
func dump(t *testing.T, l *Log) string {
	t.Helper()
	var b strings.Builder
	for _, r := range readAll(t, l, l.LogStartOffset()) {
		v := "<nil>"
		if r.Value != nil {
			v = string(r.Value)
		}
		fmt.Fprintf(&b, "%d:%s=%s ", r.Offset, r.Key, v)
	}
	return strings.TrimSpace(b.String())
}

func TestCompactionKeepsLatestValue(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, compactCfg())
	defer l.Close()
	ts := clk.Ms()
	mustAppend(t, l.Log, kv(ts, "a", "1", "b", "1"), 0) // 0-1
	mustAppend(t, l.Log, kv(ts, "a", "2"), 0)           // 2
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "c", "1", "b", "2"), 0) // 3-4
	mustAppend(t, l.Log, kv(ts, "a", "3", "d", "1"), 0) // 5-6
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "a", "4"), 0) // 7: active, never cleaned
	st := cleanLog(t, l.Log)
	if st.EndOffset != 7 || st.Groups != 1 {
		t.Fatalf("stats %+v", st)
	}
	// the last batch of the group (5-6) stays; the active segment is untouched
	if got, want := dump(t, l.Log), "3:c=1 4:b=2 5:a=3 6:d=1 7:a=4"; got != want {
		t.Fatalf("after cleaning\n got %s\nwant %s", got, want)
	}
	if l.NumSegments() != 2 || l.FirstDirtyOffset() != 7 {
		t.Fatalf("%d segments, first dirty %d", l.NumSegments(), l.FirstDirtyOffset())
	}
	// batches keep their base offsets; a partly kept batch keeps its offset range
	raw, _ := l.ReadBatches(0, 1<<20, 1<<62, true)
	var bases []string
	WalkBatches(raw, true, func(h BatchHeader, _ []byte) error {
		bases = append(bases, fmt.Sprintf("%d+%d/%d", h.BaseOffset, h.LastOffsetDelta, h.NumRecords))
		return nil
	})
	if got := strings.Join(bases, " "); got != "3+1/2 5+1/2" {
		t.Fatalf("batches %s", got)
	}
	// the log still appends, and reopens (indexes rebuilt or loaded) the same
	mustAppend(t, l.Log, kv(ts, "e", "1"), 0)
	want := dump(t, l.Log)
	l.Close()
	l2 := openTest(t, l.fs, clk, compactCfg(), func(o *LogOptions) { o.HadCleanShutdown = false })
	defer l2.Close()
	if got := dump(t, l2.Log); got != want {
		t.Fatalf("after reopen %s, want %s", got, want)
	}
}

func TestCompactionRewritesBatchKeepingProducer(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, compactCfg())
	defer l.Close()
	ts := clk.Ms()
	for c := CompressionNone; c <= CompressionZstd; c++ {
		b := BuildBatch(BatchOptions{Compression: c, Producer: &BatchProducer{ID: 42, Epoch: 3, BaseSequence: int32(c) * 3}},
			Record{Key: []byte("x" + c.String()), Value: []byte("old"), Timestamp: ts},
			Record{Key: []byte("y" + c.String()), Value: []byte("keep"), Timestamp: ts + 5, Headers: []RecordHeader{{Key: "h", Value: []byte("v")}}},
			Record{Key: []byte("x" + c.String()), Value: []byte("new"), Timestamp: ts + 9})
		mustAppend(t, l.Log, b, 0)
	}
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "z", "1"), 0)
	cleanLog(t, l.Log)
	raw, _ := l.ReadBatches(0, 1<<20, 1<<62, true)
	i := 0
	err := WalkBatches(raw, true, func(h BatchHeader, b []byte) error {
		if h.ProducerID != 42 || h.ProducerEpoch != 3 || h.BaseSequence != int32(i)*3 || h.LastOffsetDelta != 2 ||
			h.BaseOffset != int64(i)*3 || h.Compression() != Compression(i) {
			return fmt.Errorf("batch %d header %+v", i, h)
		}
		rs, err := DecodeRecords(b)
		if err != nil {
			return err
		}
		if len(rs) != 2 || string(rs[0].Value) != "keep" || rs[0].Timestamp != ts+5 || rs[0].Offset != h.BaseOffset+1 ||
			len(rs[0].Headers) != 1 || string(rs[1].Value) != "new" || rs[1].Timestamp != ts+9 {
			return fmt.Errorf("batch %d records %+v", i, rs)
		}
		if h.MaxTimestamp != ts+9 {
			return fmt.Errorf("batch %d max timestamp %d", i, h.MaxTimestamp)
		}
		i++
		return nil
	})
	if err != nil || i != 5 {
		t.Fatalf("%d batches: %v", i, err)
	}
}

func TestCompactionTombstoneDeleteHorizon(t *testing.T) {
	clk := newClock()
	cfg := compactCfg()
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	ts := clk.Ms()
	mustAppend(t, l.Log, kv(ts, "a", "1", "b", "1"), 0) // 0-1
	mustAppend(t, l.Log, kv(ts, "a", ""), 0)            // 2: tombstone for a
	mustAppend(t, l.Log, kv(ts, "c", "1"), 0)           // 3
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "d", "1"), 0) // 4
	cleanLog(t, l.Log)
	if got, want := dump(t, l.Log), "1:b=1 2:a=<nil> 3:c=1 4:d=1"; got != want {
		t.Fatalf("first cleaning\n got %s\nwant %s", got, want)
	}
	raw, _ := l.ReadBatches(2, 1<<20, 3, true)
	h, _ := ParseBatchHeader(raw)
	if hz, ok := deleteHorizon(h); !ok || hz != clk.Ms()+cfg.DeleteRetentionMs {
		t.Fatalf("delete horizon %d %v (attrs %x)", hz, ok, h.Attributes)
	}
	// before the horizon the tombstone stays, after it it goes
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "e", "1"), 0) // 5
	cleanLog(t, l.Log)
	if got := dump(t, l.Log); !strings.Contains(got, "2:a=<nil>") {
		t.Fatalf("tombstone removed before its horizon: %s", got)
	}
	clk.Advance(time.Duration(cfg.DeleteRetentionMs) * time.Millisecond)
	l.setFirstDirty(0) // clean everything again (as after a restart without a checkpoint)
	cleanLog(t, l.Log)
	if got, want := dump(t, l.Log), "1:b=1 3:c=1 4:d=1 5:e=1"; got != want {
		t.Fatalf("after the horizon\n got %s\nwant %s", got, want)
	}
}

func TestCompactionTransactions(t *testing.T) {
	clk := newClock()
	cfg := compactCfg()
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	ts := clk.Ms()
	tb := func(pid int64, seq int32, pairs ...string) []byte {
		var rs []Record
		for i := 0; i+1 < len(pairs); i += 2 {
			rs = append(rs, Record{Key: []byte(pairs[i]), Value: []byte(pairs[i+1]), Timestamp: ts})
		}
		return BuildBatch(BatchOptions{Transactional: true, Producer: &BatchProducer{ID: pid, Epoch: 0, BaseSequence: seq}}, rs...)
	}
	mustAppend(t, l.Log, tb(7, 0, "a", "aborted"), 0)     // 0
	mustAppend(t, l.Log, tb(8, 0, "b", "committed"), 0)   // 1
	mustAppend(t, l.Log, marker(ts, 7, ControlAbort), 0)  // 2
	mustAppend(t, l.Log, marker(ts, 8, ControlCommit), 0) // 3
	mustAppend(t, l.Log, kv(ts, "a", "plain"), 0)         // 4
	mustAppend(t, l.Log, kv(ts, "c", "1"), 0)             // 5
	l.Roll()
	mustAppend(t, l.Log, kv(ts, "z", "1"), 0) // 6
	l.UpdateHighWatermark(l.LogEndOffset())
	// producers 7 and 8 are still active: their last batches stay (emptied if need be)
	cleanLog(t, l.Log)
	if got, want := dump(t, l.Log), "1:b=committed 2:<nil>=? 3:<nil>=? 4:a=plain 5:c=1 6:z=1"; !sameIgnoringMarkers(got, want) {
		t.Fatalf("after cleaning\n got %s\nwant %s", got, want)
	}
	// the aborted data went, so the abort marker stays with its txn index entry
	if got := l.AbortedTransactions(0, 100); len(got) != 1 || got[0].ProducerID != 7 {
		t.Fatalf("aborted txns %+v", got)
	}
	// while producer 7 is active its last (emptied) batch stays, and so does the
	// marker; once it expired the batch goes, the next cleaning finds no data of
	// the transaction and gives the marker a delete horizon, after which it goes
	clk.Advance(time.Duration(cfg.ProducerIDExpirationMs+1) * time.Millisecond)
	l.Maintain()
	l.setFirstDirty(0)
	cleanLog(t, l.Log)
	if got := l.AbortedTransactions(0, 100); len(got) != 1 {
		t.Fatalf("aborted txns while data went %+v", got)
	}
	l.setFirstDirty(0)
	cleanLog(t, l.Log)
	if got := l.AbortedTransactions(0, 100); len(got) != 0 {
		t.Fatalf("aborted txns without data %+v", got)
	}
	raw, _ := l.ReadBatches(0, 1<<20, 6, true)
	horizons := 0
	WalkBatches(raw, true, func(h BatchHeader, _ []byte) error {
		if _, ok := deleteHorizon(h); ok && h.IsControl() {
			horizons++
		}
		return nil
	})
	// the commit marker stays while data of its transaction does
	if horizons != 1 {
		t.Fatalf("%d markers with a delete horizon", horizons)
	}
	clk.Advance(time.Duration(cfg.DeleteRetentionMs+1) * time.Millisecond)
	l.setFirstDirty(0)
	cleanLog(t, l.Log)
	raw, _ = l.ReadBatches(0, 1<<20, 6, true)
	WalkBatches(raw, true, func(h BatchHeader, _ []byte) error {
		if h.IsControl() && h.NumRecords > 0 && h.ProducerID == 7 {
			t.Errorf("abort marker at %d kept after its horizon", h.BaseOffset)
		}
		return nil
	})
}

// sameIgnoringMarkers compares dumps where "?" stands for control records.
func sameIgnoringMarkers(got, want string) bool {
	g, w := strings.Fields(got), strings.Fields(want)
	var gg, ww []string
	for _, f := range g {
		if !strings.Contains(f, "\x00") {
			gg = append(gg, f)
		}
	}
	for _, f := range w {
		if !strings.HasSuffix(f, "=?") {
			ww = append(ww, f)
		}
	}
	return strings.Join(gg, " ") == strings.Join(ww, " ")
}

func TestCompactionLagsAndRatio(t *testing.T) {
	clk := newClock()
	cfg := compactCfg()
	cfg.MinCompactionLagMs = 60000
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	mustAppend(t, l.Log, kv(clk.Ms(), "a", "1"), 0)
	mustAppend(t, l.Log, kv(clk.Ms(), "a", "2"), 0)
	l.Roll()
	mustAppend(t, l.Log, kv(clk.Ms(), "a", "3"), 0)
	if st := cleanLog(t, l.Log); st.EndOffset != 0 {
		t.Fatalf("cleaned a segment younger than min.compaction.lag.ms: %+v", st)
	}
	clk.Advance(2 * time.Minute)
	cleanLog(t, l.Log)
	if got := dump(t, l.Log); got != "1:a=2 2:a=3" {
		t.Fatalf("got %s", got)
	}
	// ratio: half of the log dirty
	l.mu.RLock()
	ci := l.cleanableLocked(clk.Ms(), -1)
	l.mu.RUnlock()
	if ci.dirtyBytes != 0 || ci.ratio != 0 {
		t.Fatalf("nothing is dirty: %+v", ci)
	}
}

func TestCompactionOffsetMapFull(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, compactCfg())
	defer l.Close()
	ts := clk.Ms()
	for i := range 20 {
		mustAppend(t, l.Log, kv(ts, fmt.Sprintf("k%d", i%10), fmt.Sprint(i)), 0)
		if i%5 == 4 {
			l.Roll()
		}
	}
	mustAppend(t, l.Log, kv(ts, "z", "z"), 0)
	// room for 4 keys: the map stops inside the first segment, the rest stays dirty
	om := newOffsetMap(4*24, 1)
	st, err := l.cleanOnce(om, 4096, func(int) {}, -1)
	if err != nil {
		t.Fatal(err)
	}
	if st.EndOffset != 4 || l.FirstDirtyOffset() != 4 {
		t.Fatalf("end %d, first dirty %d", st.EndOffset, l.FirstDirtyOffset())
	}
	for l.FirstDirtyOffset() < 20 {
		if _, err := l.cleanOnce(om, 4096, func(int) {}, -1); err != nil {
			t.Fatal(err)
		}
	}
	cleanLog(t, l.Log)
	if got, want := dump(t, l.Log), "10:k0=10 11:k1=11 12:k2=12 13:k3=13 14:k4=14 15:k5=15 16:k6=16 17:k7=17 18:k8=18 19:k9=19 20:z=z"; got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// The swap is crash-safe: a failure at any file operation of a cleaning, followed
// by a crash, reopens to the log before or after the cleaning, nothing else.
func TestCleanSwapCrashAtEveryStep(t *testing.T) {
	clk := newClock()
	cfg := compactCfg()
	build := func() (*vfs.MemFS, *testLog) {
		mem := vfs.NewMemFS()
		l := openTest(t, mem, clk, cfg)
		ts := clk.Ms()
		for i := range 30 {
			b := kv(ts, fmt.Sprintf("k%d", i%7), fmt.Sprint(i))
			if i%9 == 0 {
				b = kv(ts, fmt.Sprintf("k%d", i%7), "")
			}
			mustAppend(t, l.Log, b, 0)
			if i%10 == 9 {
				l.Roll()
			}
		}
		mustAppend(t, l.Log, kv(ts, "last", "1"), 0)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		return mem, l
	}
	mem, l := build()
	before := dump(t, l.Log)
	cleanLog(t, l.Log)
	after := dump(t, l.Log)
	l.Close()
	reopen := func(fs vfs.FS, leo int64) *testLog {
		return openTest(t, fs, clk, cfg, func(o *LogOptions) {
			o.HadCleanShutdown = false
			o.RecoveryPoint = leo
		})
	}
	l2 := reopen(mem.CrashClone(), 31)
	if got := dump(t, l2.Log); got != after {
		t.Fatalf("clean run after a crash\n got %s\nwant %s", got, after)
	}
	l2.Close()
	if before == after {
		t.Fatal("the cleaning changed nothing")
	}
	mutating := map[vfs.OpKind]bool{vfs.OpWrite: true, vfs.OpSync: true, vfs.OpRename: true, vfs.OpRemove: true,
		vfs.OpSyncDir: true, vfs.OpTruncate: true, vfs.OpOpen: true}
	sawBefore, sawAfter := false, false
	for n := 1; ; n++ {
		mem := vfs.NewMemFS()
		var sw vfs.Switch
		fs := vfs.NewInjecting(mem, sw.Inject)
		l := openTest(t, fs, clk, cfg)
		ts := clk.Ms()
		for i := range 30 {
			b := kv(ts, fmt.Sprintf("k%d", i%7), fmt.Sprint(i))
			if i%9 == 0 {
				b = kv(ts, fmt.Sprintf("k%d", i%7), "")
			}
			mustAppend(t, l.Log, b, 0)
			if i%10 == 9 {
				l.Roll()
			}
		}
		mustAppend(t, l.Log, kv(ts, "last", "1"), 0)
		if err := l.Flush(); err != nil {
			t.Fatal(err)
		}
		count, failed := 0, false
		var where vfs.Op
		sw.Set(func(op vfs.Op) vfs.Fault {
			if !mutating[op.Kind] || failed {
				return vfs.Fault{}
			}
			count++
			if count == n {
				failed, where = true, op
				return vfs.Fault{Err: vfs.ErrInjected}
			}
			return vfs.Fault{}
		})
		_, err := l.cleanOnce(newOffsetMap(1<<20, 0.9), 4096, func(int) {}, -1)
		sw.Set(nil)
		if !failed {
			if err != nil {
				t.Fatal(err)
			}
			l.Close()
			t.Logf("a failure and crash at each of the %d file operations of the cleaning reopened to the log before or after it", n-1)
			break
		}
		if err == nil {
			t.Fatalf("step %d (%v %s): the injected fault was swallowed", n, where.Kind, where.Path)
		}
		crashed := mem.CrashClone()
		l.Close()
		l2 := reopen(crashed, 31)
		got := dump(t, l2.Log)
		switch got {
		case before:
			sawBefore = true
		case after:
			sawAfter = true
		default:
			t.Fatalf("step %d (%v %s): reopened to\n%s\nneither before\n%s\nnor after\n%s", n, where.Kind, where.Path, got, before, after)
		}
		ents, _ := crashed.ReadDir(l2.dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), swapSuffix) || strings.HasSuffix(e.Name(), cleanedSuffix) {
				t.Fatalf("step %d: %s left behind", n, e.Name())
			}
		}
		// the reopened log works
		mustAppend(t, l2.Log, kv(ts, "x", "1"), 0)
		l2.Close()
	}
	if !sawBefore || !sawAfter {
		t.Fatalf("crash points covered before=%v after=%v", sawBefore, sawAfter)
	}
}

func TestManagerCleanerAndCheckpoint(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock()
	opts := ManagerOptions{FS: fs, LogDirs: []string{"/d1"}, Now: clk.Now}
	m, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := compactCfg()
	cfg.MinCleanableDirtyRatio = 0.5
	l, err := m.GetOrCreateLog(TopicPartition{"c", 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := m.GetOrCreateLog(TopicPartition{"p", 0}, [16]byte{2}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		mustAppend(t, l, kv(clk.Ms(), "k", fmt.Sprint(i)), 0)
		mustAppend(t, plain, kv(clk.Ms(), "k", fmt.Sprint(i)), 0)
	}
	l.Roll()
	plain.Roll()
	mustAppend(t, l, kv(clk.Ms(), "k", "last"), 0)
	if ok, err := m.Clean(); !ok || err != nil {
		t.Fatalf("clean: %v %v", ok, err)
	}
	if ok, _ := m.Clean(); ok {
		t.Fatal("cleaned again with nothing dirty")
	}
	if plain.LogEndOffset() != 50 || len(readAll(t, plain, 0)) != 50 {
		t.Fatal("a delete-policy log was cleaned")
	}
	data, _ := vfs.ReadFile(fs, "/d1/"+CleanerCheckpointFile)
	if string(data) != "0\n1\nc 0 50\n" {
		t.Fatalf("checkpoint %q", data)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m2, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	l2, _ := m2.Log(TopicPartition{"c", 0})
	if l2.FirstDirtyOffset() != 50 {
		t.Fatalf("first dirty after reopen %d", l2.FirstDirtyOffset())
	}
	if got := readAll(t, l2, 0); len(got) != 2 || string(got[0].Value) != "49" {
		t.Fatalf("records %+v", got)
	}
}

func TestThrottler(t *testing.T) {
	clk := newClock()
	var slept time.Duration
	th := newThrottler(1000, clk.Now, func(d time.Duration) { slept += d; clk.Advance(d) })
	th.take(100)
	clk.Advance(400 * time.Millisecond)
	th.take(900) // 1000 bytes in 0.4 s at 1000 B/s: sleep 0.6 s
	if slept != 600*time.Millisecond {
		t.Fatalf("slept %v", slept)
	}
	newThrottler(0, clk.Now, func(time.Duration) { t.Fatal("unlimited throttled") }).take(1 << 30)
}

func TestLogDirOffline(t *testing.T) {
	mem := vfs.NewMemFS()
	var sw vfs.Switch
	fs := vfs.NewInjecting(mem, sw.Inject)
	clk := newClock()
	failed := make(chan string, 2)
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now,
		OnDirFailure: func(dir string) { failed <- dir }})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.GetOrCreateLog(TopicPartition{"t", 0}, [16]byte{1}, DefaultConfig()) // /d1
	b, _ := m.GetOrCreateLog(TopicPartition{"t", 1}, [16]byte{1}, DefaultConfig()) // /d2
	c, _ := m.GetOrCreateLog(TopicPartition{"t", 2}, [16]byte{1}, DefaultConfig()) // /d1
	for _, l := range []*Log{a, b, c} {
		mustAppend(t, l, batch(clk.Ms(), 2), 0)
	}
	sw.Set(func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpWrite && strings.HasPrefix(op.Path, "/d1/t-0/") {
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	})
	_, err = a.AppendAsLeader(batch(clk.Ms(), 1), 0)
	if !errors.Is(err, errKafkaStorage) || !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("append error %v", err)
	}
	if dir := <-failed; dir != "/d1" {
		t.Fatalf("failed dir %s", dir)
	}
	sw.Set(nil)
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != "/d1" {
		t.Fatalf("offline dirs %v", got)
	}
	// every log in the dir stops serving; the other dir goes on
	if _, err := c.Read(0, 1<<20, 1<<62, true); !errors.Is(err, errKafkaStorage) {
		t.Fatalf("read from the offline dir: %v", err)
	}
	if _, err := a.AppendAsLeader(batch(clk.Ms(), 1), 0); !errors.Is(err, errKafkaStorage) {
		t.Fatalf("append to the offline dir: %v", err)
	}
	mustAppend(t, b, batch(clk.Ms(), 1), 0)
	// new logs go to the online dir
	d, err := m.GetOrCreateLog(TopicPartition{"t", 3}, [16]byte{1}, DefaultConfig())
	if err != nil || !strings.HasPrefix(d.Dir(), "/d2/") {
		t.Fatalf("new log in %v: %v", d, err)
	}
	if err := m.Maintain(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat("/d1/" + CleanShutdownFile); err == nil {
		t.Fatal("clean-shutdown marker in the offline dir")
	}
	// a restart recovers the dir: nothing acknowledged before the failure is lost
	m2, err := OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	a2, _ := m2.Log(TopicPartition{"t", 0})
	if got := readAll(t, a2, 0); len(got) != 2 {
		t.Fatalf("after restart %d records", len(got))
	}
}

// Cleaning runs alongside appends, reads, rolls and truncations: a cleaning the
// log changed under gives up, and the latest value of every key is always there.
func TestCompactionConcurrent(t *testing.T) {
	clk := newClock()
	cfg := compactCfg()
	cfg.SegmentBytes = 4096
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	const keys = 20
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(2)
	go func() { // cleaner
		defer wg.Done()
		om := newOffsetMap(1<<20, 0.9)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := l.cleanOnce(om, 4096, func(int) {}, -1); err != nil && !errors.Is(err, errCleaningAborted) {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // reader
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			from := l.LogStartOffset()
			if b, err := l.ReadBatches(from, 1<<20, 1<<62, true); err == nil {
				if _, err := DecodeRecords(b); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	latest := map[string]string{}
	for i := range 3000 {
		k, v := fmt.Sprintf("k%d", i%keys), fmt.Sprint(i)
		mustAppend(t, l.Log, kv(clk.Ms(), k, v), 0)
		latest[k] = v
		if i%500 == 499 {
			// a follower-style truncation of the last few records
			leo := l.LogEndOffset()
			if err := l.Truncate(leo - 3); err != nil {
				t.Fatal(err)
			}
			for j := int64(3); j > 0; j-- {
				k, v := fmt.Sprintf("k%d", (leo-j)%keys), fmt.Sprintf("re%d", leo-j)
				mustAppend(t, l.Log, kv(clk.Ms(), k, v), 0)
				latest[k] = v
			}
		}
	}
	close(done)
	wg.Wait()
	cleanLog(t, l.Log)
	got := map[string]string{}
	for _, r := range readAll(t, l.Log, l.LogStartOffset()) {
		got[string(r.Key)] = string(r.Value)
	}
	for k, v := range latest {
		if got[k] != v {
			t.Errorf("key %s: %q, want %q", k, got[k], v)
		}
	}
	if n := len(readAll(t, l.Log, l.LogStartOffset())); n > 10*keys {
		t.Errorf("%d records left for %d keys", n, keys)
	}
}

// Kafka creates cleaner-offset-checkpoint empty before its first write.
func TestEmptyCheckpointFile(t *testing.T) {
	fs := vfs.NewMem()
	fs.MkdirAll("/d", 0o755)
	f, _ := fs.Create("/d/" + CleanerCheckpointFile)
	f.Close()
	m, err := readOffsetCheckpoint(fs, "/d/"+CleanerCheckpointFile)
	if err != nil || len(m) != 0 {
		t.Fatalf("%v %v", m, err)
	}
}

// The cleaner stays below the high watermark the log is told about.
func TestCleanerHighWatermarkBound(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock()
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, _ := m.GetOrCreateLog(TopicPartition{"c", 0}, [16]byte{1}, compactCfg())
	l.UpdateHighWatermark(3)
	for i := range 6 {
		mustAppend(t, l, kv(clk.Ms(), "k", fmt.Sprint(i)), 0)
		if i == 2 {
			l.Roll()
		}
	}
	l.Roll()
	mustAppend(t, l, kv(clk.Ms(), "k", "active"), 0)
	if ok, err := m.Clean(); !ok || err != nil {
		t.Fatalf("clean %v %v", ok, err)
	}
	if got := l.FirstDirtyOffset(); got != 3 {
		t.Fatalf("first dirty %d, want the high watermark 3", got)
	}
	if got := dump(t, l); got != "2:k=2 3:k=3 4:k=4 5:k=5 6:k=active" {
		t.Fatalf("got %s", got)
	}
}

// The cleaner on transactions written as a produce and WriteTxnMarkers write
// them (verified data, BuildEndTxnMarker markers), spanning segments and
// interleaved (Cleaner / CleanedTransactionMetadata): aborted data goes at
// once, its marker (with the cleaned segment's .txnindex entry) only when no
// data of its transaction is left and delete.retention.ms has passed since
// it got its delete horizon; a commit marker likewise once its data was
// superseded. Open transactions are never cleaned (the first unstable offset
// bounds the cleaning).
func TestCompactionRealMarkers(t *testing.T) {
	clk := newClock()
	cfg := compactCfg()
	cfg.ProducerIDExpirationMs = 1000
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	ts := clk.Ms()
	tx := func(pid int64, seq int32, key, val string) []byte {
		return BuildBatch(BatchOptions{Transactional: true, Producer: &BatchProducer{ID: pid, Epoch: 0, BaseSequence: seq}},
			Record{Key: []byte(key), Value: []byte(val), Timestamp: ts})
	}
	verified(t, l.Log, tx(1, 0, "a", "aborted1"))  // 0
	verified(t, l.Log, tx(2, 0, "b", "committed")) // 1
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	verified(t, l.Log, tx(1, 1, "c", "aborted2"))                     // 2
	if err := writeMarker(l.Log, ts, 1, 0, false, 3, 0); err != nil { // 3 abort p1
		t.Fatal(err)
	}
	if err := writeMarker(l.Log, ts, 2, 0, true, 3, 0); err != nil { // 4 commit p2
		t.Fatal(err)
	}
	mustAppend(t, l.Log, kv(ts, "b", "newer"), 0) // 5 supersedes p2's record
	verified(t, l.Log, tx(3, 0, "d", "open"))     // 6 stays open
	mustAppend(t, l.Log, kv(ts, "e", "1"), 0)     // 7
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l.Log, kv(ts, "z", "1"), 0) // 8
	l.UpdateHighWatermark(l.LogEndOffset())
	// the producers are gone, so none of their last batches must stay
	clk.Advance(1001 * time.Millisecond)
	l.Maintain()
	if ps := l.ActiveProducers(); len(ps) != 1 || ps[0].ProducerID != 3 {
		t.Fatalf("producers %+v", ps)
	}
	markers := func() map[int64]bool { // marker offset -> has a delete horizon
		out := map[int64]bool{}
		raw, _ := l.ReadBatches(0, 1<<20, l.LogEndOffset(), true)
		WalkBatches(raw, true, func(h BatchHeader, raw []byte) error {
			if _, _, ok := ParseEndTxnMarker(h, raw); ok {
				_, out[h.BaseOffset] = deleteHorizon(h)
			}
			return nil
		})
		return out
	}
	st := cleanLog(t, l.Log)
	if st.EndOffset != 6 {
		t.Fatalf("cleaned up to %d, want the open transaction's start 6", st.EndOffset)
	}
	if got, want := dump(t, l.Log), "3:?=? 4:?=? 5:b=newer 6:d=open 7:e=1 8:z=1"; !sameIgnoringMarkers(got, want) {
		t.Fatalf("first cleaning\n got %s\nwant %s", got, want)
	}
	if m := markers(); len(m) != 2 || m[3] || m[4] {
		t.Fatalf("markers after the first cleaning %v", m)
	}
	// the abort is still indexed, now in the cleaned segment
	if got := l.AbortedTransactions(0, 100); len(got) != 1 || got[0].ProducerID != 1 || got[0].FirstOffset != 0 || got[0].LastOffset != 3 {
		t.Fatalf("aborted %+v", got)
	}
	// no data of either transaction is left: both markers get a horizon
	l.setFirstDirty(0)
	cleanLog(t, l.Log)
	if m := markers(); len(m) != 2 || !m[3] || !m[4] {
		t.Fatalf("markers after the second cleaning %v", m)
	}
	if got := l.AbortedTransactions(0, 100); len(got) != 0 {
		t.Fatalf("aborted after its data went %+v", got)
	}
	// before delete.retention.ms they stay, after it they go
	clk.Advance(time.Duration(cfg.DeleteRetentionMs-1) * time.Millisecond)
	l.setFirstDirty(0)
	cleanLog(t, l.Log)
	if m := markers(); len(m) != 2 {
		t.Fatalf("markers removed before their horizon %v", m)
	}
	clk.Advance(2 * time.Millisecond)
	l.setFirstDirty(0)
	cleanLog(t, l.Log)
	if m := markers(); len(m) != 0 {
		t.Fatalf("markers kept after their horizon %v", m)
	}
	if got := dump(t, l.Log); got != "5:b=newer 6:d=open 7:e=1 8:z=1" {
		t.Fatalf("final %s", got)
	}
}

// log.cleaner.threads and the other log.cleaner.* keys changed at run time
// (KIP-226, LogCleaner.reconfigure) restart the cleaner threads with the
// new settings; the cleaner still cleans afterwards.
func TestReconfigureCleaner(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock()
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1"}, Now: clk.Now,
		Cleaner: CleanerOptions{Threads: 1, BackoffMs: 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.ReconfigureCleaner(CleanerOptions{Threads: 3}) // before Start: options only
	if n := m.CleanerThreads(); n != 0 {
		t.Fatalf("%d cleaner threads before Start", n)
	}
	m.Start(time.Hour)
	if n := m.CleanerThreads(); n != 3 {
		t.Fatalf("%d cleaner threads after Start, want 3", n)
	}
	m.ReconfigureCleaner(CleanerOptions{Threads: 2, BackoffMs: 10, DedupeBufferSize: 4 << 20})
	if n := m.CleanerThreads(); n != 2 {
		t.Fatalf("%d cleaner threads after reconfiguring to 2", n)
	}
	cfg := compactCfg()
	cfg.MinCleanableDirtyRatio = 0.01
	l, err := m.GetOrCreateLog(TopicPartition{"c", 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		mustAppend(t, l, kv(clk.Ms(), "k", fmt.Sprint(i)), 0)
	}
	l.Roll()
	mustAppend(t, l, kv(clk.Ms(), "k", "last"), 0)
	deadline := time.Now().Add(10 * time.Second)
	for l.FirstDirtyOffset() < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("the reconfigured cleaner did not clean: first dirty %d", l.FirstDirtyOffset())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
