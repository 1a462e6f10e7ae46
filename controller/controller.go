package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// Raft is the part of *raft.Node the controller uses.
type Raft interface {
	// Append appends records as one atomic batch and returns the offset of
	// the last one once it is committed; raft.ErrNotLeader if this node does
	// not lead.
	Append(ctx context.Context, records [][]byte) (lastOffset int64, err error)
	// Register adds a listener for committed batches and leader changes.
	Register(l raft.Listener)
	LeaderAndEpoch() raft.LeaderAndEpoch
	// HandleRequest answers raft RPCs, DescribeQuorum among them.
	HandleRequest(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

var _ Raft = (*raft.Node)(nil)

// TopicConfigEntry is one entry of a CreateTopics response's Configs.
type TopicConfigEntry struct {
	Name        string
	Value       *string
	ReadOnly    bool
	Source      int8 // DescribeConfigs ConfigSource: 1 DYNAMIC_TOPIC_CONFIG, 4 STATIC_BROKER_CONFIG, 5 DEFAULT_CONFIG, ...
	IsSensitive bool
}

// Config configures a Controller.
type Config struct {
	// NodeID is node.id.
	NodeID int32
	// ClusterID, when set, must match BrokerRegistration's ClusterId.
	ClusterID string
	Raft      Raft
	// Now is the clock (time.Now when nil).
	Now    func() time.Time
	Logger *zap.Logger

	// NumPartitions is num.partitions (1 when zero).
	NumPartitions int32
	// DefaultReplicationFactor is default.replication.factor (1 when zero).
	DefaultReplicationFactor int16
	// SessionTimeout is broker.session.timeout.ms (9s when zero).
	SessionTimeout time.Duration
	// MaxIdleInterval is metadata.max.idle.interval.ms, the NoOpRecord period
	// (500ms when zero; negative disables NoOpRecords).
	MaxIdleInterval time.Duration
	// DeleteTopicDisable is delete.topic.enable=false.
	DeleteTopicDisable bool
	// UncleanLeaderElectionEnable is the static unclean.leader.election.enable.
	UncleanLeaderElectionEnable bool
	// LeaderImbalanceCheckInterval is leader.imbalance.check.interval.seconds
	// when auto.leader.rebalance.enable is true: the period of the
	// preferred leader elections (periodic_elections.go). Zero disables
	// them.
	LeaderImbalanceCheckInterval time.Duration
	// UncleanLeaderElectionInterval is unclean.leader.election.interval.ms,
	// the period of the unclean elections of leaderless partitions (5
	// minutes when zero; negative disables them).
	UncleanLeaderElectionInterval time.Duration
	// MinInsyncReplicas is the static min.insync.replicas (1 when zero): a
	// topic's effective min ISR when no dynamic config sets it, which the
	// ELR rules (KIP-966) compare the ISR with, and the cluster-level config
	// the controller writes when ELR is enabled.
	MinInsyncReplicas int

	// ValidateTopicConfig checks one topic config (name, value); its error
	// text becomes the INVALID_CONFIG message. Nil accepts everything.
	ValidateTopicConfig func(name, value string) error
	// ValidateBrokerConfig checks one broker config; nil accepts everything.
	ValidateBrokerConfig func(name, value string) error
	// ValidateGroupConfigs checks a GROUP resource's configs after a change
	// (GroupConfig.validate against the broker's group.* bounds); its error
	// text becomes the INVALID_CONFIG message. Nil accepts everything.
	ValidateGroupConfigs func(configs map[string]string) error
	// TopicConfigs returns the effective configs of a topic with the given
	// overrides (CreateTopics v5+ Configs). Nil: only the overrides, as
	// DYNAMIC_TOPIC_CONFIG.
	TopicConfigs func(overrides map[string]string) []TopicConfigEntry
	// ListConfig reports whether a config is a LIST (for APPEND/SUBTRACT)
	// and its default; nil: no config is a list.
	ListConfig func(resourceType int8, name string) (isList bool, defaultValue *string)

	// BootstrapFeatures are written as FeatureLevelRecords on an empty log.
	// When nil, they are read from the bootstrap files in MetadataLogDir
	// (the zero checkpoint or bootstrap.checkpoint kafka-storage.sh format
	// and kgo-broker format write; bootstrap.go), else
	// DefaultBootstrapFeatures. metadata.version must be among them, and
	// every level must be one this node supports (SupportedFeatures).
	BootstrapFeatures []Feature
	// MetadataLogDir is metadata.log.dir, where the bootstrap files are.
	MetadataLogDir string

	// QuorumNodeIDs returns the ids of the controller quorum's voters
	// (QuorumFeatures.quorumNodeIds): UpdateFeatures refuses a change while
	// one of them has not registered (ControllerRegistration). Nil: only
	// the registered controllers are checked.
	QuorumNodeIDs func() []int32

	// Rand drives replica placement (random when nil); topic ids always come
	// from crypto/rand. For tests.
	Rand *rand.Rand
}

// Controller is the active KRaft controller (see the package doc).
type Controller struct {
	cfg Config
	log *zap.Logger

	// mu serializes decisions. It is held from reading the state through the
	// raft append until the appended batch is replayed. Lock order: mu, then
	// stateMu.
	mu struct {
		lockrank.Mutex
		rnd *rand.Rand
		// activeEpoch is the raft epoch this controller activated in (-1: not active).
		activeEpoch int32
		// nextWriteOffset is the offset the next appended batch starts at.
		nextWriteOffset int64
		// sessions are the heartbeat sessions of registered brokers.
		sessions map[int32]*session
	}

	// stateMu guards the replayed state. HandleCommit takes only stateMu.
	stateMu   lockrank.Mutex
	st        *state
	appliedCh chan struct{} // closed and replaced after each replayed batch
	leader    raft.LeaderAndEpoch
	replayErr error

	cache *metadatacache.Cache

	// bootstrapExtra are the bootstrap records that are not feature levels
	// (SCRAM credentials a Kafka format added); written after the features.
	bootstrapExtra []metadatacache.Record

	leaderCh chan struct{}
	closeCh  chan struct{}
	closeOne sync.Once
	wg       sync.WaitGroup
}

// New creates a controller, registers it as a raft listener and starts its
// background loop (activation, NoOpRecords, session expiry).
func New(cfg Config) (*Controller, error) {
	if cfg.Raft == nil {
		return nil, errors.New("controller: Config.Raft is nil")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.NumPartitions == 0 {
		cfg.NumPartitions = 1
	}
	if cfg.DefaultReplicationFactor == 0 {
		cfg.DefaultReplicationFactor = 1
	}
	if cfg.SessionTimeout == 0 {
		cfg.SessionTimeout = 9 * time.Second
	}
	if cfg.MaxIdleInterval == 0 {
		cfg.MaxIdleInterval = 500 * time.Millisecond
	}
	if cfg.UncleanLeaderElectionInterval == 0 {
		cfg.UncleanLeaderElectionInterval = 5 * time.Minute
	}
	var extra []metadatacache.Record
	if cfg.BootstrapFeatures == nil && cfg.MetadataLogDir != "" {
		recs, err := ReadBootstrap(cfg.MetadataLogDir)
		if err != nil {
			return nil, fmt.Errorf("controller: reading the bootstrap metadata: %w", err)
		}
		if recs != nil {
			if cfg.BootstrapFeatures, err = BootstrapFeaturesOf(recs); err != nil {
				return nil, fmt.Errorf("controller: the bootstrap metadata in %s: %w", cfg.MetadataLogDir, err)
			}
			for _, r := range recs {
				if _, ok := r.(*metadatacache.FeatureLevelRecord); !ok {
					extra = append(extra, r)
				}
			}
		}
	}
	if cfg.BootstrapFeatures == nil {
		cfg.BootstrapFeatures = DefaultBootstrapFeatures()
	}
	if err := checkBootstrapFeatures(cfg.BootstrapFeatures); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c := &Controller{
		cfg:       cfg,
		log:       cfg.Logger.Named("controller"),
		st:        newState(),
		appliedCh: make(chan struct{}),
		leader:    raft.LeaderAndEpoch{LeaderID: -1, Epoch: -1},
		cache:     metadatacache.NewCache(metadatacache.Config{ClusterID: cfg.ClusterID, Logger: cfg.Logger.Named("controller.image")}),
		leaderCh:  make(chan struct{}, 1),
		closeCh:   make(chan struct{}),
	}
	c.mu.SetRank(lockrank.ControllerDecide)
	c.stateMu.SetRank(lockrank.ControllerState)
	c.st.nodeID, c.st.staticUnclean, c.st.staticMinISR = cfg.NodeID, cfg.UncleanLeaderElectionEnable, cfg.MinInsyncReplicas
	c.bootstrapExtra = extra
	c.mu.rnd = cfg.Rand
	if c.mu.rnd == nil {
		c.mu.rnd = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	c.mu.activeEpoch = -1
	c.mu.sessions = make(map[int32]*session)
	cfg.Raft.Register(listener{c})
	c.wg.Add(1)
	go c.run()
	return c, nil
}

// Close stops the background loop. Handle answers NOT_CONTROLLER afterwards.
func (c *Controller) Close() error {
	c.closeOne.Do(func() { close(c.closeCh) })
	c.wg.Wait()
	c.mu.Lock()
	c.mu.activeEpoch = -1
	c.mu.Unlock()
	return nil
}

// Image is the metadata image replayed from committed batches.
func (c *Controller) Image() *metadatacache.Image { return c.cache.Image() }

// Active reports whether this node is the active controller.
func (c *Controller) Active() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.activeLocked()
}

// activeLocked: c.mu must be held.
func (c *Controller) activeLocked() bool {
	if c.mu.activeEpoch < 0 {
		return false
	}
	le := c.leaderAndEpoch()
	return le.LeaderID == c.cfg.NodeID && le.Epoch == c.mu.activeEpoch
}

func (c *Controller) leaderAndEpoch() raft.LeaderAndEpoch {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	return c.leader
}

// Handle answers one controller request. A non-active controller answers
// NOT_CONTROLLER. A returned error means "close the connection".
func (c *Controller) Handle(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if _, ok := req.(*kmsg.DescribeQuorumRequest); ok {
		return c.cfg.Raft.HandleRequest(ctx, req)
	}
	// An ip quota entity naming a host is checked by resolving it
	// (InetAddress.getByName in Kafka), which can wait seconds on DNS: done
	// before c.mu, which heartbeats and every other request wait behind.
	var unresolvable map[string]bool
	if r, ok := req.(*kmsg.AlterClientQuotasRequest); ok {
		unresolvable = unresolvableIPEntities(ctx, r)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closeCh:
		return notController(req), nil
	default:
	}
	if !c.activeLocked() {
		return notController(req), nil
	}
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		return c.createTopics(ctx, r), nil
	case *kmsg.DeleteTopicsRequest:
		return c.deleteTopics(ctx, r), nil
	case *kmsg.CreatePartitionsRequest:
		return c.createPartitions(ctx, r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return c.incrementalAlterConfigs(ctx, r), nil
	case *kmsg.AlterConfigsRequest:
		return c.alterConfigs(ctx, r), nil
	case *kmsg.BrokerRegistrationRequest:
		return c.registerBroker(ctx, r), nil
	case *kmsg.BrokerHeartbeatRequest:
		return c.brokerHeartbeat(ctx, r), nil
	case *kmsg.UnregisterBrokerRequest:
		return c.unregisterBroker(ctx, r), nil
	case *kmsg.AllocateProducerIDsRequest:
		return c.allocateProducerIDs(ctx, r), nil
	case *kmsg.ListPartitionReassignmentsRequest:
		return c.listPartitionReassignments(r), nil
	case *kmsg.AlterPartitionAssignmentsRequest:
		return c.alterPartitionReassignments(ctx, r), nil
	case *kmsg.AlterPartitionRequest:
		return c.alterPartition(ctx, r), nil
	case *kmsg.AssignReplicasToDirsRequest:
		return c.assignReplicasToDirs(ctx, r), nil
	case *kmsg.ElectLeadersRequest:
		return c.electLeaders(ctx, r), nil
	case *kmsg.UpdateFeaturesRequest:
		return c.updateFeatures(ctx, r), nil
	case *kmsg.UnregisterControllerRequest:
		return c.unregisterController(ctx, r), nil
	case *kmsg.ControllerRegistrationRequest:
		return c.registerController(ctx, r), nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return c.alterUserScramCredentials(ctx, r), nil
	case *kmsg.AlterClientQuotasRequest:
		return c.alterClientQuotas(ctx, r, unresolvable), nil
	case *kmsg.CreateACLsRequest:
		return c.createACLs(ctx, r), nil
	case *kmsg.DeleteACLsRequest:
		return c.deleteACLs(ctx, r), nil
	}
	return nil, fmt.Errorf("controller: unsupported request %T", req)
}

// errWriteFailed wraps a failed raft append: the controller stepped down.
var errWriteFailed = errors.New("controller: metadata write failed")

// write appends recs as one atomic batch and waits until the controller
// replayed it. c.mu must be held. An empty recs writes nothing. On failure
// the controller steps down until raft makes it leader again.
func (c *Controller) write(ctx context.Context, recs []metadatacache.Record) (lastOffset int64, err error) {
	if len(recs) == 0 {
		return c.mu.nextWriteOffset - 1, nil
	}
	enc := make([][]byte, len(recs))
	for i, r := range recs {
		enc[i] = metadatacache.EncodeRecord(r)
	}
	// The append is not abandoned when the request's context ends: a batch
	// that may still commit leaves nextWriteOffset unknown.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	last, err := c.cfg.Raft.Append(actx, enc)
	if err != nil {
		c.log.Warn("metadata append failed; stepping down", zap.Int("records", len(recs)), zap.Error(err))
		c.renounceLocked()
		return -1, fmt.Errorf("%w: %w", errWriteFailed, err)
	}
	if base := last - int64(len(recs)) + 1; base != c.mu.nextWriteOffset {
		c.log.Debug("batch landed at an unexpected offset", zap.Int64("expected", c.mu.nextWriteOffset), zap.Int64("base", base))
	}
	c.mu.nextWriteOffset = last + 1
	if err := c.waitApplied(actx, last); err != nil {
		c.renounceLocked()
		return -1, fmt.Errorf("%w: %w", errWriteFailed, err)
	}
	return last, nil
}

// renounceLocked gives up activity; the loop's periodic check re-activates
// if raft still names this node leader. c.mu must be held.
func (c *Controller) renounceLocked() {
	c.mu.activeEpoch = -1
	c.mu.sessions = make(map[int32]*session)
}

// waitApplied waits until the batch ending at offset was replayed.
func (c *Controller) waitApplied(ctx context.Context, offset int64) error {
	for {
		c.stateMu.Lock()
		applied, ch, rerr := c.st.lastOffset, c.appliedCh, c.replayErr
		c.stateMu.Unlock()
		if rerr != nil {
			return rerr
		}
		if applied >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closeCh:
			return ErrClosed
		}
	}
}

// view runs fn with the replayed state locked. fn must not keep references
// to the state's maps or slices past its return, nor call write.
func (c *Controller) view(fn func(s *state)) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	fn(c.st)
}

// run is the background loop: activation on leader changes, a NoOpRecord
// every MaxIdleInterval (so the high watermark advances as Kafka's does) and
// fencing of brokers whose session expired.
func (c *Controller) run() {
	defer c.wg.Done()
	var noop <-chan time.Time
	if c.cfg.MaxIdleInterval > 0 {
		t := time.NewTicker(c.cfg.MaxIdleInterval)
		defer t.Stop()
		noop = t.C
	}
	check := c.cfg.SessionTimeout / 8
	if check <= 0 || check > 250*time.Millisecond {
		check = 250 * time.Millisecond
	}
	sessions := time.NewTicker(check)
	defer sessions.Stop()
	var preferred, unclean <-chan time.Time
	if c.cfg.LeaderImbalanceCheckInterval > 0 {
		t := time.NewTicker(c.cfg.LeaderImbalanceCheckInterval)
		defer t.Stop()
		preferred = t.C
	}
	if c.cfg.UncleanLeaderElectionInterval > 0 {
		t := time.NewTicker(c.cfg.UncleanLeaderElectionInterval)
		defer t.Stop()
		unclean = t.C
	}
	// expiry: the earliest session expiry, so that a broker is fenced when
	// its session times out, not up to a check interval later
	expiry := time.NewTimer(check)
	defer expiry.Stop()
	for {
		var fence bool
		select {
		case <-c.closeCh:
			return
		case <-c.leaderCh:
			c.maybeActivate()
		case <-noop:
			c.writeNoOp()
		case <-sessions.C:
			fence = true
		case <-expiry.C:
			fence = true
		case <-preferred:
			for c.balancePartitionLeaders() {
			}
		case <-unclean:
			for c.electUncleanLeaders() {
			}
		}
		if !fence {
			continue
		}
		c.maybeActivate()
		d := check
		if next := c.fenceStaleBrokers(); !next.IsZero() {
			d = min(d, max(next.Sub(c.cfg.Now())+time.Millisecond, time.Millisecond))
		}
		expiry.Stop()
		select {
		case <-expiry.C:
		default:
		}
		expiry.Reset(d)
	}
}

// Tick runs one round of the background work now (activation, a NoOpRecord,
// session expiry). Tests drive time with it.
func (c *Controller) Tick() {
	c.maybeActivate()
	if c.cfg.MaxIdleInterval > 0 {
		c.writeNoOp()
	}
	c.fenceStaleBrokers()
}

func (c *Controller) writeNoOp() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.activeLocked() {
		return
	}
	if _, err := c.write(context.Background(), []metadatacache.Record{metadatacache.NewNoOpRecord()}); err != nil {
		c.log.Debug("NoOpRecord not written", zap.Error(err))
	}
}

