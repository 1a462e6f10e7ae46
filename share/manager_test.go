package share

import (
	"context"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/sharestate"
	"github.com/kgo-broker/kgo-broker/storage"
)

func newTestManager(log *fakeLog, lockMs int64) *Manager {
	return NewManager(Config{Log: log, Defaults: Defaults{Limits: Limits{LockMs: lockMs, DeliveryLimit: 5, MaxLocks: 200}, AutoOffsetReset: "earliest"}})
}

var foo0 = FetchPart{TopicPartition: TopicPartition{topicID, 0}, Topic: "foo"}

// Members fetching and acknowledging at once never hold a record
// together, and every record ends accepted or archived.
func TestConcurrentMembers(t *testing.T) {
	log := newFakeLog()
	for range 50 {
		log.produce(0, 10, -1, false)
	}
	m := newTestManager(log, 600000)
	ctx := context.Background()
	var mu sync.Mutex
	held := map[int64]string{}
	accepted := map[int64]int{}
	var wg sync.WaitGroup
	for i := range 4 {
		member := string(rune('a' + i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(i)))
			for range 2000 {
				if p := m.Partition("g", foo0.TopicPartition); p != nil {
					if start, _ := p.Offsets(); start >= 500 {
						return
					}
				}
				mode := BatchOptimized
				if rng.Intn(2) == 0 {
					mode = RecordLimit
				}
				res := m.Fetch(ctx, FetchParams{Group: "g", Member: member, Parts: []FetchPart{foo0}, MaxBytes: 1 << 20, MinBytes: 1, MaxRecords: int32(1 + rng.Intn(15)), Mode: mode})
				if res[0].Err != nil {
					t.Errorf("fetch: %v", res[0].Err)
					return
				}
				var acks []AckBatch
				mu.Lock()
				for _, a := range res[0].Acquired {
					for off := a.First; off <= a.Last; off++ {
						if h, ok := held[off]; ok {
							t.Errorf("offset %d acquired by %s while %s holds it", off, member, h)
						}
						held[off] = member
					}
				}
				for _, a := range res[0].Acquired {
					for off := a.First; off <= a.Last; off++ {
						typ := sharestate.AckAccept
						if rng.Intn(4) == 0 {
							typ = sharestate.AckRelease
						}
						delete(held, off)
						if typ == sharestate.AckAccept {
							accepted[off]++
						}
						acks = append(acks, AckBatch{First: off, Last: off, Types: []int8{int8(typ)}})
					}
				}
				mu.Unlock()
				if len(acks) > 0 {
					if err := m.Acknowledge(ctx, "g", member, []AckPart{{FetchPart: foo0, Batches: acks}}, false)[0]; err != nil {
						t.Errorf("ack: %v", err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	p := m.Partition("g", foo0.TopicPartition)
	if start, next := p.Offsets(); start != 500 || next != 500 {
		t.Fatalf("offsets %d, %d: %s", start, next, p.Dump())
	}
	for off, n := range accepted {
		if n != 1 {
			t.Fatalf("offset %d accepted %d times", off, n)
		}
	}
}

// A parked fetch wakes on an append, on a release by another member, and
// otherwise answers empty after max wait.
func TestDelayedFetch(t *testing.T) {
	log := newFakeLog()
	m := newTestManager(log, 600000)
	ctx := context.Background()
	fetch := func(member string, wait time.Duration) []PartResult {
		return m.Fetch(ctx, FetchParams{Group: "g", Member: member, Parts: []FetchPart{foo0}, MaxBytes: 1 << 20, MinBytes: 1, MaxRecords: 100, MaxWait: wait})
	}
	start := time.Now()
	if res := fetch("a", 200*time.Millisecond); len(res[0].Acquired) != 0 || res[0].Err != nil {
		t.Fatalf("empty log: %+v", res)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("answered after %v, before max wait", d)
	}

	go func() {
		time.Sleep(100 * time.Millisecond)
		log.produce(0, 3, -1, false)
	}()
	start = time.Now()
	res := fetch("a", 10*time.Second)
	if len(res[0].Acquired) != 1 || res[0].Acquired[0] != (Acquired{0, 2, 1}) {
		t.Fatalf("after the append: %+v", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("woken after %v", d)
	}

	go func() {
		time.Sleep(100 * time.Millisecond)
		m.Acknowledge(ctx, "g", "a", []AckPart{{FetchPart: foo0, Batches: []AckBatch{{First: 0, Last: 2, Types: []int8{int8(sharestate.AckRelease)}}}}}, false)
	}()
	start = time.Now()
	res = fetch("b", 10*time.Second)
	if len(res[0].Acquired) != 1 || res[0].Acquired[0] != (Acquired{0, 2, 2}) {
		t.Fatalf("after the release: %+v", res)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("woken after %v", d)
	}
}

// Acknowledgements with absurd ranges are refused without allocating
// from the counts in them.
func TestAcknowledgeHugeRanges(t *testing.T) {
	log := newFakeLog()
	log.produce(0, 5, -1, false)
	m := newTestManager(log, 600000)
	ctx := context.Background()
	m.Fetch(ctx, FetchParams{Group: "g", Member: "a", Parts: []FetchPart{foo0}, MaxBytes: 1 << 20, MinBytes: 1, MaxRecords: 100})
	for _, b := range []AckBatch{
		{First: 0, Last: 1 << 62, Types: []int8{1}},
		{First: 0, Last: 1 << 62, Types: []int8{1, 1}},
		{First: -5, Last: 3, Types: []int8{1}},
		{First: 1<<63 - 1, Last: 1<<63 - 1, Types: []int8{1}},
	} {
		if err := m.Acknowledge(ctx, "g", "a", []AckPart{{FetchPart: foo0, Batches: []AckBatch{b}}}, false)[0]; err == nil {
			t.Fatalf("%+v accepted", b)
		}
	}
	p := m.Partition("g", foo0.TopicPartition)
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.spans) != 1 || p.spans[0].state != sharestate.Acquired || p.spans[0].deliveries != 1 {
		t.Fatal("a refused acknowledgement changed the records")
	}
}

func TestParseISODuration(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"PT5S": 5 * time.Second, "P1D": 24 * time.Hour, "P1DT2H3M4.5S": 26*time.Hour + 3*time.Minute + 4500*time.Millisecond,
		"pt10m": 10 * time.Minute, "PT0S": 0,
	} {
		if got, ok := parseISODuration(s); !ok || got != want {
			t.Errorf("%s: %v %v, want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "P", "PT", "5S", "PT5", "P5H", "PTT5S", "PT-5S", "P1e300D", "PTxS"} {
		if _, ok := parseISODuration(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
}

// A session bound to a connection closes with it: the member's records
// are released, and the group's share partitions leave memory once no
// session is left.
func TestSessionClosedWithConnection(t *testing.T) {
	log := newFakeLog()
	log.produce(0, 5, -1, false)
	m := newTestManager(log, 600000)
	conn, closeConn := context.WithCancel(context.Background())
	if _, err := m.Sessions.Open("g", "a", []TopicPartition{foo0.TopicPartition}, 0); err != nil {
		t.Fatal(err)
	}
	m.BindSession(conn, "g", "a")
	if _, err := m.Sessions.Open("g", "b", []TopicPartition{foo0.TopicPartition}, 0); err != nil {
		t.Fatal(err)
	}
	res := m.Fetch(context.Background(), FetchParams{Group: "g", Member: "a", Parts: []FetchPart{foo0}, MaxBytes: 1 << 20, MinBytes: 1, MaxRecords: 100})
	if len(res[0].Acquired) != 1 {
		t.Fatalf("fetch: %+v", res)
	}
	p := m.Partition("g", foo0.TopicPartition)
	closeConn()
	deadline := time.Now().Add(10 * time.Second)
	for p.Dump() != "spso=0 speo=4 0-4:AVAILABLE/1" {
		if time.Now().After(deadline) {
			t.Fatalf("after the connection closed: %s", p.Dump())
		}
		time.Sleep(time.Millisecond)
	}
	if m.Sessions.Epoch("g", "a") != -1 || m.Sessions.Epoch("g", "b") != 1 {
		t.Fatal("sessions after the close")
	}
	if m.Partition("g", foo0.TopicPartition) == nil {
		t.Fatal("dropped while b has a session")
	}
	// b's session was not bound to a connection; closing it empties the
	// group only through OnGroupEmpty
	m.CloseSession(context.Background(), "g", "b")
}

// A parked fetch whose passes acquire parts of one batch answers the batch
// once.
func TestParkedFetchSendsBatchOnce(t *testing.T) {
	log := newFakeLog()
	log.produce(0, 10, -1, false)
	m := newTestManager(log, 600000)
	ctx := context.Background()
	res := m.Fetch(ctx, FetchParams{Group: "g", Member: "a", Parts: []FetchPart{foo0}, MaxBytes: 1 << 20, MinBytes: 1, MaxRecords: 3, Mode: RecordLimit})
	if len(res[0].Acquired) != 1 || res[0].Acquired[0] != (Acquired{0, 2, 1}) {
		t.Fatalf("first: %+v", res[0].Acquired)
	}
	// b's fetch wants more bytes than there are: it parks, and each
	// release of a's records brings another pass
	go func() {
		for off := int64(0); off <= 2; off++ {
			time.Sleep(50 * time.Millisecond)
			m.Acknowledge(ctx, "g", "a", []AckPart{{FetchPart: foo0, Batches: []AckBatch{{First: off, Last: off, Types: []int8{int8(sharestate.AckRelease)}}}}}, false)
		}
	}()
	res = m.Fetch(ctx, FetchParams{Group: "g", Member: "b", Parts: []FetchPart{foo0}, MaxBytes: 1 << 20, MinBytes: 1 << 20, MaxRecords: 100, Mode: RecordLimit, MaxWait: 400 * time.Millisecond})
	n := 0
	storageWalk(t, res[0].Records, func() { n++ })
	if n != 1 {
		t.Fatalf("the batch was answered %d times (acquired %+v)", n, res[0].Acquired)
	}
}

func storageWalk(t *testing.T, b []byte, fn func()) {
	t.Helper()
	if err := storage.WalkBatches(b, true, func(storage.BatchHeader, []byte) error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}
