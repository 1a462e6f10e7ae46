//go:build linux

package storage

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Storage throughput against the disk's own bandwidth, measured in the same run.
//
//	KGO_STORAGE_BENCH=1 go test ./storage -run TestThroughputReport -v -timeout 30m
//
// (storage/bench.sh does that). KGO_STORAGE_BENCH_MIB sets the bytes per run
// (default 512). The dir is KGO_STORAGE_BENCH_DIR or a temp dir (the disk under
// test). Figures go into docs/STORAGE.md.

func benchMiB() int64 {
	if n, err := strconv.ParseInt(os.Getenv("KGO_STORAGE_BENCH_MIB"), 10, 64); err == nil && n > 0 {
		return n
	}
	return 512
}

// evict drops a file's pages from the page cache (posix_fadvise DONTNEED after an
// fsync), so the next read comes from the disk. Only the files of this test.
func evict(t testing.TB, dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		f.Sync()
		const fadvDontNeed = 4
		syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0)
		f.Close()
	}
}

// ddBandwidth measures sequential write (O_DIRECT, fdatasync) and read (O_DIRECT)
// bandwidth with dd, in bytes per second.
func ddBandwidth(t testing.TB, dir string, mib int64) (write, read float64) {
	f := filepath.Join(dir, "dd.bin")
	defer os.Remove(f)
	run := func(args ...string) float64 {
		start := time.Now()
		out, err := exec.Command("dd", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("dd %v: %v\n%s", args, err, out)
		}
		return float64(mib<<20) / time.Since(start).Seconds()
	}
	write = run("if=/dev/zero", "of="+f, "bs=1M", "count="+strconv.FormatInt(mib, 10), "oflag=direct", "conv=fdatasync")
	read = run("if="+f, "of=/dev/null", "bs=1M", "iflag=direct")
	return write, read
}

// appendThroughput appends total bytes of recSize-byte records in 16 KiB batches
// (the producer's batch.size) from appenders goroutines and returns bytes per second,
// counting the final fsync.
func appendThroughput(t testing.TB, dir string, recSize int, total int64, flushMessages int64, appenders int) (float64, *Log) {
	cfg := DefaultConfig()
	cfg.FlushMessages = flushMessages
	l, err := OpenLog(LogOptions{FS: vfs.Default, Dir: dir, Config: cfg, HadCleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	tmpl := recordBatch(recSize, 16<<10, time.Now().UnixMilli())
	per := total / int64(len(tmpl)) / int64(appenders)
	var wg sync.WaitGroup
	start := time.Now()
	for range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, len(tmpl))
			for range per {
				copy(buf, tmpl)
				if _, err := l.AppendAsLeader(buf, 0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	return float64(per*int64(appenders)*int64(len(tmpl))) / el.Seconds(), l
}

// readThroughput reads the whole log from the start in 1 MiB fetches (cold
// cache) and returns bytes per second.
func readThroughput(t testing.TB, l *Log) float64 {
	evict(t, l.Dir())
	start := time.Now()
	var n int64
	for off := l.LogStartOffset(); off < l.LogEndOffset(); {
		ri, err := l.Read(off, 1<<20, math.MaxInt64, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ri.Region.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		n += int64(len(b))
		var last int64 = -1
		WalkBatches(b, false, func(h BatchHeader, _ []byte) error { last = h.NextOffset(); return nil })
		if last < 0 {
			t.Fatalf("empty read at %d", off)
		}
		off = last
	}
	return float64(n) / time.Since(start).Seconds()
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func TestThroughputReport(t *testing.T) {
	if os.Getenv("KGO_STORAGE_BENCH") == "" {
		t.Skip("set KGO_STORAGE_BENCH=1 (storage/bench.sh)")
	}
	root := os.Getenv("KGO_STORAGE_BENCH_DIR")
	if root == "" {
		root = t.TempDir()
	}
	mib := benchMiB()
	total := mib << 20
	wr, rd := ddBandwidth(t, root, mib)
	fmt.Printf("disk (dd, %d MiB, bs=1M): write %.1f MiB/s (oflag=direct conv=fdatasync), read %.1f MiB/s (iflag=direct); load %s\n",
		mib, wr/(1<<20), rd/(1<<20), loadAvg())
	fmt.Printf("%-44s %12s %8s %12s %8s  %s\n", "case", "append MiB/s", "/dd wr", "read MiB/s", "/dd rd", "load (1 5 15 min)")
	i := 0
	var defaultAppend float64
	for _, rs := range []int{1024, 100} {
		for _, c := range []struct {
			name      string
			flush     int64
			appenders int
			div       int64
		}{
			{"default flush policy, 1 appender", math.MaxInt64, 1, 1},
			{"flush.messages=1, 8 appenders (group commit)", 1, 8, 4},
			{"flush.messages=1, 32 appenders (group commit)", 1, 32, 4},
			{"flush.messages=1, 64 appenders (group commit)", 1, 64, 4},
		} {
			i++
			dir := filepath.Join(root, fmt.Sprintf("t-%d", i))
			os.RemoveAll(dir)
			a, l := appendThroughput(t, dir, rs, total/c.div, c.flush, c.appenders)
			r := readThroughput(t, l)
			l.Close()
			cost := ""
			if c.flush == math.MaxInt64 {
				defaultAppend = a
			} else {
				cost = fmt.Sprintf("  default/durable %.2fx", defaultAppend/a)
			}
			fmt.Printf("%-44s %12.1f %8.2f %12.1f %8.2f  %s%s\n", fmt.Sprintf("%dB records, %s", rs, c.name),
				a/(1<<20), a/wr, r/(1<<20), r/rd, loadAvg(), cost)
			os.RemoveAll(dir)
		}
	}
	// recovery: the whole log is an unflushed tail (recovery point 0, no clean
	// shutdown marker), read from a cold cache
	dir := filepath.Join(root, "recovery")
	os.RemoveAll(dir)
	_, l := appendThroughput(t, dir, 1024, total, math.MaxInt64, 1)
	size := l.Size()
	l.Close()
	evict(t, dir)
	start := time.Now()
	l2, err := OpenLog(LogOptions{FS: vfs.Default, Dir: dir, Config: DefaultConfig(), RecoveryPoint: 0})
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	l2.Close()
	fmt.Printf("recovery of a %d MiB unflushed tail (cold cache): %v = %.1f s/GiB; load %s\n",
		size>>20, el.Round(time.Millisecond), el.Seconds()/(float64(size)/(1<<30)), loadAvg())
}
