package raft

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// VoterEndpoint is a voter's CONTROLLER listener address.
type VoterEndpoint struct {
	Host string
	Port int
}

// Peer is where a request goes: a node id (a negative one for a bootstrap
// server) and its host:port on the default controller listener when known
// ("" routes by id through the static voters).
type Peer struct {
	ID   int32
	Addr string
}

// Transport sends one KRaft request to a peer and returns its response.
type Transport interface {
	Send(ctx context.Context, to Peer, req kmsg.Request) (kmsg.Response, error)
}

// Listener receives committed batches in offset order (control batches are
// skipped) and leader changes. Calls to one listener come from one goroutine.
type Listener interface {
	HandleCommit(b Batch)
	HandleLeaderChange(le LeaderAndEpoch)
}

// Config configures a Node.
type Config struct {
	NodeID int32
	// Voters are controller.quorum.voters (static voters, kraft.version 0);
	// empty for a dynamic quorum (controller.quorum.bootstrap.servers).
	Voters map[int32]VoterEndpoint
	// BootstrapServers are controller.quorum.bootstrap.servers: a replica
	// without a leader fetches from one to discover it (default: the voters).
	BootstrapServers []VoterEndpoint
	// ListenerName is the default controller listener,
	// controller.listener.names[0] (default CONTROLLER).
	ListenerName string
	// LocalEndpoints are this node's advertised controller listeners (empty
	// on a broker): what it names as leader and in its voter entry.
	LocalEndpoints []Endpoint
	// CanBecomeVoter: process.roles contains controller.
	CanBecomeVoter bool
	// AutoJoin: controller.quorum.auto.join.enable.
	AutoJoin  bool
	ClusterID string
	// MetadataLogDir holds the partition dir __cluster_metadata-0.
	MetadataLogDir string
	FS             vfs.FS           // default vfs.Default
	Now            func() time.Time // default time.Now
	Rand           *rand.Rand       // default seeded from Now
	// ElectionTimeout: controller.quorum.election.timeout.ms (1s).
	ElectionTimeout time.Duration
	// FetchTimeout: controller.quorum.fetch.timeout.ms (2s).
	FetchTimeout time.Duration
	// RequestTimeout: controller.quorum.request.timeout.ms (2s).
	RequestTimeout time.Duration
	// FetchMaxWait is the long-poll wait of follower fetches (500ms).
	FetchMaxWait time.Duration
	// TickInterval is how often the core's timers are checked (10ms).
	TickInterval time.Duration
	Logger       *zap.Logger
	Transport    Transport // needed with more than one voter
	// ClientOptions are the TLS and SASL of the default transport's
	// connections (the controller listener's security protocol).
	ClientOptions protocol.ClientOptions
	// DirectoryID is the meta.properties directory.id of MetadataLogDir,
	// sent in Fetch (v17 ReplicaDirectoryId) so that a leader describes an
	// observer with it, as KafkaRaftClient does.
	DirectoryID [16]byte
	// Log overrides the metadata log (tests); default: the log in the partition dir.
	Log LogStore
	// Snapshots: triggers, retention and segment settings (snapshot files
	// live in the partition dir). The zero value is DefaultSnapshotConfig.
	Snapshots SnapshotConfig
	// OnFatal is called once, on a goroutine of its own, when the node
	// stops for good on an error: a failed write, flush or truncation of
	// the metadata log or the quorum-state file, an unreadable snapshot, a
	// broken invariant. Kafka's raft IO thread hands any such error to a
	// fatal fault handler that halts the process (KafkaRaftClientDriver,
	// SharedServer's "raft manager" handler, fatal = true); without it the
	// node would go on serving with a dead metadata log.
	OnFatal func(error)
}

// ErrBatchTooLarge is returned by Append for a batch over 8 MiB
// (KafkaRaftClient's MAX_BATCH_SIZE_BYTES).
var ErrBatchTooLarge = errors.New("raft: batch larger than 8 MiB")

// ErrClosed is returned after Close.
var ErrClosed = errors.New("raft: node closed")

// NotLeaderError is ErrNotLeader with a hint of the current leader.
type NotLeaderError struct{ Leader LeaderAndEpoch }

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("raft: not the leader (leader %d, epoch %d)", e.Leader.LeaderID, e.Leader.Epoch)
}

