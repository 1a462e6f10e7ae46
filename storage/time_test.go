package storage

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func TestFetchOffsetByTimestamp(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, smallCfg())
	defer l.Close()
	base := clk.Ms() - 100000
	// batch i holds timestamps base+10i, base+10i+1, base+10i+2 at offsets 3i..3i+2
	for i := 0; i < 60; i++ {
		mustAppend(t, l.Log, batch(base+int64(10*i), 3), int32(i/30))
	}
	if l.NumSegments() < 3 {
		t.Fatalf("segments %d", l.NumSegments())
	}
	for _, tc := range []struct {
		ts, off int64
	}{
		{0, 0}, {base, 0}, {base + 1, 1}, {base + 3, 3}, {base + 10, 3}, {base + 11, 4},
		{base + 305, 93}, {base + 592, 179},
	} {
		off, ts, _, ok := l.FetchOffsetByTimestamp(tc.ts)
		if !ok || off != tc.off || ts < tc.ts {
			t.Errorf("ts %d: offset %d ts %d ok %v, want %d", tc.ts-base, off, ts-base, ok, tc.off)
		}
	}
	if _, _, _, ok := l.FetchOffsetByTimestamp(base + 593); ok {
		t.Error("no record after the last timestamp")
	}
	_, _, ep, _ := l.FetchOffsetByTimestamp(base + 305)
	if ep != 1 {
		t.Errorf("epoch %d", ep)
	}
	if off, _, ep, _ := l.FetchOffsetByTimestamp(ListOffsetsLatest); off != 180 || ep != 1 {
		t.Errorf("latest %d %d", off, ep)
	}
	if off, _, ep, _ := l.FetchOffsetByTimestamp(ListOffsetsEarliest); off != 0 || ep != 0 {
		t.Errorf("earliest %d %d", off, ep)
	}
	if ts, off := l.LatestTimestamp(); ts != base+592 || off != 179 {
		t.Errorf("max timestamp %d at %d", ts-base, off)
	}
	// a batch whose max timestamp is in its first record
	b := BuildBatch(BatchOptions{}, Record{Value: []byte("a"), Timestamp: base + 1000}, Record{Value: []byte("b"), Timestamp: base + 999})
	mustAppend(t, l.Log, b, 1)
	if ts, off := l.LatestTimestamp(); ts != base+1000 || off != 180 {
		t.Errorf("max timestamp %d at %d", ts-base, off)
	}
}

func TestTimeIndexMaxSoFar(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1 // an entry for every batch after the first
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	now := clk.Ms()
	for _, ts := range []int64{100, 300, 200, 400, 400, 350} {
		mustAppend(t, l.Log, batch(now-100000+ts, 1), 0)
	}
	s := l.mu.segments[0]
	// offset index: every batch but the first; time index: only increasing maxima
	if len(s.idx.entries) != 5 {
		t.Fatalf("offset index %v", s.idx.entries)
	}
	var got [][2]int64
	for _, e := range s.tidx.entries {
		got = append(got, [2]int64{e.ts - now + 100000, int64(e.rel)})
	}
	want := [][2]int64{{300, 1}, {400, 3}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("time index %v want %v", got, want)
	}
}

func TestSegmentRollByTime(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.SegmentMs = 1000
	cfg.SegmentJitterMs = 500
	l := openTest(t, vfs.NewMem(), clk, cfg, func(o *LogOptions) { o.Rand = func(n int64) int64 { return 200 } })
	defer l.Close()
	mustAppend(t, l.Log, batch(clk.Ms(), 1), 0)
	clk.Advance(700 * time.Millisecond)
	mustAppend(t, l.Log, batch(clk.Ms(), 1), 0)
	if l.NumSegments() != 1 {
		t.Fatal("rolled too early")
	}
	clk.Advance(200 * time.Millisecond) // 900 > 1000-200
	mustAppend(t, l.Log, batch(clk.Ms(), 1), 0)
	if l.NumSegments() != 2 {
		t.Fatalf("segments %d, want a roll by segment.ms minus jitter", l.NumSegments())
	}
}

func TestSegmentRollByIndexFull(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1
	cfg.SegmentIndexBytes = 3 * 12 // 4 offset entries, 3 time entries
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	for i := 0; i < 10; i++ {
		mustAppend(t, l.Log, batch(clk.Ms()+int64(i), 1), 0)
	}
	if l.NumSegments() < 2 {
		t.Fatalf("segments %d", l.NumSegments())
	}
	readAll(t, l.Log, 0)
}

