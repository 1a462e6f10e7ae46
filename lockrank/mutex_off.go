//go:build !invariants && !race

package lockrank

import "sync"

// Enabled reports whether acquisitions are checked (-tags invariants or
// the race detector).
const Enabled = false

// Mutex is a sync.Mutex with a rank, checked only under -tags invariants.
type Mutex struct {
	sync.Mutex
	rank Rank
}

// SetRank ranks the mutex; call it before the mutex is shared.
func (m *Mutex) SetRank(r Rank) { m.rank = r }

// RWMutex is a sync.RWMutex with a rank, checked only under -tags invariants.
type RWMutex struct {
	sync.RWMutex
	rank Rank
}

// SetRank ranks the mutex; call it before the mutex is shared.
func (m *RWMutex) SetRank(r Rank) { m.rank = r }

// Held returns the ranks this goroutine holds; nil without the check.
func Held() []Rank { return nil }
