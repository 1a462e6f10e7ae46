package quota

import "math"

// Mutation is Kafka's ControllerMutationQuota for one request: the
// partitions it creates or deletes are recorded in the client's token
// bucket (KIP-599). Strict (CreateTopics v6+, CreatePartitions v3+,
// DeleteTopics v5+) refuses a mutation while the bucket is empty; permissive
// (older versions) accepts it and only throttles. A nil *Mutation is
// Kafka's UnboundedControllerMutationQuota.
type Mutation struct {
	m      *ClientManager
	s      *sensor
	strict bool
	lastMs int64 // lastThrottleTimeMs
	atMs   int64 // lastRecordedTimeMs
}

// MutationQuota returns the quota for a request of user and clientID, nil
// while no controller_mutation_rate was ever set (newQuotaFor).
func (m *ClientManager) MutationQuota(user, clientID string, strict bool) *Mutation {
	if !m.Enabled() {
		return nil
	}
	return &Mutation{m: m, s: m.sensorFor(user, clientID, m.now()), strict: strict}
}

// Record records permits (partitions) and reports false when a strict
// quota refuses them: the caller answers THROTTLING_QUOTA_EXCEEDED for
// that topic. Permissive quotas always accept.
func (q *Mutation) Record(permits float64) bool {
	if q == nil {
		return true
	}
	now := q.m.now()
	w := q.m.window
	q.s.mu.Lock()
	defer q.s.mu.Unlock()
	bound := q.s.bound
	if q.strict {
		// check first, then record without a check: a bucket with any
		// tokens left accepts a request of any size.
		if t := q.s.bucket.measure(w, bound, now); t < 0 {
			q.violated(t, bound, now)
			return false
		}
		q.s.bucket.record(w, bound, permits, now)
		q.s.rate.record(w, permits, now)
		return true
	}
	q.s.bucket.record(w, bound, permits, now)
	q.s.rate.record(w, permits, now)
	if t := q.s.bucket.measure(w, bound, now); t < 0 {
		q.violated(t, bound, now)
	}
	return true
}

// violated is ControllerMutationQuotaManager.throttleTimeMs: the time for the
// bucket to refill to zero, -tokens / quota seconds.
func (q *Mutation) violated(tokens, bound float64, now int64) {
	q.lastMs = int64(math.Round(-tokens / bound * 1000))
	q.atMs = now
}

// ThrottleMs is the throttle time to answer with: the last violation's,
// less the time since (AbstractControllerMutationQuota.throttleTime).
func (q *Mutation) ThrottleMs() int {
	if q == nil {
		return 0
	}
	return int(max(0, q.lastMs-(q.m.now()-q.atMs)))
}
