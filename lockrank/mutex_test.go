package lockrank

import (
	"strings"
	"testing"
)

func mustPanic(t *testing.T, want string, fn func()) {
	t.Helper()
	defer func() {
		r := recover()
		if !Enabled {
			if r != nil {
				t.Fatalf("panicked without the check: %v", r)
			}
			return
		}
		if r == nil {
			t.Fatalf("no panic, want one naming %q", want)
		}
		if !strings.Contains(r.(string), want) {
			t.Fatalf("panic %q does not name %q", r, want)
		}
	}()
	fn()
}

func TestIncreasingRankIsFine(t *testing.T) {
	var rm, p, l RWMutex
	rm.SetRank(ReplicaManager)
	p.SetRank(Partition)
	l.SetRank(Log)
	var s Mutex
	s.SetRank(PartitionState)
	rm.Lock()
	p.RLock()
	s.Lock()
	l.Lock()
	l.Unlock()
	s.Unlock()
	p.RUnlock()
	rm.Unlock()
	if got := Held(); len(got) != 0 {
		t.Fatalf("still held: %v", got)
	}
}

// The cleaner/metadata AB/BA of issue 14: holding a log's lock and taking
// the replica manager's.
func TestInvertedOrderPanicsBeforeBlocking(t *testing.T) {
	var rm, l RWMutex
	rm.SetRank(ReplicaManager)
	l.SetRank(Log)
	l.Lock()
	mustPanic(t, "taking replication.ReplicaManager.mu while holding storage.Log.mu", func() { rm.RLock() })
	l.Unlock()
	if Enabled && len(Held()) != 0 {
		t.Fatalf("still held: %v", Held())
	}
}

func TestSameRankTwicePanics(t *testing.T) {
	var a, b Mutex
	a.SetRank(Partition)
	b.SetRank(Partition)
	a.Lock()
	defer a.Unlock()
	mustPanic(t, "taking replication.Partition.mu while holding replication.Partition.mu", func() { b.Lock() })
}

func TestNothingUnderALeaf(t *testing.T) {
	var leaf, other Mutex
	leaf.SetRank(Leaf)
	other.SetRank(Log)
	var outer RWMutex
	outer.SetRank(ReplicaManager)
	outer.RLock()
	leaf.Lock() // a leaf under anything
	mustPanic(t, "while holding a leaf lock", func() { other.Lock() })
	leaf.Unlock()
	outer.RUnlock()
}

func TestUnrankedIsNotChecked(t *testing.T) {
	var l, u Mutex
	l.SetRank(Log)
	l.Lock()
	u.Lock()
	u.Unlock()
	l.Unlock()
}

func TestUnlockOnAnotherGoroutine(t *testing.T) {
	var m Mutex
	m.SetRank(Log)
	m.Lock()
	done := make(chan struct{})
	go func() { m.Unlock(); close(done) }()
	<-done
	if Enabled && len(Held()) != 0 {
		t.Fatalf("still held: %v", Held())
	}
	m.Lock()
	m.Unlock()
}
