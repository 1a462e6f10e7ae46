package sharecoord

import (
	"context"
	"errors"
	"fmt"
	"sort"
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

// TopicName is the share coordinator's topic (Kafka's
// Topic.SHARE_GROUP_STATE_TOPIC_NAME).
const TopicName = "__share_group_state"

// Config configures a Coordinator. Zero values take Kafka's defaults
// (ShareCoordinatorConfig).
type Config struct {
	NodeID int32
	// Writer is where __share_group_state partitions are appended and read
	// (the replica manager, or coordinator.MemLog in tests).
	Writer coordinator.Writer
	Clock  coordinator.Clock
	Logger *zap.Logger
	// Image returns the current metadata image: the __share_group_state
	// leaders and the share partitions' topics.
	Image func() *metadatacache.Image
	// Controller creates __share_group_state on first use (CreateTopics).
	Controller kmsg.Requestor

	TopicPartitions        int32 // share.coordinator.state.topic.num.partitions (50)
	TopicReplicationFactor int16 // share.coordinator.state.topic.replication.factor (3)
	TopicMinISR            int16 // share.coordinator.state.topic.min.isr (2)
	TopicSegmentBytes      int32 // share.coordinator.state.topic.segment.bytes (100 MiB)
	// SnapshotUpdateRecordsPerSnapshot is how many ShareUpdates are written
	// between ShareSnapshots of a share partition
	// (share.coordinator.snapshot.update.records.per.snapshot, 500; 0 writes
	// only snapshots). Negative takes the default.
	SnapshotUpdateRecordsPerSnapshot int
	// WriteTimeout bounds an operation, its commit included
	// (share.coordinator.write.timeout.ms, 5 s); a timeout answers
	// COORDINATOR_NOT_AVAILABLE as Kafka's runtime does.
	WriteTimeout time.Duration
	// RequestTimeout bounds the CreateTopics of __share_group_state
	// (request.timeout.ms, 30 s).
	RequestTimeout time.Duration
	// PruneInterval is how often redundant records are deleted
	// (share.coordinator.state.topic.prune.interval.ms, 5 min), if the
	// Writer is a RecordsDeleter; ColdSnapshotInterval how old a share
	// partition's last snapshot may get before a new one is written
	// (share.coordinator.cold.partition.snapshot.interval.ms, 5 min). Both
	// run only while share.version is 1 or more.
	PruneInterval        time.Duration
	ColdSnapshotInterval time.Duration
}

// FromBrokerConfig reads the share coordinator settings of server.properties.
func FromBrokerConfig(bc *config.Config) Config {
	return Config{
		NodeID:                           bc.NodeID,
		TopicPartitions:                  bc.Int("share.coordinator.state.topic.num.partitions"),
		TopicReplicationFactor:           int16(bc.Int("share.coordinator.state.topic.replication.factor")),
		TopicMinISR:                      int16(bc.Int("share.coordinator.state.topic.min.isr")),
		TopicSegmentBytes:                bc.Int("share.coordinator.state.topic.segment.bytes"),
		SnapshotUpdateRecordsPerSnapshot: int(bc.Int("share.coordinator.snapshot.update.records.per.snapshot")),
		WriteTimeout:                     time.Duration(bc.Int("share.coordinator.write.timeout.ms")) * time.Millisecond,
		RequestTimeout:                   time.Duration(bc.Int("request.timeout.ms")) * time.Millisecond,
		PruneInterval:                    time.Duration(bc.Int("share.coordinator.state.topic.prune.interval.ms")) * time.Millisecond,
		ColdSnapshotInterval:             time.Duration(bc.Int("share.coordinator.cold.partition.snapshot.interval.ms")) * time.Millisecond,
	}
}

func (c *Config) defaults() {
	if c.Clock == nil {
		c.Clock = coordinator.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Image == nil {
		c.Image = func() *metadatacache.Image { return metadatacache.EmptyImage("") }
	}
	if c.TopicPartitions <= 0 {
		c.TopicPartitions = 50
	}
	if c.TopicReplicationFactor <= 0 {
		c.TopicReplicationFactor = 3
	}
	if c.TopicMinISR <= 0 {
		c.TopicMinISR = 2
	}
	if c.TopicSegmentBytes <= 0 {
		c.TopicSegmentBytes = 100 << 20
	}
	if c.SnapshotUpdateRecordsPerSnapshot < 0 {
		c.SnapshotUpdateRecordsPerSnapshot = 500
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 5 * time.Second
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 30 * time.Second
	}
	if c.PruneInterval <= 0 {
		c.PruneInterval = 5 * time.Minute
	}
	if c.ColdSnapshotInterval <= 0 {
		c.ColdSnapshotInterval = 5 * time.Minute
	}
}

// Coordinator is the share coordinator of one node (Kafka's
// ShareCoordinatorService): a shard per __share_group_state partition this
// node leads, each on its own event loop of the coordinator runtime. See
// doc.go.
type Coordinator struct {
	cfg Config
	log *zap.Logger
	rt  *coordinator.Runtime[*shard]

	ctx    context.Context // ended by Close: topic creation stops
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       lockrank.Mutex // a leaf
	creating bool           // a CreateTopics for __share_group_state is in flight
	closed   bool
}

// New returns a coordinator that leads no partition yet; OnImage gives it
// some.
func New(cfg Config) *Coordinator {
	cfg.defaults()
	c := &Coordinator{cfg: cfg, log: cfg.Logger}
	c.mu.SetRank(lockrank.ShareCoordinator)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.rt = coordinator.New(coordinator.Config[*shard]{
		Name: "share coordinator", Topic: TopicName, Writer: cfg.Writer, Clock: cfg.Clock, Logger: cfg.Logger,
		NewShard: func(ctx *coordinator.Context) *shard { return newShard(c, ctx) },
	})
	return c
}

// Close unloads every partition (requests waiting answer NOT_COORDINATOR)
// and waits for a topic creation in flight.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.rt.Close()
	c.wg.Wait()
}

// OnImage loads the __share_group_state partitions this node now leads and
// unloads the others. Subscribe it after the replica manager, so that a
// partition is leader when its shard replays and writes.
//
// Share partitions of topics deleted since old lose their state
// (ShareCoordinatorService.handleTopicsDeletion): every loaded partition
// writes their tombstones.
func (c *Coordinator) OnImage(old, img *metadatacache.Image) {
	if img == nil {
		return
	}
	if old != nil && !old.SameTopics(img) {
		deleted := map[[16]byte]bool{}
		for _, t := range old.Topics() {
			if img.TopicByID(t.ID) == nil {
				deleted[t.ID] = true
			}
		}
		if len(deleted) > 0 {
			for _, p := range c.rt.Partitions() {
				c.rt.Post(p, "on-topics-deleted", func(s *shard) error {
					s.deleteTopics(deleted)
					return nil
				})
			}
		}
	}
	lead := map[int32]int32{}
	if t := img.TopicByName(TopicName); t != nil {
		for id, p := range t.Partitions {
			if p.Leader == c.cfg.NodeID {
				lead[id] = p.LeaderEpoch
			}
		}
	}
	c.rt.SetLeaders(lead)
}

// Loading reports whether a partition is still loading.
func (c *Coordinator) Loading() bool { return c.rt.Loading() }

// NumPartitions is the partition count of __share_group_state: the
// topic's in the image, or share.coordinator.state.topic.num.partitions
// before it exists.
func (c *Coordinator) NumPartitions() int32 {
	return numPartitions(c.cfg.Image(), c.cfg.TopicPartitions)
}

func numPartitions(img *metadatacache.Image, configured int32) int32 {
	if img != nil {
		if t := img.TopicByName(TopicName); t != nil && len(t.Partitions) > 0 {
			return int32(len(t.Partitions))
		}
	}
	return configured
}

// PartitionFor is ShareCoordinatorService.partitionFor: the partition of a
// share partition's coordinator key (sharestate.Key).
func PartitionFor(key string, numPartitions int32) int32 {
	return coordinator.PartitionFor(key, numPartitions)
}

// FindCoordinator returns the node leading the partition of a coordinator
// key. If __share_group_state does not exist yet it asks the controller to
// create it and answers COORDINATOR_NOT_AVAILABLE, as Kafka does
// (KafkaApis.getCoordinator); so it does while the partition has no leader.
func (c *Coordinator) FindCoordinator(key string) (int32, error) {
	t := c.cfg.Image().TopicByName(TopicName)
	if t == nil {
		c.CreateTopic()
		return -1, kerr.CoordinatorNotAvailable
	}
	p := t.Partition(PartitionFor(key, int32(len(t.Partitions))))
	if p == nil || p.Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable
	}
	return p.Leader, nil
}

