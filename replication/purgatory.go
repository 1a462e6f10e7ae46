package replication

import (
	"context"
	"time"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// The purgatory. Kafka parks a produce with acks=all (DelayedProduce) or a
// fetch that cannot be answered yet (DelayedFetch) in a DelayedOperation
// purgatory, watched by partition keys; every append, high watermark move or
// leadership change "checks and completes" the operations watching that
// partition.
//
// Here an operation is a goroutine (the request's own handler goroutine)
// parked on a waiter. A waiter registers with each partition it watches; a
// partition change calls wake on every registered waiter, which is a
// non-blocking send on a one-slot channel, so a burst of appends costs the
// parked request one re-check. The request re-checks its completion
// condition under the partitions' own locks, so a wake-up is only a hint and
// can never be lost: the waiter is registered before the first check.
//
// Timeouts use time.Timer, which testing/synctest fakes in tests.

type waiter struct {
	ch chan struct{}
	fn func() // instead of ch: a watcher outside the package (WatchPartition)
}

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (w *waiter) wake() {
	if w.fn != nil {
		w.fn()
		return
	}
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// watchers is the set of waiters parked on one partition.
type watchers struct {
	mu lockrank.Mutex // a leaf (newPartition ranks it): a waiter's wake never blocks
	ws map[*waiter]struct{}
}

func (s *watchers) add(w *waiter) {
	s.mu.Lock()
	if s.ws == nil {
		s.ws = map[*waiter]struct{}{}
	}
	s.ws[w] = struct{}{}
	s.mu.Unlock()
}

func (s *watchers) remove(w *waiter) {
	s.mu.Lock()
	delete(s.ws, w)
	s.mu.Unlock()
}

// wakeAll wakes every waiter; it never blocks.
func (s *watchers) wakeAll() {
	s.mu.Lock()
	for w := range s.ws {
		w.wake()
	}
	s.mu.Unlock()
}

// await parks until done() reports true, the timeout passes, ctx ends or the
// manager closes, re-checking done after every wake-up. It reports whether
// done() became true. The caller registered w with the partitions of
// interest before calling.
func await(ctx context.Context, w *waiter, timeout time.Duration, closed <-chan struct{}, done func() bool) bool {
	if done() {
		return true
	}
	if timeout <= 0 {
		return false
	}
	// Parked, not working: the request quota does not count it.
	defer protocol.AddParked(ctx, time.Now())
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-w.ch:
			if done() {
				return true
			}
		case <-t.C:
			return done()
		case <-ctx.Done():
			return false
		case <-closed:
			return false
		}
	}
}
