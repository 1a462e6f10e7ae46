package quota

import (
	"math"
	"sync/atomic"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Kind is the quota a ClientManager enforces (Kafka's QuotaType).
type Kind int

const (
	Produce            Kind = iota // producer_byte_rate: bytes/s of produce requests
	Fetch                          // consumer_byte_rate: bytes/s of fetch responses
	Request                        // request_percentage: % of one request handler thread
	ControllerMutation             // controller_mutation_rate: partitions created or deleted per second
)

// Key is the quota config key of k (QuotaConfig).
func (k Kind) Key() string {
	return [...]string{"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}[k]
}

func (k Kind) String() string {
	return [...]string{"Produce", "Fetch", "Request", "ControllerMutation"}[k]
}

// Part is one side of a quota entity: unset, the default, or a name.
type Part struct {
	Set     bool
	Default bool
	Name    string
}

// Named is the Part for name; DefaultPart the default entity.
func Named(name string) Part { return Part{Set: true, Name: name} }

// DefaultPart is the <default> entity of its type.
var DefaultPart = Part{Set: true, Default: true}

// Entity is a quota entity: a user, a client id, or both (Kafka's
// KafkaQuotaEntity).
type Entity struct{ User, ClientID Part }

// quotaTypes are ClientQuotaManager's QuotaTypes bits: the levels quotas
// were ever set at (never cleared until restart, as in Kafka).
const (
	clientIDQuotas     = 1
	userQuotas         = 2
	userClientIDQuotas = 4
)

// tags are a sensor's metric tags: the clients that share one rate.
type tags struct{ user, clientID string }

// Sensor is one rate of a ClientManager: the clients whose quota resolves
// to the same tags share it.
type sensor struct {
	tags       tags
	lastRecord atomic.Int64

	mu       lockrank.Mutex // a leaf; guards the fields below
	bound    float64        // the quota; math.MaxInt64 when none (Kafka's Long.MaxValue)
	rate     rate
	bucket   tokenBucket // ControllerMutation only
	throttle rate        // throttle times, for the throttle-time average
}

// inactiveExpiryMs is ClientQuotaManager.InactiveSensorExpirationTimeSeconds.
const inactiveExpiryMs = 3600 * 1000

// throttleWindow is the default MetricConfig (2 samples of 30 s) that Kafka's
// throttle-time Avg uses.
var throttleWindow = Window{Samples: 2, WindowMs: 30000}

// ClientManager is Kafka's ClientQuotaManager (and, by Kind, its
// ClientRequestQuotaManager and ControllerMutationQuotaManager) with the
// default quota callback. Safe for concurrent use.
type ClientManager struct {
	kind   Kind
	window Window
	now    func() int64 // ms

	enabled atomic.Int32 // quotaTypes bits; 0: no quota was ever set

	mu        lockrank.RWMutex // guards the fields below; a sensor's mu is taken under it
	quotas    map[Entity]float64
	sensors   map[tags]*sensor
	lastPurge int64
}

// NewClientManager returns a manager of kind with window w and clock now
// (milliseconds).
func NewClientManager(kind Kind, w Window, now func() int64) *ClientManager {
	m := &ClientManager{kind: kind, window: w, now: now, quotas: map[Entity]float64{}, sensors: map[tags]*sensor{}}
	m.mu.SetRank(lockrank.ClientQuotas)
	return m
}

// Kind is the quota m enforces.
func (m *ClientManager) Kind() Kind { return m.kind }

// Enabled reports whether a quota of m's kind was ever set (quotasEnabled):
// until then nothing is recorded.
func (m *ClientManager) Enabled() bool { return m.enabled.Load() != 0 }

// SetQuotas replaces the quotas with qs (the image's quotas of m's kind) and
// updates the bound of every existing rate (updateQuotaMetricConfigs).
func (m *ClientManager) SetQuotas(qs map[Entity]float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.quotas = make(map[Entity]float64, len(qs))
	bits := m.enabled.Load()
	for e, v := range qs {
		m.quotas[e] = v
		switch {
		case e.User.Set && e.ClientID.Set:
			bits |= userClientIDQuotas
		case e.User.Set:
			bits |= userQuotas
		case e.ClientID.Set:
			bits |= clientIDQuotas
		}
	}
	m.enabled.Store(bits)
	for _, s := range m.sensors {
		b := m.limitLocked(s.tags)
		s.mu.Lock()
		s.bound = b
		s.mu.Unlock()
	}
}

// metricTagsLocked is DefaultQuotaCallback.quotaMetricTags: which rate a
// request of user and clientID records into. m.mu must be held.
func (m *ClientManager) metricTagsLocked(user, clientID string) tags {
	switch m.enabled.Load() {
	case 0, clientIDQuotas:
		return tags{"", clientID}
	case userQuotas:
		return tags{user, ""}
	case userClientIDQuotas:
		return tags{user, clientID}
	}
	has := func(e Entity) bool { _, ok := m.quotas[e]; return ok }
	u, c := Named(user), Named(clientID)
	switch {
	case has(Entity{u, c}), has(Entity{u, DefaultPart}):
		return tags{user, clientID}
	case has(Entity{User: u}):
		return tags{user, ""}
	case has(Entity{DefaultPart, c}), has(Entity{DefaultPart, DefaultPart}):
		return tags{user, clientID}
	case has(Entity{User: DefaultPart}):
		return tags{user, ""}
	}
	return tags{"", clientID}
}

// limitLocked is DefaultQuotaCallback.quotaLimit: the most specific quota
// for the tags, or math.MaxInt64 (Kafka's Long.MaxValue) when none applies.
// m.mu must be held.
func (m *ClientManager) limitLocked(t tags) float64 {
	get := func(es ...Entity) float64 {
		for _, e := range es {
			if q, ok := m.quotas[e]; ok {
				return q
			}
		}
		return math.MaxInt64
	}
	u, c := Named(t.user), Named(t.clientID)
	switch {
	case t.user != "" && t.clientID != "":
		return get(Entity{u, c}, Entity{u, DefaultPart}, Entity{DefaultPart, c}, Entity{DefaultPart, DefaultPart})
	case t.user != "":
		return get(Entity{User: u}, Entity{User: DefaultPart})
	case t.clientID != "":
		return get(Entity{ClientID: c}, Entity{ClientID: DefaultPart})
	}
	return math.MaxInt64
}

// Limit is the quota that applies to user and clientID (math.MaxInt64: none).
func (m *ClientManager) Limit(user, clientID string) float64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.limitLocked(m.metricTagsLocked(user, clientID))
}

// sensorFor returns the rate user and clientID record into, creating it.
func (m *ClientManager) sensorFor(user, clientID string, now int64) *sensor {
	m.mu.RLock()
	t := m.metricTagsLocked(user, clientID)
	s := m.sensors[t]
	m.mu.RUnlock()
	if s != nil {
		s.lastRecord.Store(now)
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t = m.metricTagsLocked(user, clientID)
	if s = m.sensors[t]; s == nil {
		if now-m.lastPurge >= 30000 {
			// Kafka's ExpireSensorTask runs every 30 s.
			m.lastPurge = now
			for k, old := range m.sensors {
				if now-old.lastRecord.Load() > inactiveExpiryMs {
					delete(m.sensors, k)
				}
			}
		}
		s = &sensor{tags: t, bound: m.limitLocked(t)}
		s.mu.SetRank(lockrank.QuotaSensor)
		m.sensors[t] = s
	}
	s.lastRecord.Store(now)
	return s
}

// Record records value (bytes, or request-handler percent) for user and
// clientID at now and returns the throttle time in ms: 0 within the quota,
// else the time until the rate is back at the quota
// (recordAndGetThrottleTimeMs; capped at one window for the Request kind).
// Nothing is recorded while no quota was ever set.
func (m *ClientManager) Record(user, clientID string, value float64) int {
	if !m.Enabled() {
		return 0
	}
	now := m.now()
	s := m.sensorFor(user, clientID, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate.record(m.window, value, now)
	v := s.rate.measure(m.window, now)
	if v <= s.bound {
		return 0
	}
	t := s.rate.throttleMs(m.window, v, s.bound, now)
	if m.kind == Request {
		t = min(t, m.window.WindowMs) // ClientRequestQuotaManager: boundedThrottleTime
	}
	return int(t)
}

// RecordNoThrottle records value without checking the quota
// (recordNoThrottle): the next request pays for it.
func (m *ClientManager) RecordNoThrottle(user, clientID string, value float64) {
	if !m.Enabled() {
		return
	}
	now := m.now()
	s := m.sensorFor(user, clientID, now)
	s.mu.Lock()
	s.rate.record(m.window, value, now)
	s.mu.Unlock()
}

// Unrecord takes value back (unrecordQuotaSensor): a throttled fetch
// answers no data, so its bytes must not count.
func (m *ClientManager) Unrecord(user, clientID string, value float64) {
	m.RecordNoThrottle(user, clientID, -value)
}

// MaxValueInQuotaWindow is the most that can be recorded at once without
// being throttled for sure (getMaxValueInQuotaWindow): quota * (samples-1)
// * window seconds, or math.MaxFloat64 without a quota. A fetch's
// max_bytes is capped by it.
func (m *ClientManager) MaxValueInQuotaWindow(user, clientID string) float64 {
	if !m.Enabled() {
		return math.MaxFloat64
	}
	q := m.Limit(user, clientID)
	if q == math.MaxInt64 {
		return math.MaxFloat64
	}
	return q * float64(m.window.Samples-1) * float64(m.window.WindowMs) / 1000
}

// Throttled records that user and clientID were throttled for ms (the
// throttle-time metric; ClientQuotaManager.throttle).
func (m *ClientManager) Throttled(user, clientID string, ms int) {
	if ms <= 0 {
		return
	}
	now := m.now()
	s := m.sensorFor(user, clientID, now)
	s.mu.Lock()
	s.throttle.record(throttleWindow, float64(ms), now)
	s.mu.Unlock()
}

// SensorStats is one rate for the metrics: kafka.server:type=<Kind> with
// tags user and client-id.
type SensorStats struct {
	User, ClientID string
	Rate           float64 // byte-rate, request-time (percent) or mutation-rate
	ThrottleTimeMs float64 // throttle-time: the average over the last minute's throttles (0: none)
}

// Stats lists m's rates (for a metrics scrape).
func (m *ClientManager) Stats() []SensorStats {
	now := m.now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]SensorStats, 0, len(m.sensors))
	for _, s := range m.sensors {
		s.mu.Lock()
		st := SensorStats{User: s.tags.user, ClientID: s.tags.clientID, Rate: s.rate.measure(m.window, now)}
		st.ThrottleTimeMs = s.throttle.avg(throttleWindow, now)
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// avg is SampledStat Avg over the samples: sum / count, 0 without events.
func (r *rate) avg(w Window, now int64) float64 {
	r.purge(w, now)
	var total float64
	var n int64
	for _, s := range r.samples {
		total += s.value
		n += s.events
	}
	if n == 0 {
		return 0
	}
	return total / float64(n)
}
