package replication

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/storage"
)

// ReplicationConfig configures replication between brokers: the replica
// fetchers of the follower side, ISR changes on the leader side and the
// high watermark checkpoint.
type ReplicationConfig struct {
	// ListenerName is inter.broker.listener.name: the fetchers connect to
	// the leaders' endpoints of that name in the metadata image.
	ListenerName string
	// Dial opens a connection to a leader; nil dials ListenerName.
	Dial DialLeader
	// ClientOptions are the TLS and SASL of ListenerName's security
	// protocol (the ClientID is set here).
	ClientOptions protocol.ClientOptions

	NumFetchers           int           // num.replica.fetchers
	FetchMaxBytes         int32         // replica.fetch.max.bytes (per partition)
	FetchResponseMaxBytes int32         // replica.fetch.response.max.bytes
	FetchWaitMax          time.Duration // replica.fetch.wait.max.ms
	FetchMinBytes         int32         // replica.fetch.min.bytes
	FetchBackoff          time.Duration // replica.fetch.backoff.ms
	// LagTimeMax is replica.lag.time.max.ms: a follower not caught up for
	// that long leaves the ISR.
	LagTimeMax time.Duration
	// HWCheckpointInterval is replica.high.watermark.checkpoint.interval.ms.
	HWCheckpointInterval time.Duration
}

// BrokerSettings is the part of a broker config (*config.Config) that
// ReplicationConfigFrom reads; an interface so that replication does not
// import config.
type BrokerSettings interface {
	Int(name string) int32
	Long(name string) int64
}

// ReplicationConfigFrom reads the replica.* settings of a broker config;
// listener is its inter.broker.listener.name.
func ReplicationConfigFrom(listener string, cfg BrokerSettings) ReplicationConfig {
	return ReplicationConfig{
		ListenerName:          listener,
		NumFetchers:           int(cfg.Int("num.replica.fetchers")),
		FetchMaxBytes:         int32(cfg.Int("replica.fetch.max.bytes")),
		FetchResponseMaxBytes: int32(cfg.Int("replica.fetch.response.max.bytes")),
		FetchWaitMax:          time.Duration(cfg.Int("replica.fetch.wait.max.ms")) * time.Millisecond,
		FetchMinBytes:         int32(cfg.Int("replica.fetch.min.bytes")),
		FetchBackoff:          time.Duration(cfg.Int("replica.fetch.backoff.ms")) * time.Millisecond,
		LagTimeMax:            time.Duration(cfg.Long("replica.lag.time.max.ms")) * time.Millisecond,
		HWCheckpointInterval:  time.Duration(cfg.Long("replica.high.watermark.checkpoint.interval.ms")) * time.Millisecond,
	}
}

func (c *ReplicationConfig) setDefaults() {
	if c.NumFetchers <= 0 {
		c.NumFetchers = 1
	}
	if c.FetchMaxBytes <= 0 {
		c.FetchMaxBytes = 1 << 20
	}
	if c.FetchResponseMaxBytes <= 0 {
		c.FetchResponseMaxBytes = 10 << 20
	}
	if c.FetchWaitMax <= 0 {
		c.FetchWaitMax = 500 * time.Millisecond
	}
	if c.FetchMinBytes <= 0 {
		c.FetchMinBytes = 1
	}
	if c.FetchBackoff <= 0 {
		c.FetchBackoff = time.Second
	}
	if c.LagTimeMax <= 0 {
		c.LagTimeMax = 30 * time.Second
	}
	if c.HWCheckpointInterval <= 0 {
		c.HWCheckpointInterval = 5 * time.Second
	}
	if c.ListenerName == "" {
		c.ListenerName = "PLAINTEXT"
	}
}

// replicator is the replication machinery of a ReplicaManager once
// StartReplication was called.
type replicator struct {
	cfg      ReplicationConfig
	fetchers *fetcherManager
	alter    *alterPartitionManager
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
}

