package protocol

import (
	"context"
	"sync/atomic"
	"time"
)

// Parked time: a handler that waits for something other than its own work
// (a long-poll fetch for records, an acks=all produce for replication) does
// not use its request handler thread meanwhile in Kafka, whose purgatory
// completes the request later. The request quota (request_percentage)
// counts only the handler's own time, so such waits are subtracted: the
// broker puts a tracker in the handler's context and the waiting code adds
// what it parked.

type parkedKey struct{}

// WithParkedTracker returns ctx with a tracker of parked time, and the
// tracker (nanoseconds).
func WithParkedTracker(ctx context.Context) (context.Context, *atomic.Int64) {
	var n atomic.Int64
	return context.WithValue(ctx, parkedKey{}, &n), &n
}

// AddParked adds the time since start to ctx's tracker, if it has one.
func AddParked(ctx context.Context, start time.Time) {
	if n, ok := ctx.Value(parkedKey{}).(*atomic.Int64); ok {
		n.Add(int64(time.Since(start)))
	}
}
