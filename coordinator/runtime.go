package coordinator

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// TopicPartition names one partition of a coordinator's topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Record is one key/value record a coordinator writes; a nil Value is a
// tombstone.
type Record struct {
	Key, Value []byte
}

// Marker is an end-transaction control record (COMMIT or ABORT) with the
// epoch of the transaction coordinator that decided it.
type Marker struct {
	Commit           bool
	CoordinatorEpoch int32
}

// Batch is what one Append writes: records (or one control marker) as one
// record batch.
type Batch struct {
	Records []Record
	// ProducerID and ProducerEpoch are set for transactional writes
	// (TxnOffsetCommit records, end-transaction markers); ProducerID -1
	// otherwise.
	ProducerID    int64
	ProducerEpoch int16
	Transactional bool
	// Marker makes the batch a control batch holding only the marker.
	Marker *Marker
	// Guard is the KIP-890 verification guard a transactional write was
	// verified with (opaque to the runtime), or nil.
	Guard any
	// TimestampMs is the records' create time.
	TimestampMs int64
}

// NoProducer is the producer id of non-transactional batches.
const NoProducer int64 = -1

// Loaded is one record (or control marker) read back while loading a
// partition.
type Loaded struct {
	Offset        int64
	ProducerID    int64
	ProducerEpoch int16
	Transactional bool
	Marker        *Marker // a control batch's marker; Key and Value are nil
	Key, Value    []byte
}

// Writer is what the runtime needs of the partitions it keeps its state in
// (Kafka's PartitionWriter): the replica manager, or MemLog in tests.
type Writer interface {
	// Append writes b to the partition as its leader at leaderEpoch, without
	// waiting for replication (acks=1, origin coordinator), and returns the
	// offset after the batch. It fails with NOT_LEADER_OR_FOLLOWER when this
	// node no longer leads the partition at that epoch.
	Append(tp TopicPartition, leaderEpoch int32, b Batch) (int64, error)
	// HighWatermark returns the partition's high watermark.
	HighWatermark(tp TopicPartition) (int64, error)
	// Watch calls wake whenever the partition's high watermark may have
	// moved. wake never blocks and takes no lock but a leaf one, so the
	// writer may call it holding its own locks.
	Watch(tp TopicPartition, wake func()) (cancel func(), err error)
	// Read calls fn for every record and control marker of the partition
	// from its log start to its log end, in offset order, and returns the
	// log end offset it read to.
	Read(tp TopicPartition, fn func(Loaded) error) (int64, error)
	// VerifyTransaction checks with the transaction coordinator of txnID
	// that tp is part of the producer's ongoing transaction, adding it when
	// add is set (transaction.version 2, KIP-890 part 2), and returns the
	// verification guard a transactional Append of that producer must carry
	// (Kafka's VerificationGuard, Batch.Guard). It waits on the network:
	// call it before Run, never on a loop. A nil guard and nil error when
	// verification is off (transaction.partition.verification.enable=false).
	VerifyTransaction(ctx context.Context, tp TopicPartition, txnID string, producerID int64, producerEpoch int16, add bool) (guard any, err error)
}

// Shard is a coordinator's state for one partition (Kafka's
// CoordinatorShard). The runtime calls its methods on the partition's
// event loop only, so a shard needs no lock of its own.
type Shard interface {
	// Replay applies one record read back from the log while loading.
	Replay(Loaded) error
	// Loaded runs once the log is replayed, before any operation.
	Loaded()
	// Unloaded runs when this node stops leading the partition; the shard
	// is dropped afterwards.
	Unloaded()
}

// Config configures a Runtime.
type Config[S Shard] struct {
	// Name names the coordinator in logs ("group coordinator").
	Name   string
	Topic  string
	Writer Writer
	Clock  Clock
	Logger *zap.Logger
	// NewShard builds the empty shard of one partition; ctx is its handle on
	// the runtime (appends, deferred completions, timers).
	NewShard func(ctx *Context) S
}

