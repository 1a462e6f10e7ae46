package storage

import (
	"errors"
	"fmt"
)

// ErrInvariant wraps a broken internal invariant (a bug, never a client error).
var ErrInvariant = errors.New("storage: invariant violated")

// invariant reports a broken invariant unless ok. Callers on hot paths test
// the condition themselves and call invariant(false, ...) only when it fails:
// the variadic arguments are boxed into interfaces (heap allocations) before
// invariant runs, even when ok is true.
func invariant(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	err := fmt.Errorf("%w: "+format, append([]any{ErrInvariant}, args...)...)
	if invariantsEnabled {
		panic(err)
	}
	return err
}

// checkInvariants checks the log's structure after a change. l.mu must be held.
// The cheap checks always run; the per-segment ones only with invariants enabled.
func (l *Log) checkInvariants() error {
	// The always-on checks run on every append: test first, so that the
	// happy path boxes no arguments.
	n := len(l.mu.segments)
	if n == 0 {
		return invariant(false, "%s has no segments", l.dir)
	}
	active := l.mu.segments[n-1]
	if !(active.nextOffset == l.mu.leo || (active.size == 0 && active.base == l.mu.leo)) {
		return invariant(false, "%s: log end offset %d but the active segment ends at %d", l.dir, l.mu.leo, active.nextOffset)
	}
	if !(l.mu.recoveryPoint <= l.mu.leo && l.mu.logStartOffset <= l.mu.leo) {
		return invariant(false, "%s: recovery point %d / log start %d beyond the log end offset %d",
			l.dir, l.mu.recoveryPoint, l.mu.logStartOffset, l.mu.leo)
	}
	if !invariantsEnabled {
		return nil
	}
	for i, s := range l.mu.segments {
		if err := invariant(s.base <= s.nextOffset && s.size >= 0, "%s: segment %d ends at %d", l.dir, s.base, s.nextOffset); err != nil {
			return err
		}
		if i+1 < n {
			if err := invariant(s.nextOffset <= l.mu.segments[i+1].base, "%s: segment %d ends at %d after the next base %d",
				l.dir, s.base, s.nextOffset, l.mu.segments[i+1].base); err != nil {
				return err
			}
		}
	}
	if e, ok := l.mu.epochs.latest(); ok {
		if err := invariant(e.start <= l.mu.leo, "%s: leader epoch %d starts at %d beyond the log end offset %d",
			l.dir, e.epoch, e.start, l.mu.leo); err != nil {
			return err
		}
	}
	return nil
}
