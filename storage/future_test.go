package storage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// futureDirs lists the -future directories of a log dir.
func futureDirs(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	ents, err := fs.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "-future") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestFutureLogMove: a replica's log moves from /d1 to /d2 (KIP-113): the
// future log copies the current one batch by batch, catches up after more
// appends, is promoted into /d2 as <topic>-<partition>, the old directory goes
// to -delete, and the records (and leader epochs) survive a restart.
func TestFutureLogMove(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock()
	opts := ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now}
	m, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	tp, id := TopicPartition{"moving", 0}, [16]byte{7}
	cur, err := m.GetOrCreateLogIn(tp, id, DefaultConfig(), "/d1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		mustAppend(t, cur, batch(clk.Ms(), 3), int32(i/2))
	}
	if _, err := m.CreateFutureLog(tp, id, Config{}, "/d1"); err == nil {
		t.Fatal("a future log in the current log's dir")
	}
	fut, err := m.CreateFutureLog(tp, id, Config{}, "/d2")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.CreateFutureLog(tp, id, Config{}, "/d2"); err != nil || again != fut {
		t.Fatalf("second CreateFutureLog: %v %v", again == fut, err)
	}
	if got := futureDirs(t, fs, "/d2"); len(got) != 1 || !strings.HasPrefix(got[0], "moving-0.") {
		t.Fatalf("future dirs %v", got)
	}
	caught := false
	for range 20 {
		_, caught, err = CatchUpFuture(cur, fut, 200) // about one batch at a time
		if err != nil {
			t.Fatal(err)
		}
		if caught {
			break
		}
	}
	if !caught || fut.LogEndOffset() != 15 {
		t.Fatalf("caught up %v at %d", caught, fut.LogEndOffset())
	}
	mustAppend(t, cur, batch(clk.Ms(), 2), 3)
	if _, caught, _ := CatchUpFuture(cur, fut, 1<<20); !caught {
		t.Fatal("not caught up after one more batch")
	}
	want := readAll(t, cur, 0)
	promoted, err := m.PromoteFutureLog(tp)
	if err != nil {
		t.Fatal(err)
	}
	if dir, _ := m.LogDirOf(tp); dir != "/d2" || promoted.Dir() != "/d2/moving-0" {
		t.Fatalf("after the move: dir %s, log %s", dir, promoted.Dir())
	}
	if _, _, ok := m.FutureLog(tp); ok {
		t.Fatal("future log left after the promotion")
	}
	if got := readAll(t, promoted, 0); len(got) != len(want) || got[16].Offset != 16 {
		t.Fatalf("promoted log has %d records, want %d", len(got), len(want))
	}
	if e, _ := promoted.LatestEpoch(); e != 3 {
		t.Fatalf("latest epoch %d", e)
	}
	if _, err := fs.Stat("/d1/moving-0"); !os.IsNotExist(err) {
		t.Fatalf("old dir still there: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, ok := m.Log(tp)
	if dir, _ := m.LogDirOf(tp); !ok || dir != "/d2" || len(readAll(t, l, 0)) != len(want) {
		t.Fatalf("after a restart: %v in %s", ok, dir)
	}
}

// TestFutureLogCrash: a future directory next to the current log at startup
// is a move in progress (loaded as the future log, the copy resumes); one
// without a current log (a crash after the current log was renamed to
// -delete) becomes the partition's log.
func TestFutureLogCrash(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock()
	opts := ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now}
	m, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	tp, id := TopicPartition{"crash", 0}, [16]byte{8}
	cur, _ := m.GetOrCreateLogIn(tp, id, DefaultConfig(), "/d1")
	mustAppend(t, cur, batch(clk.Ms(), 4), 0)
	fut, err := m.CreateFutureLog(tp, id, Config{}, "/d2")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := CatchUpFuture(cur, fut, 1<<20); err != nil {
		t.Fatal(err)
	}
	m.Close()

	// 1. current and future: the move resumes.
	m, err = OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	f, dir, ok := m.FutureLog(tp)
	if !ok || dir != "/d2" || f.LogEndOffset() != 4 {
		t.Fatalf("future after a restart: %v %s", ok, dir)
	}
	if d, _ := m.LogDirOf(tp); d != "/d1" {
		t.Fatalf("current log in %s", d)
	}
	m.Close()

	// 2. the current log renamed for deletion, then a crash: the future log
	// is the partition's.
	if err := fs.Rename("/d1/crash-0", "/d1/"+deleteDirName(tp)); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, ok := m.Log(tp)
	if d, _ := m.LogDirOf(tp); !ok || d != "/d2" || l.Dir() != filepath.Join("/d2", "crash-0") || len(readAll(t, l, 0)) != 4 {
		t.Fatalf("after the crash: %v in %s", ok, d)
	}
	if _, _, ok := m.FutureLog(tp); ok || len(futureDirs(t, fs, "/d2")) != 0 {
		t.Fatal("future log left")
	}
}