// Runtime runs one event loop per partition of a coordinator's topic that
// this node leads (Kafka's CoordinatorRuntime). See doc.go.
type Runtime[S Shard] struct {
	cfg Config[S]

	// mu guards the loop map; a loop's mu is taken under it. Never held
	// while a loop runs an event.
	mu     lockrank.Mutex
	loops  map[int32]*loop
	closed bool
	wg     sync.WaitGroup
}

// New returns a runtime that leads no partition yet; SetLeaders gives it
// some.
func New[S Shard](cfg Config[S]) *Runtime[S] {
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	rt := &Runtime[S]{cfg: cfg, loops: map[int32]*loop{}}
	rt.mu.SetRank(lockrank.CoordinatorRuntime)
	return rt
}

// SetLeaders loads every partition of lead (partition -> leader epoch) not
// already loaded at that epoch, and unloads the others: those this node no
// longer leads, those led at another epoch, and those whose load failed
// (loaded again).
func (rt *Runtime[S]) SetLeaders(lead map[int32]int32) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed {
		return
	}
	prev := map[int32]*loop{}
	for p, l := range rt.loops {
		if e, ok := lead[p]; !ok || e != l.ctx.epoch || l.failed.Load() {
			l.unload()
			delete(rt.loops, p)
			prev[p] = l
		}
	}
	for p, e := range lead {
		if _, ok := rt.loops[p]; ok {
			continue
		}
		l := rt.newLoop(p, e)
		// The new shard loads only after the old one's Unloaded ran, so a
		// coordinator sees a partition's unload and load in order.
		l.prev = prev[p]
		rt.loops[p] = l
		rt.wg.Add(1)
		go l.run()
	}
}

// Close unloads every partition and waits for the loops to end.
func (rt *Runtime[S]) Close() {
	rt.mu.Lock()
	rt.closed = true
	for p, l := range rt.loops {
		l.unload()
		delete(rt.loops, p)
	}
	rt.mu.Unlock()
	rt.wg.Wait()
}

// Partitions returns the partitions whose state is loaded, for operations
// that span every partition (ListGroups, ListTransactions).
func (rt *Runtime[S]) Partitions() []int32 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]int32, 0, len(rt.loops))
	for p, l := range rt.loops {
		if l.status() == stateActive {
			out = append(out, p)
		}
	}
	return out
}

// Loading reports whether any partition is still loading.
func (rt *Runtime[S]) Loading() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, l := range rt.loops {
		if l.status() == stateLoading {
			return true
		}
	}
	return false
}

// LeaderEpoch returns the leader epoch partition is loaded at (Kafka's
// coordinator epoch), or false if it is not loaded.
func (rt *Runtime[S]) LeaderEpoch(partition int32) (int32, bool) {
	l := rt.loop(partition)
	if l == nil || l.status() != stateActive {
		return -1, false
	}
	return l.ctx.epoch, true
}

func (rt *Runtime[S]) loop(partition int32) *loop {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.loops[partition]
}

// Run runs op on the partition's event loop and returns once every record
// written so far on the partition, op's own included, is committed (the
// high watermark passed it), so that a caller never acts on state that a
// leader change could still take back. Kafka completes write operations
// this way; read operations there read a snapshot at the committed offset,
// which waiting for the commit gives too.
//
// It returns NOT_COORDINATOR when this node does not lead the partition (or
// stops leading it before the records commit), COORDINATOR_LOAD_IN_PROGRESS
// while the partition loads, REQUEST_TIMED_OUT when ctx ends first, and
// otherwise op's own error (at once if op wrote nothing). Values op
// captures may be read after Run returned, whatever it returned: op either
// ran to its end or never runs.
func (rt *Runtime[S]) Run(ctx context.Context, partition int32, op func(S) error) error {
	l := rt.loop(partition)
	if l == nil {
		return kerr.NotCoordinator
	}
	e := &event{done: make(chan error, 1), ran: make(chan struct{})}
	e.op = func() error { return op(l.shard.(S)) }
	if err := l.enqueue(e); err != nil {
		return err
	}
	select {
	case err := <-e.done:
		return err
	case <-ctx.Done():
	}
	if e.state.CompareAndSwap(opPending, opCancelled) {
		return kerr.RequestTimedOut
	}
	<-e.ran
	select {
	case err := <-e.done:
		return err
	default:
		return kerr.RequestTimedOut
	}
}

