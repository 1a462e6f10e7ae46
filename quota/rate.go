package quota

import "math"

// Window is a rate's sampling (MetricConfig.samples and timeWindow).
type Window struct {
	Samples  int   // quota.window.num
	WindowMs int64 // quota.window.size.seconds * 1000
}

// DefaultWindow is quota.window.num=11, quota.window.size.seconds=1.
var DefaultWindow = Window{Samples: 11, WindowMs: 1000}

type sample struct {
	value       float64
	events      int64
	start, last int64
}

func (s *sample) reset(now int64) { *s = sample{start: now, last: now} }

// rate is Kafka's Rate with a WindowedSum: not safe for concurrent use.
type rate struct {
	samples []sample
	current int
}

func (r *rate) cur(now int64) *sample {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now, last: now})
	}
	return &r.samples[r.current]
}

// record is SampledStat.record.
func (r *rate) record(w Window, value float64, now int64) {
	s := r.cur(now)
	if now-s.start >= w.WindowMs {
		// advance: keep one extra sample for the one overlapping the window
		r.current = (r.current + 1) % (w.Samples + 1)
		if r.current >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now, last: now})
		} else {
			r.samples[r.current].reset(now)
		}
		s = &r.samples[r.current]
	}
	s.value += value
	s.events++
	s.last = now
}

// purge is SampledStat.purgeObsoleteSamples.
func (r *rate) purge(w Window, now int64) {
	expire := int64(w.Samples) * w.WindowMs
	for i := range r.samples {
		if now-r.samples[i].last >= expire {
			r.samples[i].reset(now)
		}
	}
}

// windowSize is Rate.windowSize, in ms.
func (r *rate) windowSize(w Window, now int64) int64 {
	r.purge(w, now)
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now, last: now})
	}
	oldest := r.samples[0].start
	for _, s := range r.samples[1:] {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full, minFull := elapsed/w.WindowMs, int64(w.Samples-1); full < minFull {
		elapsed += (minFull - full) * w.WindowMs
	}
	return max(elapsed, 1)
}

// measure is Rate.measure: per second.
func (r *rate) measure(w Window, now int64) float64 {
	r.purge(w, now)
	var total float64
	for _, s := range r.samples {
		total += s.value
	}
	return total / (float64(r.windowSize(w, now)) / 1000)
}

// throttleMs is QuotaUtils.throttleTime for a rate measured at value
// against bound: (value - bound) / bound * window, rounded.
func (r *rate) throttleMs(w Window, value, bound float64, now int64) int64 {
	return int64(math.Round((value - bound) / bound * float64(r.windowSize(w, now))))
}

// tokenBucket is Kafka's TokenBucket (KIP-599): starts full.
type tokenBucket struct {
	tokens     float64
	lastUpdate int64
}

func burst(w Window, bound float64) float64 {
	return float64(w.Samples) * float64(w.WindowMs) / 1000 * bound
}

func (b *tokenBucket) refill(w Window, bound float64, now int64) {
	b.tokens = math.Min(burst(w, bound), b.tokens+bound*float64(now-b.lastUpdate)/1000)
	b.lastUpdate = now
}

func (b *tokenBucket) measure(w Window, bound float64, now int64) float64 {
	b.refill(w, bound, now)
	return b.tokens
}

func (b *tokenBucket) record(w Window, bound, value float64, now int64) {
	b.refill(w, bound, now)
	b.tokens = math.Min(burst(w, bound), b.tokens-value)
}
