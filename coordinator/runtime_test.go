package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// counter is a test shard: a map of keys to the number of records written
// for them, applied after each append (write-then-apply).
type counter struct {
	ctx      *Context
	counts   map[string]int
	loaded   bool
	unloaded bool
	events   *[]string
	mu       *sync.Mutex
}

func (c *counter) Replay(r Loaded) error {
	if r.Marker != nil {
		return nil
	}
	if string(r.Key) == "bad" {
		return errors.New("bad record")
	}
	c.counts[string(r.Key)]++
	return nil
}
func (c *counter) Loaded()   { c.loaded = true; c.note("loaded") }
func (c *counter) Unloaded() { c.unloaded = true; c.note("unloaded") }
func (c *counter) note(s string) {
	c.mu.Lock()
	*c.events = append(*c.events, fmt.Sprintf("p%d %s", c.ctx.Partition(), s))
	c.mu.Unlock()
}

func (c *counter) incr(key string) error {
	if err := c.ctx.Append(Batch{ProducerID: NoProducer, Records: []Record{{Key: []byte(key), Value: []byte("v")}}}); err != nil {
		return err
	}
	c.counts[key]++
	return nil
}

type fixture struct {
	t      *testing.T
	log    *MemLog
	clock  *ManualClock
	rt     *Runtime[*counter]
	mu     sync.Mutex
	events []string
}

const topic = "__test"

func tp(p int32) TopicPartition { return TopicPartition{Topic: topic, Partition: p} }

func newFixture(t *testing.T, autoCommit bool) *fixture {
	f := &fixture{t: t, log: NewMemLog(autoCommit), clock: NewManualClock(time.Unix(1_700_000_000, 0))}
	f.rt = New(Config[*counter]{Name: "test", Topic: topic, Writer: f.log, Clock: f.clock,
		NewShard: func(ctx *Context) *counter {
			return &counter{ctx: ctx, counts: map[string]int{}, events: &f.events, mu: &f.mu}
		}})
	t.Cleanup(f.rt.Close)
	return f
}

func (f *fixture) lead(m map[int32]int32) {
	f.rt.SetLeaders(m)
	f.waitLoaded(m)
}

