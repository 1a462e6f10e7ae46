package quota

import (
	"slices"
	"testing"
)

func TestReplicationThrottleUnboundedNeverExceeded(t *testing.T) {
	now := int64(0)
	q := NewReplicationQuota(LeaderReplication, DefaultWindow, func() int64 { return now })
	q.Record(1 << 40)
	if q.IsQuotaExceeded() {
		t.Fatal("an unbounded quota is exceeded")
	}
	if q.Bound() != Unbounded {
		t.Fatalf("bound %v", q.Bound())
	}
}

// SimpleRate: the sum over the time since the oldest sample started, at
// least one window; the quota is exceeded only above the bound.
func TestReplicationThrottleSimpleRate(t *testing.T) {
	now := int64(1000)
	q := NewReplicationQuota(FollowerReplication, DefaultWindow, func() int64 { return now })
	q.SetBound(100)
	q.Record(50)
	if got := q.Rate(); got != 50 {
		t.Fatalf("rate after 50 bytes in the first window = %v, want 50", got)
	}
	if q.IsQuotaExceeded() {
		t.Fatal("50 B/s exceeds 100 B/s")
	}
	q.Record(60)
	if !q.IsQuotaExceeded() {
		t.Fatalf("110 B in the first window does not exceed 100 B/s (rate %v)", q.Rate())
	}
	now += 1100 // 110 B over 1.1 s: exactly the bound, acceptable
	if q.IsQuotaExceeded() {
		t.Fatalf("110 B over 1.1 s exceeds 100 B/s (rate %v)", q.Rate())
	}
	now += 5000
	if got := q.Rate(); got < 18 || got > 18.1 {
		t.Fatalf("rate after 6.1 s = %v, want 110/6.1", got)
	}
	// Samples whose last event is samples*window old are purged.
	now += 11 * 1000
	if got := q.Rate(); got != 0 {
		t.Fatalf("rate after 11 idle windows = %v, want 0", got)
	}
}

// A fetcher that moves a chunk whenever the quota is not exceeded moves
// about bound bytes per second, plus one chunk.
func TestReplicationThrottleSteadyState(t *testing.T) {
	now := int64(0)
	q := NewReplicationQuota(LeaderReplication, DefaultWindow, func() int64 { return now })
	const bound, chunk = 100_000, 64 << 10
	q.SetBound(bound)
	var moved int64
	for now = 0; now < 30_000; now += 10 {
		if !q.IsQuotaExceeded() {
			q.Record(chunk)
			moved += chunk
		}
	}
	if maxMoved := int64(bound*30 + 2*chunk); moved > maxMoved {
		t.Fatalf("moved %d bytes in 30 s at %d B/s, more than %d", moved, bound, maxMoved)
	}
	if minMoved := int64(bound * 30 * 8 / 10); moved < minMoved {
		t.Fatalf("moved %d bytes in 30 s at %d B/s, less than %d", moved, bound, minMoved)
	}
	// Lowering the bound takes effect at once.
	q.SetBound(1)
	if !q.IsQuotaExceeded() {
		t.Fatal("not exceeded after lowering the bound")
	}
}

func TestReplicationThrottleThrottledSet(t *testing.T) {
	q := NewReplicationQuota(LeaderReplication, DefaultWindow, func() int64 { return 0 })
	q.SetThrottled(map[string][]int32{"all": AllReplicas, "some": {0, 2}})
	for _, c := range []struct {
		topic string
		p     int32
		want  bool
	}{{"all", 0, true}, {"all", 7, true}, {"some", 0, true}, {"some", 1, false}, {"some", 2, true}, {"none", 0, false}} {
		if got := q.IsThrottled(c.topic, c.p); got != c.want {
			t.Errorf("IsThrottled(%s, %d) = %v, want %v", c.topic, c.p, got, c.want)
		}
	}
	q.SetThrottled(nil)
	if q.IsThrottled("all", 0) {
		t.Error("still throttled after the set was emptied")
	}
}

func TestReplicationThrottleParseReplicas(t *testing.T) {
	for _, c := range []struct {
		v    string
		want []int32
		ok   bool
	}{
		{"", nil, true},
		{" * ", AllReplicas, true},
		{"0:1,1:2, 2:1", []int32{0, 2}, true},
		{"0:2", nil, true},
		{"0-1", nil, false},
		{"x:1", nil, false},
	} {
		got, ok := ParseThrottledReplicas(c.v, 1)
		if ok != c.ok || !slices.Equal(got, c.want) {
			t.Errorf("ParseThrottledReplicas(%q, 1) = %v, %v; want %v, %v", c.v, got, ok, c.want, c.ok)
		}
	}
}

func TestReplicationThrottleKinds(t *testing.T) {
	if LeaderReplication.String() != "LeaderReplication" || FollowerReplication.RateKey() != "follower.replication.throttled.rate" ||
		AlterLogDirsReplication.RateKey() != "replica.alter.log.dirs.io.max.bytes.per.second" ||
		LeaderReplication.ReplicasKey() != "leader.replication.throttled.replicas" {
		t.Fatal("kind names")
	}
}

// The first look at a quota starts its window (SampledStat.oldest adds a
// sample), so bytes recorded later are averaged from then.
func TestReplicationThrottleWindowStartsAtFirstCheck(t *testing.T) {
	now := int64(0)
	q := NewReplicationQuota(FollowerReplication, DefaultWindow, func() int64 { return now })
	q.SetBound(100)
	if q.IsQuotaExceeded() {
		t.Fatal("exceeded before anything was recorded")
	}
	now = 3000
	q.Record(300)
	if q.IsQuotaExceeded() {
		t.Fatalf("300 B over the 3 s since the first check exceeds 100 B/s (rate %v)", q.Rate())
	}
	q.Record(1)
	if !q.IsQuotaExceeded() {
		t.Fatalf("301 B over 3 s does not exceed 100 B/s (rate %v)", q.Rate())
	}
}

// A metrics scrape (Rate) is not a look at the quota: it must not start the
// window, or bytes recorded seconds later would be averaged from the scrape
// and a burst of several seconds' worth would pass.
func TestReplicationThrottleScrapeDoesNotStartWindow(t *testing.T) {
	now := int64(0)
	q := NewReplicationQuota(FollowerReplication, DefaultWindow, func() int64 { return now })
	q.SetBound(100)
	if got := q.Rate(); got != 0 {
		t.Fatalf("rate before anything was recorded = %v", got)
	}
	now = 5000
	q.Record(300)
	if !q.IsQuotaExceeded() {
		t.Fatalf("300 B in the first window does not exceed 100 B/s (rate %v): the scrape 5 s earlier started the window", q.Rate())
	}
	if got := q.Rate(); got != 300 {
		t.Fatalf("rate = %v, want 300", got)
	}
}
