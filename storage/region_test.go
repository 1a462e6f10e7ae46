package storage

import (
	"bytes"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// writeSampleLog fills a log on the OS file system with every codec, producer ids,
// several segments and leader epochs.
func writeSampleLog(t *testing.T, dir string) *testLog {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 6 << 10
	cfg.IndexIntervalBytes = 1024
	l := openTest(t, vfs.Default, clk, cfg, func(o *LogOptions) { o.Dir = dir; o.TopicID = [16]byte{9, 8, 7} })
	for i := 0; i < 120; i++ {
		c := codecs[i%len(codecs)]
		b := BuildBatch(BatchOptions{Compression: c, Producer: &BatchProducer{ID: 1000, Epoch: 0, BaseSequence: int32(i * 4)}},
			recs(clk.Ms()+int64(i), 4, "d")...)
		mustAppend(t, l.Log, b, int32(i/40))
	}
	return l
}

func TestFileRegionSendfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	l := writeSampleLog(t, dir)
	defer l.Close()
	ri, err := l.Read(10, 20000, math.MaxInt64, true)
	if err != nil || ri.Region.Len == 0 {
		t.Fatalf("%v %+v", err, ri)
	}
	want, err := ri.Region.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	seek := func() int64 {
		pos, err := ri.Region.File.(interface {
			Seek(int64, int) (int64, error)
		}).Seek(0, io.SeekCurrent)
		if err != nil {
			t.Fatal(err)
		}
		return pos
	}
	// the shared file offset must not move
	seek()
	b, n, err := sendOverTCP(t, ri.Region)
	if err != nil || n != ri.Region.Len {
		t.Fatalf("WriteTo %d %v", n, err)
	}
	if pos := seek(); pos != 0 {
		t.Fatalf("file offset moved to %d", pos)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("sent %d bytes, want %d", len(b), len(want))
	}
	// a plain writer takes the copy path
	var buf bytes.Buffer
	if _, err := ri.Region.WriteTo(&buf); err != nil || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("copy path: %v", err)
	}
	if _, err := DecodeRecords(want); err != nil {
		t.Fatal(err)
	}
}

// A region of a segment file that was closed is an error, never the bytes of
// whatever file got the descriptor's number next.
func TestFileRegionClosedFile(t *testing.T) {
	dir := t.TempDir()
	f, err := vfs.Default.Create(filepath.Join(dir, "a.log"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write(bytes.Repeat([]byte{'a'}, 4096))
	r := FileRegion{File: f, Pos: 0, Len: 4096}
	f.Close()
	g, err := os.Create(filepath.Join(dir, "b.log")) // likely the same descriptor number
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g.Write(bytes.Repeat([]byte{'b'}, 4096))
	b, n, err := sendOverTCP(t, r)
	if err == nil {
		t.Fatalf("WriteTo of a closed file sent %d bytes without an error", n)
	}
	if bytes.Contains(b, []byte{'b'}) {
		t.Fatal("sent another file's bytes")
	}
}

// sendOverTCP writes r to a loopback TCP connection (the sendfile path) and
// returns what the other end received, with WriteTo's results.
func sendOverTCP(t *testing.T, r FileRegion) ([]byte, int64, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback:", err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(c)
		c.Close()
		got <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, werr := r.WriteTo(c)
	c.Close()
	return <-got, n, werr
}

// TestKafkaDumpLogSegments checks the files with Apache Kafka's own DumpLogSegments
// when KGO_KAFKA_LIBS points at Kafka's libs directory (skipped otherwise).
func TestKafkaDumpLogSegments(t *testing.T) {
	libs := os.Getenv("KGO_KAFKA_LIBS")
	if libs == "" {
		t.Skip("KGO_KAFKA_LIBS not set")
	}
	dir := filepath.Join(t.TempDir(), "dump-0")
	l := writeSampleLog(t, dir)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	var logs, idx []string
	for _, e := range ents {
		switch filepath.Ext(e.Name()) {
		case ".log":
			logs = append(logs, filepath.Join(dir, e.Name()))
		case ".index", ".timeindex":
			idx = append(idx, filepath.Join(dir, e.Name()))
		}
	}
	run := func(args ...string) string {
		cmd := exec.Command("java", append([]string{"-cp", libs + "/*", "org.apache.kafka.tools.DumpLogSegments"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	out := run("--deep-iteration", "--files", strings.Join(logs, ","))
	for _, bad := range []string{"isvalid: false", "Exception", "corrupt"} {
		if strings.Contains(out, bad) {
			t.Fatalf("DumpLogSegments found %q:\n%s", bad, out)
		}
	}
	if !strings.Contains(out, "isvalid: true") {
		t.Fatalf("unexpected output:\n%s", out[:min(len(out), 2000)])
	}
	out = run("--verify-index-only", "--index-sanity-check", "--files", strings.Join(idx, ","))
	t.Logf("index check:\n%s", out)
	for _, bad := range []string{"Mismatches", "mismatch", "not found", "out of order", "failed"} {
		if strings.Contains(out, bad) {
			t.Fatalf("index check found %q:\n%s", bad, out)
		}
	}
	out = run("--files", strings.Join(idx, ","))
	t.Logf("index dump (head):\n%s", out[:min(len(out), 1500)])
	for _, bad := range []string{"Mismatches", "mismatch", "not found", "out of order"} {
		if strings.Contains(out, bad) {
			t.Fatalf("index dump found %q:\n%s", bad, out[:min(len(out), 4000)])
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snapshot"))
	out = run("--files", strings.Join(snaps, ","))
	if !strings.Contains(out, "producerId: 1000") {
		t.Fatalf("snapshot dump:\n%s", out)
	}
	t.Logf("snapshot dump:\n%s", out[:min(len(out), 1500)])
}
