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

// WriteFileAtomic writes data to name.tmp, fsyncs it, renames it over name and fsyncs
// the directory: the way Kafka writes checkpoint files (Utils.atomicMoveWithFallback).
func WriteFileAtomic(fs FS, name string, data []byte) error {
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
	if err := fs.Rename(tmp, name); err != nil {
		return err
	}
	return fs.SyncDir(filepath.Dir(name))
}
