package storage

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Deleting a whole partition directory (delete.go): renamed -delete at once,
// removed file.delete.delay.ms later.

var deleteDirRE = regexp.MustCompile(`^t-0\.[0-9a-f]{32}-delete$`)

// Manager.DeleteLog renames the partition directory <topic>-<partition>.<uuid>-delete
// and removes it file.delete.delay.ms later (LogManager.asyncDelete, deleteLogs); a
// fetch handed a region before goes on meanwhile. A -delete directory found at
// startup goes the same delay after the start; Close leaves pending ones for the
// next start.
func TestManagerDeleteLogDeferred(t *testing.T) {
	mem := vfs.NewMemFS()
	clk := newClock()
	opts := ManagerOptions{FS: mem, LogDirs: []string{"/d1"}, Now: clk.Now, Config: deleteCfg()}
	m, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	tp := TopicPartition{"t", 0}
	l, err := m.GetOrCreateLog(tp, [16]byte{1}, deleteCfg())
	if err != nil {
		t.Fatal(err)
	}
	fourSegments(t, l, clk.Ms())
	ri, err := l.Read(0, 1<<20, 1<<62, true)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ri.Region.ReadAll()
	if err := m.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	deleteDirs := func() []string {
		var out []string
		for _, n := range dirNames(t, mem, "/d1") {
			if strings.HasSuffix(n, "-delete") {
				out = append(out, n)
			}
		}
		return out
	}
	dd := deleteDirs()
	if len(dd) != 1 || !deleteDirRE.MatchString(dd[0]) {
		t.Fatalf("-delete dirs %v", dd)
	}
	if _, err := mem.Stat("/d1/t-0"); !os.IsNotExist(err) {
		t.Fatalf("/d1/t-0 after DeleteLog: %v", err)
	}
	if _, ok := m.Log(tp); ok {
		t.Fatal("the Manager still has the log")
	}
	if _, err := l.Read(0, 1<<20, 1<<62, true); !errors.Is(err, ErrClosed) {
		t.Fatalf("read from a deleted log: %v", err)
	}
	if got, err := ri.Region.ReadAll(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("region of the deleted log: %v", err)
	}
	clk.Advance(testDeleteDelay - time.Millisecond)
	if err := m.Maintain(); err != nil {
		t.Fatal(err)
	}
	if got := deleteDirs(); len(got) != 1 {
		t.Fatalf("-delete dirs before the delay: %v", got)
	}
	clk.Advance(time.Millisecond)
	if err := m.Maintain(); err != nil {
		t.Fatal(err)
	}
	if got := deleteDirs(); len(got) != 0 {
		t.Fatalf("-delete dirs after the delay: %v", got)
	}
	if _, err := ri.Region.ReadAll(); err == nil {
		t.Fatal("the region still reads after its directory went")
	}

	// a deletion pending at Close stays for the next start, which removes it
	// file.delete.delay.ms after starting
	if _, err := m.GetOrCreateLog(tp, [16]byte{2}, deleteCfg()); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if got := deleteDirs(); len(got) != 1 {
		t.Fatalf("-delete dirs after Close: %v", got)
	}
	m2, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if got := deleteDirs(); len(got) != 1 {
		t.Fatalf("-delete dirs at startup: %v", got)
	}
	if len(m2.Logs()) != 0 {
		t.Fatalf("logs %v", m2.Logs())
	}
	clk.Advance(testDeleteDelay)
	if err := m2.Maintain(); err != nil {
		t.Fatal(err)
	}
	if got := deleteDirs(); len(got) != 0 {
		t.Fatalf("-delete dirs after the delay: %v", got)
	}
}

// A -delete directory that cannot be removed takes its log dir offline.
func TestManagerDeleteLogRemoveFailure(t *testing.T) {
	mem := vfs.NewMemFS()
	var sw vfs.Switch
	clk := newClock()
	failed := make(chan string, 1)
	m, err := OpenManager(ManagerOptions{FS: vfs.NewInjecting(mem, sw.Inject), LogDirs: []string{"/d1"}, Now: clk.Now,
		Config: deleteCfg(), OnDirFailure: func(dir string) { failed <- dir }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tp := TopicPartition{"t", 0}
	if _, err := m.GetOrCreateLog(tp, [16]byte{1}, deleteCfg()); err != nil {
		t.Fatal(err)
	}
	if err := m.DeleteLog(tp); err != nil {
		t.Fatal(err)
	}
	sw.Set(vfs.FailAfter(vfs.OpRemove, 0, func(p string) bool { return strings.HasSuffix(p, "-delete") }))
	clk.Advance(testDeleteDelay)
	if err := m.Maintain(); !errors.Is(err, errKafkaStorage) {
		t.Fatalf("Maintain: %v", err)
	}
	if dir := <-failed; dir != "/d1" || !m.DirOffline("/d1") {
		t.Fatalf("failed dir %s", dir)
	}
}
