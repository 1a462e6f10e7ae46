package storage

import (
	"errors"
	"math"
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func TestTruncate(t *testing.T) {
	clk := newClock()
	fs := vfs.NewMem()
	cfg := smallCfg()
	l := openTest(t, fs, clk, cfg)
	for i := 0; i < 60; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), int32(i/20)) // epochs 0,1,2 at 0,40,80
	}
	if got := l.EpochEntries(); len(got) != 3 || got[1] != [2]int64{1, 40} || got[2] != [2]int64{2, 80} {
		t.Fatalf("epochs %v", got)
	}
	segs := l.NumSegments()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l.bg.Wait()
	// One descriptor per segment, its .log: index files are open only while
	// written (Kafka keeps one per segment too).
	if open := fs.(*vfs.MemFS).OpenFiles(); open != segs {
		t.Fatalf("%d files open for %d segments", open, segs)
	}
	// truncate into the middle of the log at a batch boundary
	if err := l.Truncate(50); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 50 {
		t.Fatalf("leo %d", l.LogEndOffset())
	}
	if l.NumSegments() >= segs {
		t.Fatalf("segments %d -> %d", segs, l.NumSegments())
	}
	if got := l.EpochEntries(); len(got) != 2 {
		t.Fatalf("epochs after truncate %v", got)
	}
	if ep, end := l.EndOffsetForEpoch(1); ep != 1 || end != 50 {
		t.Fatalf("end offset for latest epoch %d %d", ep, end)
	}
	if got := readAll(t, l.Log, 0); len(got) != 50 {
		t.Fatalf("%d records", len(got))
	}
	// appending continues at 50
	if info := mustAppend(t, l.Log, batch(clk.Ms(), 2), 3); info.FirstOffset != 50 {
		t.Fatalf("append after truncate at %d", info.FirstOffset)
	}
	// truncating at a segment base leaves that segment empty and active
	base := l.mu.segments[len(l.mu.segments)-1].base
	if err := l.Truncate(base); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != base {
		t.Fatalf("leo %d base %d", l.LogEndOffset(), base)
	}
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 3)
	// beyond the end: no-op
	if err := l.Truncate(1000); err != nil || l.LogEndOffset() != base+2 {
		t.Fatalf("%v leo %d", err, l.LogEndOffset())
	}
	l.Close()
	l2 := openTest(t, fs, clk, cfg)
	defer l2.Close()
	if l2.LogEndOffset() != base+2 {
		t.Fatalf("reopen leo %d", l2.LogEndOffset())
	}
	readAll(t, l2.Log, 0)
}

