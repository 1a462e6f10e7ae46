package replication

import (
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

// LogManager is what the ReplicaManager needs of storage.Manager.
type LogManager interface {
	GetOrCreateLog(tp storage.TopicPartition, topicID [16]byte, cfg storage.Config) (*storage.Log, error)
	DeleteLog(tp storage.TopicPartition) error
}

// dirLogManager is a LogManager that can create a new log in a chosen log
// dir (storage.Manager.GetOrCreateLogIn).
type dirLogManager interface {
	GetOrCreateLogIn(tp storage.TopicPartition, topicID [16]byte, cfg storage.Config, dir string) (*storage.Log, error)
}

// Config configures a ReplicaManager.
type Config struct {
	// NodeID is this broker's node.id.
	NodeID int32
	// Logs holds the partition logs of log.dirs (a *storage.Manager).
	Logs LogManager
	// Now is the clock for LogAppendTime, timestamp checks and fetch
	// session expiry; time.Now when nil.
	Now func() time.Time
	// Logger defaults to zap.NewNop().
	Logger *zap.Logger
	// TopicDefaults returns the static broker-level defaults of topic
	// configs (server.properties), keyed by topic config name (retention.ms,
	// not log.retention.ms). Dynamic broker configs from the metadata image
	// (cluster default, then this broker's) override them, and topic
	// ConfigRecords override those. Nil means Kafka's defaults.
	TopicDefaults func() map[string]string

	// Controller reaches the active controller (AllocateProducerIDs); the
	// broker's controller channel. Nil disables InitProducerId.
	Controller kmsg.Requestor
	// BrokerEpoch returns this broker's registration epoch, sent with
	// AllocateProducerIDs.
	BrokerEpoch func() int64
	// LogDirByID names the log dir of a directory.id (meta.properties);
	// with it a new replica's log goes to the directory the metadata names
	// for this broker (KIP-858; LogManager.getOrCreateLog's
	// targetLogDirectoryId), else to the least loaded dir.
	LogDirByID func(id [16]byte) (string, bool)
	// OnLogMoved, when set, is called after a replica moved to another
	// log dir (alterlogdirs.go), without locks: the broker reports the new
	// directory to the controller.
	OnLogMoved func(tp storage.TopicPartition)
	// AlterLogDirsQuota throttles the copies of replicas moving between
	// log dirs (QuotaFactory's alter-log-dirs ReplicationQuotaManager,
	// replica.alter.log.dirs.io.max.bytes.per.second; alterlogdirs.go);
	// nil: unthrottled.
	AlterLogDirsQuota ReplicaQuota

	// LeaderQuota and FollowerQuota are the replication throttles
	// (QuotaFactory's leader and follower ReplicationQuotaManagers,
	// quota.ReplicationQuota): the leader leaves the throttled partitions
	// of out-of-sync followers out of its answers while
	// leader.replication.throttled.rate is exceeded; the fetchers leave
	// their throttled partitions out of their requests while
	// follower.replication.throttled.rate is. Nil throttles nothing.
	LeaderQuota, FollowerQuota ReplicaQuota
	// RackAwareReplicaSelector is replica.selector.class=RackAwareReplicaSelector
	// (KIP-392): a leader answers a consumer fetch (v11+) that names a rack
	// with the in-sync replica of that rack to read from instead.
	RackAwareReplicaSelector bool

	// FetchSessionCacheSlots is max.incremental.fetch.session.cache.slots
	// (default 1000; negative disables sessions).
	FetchSessionCacheSlots int
	// FetchSessionEviction is how long an unused session is protected
	// from eviction (Kafka: 120 s).
	FetchSessionEviction time.Duration
}

// ReplicaQuota is Kafka's ReplicaQuota: which partitions a replication
// throttle covers, whether its rate is above the bound, and the bytes to
// count (quota.ReplicationQuota). Its methods take no lock of this package
// and may be called holding any.
type ReplicaQuota interface {
	IsThrottled(topic string, partition int32) bool
	IsQuotaExceeded() bool
	Record(bytes int64)
}

// unthrottled is the ReplicaQuota of no throttle.
type unthrottled struct{}

func (unthrottled) IsThrottled(string, int32) bool { return false }
func (unthrottled) IsQuotaExceeded() bool          { return false }
func (unthrottled) Record(int64)                   {}

// ReplicaManager holds the partitions this node has replicas of and serves
// produce, fetch and offset requests on them (Kafka's ReplicaManager). See
// doc.go for the partition state machine, the purgatory and the lock order.
type ReplicaManager struct {
	cfg    Config
	logger *zap.Logger
	now    func() time.Time

	closeOnce sync.Once
	closed    chan struct{}

	mu lockrank.RWMutex
	// Guarded by mu.
	image      *metadatacache.Image
	partitions map[storage.TopicPartition]*Partition
	topicCfgs  map[string]map[string]string // topic overrides last applied, by name
	defaults   map[string]string            // broker defaults last applied

	sessions *sessionCache
	pids     *producerIDs

	stats produceStats // metrics counters (stats.go)

	txn atomic.Pointer[TxnSettings] // KIP-890 verification (txn.go)

	replicationExt // replica fetchers, ISR changes, HW checkpoint (fetcher_manager.go)

	// moversMu guards movers: the partitions whose replica is being moved
	// to another log dir (alterlogdirs.go). A leaf.
	moversMu lockrank.Mutex
	movers   map[storage.TopicPartition]bool
}

// New returns a ReplicaManager holding no partitions; OnImage gives it some.
func New(cfg Config) *ReplicaManager {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.FetchSessionCacheSlots == 0 {
		cfg.FetchSessionCacheSlots = 1000
	}
	if cfg.FetchSessionEviction == 0 {
		cfg.FetchSessionEviction = 120 * time.Second
	}
	if cfg.LeaderQuota == nil {
		cfg.LeaderQuota = unthrottled{}
	}
	if cfg.FollowerQuota == nil {
		cfg.FollowerQuota = unthrottled{}
	}
	if cfg.AlterLogDirsQuota == nil {
		cfg.AlterLogDirsQuota = unthrottled{}
	}
	rm := &ReplicaManager{
		cfg:        cfg,
		logger:     cfg.Logger,
		now:        cfg.Now,
		closed:     make(chan struct{}),
		image:      metadatacache.EmptyImage(""),
		partitions: map[storage.TopicPartition]*Partition{},
		topicCfgs:  map[string]map[string]string{},
		sessions:   newSessionCache(cfg.FetchSessionCacheSlots, cfg.FetchSessionEviction),
	}
	rm.mu.SetRank(lockrank.ReplicaManager)
	rm.moversMu.SetRank(lockrank.LogMovers)
	rm.isr.nowFn = cfg.Now
	rm.pids = &producerIDs{nodeID: cfg.NodeID, controller: cfg.Controller, brokerEpoch: cfg.BrokerEpoch,
		logger: cfg.Logger, closed: rm.closed}
	rm.pids.mu.SetRank(lockrank.ProducerIDBlocks)
	return rm
}

// Close wakes every parked request (they answer with what they have) and
// stops background work. Logs are closed by their storage.Manager.
func (rm *ReplicaManager) Close() {
	rm.closeOnce.Do(func() { close(rm.closed) })
	rm.stopReplication()
}

// Partition returns the local replica of a partition, if any.
func (rm *ReplicaManager) Partition(topic string, partition int32) (*Partition, bool) {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	p, ok := rm.partitions[storage.TopicPartition{Topic: topic, Partition: partition}]
	return p, ok
}

// Image returns the metadata image last applied.
func (rm *ReplicaManager) Image() *metadatacache.Image {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	return rm.image
}

// lookup is getPartitionOrError: the local partition, or the error Kafka
// answers: UNKNOWN_TOPIC_OR_PARTITION when the metadata does not know it,
// NOT_LEADER_OR_FOLLOWER when it does but this node holds no replica.
func (rm *ReplicaManager) lookup(topic string, partition int32) (*Partition, error) {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	if p, ok := rm.partitions[storage.TopicPartition{Topic: topic, Partition: partition}]; ok {
		return p, nil
	}
	if t := rm.image.TopicByName(topic); t != nil && t.Partition(partition) != nil {
		return nil, kerr.NotLeaderForPartition
	}
	return nil, kerr.UnknownTopicOrPartition
}

// topicNameByID resolves a v13+ topic id against the current image.
func (rm *ReplicaManager) topicNameByID(id [16]byte) (string, bool) {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	if t := rm.image.TopicByID(id); t != nil {
		return t.Name, true
	}
	return "", false
}

// CurrentLeader returns the leader and leader epoch of a partition in the
// current image ((-1, -1) if unknown), for KIP-951 CurrentLeader fields.
func (rm *ReplicaManager) CurrentLeader(topic string, partition int32) (leader, epoch int32) {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	if t := rm.image.TopicByName(topic); t != nil {
		if p := t.Partition(partition); p != nil {
			return p.Leader, p.LeaderEpoch
		}
	}
	return -1, -1
}

// effectiveConfig is the topic's storage config: Kafka's defaults, then the
// broker defaults, then the topic's own configs. A bad value is logged and
// skipped so one bad key never makes a partition unavailable.
func (rm *ReplicaManager) effectiveConfig(topic string, overrides map[string]string) storage.Config {
	bad := func(k string, err error) {
		rm.logger.Warn("ignoring invalid topic config", zap.String("topic", topic), zap.String("key", k), zap.Error(err))
	}
	return storage.DefaultConfig().WithValid(rm.defaults, bad).WithValid(overrides, bad)
}

// OnImage applies a new metadata image: for every partition with a replica
// on this node it creates the log if needed and becomes leader or follower
// as the image says; it deletes the logs of partitions this node no longer
// holds (topic deleted, replica moved away) and applies config changes.
// Subscribe it to the metadata cache.
func (rm *ReplicaManager) OnImage(_, img *metadatacache.Image) {
	if img == nil {
		return
	}
	rm.mu.Lock()
	var wake, removed []*Partition
	defer func() {
		rm.mu.Unlock()
		for _, p := range wake {
			p.watch.wakeAll()
		}
		rm.replicationOnImage(wake, removed)
	}()
	prev := rm.image
	rm.image = img
	rm.isr.image.Store(img)
	// Most images change a few partitions (an ISR change, a leader
	// election, a new topic): look at those only, as Kafka's
	// ReplicaManager.applyDelta does with the TopicsDelta. A snapshot load
	// or a config or feature change goes through every partition.
	if ch := img.Changes(); prev != nil && !ch.Full && !ch.Configs && !ch.Features {
		wake, removed = rm.applyTopicChanges(prev, img, ch)
		return
	}
	defaults := map[string]string{}
	if rm.cfg.TopicDefaults != nil {
		maps.Copy(defaults, rm.cfg.TopicDefaults())
	}
	// Dynamic broker configs override the static ones: the cluster-wide
	// default, then this broker's own (DynamicLogConfig).
	maps.Copy(defaults, topicKeysOf(img.DefaultBrokerConfig()))
	maps.Copy(defaults, topicKeysOf(img.BrokerConfig(rm.cfg.NodeID)))
	defaultsChanged := !maps.Equal(defaults, rm.defaults)
	rm.defaults = defaults

	keep := map[storage.TopicPartition]bool{}
	for _, t := range img.Topics() {
		overrides := img.TopicConfig(t.Name)
		cfgChanged := defaultsChanged || !maps.Equal(overrides, rm.topicCfgs[t.Name])
		rm.topicCfgs[t.Name] = overrides
		cfg := rm.lazyConfig(t.Name, overrides)
		for _, mp := range t.Partitions {
			if !mp.HasReplica(rm.cfg.NodeID) {
				continue
			}
			keep[storage.TopicPartition{Topic: t.Name, Partition: mp.ID}] = true
			p, replaced, changed := rm.hostPartition(t, mp, cfg, cfgChanged)
			if replaced != nil {
				removed = append(removed, replaced)
			}
			if changed {
				wake = append(wake, p)
			}
		}
	}
	for tp, p := range rm.partitions {
		if !keep[tp] {
			rm.removePartition(p)
			delete(rm.partitions, tp)
			wake = append(wake, p)
			removed = append(removed, p)
		}
	}
	for name := range rm.topicCfgs {
		if img.TopicByName(name) == nil {
			delete(rm.topicCfgs, name)
		}
	}
}

// applyTopicChanges is OnImage for an image whose changes from prev are
// only in ch.Topics (no config changes: rm.defaults and rm.topicCfgs stay
// true). rm.mu must be held.
func (rm *ReplicaManager) applyTopicChanges(prev, img *metadatacache.Image, ch *metadatacache.Changes) (wake, removed []*Partition) {
	drop := func(tp storage.TopicPartition, id [16]byte) {
		if p, ok := rm.partitions[tp]; ok && p.topicID == id {
			rm.removePartition(p)
			delete(rm.partitions, tp)
			wake = append(wake, p)
			removed = append(removed, p)
		}
	}
	// Removed topics first: a topic deleted and created again under the
	// same name in one image is then a new topic below.
	for id, tc := range ch.Topics {
		if old := prev.TopicByID(id); tc.Removed && old != nil && img.TopicByID(id) == nil {
			for pid := range old.Partitions {
				drop(storage.TopicPartition{Topic: old.Name, Partition: pid}, id)
			}
			if img.TopicByName(old.Name) == nil {
				delete(rm.topicCfgs, old.Name)
			}
		}
	}
	for id, tc := range ch.Topics {
		t := img.TopicByID(id)
		if t == nil {
			continue
		}
		pids := slices.Collect(maps.Keys(tc.Partitions))
		if tc.Created {
			pids = slices.Collect(maps.Keys(t.Partitions))
			rm.topicCfgs[t.Name] = img.TopicConfig(t.Name)
		}
		cfg := rm.lazyConfig(t.Name, rm.topicCfgs[t.Name])
		for _, pid := range pids {
			mp := t.Partition(pid)
			if mp == nil || !mp.HasReplica(rm.cfg.NodeID) {
				drop(storage.TopicPartition{Topic: t.Name, Partition: pid}, id) // the replica moved away
				continue
			}
			p, replaced, changed := rm.hostPartition(t, mp, cfg, false)
			if replaced != nil {
				removed = append(removed, replaced)
			}
			if changed {
				wake = append(wake, p)
			}
		}
	}
	return wake, removed
}

// lazyConfig returns a function computing the topic's effective config on
// its first call: a topic without a replica here never needs it.
func (rm *ReplicaManager) lazyConfig(topic string, overrides map[string]string) func() storage.Config {
	var cfg *storage.Config
	return func() storage.Config {
		if cfg == nil {
			c := rm.effectiveConfig(topic, overrides)
			cfg = &c
		}
		return *cfg
	}
}

// hostPartition moves this node's replica of partition mp of t to the state
// mp says, creating the Partition when it is new or when its name now
// belongs to a new topic (the old one was deleted: it is stopped, its log
// deleted, and returned as replaced). changed reports whether anything
// parked on p should re-check. rm.mu must be held.
func (rm *ReplicaManager) hostPartition(t *metadatacache.Topic, mp *metadatacache.Partition, cfg func() storage.Config, cfgChanged bool) (p, replaced *Partition, changed bool) {
	tp := storage.TopicPartition{Topic: t.Name, Partition: mp.ID}
	p, ok := rm.partitions[tp]
	if ok && p.topicID != t.ID {
		rm.removePartition(p)
		replaced, ok = p, false
	}
	if !ok {
		p = newPartition(tp, t.ID, rm.cfg.NodeID, &rm.isr)
		rm.partitions[tp] = p
	}
	return p, replaced, rm.applyPartition(p, mp, cfg(), cfgChanged || !ok)
}

// removePartition stops a partition and deletes its log. A partition whose
// log was never opened (e.g. the log on disk belongs to another topic id, as
// while replaying metadata history) leaves the storage alone. rm.mu must be
// held.
func (rm *ReplicaManager) removePartition(p *Partition) {
	p.mu.Lock()
	owned := p.log != nil
	p.isLeader = false
	p.leader = -1
	p.log = nil
	p.mu.Unlock()
	if !owned {
		return
	}
	if err := rm.cfg.Logs.DeleteLog(p.tp); err != nil {
		rm.logger.Error("deleting partition log failed", zap.String("topic", p.tp.Topic),
			zap.Int32("partition", p.tp.Partition), zap.Error(err))
	}
}

// applyPartition moves p to the state the image registration mp says
// (Partition.makeLeader / makeFollower) and reports whether anything
// parked on it should re-check. rm.mu must be held.
func (rm *ReplicaManager) applyPartition(p *Partition, mp *metadatacache.Partition, cfg storage.Config, cfgChanged bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	log := rm.zapPartition(p)
	if p.log == nil {
		l, err := rm.createLog(p, mp, cfg)
		if err != nil {
			rm.logger.Error("creating partition log failed", append(log, zap.Error(err))...)
			return false
		}
		p.log = l
		p.cfg = cfg
		p.hw.Store(rm.initialHighWatermark(p.tp, l))
	} else if cfgChanged {
		p.log.SetConfig(cfg)
		p.cfg = cfg
	}
	if mp.PartitionEpoch < p.partitionEpoch {
		// The AlterPartition answer already brought a newer partition
		// epoch (handleAlterResult): this image is behind it
		// (Partition.makeLeader / makeFollower skip it).
		return cfgChanged
	}
	wasLeader, oldEpoch := p.isLeader, p.leaderEpoch
	epochsChanged := p.leaderEpoch != mp.LeaderEpoch || p.partitionEpoch != mp.PartitionEpoch
	changed := epochsChanged || cfgChanged
	p.replicas = mp.Replicas
	p.isr = mp.Isr
	p.leader = mp.Leader
	p.leaderEpoch = mp.LeaderEpoch
	p.partitionEpoch = mp.PartitionEpoch
	p.isLeader = mp.Leader == rm.cfg.NodeID

	switch {
	case p.isLeader && (!wasLeader || oldEpoch != mp.LeaderEpoch):
		// makeLeader: a new leader epoch starts at the log end offset. An
		// epoch the log already knows (an image from metadata history being
		// replayed) must not be assigned again: that would truncate the
		// leader epoch cache of newer epochs.
		leo := p.log.LogEndOffset()
		if latest, ok := p.log.LatestEpoch(); !ok || mp.LeaderEpoch > latest {
			if err := p.log.AssignEpochStartOffset(mp.LeaderEpoch, leo); err != nil {
				rm.logger.Error("recording leader epoch start failed", append(log, zap.Error(err))...)
			}
		}
		p.resetFollowers(rm.now(), leo, !wasLeader)
		p.leaderEpochStartOffset.Store(leo)
		rm.logger.Info("became leader", append(log, zap.Int32("leaderEpoch", mp.LeaderEpoch), zap.Int64("startOffset", leo))...)
		changed = true
	case !p.isLeader && (wasLeader || oldEpoch != mp.LeaderEpoch):
		p.leaderEpochStartOffset.Store(-1)
		rm.logger.Info("became follower", append(log, zap.Int32("leader", mp.Leader), zap.Int32("leaderEpoch", mp.LeaderEpoch))...)
		changed = true
	}
	p.resetIsrChange(rm.now(), p.isLeader && (!wasLeader || oldEpoch != mp.LeaderEpoch), epochsChanged)
	if p.isLeader {
		p.maybeIncrementHW()
	}
	return changed
}

func (rm *ReplicaManager) zapPartition(p *Partition) []zap.Field {
	return []zap.Field{zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition)}
}

