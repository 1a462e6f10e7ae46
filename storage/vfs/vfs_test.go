package vfs

import (
	"bytes"
	"errors"
	"io"
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