// Post runs op on the partition's event loop without waiting for it (events
// from outside a request: metadata changes, periodic passes). Errors are
// logged at debug level. It does nothing if the partition is not loaded.
func (rt *Runtime[S]) Post(partition int32, name string, op func(S) error) {
	l := rt.loop(partition)
	if l == nil {
		return
	}
	e := &event{ran: make(chan struct{})}
	e.op = func() error {
		err := op(l.shard.(S))
		if err != nil {
			l.log.Debug("coordinator event failed", zap.String("event", name), zap.Error(err))
		}
		return err
	}
	_ = l.enqueue(e)
}

type loopState uint8

const (
	stateLoading loopState = iota
	stateActive
	stateClosed
)

const (
	opPending int32 = iota
	opRunning
	opCancelled
)

// event is one thing a loop does: an operation (with a caller waiting on
// done, or none), a timer firing, or the unload.
type event struct {
	op    func() error
	state atomic.Int32  // opPending -> opRunning, or -> opCancelled by a caller that gave up
	ran   chan struct{} // closed when op returned (or was skipped)
	done  chan error    // nil when no caller waits

	timerKey string
	timerSeq uint64
	timerFn  func()

	unload bool
}

type deferred struct {
	offset int64
	fn     func(error)
}

type timerEntry struct {
	t   Timer
	seq uint64
}

// loop is one partition's event loop. mu guards the queue and state (a
// leaf); everything else belongs to the loop goroutine.
type loop struct {
	ctx    *Context
	shard  Shard
	writer Writer
	log    *zap.Logger
	name   string
	done   func()

	mu     lockrank.Mutex // a leaf
	state  loopState
	queue  []*event
	signal chan struct{} // one slot: the queue is not empty
	hwWake chan struct{} // one slot: the high watermark may have moved
	failed atomic.Bool   // the load failed; SetLeaders loads it again
	closed chan struct{} // the loop goroutine ended
	prev   *loop         // the partition's previous loop, unloading; waited for before loading

	// Loop goroutine only.
	lastWritten int64
	committed   int64
	deferred    []deferred // ascending offsets
	timers      map[string]timerEntry
	timerSeq    uint64
	cancelWatch func()
}

func (rt *Runtime[S]) newLoop(partition, epoch int32) *loop {
	tp := TopicPartition{Topic: rt.cfg.Topic, Partition: partition}
	l := &loop{
		writer: rt.cfg.Writer,
		log:    rt.cfg.Logger.With(zap.String("coordinator", rt.cfg.Name), zap.Int32("partition", partition), zap.Int32("epoch", epoch)),
		name:   rt.cfg.Name,
		done:   rt.wg.Done,
		signal: make(chan struct{}, 1),
		hwWake: make(chan struct{}, 1),
		closed: make(chan struct{}),
		timers: map[string]timerEntry{},
	}
	l.mu.SetRank(lockrank.CoordinatorLoop)
	l.ctx = &Context{l: l, tp: tp, epoch: epoch, clock: rt.cfg.Clock}
	l.shard = rt.cfg.NewShard(l.ctx)
	return l
}

func (l *loop) status() loopState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

func (l *loop) enqueue(e *event) error {
	l.mu.Lock()
	switch l.state {
	case stateLoading:
		if e.timerFn == nil && !e.unload && e.done != nil {
			l.mu.Unlock()
			return kerr.CoordinatorLoadInProgress
		}
	case stateClosed:
		if !e.unload {
			l.mu.Unlock()
			return kerr.NotCoordinator
		}
	}
	l.queue = append(l.queue, e)
	l.mu.Unlock()
	select {
	case l.signal <- struct{}{}:
	default:
	}
	return nil
}

// unload stops the loop: queued operations and those waiting for a commit
// answer NOT_COORDINATOR.
func (l *loop) unload() {
	l.mu.Lock()
	if l.state == stateClosed {
		l.mu.Unlock()
		return
	}
	l.state = stateClosed
	l.mu.Unlock()
	_ = l.enqueue(&event{unload: true})
}

func (l *loop) wake() {
	select {
	case l.hwWake <- struct{}{}:
	default:
	}
}

