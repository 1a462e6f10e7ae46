//go:build invariants || race

package lockrank

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// The locks each goroutine holds, in the order it took them.
//
// This bookkeeping is shared between goroutines, so it needs a lock of its
// own, and under the race detector that lock must not be seen: a lock
// every ranked Lock and Unlock went through would order every goroutine
// that takes any ranked lock after every other, and hide the data races
// between them that the race detector exists to find. So the shards' locks
// are taken with the race detector's synchronization events turned off for
// the goroutine (runtime.RaceDisable), and the memory they guard is read
// and written only by functions the race detector does not instrument
// (//go:norace), which use no maps, appends or copies (the runtime reports
// those to the race detector itself). TestRacesBetweenRankedLockersAreReported
// checks that a race between two goroutines taking unrelated ranked locks
// is still reported.

const (
	shardCount = 64
	// maxHeld bounds the locks one goroutine holds at once; the deepest
	// chain in docs/LOCKING.md is about ten.
	maxHeld = 32
)

type held struct {
	rank Rank
	lock unsafe.Pointer
}

// gHeld is what one goroutine holds.
type gHeld struct {
	id   uint64
	n    int
	hs   [maxHeld]held
	next *gHeld
}

type heldShard struct {
	mu   sync.Mutex
	list *gHeld // the goroutines of this shard holding a ranked lock
	free *gHeld // spare records
}

var shards [shardCount]heldShard

// violation is what acquire found wrong.
type violation struct {
	held     Rank // the lock that forbids the new one; Unranked when full
	n        int
	all      [maxHeld]Rank
	overflow bool
}

func (v *violation) String(r Rank) string {
	all := make([]string, v.n)
	for i := range all {
		all[i] = v.all[i].String()
	}
	if v.overflow {
		return fmt.Sprintf("lockrank: taking %s while holding %d locks, the most lockrank tracks (held, in order: %s)",
			r, maxHeld, strings.Join(all, ", "))
	}
	return fmt.Sprintf("lockrank: taking %s while holding %s (docs/LOCKING.md: locks are taken in increasing rank; nothing under a leaf; held, in order: %s)",
		r, v.held, strings.Join(all, ", "))
}

// acquire checks that rank r may be taken by this goroutine now and records
// it. It runs before blocking on the lock, so an inverted order panics
// instead of deadlocking.
func acquire(r Rank, lock unsafe.Pointer) {
	if r == Unranked {
		return
	}
	var v violation
	if !record(goid(), r, lock, &v) {
		panic(v.String(r))
	}
}

// release forgets the most recent acquisition of lock, by this goroutine
// or, for a lock unlocked by another goroutine than the one that locked it
// (sync allows it), by whichever goroutine holds it.
func release(r Rank, lock unsafe.Pointer) {
	if r == Unranked {
		return
	}
	g := goid()
	if forget(&shards[g%shardCount], g, lock) {
		return
	}
	for i := range shards {
		if forget(&shards[i], 0, lock) {
			return
		}
	}
}

// Held returns the ranks this goroutine holds, for tests.
func Held() []Rank {
	var buf [maxHeld]Rank
	n := ranksOf(goid(), &buf)
	if n == 0 {
		return nil
	}
	out := make([]Rank, n)
	for i := range out {
		out[i] = buf[i]
	}
	return out
}

//go:norace
func (s *heldShard) lock() {
	raceDisable()
	s.mu.Lock()
}

//go:norace
func (s *heldShard) unlock() {
	s.mu.Unlock()
	raceEnable()
}

//go:norace
func (s *heldShard) find(g uint64) *gHeld {
	for gh := s.list; gh != nil; gh = gh.next {
		if gh.id == g {
			return gh
		}
	}
	return nil
}

// record adds (r, lock) to goroutine g's held locks, or fills v and
// reports false when g may not take r now.
//
//go:norace
func record(g uint64, r Rank, lock unsafe.Pointer, v *violation) bool {
	s := &shards[g%shardCount]
	s.lock()
	gh := s.find(g)
	if gh != nil {
		for i := 0; i < gh.n; i++ {
			if h := gh.hs[i].rank; h.IsLeaf() || h >= r {
				v.held = h
			}
		}
		if v.held == Unranked && gh.n == maxHeld {
			v.overflow = true
		}
		if v.held != Unranked || v.overflow {
			v.n = gh.n
			for i := 0; i < gh.n; i++ {
				v.all[i] = gh.hs[i].rank
			}
			s.unlock()
			return false
		}
	} else {
		gh = s.free
		if gh != nil {
			s.free = gh.next
		} else {
			gh = new(gHeld)
		}
		gh.id, gh.n = g, 0
		gh.next = s.list
		s.list = gh
	}
	gh.hs[gh.n] = held{rank: r, lock: lock}
	gh.n++
	s.unlock()
	return true
}

// forget removes the most recent acquisition of lock by goroutine g of
// shard s (by any goroutine of s when g is 0) and reports whether it found
// one.
//
//go:norace
func forget(s *heldShard, g uint64, lock unsafe.Pointer) bool {
	s.lock()
	var prev *gHeld
	for gh := s.list; gh != nil; prev, gh = gh, gh.next {
		if g != 0 && gh.id != g {
			continue
		}
		for i := gh.n - 1; i >= 0; i-- {
			if gh.hs[i].lock != lock {
				continue
			}
			for j := i; j+1 < gh.n; j++ {
				gh.hs[j] = gh.hs[j+1]
			}
			gh.n--
			gh.hs[gh.n] = held{}
			if gh.n == 0 {
				if prev == nil {
					s.list = gh.next
				} else {
					prev.next = gh.next
				}
				gh.next = s.free
				s.free = gh
			}
			s.unlock()
			return true
		}
		if g != 0 {
			break
		}
	}
	s.unlock()
	return false
}

//go:norace
func ranksOf(g uint64, out *[maxHeld]Rank) int {
	s := &shards[g%shardCount]
	s.lock()
	n := 0
	if gh := s.find(g); gh != nil {
		n = gh.n
		for i := 0; i < n; i++ {
			out[i] = gh.hs[i].rank
		}
	}
	s.unlock()
	return n
}
