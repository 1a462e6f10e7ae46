package storage

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// fourPartitions writes t-0..t-3 over /d1 and /d2 (t-0, t-2 in /d1; t-1, t-3 in
// /d2), i+1 records in t-i, and closes the Manager cleanly.
func fourPartitions(t *testing.T, fs vfs.FS, clk *clock) {
	t.Helper()
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now, BrokerEpoch: 5})
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"t", p}, [16]byte{7}, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"/d1/", "/d2/"}[p%2]; !strings.HasPrefix(l.Dir(), want) {
			t.Fatalf("t-%d in %s", p, l.Dir())
		}
		mustAppend(t, l, batch(clk.Ms(), int(p)+1), 0)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func failUnder(prefix string, kinds ...vfs.OpKind) vfs.Injector {
	return func(op vfs.Op) vfs.Fault {
		for _, k := range kinds {
			if op.Kind == k && strings.HasPrefix(op.Path, prefix) {
				return vfs.Fault{Err: vfs.ErrInjected}
			}
		}
		return vfs.Fault{}
	}
}

// An I/O error loading a partition of one log dir (LogManager.loadLogs): that dir
// goes offline and the broker serves the other; the partitions of the failed dir
// are not served and not created anew elsewhere; the next start recovers the dir.
func TestLogDirLoadFailure(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	fourPartitions(t, mem, clk)

	var sw vfs.Switch
	sw.Set(failUnder("/d2/t-1/", vfs.OpOpen, vfs.OpRead))
	fs := vfs.NewInjecting(mem, sw.Inject)
	failed := make(chan string, 2)
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now,
		OnDirFailure: func(dir string) { failed <- dir }})
	if err != nil {
		t.Fatalf("a failed log dir must not stop the startup: %v", err)
	}
	sw.Set(nil)
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != "/d2" {
		t.Fatalf("offline dirs %v", got)
	}
	select {
	case dir := <-failed:
		if dir != "/d2" {
			t.Fatalf("OnDirFailure(%s)", dir)
		}
	default:
		t.Fatal("OnDirFailure not called for the dir that failed to load")
	}
	if m.PreviousBrokerEpoch() != -1 {
		t.Fatalf("previous broker epoch %d with a failed log dir", m.PreviousBrokerEpoch())
	}
	// the online dir serves
	for _, p := range []int32{0, 2} {
		l, ok := m.Log(TopicPartition{"t", p})
		if !ok || len(readAll(t, l, 0)) != int(p)+1 {
			t.Fatalf("t-%d not served from /d1", p)
		}
		mustAppend(t, l, batch(clk.Ms(), 1), 0)
	}
	// t-3 loaded before its dir failed: it is offline, as after a run-time failure
	l3, ok := m.Log(TopicPartition{"t", 3})
	if !ok || !l3.Offline() {
		t.Fatal("t-3 must be held offline")
	}
	if _, err := l3.Read(0, 1<<20, 1<<62, true); !errors.Is(err, errKafkaStorage) {
		t.Fatalf("read t-3: %v", err)
	}
	if l, err := m.GetOrCreateLog(TopicPartition{"t", 3}, [16]byte{7}, DefaultConfig()); err != nil || l != l3 {
		t.Fatalf("GetOrCreateLog(t-3): %v %v", l, err)
	}
	// t-1 did not load: an offline stub stands for it, it is not created empty in /d1
	l1, err := m.GetOrCreateLog(TopicPartition{"t", 1}, [16]byte{7}, DefaultConfig())
	if err != nil || !l1.Offline() || l1.Dir() != "/d2/t-1" {
		t.Fatalf("GetOrCreateLog(t-1): %v %v", l1, err)
	}
	if _, err := l1.AppendAsLeader(batch(clk.Ms(), 1), 0); !errors.Is(err, errKafkaStorage) {
		t.Fatalf("append to t-1: %v", err)
	}
	if _, err := l1.Read(0, 1<<20, 1<<62, true); !errors.Is(err, errKafkaStorage) {
		t.Fatalf("read t-1: %v", err)
	}
	if _, err := mem.Stat("/d1/t-1"); !os.IsNotExist(err) {
		t.Fatalf("t-1 created in /d1: %v", err)
	}
	// new partitions go to the online dir
	u, err := m.GetOrCreateLog(TopicPartition{"u", 0}, [16]byte{8}, DefaultConfig())
	if err != nil || !strings.HasPrefix(u.Dir(), "/d1/") {
		t.Fatalf("new log: %v %v", u, err)
	}
	// the failed dir lost its clean-shutdown marker as it started loading: the
	// next start recovers it
	if _, err := mem.Stat("/d2/" + CleanShutdownFile); !os.IsNotExist(err) {
		t.Fatalf("marker left in the failed dir: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat("/d2/" + CleanShutdownFile); !os.IsNotExist(err) {
		t.Fatalf("marker written into the offline dir: %v", err)
	}

	m2, err := OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if len(m2.OfflineDirs()) != 0 {
		t.Fatalf("offline after the fault is gone: %v", m2.OfflineDirs())
	}
	for p, want := range map[int32]int{0: 2, 1: 2, 2: 4, 3: 4} {
		l, ok := m2.Log(TopicPartition{"t", p})
		if !ok || len(readAll(t, l, 0)) != want {
			t.Fatalf("t-%d after restart", p)
		}
	}
}