// maybeActivate makes this controller active when raft names it leader of
// an epoch it has not activated in. Raft delivers the leader change only
// after every batch committed before the epoch (KRaft's listener contract),
// so the replayed state is complete: an empty state means an empty log.
func (c *Controller) maybeActivate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.closeCh:
		return
	default:
	}
	le := c.leaderAndEpoch()
	if le.LeaderID != c.cfg.NodeID {
		if c.mu.activeEpoch >= 0 {
			c.log.Info("no longer the active controller", zap.Int32("leader", le.LeaderID), zap.Int32("epoch", le.Epoch))
		}
		c.mu.activeEpoch = -1
		c.mu.sessions = make(map[int32]*session)
		return
	}
	if c.mu.activeEpoch == le.Epoch {
		return
	}
	var (
		recs    []metadatacache.Record
		mv      int16
		inTxn   int64
		brokers []*brokerState
		last    int64
	)
	c.view(func(s *state) {
		mv = s.metadataVersion()
		inTxn = s.inTransaction
		last = s.lastOffset
		for _, id := range s.brokerIDs() {
			b := *s.brokers[id]
			brokers = append(brokers, &b)
		}
	})
	switch {
	case mv == 0 && last < 0:
		recs = c.bootstrapRecords()
		c.log.Info("the metadata log is empty; writing bootstrap records",
			zap.Int("records", len(recs)), zap.Int32("epoch", le.Epoch))
	case inTxn >= 0:
		recs = []metadatacache.Record{abortTxn("Controller failover")}
		c.log.Info("aborting in-progress metadata transaction", zap.Int64("offset", inTxn))
	default:
		// Kafka appends nothing here; one NoOpRecord tells us where the log ends.
		recs = []metadatacache.Record{metadatacache.NewNoOpRecord()}
	}
	c.mu.activeEpoch = le.Epoch // let write proceed; reset by renounce on failure
	c.mu.nextWriteOffset = last + 1
	c.mu.sessions = make(map[int32]*session)
	now := c.cfg.Now()
	for _, b := range brokers {
		c.mu.sessions[b.id] = &session{lastContact: now, metadataOffset: -1, shutdownOffset: -1}
	}
	if _, err := c.write(context.Background(), recs); err != nil {
		c.log.Warn("controller activation failed", zap.Int32("epoch", le.Epoch), zap.Error(err))
		return
	}
	c.log.Info("became the active controller", zap.Int32("epoch", le.Epoch), zap.Int64("next_offset", c.mu.nextWriteOffset))
}