// TopicConfigs are the configs __share_group_state is created with
// (ShareCoordinatorService.shareGroupStateTopicConfigs): time retention
// off, pruning is the coordinator's (DeleteRecords below the oldest
// snapshot still needed).
func (c *Coordinator) TopicConfigs() map[string]string {
	return map[string]string{
		"cleanup.policy":      "delete",
		"compression.type":    "producer",
		"segment.bytes":       strconv.Itoa(int(c.cfg.TopicSegmentBytes)),
		"min.insync.replicas": strconv.Itoa(int(c.cfg.TopicMinISR)),
		"retention.ms":        "-1",
	}
}

// CreateTopic asks the controller for __share_group_state, once at a time,
// in the background.
func (c *Coordinator) CreateTopic() {
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
		c.createTopic()
	}()
}

func (c *Coordinator) createTopic() {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(c.cfg.RequestTimeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = TopicName, c.cfg.TopicPartitions, c.cfg.TopicReplicationFactor
	cfgs := c.TopicConfigs()
	names := make([]string, 0, len(cfgs))
	for k := range cfgs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		tc := kmsg.NewCreateTopicsRequestTopicConfig()
		tc.Name, tc.Value = k, kmsg.StringPtr(cfgs[k])
		t.Configs = append(t.Configs, tc)
	}
	req.Topics = append(req.Topics, t)
	ctx, cancel := context.WithTimeout(c.ctx, c.cfg.RequestTimeout)
	defer cancel()
	resp, err := c.cfg.Controller.Request(ctx, req)
	if err != nil {
		c.log.Warn("creating __share_group_state failed", zap.Error(err))
		return
	}
	cr, ok := resp.(*kmsg.CreateTopicsResponse)
	if !ok {
		c.log.Warn("creating __share_group_state: unexpected response", zap.String("type", fmt.Sprintf("%T", resp)))
		return
	}
	for _, rt := range cr.Topics {
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			c.log.Warn("creating __share_group_state failed", zap.Error(err))
			return
		}
	}
	c.log.Info("created __share_group_state", zap.Int32("partitions", c.cfg.TopicPartitions),
		zap.Int16("replication_factor", c.cfg.TopicReplicationFactor))
}

