package share

import (
	"errors"
	"fmt"

	"github.com/kgo-broker/kgo-broker/sharestate"
)

// The share partition invariants (doc.go lists them). A broken one panics
// under -tags invariants and the race detector (STYLE.md 7) and is
// returned as an error in production, where the caller fails the request.

// ErrInvariant wraps a broken share partition invariant (a bug, never a
// client error).
var ErrInvariant = errors.New("share: invariant violated")

func invariantFailed(format string, args ...any) error {
	err := fmt.Errorf("%w: "+format, append([]any{ErrInvariant}, args...)...)
	if invariantsEnabled {
		panic(err)
	}
	return err
}

// checkLocked verifies the in-flight records: the spans cover [start, next)
// in order without holes (so the SPSO is at or below every in-flight
// offset), an Acquired record has exactly one member and the others none,
// and no delivery count passes the limit (the largest applied). p.mu must be held. It walks the
// spans, so it runs only where they changed.
func (p *Partition) checkLocked() error {
	if !p.loaded {
		return nil
	}
	if p.start > p.next {
		return invariantFailed("%s: start offset %d beyond the in-flight end %d", p, p.start, p.next)
	}
	want := p.start
	for i := range p.spans {
		s := &p.spans[i]
		if s.first != want || s.last < s.first {
			return invariantFailed("%s: span %d-%d where %d was expected (start %d)", p, s.first, s.last, want, p.start)
		}
		want = s.last + 1
		if (s.state == sharestate.Acquired) != (s.member != "") {
			return invariantFailed("%s: %d-%d %s held by %q", p, s.first, s.last, stateName(s.state), s.member)
		}
		if s.deliveries > p.maxLimit || s.deliveries < 0 {
			return invariantFailed("%s: %d-%d delivered %d times, limit %d", p, s.first, s.last, s.deliveries, p.maxLimit)
		}
	}
	if want != p.next {
		return invariantFailed("%s: spans end at %d, in-flight end %d", p, want, p.next)
	}
	return nil
}