func (f *fixture) waitLoaded(m map[int32]int32) {
	deadline := time.Now().Add(5 * time.Second)
	for p := range m {
		for {
			if _, ok := f.rt.LeaderEpoch(p); ok {
				break
			}
			if time.Now().After(deadline) {
				f.t.Fatalf("partition %d did not load", p)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func (f *fixture) run(p int32, op func(*counter) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return f.rt.Run(ctx, p, op)
}

// async runs op and returns a channel with Run's result.
func (f *fixture) async(p int32, op func(*counter) error) chan error {
	ch := make(chan error, 1)
	go func() { ch <- f.run(p, op) }()
	return ch
}

func pending(t *testing.T, ch chan error) {
	t.Helper()
	select {
	case err := <-ch:
		t.Fatalf("completed early with %v", err)
	case <-time.After(20 * time.Millisecond):
	}
}

func result(t *testing.T, ch chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("did not complete")
		return nil
	}
}

func TestRunOnUnledPartitionIsNotCoordinator(t *testing.T) {
	f := newFixture(t, true)
	if err := f.run(0, func(*counter) error { return nil }); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("got %v, want NOT_COORDINATOR", err)
	}
}

func TestLoadReplaysThenServes(t *testing.T) {
	f := newFixture(t, true)
	for _, k := range []string{"a", "b", "a"} {
		if _, err := f.log.Append(tp(0), 0, Batch{Records: []Record{{Key: []byte(k)}}}); err != nil {
			t.Fatal(err)
		}
	}
	f.lead(map[int32]int32{0: 3})
	var got map[string]int
	var loaded bool
	if err := f.run(0, func(c *counter) error { got, loaded = c.counts, c.loaded; return nil }); err != nil {
		t.Fatal(err)
	}
	if got["a"] != 2 || got["b"] != 1 || !loaded {
		t.Fatalf("after load: %v loaded=%v", got, loaded)
	}
	if e, _ := f.rt.LeaderEpoch(0); e != 3 {
		t.Fatalf("epoch %d", e)
	}
}

// blockingReader holds Read until released, to observe a loading partition.
type blockingReader struct {
	*MemLog
	release chan struct{}
}

func (b *blockingReader) Read(tp TopicPartition, fn func(Loaded) error) (int64, error) {
	<-b.release
	return b.MemLog.Read(tp, fn)
}

func TestLoadingAnswersLoadInProgress(t *testing.T) {
	log := &blockingReader{MemLog: NewMemLog(true), release: make(chan struct{})}
	rt := New(Config[*counter]{Topic: topic, Writer: log, NewShard: func(ctx *Context) *counter {
		return &counter{ctx: ctx, counts: map[string]int{}, events: new([]string), mu: new(sync.Mutex)}
	}})
	defer rt.Close()
	rt.SetLeaders(map[int32]int32{0: 0})
	if !rt.Loading() {
		t.Fatal("not loading")
	}
	err := rt.Run(context.Background(), 0, func(*counter) error { return nil })
	if !errors.Is(err, kerr.CoordinatorLoadInProgress) {
		t.Fatalf("got %v, want COORDINATOR_LOAD_IN_PROGRESS", err)
	}
	// Posted events wait for the load instead.
	ran := make(chan bool, 1)
	rt.Post(0, "probe", func(c *counter) error { ran <- c.loaded; return nil })
	close(log.release)
	if loaded := <-ran; !loaded {
		t.Fatal("posted event ran before the load ended")
	}
	if err := rt.Run(context.Background(), 0, func(*counter) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestWriteCompletesWhenCommitted(t *testing.T) {
	f := newFixture(t, false)
	f.lead(map[int32]int32{0: 0})
	w := f.async(0, func(c *counter) error { return c.incr("x") })
	pending(t, w)
	// A read queued behind the uncommitted write waits for it too, though
	// it writes nothing: it saw x=1.
	var seen int
	r := f.async(0, func(c *counter) error { seen = c.counts["x"]; return nil })
	pending(t, r)
	f.log.CommitAll(tp(0))
	if err := result(t, w); err != nil {
		t.Fatal(err)
	}
	if err := result(t, r); err != nil || seen != 1 {
		t.Fatalf("read: %v, saw %d", err, seen)
	}
	// Everything committed: a read completes at once.
	if err := f.run(0, func(c *counter) error { seen = c.counts["x"]; return nil }); err != nil || seen != 1 {
		t.Fatalf("read: %v, saw %d", err, seen)
	}
}

func TestPipelinedWritesCompleteInOrder(t *testing.T) {
	f := newFixture(t, false)
	f.lead(map[int32]int32{0: 0})
	var chs []chan error
	for i := range 3 {
		chs = append(chs, f.async(0, func(c *counter) error { return c.incr(fmt.Sprint(i)) }))
		// Let each be written before the next so offsets are i..i.
		deadline := time.Now().Add(5 * time.Second)
		for f.log.LogEnd(tp(0)) != int64(i+1) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	f.log.Commit(tp(0), 2) // offsets 0 and 1
	if err := result(t, chs[0]); err != nil {
		t.Fatal(err)
	}
	if err := result(t, chs[1]); err != nil {
		t.Fatal(err)
	}
	pending(t, chs[2])
	f.log.Commit(tp(0), 3)
	if err := result(t, chs[2]); err != nil {
		t.Fatal(err)
	}
}

func TestOpErrorWithoutWritesIsImmediate(t *testing.T) {
	f := newFixture(t, false)
	f.lead(map[int32]int32{0: 0})
	w := f.async(0, func(c *counter) error { return c.incr("x") })
	pending(t, w)
	if err := f.run(0, func(*counter) error { return kerr.IllegalGeneration }); !errors.Is(err, kerr.IllegalGeneration) {
		t.Fatalf("got %v", err)
	}
	f.log.CommitAll(tp(0))
	if err := result(t, w); err != nil {
		t.Fatal(err)
	}
}

func TestFailedAppendLeavesStateAsItWas(t *testing.T) {
	f := newFixture(t, true)
	f.lead(map[int32]int32{0: 0})
	f.log.FailAppends(kerr.KafkaStorageError)
	if err := f.run(0, func(c *counter) error { return c.incr("x") }); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("got %v", err)
	}
	f.log.FailAppends(nil)
	var n int
	if err := f.run(0, func(c *counter) error { n = c.counts["x"]; return nil }); err != nil || n != 0 {
		t.Fatalf("x=%d err=%v", n, err)
	}
}

func TestUnloadFailsWaitersAndQueued(t *testing.T) {
	f := newFixture(t, false)
	f.lead(map[int32]int32{0: 0, 1: 0})
	w := f.async(0, func(c *counter) error { return c.incr("x") })
	pending(t, w)
	deferred := make(chan error, 1)
	if err := f.run(1, func(c *counter) error { return nil }); err != nil {
		t.Fatal(err)
	}
	var unloadedAt0 bool
	f.rt.Post(0, "defer", func(c *counter) error {
		c.ctx.Defer(func(err error) { unloadedAt0 = c.unloaded; deferred <- err })
		return nil
	})
	f.rt.SetLeaders(map[int32]int32{1: 0})
	if err := result(t, w); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("waiting write: %v", err)
	}
	if err := result(t, deferred); !errors.Is(err, kerr.NotCoordinator) || !unloadedAt0 {
		t.Fatalf("deferred: %v (after Unloaded: %v)", err, unloadedAt0)
	}
	if err := f.run(0, func(*counter) error { return nil }); !errors.Is(err, kerr.NotCoordinator) {
		t.Fatalf("after unload: %v", err)
	}
	// Partition 1 is untouched.
	if err := f.run(1, func(c *counter) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestNewLeaderEpochReloads(t *testing.T) {
	f := newFixture(t, true)
	f.lead(map[int32]int32{0: 0})
	if err := f.run(0, func(c *counter) error { return c.incr("x") }); err != nil {
		t.Fatal(err)
	}
	// Another leader truncated our write away; we lead again at epoch 2.
	f.log.Truncate(tp(0), 0)
	f.log.SetLeaderEpoch(tp(0), 2)
	// The old loop cannot write at its epoch.
	if err := f.run(0, func(c *counter) error { return c.incr("y") }); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("stale epoch append: %v", err)
	}
	f.rt.SetLeaders(map[int32]int32{0: 2})
	f.waitLoaded(map[int32]int32{0: 2})
	var n int
	if err := f.run(0, func(c *counter) error { n = c.counts["x"]; return c.incr("z") }); err != nil || n != 0 {
		t.Fatalf("x=%d err=%v", n, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	want := []string{"p0 loaded", "p0 unloaded", "p0 loaded"}
	if fmt.Sprint(f.events) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", f.events, want)
	}
}

func TestFailedLoadIsRetried(t *testing.T) {
	f := newFixture(t, true)
	if _, err := f.log.Append(tp(0), 0, Batch{Records: []Record{{Key: []byte("bad")}}}); err != nil {
		t.Fatal(err)
	}
	f.rt.SetLeaders(map[int32]int32{0: 0})
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := f.run(0, func(*counter) error { return nil })
		if errors.Is(err, kerr.NotCoordinator) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failed load still answers %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	f.log.Truncate(tp(0), 0)
	f.lead(map[int32]int32{0: 0})
	if err := f.run(0, func(*counter) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

func TestTimersRunOnTheLoop(t *testing.T) {
	f := newFixture(t, true)
	f.lead(map[int32]int32{0: 0})
	fired := make(chan string, 4)
	if err := f.run(0, func(c *counter) error {
		c.ctx.Schedule("a", time.Second, func() { fired <- "a1" })
		c.ctx.Schedule("a", 2*time.Second, func() { _ = c.incr("timer"); fired <- "a2" }) // replaces a1
		c.ctx.Schedule("b", 3*time.Second, func() { fired <- "b" })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Second)
	f.clock.Advance(time.Second)
	if got := <-fired; got != "a2" {
		t.Fatalf("fired %s", got)
	}
	var n int
	var bPending, aPending bool
	if err := f.run(0, func(c *counter) error {
		n, aPending, bPending = c.counts["timer"], c.ctx.Scheduled("a"), c.ctx.Scheduled("b")
		c.ctx.Cancel("b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 1 || aPending || !bPending {
		t.Fatalf("timer count %d, a pending %v, b pending %v", n, aPending, bPending)
	}
	f.clock.Advance(time.Hour)
	if err := f.run(0, func(*counter) error { return nil }); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-fired:
		t.Fatalf("cancelled timer fired: %s", got)
	default:
	}
	if f.clock.Pending() != 0 {
		t.Fatalf("%d timers left", f.clock.Pending())
	}
}

func TestUnloadStopsTimers(t *testing.T) {
	f := newFixture(t, true)
	f.lead(map[int32]int32{0: 0})
	if err := f.run(0, func(c *counter) error {
		c.ctx.Schedule("a", time.Second, func() { t.Error("timer fired after unload") })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.rt.SetLeaders(nil)
	f.rt.Close()
	if f.clock.Pending() != 0 {
		t.Fatalf("%d timers left", f.clock.Pending())
	}
	f.clock.Advance(time.Hour)
}

func TestRunGivesUpWithoutRacingTheOp(t *testing.T) {
	f := newFixture(t, false)
	f.lead(map[int32]int32{0: 0})
	// Block the loop so the next op stays queued.
	block := make(chan struct{})
	f.rt.Post(0, "block", func(*counter) error { <-block; return nil })
	ctx, cancel := context.WithCancel(context.Background())
	ran := false
	done := make(chan error, 1)
	go func() { done <- f.rt.Run(ctx, 0, func(*counter) error { ran = true; return nil }) }()
	cancel()
	if err := <-done; !errors.Is(err, kerr.RequestTimedOut) {
		t.Fatalf("got %v", err)
	}
	close(block)
	if err := f.run(0, func(*counter) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if ran {
		t.Fatal("a cancelled op ran")
	}
	// An op that ran but whose write is not committed when ctx ends.
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	var wrote bool
	err := f.rt.Run(ctx, 0, func(c *counter) error { wrote = c.incr("x") == nil; return nil })
	if !errors.Is(err, kerr.RequestTimedOut) || !wrote {
		t.Fatalf("got %v, wrote %v", err, wrote)
	}
}

func TestPartitionsListsLoaded(t *testing.T) {
	f := newFixture(t, true)
	f.lead(map[int32]int32{0: 0, 3: 1})
	got := map[int32]bool{}
	for _, p := range f.rt.Partitions() {
		got[p] = true
	}
	if len(got) != 2 || !got[0] || !got[3] {
		t.Fatalf("partitions %v", got)
	}
}
