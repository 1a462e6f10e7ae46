package storage

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func TestLogAppendRead(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, DefaultConfig())
	defer l.Close()
	for i := 0; i < 10; i++ {
		info := mustAppend(t, l.Log, batch(clk.Ms(), 3), 1)
		if info.FirstOffset != int64(i*3) || info.LastOffset != int64(i*3+2) {
			t.Fatalf("append %d: offsets %d..%d", i, info.FirstOffset, info.LastOffset)
		}
	}
	if leo := l.LogEndOffset(); leo != 30 {
		t.Fatalf("leo %d", leo)
	}
	got := readAll(t, l.Log, 0)
	if len(got) != 30 {
		t.Fatalf("read %d records", len(got))
	}
	for i, r := range got {
		if r.Offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, r.Offset)
		}
	}
	// read from the middle of a batch returns the whole batch
	ri, err := l.Read(4, 1<<20, 1<<62, false)
	if err != nil || ri.FirstBatchOffset != 3 {
		t.Fatalf("read 4: %v first %d", err, ri.FirstBatchOffset)
	}
	// maxOffset excludes batches starting at or after it
	ri, _ = l.Read(0, 1<<20, 6, false)
	b, _ := ri.Region.ReadAll()
	rs, _ := DecodeRecords(b)
	if len(rs) != 6 {
		t.Fatalf("maxOffset 6: %d records", len(rs))
	}
	// maxBytes smaller than one batch: nothing unless minOneBatch
	ri, _ = l.Read(0, 10, 1<<62, false)
	if ri.Region.Len != 0 {
		t.Fatalf("maxBytes 10 returned %d bytes", ri.Region.Len)
	}
	ri, _ = l.Read(0, 10, 1<<62, true)
	if ri.Region.Len != int64(len(batch(clk.Ms(), 3))) {
		t.Fatalf("minOneBatch returned %d bytes", ri.Region.Len)
	}
	// out of range
	if _, err := l.Read(31, 100, 1<<62, false); !errors.Is(err, kerr.OffsetOutOfRange) {
		t.Fatalf("read 31: %v", err)
	}
	ri, err = l.Read(30, 100, 1<<62, false)
	if err != nil || ri.Region.Len != 0 {
		t.Fatalf("read at leo: %v %d", err, ri.Region.Len)
	}
}

func TestLogAppendRewritesInPlace(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, DefaultConfig())
	defer l.Close()
	mustAppend(t, l.Log, batch(clk.Ms(), 5), 3)
	b := batch(clk.Ms(), 2)
	mustAppend(t, l.Log, b, 7)
	h, _ := ParseBatchHeader(b)
	if h.BaseOffset != 5 || h.PartitionLeaderEpoch != 7 {
		t.Fatalf("not rewritten: %+v", h)
	}
	got, _ := l.ReadBatches(5, 1<<20, 1<<62, true)
	if !bytes.Equal(got, b) {
		t.Fatal("stored bytes differ from the rewritten input")
	}
	if err := ValidateBatches(got); err != nil {
		t.Fatal(err)
	}
	if e, ok := l.LatestEpoch(); !ok || e != 7 {
		t.Fatalf("latest epoch %d %v", e, ok)
	}
	if ep, end := l.EndOffsetForEpoch(3); ep != 3 || end != 5 {
		t.Fatalf("end offset for 3: %d %d", ep, end)
	}
}

func TestLogReopen(t *testing.T) {
	clk := newClock()
	fs := vfs.NewMem()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1024
	cfg.IndexIntervalBytes = 100
	l := openTest(t, fs, clk, cfg)
	for i := 0; i < 50; i++ {
		mustAppend(t, l.Log, batch(clk.Ms()+int64(i), 2), 1)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("expected rolls, have %d segments", l.NumSegments())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := openTest(t, fs, clk, cfg)
	defer l2.Close()
	if l2.LogEndOffset() != 100 {
		t.Fatalf("leo after reopen %d", l2.LogEndOffset())
	}
	if got := readAll(t, l2.Log, 0); len(got) != 100 {
		t.Fatalf("%d records after reopen", len(got))
	}
}

// TestReadBoundedByIndex: reads that jump over indexed batches (issue 16)
// return exactly what a walk of every batch header returns, for random
// batch sizes, start offsets, maxBytes and maxOffset bounds, across
// segment rolls, with a small index interval so that most batches are
// indexed.
func TestReadBoundedByIndex(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 100
	cfg.SegmentBytes = 64 << 10
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	type at struct{ base, next, size int64 }
	var batches []at
	for i := 0; i < 400; i++ {
		b := batch(clk.Ms(), 1+rng.IntN(20))
		info := mustAppend(t, l.Log, b, 1)
		batches = append(batches, at{info.FirstOffset, info.LastOffset + 1, int64(len(b))})
	}
	leo := l.LogEndOffset()
	for i := 0; i < 3000; i++ {
		off := rng.Int64N(leo)
		maxBytes := int32(rng.IntN(8 << 10))
		maxOffset := off + 1 + rng.Int64N(leo-off)
		if rng.IntN(4) == 0 {
			maxOffset = 1 << 62
		}
		minOne := rng.IntN(2) == 0
		ri, err := l.Read(off, maxBytes, maxOffset, minOne)
		if err != nil {
			t.Fatal(err)
		}
		// The model: the batch holding off, then every following batch of
		// its segment while the total stays within maxBytes and the base is
		// below maxOffset.
		k := 0
		for batches[k].next <= off {
			k++
		}
		segOf := func(j int) int { return l.segmentForTest(batches[j].base) }
		var want int64
		if batches[k].base < maxOffset && (batches[k].size <= int64(maxBytes) || minOne) {
			want = batches[k].size
			for j := k + 1; j < len(batches) && segOf(j) == segOf(k) && batches[j].base < maxOffset && want+batches[j].size <= int64(maxBytes); j++ {
				want += batches[j].size
			}
		}
		if ri.Region.Len != want || (want > 0 && ri.FirstBatchOffset != batches[k].base) {
			t.Fatalf("Read(%d, %d, %d, %v): %d bytes from %d, want %d from %d", off, maxBytes, maxOffset, minOne, ri.Region.Len, ri.FirstBatchOffset, want, batches[k].base)
		}
	}
}

// segmentForTest is the base offset of the segment holding off.
func (l *Log) segmentForTest(off int64) int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return int(l.mu.segments[l.segmentFor(off)].base)
}