// brokerTopicSynonyms maps the broker configs that are defaults of topic
// configs (the primary synonyms of LogConfig.TopicConfigSynonyms, the ones
// DynamicLogConfig accepts) to the topic config names.
var brokerTopicSynonyms = map[string]string{
	"log.segment.bytes":                   "segment.bytes",
	"log.roll.ms":                         "segment.ms",
	"log.roll.jitter.ms":                  "segment.jitter.ms",
	"log.index.size.max.bytes":            "segment.index.bytes",
	"log.flush.interval.messages":         "flush.messages",
	"log.flush.interval.ms":               "flush.ms",
	"log.retention.bytes":                 "retention.bytes",
	"log.retention.ms":                    "retention.ms",
	"message.max.bytes":                   "max.message.bytes",
	"log.index.interval.bytes":            "index.interval.bytes",
	"log.cleaner.delete.retention.ms":     "delete.retention.ms",
	"log.cleaner.min.compaction.lag.ms":   "min.compaction.lag.ms",
	"log.cleaner.max.compaction.lag.ms":   "max.compaction.lag.ms",
	"log.segment.delete.delay.ms":         "file.delete.delay.ms",
	"log.cleaner.min.cleanable.ratio":     "min.cleanable.dirty.ratio",
	"log.cleanup.policy":                  "cleanup.policy",
	"unclean.leader.election.enable":      "unclean.leader.election.enable",
	"min.insync.replicas":                 "min.insync.replicas",
	"compression.type":                    "compression.type",
	"log.preallocate":                     "preallocate",
	"log.message.timestamp.type":          "message.timestamp.type",
	"log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
	"log.message.timestamp.after.max.ms":  "message.timestamp.after.max.ms",
	"log.message.downconversion.enable":   "message.downconversion.enable",
	"log.local.retention.ms":              "local.retention.ms",
	"log.local.retention.bytes":           "local.retention.bytes",
}