// StartReplication starts replication between brokers: replica fetchers
// for the partitions this node follows (now and as images arrive), the ISR
// expiration and AlterPartition sender for the partitions it leads, and the
// periodic replication-offset-checkpoint. Close stops it (writing the
// checkpoint a last time). Call it at most once, after the BrokerEpoch and
// Controller of Config are usable.
func (rm *ReplicaManager) StartReplication(cfg ReplicationConfig) {
	cfg.setDefaults()
	if cfg.Dial == nil {
		cfg.Dial = rm.dialListener(cfg.ListenerName, cfg.ClientOptions)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replicator{cfg: cfg, cancel: cancel}
	r.fetchers = &fetcherManager{rm: rm, cfg: &r.cfg, fetchers: map[fetcherKey]*replicaFetcher{},
		assigned: map[storage.TopicPartition]assignment{}}
	r.fetchers.mu.SetRank(lockrank.Fetchers)
	r.alter = newAlterPartitionManager(rm, cfg.FetchBackoff)
	rm.isr.lag.Store(int64(cfg.LagTimeMax))
	rm.repl.Store(r)
	select {
	case <-rm.closed:
		rm.repl.Store(nil)
		cancel()
		return
	default:
	}
	r.wg.Add(3)
	go func() { defer r.wg.Done(); r.alter.run(ctx) }()
	go func() { defer r.wg.Done(); rm.isrExpirationLoop(ctx, cfg.LagTimeMax) }()
	go func() { defer r.wg.Done(); rm.hwCheckpointLoop(ctx, cfg.HWCheckpointInterval) }()
	// Partitions applied before we started.
	rm.mu.RLock()
	parts := make([]*Partition, 0, len(rm.partitions))
	for _, p := range rm.partitions {
		parts = append(parts, p)
	}
	rm.mu.RUnlock()
	r.fetchers.sync(parts, nil)
}

// stopReplication stops the fetchers and background loops and writes the
// high watermark checkpoint; called by Close.
func (rm *ReplicaManager) stopReplication() {
	r := rm.repl.Load()
	if r == nil {
		return
	}
	r.stopOnce.Do(func() {
		r.cancel()
		r.fetchers.close()
		r.wg.Wait()
		if err := rm.CheckpointHighWatermarks(); err != nil {
			rm.logger.Error("writing the high watermark checkpoint failed", zap.Error(err))
		}
	})
}

// replicationOnImage is OnImage's hook, run after rm.mu is released:
// partitions whose leadership changed start or stop being fetched.
func (rm *ReplicaManager) replicationOnImage(changed, removed []*Partition) {
	if r := rm.repl.Load(); r != nil {
		r.fetchers.sync(changed, removed)
	}
}

// dialListener dials a broker's endpoint named listener in the current image.
func (rm *ReplicaManager) dialListener(listener string, opts protocol.ClientOptions) DialLeader {
	return func(ctx context.Context, broker int32) (LeaderConn, error) {
		b := rm.Image().Broker(broker)
		if b == nil {
			return nil, fmt.Errorf("replication: broker %d is not registered", broker)
		}
		ep, ok := b.Listener(listener)
		if !ok {
			return nil, fmt.Errorf("replication: broker %d has no %s listener", broker, listener)
		}
		addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		opts.ClientID, opts.Logger = "broker-"+strconv.Itoa(int(rm.cfg.NodeID))+"-fetcher", rm.logger
		return protocol.DialOptions(dctx, addr, opts)
	}
}

// fetcherKey names a fetcher: Kafka's BrokerIdAndFetcherId.
type fetcherKey struct {
	leader int32
	id     int
}

// assignment is where a followed partition is fetched from.
type assignment struct {
	key         fetcherKey
	p           *Partition
	leaderEpoch int32
}

// fetcherManager is Kafka's ReplicaFetcherManager: it assigns followed
// partitions to fetchers, starting one per (leader, fetcher id) on demand
// and stopping those left idle.
//
// Lock order: fetcherManager.mu → Partition.mu (to read the partition's
// leadership) and → replicaFetcher.mu. Fetcher goroutines never take mu.
type fetcherManager struct {
	rm  *ReplicaManager
	cfg *ReplicationConfig

	mu lockrank.Mutex
	// Guarded by mu.
	fetchers map[fetcherKey]*replicaFetcher
	assigned map[storage.TopicPartition]assignment
	closed   bool

	stopping sync.WaitGroup // idle fetchers being stopped
}

// fetcherID is AbstractFetcherManager.getFetcherId.
func (m *fetcherManager) fetcherID(tp storage.TopicPartition) int {
	h := fnv.New32a()
	h.Write([]byte(tp.Topic))
	v := int64(h.Sum32())*31 + int64(tp.Partition)
	if v < 0 {
		v = -v
	}
	return int(v % int64(m.cfg.NumFetchers))
}

// sync brings the fetchers in line with the partitions' current state:
// followers with a live leader are fetched from it (a new leader or leader
// epoch restarts the partition at its log end, after the KIP-101 fallback
// truncation for logs without leader epochs); leaders and removed
// partitions are not fetched. It reads each partition's state under m.mu,
// so concurrent calls leave the latest state in place.
func (m *fetcherManager) sync(changed, removed []*Partition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	gone := map[*Partition]bool{}
	for _, p := range removed {
		gone[p] = true
		if a, ok := m.assigned[p.tp]; ok && a.p == p {
			m.unassignLocked(p.tp)
		}
	}
	for _, p := range changed {
		if gone[p] {
			continue // a recreated topic's new Partition may hold the name
		}
		p.mu.RLock()
		// A log in a failed log dir is not followed (KIP-112: its
		// partition is offline on this broker until it restarts).
		follow := !p.isLeader && p.log != nil && !p.log.Offline() && p.leader >= 0
		leader, epoch := p.leader, p.leaderEpoch
		p.mu.RUnlock()
		a, ok := m.assigned[p.tp]
		if !follow {
			if ok {
				m.unassignLocked(p.tp)
			}
			continue
		}
		key := fetcherKey{leader: leader, id: m.fetcherID(p.tp)}
		if ok && a.p == p && a.key == key && a.leaderEpoch == epoch {
			continue // the ISR or config changed, not the leadership
		}
		if ok {
			m.unassignLocked(p.tp)
		}
		s, err := m.rm.initialFetchState(p, epoch)
		if err != nil {
			m.rm.logger.Error("preparing to follow failed", zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition), zap.Error(err))
			continue
		}
		if s == nil {
			continue // leadership changed again meanwhile; a later sync handles it
		}
		f, ok := m.fetchers[key]
		if !ok {
			f = newReplicaFetcher(m.rm, m.cfg, key.leader, key.id)
			m.fetchers[key] = f
			f.start()
		}
		m.rm.logger.Info("following", zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition),
			zap.Int32("leader", leader), zap.Int32("leaderEpoch", epoch), zap.Int64("fetchOffset", s.fetchOffset),
			zap.Int32("lastFetchedEpoch", s.lastFetchedEpoch))
		f.add(s)
		m.assigned[p.tp] = assignment{key: key, p: p, leaderEpoch: epoch}
	}
}

