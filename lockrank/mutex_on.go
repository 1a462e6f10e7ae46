//go:build invariants || race

package lockrank

import (
	"bytes"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
	acquire(m.rank, m)
	m.mu.Lock()
}

func (m *Mutex) TryLock() bool {
	if !m.mu.TryLock() {
		return false
	}
	acquire(m.rank, m)
	return true
}

func (m *Mutex) Unlock() {
	release(m.rank, m)
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
	acquire(m.rank, m)
	m.mu.Lock()
}

func (m *RWMutex) TryLock() bool {
	if !m.mu.TryLock() {
		return false
	}
	acquire(m.rank, m)
	return true
}

func (m *RWMutex) Unlock() {
	release(m.rank, m)
	m.mu.Unlock()
}

func (m *RWMutex) RLock() {
	acquire(m.rank, m)
	m.mu.RLock()
}

func (m *RWMutex) TryRLock() bool {
	if !m.mu.TryRLock() {
		return false
	}
	acquire(m.rank, m)
	return true
}

func (m *RWMutex) RUnlock() {
	release(m.rank, m)
	m.mu.RUnlock()
}

// RLocker returns a Locker whose Lock and Unlock are RLock and RUnlock.
func (m *RWMutex) RLocker() sync.Locker { return rlocker{m} }

type rlocker struct{ m *RWMutex }

func (r rlocker) Lock()   { r.m.RLock() }
func (r rlocker) Unlock() { r.m.RUnlock() }

type held struct {
	rank Rank
	lock any
}

var (
	heldMu sync.Mutex
	byG    = map[uint64][]held{}
)

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

// acquire checks that rank r may be taken by this goroutine now and records
// it. It runs before blocking on the lock, so an inverted order panics
// instead of deadlocking.
func acquire(r Rank, lock any) {
	if r == Unranked {
		return
	}
	g := goid()
	heldMu.Lock()
	hs := byG[g]
	for _, h := range hs {
		if h.rank.IsLeaf() || h.rank >= r {
			all := make([]string, len(hs))
			for i, h := range hs {
				all[i] = h.rank.String()
			}
			heldMu.Unlock()
			panic(fmt.Sprintf("lockrank: taking %s while holding %s (docs/LOCKING.md: locks are taken in increasing rank; nothing under a leaf; held, in order: %s)",
				r, h.rank, strings.Join(all, ", ")))
		}
	}
	byG[g] = append(hs, held{rank: r, lock: lock})
	heldMu.Unlock()
}

// release forgets the most recent acquisition of lock, by this goroutine
// or, for a lock unlocked by another goroutine than the one that locked it
// (sync allows it), by whichever goroutine holds it.
func release(r Rank, lock any) {
	if r == Unranked {
		return
	}
	g := goid()
	heldMu.Lock()
	defer heldMu.Unlock()
	if drop(g, lock) {
		return
	}
	for other := range byG {
		if drop(other, lock) {
			return
		}
	}
}

func drop(g uint64, lock any) bool {
	hs := byG[g]
	for i := len(hs) - 1; i >= 0; i-- {
		if hs[i].lock == lock {
			hs = append(hs[:i], hs[i+1:]...)
			if len(hs) == 0 {
				delete(byG, g)
			} else {
				byG[g] = hs
			}
			return true
		}
	}
	return false
}

// Held returns the ranks this goroutine holds, for tests.
func Held() []Rank {
	heldMu.Lock()
	defer heldMu.Unlock()
	var out []Rank
	for _, h := range byG[goid()] {
		out = append(out, h.rank)
	}
	return out
}
