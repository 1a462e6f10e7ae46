package vfs

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// exercise runs the same script on any FS rooted at root.
func exercise(t *testing.T, fs FS, root string) {
	t.Helper()
	dir := filepath.Join(root, "a", "b")
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := fs.Create(filepath.Join(dir, "x.log"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("HE"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("!"), 9); err != nil { // leaves a zero gap
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if n, err := f.ReadAt(buf, 0); n != 10 || (err != nil && err != io.EOF) || !bytes.Equal(buf, []byte("HEllo\x00\x00\x00\x00!")) {
		t.Fatalf("ReadAt %d %v %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 5); n != 5 || err != io.EOF {
		t.Fatalf("short ReadAt %d %v", n, err)
	}
	if err := f.Truncate(3); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(100); err != nil { // preallocate
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if st.Size() != 100 {
		t.Fatalf("size %d", st.Size())
	}
	if n, _ := f.ReadAt(buf[:4], 2); n != 4 || !bytes.Equal(buf[:4], []byte{'l', 0, 0, 0}) {
		t.Fatalf("after truncate: %q", buf[:4])
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Rename(filepath.Join(dir, "x.log"), filepath.Join(dir, "y.log")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(filepath.Join(dir, "x.log")); !os.IsNotExist(err) {
		t.Fatalf("old name: %v", err)
	}
	ents, err := fs.ReadDir(dir)
	if err != nil || len(ents) != 1 || ents[0].Name() != "y.log" || ents[0].IsDir() {
		t.Fatalf("ReadDir %v %v", ents, err)
	}
	if _, err := fs.Open(filepath.Join(dir, "nope")); !os.IsNotExist(err) {
		t.Fatalf("open missing: %v", err)
	}
	if err := WriteFileAtomic(fs, filepath.Join(dir, "ckpt"), []byte("0\n0\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(fs, filepath.Join(dir, "ckpt")); err != nil || string(b) != "0\n0\n" {
		t.Fatalf("ReadFile %q %v", b, err)
	}
	// directory rename carries the children
	if err := fs.Rename(filepath.Join(root, "a"), filepath.Join(root, "c")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(filepath.Join(root, "c", "b", "y.log")); err != nil {
		t.Fatalf("after dir rename: %v", err)
	}
	if err := fs.SyncDir(filepath.Join(root, "c")); err != nil {
		t.Fatal(err)
	}
	if err := fs.RemoveAll(filepath.Join(root, "c")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(filepath.Join(root, "c", "b")); !os.IsNotExist(err) {
		t.Fatalf("after RemoveAll: %v", err)
	}
}

func TestOSFS(t *testing.T)  { exercise(t, Default, t.TempDir()) }
func TestMemFS(t *testing.T) { exercise(t, NewMem(), "/root") }

func TestMemAppendAndFd(t *testing.T) {
	fs := NewMem()
	f, _ := fs.OpenFile("/f", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	f.Write([]byte("ab"))
	f.Write([]byte("cd"))
	if f.Fd() != NoFd {
		t.Fatal("memfs has no descriptor")
	}
	f.Close()
	if _, err := f.Write([]byte("x")); err == nil {
		t.Fatal("write after close")
	}
	b, _ := ReadFile(fs, "/f")
	if string(b) != "abcd" {
		t.Fatalf("%q", b)
	}
}

func TestCrashClone(t *testing.T) {
	m := NewMemFS()
	f, _ := m.Create("/f")
	f.Write([]byte("durable"))
	f.Sync()
	m.SyncDir("/")
	f.Write([]byte("-lost"))
	c := m.CrashClone()
	b, _ := ReadFile(c, "/f")
	if string(b) != "durable" {
		t.Fatalf("%q", b)
	}
	b, _ = ReadFile(m, "/f")
	if string(b) != "durable-lost" {
		t.Fatalf("%q", b)
	}
	// kill -9: the page cache survives, unsynced bytes and entries too
	g, _ := m.Create("/g")
	g.Write([]byte("unsynced"))
	k := m.CrashClone(CrashKeepAll())
	if b, _ := ReadFile(k, "/f"); string(b) != "durable-lost" {
		t.Fatalf("kill: %q", b)
	}
	if b, _ := ReadFile(k, "/g"); string(b) != "unsynced" {
		t.Fatalf("kill: %q", b)
	}
}

// exists reports whether name is in fs.
func exists(fs FS, name string) bool {
	_, err := fs.Stat(name)
	return err == nil
}

// A crash keeps only the directory entries a SyncDir of their directory
// covered: creates, renames and removes after it are undone.
func TestCrashCloneDirectoryEntries(t *testing.T) {
	m := NewMemFS()
	if err := MkdirAllSync(m, "/d/p", 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		f, err := m.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(data))
		f.Sync()
		f.Close()
	}
	write("/d/p/kept", "k")
	write("/d/p/old", "o")
	write("/d/p/gone", "g")
	m.SyncDir("/d/p")
	// after the sync: a new file (synced data, unsynced entry), a rename and
	// a remove
	write("/d/p/new", "n")
	if err := m.Rename("/d/p/old", "/d/p/renamed"); err != nil {
		t.Fatal(err)
	}
	if err := m.Remove("/d/p/gone"); err != nil {
		t.Fatal(err)
	}
	m.MkdirAll("/d/q", 0o755) // a directory whose entry in /d was never synced
	write("/d/q/x", "x")
	m.SyncDir("/d/q")

	c := m.CrashClone()
	for name, want := range map[string]bool{"/d/p/kept": true, "/d/p/old": true, "/d/p/gone": true,
		"/d/p/new": false, "/d/p/renamed": false, "/d/q": false, "/d/q/x": false} {
		if got := exists(c, name); got != want {
			t.Errorf("after the crash %s exists: %v, want %v", name, got, want)
		}
	}
	if b, _ := ReadFile(c, "/d/p/old"); string(b) != "o" {
		t.Fatalf("renamed file's old name holds %q", b)
	}
	// the clone is synced: crashing it again keeps it as it is
	if c2 := c.CrashClone(); !exists(c2, "/d/p/old") || exists(c2, "/d/p/new") {
		t.Fatal("a crash of the crash image changed it")
	}
	// once synced, the changes survive
	m.SyncDir("/d/p")
	m.SyncDir("/d")
	c = m.CrashClone()
	for name, want := range map[string]bool{"/d/p/old": false, "/d/p/gone": false, "/d/p/new": true,
		"/d/p/renamed": true, "/d/q/x": true} {
		if got := exists(c, name); got != want {
			t.Errorf("after sync and crash %s exists: %v, want %v", name, got, want)
		}
	}
}

// CrashKeepSome keeps part of what was not synced: a torn tail, whole
// renames. The same seed gives the same crash.
func TestCrashKeepSome(t *testing.T) {
	m := NewMemFS()
	f, _ := m.Create("/f")
	f.Write([]byte("synced"))
	f.Sync()
	m.SyncDir("/")
	f.Write(bytes.Repeat([]byte("u"), 10000))
	g, _ := m.Create("/g")
	g.Sync()
	m.SyncDir("/")
	m.Rename("/g", "/h")
	sizes := map[int64]bool{}
	renamed := map[bool]bool{}
	for seed := range uint64(64) {
		c := m.CrashClone(CrashKeepSome(rand.New(rand.NewPCG(seed, 0)), 50))
		c2 := m.CrashClone(CrashKeepSome(rand.New(rand.NewPCG(seed, 0)), 50))
		b, _ := ReadFile(c, "/f")
		b2, _ := ReadFile(c2, "/f")
		if !bytes.Equal(b, b2) {
			t.Fatalf("seed %d: two crashes differ", seed)
		}
		if len(b) < 6 || string(b[:6]) != "synced" {
			t.Fatalf("seed %d: synced bytes lost: %q", seed, b[:min(len(b), 10)])
		}
		sizes[int64(len(b))] = true
		g, h := exists(c, "/g"), exists(c, "/h")
		if g == h {
			t.Fatalf("seed %d: a rename half kept (old %v, new %v)", seed, g, h)
		}
		renamed[h] = true
	}
	if len(sizes) < 3 || len(renamed) != 2 {
		t.Fatalf("crashes too alike: sizes %v renamed %v", sizes, renamed)
	}
}

// MkdirAllSync makes every directory it creates durable.
func TestMkdirAllSync(t *testing.T) {
	m := NewMemFS()
	if err := MkdirAllSync(m, "/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
	if !exists(m.CrashClone(), "/a/b/c") {
		t.Fatal("created directories lost in a crash")
	}
	if err := MkdirAllSync(m, "/a/b/c", 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestInjecting(t *testing.T) {
	mem := NewMem()
	var sw Switch
	fs := NewInjecting(mem, sw.Inject)
	f, err := fs.Create("/f")
	if err != nil {
		t.Fatal(err)
	}
	// short write
	sw.Set(func(op Op) Fault {
		if op.Kind == OpWrite {
			return Fault{Keep: 3, Err: ErrInjected}
		}
		return Fault{}
	})
	if n, err := f.Write([]byte("abcdef")); n != 3 || !errors.Is(err, ErrInjected) {
		t.Fatalf("short write %d %v", n, err)
	}
	// torn: reported whole, only a prefix lands
	sw.Set(func(op Op) Fault {
		if op.Kind == OpWrite {
			return Fault{Keep: 2, Torn: true}
		}
		return Fault{}
	})
	if n, err := f.WriteAt([]byte("XYZW"), 3); n != 4 || err != nil {
		t.Fatalf("torn write %d %v", n, err)
	}
	// failed fsync, then everything works again
	sw.Set(FailAfter(OpSync, 0, nil))
	if err := f.Sync(); !errors.Is(err, ErrInjected) {
		t.Fatalf("sync: %v", err)
	}
	sw.Set(nil)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	b, _ := ReadFile(mem, "/f")
	if string(b) != "abcXY" {
		t.Fatalf("%q", b)
	}
	// failures by path
	sw.Set(FailAfter(OpRename, 0, func(p string) bool { return filepath.Base(p) == "f" }))
	if err := fs.Rename("/f", "/g"); !errors.Is(err, ErrInjected) {
		t.Fatalf("rename: %v", err)
	}
	if _, err := fs.Create("/h"); err != nil {
		t.Fatal(err)
	}
}