// unassignLocked stops fetching tp and shuts its fetcher down when idle
// (shutdownIdleFetcherThreads). m.mu must be held.
func (m *fetcherManager) unassignLocked(tp storage.TopicPartition) {
	a := m.assigned[tp]
	delete(m.assigned, tp)
	f, ok := m.fetchers[a.key]
	if !ok {
		return
	}
	if f.remove(tp) {
		delete(m.fetchers, a.key)
		m.stopping.Add(1)
		go func() { // not under m.mu: the fetcher may be inside a request
			defer m.stopping.Done()
			f.stop()
		}()
	}
}

// resize is AbstractFetcherManager.resizeFetcherThreadPool (KIP-226:
// num.replica.fetchers changed dynamically): every fetcher stops, and each
// followed partition moves with its current fetch state (offset, epochs,
// truncation state) to the fetcher its id names under the new count, so
// nothing is fetched twice or truncated again. m.mu is held throughout,
// so no sync interleaves; fetcher goroutines never take it.
func (m *fetcherManager) resize(n int) {
	if n <= 0 {
		n = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || n == m.cfg.NumFetchers {
		return
	}
	old := m.fetchers
	for _, f := range old {
		f.stop()
	}
	m.cfg.NumFetchers = n
	m.fetchers = map[fetcherKey]*replicaFetcher{}
	for tp, a := range m.assigned {
		f, ok := old[a.key]
		if !ok {
			delete(m.assigned, tp)
			continue
		}
		f.mu.Lock()
		s, ok := f.parts[tp]
		var cp fetchState
		if ok {
			cp = *s
		}
		f.mu.Unlock()
		if !ok {
			delete(m.assigned, tp)
			continue
		}
		key := fetcherKey{leader: a.key.leader, id: m.fetcherID(tp)}
		nf, ok := m.fetchers[key]
		if !ok {
			nf = newReplicaFetcher(m.rm, m.cfg, key.leader, key.id)
			m.fetchers[key] = nf
			nf.start()
		}
		nf.add(&cp)
		a.key = key
		m.assigned[tp] = a
	}
	m.rm.logger.Info("resized the replica fetcher pool", zap.Int("numReplicaFetchers", n), zap.Int("fetchers", len(m.fetchers)))
}

// fetcherFor returns the fetcher a partition is assigned to (tests).
func (m *fetcherManager) fetcherFor(tp storage.TopicPartition) (*replicaFetcher, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.assigned[tp]
	if !ok {
		return nil, false
	}
	f, ok := m.fetchers[a.key]
	return f, ok
}

func (m *fetcherManager) numFetchers() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.fetchers)
}

