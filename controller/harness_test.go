package controller

import (
	"context"
	mrand "math/rand"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/raft"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// fakeRaft is a single-voter raft: Append commits at once; committed
// batches and leader changes are delivered in order from one goroutine, as
// raft.Node does. Offset 0 (and each new epoch's first offset) is taken by
// the LeaderChange control record, which listeners never see.
type fakeRaft struct {
	mu        sync.Mutex
	le        raft.LeaderAndEpoch
	next      int64
	listeners []raft.Listener
	events    chan func()
	failNext  error
	appended  [][]byte // every record appended, in order
}

func newFakeRaft() *fakeRaft {
	f := &fakeRaft{le: raft.LeaderAndEpoch{LeaderID: -1, Epoch: 0}, events: make(chan func(), 1024)}
	go func() {
		for ev := range f.events {
			ev()
		}
	}()
	return f
}

func (f *fakeRaft) Register(l raft.Listener) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listeners = append(f.listeners, l)
}

func (f *fakeRaft) LeaderAndEpoch() raft.LeaderAndEpoch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.le
}

func (f *fakeRaft) HandleRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return req.ResponseKind(), nil
}

// elect makes leader the leader of a new epoch.
func (f *fakeRaft) elect(leader int32) {
	f.mu.Lock()
	f.le = raft.LeaderAndEpoch{LeaderID: leader, Epoch: f.le.Epoch + 1}
	le := f.le
	f.next++ // the LeaderChange control record
	ls := append([]raft.Listener(nil), f.listeners...)
	f.mu.Unlock()
	f.events <- func() {
		for _, l := range ls {
			l.HandleLeaderChange(le)
		}
	}
}

func (f *fakeRaft) Append(ctx context.Context, records [][]byte) (int64, error) {
	f.mu.Lock()
	if f.failNext != nil {
		err := f.failNext
		f.failNext = nil
		f.mu.Unlock()
		return -1, err
	}
	if f.le.LeaderID != 1 {
		le := f.le
		f.mu.Unlock()
		return -1, &raft.NotLeaderError{Leader: le}
	}
	b := raft.Batch{BaseOffset: f.next, LastOffset: f.next + int64(len(records)) - 1, Epoch: f.le.Epoch,
		AppendTimeMs: 1, Records: records}
	f.next = b.LastOffset + 1
	f.appended = append(f.appended, records...)
	ls := append([]raft.Listener(nil), f.listeners...)
	f.mu.Unlock()
	f.events <- func() {
		for _, l := range ls {
			l.HandleCommit(b)
		}
	}
	return b.LastOffset, nil
}

// fakeClock is an injected clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type testEnv struct {
	t     *testing.T
	c     *Controller
	cfg   Config
	raft  *fakeRaft  // nil over a real raft.Node
	node  *raft.Node // nil over fakeRaft
	fs    vfs.FS
	clock *fakeClock
}

func testConfig(clk *fakeClock, r Raft, mod func(*Config)) Config {
	cfg := Config{
		NodeID:          1,
		ClusterID:       "test-cluster",
		Raft:            r,
		Now:             clk.Now,
		MaxIdleInterval: -1, // tests write NoOps themselves
		SessionTimeout:  9 * time.Second,
		Rand:            rand.New(rand.NewPCG(1, 2)),
	}
	if mod != nil {
		mod(&cfg)
	}
	return cfg
}

// newTestEnv runs a controller over a real single-voter raft.Node on an
// in-memory file system.
func newTestEnv(t *testing.T, mod func(*Config)) *testEnv {
	t.Helper()
	env := &testEnv{t: t, fs: vfs.NewMem(), clock: &fakeClock{now: time.Unix(1_700_000_000, 0)}}
	env.start(mod)
	return env
}

// start opens the raft node over env.fs (replaying what is there) and a
// new controller on it, and waits until the controller is active.
func (e *testEnv) start(mod func(*Config)) {
	e.t.Helper()
	n, err := raft.NewNode(raft.Config{
		NodeID: 1, Voters: map[int32]raft.VoterEndpoint{1: {Host: "localhost", Port: 9093}},
		ClusterID: "test-cluster", MetadataLogDir: "/kraft", FS: e.fs,
		Rand: mrand.New(mrand.NewSource(1)), DirectoryID: [16]byte{0: 0xd1, 15: 1}, CanBecomeVoter: true,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.cfg = testConfig(e.clock, n, mod)
	c, err := New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.c, e.node = c, n
	e.t.Cleanup(func() { e.stop() })
	e.waitActive()
}

func (e *testEnv) stop() {
	if e.c != nil {
		e.c.Close()
	}
	if e.node != nil {
		e.node.Close()
	}
}

// newFakeEnv runs a controller over fakeRaft (for leadership and failure cases).
func newFakeEnv(t *testing.T, mod func(*Config)) *testEnv {
	t.Helper()
	fr := newFakeRaft()
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	cfg := testConfig(clk, fr, mod)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fr.elect(1)
	env := &testEnv{t: t, c: c, cfg: cfg, raft: fr, clock: clk}
	env.waitActive()
	return env
}

func (e *testEnv) waitActive() {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !e.c.Active() {
		if time.Now().After(deadline) {
			e.t.Fatal("controller never became active")
		}
		e.c.maybeActivate()
		time.Sleep(time.Millisecond)
	}
}

func (e *testEnv) do(req kmsg.Request) kmsg.Response {
	e.t.Helper()
	resp, err := e.c.Handle(context.Background(), req)
	if err != nil {
		e.t.Fatalf("Handle(%T): %v", req, err)
	}
	return resp
}

func (e *testEnv) waitEpoch(epoch int32) {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		e.c.mu.Lock()
		got := e.c.mu.activeEpoch
		e.c.mu.Unlock()
		if got == epoch {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("controller never activated in epoch %d", epoch)
		}
		time.Sleep(time.Millisecond)
	}
}
