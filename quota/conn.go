package quota

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"time"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// ConnConfig is the connection limits of SocketServer's ConnectionQuotas.
type ConnConfig struct {
	MaxConnections  int            // max.connections (broker-wide)
	MaxPerIP        int            // max.connections.per.ip
	PerIPOverrides  map[string]int // max.connections.per.ip.overrides, by IP (net.IP.String)
	MaxCreationRate int            // max.connection.creation.rate (broker-wide, per second)
	// Listeners are the listener.name.<l>.max.connections and
	// listener.name.<l>.max.connection.creation.rate limits, by listener.
	Listeners map[string]ListenerLimits
	// InterBrokerListener is protected from the broker-wide limits while
	// there is more than one listener.
	InterBrokerListener string
	Window              Window // quota.window.num, quota.window.size.seconds
}

// ListenerLimits are one listener's limits; 0 is none (Int.MaxValue).
type ListenerLimits struct {
	MaxConnections  int
	MaxCreationRate int
}

// ErrTooManyConnections is TooManyConnectionsException: the IP already has
// max.connections.per.ip connections; the new one is closed at once.
var ErrTooManyConnections = errors.New("too many connections from this address")

// ThrottledError is ConnectionThrottledException: the IP's
// connection_creation_rate is exceeded; the connection is closed after
// Delay.
type ThrottledError struct{ Delay time.Duration }

// CloseDelay implements protocol.ConnThrottled.
func (e *ThrottledError) CloseDelay() time.Duration { return e.Delay }

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("connection creation rate exceeded; closing after %v", e.Delay)
}

// noLimit is Int.MaxValue, Kafka's "no limit" for counts and rates.
const noLimit = math.MaxInt32

type rateSensor struct {
	bound float64
	rate  rate
}

// ConnectionQuotas is Kafka's ConnectionQuotas: connection counts per IP,
// per listener and broker-wide, and connection creation rates. Safe for
// concurrent use.
type ConnectionQuotas struct {
	cfg ConnConfig
	now func() int64

	mu        lockrank.Mutex // a leaf; guards the fields below
	changed   chan struct{}  // closed and replaced when a slot may have freed
	counts    map[string]int // by IP
	listeners map[string]*listenerState
	total     int
	broker    rateSensor
	ipRate    map[string]int // connection_creation_rate quotas, by IP
	ipDefault int
	ipSensors map[string]*rateSensor
}

type listenerState struct {
	count    int
	limits   ListenerLimits
	rate     rateSensor
	closeOne func() bool
}

// NewConnectionQuotas returns the limits of cfg on clock now (ms).
func NewConnectionQuotas(cfg ConnConfig, now func() int64) *ConnectionQuotas {
	norm := func(v int) int {
		if v <= 0 {
			return noLimit
		}
		return v
	}
	cfg.MaxConnections = norm(cfg.MaxConnections)
	cfg.MaxCreationRate = norm(cfg.MaxCreationRate)
	q := &ConnectionQuotas{
		cfg:       cfg,
		now:       now,
		changed:   make(chan struct{}),
		counts:    map[string]int{},
		listeners: map[string]*listenerState{},
		broker:    rateSensor{bound: float64(cfg.MaxCreationRate)},
		ipRate:    map[string]int{},
		ipDefault: noLimit,
		ipSensors: map[string]*rateSensor{},
	}
	q.mu.SetRank(lockrank.ConnQuotas)
	return q
}

// AddListener registers a listener (addListener); closeOne closes its least
// recently active connection and reports whether it closed one, for when
// the protected inter-broker listener takes the broker over max.connections.
func (q *ConnectionQuotas) AddListener(name string, closeOne func() bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.cfg.Listeners[name]
	l.MaxConnections, l.MaxCreationRate = normLimit(l.MaxConnections), normLimit(l.MaxCreationRate)
	q.listeners[name] = &listenerState{limits: l, rate: rateSensor{bound: float64(l.MaxCreationRate)}, closeOne: closeOne}
	q.notifyLocked()
}

func normLimit(v int) int {
	if v <= 0 {
		return noLimit
	}
	return v
}

// SetIPRates sets the connection_creation_rate quotas (ip entities of the
// image): rates by IP, and the default (<0: none).
func (q *ConnectionQuotas) SetIPRates(rates map[string]int, def int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ipRate = map[string]int{}
	for host, r := range rates {
		q.ipRate[canonicalIP(host)] = r
	}
	q.ipDefault = noLimit
	if def >= 0 {
		q.ipDefault = def
	}
	for ip, s := range q.ipSensors {
		s.bound = float64(q.ipRateLocked(ip))
	}
}

