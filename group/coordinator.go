package group

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// OffsetsTopic is Kafka's internal topic of group metadata and offsets.
const OffsetsTopic = "__consumer_offsets"

// Config configures a Coordinator. Zero durations and sizes take Kafka's
// defaults.
type Config struct {
	NodeID int32
	// Writer is where the shards keep their records: the partitions of
	// __consumer_offsets (the replica manager in a broker,
	// coordinator.MemLog in tests).
	Writer coordinator.Writer
	Clock  Clock
	Logger *zap.Logger
	// Image returns the current metadata image: the __consumer_offsets
	// partition leaders, and the topics offsets are committed for.
	Image func() *metadatacache.Image
	// Controller creates __consumer_offsets on first use (CreateTopics).
	Controller kmsg.Requestor

	OffsetsTopicPartitions        int32         // offsets.topic.num.partitions (50)
	OffsetsTopicReplicationFactor int16         // offsets.topic.replication.factor (3)
	OffsetsTopicSegmentBytes      int32         // offsets.topic.segment.bytes (100 MiB)
	OffsetsRetention              time.Duration // offsets.retention.minutes (7 days)
	OffsetsRetentionCheckInterval time.Duration // offsets.retention.check.interval.ms (10 min)
	OffsetMetadataMaxBytes        int           // offset.metadata.max.bytes (4096)
	CommitTimeout                 time.Duration // offsets.commit.timeout.ms (5 s)

	MinSessionTimeout     time.Duration // group.min.session.timeout.ms (6 s)
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms (30 min)
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms (3 s); negative = 0
	MaxSize               int           // group.max.size (classic)
	NewMemberJoinTimeout  time.Duration // 5 min (Kafka's fixed classicGroupNewMemberJoinTimeoutMs)

	ConsumerSessionTimeout    time.Duration // group.consumer.session.timeout.ms (45 s)
	ConsumerHeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms (5 s)
	ConsumerMaxSize           int           // group.consumer.max.size
	ConsumerAssignors         []string      // group.consumer.assignors (uniform, range)

	// Share groups (KIP-932, share.go).
	ShareSessionTimeout          time.Duration // group.share.session.timeout.ms (45 s)
	ShareHeartbeatInterval       time.Duration // group.share.heartbeat.interval.ms (5 s)
	ShareMaxSize                 int           // group.share.max.size (200)
	ShareInitializeRetryInterval time.Duration // group.share.initialize.retry.interval.ms (30 s)
	ShareAssignmentInterval      time.Duration // group.share.assignment.interval.ms (1 s); negative = 0
	// StreamsMaxSize is group.streams.max.size (KIP-1071, streams.go);
	// the other streams settings are read per group through GroupConfig.
	StreamsMaxSize int
	// SharePersister reaches the share coordinator (share state of the
	// groups' partitions). Nil: partitions are never initialized, so share
	// groups get no assignment.
	SharePersister sharestate.Persister
	// OnShareMemberLeft is called once a share group member's removal
	// (leave, session expiry) is committed, on the coordinator's loop: the
	// share partitions release the records it acquired. It must not block.
	OnShareMemberLeft func(groupID, memberID string)
	// LatestOffset is a partition's latest offset, for the lag of
	// DescribeShareGroupOffsets v1 (KIP-1226); nil: lag -1. An error (a
	// kerr error) is answered for the partition.
	LatestOffset func(ctx context.Context, topicID [16]byte, partition int32) (int64, error)
	// GroupConfig returns a group's dynamic GROUP configs (KIP-848/KIP-932
	// group configs), overrides clamped to the broker's bounds: a group's
	// consumer.session.timeout.ms and consumer.heartbeat.interval.ms
	// replace ConsumerSessionTimeout and ConsumerHeartbeatInterval for its
	// members, and share.session.timeout.ms, share.heartbeat.interval.ms
	// and share.assignment.interval.ms the Share ones, read on each
	// heartbeat as GroupMetadataManager reads GroupConfigManager
	// (consumerGroupSessionTimeoutMs(groupId)). Nil: no group has
	// overrides.
	GroupConfig func(groupID string) config.GroupConfig
}

// consumerSessionTimeout is a consumer group's session timeout: its
// consumer.session.timeout.ms override, else the broker's.
func (c *Config) consumerSessionTimeout(groupID string) time.Duration {
	return c.groupOverrideMs(groupID, "consumer.session.timeout.ms", c.ConsumerSessionTimeout)
}