// bootstrapRecords are the records Kafka's activation writes on an empty
// log: the bootstrap features in a metadata transaction (metadata.version
// first, then the others by name).
func (c *Controller) bootstrapRecords() []metadatacache.Record {
	var mv, elr int16
	var others []Feature
	for _, f := range c.cfg.BootstrapFeatures {
		if f.Name == featureELRVersion {
			elr = f.Level
		}
		if f.Name == featureMetadataVersion {
			mv = f.Level
		} else if f.Name != featureKRaftVersion && f.Level > 0 {
			others = append(others, f)
		}
	}
	sortFeatures(others)
	var recs []metadatacache.Record
	txn := mv >= mv3_6_IV1
	if txn {
		b := metadatacache.NewBeginTransactionRecord()
		b.Name = strp("Bootstrap records")
		recs = append(recs, b)
	}
	recs = append(recs, featureRecord(featureMetadataVersion, mv))
	for _, f := range others {
		recs = append(recs, featureRecord(f.Name, f.Level))
	}
	recs = append(recs, c.bootstrapExtra...)
	// ActivationRecordsGenerator: a cluster bootstrapped with ELR (Kafka
	// 4.1+'s default) gets the cluster-level min.insync.replicas (KIP-966),
	// which the ELR rules need fixed; tools then list it among every
	// topic's Configs.
	if elr > 0 {
		recs = append(recs, configRecord(resourceBroker, "", "min.insync.replicas", strp(strconv.Itoa(c.minISR()))))
	}
	if txn {
		recs = append(recs, metadatacache.NewEndTransactionRecord())
	}
	return recs
}