func TestLogAppendTimeAndTimestampValidation(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.MessageTimestampType = TimestampLogAppendTime
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	b := batch(5, 3)
	info := mustAppend(t, l.Log, b, 0)
	if info.LogAppendTime != clk.Ms() {
		t.Fatalf("log append time %d", info.LogAppendTime)
	}
	rs, err := DecodeRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Timestamp != clk.Ms() {
			t.Fatalf("record timestamp %d", r.Timestamp)
		}
	}
	cfg = DefaultConfig()
	l.SetConfig(cfg)
	if _, err := l.AppendAsLeader(batch(clk.Ms()+2*3600*1000, 1), 0); !errors.Is(err, kerr.InvalidTimestamp) {
		t.Fatalf("future timestamp: %v", err)
	}
	cfg.CleanupPolicy = "compact"
	l.SetConfig(cfg)
	if _, err := l.AppendAsLeader(BuildBatch(BatchOptions{}, Record{Value: []byte("x"), Timestamp: clk.Ms()}), 0); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("null key on compacted topic: %v", err)
	}
	cfg = DefaultConfig()
	cfg.MaxMessageBytes = 50
	l.SetConfig(cfg)
	if _, err := l.AppendAsLeader(batch(clk.Ms(), 3), 0); !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	l.SetConfig(DefaultConfig())
	ctl := BuildBatch(BatchOptions{Control: true}, Record{Key: ControlRecordKey(2), Value: []byte{0, 0}, Timestamp: clk.Ms()})
	if _, err := l.AppendAsLeaderOrigin(ctl, 0, OriginClient); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("control from client: %v", err)
	}
	mustAppend(t, l.Log, ctl, 0)
}

func TestFlushMessagesGroupCommit(t *testing.T) {
	clk := newClock()
	var syncs atomic.Int64
	gate := make(chan struct{})
	var first sync.Once
	fs := vfs.NewInjecting(vfs.NewMem(), func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpSync && strings.HasSuffix(op.Path, ".log") {
			syncs.Add(1)
			first.Do(func() { <-gate }) // the first fsync is slow
		}
		return vfs.Fault{}
	})
	cfg := DefaultConfig()
	cfg.FlushMessages = 1
	l := openTest(t, fs, clk, cfg)
	defer l.Close()
	var wg sync.WaitGroup
	const n = 64
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := l.AppendAsLeader(batch(clk.Ms(), 1), 0)
			if err != nil {
				t.Error(err)
				return
			}
			// the append is durable when it returns
			if d := l.DurableOffset(); d <= info.LastOffset {
				t.Errorf("returned before fsync: durable %d last %d", d, info.LastOffset)
			}
		}()
	}
	// every append is written while the first fsync is stuck; then one more fsync
	// must serve all the waiting appenders
	for l.LogEndOffset() < n {
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	if l.DurableOffset() != n {
		t.Fatalf("durable offset %d", l.DurableOffset())
	}
	if got := syncs.Load(); got != 2 {
		t.Fatalf("%d fsyncs of the .log for %d appends, want 2 (group commit)", got, n)
	}
	// group commit syncs only the .log; the recovery point (indexes too) moves
	// with full flushes
	if rp := l.RecoveryPoint(); rp != 0 {
		t.Fatalf("recovery point %d before a full flush", rp)
	}
	if err := l.Flush(); err != nil || l.RecoveryPoint() != n {
		t.Fatalf("recovery point %d after Flush: %v", l.RecoveryPoint(), err)
	}
}

// Every append acknowledged under flush.messages=1 survives a power loss (MemFS
// keeps only synced bytes), across rolls and a truncation, and recovery from the
// recovery point rebuilds indexes that were never synced.
func TestFlushMessagesSurvivesCrash(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := smallCfg()
	cfg.FlushMessages = 1
	l := openTest(t, mem, clk, cfg)
	var acked int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				info, err := l.AppendAsLeader(batch(clk.Ms(), 2), 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = max(acked, info.LastOffset+1)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if l.NumSegments() < 3 {
		t.Fatalf("%d segments: the test wants rolls", l.NumSegments())
	}
	// a truncation invalidates the durable point; what is appended after must be
	// synced again
	if err := l.Truncate(acked - 7); err != nil {
		t.Fatal(err)
	}
	acked = l.LogEndOffset()
	mustAppend(t, l.Log, batch(clk.Ms(), 3), 1)
	acked += 3
	if d := l.DurableOffset(); d != acked {
		t.Fatalf("durable %d, acknowledged %d", d, acked)
	}
	rp := l.RecoveryPoint()
	crashed := mem.CrashClone()
	l2 := openTest(t, crashed, clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false; o.RecoveryPoint = rp })
	defer l2.Close()
	if l2.LogEndOffset() != acked {
		t.Fatalf("recovered leo %d, acknowledged %d", l2.LogEndOffset(), acked)
	}
	if got := readAll(t, l2.Log, 0); int64(len(got)) != acked {
		t.Fatalf("%d records, acknowledged %d", len(got), acked)
	}
	for off := int64(0); off < acked; off += 5 {
		if _, err := l2.Read(off, 1, math.MaxInt64, true); err != nil {
			t.Fatalf("read %d after recovery: %v", off, err)
		}
	}
}

