package quota

import (
	"math"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// ReplicationKind is the replication traffic a ReplicationQuota bounds
// (Kafka's QuotaType LEADER_REPLICATION, FOLLOWER_REPLICATION,
// ALTER_LOG_DIRS_REPLICATION).
type ReplicationKind int

const (
	LeaderReplication       ReplicationKind = iota // leader.replication.throttled.rate: bytes/s the leader sends throttled followers
	FollowerReplication                            // follower.replication.throttled.rate: bytes/s a follower fetches for throttled replicas
	AlterLogDirsReplication                        // replica.alter.log.dirs.io.max.bytes.per.second: bytes/s moved between log dirs
)

// String is the QuotaType name, the metric group of the byte-rate.
func (k ReplicationKind) String() string {
	return [...]string{"LeaderReplication", "FollowerReplication", "AlterLogDirsReplication"}[k]
}

// RateKey is the broker config that sets the bound (QuotaConfig).
func (k ReplicationKind) RateKey() string {
	return [...]string{"leader.replication.throttled.rate", "follower.replication.throttled.rate",
		"replica.alter.log.dirs.io.max.bytes.per.second"}[k]
}

// ReplicasKey is the topic config that lists the throttled replicas of
// kind k ("" for AlterLogDirsReplication, which throttles every move).
func (k ReplicationKind) ReplicasKey() string {
	return [...]string{"leader.replication.throttled.replicas", "follower.replication.throttled.replicas", ""}[k]
}

// Unbounded is QuotaConfig.QUOTA_BYTES_PER_SECOND_DEFAULT (Long.MAX_VALUE):
// the bound when no rate is set.
const Unbounded = float64(math.MaxInt64)

// AllReplicas is the partition list of a topic whose throttled replicas
// config is "*" (Kafka's Constants.AllReplicas).
var AllReplicas = []int32{-1}

// ReplicationQuota is Kafka's ReplicationQuotaManager: the set of throttled
// partitions (from the topics' *.replication.throttled.replicas) and one
// byte rate, a SimpleRate over replication.quota.window.num windows of
// replication.quota.window.size.seconds, bounded by the broker's
// *.replication.throttled.rate. The replication code asks IsThrottled for a
// partition and IsQuotaExceeded before moving its bytes, and records what
// it moved with Record (which never refuses: a fetch already read is sent).
// Safe for concurrent use.
type ReplicationQuota struct {
	kind   ReplicationKind
	window Window
	now    func() int64 // ms

	// throttled maps a topic to its throttled partitions (AllReplicas for
	// every one); replaced whole, read without a lock (Kafka's
	// ConcurrentHashMap).
	throttled atomic.Pointer[map[string][]int32]

	mu         lockrank.Mutex // a leaf; guards the fields below
	bound      float64
	rate       rate
	lastRecord int64
}

// NewReplicationQuota returns an unbounded quota of kind k, throttling no
// partition, with window w and clock now (milliseconds).
func NewReplicationQuota(k ReplicationKind, w Window, now func() int64) *ReplicationQuota {
	q := &ReplicationQuota{kind: k, window: w, now: now, bound: Unbounded}
	q.mu.SetRank(lockrank.ReplicationQuota)
	empty := map[string][]int32{}
	q.throttled.Store(&empty)
	return q
}

// Kind is the traffic q bounds.
func (q *ReplicationQuota) Kind() ReplicationKind { return q.kind }

// SetBound is updateQuota: bytes per second, Unbounded for none.
func (q *ReplicationQuota) SetBound(bytesPerSec float64) {
	q.mu.Lock()
	q.bound = bytesPerSec
	q.mu.Unlock()
}

// Bound is upperBound: the configured bytes per second.
func (q *ReplicationQuota) Bound() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.bound
}