// Unwrap makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// Node runs a Core over the metadata log, the quorum-state file and a Transport.
type Node struct {
	cfg    Config
	log    *zap.Logger
	voters []int32
	qs     quorumStateStore

	// mu guards everything below and serialises the core with its I/O.
	mu       lockrank.Mutex
	cond     *sync.Cond // signalled on HW, leader or closed changes
	core     *Core
	store    LogStore
	snaps    *snapshotFiles // frozen snapshots and a download in progress
	started  bool
	closed   bool
	failed   error
	hw       int64
	le       LeaderAndEpoch
	epochSt  int64 // epoch start offset when leader, else -1
	waiters  map[uint64]chan Message
	nextIn   uint64
	appends  []appendWaiter
	lsn      []*listenerState
	inflight sync.WaitGroup
	ownedTr  *ClientTransport // the default transport, closed by Close
	ctx      context.Context  // cancelled by Close: in-flight requests
	cancel   context.CancelFunc

	// persistence (node_persist.go): the writers' queue and wake-up
	wcond    *sync.Cond
	logq     []Ready    // Readys whose log work is pending, in order
	qsNext   *HardState // the latest HardState not yet taken by its writer
	qsSeq    uint64     // HardStates queued
	qsDone   uint64     // HardStates durable
	held     []heldMsg  // messages waiting for their HardState
	cleanDue bool       // retention to run on the log writer
	writers  sync.WaitGroup

	stop chan struct{}
	done chan struct{}
}

type appendWaiter struct {
	last  int64
	epoch int32
	ch    chan error
}

// NewNode validates cfg and opens nothing yet; Start opens the log.
func NewNode(cfg Config) (*Node, error) {
	if len(cfg.Voters) == 0 && len(cfg.BootstrapServers) == 0 {
		return nil, errors.New("raft: no voters and no bootstrap servers")
	}
	if cfg.ListenerName == "" {
		cfg.ListenerName = "CONTROLLER"
	}
	if len(cfg.LocalEndpoints) == 0 && cfg.CanBecomeVoter {
		if ep, ok := cfg.Voters[cfg.NodeID]; ok {
			cfg.LocalEndpoints = []Endpoint{{Name: cfg.ListenerName, Host: ep.Host, Port: uint16(ep.Port)}}
		}
	}
	if cfg.FS == nil {
		cfg.FS = vfs.Default
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewSource(cfg.Now().UnixNano()))
	}
	if cfg.ElectionTimeout <= 0 {
		cfg.ElectionTimeout = time.Second
	}
	if cfg.FetchTimeout <= 0 {
		cfg.FetchTimeout = 2 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 2 * time.Second
	}
	if cfg.FetchMaxWait <= 0 {
		cfg.FetchMaxWait = 500 * time.Millisecond
	}
	if cfg.TickInterval <= 0 {
		cfg.TickInterval = 10 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Snapshots == (SnapshotConfig{}) {
		cfg.Snapshots = DefaultSnapshotConfig()
	}
	if cfg.MetadataLogDir == "" && cfg.Log == nil {
		return nil, errors.New("raft: no MetadataLogDir")
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With(zap.String("topic", "__cluster_metadata"), zap.Int32("partition", 0)),
		waiters: map[uint64]chan Message{}, hw: -1, epochSt: -1,
		le: LeaderAndEpoch{LeaderID: NoLeader}, stop: make(chan struct{}), done: make(chan struct{})}
	for id := range cfg.Voters {
		n.voters = append(n.voters, id)
	}
	slices.Sort(n.voters)
	if cfg.Transport == nil {
		n.ownedTr = NewClientTransportOptions(cfg.Voters, fmt.Sprintf("raft-client-%d", cfg.NodeID), cfg.Logger, cfg.ClientOptions)
		n.cfg.Transport = n.ownedTr
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.qs = quorumStateStore{fs: cfg.FS, path: partitionDir(cfg.MetadataLogDir) + "/" + QuorumStateFile, voters: n.voters}
	if len(cfg.BootstrapServers) == 0 {
		for _, id := range n.voters {
			n.cfg.BootstrapServers = append(n.cfg.BootstrapServers, cfg.Voters[id])
		}
	}
	n.mu.SetRank(lockrank.RaftNode)
	n.cond = sync.NewCond(&n.mu)
	n.wcond = sync.NewCond(&n.mu)
	return n, nil
}

func (n *Node) nowMs() int64 { return n.cfg.Now().UnixMilli() }

// Start opens the log and the quorum state, starts the core (a sole voter
// elects itself here) and the timer loop.
func (n *Node) Start() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started {
		return errors.New("raft: already started")
	}
	store := n.cfg.Log
	if store == nil {
		if err := vfs.MkdirAllSync(n.cfg.FS, partitionDir(n.cfg.MetadataLogDir), 0o755); err != nil {
			return err
		}
		sl, err := openStorageLog(n.cfg.FS, partitionDir(n.cfg.MetadataLogDir), n.cfg.Snapshots.SegmentBytes, n.cfg.Snapshots.SegmentMs, n.cfg.Now, n.cfg.Logger)
		if err != nil {
			return err
		}
		store = sl
	}
	hs, _, err := n.qs.read()
	if err != nil {
		return err
	}
	snaps, err := n.openSnapshots(store)
	if err != nil {
		return err
	}
	epochs, err := scanEpochs(store)
	if err != nil {
		return err
	}
	ctl, err := n.loadControlRecords(store, snaps)
	if err != nil {
		return err
	}
	var boot []Endpoint
	for _, b := range n.cfg.BootstrapServers {
		boot = append(boot, Endpoint{Name: n.cfg.ListenerName, Host: b.Host, Port: uint16(b.Port)})
	}
	core, err := NewCore(CoreConfig{
		ID: n.cfg.NodeID, DirectoryID: n.cfg.DirectoryID,
		StaticVoters: StaticVoterSet(n.cfg.ListenerName, n.cfg.Voters), ListenerName: n.cfg.ListenerName,
		LocalEndpoints: n.cfg.LocalEndpoints, KRaftMin: 0, KRaftMax: MaxKRaftVersion,
		CanBecomeVoter: n.cfg.CanBecomeVoter, AutoJoin: n.cfg.AutoJoin, Bootstrap: boot, Control: ctl,
		ElectionTimeoutMs:     n.cfg.ElectionTimeout.Milliseconds(),
		FetchTimeoutMs:        n.cfg.FetchTimeout.Milliseconds(),
		RequestTimeoutMs:      n.cfg.RequestTimeout.Milliseconds(),
		FetchMaxWaitMs:        n.cfg.FetchMaxWait.Milliseconds(),
		FetchSnapshotMaxBytes: n.cfg.Snapshots.FetchSnapshotMaxBytes,
		Rand:                  n.cfg.Rand,
		State:                 hs, LogStart: store.LogStartOffset(), LogEnd: store.LogEndOffset(), Epochs: epochs,
		Snapshots: snaps.ids, NowMs: n.nowMs(),
	})
	if err != nil {
		return err
	}
	n.store, n.snaps, n.core, n.started = store, snaps, core, true
	n.log.Info("raft starting", zap.Int32("node", n.cfg.NodeID), zap.Int32("epoch", hs.LeaderEpoch),
		zap.Int64("logStartOffset", store.LogStartOffset()), zap.Int64("logEndOffset", store.LogEndOffset()),
		zap.Int("snapshots", len(snaps.ids)), zap.Int16("kraftVersion", core.KRaftVersion()),
		zap.Stringer("voters", core.Voters()))
	n.writers.Add(2)
	go n.runLogWriter()
	go n.runQuorumStateWriter()
	if err := n.processReadyLocked(); err != nil {
		n.failed = err
		n.wcond.Broadcast()
		return err
	}
	go n.run()
	return nil
}

