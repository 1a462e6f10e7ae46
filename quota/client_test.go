package quota

import (
	"math"
	"testing"
)

// clock is a manual millisecond clock.
type clock struct{ ms int64 }

func (c *clock) now() int64     { return c.ms }
func (c *clock) sleep(ms int64) { c.ms += ms }
func newClock() *clock          { return &clock{ms: 1_700_000_000_000} }
func quotas(kv ...any) map[Entity]float64 {
	m := map[Entity]float64{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(Entity)] = kv[i+1].(float64)
	}
	return m
}

// TestQuotaViolation is ClientQuotaManagerTest.testQuotaViolation: the
// spike's throttle time is (600-500)/500 * 10.5 s.
func TestQuotaViolation(t *testing.T) {
	c := newClock()
	m := NewClientManager(Produce, DefaultWindow, c.now)
	m.SetQuotas(quotas(Entity{ClientID: DefaultPart}, 500.0))
	for range 10 {
		if got := m.Record("ANONYMOUS", "unknown", 400); got != 0 {
			t.Fatalf("under the quota: throttled %d ms", got)
		}
		c.sleep(1000)
	}
	// 400*10 + 2300 = 6300 bytes over 10.5 s = 600 B/s.
	c.sleep(500)
	if got := m.Record("ANONYMOUS", "unknown", 2300); got != 2100 {
		t.Fatalf("spike: throttle %d ms, want 2100", got)
	}
	c.sleep(2100)
	for range 10 {
		m.Record("ANONYMOUS", "unknown", 400)
		c.sleep(1000)
	}
	if got := m.Record("ANONYMOUS", "unknown", 0); got != 0 {
		t.Fatalf("after the spike rolled over: throttle %d ms", got)
	}
}

// TestFirstBurstIsAveragedOverTheWindow: an idle client's first request is
// averaged over samples-1 windows (Rate.windowSize's padding).
func TestFirstBurstIsAveragedOverTheWindow(t *testing.T) {
	c := newClock()
	m := NewClientManager(Produce, DefaultWindow, c.now)
	m.SetQuotas(quotas(Entity{ClientID: Named("limited")}, 1000.0))
	// 10 s * 1000 B/s fit without throttling.
	if got := m.Record("u", "limited", 10000); got != 0 {
		t.Fatalf("10000 B at once: throttle %d", got)
	}
	// 5000 more: 15000 over the 10 s window = 1500 B/s, throttle (1500-1000)/1000*10000.
	if got := m.Record("u", "limited", 5000); got != 5000 {
		t.Fatalf("throttle %d, want 5000", got)
	}
	// Another client id is not limited.
	if got := m.Record("u", "other", 1e9); got != 0 {
		t.Fatalf("unlimited client throttled %d", got)
	}
	if got := m.MaxValueInQuotaWindow("u", "limited"); got != 10000 {
		t.Fatalf("max value in quota window %v, want 10000", got)
	}
	if got := m.MaxValueInQuotaWindow("u", "other"); got != math.MaxFloat64 {
		t.Fatalf("unlimited max value %v", got)
	}
}

// TestUnrecord: a throttled fetch takes its bytes back.
func TestUnrecord(t *testing.T) {
	c := newClock()
	m := NewClientManager(Fetch, DefaultWindow, c.now)
	m.SetQuotas(quotas(Entity{ClientID: Named("c")}, 100.0))
	// 2000 B over the padded 10 s window = 200 B/s: (200-100)/100*10000 ms.
	if got := m.Record("u", "c", 2000); got != 10000 {
		t.Fatalf("throttle %d, want 10000", got)
	}
	m.Unrecord("u", "c", 2000)
	if got := m.Record("u", "c", 1000); got != 0 {
		t.Fatalf("after unrecord: throttle %d", got)
	}
}

// TestWindowExpiry: samples older than samples*window are dropped.
func TestWindowExpiry(t *testing.T) {
	c := newClock()
	m := NewClientManager(Produce, Window{Samples: 3, WindowMs: 1000}, c.now)
	m.SetQuotas(quotas(Entity{User: Named("alice")}, 100.0))
	if got := m.Record("alice", "x", 1000); got != 8000 {
		// 1000 B over a 2 s padded window = 500 B/s: (500-100)/100*2000 ms.
		t.Fatalf("throttle %d, want 8000", got)
	}
	c.sleep(3000)
	if got := m.Record("alice", "x", 100); got != 0 {
		t.Fatalf("after the window passed: throttle %d", got)
	}
}

// TestRequestQuotaThrottleIsCapped: ClientRequestQuotaManager bounds the
// throttle time at one window.
func TestRequestQuotaThrottleIsCapped(t *testing.T) {
	c := newClock()
	m := NewClientManager(Request, DefaultWindow, c.now)
	m.SetQuotas(quotas(Entity{ClientID: Named("c")}, 1.0))
	if got := m.Record("u", "c", 500); got != 1000 {
		t.Fatalf("throttle %d, want the 1000 ms cap", got)
	}
}

