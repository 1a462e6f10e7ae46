package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// MemFS is an in-memory FS for tests that models what a crash keeps
// (pebble's vfs.NewCrashableMem and CrashClone): a file's bytes survive a
// power loss only up to its last File.Sync, and a directory entry (a file
// or directory created, renamed or removed in it) only once a SyncDir of
// that directory covered it. CrashClone returns the file system as the next
// boot finds it.
//
// The namespace is a flat map from cleaned path to node, so a rename moves
// a node (and its subtree) to new keys: open files keep their node, as a
// descriptor keeps its inode. Each directory node remembers the children it
// had at its last SyncDir, by name, pointing at the nodes they named then.
type MemFS struct {
	mu    lockrank.Mutex      // taken before file nodes' locks
	nodes map[string]*memNode // cleaned absolute-ish path -> node; dirs and files
	seq   int64               // numbers directory entry changes, in order
	// open counts the files opened and not closed yet (what a process's
	// file descriptors would be), for tests of descriptor use.
	open atomic.Int64
}

// OpenFiles is the number of files opened and not yet closed.
func (m *MemFS) OpenFiles() int { return int(m.open.Load()) }

type memNode struct {
	dir bool
	// syncedChildren (directories, guarded by MemFS.mu) is the directory's
	// entries as of its last SyncDir; nil when never synced (empty after a
	// crash). pending lists the entry changes since, in order.
	syncedChildren map[string]*memNode
	pending        []dirChange

	mu     lockrank.Mutex // a leaf; guards data, size, synced, ssize, mod
	data   []byte         // bytes [len(data), size) are zeros (sparse preallocation)
	size   int64
	synced []byte // the bytes as of the last Sync
	ssize  int64
	mod    time.Time
}

// NewMem returns an empty in-memory file system whose root directory exists.
func NewMem() FS { return newMem() }

// NewMemFS is NewMem with the concrete type, for CrashClone.
func NewMemFS() *MemFS { return newMem() }

func newMem() *MemFS {
	m := newMemFS()
	m.nodes["/"] = newNode(true, time.Time{})
	m.nodes["/"].syncedChildren = map[string]*memNode{}
	m.nodes["."] = newNode(true, time.Time{})
	m.nodes["."].syncedChildren = map[string]*memNode{}
	return m
}

func newMemFS() *MemFS {
	m := &MemFS{nodes: map[string]*memNode{}}
	m.mu.SetRank(lockrank.MemFS)
	return m
}

func newNode(dir bool, mod time.Time) *memNode {
	n := &memNode{dir: dir, mod: mod}
	n.mu.SetRank(lockrank.MemNode)
	return n
}

func clean(name string) string {
	c := filepath.ToSlash(filepath.Clean(name))
	return c
}

func parent(name string) string {
	p := path.Dir(name)
	return p
}

func pathErr(op, name string, err error) error { return &os.PathError{Op: op, Path: name, Err: err} }

// dirChange is one directory entry change: name now names node (nil:
// removed). The two halves of a rename share a seq.
type dirChange struct {
	seq  int64
	name string
	node *memNode
}

// changeLocked records an entry change of the directory at path dir.
// m.mu must be held.
func (m *MemFS) changeLocked(dir, name string, n *memNode, seq int64) {
	if d := m.nodes[dir]; d != nil && d.dir {
		d.pending = append(d.pending, dirChange{seq: seq, name: name, node: n})
	}
}

func (m *MemFS) nextSeqLocked() int64 { m.seq++; return m.seq }

// CrashOption changes what CrashClone keeps.
type CrashOption func(*crashCfg)

type crashCfg struct {
	rng     *rand.Rand
	keepPct int
	all     bool
}

// CrashKeepAll makes CrashClone a process crash (kill -9) rather than a
// power loss: the kernel's page cache survives it, so everything written
// is kept, synced or not.
func CrashKeepAll() CrashOption { return func(c *crashCfg) { c.all = true } }

// CrashKeepSome makes a crash keep some of what was not synced, as a real
// disk may, decided by rng (seed it for a replayable crash). The directory
// entry changes not covered by a SyncDir survive up to a random point in
// the order they were made, as a file system that journals its metadata in
// order keeps them (a rename is atomic: a file is found under its old name
// or its new one, never both or neither). Each file with unsynced bytes
// keeps them with probability keepPct/100, up to a random length past what
// was synced (a torn tail; a quarter of the time the last 4 KiB block of
// what it kept reads as zeros, a block allocated but never written).
// Without it CrashClone keeps nothing unsynced.
func CrashKeepSome(rng *rand.Rand, keepPct int) CrashOption {
	return func(c *crashCfg) { c.rng, c.keepPct = rng, keepPct }
}