func (n *Node) run() {
	defer close(n.done)
	t := time.NewTicker(n.cfg.TickInterval)
	defer t.Stop()
	// timer: the core's next election timer (Core.NextTimerMs), so that it
	// fires on time rather than up to a tick late
	timer := time.NewTimer(n.cfg.TickInterval)
	defer timer.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		case <-timer.C:
		}
		next := int64(-1)
		n.mu.Lock()
		if !n.closed && n.failed == nil {
			n.fail(n.core.Tick(n.nowMs()))
			n.fail(n.processReadyLocked())
			if len(n.snaps.ids) > 1 && !n.cleanDue {
				n.cleanDue = true
				n.wcond.Broadcast()
			}
			next = n.core.NextTimerMs()
		}
		now := n.nowMs()
		n.mu.Unlock()
		d := n.cfg.TickInterval
		if next >= now {
			d = time.Duration(next-now)*time.Millisecond + 100*time.Microsecond
		}
		timer.Stop()
		select {
		case <-timer.C:
		default:
		}
		timer.Reset(d)
	}
}

// fail records a fatal error (I/O, invariant); n.mu must be held.
func (n *Node) fail(err error) {
	if err == nil || n.failed != nil {
		return
	}
	n.failed = err
	n.log.Error("raft failed", zap.Error(err))
	if n.cfg.OnFatal != nil {
		// Not under n.mu: the callback may call back into the node.
		go n.cfg.OnFatal(err)
	}
	for _, a := range n.appends {
		a.ch <- err
	}
	n.appends = nil
	n.cond.Broadcast()
	n.wcond.Broadcast()
}

