package storage

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func benchAppend(b *testing.B, fs vfs.FS, dir string, c Compression, flushMessages int64) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.FlushMessages = flushMessages
	l, err := OpenLog(LogOptions{FS: fs, Dir: dir, Config: cfg, Now: clk.Now, HadCleanShutdown: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	rs := make([]Record, 16)
	for i := range rs {
		rs[i] = Record{Key: []byte("key"), Value: bytes.Repeat([]byte{byte(i)}, 1024), Timestamp: clk.Ms()}
	}
	tmpl := BuildBatch(BatchOptions{Compression: c}, rs...)
	b.SetBytes(16 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	buf := make([]byte, len(tmpl))
	for i := 0; i < b.N; i++ {
		copy(buf, tmpl)
		if _, err := l.AppendAsLeader(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMem(b *testing.B) {
	benchAppend(b, vfs.NewMem(), "/b/t-0", CompressionNone, math.MaxInt64)
}
func BenchmarkAppendOS(b *testing.B) {
	benchAppend(b, vfs.Default, filepath.Join(b.TempDir(), "t-0"), CompressionNone, math.MaxInt64)
}
func BenchmarkAppendOSZstd(b *testing.B) {
	benchAppend(b, vfs.Default, filepath.Join(b.TempDir(), "t-0"), CompressionZstd, math.MaxInt64)
}
func BenchmarkAppendOSLz4(b *testing.B) {
	benchAppend(b, vfs.Default, filepath.Join(b.TempDir(), "t-0"), CompressionLZ4, math.MaxInt64)
}
func BenchmarkAppendOSFsyncEach(b *testing.B) {
	benchAppend(b, vfs.Default, filepath.Join(b.TempDir(), "t-0"), CompressionNone, 1)
}

func BenchmarkRead(b *testing.B) {
	clk := newClock()
	l, _ := OpenLog(LogOptions{FS: vfs.Default, Dir: filepath.Join(b.TempDir(), "t-0"), Now: clk.Now, HadCleanShutdown: true})
	defer l.Close()
	for i := 0; i < 2000; i++ {
		l.AppendAsLeader(BuildBatch(BatchOptions{}, Record{Value: make([]byte, 1000), Timestamp: clk.Ms()}), 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := l.Read(int64(i%1900), 64<<10, math.MaxInt64, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendOSGzip(b *testing.B) {
	benchAppend(b, vfs.Default, filepath.Join(b.TempDir(), "t-0"), CompressionGzip, math.MaxInt64)
}
func BenchmarkAppendOSSnappy(b *testing.B) {
	benchAppend(b, vfs.Default, filepath.Join(b.TempDir(), "t-0"), CompressionSnappy, math.MaxInt64)
}

// benchAppendRecords appends 16 KiB batches of recSize-byte records from appenders
// goroutines (flush.messages=1 with many appenders is the group commit case).
func benchAppendRecords(b *testing.B, recSize int, flushMessages int64, appenders int) {
	cfg := DefaultConfig()
	cfg.FlushMessages = flushMessages
	l, err := OpenLog(LogOptions{FS: vfs.Default, Dir: filepath.Join(b.TempDir(), "t-0"), Config: cfg, HadCleanShutdown: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	tmpl := recordBatch(recSize, 16<<10, 1_700_000_000_000)
	b.SetBytes(int64(len(tmpl)))
	b.ReportAllocs()
	b.SetParallelism(max(appenders/max(1, runtimeGOMAXPROCS()), 1))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, len(tmpl))
		for pb.Next() {
			copy(buf, tmpl)
			if _, err := l.AppendAsLeader(buf, 0); err != nil {
				b.Error(err)
				return
			}
		}
	})
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkAppend1KiB(b *testing.B)            { benchAppendRecords(b, 1024, math.MaxInt64, 1) }
func BenchmarkAppend100B(b *testing.B)            { benchAppendRecords(b, 100, math.MaxInt64, 1) }
func BenchmarkAppend1KiBGroupCommit(b *testing.B) { benchAppendRecords(b, 1024, 1, 32) }
func BenchmarkAppend100BGroupCommit(b *testing.B) { benchAppendRecords(b, 100, 1, 32) }

// BenchmarkAppend100BParallel: 8 appenders to one partition (many producers
// on a hot partition): validation runs outside the log's lock.
func BenchmarkAppend100BParallel(b *testing.B) { benchAppendRecords(b, 100, math.MaxInt64, 8) }

func recordBatch(recSize, batchBytes int, ts int64) []byte {
	n := max(batchBytes/recSize, 1)
	rs := make([]Record, n)
	for i := range rs {
		rs[i] = Record{Key: []byte(fmt.Sprintf("key-%04d", i)), Value: bytes.Repeat([]byte{'v'}, recSize-8), Timestamp: ts}
	}
	return BuildBatch(BatchOptions{Producer: nil}, rs...)
}

func runtimeGOMAXPROCS() int { return runtime.GOMAXPROCS(0) }

// BenchmarkReadSequential reads a 64 MiB log from the start in 1 MiB fetches
// (page cache warm): the CPU cost of Read + ReadAll.
func BenchmarkReadSequential(b *testing.B) {
	l, err := OpenLog(LogOptions{FS: vfs.Default, Dir: filepath.Join(b.TempDir(), "t-0"), HadCleanShutdown: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	tmpl := recordBatch(1024, 16<<10, 1_700_000_000_000)
	buf := make([]byte, len(tmpl))
	for range (64 << 20) / len(tmpl) {
		copy(buf, tmpl)
		if _, err := l.AppendAsLeader(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(l.Size())
	b.ResetTimer()
	for range b.N {
		for off := int64(0); off < l.LogEndOffset(); {
			ri, err := l.Read(off, 1<<20, math.MaxInt64, true)
			if err != nil {
				b.Fatal(err)
			}
			data, err := ri.Region.ReadAll()
			if err != nil {
				b.Fatal(err)
			}
			WalkBatches(data, false, func(h BatchHeader, _ []byte) error { off = h.NextOffset(); return nil })
		}
	}
}

// BenchmarkReadLocate1MiB: locating a 1 MiB fetch of 1 KiB batches (the
// region a Fetch then sends with sendfile, not read here), from random
// offsets of a 64 MiB log: the cost the offset index bounds (issue 16).
func BenchmarkReadLocate1MiB(b *testing.B) {
	l, err := OpenLog(LogOptions{FS: vfs.Default, Dir: filepath.Join(b.TempDir(), "t-0"), HadCleanShutdown: true})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	tmpl := recordBatch(1000, 1000, 1_700_000_000_000)
	buf := make([]byte, len(tmpl))
	for range (64 << 20) / len(tmpl) {
		copy(buf, tmpl)
		if _, err := l.AppendAsLeader(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		ri, err := l.Read(int64(i*7919)%leo, 1<<20, math.MaxInt64, true)
		if err != nil || ri.Region.Len == 0 {
			b.Fatal(err, ri.Region.Len)
		}
	}
}