func (l *loop) run() {
	defer l.done()
	defer close(l.closed)
	if l.prev != nil {
		<-l.prev.closed
		l.prev = nil
	}
	if !l.load() {
		l.abandon()
		return
	}
	for {
		select {
		case <-l.signal:
		case <-l.hwWake:
		}
		if l.drain() {
			return
		}
		l.checkCommitted()
	}
}

// load replays the partition, then activates it. It reports false if the
// loop must not serve (the load failed, or it was unloaded meanwhile).
func (l *loop) load() bool {
	start := time.Now()
	cancel, err := l.writer.Watch(l.ctx.tp, l.wake)
	if err == nil {
		l.cancelWatch = cancel
		n := 0
		l.lastWritten, err = l.writer.Read(l.ctx.tp, func(r Loaded) error {
			n++
			return l.shard.Replay(r)
		})
		if err == nil {
			l.committed, err = l.writer.HighWatermark(l.ctx.tp)
		}
		if err == nil {
			logf := l.log.Info
			if n == 0 {
				logf = l.log.Debug
			}
			logf("loaded coordinator partition", zap.Int("records", n), zap.Int64("log_end", l.lastWritten),
				zap.Duration("took", time.Since(start)))
		}
	}
	l.mu.Lock()
	if err != nil {
		if l.state != stateClosed {
			l.log.Error("loading coordinator partition failed; retried on the next metadata change", zap.Error(err))
			l.failed.Store(true)
		}
		l.state = stateClosed
		l.mu.Unlock()
		if l.cancelWatch != nil {
			l.cancelWatch()
		}
		return false
	}
	unloaded := l.state == stateClosed
	l.mu.Unlock()
	if unloaded {
		// The unload event is queued; drain runs Unloaded.
		l.shard.Loaded()
		return true
	}
	l.shard.Loaded()
	l.mu.Lock()
	if l.state == stateLoading {
		l.state = stateActive
	}
	l.mu.Unlock()
	return true
}

// drain runs the queued events; it reports true once the loop unloaded.
func (l *loop) drain() bool {
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.mu.Unlock()
			return false
		}
		e := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.mu.Unlock()
		switch {
		case e.unload:
			l.finish()
			return true
		case e.timerFn != nil:
			if t, ok := l.timers[e.timerKey]; ok && t.seq == e.timerSeq {
				delete(l.timers, e.timerKey)
				e.timerFn()
			}
		default:
			l.runOp(e)
		}
		l.checkCommitted()
	}
}

func (l *loop) runOp(e *event) {
	if !e.state.CompareAndSwap(opPending, opRunning) {
		close(e.ran)
		return
	}
	before := l.lastWritten
	err := e.op()
	close(e.ran)
	if e.done == nil {
		return
	}
	if err != nil && l.lastWritten == before {
		e.done <- err
		return
	}
	l.deferAt(l.lastWritten, func(cerr error) {
		if cerr != nil {
			e.done <- cerr
			return
		}
		e.done <- err
	})
}

func (l *loop) deferAt(offset int64, fn func(error)) {
	if offset > l.committed {
		l.refreshCommitted()
	}
	if offset <= l.committed && len(l.deferred) == 0 {
		fn(nil)
		return
	}
	l.deferred = append(l.deferred, deferred{offset: offset, fn: fn})
}

// checkCommitted moves the committed offset to the high watermark and
// completes what waited for it.
func (l *loop) checkCommitted() {
	if len(l.deferred) == 0 {
		return
	}
	l.refreshCommitted()
	n := 0
	for n < len(l.deferred) && l.deferred[n].offset <= l.committed {
		n++
	}
	if n == 0 {
		return
	}
	done := l.deferred[:n]
	l.deferred = l.deferred[n:]
	for _, d := range done {
		d.fn(nil)
	}
}

func (l *loop) refreshCommitted() {
	if hw, err := l.writer.HighWatermark(l.ctx.tp); err == nil && hw > l.committed {
		l.committed = hw
	}
}

// abandon ends a loop whose load failed: whatever was queued answers
// NOT_COORDINATOR, and the shard never serves.
func (l *loop) abandon() {
	l.mu.Lock()
	rest := l.queue
	l.queue = nil
	l.mu.Unlock()
	failQueued(rest)
}

