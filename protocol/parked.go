package protocol

import (
	"context"
	"time"
)

// Parked time: a handler that waits for something other than its own work
// (a long-poll fetch for records, an acks=all produce for replication) does
// not use its request handler thread meanwhile in Kafka, whose purgatory
// completes the request later. The request quota (request_percentage)
// counts only the handler's own time, so such waits are subtracted: the
// broker puts a ParkedTracker in the handler's context and the waiting code
// reports what it parked.

// ParkedTracker is told how long a request waited parked.
type ParkedTracker interface{ AddParked(time.Duration) }

type parkedKey struct{}

// WithParkedTracker returns ctx carrying tr.
func WithParkedTracker(ctx context.Context, tr ParkedTracker) context.Context {
	return context.WithValue(ctx, parkedKey{}, tr)
}

// ParkedTrackerOf returns ctx's tracker, or nil.
func ParkedTrackerOf(ctx context.Context) ParkedTracker {
	tr, _ := ctx.Value(parkedKey{}).(ParkedTracker)
	return tr
}

// AddParked reports the time since start to ctx's tracker, if it has one.
func AddParked(ctx context.Context, start time.Time) {
	if tr := ParkedTrackerOf(ctx); tr != nil {
		tr.AddParked(time.Since(start))
	}
}
