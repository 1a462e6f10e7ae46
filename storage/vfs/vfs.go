// Package vfs is the file-system seam under the storage package.
//
// Every segment, index and checkpoint read or write in kgo-broker goes through an FS,
// so that tests can swap the operating system for an in-memory file system (NewMem)
// and wrap either one with fault injection (NewInjecting): a failed write, a failed
// fsync, a short write or a torn tail, decided per operation by an Injector. The shape
// follows pebble's vfs and errorfs packages.
//
//	Default       the operating system (os package)
//	NewMem()      in-memory; Fd() is ^uintptr(0), so FileRegion falls back to ReadAt+Write
//	NewInjecting  wraps any FS and asks an Injector before every operation
//
// # Crash model
//
// MemFS.CrashClone is a power loss: the clone holds what the next boot finds.
//
//   - A file's bytes are those of its last File.Sync (Datasync here is Sync).
//     Writes, truncations and preallocation after it are gone.
//   - A directory entry (a file or directory created in it, renamed into or
//     out of it, removed from it) exists as of the last SyncDir of that
//     directory. A new file whose data was synced but whose directory was
//     not is gone; a rename not covered is undone (the file is back under
//     its old name, with the bytes its node had synced); a remove not
//     covered is undone. Creating a directory needs a SyncDir of its parent
//     (MkdirAllSync).
//   - With CrashKeepSome, each unsynced change survives with a seeded
//     probability instead: file tails torn at a random length (the last
//     block possibly zeros), directory entry changes whole (a rename is
//     atomic).
//
// So the rules code must follow: fsync a file before publishing it by
// rename (WriteFileAtomic), fsync the directory after creating, renaming or
// removing an entry whose survival matters, and expect anything not synced
// to be missing, torn or still there after a crash.
package vfs

import (
	"io"
	"os"
	"path/filepath"
)

// File is an open file. ReadAt and WriteAt never move the file offset, so one File
// can be read concurrently (pread) while another goroutine appends to it.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (os.FileInfo, error)
	Name() string
	// Fd returns the OS descriptor, or ^uintptr(0) when there is none (memfs):
	// callers must then not use sendfile.
	Fd() uintptr
}

// FS is a file system.
type FS interface {
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	Create(name string) (File, error)
	Open(name string) (File, error)
	Remove(name string) error
	RemoveAll(path string) error
	Rename(oldpath, newpath string) error
	MkdirAll(path string, perm os.FileMode) error
	ReadDir(dir string) ([]os.DirEntry, error)
	Stat(name string) (os.FileInfo, error)
	// SyncDir fsyncs a directory so that creates, renames and removes in it are durable.
	SyncDir(dir string) error
}

// NoFd is what File.Fd returns when there is no OS descriptor.
const NoFd = ^uintptr(0)

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Fd() uintptr { return f.File.Fd() }

func wrap(f *os.File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	return wrap(os.OpenFile(name, flag, perm))
}
func (osFS) Create(name string) (File, error)             { return wrap(os.Create(name)) }
func (osFS) Open(name string) (File, error)               { return wrap(os.Open(name)) }
func (osFS) Remove(name string) error                     { return os.Remove(name) }
func (osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (osFS) Rename(o, n string) error                     { return os.Rename(o, n) }
func (osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (osFS) ReadDir(dir string) ([]os.DirEntry, error)    { return os.ReadDir(dir) }
func (osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }
func (osFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return serr
	}
	return cerr
}

// ReadFile reads a whole file through fs.
func ReadFile(fs FS, name string) ([]byte, error) {
	f, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, st.Size())
	n, err := f.ReadAt(buf, 0)
	if err == io.EOF && n == len(buf) {
		err = nil
	}
	return buf[:n], err
}

// MkdirAllSync is MkdirAll that makes what it creates survive a crash: the
// parent of every directory it creates is fsynced after it, top down (as
// LogManager does after creating a log dir). Existing directories are left
// alone.
func MkdirAllSync(fs FS, dir string, perm os.FileMode) error {
	created, err := MkdirAllCreated(fs, dir, perm)
	if err != nil {
		return err
	}
	return SyncCreated(fs, created)
}

// MkdirAllCreated is MkdirAll returning the directories it created, dir
// first, without syncing anything: a caller that fills a new directory
// syncs it and then SyncCreated(created), one sync per directory instead of
// one per file (a new partition's log, issue 16).
func MkdirAllCreated(fs FS, dir string, perm os.FileMode) (created []string, err error) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		} else if !os.IsNotExist(err) {
			return nil, err
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(created) == 0 {
		return nil, nil
	}
	if err := fs.MkdirAll(dir, perm); err != nil {
		return nil, err
	}
	return created, nil
}

// SyncCreated fsyncs the parent of every directory MkdirAllCreated made,
// top down, so that each one's entry survives a crash.
func SyncCreated(fs FS, created []string) error {
	for i := len(created) - 1; i >= 0; i-- {
		if err := fs.SyncDir(filepath.Dir(created[i])); err != nil {
			return err
		}
	}
	return nil
}

// WriteFileAtomic writes data to name.tmp, fsyncs it, renames it over name and fsyncs
// the directory: the way Kafka writes checkpoint files (Utils.atomicMoveWithFallback).
func WriteFileAtomic(fs FS, name string, data []byte) error {
	if err := WriteFileRename(fs, name, data); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(name))
}

// WriteFileRename is WriteFileAtomic without the directory sync, for a
// caller that syncs the directory once after writing several files in it:
// a crash before that sync leaves the old file or none, never a torn one.
func WriteFileRename(fs FS, name string, data []byte) error {
	tmp := name + ".tmp"
	f, err := fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return fs.Rename(tmp, name)
}