func failQueued(rest []*event) {
	// None of these ran, so no caller waits on ran: a caller that gave up
	// cancelled its event itself.
	for _, e := range rest {
		if e.state.CompareAndSwap(opPending, opCancelled) && e.done != nil {
			e.done <- kerr.NotCoordinator
		}
	}
}

// finish runs on the unload event: the shard learns it is unloaded, and
// everything still waiting answers NOT_COORDINATOR.
func (l *loop) finish() {
	for k, t := range l.timers {
		t.t.Stop()
		delete(l.timers, k)
	}
	if l.cancelWatch != nil {
		l.cancelWatch()
	}
	if !l.failed.Load() {
		l.shard.Unloaded()
	}
	for _, d := range l.deferred {
		d.fn(kerr.NotCoordinator)
	}
	l.deferred = nil
	l.mu.Lock()
	rest := l.queue
	l.queue = nil
	l.mu.Unlock()
	failQueued(rest)
	l.log.Debug("unloaded coordinator partition")
}

// Context is a shard's handle on the runtime. Its methods may be called
// only from the shard's event loop (operations, timers, Replay, Loaded,
// Unloaded), except Partition, LeaderEpoch and Now.
type Context struct {
	l     *loop
	tp    TopicPartition
	epoch int32
	clock Clock
}

// Partition is the partition the shard keeps.
func (c *Context) Partition() int32 { return c.tp.Partition }

// LeaderEpoch is the leader epoch the partition was loaded at (the
// transaction coordinator's coordinator epoch).
func (c *Context) LeaderEpoch() int32 { return c.epoch }

// Now reads the runtime's clock.
func (c *Context) Now() time.Time { return c.clock.Now() }

// NowMs is Now in Unix milliseconds.
func (c *Context) NowMs() int64 { return c.clock.Now().UnixMilli() }

// Logger names the coordinator, partition and epoch.
func (c *Context) Logger() *zap.Logger { return c.l.log }

// Append writes b to the partition. The write is local (it waits for no
// replica); the operation that wrote it completes once it is committed.
// State the records describe should be applied only after Append returned
// nil, so a failed write leaves nothing to revert.
func (c *Context) Append(b Batch) error {
	l := c.l
	if len(b.Records) == 0 && b.Marker == nil {
		return nil
	}
	if b.TimestampMs == 0 {
		b.TimestampMs = c.NowMs()
	}
	next, err := l.writer.Append(c.tp, c.epoch, b)
	if err != nil {
		return err
	}
	if next > l.lastWritten {
		l.lastWritten = next
	}
	return nil
}

// Defer runs fn on the loop once every record appended so far is committed
// (with nil), or when the partition unloads first (with NOT_COORDINATOR).
// Coordinators answer parked requests and start follow-up work (sending
// transaction markers) this way.
func (c *Context) Defer(fn func(err error)) { c.l.deferAt(c.l.lastWritten, fn) }

// LastWritten is the offset after the last record written (or loaded).
func (c *Context) LastWritten() int64 { return c.l.lastWritten }

// Committed is the high watermark the loop last saw.
func (c *Context) Committed() int64 { return c.l.committed }

// Schedule runs fn on the loop after d, replacing any timer with the same
// key (Kafka's CoordinatorTimer.schedule). Timers stop when the partition
// unloads.
func (c *Context) Schedule(key string, d time.Duration, fn func()) {
	l := c.l
	c.Cancel(key)
	l.timerSeq++
	seq := l.timerSeq
	t := c.clock.AfterFunc(d, func() {
		_ = l.enqueue(&event{timerKey: key, timerSeq: seq, timerFn: fn})
	})
	l.timers[key] = timerEntry{t: t, seq: seq}
}

// Cancel stops the timer with key, if any.
func (c *Context) Cancel(key string) {
	if t, ok := c.l.timers[key]; ok {
		t.t.Stop()
		delete(c.l.timers, key)
	}
}

// Scheduled reports whether a timer with key is pending.
func (c *Context) Scheduled(key string) bool {
	_, ok := c.l.timers[key]
	return ok
}