// A log dir that cannot even be listed goes offline too; a partition whose
// directory is found in it is not created elsewhere.
func TestLogDirUnlistable(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	fourPartitions(t, mem, clk)
	fs := vfs.NewInjecting(mem, func(op vfs.Op) vfs.Fault {
		if op.Kind == vfs.OpReadDir && op.Path == "/d2" {
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	})
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != "/d2" {
		t.Fatalf("offline dirs %v", got)
	}
	if len(m.Logs()) != 2 {
		t.Fatalf("%d logs", len(m.Logs()))
	}
	if l, err := m.GetOrCreateLog(TopicPartition{"t", 1}, [16]byte{7}, DefaultConfig()); err != nil || !l.Offline() || l.Dir() != "/d2/t-1" {
		t.Fatalf("GetOrCreateLog(t-1): %v %v", l, err)
	}
	if l, err := m.GetOrCreateLog(TopicPartition{"t", 9}, [16]byte{7}, DefaultConfig()); err != nil || l.Offline() || !strings.HasPrefix(l.Dir(), "/d1/") {
		t.Fatalf("a partition not in the failed dir: %v %v", l, err)
	}
	// once the partition is deleted, it may be created again
	if err := m.DeleteLog(TopicPartition{"t", 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat("/d2/t-1/00000000000000000000.log"); err != nil {
		t.Fatalf("deleting the stub reached the failed dir: %v", err)
	}
	if l, err := m.GetOrCreateLog(TopicPartition{"t", 1}, [16]byte{9}, DefaultConfig()); err != nil || !strings.HasPrefix(l.Dir(), "/d1/") {
		t.Fatalf("t-1 after its deletion: %v %v", l, err)
	}
}

// A malformed checkpoint is an IOException to Kafka's CheckpointFile: the dir goes
// offline (CheckpointFileWithFailureHandler.read).
func TestLogDirMalformedCheckpoint(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	fourPartitions(t, mem, clk)
	if err := vfs.WriteFileAtomic(mem, "/d2/"+RecoveryPointCheckpointFile, []byte("0\n3\nt 1 1\n")); err != nil {
		t.Fatal(err)
	}
	m, err := OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != "/d2" {
		t.Fatalf("offline dirs %v", got)
	}
}

// Only when every log dir fails does the startup fail (LogManager: "Shutdown
// broker because all log dirs in ... have failed").
func TestAllLogDirsFailToLoad(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	fourPartitions(t, mem, clk)
	fs := vfs.NewInjecting(mem, failUnder("/d", vfs.OpReadDir))
	_, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err == nil || !errors.Is(err, errKafkaStorage) || !strings.Contains(err.Error(), "all log dirs in /d1, /d2 have failed") {
		t.Fatalf("open: %v", err)
	}
	// one log dir alone, failing
	fs = vfs.NewInjecting(mem, failUnder("/d1/t-0/", vfs.OpOpen))
	if _, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1"}, Now: clk.Now}); err == nil {
		t.Fatal("the only log dir failed: the startup must fail")
	}
}

// Directory names in a log dir are parsed as Kafka's LocalLog.parseTopicPartitionName
// does: anything that is not a partition's fails the startup (a KafkaException, not
// a log dir failure); a topic may start with a dot.
func TestLogDirEntryNames(t *testing.T) {
	for name, want := range map[string]string{
		"orders-3":                    "orders-3",
		"my-topic-0":                  "my-topic-0",
		".hidden-0":                   ".hidden-0",
		"orders-3.0123abcd-delete":    "orders-3 -delete",
		"orders-3.0123abcd-stray":     "orders-3 -stray",
		"orders-3.0123abcd-future":    "orders-3 -future",
		"__cluster_metadata-0":        "__cluster_metadata-0",
		"lost+found":                  "",
		"orders":                      "",
		"orders-x":                    "",
		"-3":                          "",
		"orders-3-delete":             "",
		"orders-3.0123 abcd-delete":   "",
		"orders-3.0123abcd-notdelete": "",
	} {
		tp, suffix, err := parseLogDirEntry("/d", name)
		got := ""
		if err == nil {
			got = strings.TrimSpace(tp.DirName() + " " + suffix)
		}
		if got != want {
			t.Errorf("%q: got %q (%v), want %q", name, got, err, want)
		}
	}

	mem := vfs.NewMemFS()
	clk := newClock()
	m, err := OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	l, err := m.GetOrCreateLog(TopicPartition{".hidden", 0}, [16]byte{1}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, batch(clk.Ms(), 3), 0)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m, err = OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	if l, ok := m.Log(TopicPartition{".hidden", 0}); !ok || l.LogEndOffset() != 3 {
		t.Fatal("a topic starting with a dot is not reloaded")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := mem.MkdirAll("/d2/lost+found", 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now})
	if err == nil || errors.Is(err, errKafkaStorage) || !strings.Contains(err.Error(), "'lost+found' is not in the form of topic-partition") {
		t.Fatalf("open with a foreign directory: %v", err)
	}
}

// A log dir whose meta.properties could not be read is offline from the start
// (InitialOfflineDirs, Kafka's LogManager initialOfflineDirs): it is never
// created, listed or written to, it is reported offline, the other dir is
// served, and a partition found in it is not created anew elsewhere.
func TestInitialOfflineDir(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	fourPartitions(t, mem, clk)
	// any access to /d2 but a Stat of a partition directory is a test failure
	fs := vfs.NewInjecting(mem, func(op vfs.Op) vfs.Fault {
		if strings.HasPrefix(op.Path, "/d2") && op.Kind != vfs.OpStat {
			t.Errorf("%v %s in the initial offline dir", op.Kind, op.Path)
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		return vfs.Fault{}
	})
	failed := make(chan string, 2)
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2", "/d3"}, Now: clk.Now,
		InitialOfflineDirs: []string{"/d2"}, OnDirFailure: func(dir string) { failed <- dir }})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.OfflineDirs(); len(got) != 1 || got[0] != "/d2" {
		t.Fatalf("offline dirs %v", got)
	}
	if dir := <-failed; dir != "/d2" {
		t.Fatalf("OnDirFailure(%s)", dir)
	}
	if m.PreviousBrokerEpoch() != -1 {
		t.Fatalf("previous broker epoch %d with an offline log dir", m.PreviousBrokerEpoch())
	}
	if len(m.Logs()) != 2 {
		t.Fatalf("%d logs", len(m.Logs()))
	}
	for _, p := range []int32{0, 2} {
		if l, ok := m.Log(TopicPartition{"t", p}); !ok || len(readAll(t, l, 0)) != int(p)+1 {
			t.Fatalf("t-%d not served from /d1", p)
		}
	}
	if l, err := m.GetOrCreateLog(TopicPartition{"t", 1}, [16]byte{7}, DefaultConfig()); err != nil || !l.Offline() || l.Dir() != "/d2/t-1" {
		t.Fatalf("GetOrCreateLog(t-1): %v %v", l, err)
	}
	for i := range 4 {
		u, err := m.GetOrCreateLog(TopicPartition{"u", int32(i)}, [16]byte{8}, DefaultConfig())
		if err != nil || u.Offline() || strings.HasPrefix(u.Dir(), "/d2/") {
			t.Fatalf("new log: %v %v", u, err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// the marker of its last clean shutdown stays: nothing was written there since
	if _, err := mem.Stat("/d2/" + CleanShutdownFile); err != nil {
		t.Fatalf("clean-shutdown marker of the offline dir: %v", err)
	}

	// every log dir offline from the start: the startup fails
	_, err = OpenManager(ManagerOptions{FS: mem, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now, InitialOfflineDirs: []string{"/d1", "/d2"}})
	if err == nil || !strings.Contains(err.Error(), "all log dirs in /d1, /d2 have failed") {
		t.Fatalf("open: %v", err)
	}
}
