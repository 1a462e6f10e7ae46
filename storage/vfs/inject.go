package vfs

import (
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// OpKind names the operation an Injector is asked about.
type OpKind int

const (
	OpOpen  OpKind = iota // OpenFile, Create, Open
	OpRead                // Read, ReadAt
	OpWrite               // Write, WriteAt
	OpSync                // File.Sync
	OpTruncate
	OpClose
	OpStat
	OpRemove // Remove, RemoveAll
	OpRename
	OpMkdir
	OpReadDir
	OpSyncDir
)

var opNames = [...]string{"open", "read", "write", "sync", "truncate", "close", "stat", "remove", "rename", "mkdir", "readdir", "syncdir"}

func (k OpKind) String() string {
	if int(k) < len(opNames) {
		return opNames[k]
	}
	return "unknown"
}

// Op describes one operation.
type Op struct {
	Kind OpKind
	Path string // file or directory name (the old name for a rename)
	Off  int64  // file offset for ReadAt/WriteAt, -1 for Read/Write
	Len  int    // bytes to read or write
}

// Fault is an Injector's decision. The zero Fault lets the operation run.
//
//   - Err set, Keep zero, Torn false: the operation fails without any effect.
//   - Keep > 0 on a write with Err set: a short write; the first Keep bytes are
//     written and the call returns (Keep, Err).
//   - Torn on a write: only the first Keep bytes reach the file but the call reports
//     success for the whole buffer; the tail is "lost", as after a crash before fsync.
type Fault struct {
	Err  error
	Keep int
	Torn bool
}

// Injector decides, for every operation, whether and how it fails.
type Injector func(op Op) Fault

// ErrInjected is the error the helper injectors return.
var ErrInjected = errors.New("vfs: injected fault")

// NewInjecting wraps inner so that inj is consulted before every operation.
func NewInjecting(inner FS, inj Injector) FS { return &injFS{inner: inner, inj: inj} }

// FailAfter returns an Injector that lets n operations of kind k through (on paths
// accepted by match, nil = all) and fails every later one with ErrInjected.
func FailAfter(k OpKind, n int64, match func(path string) bool) Injector {
	var seen atomic.Int64
	return func(op Op) Fault {
		if op.Kind != k || (match != nil && !match(op.Path)) {
			return Fault{}
		}
		if seen.Add(1) > n {
			return Fault{Err: ErrInjected}
		}
		return Fault{}
	}
}

// Switch is an Injector that can be turned on and off from a test.
// The zero Switch is usable: its lock is ranked (a leaf) on first use.
type Switch struct {
	once sync.Once
	mu   lockrank.Mutex
	fn   Injector
}

func (s *Switch) lock() {
	s.once.Do(func() { s.mu.SetRank(lockrank.FaultSwitch) })
	s.mu.Lock()
}

// Set installs fn (nil = no faults).
func (s *Switch) Set(fn Injector) { s.lock(); s.fn = fn; s.mu.Unlock() }

// Inject is the Injector.
func (s *Switch) Inject(op Op) Fault {
	s.lock()
	fn := s.fn
	s.mu.Unlock()
	if fn == nil {
		return Fault{}
	}
	return fn(op)
}

type injFS struct {
	inner FS
	inj   Injector
}

func (f *injFS) check(k OpKind, path string) error {
	return f.inj(Op{Kind: k, Path: path, Off: -1}).Err
}

func (f *injFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := f.check(OpOpen, name); err != nil {
		return nil, err
	}
	inner, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &injFile{File: inner, inj: f.inj, name: name}, nil
}
func (f *injFS) Create(name string) (File, error) {
	return f.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}
func (f *injFS) Open(name string) (File, error) { return f.OpenFile(name, os.O_RDONLY, 0) }
func (f *injFS) Remove(name string) error {
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	return f.inner.Remove(name)
}
func (f *injFS) RemoveAll(path string) error {
	if err := f.check(OpRemove, path); err != nil {
		return err
	}
	return f.inner.RemoveAll(path)
}
func (f *injFS) Rename(o, n string) error {
	if err := f.check(OpRename, o); err != nil {
		return err
	}
	return f.inner.Rename(o, n)
}
func (f *injFS) MkdirAll(path string, perm os.FileMode) error {
	if err := f.check(OpMkdir, path); err != nil {
		return err
	}
	return f.inner.MkdirAll(path, perm)
}
func (f *injFS) ReadDir(dir string) ([]os.DirEntry, error) {
	if err := f.check(OpReadDir, dir); err != nil {
		return nil, err
	}
	return f.inner.ReadDir(dir)
}
func (f *injFS) Stat(name string) (os.FileInfo, error) {
	if err := f.check(OpStat, name); err != nil {
		return nil, err
	}
	return f.inner.Stat(name)
}
func (f *injFS) SyncDir(dir string) error {
	if err := f.check(OpSyncDir, dir); err != nil {
		return err
	}
	return f.inner.SyncDir(dir)
}

type injFile struct {
	File
	inj  Injector
	name string
}

func (f *injFile) Read(p []byte) (int, error) {
	if err := f.inj(Op{Kind: OpRead, Path: f.name, Off: -1, Len: len(p)}).Err; err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *injFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.inj(Op{Kind: OpRead, Path: f.name, Off: off, Len: len(p)}).Err; err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}

func (f *injFile) write(p []byte, off int64, do func([]byte) (int, error)) (int, error) {
	ft := f.inj(Op{Kind: OpWrite, Path: f.name, Off: off, Len: len(p)})
	if ft.Torn {
		keep := min(max(ft.Keep, 0), len(p))
		if _, err := do(p[:keep]); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if ft.Err == nil {
		return do(p)
	}
	if ft.Keep > 0 {
		keep := min(ft.Keep, len(p))
		n, err := do(p[:keep])
		if err != nil {
			return n, err
		}
		if n == len(p) {
			return n, nil
		}
		if ft.Err == nil {
			ft.Err = io.ErrShortWrite
		}
		return n, ft.Err
	}
	return 0, ft.Err
}

func (f *injFile) Write(p []byte) (int, error) { return f.write(p, -1, f.File.Write) }
func (f *injFile) WriteAt(p []byte, off int64) (int, error) {
	return f.write(p, off, func(b []byte) (int, error) { return f.File.WriteAt(b, off) })
}
func (f *injFile) Sync() error {
	if err := f.inj(Op{Kind: OpSync, Path: f.name, Off: -1}).Err; err != nil {
		return err
	}
	return f.File.Sync()
}
func (f *injFile) Truncate(size int64) error {
	if err := f.inj(Op{Kind: OpTruncate, Path: f.name, Off: size}).Err; err != nil {
		return err
	}
	return f.File.Truncate(size)
}
func (f *injFile) Close() error {
	if err := f.inj(Op{Kind: OpClose, Path: f.name, Off: -1}).Err; err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}
func (f *injFile) Stat() (os.FileInfo, error) {
	if err := f.inj(Op{Kind: OpStat, Path: f.name, Off: -1}).Err; err != nil {
		return nil, err
	}
	return f.File.Stat()
}