func canonicalIP(host string) string {
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

func (q *ConnectionQuotas) ipRateLocked(ip string) int {
	if r, ok := q.ipRate[ip]; ok {
		return r
	}
	return q.ipDefault
}

func (q *ConnectionQuotas) notifyLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// protectedLocked is protectedListener.
func (q *ConnectionQuotas) protectedLocked(listener string) bool {
	return listener == q.cfg.InterBrokerListener && len(q.listeners) > 1
}

// slotLocked is connectionSlotAvailable.
func (q *ConnectionQuotas) slotLocked(listener string) bool {
	if l := q.listeners[listener]; l != nil && l.count >= l.limits.MaxConnections {
		return false
	}
	return q.protectedLocked(listener) || q.total < q.cfg.MaxConnections
}

// record records one connection in s and returns the throttle time
// (recordAndGetThrottleTimeMs: bounded by one window).
func (q *ConnectionQuotas) record(s *rateSensor, now int64) int64 {
	w := q.cfg.Window
	s.rate.record(w, 1, now)
	if s.bound >= noLimit {
		return 0
	}
	v := s.rate.measure(w, now)
	if v <= s.bound {
		return 0
	}
	return min(s.rate.throttleMs(w, v, s.bound, now), w.WindowMs)
}

// Admit is ConnectionQuotas.inc for a connection accepted on listener from
// ip: it waits while the broker-wide or listener limits leave no slot or
// their creation rate is exceeded (the acceptor blocks, as Kafka's does),
// then counts the connection. A *ThrottledError or ErrTooManyConnections
// means the connection is not counted and must be closed (after the delay,
// or at once); nil means it is counted and Release must follow its close.
func (q *ConnectionQuotas) Admit(ctx context.Context, listener string, ip net.IP) error {
	key := ip.String()
	q.mu.Lock()
	defer q.mu.Unlock()
	// waitForConnectionSlot
	now := q.now()
	var throttle int64
	if !q.protectedLocked(listener) {
		throttle = q.record(&q.broker, now)
	}
	if l := q.listeners[listener]; l != nil {
		throttle = max(throttle, q.record(&l.rate, now))
	}
	end := now + throttle
	for throttle > 0 || !q.slotLocked(listener) {
		ch := q.changed
		q.mu.Unlock()
		var t <-chan time.Time
		var tm *time.Timer
		if throttle > 0 {
			tm = time.NewTimer(time.Duration(throttle) * time.Millisecond)
			t = tm.C
		}
		select {
		case <-ch:
		case <-t:
		case <-ctx.Done():
		}
		if tm != nil {
			tm.Stop()
		}
		if ctx.Err() != nil {
			q.mu.Lock()
			return ctx.Err()
		}
		q.mu.Lock()
		throttle = max(end-q.now(), 0)
	}
	// recordIpConnectionMaybeThrottle
	if r := q.ipRateLocked(key); r != noLimit {
		s := q.ipSensors[key]
		if s == nil {
			s = &rateSensor{bound: float64(r)}
			q.ipSensors[key] = s
		}
		now := q.now()
		if t := q.record(s, now); t > 0 {
			// unrecord it everywhere: the connection is not accepted
			s.rate.record(q.cfg.Window, -1, now)
			if !q.protectedLocked(listener) {
				q.broker.rate.record(q.cfg.Window, -1, now)
			}
			if l := q.listeners[listener]; l != nil {
				l.rate.rate.record(q.cfg.Window, -1, now)
			}
			return &ThrottledError{Delay: time.Duration(t) * time.Millisecond}
		}
	}
	n := q.counts[key]
	max := q.cfg.MaxPerIP
	if o, ok := q.cfg.PerIPOverrides[key]; ok {
		max = o
	}
	if n >= max {
		return ErrTooManyConnections
	}
	q.counts[key] = n + 1
	q.total++
	if l := q.listeners[listener]; l != nil {
		l.count++
	}
	return nil
}

// Release is ConnectionQuotas.dec, after an admitted connection closed.
func (q *ConnectionQuotas) Release(listener string, ip net.IP) {
	key := ip.String()
	q.mu.Lock()
	defer q.mu.Unlock()
	if n := q.counts[key]; n <= 1 {
		delete(q.counts, key)
	} else {
		q.counts[key] = n - 1
	}
	q.total--
	if l := q.listeners[listener]; l != nil && l.count > 0 {
		l.count--
	}
	q.notifyLocked()
}

// EnforceMax closes connections of the unprotected listeners while the
// broker is over max.connections (the processors' maxConnectionsExceeded
// check: the protected inter-broker listener may exceed the limit, and the
// other listeners then lose their least recently used connections). It
// calls the listeners' closeOne holding no lock.
func (q *ConnectionQuotas) EnforceMax() {
	q.mu.Lock()
	excess := q.total - q.cfg.MaxConnections
	var victims []func() bool
	if excess > 0 {
		for name, l := range q.listeners {
			if !q.protectedLocked(name) && l.count > 0 && l.closeOne != nil {
				victims = append(victims, l.closeOne)
			}
		}
	}
	q.mu.Unlock()
	for _, closeOne := range victims {
		for excess > 0 && closeOne() {
			excess--
		}
	}
}

// Count is the number of admitted connections from ip (tests, metrics).
func (q *ConnectionQuotas) Count(ip net.IP) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.counts[ip.String()]
}

// SetBrokerLimits replaces the broker-wide limits (KIP-226: max.connections,
// max.connection.creation.rate, max.connections.per.ip and
// max.connections.per.ip.overrides changed dynamically, ConnectionQuotas
// .updateBrokerMaxConnections, updateMaxConnectionsPerIp and
// updateBrokerMaxConnectionRate). Connections waiting for a slot look
// again; a lower max.connections closes connections of the unprotected
// listeners (EnforceMax), as the processors do; connections already over a
// lower per-IP limit stay, and only new ones are refused.
func (q *ConnectionQuotas) SetBrokerLimits(maxConnections, maxCreationRate, maxPerIP int, perIPOverrides map[string]int) {
	q.mu.Lock()
	q.cfg.MaxConnections = normLimit(maxConnections)
	q.cfg.MaxCreationRate = normLimit(maxCreationRate)
	q.broker.bound = float64(q.cfg.MaxCreationRate)
	q.cfg.MaxPerIP = maxPerIP
	q.cfg.PerIPOverrides = perIPOverrides
	q.notifyLocked()
	q.mu.Unlock()
	q.EnforceMax()
}