func TestFlushMs(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.FlushMs = 1000
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	l.FlushIfDue()
	if l.RecoveryPoint() != 0 {
		t.Fatal("flushed too early")
	}
	clk.Advance(time.Second)
	l.FlushIfDue()
	if l.RecoveryPoint() != 2 {
		t.Fatalf("recovery point %d", l.RecoveryPoint())
	}
}

func TestRetention(t *testing.T) {
	clk := newClock()
	cfg := smallCfg()
	cfg.RetentionMs = 60000
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	for i := 0; i < 60; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	}
	segs := l.NumSegments()
	clk.Advance(2 * time.Minute)
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	// nothing below the high watermark, nothing deleted
	if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
		t.Fatalf("deleted %d with no high watermark: %v", n, err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	n, err := l.DeleteOldSegments()
	if err != nil || n != segs-1 {
		t.Fatalf("deleted %d of %d: %v", n, segs, err)
	}
	if l.LogStartOffset() != l.mu.segments[0].base {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
	if _, err := l.Read(0, 100, math.MaxInt64, true); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("%v", err)
	}
	cfg.RetentionMs = -1
	cfg.RetentionBytes = 0
	l.SetConfig(cfg)
	for i := 0; i < 30; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	}
	// only up to the high watermark: the segments after it stay
	hw := l.mu.segments[2].base
	l.UpdateHighWatermark(hw)
	l.DeleteOldSegments()
	if l.LogStartOffset() != hw {
		t.Fatalf("retention.bytes=0 with the high watermark at %d: log start %d", hw, l.LogStartOffset())
	}
	// retention.bytes=0 with everything replicated: the active segment
	// goes too, rolled first; the log is empty and starts at its end
	l.UpdateHighWatermark(l.LogEndOffset())
	l.DeleteOldSegments()
	if l.NumSegments() != 1 || l.LogStartOffset() != l.LogEndOffset() {
		t.Fatalf("retention.bytes=0 leaves %d segments, log start %d, end %d", l.NumSegments(), l.LogStartOffset(), l.LogEndOffset())
	}
	if n, err := l.DeleteOldSegments(); err != nil || n != 0 {
		t.Fatalf("an empty active segment is deleted: %d, %v", n, err)
	}
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	readAll(t, l.Log, l.LogStartOffset())
}

// VisibleEnd stops before an append that waits for its sync (flush.messages), and
// nothing after it is visible either until the sync is done, as when Kafka flushes
// inside the append under the log's lock.
func TestVisibleEndWaitsForSync(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.FlushMessages = 3
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0) // 2 unflushed: no sync asked for
	if got := l.VisibleEnd(); got != 2 {
		t.Fatalf("visible end %d, want 2", got)
	}
	_, d, err := l.AppendAsLeaderDeferred(batch(clk.Ms(), 2), 0, OriginClient) // 4 unflushed: sync
	if err != nil || !d.Pending() {
		t.Fatalf("pending %v: %v", d.Pending(), err)
	}
	_, d2, err := l.AppendAsLeaderDeferred(batch(clk.Ms(), 1), 0, OriginClient)
	if err != nil {
		t.Fatal(err)
	}
	if got := l.VisibleEnd(); got != 0 {
		t.Fatalf("visible end %d while the sync to 4 is pending, want 0 (nothing synced yet)", got)
	}
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := l.VisibleEnd(); got != 5 {
		t.Fatalf("visible end %d after the sync, want 5", got)
	}
	if err := d2.Wait(); err != nil {
		t.Fatal(err)
	}
	cfg.FlushMessages = math.MaxInt64
	l.SetConfig(cfg)
	mustAppend(t, l.Log, batch(clk.Ms(), 1), 0)
	if got := l.VisibleEnd(); got != 6 {
		t.Fatalf("visible end %d under the default policy", got)
	}
}