func TestTruncateFullyAndStartAt(t *testing.T) {
	clk := newClock()
	fs := vfs.NewMem()
	l := openTest(t, fs, clk, smallCfg())
	for i := 0; i < 30; i++ {
		mustAppend(t, l.Log, idemBatch(clk.Ms(), 2, 1, 0, int32(i*2)), 1)
	}
	if err := l.TruncateFullyAndStartAt(1000); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 1000 || l.LogEndOffset() != 1000 || l.NumSegments() != 1 {
		t.Fatalf("start %d end %d segs %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
	}
	if _, ok := l.LatestEpoch(); ok {
		t.Fatal("epochs must be cleared")
	}
	if _, err := l.Read(999, 100, math.MaxInt64, true); err == nil {
		t.Fatal("read below start must fail")
	}
	// as a follower: offsets assigned by the leader
	b := batch(clk.Ms(), 3)
	SetBaseOffset(b, 1000)
	SetPartitionLeaderEpoch(b, 5)
	if _, err := l.AppendAsFollower(b); err != nil {
		t.Fatal(err)
	}
	if e, _ := l.LatestEpoch(); e != 5 || l.LogEndOffset() != 1003 {
		t.Fatalf("epoch %d leo %d", e, l.LogEndOffset())
	}
	// a batch below the log end offset is refused
	if _, err := l.AppendAsFollower(b); !errors.Is(err, ErrUnexpectedAppendOffset) {
		t.Fatalf("%v", err)
	}
	l.Close()
	l2 := openTest(t, fs, clk, smallCfg(), func(o *LogOptions) { o.LogStartOffset = 1000 })
	defer l2.Close()
	if l2.LogStartOffset() != 1000 || l2.LogEndOffset() != 1003 {
		t.Fatalf("reopen %d %d", l2.LogStartOffset(), l2.LogEndOffset())
	}
}

func TestFollowerAppend(t *testing.T) {
	clk := newClock()
	leader := openTest(t, vfs.NewMem(), clk, smallCfg())
	defer leader.Close()
	follower := openTest(t, vfs.NewMem(), clk, smallCfg(), func(o *LogOptions) { o.Dir = "/f/topic-0" })
	defer follower.Close()
	for i := 0; i < 40; i++ {
		mustAppend(t, leader.Log, idemBatch(clk.Ms(), 3, 9, 0, int32(i*3)), int32(i/10))
	}
	for off := int64(0); off < leader.LogEndOffset(); {
		b, err := leader.ReadBatches(off, 1<<20, math.MaxInt64, true) // may exceed segment.bytes
		if err != nil {
			t.Fatal(err)
		}
		info, err := follower.AppendAsFollower(b)
		if err != nil {
			t.Fatal(err)
		}
		off = info.LastOffset + 1
	}
	if follower.LogEndOffset() != leader.LogEndOffset() {
		t.Fatalf("leo %d vs %d", follower.LogEndOffset(), leader.LogEndOffset())
	}
	le, fe := leader.EpochEntries(), follower.EpochEntries()
	if len(le) != len(fe) {
		t.Fatalf("epochs %v vs %v", le, fe)
	}
	for i := range le {
		if le[i] != fe[i] {
			t.Fatalf("epochs %v vs %v", le, fe)
		}
	}
	if e, s, ok := follower.ProducerEpoch(9); !ok || e != 0 || s != 119 {
		t.Fatalf("follower producer state %d %d %v", e, s, ok)
	}
	// a corrupted batch is refused
	b, _ := leader.ReadBatches(0, 100, math.MaxInt64, true)
	b = append([]byte(nil), b...)
	SetBaseOffset(b, follower.LogEndOffset())
	b[len(b)-1] ^= 1
	if _, err := follower.AppendAsFollower(b); err == nil {
		t.Fatal("corrupt batch accepted")
	}
}

func TestEpochCache(t *testing.T) {
	c := &epochCache{}
	c.assign(1, 0)
	c.assign(1, 5) // same epoch, later offset: no change
	c.assign(3, 10)
	c.assign(5, 20)
	if len(c.entries) != 3 {
		t.Fatalf("%v", c.entries)
	}
	cases := []struct {
		req int32
		ep  int32
		end int64
	}{
		{-1, -1, -1},
		{0, 0, 0},  // below every epoch: (requested, first start)
		{1, 1, 10}, //
		{2, 1, 10}, // unknown epoch between: floor epoch, next start
		{3, 3, 20},
		{5, 5, 100}, // latest: log end offset
		{6, -1, -1}, // above the latest
	}
	for _, tc := range cases {
		ep, end := c.endOffsetFor(tc.req, 100)
		if ep != tc.ep || end != tc.end {
			t.Errorf("endOffsetFor(%d) = %d,%d want %d,%d", tc.req, ep, end, tc.ep, tc.end)
		}
	}
	// a lower epoch at a higher offset drops the later entries (non-monotonic)
	c.assign(4, 25)
	if l, _ := c.latest(); l.epoch != 4 || len(c.entries) != 3 {
		t.Fatalf("%v", c.entries)
	}
	c.truncateFromStart(12)
	if c.entries[0] != (epochEntry{3, 12}) || len(c.entries) != 2 {
		t.Fatalf("truncateFromStart %v", c.entries)
	}
	c.truncateFromEnd(12)
	if len(c.entries) != 0 {
		t.Fatalf("truncateFromEnd %v", c.entries)
	}
}

// A follower record set larger than segment.bytes is split across segments.
func TestFollowerAppendLargerThanSegment(t *testing.T) {
	clk := newClock()
	leader := openTest(t, vfs.NewMem(), clk, smallCfg())
	defer leader.Close()
	for i := 0; i < 60; i++ {
		mustAppend(t, leader.Log, batch(clk.Ms(), 2), 0)
	}
	var all []byte
	for off := int64(0); off < leader.LogEndOffset(); {
		b, err := leader.ReadBatches(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
		rs, _ := DecodeRecords(b)
		off = rs[len(rs)-1].Offset + 1
	}
	if int64(len(all)) <= smallCfg().SegmentBytes {
		t.Fatalf("only %d bytes", len(all))
	}
	follower := openTest(t, vfs.NewMem(), clk, smallCfg(), func(o *LogOptions) { o.Dir = "/f/t-0" })
	defer follower.Close()
	if _, err := follower.AppendAsFollower(all); err != nil {
		t.Fatal(err)
	}
	if follower.LogEndOffset() != 120 || follower.NumSegments() < 3 {
		t.Fatalf("leo %d segments %d", follower.LogEndOffset(), follower.NumSegments())
	}
	readAll(t, follower.Log, 0)
}

// Truncating inside a batch removes the whole batch: no hole in the log.
func TestTruncateInsideBatch(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, smallCfg())
	defer l.Close()
	for i := 0; i < 3; i++ {
		mustAppend(t, l.Log, batch(clk.Ms(), 3), 0)
	}
	if err := l.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 3 {
		t.Fatalf("leo %d", l.LogEndOffset())
	}
	if info := mustAppend(t, l.Log, batch(clk.Ms(), 1), 0); info.FirstOffset != 3 {
		t.Fatalf("next append at %d", info.FirstOffset)
	}
	readAll(t, l.Log, 0)
}

// A replica that became leader and appended nothing in its epoch has an
// epoch cache entry at its log end offset that the next leader never got.
// Truncating to the log end offset drops it (UnifiedLog.truncateTo), on disk
// too.
func TestTruncateAtLogEndDropsEmptyEpoch(t *testing.T) {
	clk := newClock()
	fs := vfs.NewMem()
	l := openTest(t, fs, clk, smallCfg())
	for range 3 {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	}
	if err := l.AssignEpochStartOffset(1, 6); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate(7); err != nil { // past the end: the same
		t.Fatal(err)
	}
	if got := l.EpochEntries(); len(got) != 1 || got[0] != [2]int64{0, 0} || l.LogEndOffset() != 6 {
		t.Fatalf("epochs %v leo %d", got, l.LogEndOffset())
	}
	if err := l.Truncate(6); err != nil { // nothing left to drop
		t.Fatal(err)
	}
	l.Close()
	l2 := openTest(t, fs, clk, smallCfg())
	defer l2.Close()
	if got := l2.EpochEntries(); len(got) != 1 || got[0] != [2]int64{0, 0} {
		t.Fatalf("epochs after reopen %v", got)
	}
}

// A follower's batch carries the epoch the leader stamped on it: even one
// older than the cache's latest entry is recorded, dropping the entries it
// contradicts (LeaderEpochFileCache.assign on every appended batch).
func TestFollowerAppendAssignsEveryBatchEpoch(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, smallCfg())
	defer l.Close()
	follow := func(epoch int32) {
		t.Helper()
		b := batch(clk.Ms(), 2)
		SetBaseOffset(b, l.LogEndOffset())
		SetPartitionLeaderEpoch(b, epoch)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
	}
	follow(0)
	if err := l.AssignEpochStartOffset(2, 2); err != nil { // led epoch 2, wrote nothing
		t.Fatal(err)
	}
	follow(1) // epoch 1's leader wrote at 2
	if got := l.EpochEntries(); len(got) != 2 || got[1] != [2]int64{1, 2} {
		t.Fatalf("epochs %v, want [[0 0] [1 2]]", got)
	}
	follow(1) // same epoch, later offset: unchanged
	follow(3)
	if got := l.EpochEntries(); len(got) != 3 || got[2] != [2]int64{3, 6} {
		t.Fatalf("epochs %v", got)
	}
}

// Truncating below the log start offset but inside the first segment keeps
// the segment and moves the log start offset down (UnifiedLog.truncateTo:
// only below the first segment's base is the log truncated fully).
func TestTruncateBelowLogStartInFirstSegment(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, smallCfg())
	defer l.Close()
	for range 4 {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	}
	if err := l.IncrementLogStartOffset(5); err != nil {
		t.Fatal(err)
	}
	if err := l.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 4 || l.LogEndOffset() != 4 || l.NumSegments() != 1 {
		t.Fatalf("start %d end %d segments %d", l.LogStartOffset(), l.LogEndOffset(), l.NumSegments())
	}
	if got := readAll(t, l.Log, 4); len(got) != 0 {
		t.Fatalf("read %v", got)
	}
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	if got := readAll(t, l.Log, 4); len(got) != 2 || got[0].Offset != 4 {
		t.Fatalf("read %v", got)
	}
}