func (m *fetcherManager) close() {
	m.mu.Lock()
	m.closed = true
	fs := make([]*replicaFetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	m.fetchers = map[fetcherKey]*replicaFetcher{}
	m.assigned = map[storage.TopicPartition]assignment{}
	m.mu.Unlock()
	for _, f := range fs {
		f.stop()
	}
	m.stopping.Wait()
}

// initialFetchState is where a new follower starts (makeFollower and
// initialFetchState): at its log end offset with its latest leader epoch as
// the last fetched epoch, so the leader's diverging-epoch answer drives any
// truncation (KIP-320). A log without leader epochs (nothing to compare)
// is first truncated to its high watermark (the KIP-101 fallback). nil
// when p no longer follows with that epoch.
func (rm *ReplicaManager) initialFetchState(p *Partition, epoch int32) (*fetchState, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.isLeader || p.log == nil || p.leaderEpoch != epoch {
		return nil, nil
	}
	l := p.log
	last, ok := l.LatestEpoch()
	if !ok {
		last = -1
		if hw := p.hw.Load(); hw < l.LogEndOffset() {
			if err := rm.truncateFollower(p, hw); err != nil {
				return nil, err
			}
		}
	}
	return &fetchState{tp: p.tp, topicID: p.topicID, p: p, leaderEpoch: epoch, fetchOffset: l.LogEndOffset(),
		lastFetchedEpoch: last, lag: -1}, nil
}

// SetNumReplicaFetchers resizes the replica fetcher pool to n fetchers per
// leader (num.replica.fetchers changed dynamically, KIP-226); no-op before
// StartReplication.
func (rm *ReplicaManager) SetNumReplicaFetchers(n int) {
	if r := rm.repl.Load(); r != nil {
		r.fetchers.resize(n)
	}
}

// NumReplicaFetchers is the num.replica.fetchers the fetcher pool uses
// now, and the fetchers running (0, 0 before StartReplication).
func (rm *ReplicaManager) NumReplicaFetchers() (configured, running int) {
	r := rm.repl.Load()
	if r == nil {
		return 0, 0
	}
	r.fetchers.mu.Lock()
	defer r.fetchers.mu.Unlock()
	return r.cfg.NumFetchers, len(r.fetchers.fetchers)
}
