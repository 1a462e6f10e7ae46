package coordinator

import (
	"sort"
	"time"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Clock is a coordinator's time source: session, rebalance, retention and
// transaction timers all go through it, so tests drive them with a
// ManualClock instead of sleeping.
type Clock interface {
	Now() time.Time
	// AfterFunc runs f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing; false if it already fired.
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

func (RealClock) Now() time.Time                            { return time.Now() }
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// ManualClock is a Clock that only moves when told to. Advance runs the
// timers that fall due, in deadline order, on the caller's goroutine.
type ManualClock struct {
	mu     lockrank.Mutex // a leaf: timers fire after it is released
	now    time.Time
	seq    uint64
	timers map[uint64]*manualTimer
}

type manualTimer struct {
	c  *ManualClock
	id uint64
	at time.Time
	f  func()
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	c := &ManualClock{now: start, timers: map[uint64]*manualTimer{}}
	c.mu.SetRank(lockrank.ManualClock)
	return c
}

func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{c: c, id: c.seq, at: c.now.Add(d), f: f}
	c.timers[t.id] = t
	return t
}

func (t *manualTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	_, ok := t.c.timers[t.id]
	delete(t.c.timers, t.id)
	return ok
}

// Advance moves the clock forward by d, firing due timers one at a time
// (timers a callback schedules within the window fire too).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	c.mu.Unlock()
	for {
		c.mu.Lock()
		var due []*manualTimer
		for _, t := range c.timers {
			if !t.at.After(end) {
				due = append(due, t)
			}
		}
		if len(due) == 0 {
			c.now = end
			c.mu.Unlock()
			return
		}
		sort.Slice(due, func(i, j int) bool {
			if due[i].at.Equal(due[j].at) {
				return due[i].id < due[j].id
			}
			return due[i].at.Before(due[j].at)
		})
		t := due[0]
		delete(c.timers, t.id)
		if t.at.After(c.now) {
			c.now = t.at
		}
		c.mu.Unlock()
		t.f()
	}
}

// Pending reports how many timers are scheduled.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Next returns the deadline of the earliest scheduled timer. Timers an
// event loop schedules while running a timer's event exist only once the
// loop ran it, so a test that needs such chains to fire at their own
// deadlines advances to Next one step at a time, letting the loops run in
// between, instead of calling Advance once for the whole span.
func (c *ManualClock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	ok := false
	for _, t := range c.timers {
		if !ok || t.at.Before(next) {
			next, ok = t.at, true
		}
	}
	return next, ok
}