// keyOp is one share partition of a request, with the operation that
// answers it on its shard.
type keyOp struct {
	key recordKey
	run func(s *shard) result
}

// runKeys runs every key's operation on the loop of its coordinator
// partition, the partitions in parallel, and returns the results in the
// keys' order (Kafka's ShareCoordinatorService schedules one operation per
// key). A partition this node does not lead, or that loads, answers every
// key of it with the runtime's error, prefixed "Unable to <what>: ".
func (c *Coordinator) runKeys(ctx context.Context, what string, ops []keyOp) []result {
	out := make([]result, len(ops))
	n := c.NumPartitions()
	byPartition := map[int32][]int{}
	for i, op := range ops {
		p := PartitionFor(sharestate.Key(op.key.group, op.key.topicID, op.key.partition), n)
		byPartition[p] = append(byPartition[p], i)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.WriteTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for p, idx := range byPartition {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.rt.Run(ctx, p, func(s *shard) error {
				for _, i := range idx {
					out[i] = ops[i].run(s)
				}
				return nil
			})
			if err == nil {
				for _, i := range idx {
					if r := &out[i]; r.prefix && r.msg != nil {
						msg := "Unable to " + what + ": " + *r.msg
						r.msg, r.prefix = &msg, false
					}
				}
				return
			}
			ke := asKerr(err)
			if ke == kerr.RequestTimedOut {
				ke = kerr.CoordinatorNotAvailable
			}
			for _, i := range idx {
				out[i] = errResult(ke, "Unable to "+what+": "+KafkaMessage(ke))
			}
		}()
	}
	wg.Wait()
	return out
}

// emptyRequest is ShareCoordinatorService's check before any work: no
// topics, a topic without partitions, or no group id answer an empty
// response.
func emptyRequest(group string, topics int, partitions func(i int) int) bool {
	if group == "" || topics == 0 {
		return true
	}
	for i := 0; i < topics; i++ {
		if partitions(i) == 0 {
			return true
		}
	}
	return false
}

func toBatches[T any](in []T, conv func(T) stateBatch) []stateBatch {
	out := make([]stateBatch, len(in))
	for i, b := range in {
		out[i] = conv(b)
	}
	return out
}