func (c *crashCfg) keep() bool { return c.rng != nil && c.rng.IntN(100) < c.keepPct }

// CrashClone returns a copy of the file system as it would be found after a
// power loss: only the directory entries covered by a SyncDir of their
// directory exist (the roots always do), and every file holds only what it
// held at its last Sync. Options let a crash keep part of the rest. The
// clone's state is synced: crashing it again changes nothing.
func (m *MemFS) CrashClone(opts ...CrashOption) *MemFS {
	var cfg crashCfg
	for _, o := range opts {
		o(&cfg)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c := newMemFS()
	kept := m.crashEntriesLocked(&cfg)
	files := map[*memNode]*memNode{}
	var walk func(p string, n *memNode)
	walk = func(p string, n *memNode) {
		children := kept[n]
		nn := newNode(true, n.mod)
		nn.syncedChildren = map[string]*memNode{}
		c.nodes[p] = nn
		for _, name := range sortedNames(children) {
			child := children[name]
			cp := path.Join(p, name)
			if p == "." {
				cp = name
			}
			if child.dir {
				walk(cp, child)
			} else {
				f, ok := files[child]
				if !ok {
					f = child.crashFile(&cfg)
					files[child] = f
				}
				c.nodes[cp] = f
			}
			nn.syncedChildren[name] = c.nodes[cp]
		}
	}
	walk("/", m.nodes["/"])
	walk(".", m.nodes["."])
	return c
}

// crashEntriesLocked gives, for every directory reachable from the roots,
// its entries after the crash: those of its last SyncDir, then its pending
// changes up to the cut, a point in the order of every directory's changes
// (none without CrashKeepSome, a random one with it). m.mu must be held.
func (m *MemFS) crashEntriesLocked(cfg *crashCfg) map[*memNode]map[string]*memNode {
	cut := int64(0)
	switch {
	case cfg.all:
		cut = m.seq
	case cfg.rng != nil:
		var seqs []int64
		for _, k := range sortedNames(m.nodes) {
			for _, ch := range m.nodes[k].pending {
				seqs = append(seqs, ch.seq)
			}
		}
		// the pending changes of removed directories no longer matter
		sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
		if i := cfg.rng.IntN(len(seqs) + 1); i > 0 {
			cut = seqs[i-1]
		}
	}
	out := map[*memNode]map[string]*memNode{}
	var visit func(d *memNode)
	visit = func(d *memNode) {
		if _, ok := out[d]; ok {
			return
		}
		kept := map[string]*memNode{}
		for name, n := range d.syncedChildren {
			kept[name] = n
		}
		for _, ch := range d.pending {
			if ch.seq > cut {
				break
			}
			if ch.node == nil {
				delete(kept, ch.name)
			} else {
				kept[ch.name] = ch.node
			}
		}
		out[d] = kept
		for _, name := range sortedNames(kept) {
			if n := kept[name]; n.dir {
				visit(n)
			}
		}
	}
	visit(m.nodes["/"])
	visit(m.nodes["."])
	return out
}

// crashFile is a file node as the crash leaves it: its synced bytes, or,
// when cfg keeps its unsynced change, the current bytes torn at a random
// point past the synced size.
func (n *memNode) crashFile(cfg *crashCfg) *memNode {
	n.mu.Lock()
	defer n.mu.Unlock()
	nn := newNode(false, n.mod)
	data, size := n.synced, n.ssize
	if cfg.all {
		data, size = n.data, n.size
	} else if cfg.rng != nil && (n.size != n.ssize || !bytes.Equal(n.data, n.synced)) && cfg.keep() {
		data, size = n.data, n.size
		if size > n.ssize {
			size = n.ssize + cfg.rng.Int64N(size-n.ssize+1)
			data = data[:min(int64(len(data)), size)]
			if cfg.rng.IntN(4) == 0 && size > n.ssize {
				// the last block was allocated but its bytes never written
				zero := max(n.ssize, (size-1)/4096*4096)
				d := append([]byte(nil), data...)
				if zero < int64(len(d)) {
					clear(d[zero:])
				}
				data = d
			}
		}
	}
	nn.data = append([]byte(nil), data[:min(int64(len(data)), size)]...)
	nn.synced = append([]byte(nil), nn.data...)
	nn.size, nn.ssize = size, size
	return nn
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m *MemFS) lookupDir(name string) error {
	p := parent(name)
	n, ok := m.nodes[p]
	if !ok {
		return pathErr("open", name, fs.ErrNotExist)
	}
	if !n.dir {
		return pathErr("open", name, errors.New("not a directory"))
	}
	return nil
}

func (m *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	c := clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[c]
	if !ok {
		if flag&os.O_CREATE == 0 {
			return nil, pathErr("open", name, fs.ErrNotExist)
		}
		if err := m.lookupDir(c); err != nil {
			return nil, err
		}
		n = newNode(false, time.Now())
		m.nodes[c] = n
		m.changeLocked(parent(c), path.Base(c), n, m.nextSeqLocked())
	} else if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
		return nil, pathErr("open", name, fs.ErrExist)
	}
	if n.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0 {
		return nil, pathErr("open", name, errors.New("is a directory"))
	}
	if flag&os.O_TRUNC != 0 && !n.dir {
		n.mu.Lock()
		n.data = n.data[:0]
		n.size = 0
		n.mu.Unlock()
	}
	f := &memFile{fs: m, name: name, node: n, flag: flag}
	f.mu.SetRank(lockrank.MemFile)
	m.open.Add(1)
	return f, nil
}

