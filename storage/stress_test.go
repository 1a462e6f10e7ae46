package storage

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Appenders, readers, a flusher and a roller at once; every read returns valid
// whole batches. Run with -race.
func TestConcurrentAppendReadFlush(t *testing.T) {
	clk := newClock()
	cfg := smallCfg()
	cfg.SegmentBytes = 8 << 10
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	var wg sync.WaitGroup
	var stop atomic.Bool
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				if _, err := l.AppendAsLeader(batch(clk.Ms(), 1+i%4), 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for r := 0; r < 3; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), 1))
			for !stop.Load() {
				leo := l.LogEndOffset()
				if leo == 0 {
					continue
				}
				off := rnd.Int64N(leo)
				ri, err := l.Read(off, 4096, math.MaxInt64, true)
				if err != nil {
					t.Error(err)
					return
				}
				b, err := ri.Region.ReadAll()
				if err != nil {
					t.Error(err)
					return
				}
				if err := ValidateBatches(b); err != nil {
					t.Errorf("read at %d: %v", off, err)
					return
				}
				h, _ := ParseBatchHeader(b)
				if h.BaseOffset > off || h.LastOffset() < off {
					t.Errorf("read at %d returned batch %d..%d", off, h.BaseOffset, h.LastOffset())
					return
				}
			}
		}()
	}
	readers.Add(1)
	go func() {
		defer readers.Done()
		for !stop.Load() {
			if err := l.Flush(); err != nil {
				t.Error(err)
				return
			}
			clk.Advance(time.Millisecond)
		}
	}()
	wg.Wait()
	stop.Store(true)
	readers.Wait()
	if got := readAll(t, l.Log, 0); int64(len(got)) != l.LogEndOffset() {
		t.Fatalf("%d records, leo %d", len(got), l.LogEndOffset())
	}
}

// A broker that crashes without Close: the next OpenManager sees no marker and
// recovers from the recovery point checkpoint.
func TestManagerUncleanRestart(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	opts := ManagerOptions{FS: mem, LogDirs: []string{"/d"}, Now: clk.Now}
	m, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	l, _ := m.GetOrCreateLog(TopicPartition{"t", 0}, [16]byte{1}, DefaultConfig())
	for i := 0; i < 10; i++ {
		mustAppend(t, l, batch(clk.Ms(), 2), 0)
	}
	l.Flush()
	clk.Advance(2 * time.Minute)
	if err := m.Maintain(); err != nil { // writes the recovery point checkpoint
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, l, batch(clk.Ms(), 2), 0) // never fsynced
	}
	crashed := mem.CrashClone()
	m.Close()
	opts.FS = crashed
	m2, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m2.HadCleanShutdown() {
		t.Fatal("crash not noticed")
	}
	l2, ok := m2.Log(TopicPartition{"t", 0})
	if !ok || l2.LogEndOffset() != 20 {
		t.Fatalf("recovered %v leo %d", ok, l2.LogEndOffset())
	}
}

func TestProducerExpiration(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.ProducerIDExpirationMs = 60000
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	mustAppend(t, l.Log, idemBatch(clk.Ms(), 1, 3, 0, 0), 0)
	clk.Advance(30 * time.Second)
	l.Maintain()
	if _, _, ok := l.ProducerEpoch(3); !ok {
		t.Fatal("expired too early")
	}
	clk.Advance(31 * time.Second)
	l.Maintain()
	if _, _, ok := l.ProducerEpoch(3); ok {
		t.Fatal("not expired")
	}
}