// consumerHeartbeatInterval is a consumer group's heartbeat interval: its
// consumer.heartbeat.interval.ms override, else the broker's.
func (c *Config) consumerHeartbeatInterval(groupID string) time.Duration {
	return c.groupOverrideMs(groupID, "consumer.heartbeat.interval.ms", c.ConsumerHeartbeatInterval)
}

func (c *Config) groupOverrideMs(groupID, key string, def time.Duration) time.Duration {
	if c.GroupConfig == nil {
		return def
	}
	v, ok := c.GroupConfig(groupID).Override(key)
	if !ok {
		return def
	}
	ms, err := strconv.ParseInt(v, 10, 32)
	if err != nil || ms <= 0 {
		return def
	}
	return time.Duration(ms) * time.Millisecond
}

// FromBrokerConfig reads the coordinator settings of server.properties.
func FromBrokerConfig(bc *config.Config) Config {
	ms := func(k string) time.Duration { return time.Duration(bc.Long(k)) * time.Millisecond }
	msi := func(k string) time.Duration { return time.Duration(bc.Int(k)) * time.Millisecond }
	return Config{
		NodeID:                        bc.NodeID,
		OffsetsTopicPartitions:        bc.Int("offsets.topic.num.partitions"),
		OffsetsTopicReplicationFactor: int16(bc.Int("offsets.topic.replication.factor")),
		OffsetsTopicSegmentBytes:      bc.Int("offsets.topic.segment.bytes"),
		OffsetsRetention:              time.Duration(bc.Int("offsets.retention.minutes")) * time.Minute,
		OffsetsRetentionCheckInterval: ms("offsets.retention.check.interval.ms"),
		OffsetMetadataMaxBytes:        int(bc.Int("offset.metadata.max.bytes")),
		CommitTimeout:                 msi("offsets.commit.timeout.ms"),
		MinSessionTimeout:             msi("group.min.session.timeout.ms"),
		MaxSessionTimeout:             msi("group.max.session.timeout.ms"),
		InitialRebalanceDelay:         msi("group.initial.rebalance.delay.ms"),
		MaxSize:                       int(bc.Int("group.max.size")),
		ConsumerSessionTimeout:        msi("group.consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval:     msi("group.consumer.heartbeat.interval.ms"),
		ConsumerMaxSize:               int(bc.Int("group.consumer.max.size")),
		ConsumerAssignors:             bc.List("group.consumer.assignors"),
		ShareSessionTimeout:           msi("group.share.session.timeout.ms"),
		StreamsMaxSize:                int(bc.Int("group.streams.max.size")),
		ShareHeartbeatInterval:        msi("group.share.heartbeat.interval.ms"),
		ShareMaxSize:                  int(bc.Int("group.share.max.size")),
		ShareInitializeRetryInterval:  msi("group.share.initialize.retry.interval.ms"),
		ShareAssignmentInterval:       zeroIsNegative(msi("group.share.assignment.interval.ms")),
	}
}

// zeroIsNegative keeps a configured 0 from being read as "take the default".
func zeroIsNegative(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func (c *Config) defaults() {
	if c.Clock == nil {
		c.Clock = realClock{}
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Image == nil {
		c.Image = func() *metadatacache.Image { return metadatacache.EmptyImage("") }
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.OffsetsTopicPartitions <= 0 {
		c.OffsetsTopicPartitions = 50
	}
	if c.OffsetsTopicReplicationFactor <= 0 {
		c.OffsetsTopicReplicationFactor = 3
	}
	if c.OffsetsTopicSegmentBytes <= 0 {
		c.OffsetsTopicSegmentBytes = 100 << 20
	}
	def(&c.OffsetsRetention, 7*24*time.Hour)
	def(&c.OffsetsRetentionCheckInterval, 10*time.Minute)
	if c.OffsetMetadataMaxBytes <= 0 {
		c.OffsetMetadataMaxBytes = 4096
	}
	def(&c.CommitTimeout, 5*time.Second)
	def(&c.MinSessionTimeout, 6*time.Second)
	def(&c.MaxSessionTimeout, 30*time.Minute)
	if c.InitialRebalanceDelay < 0 {
		c.InitialRebalanceDelay = 0
	}
	if c.MaxSize <= 0 {
		c.MaxSize = 1<<31 - 1
	}
	def(&c.NewMemberJoinTimeout, 5*time.Minute)
	def(&c.ConsumerSessionTimeout, 45*time.Second)
	def(&c.ConsumerHeartbeatInterval, 5*time.Second)
	if c.ConsumerMaxSize <= 0 {
		c.ConsumerMaxSize = 1<<31 - 1
	}
	if len(c.ConsumerAssignors) == 0 {
		c.ConsumerAssignors = []string{"uniform", "range"}
	}
	def(&c.ShareSessionTimeout, 45*time.Second)
	if c.StreamsMaxSize <= 0 {
		c.StreamsMaxSize = 2147483647
	}
	def(&c.ShareHeartbeatInterval, 5*time.Second)
	if c.ShareMaxSize <= 0 {
		c.ShareMaxSize = 200
	}
	def(&c.ShareInitializeRetryInterval, 30*time.Second)
	def(&c.ShareAssignmentInterval, time.Second)
}

// Coordinator is the group coordinator of one node: a shard per
// __consumer_offsets partition this node leads, each on its own event loop
// of the coordinator runtime. See doc.go.
type Coordinator struct {
	cfg   Config
	log   *zap.Logger
	clock Clock
	rt    *coordinator.Runtime[*shard]

	// mu guards topic creation and the retention timer; it is held while
	// the timer is scheduled or stopped (the clock's lock, a leaf).
	mu       lockrank.Mutex
	creating bool // a CreateTopics for __consumer_offsets is in flight
	closed   bool
	expiry   Timer
	wg       sync.WaitGroup
}

// New returns a coordinator that leads no partition yet; OnImage gives it
// some.
func New(cfg Config) *Coordinator {
	cfg.defaults()
	c := &Coordinator{cfg: cfg, log: cfg.Logger, clock: cfg.Clock}
	c.mu.SetRank(lockrank.GroupCoordinator)
	c.rt = coordinator.New(coordinator.Config[*shard]{
		Name: "group coordinator", Topic: OffsetsTopic, Writer: cfg.Writer, Clock: cfg.Clock, Logger: cfg.Logger,
		NewShard: func(ctx *coordinator.Context) *shard { return newShard(c, ctx) },
	})
	c.scheduleExpiry()
	return c
}

// Close unloads every partition (parked and waiting requests answer
// NOT_COORDINATOR) and stops the timers.
func (c *Coordinator) Close() {
	c.mu.Lock()
	c.closed = true
	if c.expiry != nil {
		c.expiry.Stop()
	}
	c.mu.Unlock()
	c.rt.Close()
	c.wg.Wait()
}

// JavaStringHash is Java's String.hashCode over UTF-16 code units.
func JavaStringHash(s string) int32 { return coordinator.JavaStringHash(s) }

// PartitionFor is Kafka's groupId -> __consumer_offsets partition.
func PartitionFor(groupID string, numPartitions int32) int32 {
	return coordinator.PartitionFor(groupID, numPartitions)
}

func (c *Coordinator) numPartitions() int32 {
	if t := c.cfg.Image().TopicByName(OffsetsTopic); t != nil && len(t.Partitions) > 0 {
		return int32(len(t.Partitions))
	}
	return c.cfg.OffsetsTopicPartitions
}

// PartitionFor returns the __consumer_offsets partition of a group.
func (c *Coordinator) PartitionFor(groupID string) int32 {
	return PartitionFor(groupID, c.numPartitions())
}

// FindCoordinator returns the node leading the group's partition. If
// __consumer_offsets does not exist yet it asks the controller to create
// it and answers COORDINATOR_NOT_AVAILABLE, as Kafka does.
func (c *Coordinator) FindCoordinator(groupID string) (int32, error) {
	img := c.cfg.Image()
	t := img.TopicByName(OffsetsTopic)
	if t == nil {
		c.createTopic()
		return -1, kerr.CoordinatorNotAvailable
	}
	p := t.Partition(PartitionFor(groupID, int32(len(t.Partitions))))
	if p == nil || p.Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable
	}
	return p.Leader, nil
}

// createTopic asks the controller for __consumer_offsets once at a time.
func (c *Coordinator) createTopic() {
	c.mu.Lock()
	if c.creating || c.closed || c.cfg.Controller == nil {
		c.mu.Unlock()
		return
	}
	c.creating = true
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer func() {
			c.mu.Lock()
			c.creating = false
			c.mu.Unlock()
		}()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 30000
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = OffsetsTopic
		t.NumPartitions = c.cfg.OffsetsTopicPartitions
		t.ReplicationFactor = c.cfg.OffsetsTopicReplicationFactor
		for k, v := range map[string]string{
			"cleanup.policy":   "compact",
			"compression.type": "producer",
			"segment.bytes":    strconv.Itoa(int(c.cfg.OffsetsTopicSegmentBytes)),
		} {
			cfg := kmsg.NewCreateTopicsRequestTopicConfig()
			cfg.Name, cfg.Value = k, kmsg.StringPtr(v)
			t.Configs = append(t.Configs, cfg)
		}
		req.Topics = append(req.Topics, t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := c.cfg.Controller.Request(ctx, req)
		if err != nil {
			c.log.Warn("creating __consumer_offsets failed", zap.Error(err))
			return
		}
		for _, rt := range resp.(*kmsg.CreateTopicsResponse).Topics {
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				c.log.Warn("creating __consumer_offsets failed", zap.Error(err))
				return
			}
		}
		c.log.Info("created __consumer_offsets", zap.Int32("partitions", c.cfg.OffsetsTopicPartitions),
			zap.Int16("replication_factor", c.cfg.OffsetsTopicReplicationFactor))
	}()
}

// OnImage loads the shards of the __consumer_offsets partitions this node
// now leads (or leads at a new leader epoch) and unloads those it no
// longer leads. Subscribe it to the metadata cache after the replica
// manager, so a partition is already leader when its shard replays and
// writes.
func (c *Coordinator) OnImage(old, img *metadatacache.Image) {
	if img == nil {
		return
	}
	if old != nil {
		var deleted []string
		for _, t := range old.Topics() {
			if nt := img.TopicByName(t.Name); nt == nil || nt.ID != t.ID {
				deleted = append(deleted, t.Name)
			}
		}
		if len(deleted) > 0 {
			c.onTopicsDeleted(deleted)
			c.onShareTopicsDeleted(old, img)
		}
	}
	want := map[int32]int32{} // partition -> leader epoch
	if t := img.TopicByName(OffsetsTopic); t != nil {
		for id, p := range t.Partitions {
			if p.Leader == c.cfg.NodeID {
				want[id] = p.LeaderEpoch
			}
		}
	}
	c.rt.SetLeaders(want)
}

// onTopicsDeleted removes the committed and pending offsets of deleted
// topics from every loaded partition (Kafka's onPartitionsDeleted), as an
// event on each loop.
func (c *Coordinator) onTopicsDeleted(topics []string) {
	for _, p := range c.rt.Partitions() {
		c.rt.Post(p, "delete-topic-offsets", func(s *shard) error {
			s.deleteTopicOffsets(topics)
			return nil
		})
	}
}

// with runs fn on the group's partition (Kafka's scheduleWriteOperation):
// it returns once fn ran and everything written up to then is committed,
// bounded by offsets.commit.timeout.ms. Errors are fn's, or
// NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and the mapped write and
// timeout errors.
func (c *Coordinator) with(groupID string, fn func(s *shard) error) error {
	return c.run(c.PartitionFor(groupID), fn)
}

func (c *Coordinator) run(partition int32, fn func(s *shard) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.CommitTimeout)
	defer cancel()
	err := c.rt.Run(ctx, partition, fn)
	if errors.Is(err, kerr.RequestTimedOut) {
		return appendErr(err)
	}
	return err
}

// Loading reports whether any partition is still loading.
func (c *Coordinator) Loading() bool { return c.rt.Loading() }

func (c *Coordinator) scheduleExpiry() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.expiry = c.clock.AfterFunc(c.cfg.OffsetsRetentionCheckInterval, func() {
		c.ExpireOffsets()
		c.scheduleExpiry()
	})
}