// TestCordonedDirs (KIP-1066): new logs avoid a cordoned dir while another
// is open; a dir named for the log is used anyway.
func TestCordonedDirs(t *testing.T) {
	m, err := OpenManager(ManagerOptions{FS: vfs.NewMem(), LogDirs: []string{"/d1", "/d2"}, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.SetCordonedDirs([]string{"/d1"})
	for p := range int32(4) {
		tp := TopicPartition{"c", p}
		if _, err := m.GetOrCreateLog(tp, [16]byte{9}, DefaultConfig()); err != nil {
			t.Fatal(err)
		}
		if d, _ := m.LogDirOf(tp); d != "/d2" {
			t.Fatalf("c-%d in cordoned %s", p, d)
		}
	}
	tp := TopicPartition{"c", 9}
	if _, err := m.GetOrCreateLogIn(tp, [16]byte{9}, DefaultConfig(), "/d1"); err != nil {
		t.Fatal(err)
	}
	if d, _ := m.LogDirOf(tp); d != "/d1" {
		t.Fatalf("named dir: %s", d)
	}
	m.SetCordonedDirs([]string{"/d1", "/d2"})
	tp = TopicPartition{"c", 10}
	if _, err := m.GetOrCreateLog(tp, [16]byte{9}, DefaultConfig()); err != nil {
		t.Fatalf("every dir cordoned: %v", err)
	}
}

// TestFutureLogFollowsTruncation: the current log is truncated (a
// follower's divergence) and rewritten in a new epoch after the future log
// copied it; the next copy cuts the future log back by leader epochs and
// copies the new records, so the two agree.
func TestFutureLogFollowsTruncation(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock()
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp, id := TopicPartition{"trunc", 0}, [16]byte{5}
	cur, _ := m.GetOrCreateLogIn(tp, id, DefaultConfig(), "/d1")
	mustAppend(t, cur, batch(clk.Ms(), 5), 0)
	mustAppend(t, cur, batch(clk.Ms(), 5), 1)
	fut, err := m.CreateFutureLog(tp, id, Config{}, "/d2")
	if err != nil {
		t.Fatal(err)
	}
	if _, caught, err := CatchUpFuture(cur, fut, 1<<20); err != nil || !caught {
		t.Fatalf("first copy: %v %v", caught, err)
	}
	if err := cur.Truncate(7); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, cur, batch(clk.Ms(), 3), 2)
	for range 5 {
		if _, caught, err := CatchUpFuture(cur, fut, 1<<20); err != nil {
			t.Fatal(err)
		} else if caught {
			break
		}
	}
	if fut.LogEndOffset() != cur.LogEndOffset() {
		t.Fatalf("future at %d, current at %d", fut.LogEndOffset(), cur.LogEndOffset())
	}
	want, got := cur.EpochEntries(), fut.EpochEntries()
	if len(want) != len(got) {
		t.Fatalf("epochs %v, want %v", got, want)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("epochs %v, want %v", got, want)
		}
	}
	wr, gr := readAll(t, cur, 0), readAll(t, fut, 0)
	for i := range wr {
		if string(wr[i].Value) != string(gr[i].Value) || wr[i].Offset != gr[i].Offset {
			t.Fatalf("record %d differs", i)
		}
	}
}

// A topic whose future directory name would pass 255 bytes cannot move
// (InvalidTopicException in Kafka).
func TestFutureLogLongTopic(t *testing.T) {
	m, err := OpenManager(ManagerOptions{FS: vfs.NewMem(), LogDirs: []string{"/d1", "/d2"}, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := TopicPartition{strings.Repeat("t", 240), 0}
	if _, err := m.GetOrCreateLogIn(tp, [16]byte{1}, DefaultConfig(), "/d1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CreateFutureLog(tp, [16]byte{1}, Config{}, "/d2"); err != ErrTopicTooLongToMove {
		t.Fatalf("CreateFutureLog: %v", err)
	}
}