// WriteState serves WriteShareGroupState (ShareCoordinatorService.writeState).
func (c *Coordinator) WriteState(ctx context.Context, req *kmsg.WriteShareGroupStateRequest) *kmsg.WriteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	if emptyRequest(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var ops []keyOp
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := recordKey{group: req.GroupID, topicID: t.TopicID, partition: p.Partition}
			batches := toBatches(p.StateBatches, func(b kmsg.WriteShareGroupStateRequestTopicPartitionStateBatch) stateBatch {
				return stateBatch{first: b.FirstOffset, last: b.LastOffset, state: b.DeliveryState, count: b.DeliveryCount}
			})
			ops = append(ops, keyOp{key: k, run: func(s *shard) result {
				return s.writeState(k, p.LeaderEpoch, p.StateEpoch, p.StartOffset, p.DeliveryCompleteCount, batches)
			}})
		}
	}
	res := c.runKeys(ctx, "write share group state", ops)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res[i].code, res[i].msg
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ReadState serves ReadShareGroupState (ShareCoordinatorService.readState,
// a write operation: it may record the reader's leader epoch).
func (c *Coordinator) ReadState(ctx context.Context, req *kmsg.ReadShareGroupStateRequest) *kmsg.ReadShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	if emptyRequest(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var ops []keyOp
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := recordKey{group: req.GroupID, topicID: t.TopicID, partition: p.Partition}
			ops = append(ops, keyOp{key: k, run: func(s *shard) result { return s.readState(k, p.LeaderEpoch) }})
		}
	}
	res := c.runKeys(ctx, "read share group state", ops)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			r := res[i]
			i++
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, r.code, r.msg
			if r.code == 0 {
				rp.StateEpoch, rp.StartOffset = r.state.stateEpoch, r.state.startOffset
				rp.StateBatches = []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{}
				for _, b := range r.state.batches {
					sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
					sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.first, b.last, b.state, b.count
					rp.StateBatches = append(rp.StateBatches, sb)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// ReadStateSummary serves ReadShareGroupStateSummary
// (ShareCoordinatorService.readStateSummary).
func (c *Coordinator) ReadStateSummary(ctx context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) *kmsg.ReadShareGroupStateSummaryResponse {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateSummaryResponse)
	if emptyRequest(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var ops []keyOp
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := recordKey{group: req.GroupID, topicID: t.TopicID, partition: p.Partition}
			ops = append(ops, keyOp{key: k, run: func(s *shard) result { return s.readStateSummary(k) }})
		}
	}
	res := c.runKeys(ctx, "read share group state summary", ops)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			r := res[i]
			i++
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, r.code, r.msg
			if r.code == 0 {
				rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = r.state.stateEpoch, r.leaderEpoch, r.state.startOffset
				rp.DeliveryCompleteCount = r.state.deliveryCompleteCount
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// DeleteState serves DeleteShareGroupState (ShareCoordinatorService.deleteState).
func (c *Coordinator) DeleteState(ctx context.Context, req *kmsg.DeleteShareGroupStateRequest) *kmsg.DeleteShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	if emptyRequest(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var ops []keyOp
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := recordKey{group: req.GroupID, topicID: t.TopicID, partition: p.Partition}
			ops = append(ops, keyOp{key: k, run: func(s *shard) result { return s.deleteState(k) }})
		}
	}
	res := c.runKeys(ctx, "delete share group state", ops)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res[i].code, res[i].msg
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// InitializeState serves InitializeShareGroupState
// (ShareCoordinatorService.initializeState).
func (c *Coordinator) InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) *kmsg.InitializeShareGroupStateResponse {
	resp := req.ResponseKind().(*kmsg.InitializeShareGroupStateResponse)
	if emptyRequest(req.GroupID, len(req.Topics), func(i int) int { return len(req.Topics[i].Partitions) }) {
		return resp
	}
	var ops []keyOp
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			k := recordKey{group: req.GroupID, topicID: t.TopicID, partition: p.Partition}
			ops = append(ops, keyOp{key: k, run: func(s *shard) result { return s.initializeState(k, p.StateEpoch, p.StartOffset) }})
		}
	}
	res := c.runKeys(ctx, "initialize share group state", ops)
	i := 0
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, res[i].code, res[i].msg
			rt.Partitions = append(rt.Partitions, rp)
			i++
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