func (m *MemFS) Create(name string) (File, error) {
	return m.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}
func (m *MemFS) Open(name string) (File, error) { return m.OpenFile(name, os.O_RDONLY, 0) }

func (m *MemFS) Remove(name string) error {
	c := clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[c]
	if !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir {
		for k := range m.nodes {
			if k != c && parent(k) == c {
				return pathErr("remove", name, errors.New("directory not empty"))
			}
		}
	}
	delete(m.nodes, c)
	m.changeLocked(parent(c), path.Base(c), nil, m.nextSeqLocked())
	return nil
}

func under(k, dir string) bool {
	return k == dir || strings.HasPrefix(k, strings.TrimSuffix(dir, "/")+"/")
}

func (m *MemFS) RemoveAll(p string) error {
	c := clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.nodes[c]; ok && c != "/" && c != "." {
		m.changeLocked(parent(c), path.Base(c), nil, m.nextSeqLocked())
	}
	for k := range m.nodes {
		if under(k, c) && k != "/" && k != "." {
			delete(m.nodes, k)
		}
	}
	return nil
}

func (m *MemFS) Rename(oldpath, newpath string) error {
	o, n := clean(oldpath), clean(newpath)
	m.mu.Lock()
	defer m.mu.Unlock()
	src, ok := m.nodes[o]
	if !ok {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	if err := m.lookupDir(n); err != nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrNotExist}
	}
	if dst, ok := m.nodes[n]; ok && dst.dir != src.dir {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	if o == n {
		return nil
	}
	seq := m.nextSeqLocked()
	m.changeLocked(parent(o), path.Base(o), nil, seq)
	m.changeLocked(parent(n), path.Base(n), src, seq)
	if !src.dir {
		delete(m.nodes, o)
		m.nodes[n] = src
		return nil
	}
	moved := map[string]*memNode{}
	for k, v := range m.nodes {
		if under(k, o) {
			moved[n+strings.TrimPrefix(k, o)] = v
			delete(m.nodes, k)
		}
	}
	for k := range m.nodes {
		if under(k, n) {
			delete(m.nodes, k)
		}
	}
	for k, v := range moved {
		m.nodes[k] = v
	}
	return nil
}

func (m *MemFS) MkdirAll(p string, perm os.FileMode) error {
	c := clean(p)
	m.mu.Lock()
	defer m.mu.Unlock()
	var created []string
	defer func() {
		for i := len(created) - 1; i >= 0; i-- { // parents first
			d := created[i]
			m.changeLocked(parent(d), path.Base(d), m.nodes[d], m.nextSeqLocked())
		}
	}()
	for d := c; ; d = parent(d) {
		if n, ok := m.nodes[d]; ok {
			if !n.dir {
				return pathErr("mkdir", p, errors.New("not a directory"))
			}
		} else {
			nd := newNode(true, time.Now())
			m.nodes[d] = nd
			created = append(created, d)
		}
		if d == "/" || d == "." || parent(d) == d {
			return nil
		}
	}
}