// SetThrottled replaces the throttled partitions of every topic
// (markThrottled and removeThrottle for each topic config): topic to
// partition ids, AllReplicas for all of a topic's partitions.
func (q *ReplicationQuota) SetThrottled(byTopic map[string][]int32) {
	m := make(map[string][]int32, len(byTopic))
	for t, ps := range byTopic {
		m[t] = ps
	}
	q.throttled.Store(&m)
}

// IsThrottled is isThrottled: whether the partition is in the throttled set.
func (q *ReplicationQuota) IsThrottled(topic string, partition int32) bool {
	ps, ok := (*q.throttled.Load())[topic]
	if !ok {
		return false
	}
	if len(ps) == 1 && ps[0] == -1 {
		return true
	}
	for _, p := range ps {
		if p == partition {
			return true
		}
	}
	return false
}

// IsQuotaExceeded is isQuotaExceeded (Sensor.checkQuotas): the rate now is
// above the bound.
func (q *ReplicationQuota) IsQuotaExceeded() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.bound >= Unbounded {
		return false
	}
	now := q.now()
	q.expireLocked(now)
	return q.rate.measureSimple(q.window, now) > q.bound
}

// Record adds bytes moved to the rate, whether or not the quota is
// exceeded (record with checkQuotas false).
func (q *ReplicationQuota) Record(bytes int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	q.expireLocked(now)
	q.rate.record(q.window, float64(bytes), now)
	q.lastRecord = now
}

// Rate is the byte-rate metric: bytes per second now. It reads a copy of the
// samples: a metrics scrape must not start the quota's window (measureSimple
// does when there are no samples), or the first replication after an idle scrape
// would be measured over up to quota.window.num windows and let a burst of that
// many seconds' worth of bytes through.
func (q *ReplicationQuota) Rate() float64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	if len(q.rate.samples) == 0 || now-q.lastRecord > inactiveExpiryMs {
		return 0
	}
	r := rate{samples: append([]sample(nil), q.rate.samples...), current: q.rate.current}
	return r.measureSimple(q.window, now)
}

// expireLocked drops a rate with nothing recorded for an hour
// (ReplicationQuotaManagerConfig.INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS),
// as Kafka's expired sensor is recreated empty; a new sensor counts as
// recorded when it is created. q.mu must be held.
func (q *ReplicationQuota) expireLocked(now int64) {
	if len(q.rate.samples) > 0 && now-q.lastRecord > inactiveExpiryMs {
		q.rate = rate{}
	}
	if len(q.rate.samples) == 0 {
		q.lastRecord = now
	}
}

// ParseThrottledReplicas is TopicConfigHandler.parseThrottledPartitions: the
// partitions of a topic whose throttled replicas config value is v that
// concern broker id: AllReplicas for "*", the partition of every
// "partition:broker" pair naming id, none for "". ok is false when v is not
// valid (ThrottledReplicaListValidator).
func ParseThrottledReplicas(v string, id int32) (partitions []int32, ok bool) {
	v = strings.TrimSpace(v)
	switch v {
	case "":
		return nil, true
	case "*":
		return AllReplicas, true
	}
	for _, e := range strings.Split(v, ",") {
		p, b, found := strings.Cut(strings.TrimSpace(e), ":")
		if !found {
			return nil, false
		}
		pid, err1 := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bid, err2 := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if err1 != nil || err2 != nil {
			return nil, false
		}
		if int32(bid) == id {
			partitions = append(partitions, int32(pid))
		}
	}
	return partitions, true
}

// measureSimple is SimpleRate.measure: the samples' sum over the time since
// the oldest sample started, at least one window (so a first burst is not
// divided by the few ms it took), per second. As SampledStat.oldest does, a
// rate without samples starts one now: the first look at a quota starts its
// window.
func (r *rate) measureSimple(w Window, now int64) float64 {
	r.purge(w, now)
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now, last: now})
	}
	var total float64
	oldest := r.samples[0].start
	for _, s := range r.samples {
		total += s.value
		oldest = min(oldest, s.start)
	}
	elapsed := max(now-oldest, w.WindowMs)
	return total / (float64(elapsed) / 1000)
}