// topicKeysOf renames the topic-default broker configs in m to topic config
// names and drops the rest.
func topicKeysOf(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if t, ok := brokerTopicSynonyms[k]; ok {
			out[t] = v
		}
	}
	return out
}

// createLog creates (or opens) p's log: in the log dir the metadata names
// for this broker's replica when that is a real directory this broker has
// (not MIGRATING, UNASSIGNED or LOST, DirectoryId.reserved), else where
// the log manager puts new logs (the least loaded dir); the broker then
// reports the directory it used (AssignReplicasToDirs).
func (rm *ReplicaManager) createLog(p *Partition, mp *metadatacache.Partition, cfg storage.Config) (*storage.Log, error) {
	if dl, ok := rm.cfg.Logs.(dirLogManager); ok && rm.cfg.LogDirByID != nil && len(mp.Directories) == len(mp.Replicas) {
		for i, r := range mp.Replicas {
			if r != rm.cfg.NodeID || metadatacache.IsReservedDirectoryID(mp.Directories[i]) {
				continue
			}
			if dir, ok := rm.cfg.LogDirByID(mp.Directories[i]); ok {
				return dl.GetOrCreateLogIn(p.tp, p.topicID, cfg, dir)
			}
		}
	}
	return rm.cfg.Logs.GetOrCreateLog(p.tp, p.topicID, cfg)
}