// processReadyLocked takes the core's Readys: their disk work goes to the
// writers (node_persist.go), their messages out (or held until the
// quorum-state is durable), then the high watermark, leader and waiters
// are updated. n.mu must be held; no disk write or sync happens under it.
func (n *Node) processReadyLocked() error {
	for n.core.HasReady() {
		rd := n.core.Ready()
		if err := n.queueReadyLocked(rd); err != nil {
			return err
		}
		if rd.LeaderChange != nil {
			n.le = *rd.LeaderChange
			n.log.Info("raft leader change", zap.Int32("leader", n.le.LeaderID), zap.Int32("epoch", n.le.Epoch))
			n.cond.Broadcast()
		}
		st := n.core.Status()
		n.epochSt = st.EpochStartOffset
		// Listeners read the log up to it: never past what is written.
		if hw := n.core.ReadableHighWatermark(); hw > n.hw {
			n.hw = hw
			n.cond.Broadcast()
		}
		n.resolveAppendsLocked()
	}
	return nil
}

func (n *Node) resolveAppendsLocked() {
	kept := n.appends[:0]
	for _, a := range n.appends {
		switch {
		case n.hw > a.last:
			a.ch <- nil
		case n.le.Epoch != a.epoch || n.le.LeaderID != n.cfg.NodeID:
			a.ch <- &NotLeaderError{Leader: n.le}
		default:
			kept = append(kept, a)
		}
	}
	n.appends = kept
}

// dispatchLocked delivers one outgoing message: responses to local waiters
// (HandleRequest), requests to the transport. n.mu must be held.
// A Fetch response's records are read by its waiter, without n.mu
// (fillFetchRecords): the log's lock may be held by the log writer.
func (n *Node) dispatchLocked(m Message) error {
	if m.Type == MsgFetchSnapshotResp && m.SnapshotID != nil && m.ReadFrom >= 0 && m.ReadTo > m.ReadFrom {
		b, err := n.snaps.readAt(*m.SnapshotID, m.ReadFrom, int(m.ReadTo-m.ReadFrom))
		if err != nil {
			return err
		}
		m.Data = b
	}
	if m.Type.IsResponse() {
		if ch, ok := n.waiters[m.ID]; ok {
			delete(n.waiters, m.ID)
			ch <- m
		}
		return nil
	}
	req := n.toKmsgRequest(m)
	n.inflight.Add(1)
	go func() {
		defer n.inflight.Done()
		ctx, cancel := context.WithTimeout(n.ctx, n.cfg.RequestTimeout+n.cfg.FetchMaxWait)
		defer cancel()
		resp, err := n.cfg.Transport.Send(ctx, Peer{ID: m.To, Addr: m.ToAddr}, req)
		if err != nil {
			n.log.Debug("raft request failed", zap.Stringer("type", m.Type), zap.Int32("to", m.To), zap.Error(err))
			n.mu.Lock()
			if !n.closed && n.failed == nil {
				n.fail(n.core.RequestFailed(m))
				n.fail(n.processReadyLocked())
			}
			n.mu.Unlock()
			return
		}
		in, err := n.fromKmsgResponse(m, resp)
		if err != nil {
			n.log.Warn("raft bad response", zap.Stringer("type", m.Type), zap.Int32("from", m.To), zap.Error(err))
			return
		}
		n.stepLocked(in)
	}()
	return nil
}

const maxFetchBytes = 8 << 20

// stepLocked takes n.mu and feeds m to the core.
func (n *Node) stepLocked(m Message) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.failed != nil {
		return
	}
	n.fail(n.core.Step(m))
	n.fail(n.processReadyLocked())
}

