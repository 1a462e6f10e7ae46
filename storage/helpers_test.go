package storage

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// clock is an injected clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.UnixMilli(1_700_000_000_000)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *clock) Ms() int64 { return c.Now().UnixMilli() }

func recs(ts int64, n int, prefix string) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{Key: []byte(fmt.Sprintf("%s-k%d", prefix, i)), Value: []byte(fmt.Sprintf("%s-v%d", prefix, i)), Timestamp: ts + int64(i)}
	}
	return out
}

func batch(ts int64, n int) []byte { return BuildBatch(BatchOptions{}, recs(ts, n, "r")...) }

func idemBatch(ts int64, n int, pid int64, epoch int16, seq int32) []byte {
	return BuildBatch(BatchOptions{Producer: &BatchProducer{ID: pid, Epoch: epoch, BaseSequence: seq}}, recs(ts, n, "p")...)
}

type testLog struct {
	*Log
	fs  vfs.FS
	clk *clock
	dir string
}

func openTest(t *testing.T, fs vfs.FS, clk *clock, cfg Config, mod ...func(*LogOptions)) *testLog {
	t.Helper()
	o := LogOptions{FS: fs, Dir: "/data/topic-0", Config: cfg, Now: clk.Now, HadCleanShutdown: true}
	for _, m := range mod {
		m(&o)
	}
	l, err := OpenLog(o)
	if err != nil {
		t.Fatalf("OpenLog: %v", err)
	}
	return &testLog{Log: l, fs: fs, clk: clk, dir: o.Dir}
}

// mustAppend appends as leader: control batches (markers) as the coordinator
// writes them, anything else as a producer does (sequence checks,
// duplicates), without KIP-890 verification.
func mustAppend(t *testing.T, l *Log, b []byte, epoch int32) AppendInfo {
	t.Helper()
	origin := OriginClient
	if h, err := ParseBatchHeader(b); err == nil && h.IsControl() {
		origin = OriginCoordinator
	}
	info, err := l.AppendAsLeaderOrigin(b, epoch, origin)
	if err != nil {
		t.Fatalf("AppendAsLeader: %v", err)
	}
	return info
}

func readAll(t *testing.T, l *Log, from int64) []Record {
	t.Helper()
	var out []Record
	for from < l.LogEndOffset() {
		b, err := l.ReadBatches(from, 1<<20, 1<<62, true)
		if err != nil {
			t.Fatalf("read %d: %v", from, err)
		}
		if len(b) == 0 {
			t.Fatalf("empty read at %d (leo %d)", from, l.LogEndOffset())
		}
		rs, err := DecodeRecords(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		for _, r := range rs {
			if r.Offset >= from {
				out = append(out, r)
			}
		}
		// batches the cleaner emptied hold no record: go by the batch offsets
		WalkBatches(b, false, func(h BatchHeader, _ []byte) error { from = h.NextOffset(); return nil })
	}
	return out
}
