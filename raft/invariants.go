package raft

import (
	"errors"
	"fmt"
)

// ErrInvariant wraps every invariant violation: "two leaders in one epoch",
// "high watermark decreased", "truncating below the high watermark". Built with
// -tags invariants a violation panics instead.
var ErrInvariant = errors.New("raft: invariant violated")

func violation(format string, args ...any) error {
	err := fmt.Errorf("%w: %s", ErrInvariant, fmt.Sprintf(format, args...))
	if invariantsEnabled {
		panic(err)
	}
	return err
}