// TestResolutionOrder is ClientQuotaManagerTest's precedence: the most
// specific entity wins, user before client-id.
func TestResolutionOrder(t *testing.T) {
	c := newClock()
	m := NewClientManager(Produce, DefaultWindow, c.now)
	U, C := Named("userA"), Named("client1")
	levels := []struct {
		e Entity
		v float64
	}{
		{Entity{ClientID: DefaultPart}, 8},
		{Entity{ClientID: C}, 7},
		{Entity{User: DefaultPart}, 6},
		{Entity{DefaultPart, DefaultPart}, 5},
		{Entity{DefaultPart, C}, 4},
		{Entity{User: U}, 3},
		{Entity{U, DefaultPart}, 2},
		{Entity{U, C}, 1},
	}
	qs := map[Entity]float64{}
	for _, l := range levels {
		qs[l.e] = l.v
		m.SetQuotas(qs)
		if got := m.Limit("userA", "client1"); got != l.v {
			t.Errorf("after adding %+v: limit %v, want %v", l.e, got, l.v)
		}
	}
	// Others: userB of client1 gets <default> user/client1, userA of client2
	// gets userA/<default>.
	if got := m.Limit("userB", "client1"); got != 4 {
		t.Errorf("userB/client1: %v, want 4", got)
	}
	if got := m.Limit("userA", "client2"); got != 2 {
		t.Errorf("userA/client2: %v, want 2", got)
	}
	if got := m.Limit("userB", "client2"); got != 5 {
		t.Errorf("userB/client2: %v, want 5", got)
	}
	// Removing quotas updates existing rates' bounds.
	m.Record("userA", "client1", 1)
	m.SetQuotas(quotas(Entity{ClientID: C}, 7.0))
	if got := m.Limit("userA", "client1"); got != 7 {
		t.Errorf("after removal: %v, want 7", got)
	}
}

// TestClientIDQuotaIsShared: with only client-id quotas, every user of that
// client id shares one rate (the sensor's tags have no user).
func TestClientIDQuotaIsShared(t *testing.T) {
	c := newClock()
	m := NewClientManager(Produce, DefaultWindow, c.now)
	m.SetQuotas(quotas(Entity{ClientID: Named("c")}, 100.0))
	m.Record("alice", "c", 1000)
	if got := m.Record("bob", "c", 1); got == 0 {
		t.Fatal("bob should share alice's rate for client id c")
	}
}

// TestNoQuotaRecordsNothing: quotasEnabled is false until a quota is set.
func TestNoQuotaRecordsNothing(t *testing.T) {
	c := newClock()
	m := NewClientManager(Produce, DefaultWindow, c.now)
	if m.Record("u", "c", 1e12) != 0 || len(m.Stats()) != 0 {
		t.Fatal("recorded without quotas")
	}
}

// TestStrictMutationQuota is StrictControllerMutationQuotaTest.
func TestStrictMutationQuota(t *testing.T) {
	c := newClock()
	m := NewClientManager(ControllerMutation, Window{Samples: 10, WindowMs: 1000}, c.now)
	m.SetQuotas(quotas(Entity{ClientID: Named("c")}, 10.0))
	q := m.MutationQuota("u", "c", true)
	if !q.Record(90) || q.ThrottleMs() != 0 {
		t.Fatal("first 90 refused")
	}
	if !q.Record(90) || q.ThrottleMs() != 0 {
		t.Fatal("second 90 refused (tokens were left)")
	}
	if q.Record(90) {
		t.Fatal("third 90 accepted with -80 tokens")
	}
	if got := q.ThrottleMs(); got != 8000 {
		t.Fatalf("throttle %d, want 8000", got)
	}
	c.sleep(5000)
	if got := q.ThrottleMs(); got != 3000 {
		t.Fatalf("throttle after 5 s %d, want 3000", got)
	}
}

// TestPermissiveMutationQuota is PermissiveControllerMutationQuotaTest.
func TestPermissiveMutationQuota(t *testing.T) {
	c := newClock()
	m := NewClientManager(ControllerMutation, Window{Samples: 10, WindowMs: 1000}, c.now)
	m.SetQuotas(quotas(Entity{ClientID: Named("c")}, 10.0))
	q := m.MutationQuota("u", "c", false)
	for i, want := range []int{0, 8000, 17000} {
		if !q.Record(90) {
			t.Fatal("permissive quota refused")
		}
		if got := q.ThrottleMs(); got != want {
			t.Fatalf("record %d: throttle %d, want %d", i, got, want)
		}
	}
	c.sleep(5000)
	if got := q.ThrottleMs(); got != 12000 {
		t.Fatalf("throttle %d, want 12000", got)
	}
	if m.MutationQuota("u", "other", true).Record(1e6) != true {
		t.Fatal("a client without a quota was refused")
	}
}

// TestMutationQuotaManager is ControllerMutationQuotaManagerTest's
// testControllerMutationQuotaViolation (10 windows of 1 s).
func TestMutationQuotaManager(t *testing.T) {
	c := newClock()
	m := NewClientManager(ControllerMutation, Window{Samples: 10, WindowMs: 1000}, c.now)
	m.SetQuotas(quotas(Entity{Named("ANONYMOUS"), Named("test-client")}, 10.0))
	for range 10 {
		if q := m.MutationQuota("ANONYMOUS", "test-client", true); !q.Record(10) {
			t.Fatal("refused under the quota")
		}
		c.sleep(1000)
	}
	q := m.MutationQuota("ANONYMOUS", "test-client", true)
	if !q.Record(110) || q.ThrottleMs() != 0 {
		t.Fatal("spike with 100 tokens left refused")
	}
	q = m.MutationQuota("ANONYMOUS", "test-client", true)
	if q.Record(110) || q.ThrottleMs() != 1000 {
		t.Fatalf("second spike: throttle %d, want 1000", q.ThrottleMs())
	}
}

// TestRecordAllocs: the hot path allocates nothing once the rate exists.
func TestRecordAllocs(t *testing.T) {
	c := newClock()
	m := NewClientManager(Produce, DefaultWindow, c.now)
	m.SetQuotas(quotas(Entity{ClientID: Named("c")}, 1e12))
	for range 20 {
		m.Record("u", "c", 1)
		c.sleep(1000)
	}
	if n := testing.AllocsPerRun(100, func() { m.Record("u", "c", 1); c.sleep(100) }); n != 0 {
		t.Fatalf("Record allocates %v times", n)
	}
}