// Append appends records as one batch of the leader's epoch and waits until
// it is committed (the high watermark passed it). It returns the batch's last
// offset. A NotLeaderError (errors.Is ErrNotLeader) names the current leader;
// when leadership is lost before commit the batch may still commit later.
func (n *Node) Append(ctx context.Context, records [][]byte) (int64, error) {
	size := batchHeaderSize
	for _, r := range records {
		size += len(r) + 32 // record framing, generously
	}
	if size > maxBatchBytes {
		return -1, ErrBatchTooLarge
	}
	n.mu.Lock()
	if err := n.usableLocked(); err != nil {
		n.mu.Unlock()
		return -1, err
	}
	n.fail(n.core.Tick(n.nowMs())) // the batch's append time is now
	_, last, err := n.core.Propose(records)
	if errors.Is(err, ErrNotLeader) {
		le := n.core.LeaderAndEpoch()
		n.mu.Unlock()
		return -1, &NotLeaderError{Leader: le}
	}
	if err != nil {
		n.mu.Unlock()
		return -1, err
	}
	ch := make(chan error, 1)
	n.appends = append(n.appends, appendWaiter{last: last, epoch: n.core.Epoch(), ch: ch})
	n.fail(n.processReadyLocked())
	n.mu.Unlock()
	select {
	case err := <-ch:
		if err != nil {
			return -1, err
		}
		return last, nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

func (n *Node) usableLocked() error {
	switch {
	case n.closed:
		return ErrClosed
	case n.failed != nil:
		return n.failed
	case !n.started:
		return errors.New("raft: not started")
	}
	return nil
}

// LeaderAndEpoch returns the current leader (-1 unknown) and epoch.
func (n *Node) LeaderAndEpoch() LeaderAndEpoch {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.core == nil {
		return LeaderAndEpoch{LeaderID: NoLeader}
	}
	return n.core.LeaderAndEpoch()
}

// HighWatermark returns the high watermark (-1 unknown).
func (n *Node) HighWatermark() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hw
}

// Status returns the core's status (role, epoch, offsets, replicas when leader).
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.core == nil {
		return Status{ID: n.cfg.NodeID, LeaderID: NoLeader, VotedID: NoLeader, HighWatermark: -1}
	}
	return n.core.Status()
}

// Close resigns leadership (EndQuorumEpoch, best effort), stops the timers and
// listeners and closes the log.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	if n.started && n.failed == nil {
		n.fail(n.core.Resign())
		n.fail(n.processReadyLocked())
	}
	n.closed = true
	for _, a := range n.appends {
		a.ch <- ErrClosed
	}
	n.appends = nil
	for id, ch := range n.waiters {
		delete(n.waiters, id)
		close(ch)
	}
	n.cond.Broadcast()
	n.wcond.Broadcast()
	started := n.started
	n.mu.Unlock()
	if !started {
		return nil
	}
	close(n.stop)
	<-n.done
	n.writers.Wait() // what is queued is written and flushed
	// let the EndQuorumEpoch requests go out before cutting connections
	waitTimeout(&n.inflight, 100*time.Millisecond)
	n.cancel()
	n.inflight.Wait()
	if n.ownedTr != nil {
		n.ownedTr.Close()
	}
	for _, l := range n.listeners() {
		<-l.done
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.snaps.abortPart()
	return n.store.Close()
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
	}
}

// Voters returns the latest voter set (of the log, else the static voters).
func (n *Node) Voters() VoterSet {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.core == nil {
		return StaticVoterSet(n.cfg.ListenerName, n.cfg.Voters)
	}
	return n.core.Voters()
}

// KRaftVersion returns the latest kraft.version of the log.
func (n *Node) KRaftVersion() int16 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.core == nil {
		return 0
	}
	return n.core.KRaftVersion()
}

// LeaderEndpoint returns the host:port of the current leader on the
// default controller listener (false: no leader or unknown address).
func (n *Node) LeaderEndpoint() (int32, string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.core == nil {
		return NoLeader, "", false
	}
	le := n.core.LeaderAndEpoch()
	if le.LeaderID < 0 {
		return NoLeader, "", false
	}
	st := n.core.Status()
	if e, ok := n.leaderEndpoint(st.LeaderEndpoints); ok {
		return le.LeaderID, e.Addr(), true
	}
	if ep, ok := n.cfg.Voters[le.LeaderID]; ok {
		return le.LeaderID, net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), true
	}
	return NoLeader, "", false
}

// UpgradeKRaftVersion upgrades kraft.version on the leader of epoch (see
// Core.UpgradeKRaftVersion); an *UpgradeError says why not. It returns
// once the upgrade is appended, not committed.
func (n *Node) UpgradeKRaftVersion(epoch int32, version int16, validateOnly bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.usableLocked(); err != nil {
		return err
	}
	n.fail(n.core.Tick(n.nowMs()))
	err := n.core.UpgradeKRaftVersion(epoch, version, validateOnly)
	var ue *UpgradeError
	if err != nil && !errors.As(err, &ue) {
		n.fail(err)
	}
	n.fail(n.processReadyLocked())
	return err
}
