//go:build invariants || race

package lockrank

import "testing"

func atDepth(n int, f func()) {
	if n == 0 {
		f()
		return
	}
	atDepth(n-1, f)
}

// BenchmarkRankedLock is a checked Lock+Unlock at a shallow and a deep
// stack (runtime.Stack, the slow goroutine id, costs by depth).
func BenchmarkRankedLock(b *testing.B) {
	var m Mutex
	m.SetRank(Log)
	for _, d := range []struct {
		name  string
		depth int
	}{{"shallow", 0}, {"deep", 50}} {
		b.Run(d.name, func(b *testing.B) {
			atDepth(d.depth, func() {
				for b.Loop() {
					m.Lock()
					m.Unlock()
				}
			})
		})
	}
}

func BenchmarkGoid(b *testing.B) {
	for b.Loop() {
		goid()
	}
}

func BenchmarkSlowGoid(b *testing.B) {
	for b.Loop() {
		slowGoid()
	}
}

// BenchmarkUnranked is the same Lock+Unlock on an unranked lock: the cost
// without the check.
func BenchmarkUnranked(b *testing.B) {
	var m Mutex
	for b.Loop() {
		m.Lock()
		m.Unlock()
	}
}