func (m *MemFS) ReadDir(dir string) ([]os.DirEntry, error) {
	c := clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[c]
	if !ok {
		return nil, pathErr("readdir", dir, fs.ErrNotExist)
	}
	if !n.dir {
		return nil, pathErr("readdir", dir, errors.New("not a directory"))
	}
	var out []os.DirEntry
	for k, v := range m.nodes {
		if k != c && parent(k) == c {
			out = append(out, fs.FileInfoToDirEntry(v.info(path.Base(k))))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (m *MemFS) Stat(name string) (os.FileInfo, error) {
	c := clean(name)
	m.mu.Lock()
	n, ok := m.nodes[c]
	m.mu.Unlock()
	if !ok {
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	return n.info(path.Base(c)), nil
}

// SyncDir makes the directory's current entries durable: a crash after it
// finds them (and the nodes they name) as they are now.
func (m *MemFS) SyncDir(dir string) error {
	c := clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.nodes[c]
	if !ok || !n.dir {
		return pathErr("sync", dir, fs.ErrNotExist)
	}
	children := map[string]*memNode{}
	for k, v := range m.nodes {
		if k != c && k != "/" && k != "." && parent(k) == c {
			children[path.Base(k)] = v
		}
	}
	n.syncedChildren = children
	n.pending = nil
	return nil
}

type memInfo struct {
	name string
	size int64
	dir  bool
	mod  time.Time
}

func (n *memNode) info(name string) memInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return memInfo{name: name, size: n.size, dir: n.dir, mod: n.mod}
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

type memFile struct {
	fs     *MemFS
	name   string
	node   *memNode
	flag   int
	mu     lockrank.Mutex // guards pos, closed; taken before the node's lock
	pos    int64
	closed bool
}

var errClosed = errors.New("vfs: file already closed")

func (f *memFile) readable() bool { return f.flag&os.O_WRONLY == 0 }
func (f *memFile) writable() bool { return f.flag&(os.O_WRONLY|os.O_RDWR) != 0 }

func (f *memFile) Read(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, errClosed
	}
	n, err := f.readAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) readAt(p []byte, off int64) (int, error) {
	if !f.readable() {
		return 0, pathErr("read", f.name, errors.New("bad file descriptor"))
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, errors.New("negative offset"))
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if off >= f.node.size {
		return 0, io.EOF
	}
	want := min(int64(len(p)), f.node.size-off)
	n := 0
	if off < int64(len(f.node.data)) {
		n = copy(p[:want], f.node.data[off:])
	}
	clear(p[n:want])
	if want < int64(len(p)) {
		return int(want), io.EOF
	}
	return int(want), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return 0, errClosed
	}
	return f.readAt(p, off)
}

func (f *memFile) writeAt(p []byte, off int64) (int, error) {
	if !f.writable() {
		return 0, pathErr("write", f.name, errors.New("bad file descriptor"))
	}
	if off < 0 {
		return 0, pathErr("writeat", f.name, errors.New("negative offset"))
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	end := off + int64(len(p))
	if end > int64(len(f.node.data)) {
		old := int64(len(f.node.data))
		if end > int64(cap(f.node.data)) {
			nd := make([]byte, end, max(end, 2*int64(cap(f.node.data))))
			copy(nd, f.node.data)
			f.node.data = nd
		} else {
			f.node.data = f.node.data[:end]
			clear(f.node.data[old:end])
		}
	}
	copy(f.node.data[off:], p)
	f.node.size = max(f.node.size, end)
	f.node.mod = time.Now()
	return len(p), nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return 0, errClosed
	}
	if f.flag&os.O_APPEND != 0 {
		f.node.mu.Lock()
		f.pos = f.node.size
		f.node.mu.Unlock()
	}
	n, err := f.writeAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return 0, errClosed
	}
	if f.flag&os.O_APPEND != 0 {
		return 0, pathErr("writeat", f.name, errors.New("invalid use of WriteAt on file opened with O_APPEND"))
	}
	return f.writeAt(p, off)
}

func (f *memFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errClosed
	}
	f.closed = true
	f.fs.open.Add(-1)
	return nil
}

func (f *memFile) Sync() error {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if closed {
		return errClosed
	}
	f.node.mu.Lock()
	f.node.synced = append(f.node.synced[:0], f.node.data...)
	f.node.ssize = f.node.size
	f.node.mu.Unlock()
	return nil
}

func (f *memFile) Truncate(size int64) error {
	if !f.writable() {
		return pathErr("truncate", f.name, errors.New("bad file descriptor"))
	}
	if size < 0 {
		return pathErr("truncate", f.name, errors.New("invalid argument"))
	}
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if size < int64(len(f.node.data)) {
		f.node.data = f.node.data[:size]
	}
	f.node.size = size
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	return f.node.info(path.Base(clean(f.name))), nil
}
func (f *memFile) Name() string { return f.name }
func (f *memFile) Fd() uintptr  { return NoFd }