// ExpireOffsets queues one offsets.retention pass on every loaded
// partition (Kafka's cleanupGroupMetadata): expired offsets get
// tombstones, and empty groups left without offsets are deleted.
// Requests queued after it see its result.
func (c *Coordinator) ExpireOffsets() {
	for _, p := range c.rt.Partitions() {
		c.rt.Post(p, "expire-offsets", func(s *shard) error {
			s.expireOffsets()
			return nil
		})
	}
}

// appendErr is Kafka's appendGroupMetadataErrorToResponseError: how a
// failed write is reported to group clients.
func appendErr(err error) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.NotCoordinator
	}
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas, kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut:
		return kerr.CoordinatorNotAvailable
	case kerr.NotLeaderForPartition, kerr.KafkaStorageError:
		return kerr.NotCoordinator
	case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
		return kerr.UnknownServerError
	}
	return err
}

func code(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// CompleteTransaction writes the end-transaction marker of a producer to a
// __consumer_offsets partition this node leads and makes the producer's
// pending transactional offsets committed or drops them (Kafka's
// GroupCoordinator.completeTransaction, called from WriteTxnMarkers). It
// returns once the marker is committed; errors are kerr errors
// (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, ...).
func (c *Coordinator) CompleteTransaction(ctx context.Context, partition int32, producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	defer cancel()
	return c.rt.Run(ctx, partition, func(s *shard) error {
		return s.completeTxn(producerID, producerEpoch, coordinatorEpoch, commit)
	})
}
