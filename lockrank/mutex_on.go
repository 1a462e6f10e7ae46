//go:build invariants || race

package lockrank

import (
	"bytes"
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// Enabled reports whether acquisitions are checked (-tags invariants or
// the race detector).
const Enabled = true

// Mutex is a sync.Mutex whose acquisitions are checked against its rank.
type Mutex struct {
	mu   sync.Mutex
	rank Rank
}

// SetRank ranks the mutex; call it before the mutex is shared.
func (m *Mutex) SetRank(r Rank) { m.rank = r }

func (m *Mutex) Lock() {
	acquire(m.rank, unsafe.Pointer(m))
	m.mu.Lock()
}

func (m *Mutex) TryLock() bool {
	if !m.mu.TryLock() {
		return false
	}
	acquire(m.rank, unsafe.Pointer(m))
	return true
}

func (m *Mutex) Unlock() {
	release(m.rank, unsafe.Pointer(m))
	m.mu.Unlock()
}

// RWMutex is a sync.RWMutex whose acquisitions are checked against its rank.
type RWMutex struct {
	mu   sync.RWMutex
	rank Rank
}

// SetRank ranks the mutex; call it before the mutex is shared.
func (m *RWMutex) SetRank(r Rank) { m.rank = r }

func (m *RWMutex) Lock() {
	acquire(m.rank, unsafe.Pointer(m))
	m.mu.Lock()
}

func (m *RWMutex) TryLock() bool {
	if !m.mu.TryLock() {
		return false
	}
	acquire(m.rank, unsafe.Pointer(m))
	return true
}

func (m *RWMutex) Unlock() {
	release(m.rank, unsafe.Pointer(m))
	m.mu.Unlock()
}

func (m *RWMutex) RLock() {
	acquire(m.rank, unsafe.Pointer(m))
	m.mu.RLock()
}

func (m *RWMutex) TryRLock() bool {
	if !m.mu.TryRLock() {
		return false
	}
	acquire(m.rank, unsafe.Pointer(m))
	return true
}

func (m *RWMutex) RUnlock() {
	release(m.rank, unsafe.Pointer(m))
	m.mu.RUnlock()
}

// RLocker returns a Locker whose Lock and Unlock are RLock and RUnlock.
func (m *RWMutex) RLocker() sync.Locker { return rlocker{m} }

type rlocker struct{ m *RWMutex }

func (r rlocker) Lock()   { r.m.RLock() }
func (r rlocker) Unlock() { r.m.RUnlock() }

// slowGoid parses the goroutine id from the first line of runtime.Stack.
func slowGoid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