// minISR is the static min.insync.replicas (1 when unset).
func (c *Controller) minISR() int { return max(c.cfg.MinInsyncReplicas, 1) }

func featureRecord(name string, level int16) metadatacache.Record {
	r := metadatacache.NewFeatureLevelRecord()
	r.Name = name
	r.FeatureLevel = level
	return r
}

func abortTxn(reason string) metadatacache.Record {
	r := metadatacache.NewAbortTransactionRecord()
	r.Reason = strp(reason)
	return r
}

func sortFeatures(fs []Feature) {
	for i := 1; i < len(fs); i++ {
		for j := i; j > 0 && fs[j].Name < fs[j-1].Name; j-- {
			fs[j], fs[j-1] = fs[j-1], fs[j]
		}
	}
}

// notController builds req's response with NOT_CONTROLLER everywhere.
func notController(req kmsg.Request) kmsg.Response {
	code := kerr.NotController.Code
	switch r := req.(type) {
	case *kmsg.ElectLeadersRequest:
		return electLeadersError(r, bareAPIError(kerr.NotController))
	case *kmsg.CreateTopicsRequest:
		resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.DeleteTopicsRequest:
		resp := r.ResponseKind().(*kmsg.DeleteTopicsResponse)
		for _, n := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic = strp(n)
			rt.ErrorCode = code
			resp.Topics = append(resp.Topics, rt)
		}
		for _, t := range r.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic = t.Topic
			rt.TopicID = t.TopicID
			rt.ErrorCode = code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.CreatePartitionsRequest:
		resp := r.ResponseKind().(*kmsg.CreatePartitionsResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic = t.Topic
			rt.ErrorCode = code
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.IncrementalAlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.AlterConfigsRequest:
		resp := r.ResponseKind().(*kmsg.AlterConfigsResponse)
		for _, res := range r.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = res.ResourceType, res.ResourceName, code
			resp.Resources = append(resp.Resources, rr)
		}
		return resp
	case *kmsg.BrokerRegistrationRequest:
		resp := r.ResponseKind().(*kmsg.BrokerRegistrationResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.BrokerHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.BrokerHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.UnregisterBrokerRequest:
		resp := r.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AllocateProducerIDsRequest:
		resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.ListPartitionReassignmentsRequest:
		resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterPartitionAssignmentsRequest:
		return alterReassignmentsError(r, bareAPIError(kerr.NotController))
	case *kmsg.AlterPartitionRequest:
		resp := r.ResponseKind().(*kmsg.AlterPartitionResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AssignReplicasToDirsRequest:
		resp := r.ResponseKind().(*kmsg.AssignReplicasToDirsResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.ControllerRegistrationRequest:
		resp := r.ResponseKind().(*kmsg.ControllerRegistrationResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		return scramErrorResponse(r, code)
	case *kmsg.AlterClientQuotasRequest:
		return quotaErrorResponse(r, code)
	case *kmsg.CreateACLsRequest:
		return aclCreateError(r, bareAPIError(kerr.NotController))
	case *kmsg.DeleteACLsRequest:
		return aclDeleteError(r, bareAPIError(kerr.NotController))
	case *kmsg.UpdateFeaturesRequest:
		resp := r.ResponseKind().(*kmsg.UpdateFeaturesResponse)
		resp.ErrorCode = code
		if r.Version <= 1 {
			for _, u := range r.FeatureUpdates {
				res := kmsg.NewUpdateFeaturesResponseResult()
				res.Feature, res.ErrorCode = u.Feature, code
				resp.Results = append(resp.Results, res)
			}
		}
		return resp
	case *kmsg.UnregisterControllerRequest:
		resp := r.ResponseKind().(*kmsg.UnregisterControllerResponse)
		resp.ErrorCode = code
		return resp
	}
	return req.ResponseKind()
}
