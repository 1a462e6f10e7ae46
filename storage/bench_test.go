package storage

import (
	"bytes"
	"math"
	"path/filepath"
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
