package txn

import (
	"errors"
	"fmt"
)

// ErrInvariant wraps a broken internal invariant (a bug, never a client
// error): a transition Kafka's state machine would refuse with an
// IllegalStateException.
var ErrInvariant = errors.New("txn: invariant violated")

// invariant reports a broken invariant unless ok; it panics in tests (-race
// or -tags invariants) and returns an error in production.
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
