package txn

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// TopicName is the transaction coordinator's topic (Kafka's
// Topic.TRANSACTION_STATE_TOPIC_NAME).
const TopicName = "__transaction_state"

// ProducerIDGenerator hands out fresh producer ids (the broker's block of
// ids from the controller: replication.ReplicaManager). It may wait for a
// block, so the coordinator never calls it on an event loop.
type ProducerIDGenerator interface {
	GenerateProducerID(ctx context.Context) (int64, error)
}

// MarkerSender sends WriteTxnMarkers to a broker (the node's inter-broker
// clients; a request to this very node is served by its own handlers).
// An error is a transport error: the markers are sent again.
type MarkerSender interface {
	WriteTxnMarkers(ctx context.Context, brokerID int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error)
}

// noMarkers fails every send: markers wait until a sender exists.
type noMarkers struct{}

func (noMarkers) WriteTxnMarkers(context.Context, int32, *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	return nil, errors.New("txn: no marker sender")
}

// Config configures a Coordinator. Zero durations and sizes take Kafka's
// defaults.
type Config struct {
	NodeID int32
	// Writer is where __transaction_state partitions are appended and read
	// (the replica manager, or coordinator.MemLog in tests).
	Writer coordinator.Writer
	Clock  coordinator.Clock
	Logger *zap.Logger
	// Image returns the current metadata image: the __transaction_state
	// leaders, the leaders markers go to, the transaction.version feature.
	Image func() *metadatacache.Image
	// Controller creates __transaction_state on first use (CreateTopics).
	Controller  kmsg.Requestor
	ProducerIDs ProducerIDGenerator
	Markers     MarkerSender
	// InterBrokerListener is the listener markers are sent on: a leader
	// without an endpoint there is waited for, as one with no leader.
	InterBrokerListener string

	TopicPartitions        int32         // transaction.state.log.num.partitions (50)
	TopicReplicationFactor int16         // transaction.state.log.replication.factor (3)
	TopicMinISR            int32         // transaction.state.log.min.isr (2)
	TopicSegmentBytes      int32         // transaction.state.log.segment.bytes (100 MiB)
	MaxTimeout             time.Duration // transaction.max.timeout.ms (15 min)
	IDExpiration           time.Duration // transactional.id.expiration.ms (7 days)
	AbortTimedOutInterval  time.Duration // transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s)
	RemoveExpiredInterval  time.Duration // transaction.remove.expired.transaction.cleanup.interval.ms (1 h)
	RequestTimeout         time.Duration // request.timeout.ms (30 s): appends and marker requests
	MaxBatchBytes          int           // message.max.bytes: tombstone batches stay below it
	// MarkerRetryBackoff is the wait before markers are sent again after an
	// error (Kafka's marker channel reconnects after 50 ms).
	MarkerRetryBackoff time.Duration
}

// FromBrokerConfig reads the transaction coordinator settings of
// server.properties.
func FromBrokerConfig(bc *config.Config) Config {
	ms := func(k string) time.Duration { return time.Duration(bc.Int(k)) * time.Millisecond }
	return Config{
		NodeID:                 bc.NodeID,
		InterBrokerListener:    bc.InterBrokerListenerName,
		TopicPartitions:        bc.Int("transaction.state.log.num.partitions"),
		TopicReplicationFactor: int16(bc.Int("transaction.state.log.replication.factor")),
		TopicMinISR:            bc.Int("transaction.state.log.min.isr"),
		TopicSegmentBytes:      bc.Int("transaction.state.log.segment.bytes"),
		MaxTimeout:             ms("transaction.max.timeout.ms"),
		IDExpiration:           ms("transactional.id.expiration.ms"),
		AbortTimedOutInterval:  ms("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
		RemoveExpiredInterval:  ms("transaction.remove.expired.transaction.cleanup.interval.ms"),
		RequestTimeout:         ms("request.timeout.ms"),
		MaxBatchBytes:          int(bc.Int("message.max.bytes")),
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
	if c.Markers == nil {
		c.Markers = noMarkers{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
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
	def(&c.MaxTimeout, 15*time.Minute)
	def(&c.IDExpiration, 7*24*time.Hour)
	def(&c.AbortTimedOutInterval, 10*time.Second)
	def(&c.RemoveExpiredInterval, time.Hour)
	def(&c.RequestTimeout, 30*time.Second)
	def(&c.MarkerRetryBackoff, 50*time.Millisecond)
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = 1048588
	}
}

// Coordinator is the transaction coordinator of one node: a shard per
// __transaction_state partition this node leads, each on its own event loop
// of the coordinator runtime, and the marker channel that writes the
// transaction markers. See doc.go.
type Coordinator struct {
	cfg     Config
	log     *zap.Logger
	rt      *coordinator.Runtime[*shard]
	markers *markerChannel

	ctx    context.Context // ended by Close: background work stops
	cancel context.CancelFunc
	wg     sync.WaitGroup
	busy   atomic.Int64 // background goroutines running (tests wait for quiet)
	opsRun atomic.Int64 // operations run on a loop (tests wait for a request to reach its loop)

	mu       lockrank.Mutex // a leaf
	creating bool           // a CreateTopics for __transaction_state is in flight
	closed   bool
}

// New returns a coordinator that leads no partition yet; OnImage gives it
// some.
func New(cfg Config) *Coordinator {
	cfg.defaults()
	c := &Coordinator{cfg: cfg, log: cfg.Logger}
	c.mu.SetRank(lockrank.TxnCoordinator)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.markers = newMarkerChannel(c)
	c.rt = coordinator.New(coordinator.Config[*shard]{
		Name: "transaction coordinator", Topic: TopicName, Writer: cfg.Writer, Clock: cfg.Clock, Logger: cfg.Logger,
		NewShard: func(ctx *coordinator.Context) *shard { return newShard(c, ctx) },
	})
	return c
}

// Close unloads every partition (requests waiting answer NOT_COORDINATOR),
// stops the marker channel and waits for background work to end.
func (c *Coordinator) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.markers.close()
	c.rt.Close()
	c.wg.Wait()
}

// goBackground runs fn in a goroutine Close waits for.
func (c *Coordinator) goBackground(fn func()) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	c.busy.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer c.busy.Add(-1)
		fn()
	}()
}

func (c *Coordinator) numPartitions() int32 {
	if t := c.cfg.Image().TopicByName(TopicName); t != nil && len(t.Partitions) > 0 {
		return int32(len(t.Partitions))
	}
	return c.cfg.TopicPartitions
}

// PartitionFor returns the __transaction_state partition of a transactional
// id (TransactionStateManager.partitionFor).
func (c *Coordinator) PartitionFor(txnID string) int32 {
	return coordinator.PartitionFor(txnID, c.numPartitions())
}

// transactionVersion is the cluster's finalized transaction.version (Kafka's
// transactionVersionLevel): the record value version, and the rules of
// aborts the coordinator starts itself.
func (c *Coordinator) transactionVersion() int16 {
	v, _ := c.cfg.Image().Feature("transaction.version")
	return v
}

// FindCoordinator returns the node leading the transactional id's
// partition. If __transaction_state does not exist yet it asks the
// controller to create it and answers COORDINATOR_NOT_AVAILABLE, as Kafka
// does (KafkaApis.getCoordinator); so it does while the partition has no
// leader.
func (c *Coordinator) FindCoordinator(txnID string) (int32, error) {
	t := c.cfg.Image().TopicByName(TopicName)
	if t == nil {
		c.createTopic()
		return -1, kerr.CoordinatorNotAvailable
	}
	p := t.Partition(coordinator.PartitionFor(txnID, int32(len(t.Partitions))))
	if p == nil || p.Leader < 0 {
		return -1, kerr.CoordinatorNotAvailable
	}
	return p.Leader, nil
}

// TopicConfigs are the configs __transaction_state is created with
// (TransactionCoordinator.transactionStateTopicConfigs).
func (c *Coordinator) TopicConfigs() map[string]string {
	return map[string]string{
		"unclean.leader.election.enable": "false",
		"compression.type":               "uncompressed",
		"cleanup.policy":                 "compact",
		"min.insync.replicas":            strconv.Itoa(int(c.cfg.TopicMinISR)),
		"segment.bytes":                  strconv.Itoa(int(c.cfg.TopicSegmentBytes)),
	}
}

// createTopic asks the controller for __transaction_state, once at a time.
func (c *Coordinator) createTopic() {
	c.mu.Lock()
	if c.creating || c.closed || c.cfg.Controller == nil {
		c.mu.Unlock()
		return
	}
	c.creating = true
	c.mu.Unlock()
	c.goBackground(func() {
		defer func() {
			c.mu.Lock()
			c.creating = false
			c.mu.Unlock()
		}()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = int32(c.cfg.RequestTimeout / time.Millisecond)
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic = TopicName
		t.NumPartitions = c.cfg.TopicPartitions
		t.ReplicationFactor = c.cfg.TopicReplicationFactor
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
			c.log.Warn("creating __transaction_state failed", zap.Error(err))
			return
		}
		cr, ok := resp.(*kmsg.CreateTopicsResponse)
		if !ok {
			c.log.Warn("creating __transaction_state: unexpected response", zap.String("type", fmt.Sprintf("%T", resp)))
			return
		}
		for _, rt := range cr.Topics {
			if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
				c.log.Warn("creating __transaction_state failed", zap.Error(err))
				return
			}
		}
		c.log.Info("created __transaction_state", zap.Int32("partitions", c.cfg.TopicPartitions),
			zap.Int16("replication_factor", c.cfg.TopicReplicationFactor))
	})
}

// OnImage loads the __transaction_state partitions this node now leads and
// unloads the others (Kafka's onElection / onResignation), and sends again
// the markers that waited for a partition leader. Subscribe it to the
// metadata cache after the replica manager, so that a partition is already
// leader when its shard replays and writes.
func (c *Coordinator) OnImage(_, img *metadatacache.Image) {
	if img == nil {
		return
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
	c.markers.retryUnknown()
}

// Loading reports whether a partition is still loading.
func (c *Coordinator) Loading() bool { return c.rt.Loading() }

// run runs op on the partition's loop, bounded by request.timeout.ms; a
// timeout is COORDINATOR_NOT_AVAILABLE, as Kafka answers an append that
// timed out.
func (c *Coordinator) run(ctx context.Context, partition int32, op func(*shard) error) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	defer cancel()
	err := c.rt.Run(ctx, partition, func(s *shard) error {
		defer c.opsRun.Add(1)
		return op(s)
	})
	if errors.Is(err, kerr.RequestTimedOut) {
		return kerr.CoordinatorNotAvailable
	}
	return err
}

// errNeedProducerID: the operation needs a fresh producer id, which is
// fetched off the loop and handed to the retried operation.
var errNeedProducerID = errors.New("txn: a new producer id is needed")

// runWithProducerID runs op, giving it a fresh producer id when it asks for
// one (a new transactional id, an exhausted epoch).
func (c *Coordinator) runWithProducerID(ctx context.Context, partition int32, op func(s *shard, spare *int64) error) error {
	spare := noProducerID
	for attempt := 0; ; attempt++ {
		err := c.run(ctx, partition, func(s *shard) error { return op(s, &spare) })
		if !errors.Is(err, errNeedProducerID) {
			return err
		}
		if attempt == 2 || c.cfg.ProducerIDs == nil {
			return kerr.CoordinatorLoadInProgress
		}
		id, gerr := c.cfg.ProducerIDs.GenerateProducerID(ctx)
		if gerr != nil {
			return producerIDErr(gerr)
		}
		spare = id
	}
}

// producerIDErr is Errors.forException of a failed id generation: the
// block allocator answers COORDINATOR_LOAD_IN_PROGRESS while it has no
// block.
func producerIDErr(err error) error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// ErrorCode is the Kafka error code of err (0 for nil; wrapped kerr errors
// keep their code; anything else is UNKNOWN_SERVER_ERROR).
func ErrorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// appendErr is how TransactionStateManager.appendTransactionToLog turns a
// failed write into a coordinator error.
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
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return kerr.UnknownServerError
	}
	return ke
}

// ProducerIDAndEpoch is the producer id and epoch an InitProducerId (v3+)
// names when a producer tries to resume (KIP-360).
type ProducerIDAndEpoch struct {
	ID    int64
	Epoch int16
}

// InitProducerID serves InitProducerId for a transactional id
// (TransactionCoordinator.handleInitProducerId): a new producer id for a new
// transactional id, else an epoch bump that fences older producers; an
// ongoing transaction is aborted first (CONCURRENT_TRANSACTIONS until that
// completes); an exhausted epoch moves to a new producer id. It returns
// kerr errors; PRODUCER_FENCED is mapped for old versions by the caller.
func (c *Coordinator) InitProducerID(ctx context.Context, txnID string, timeoutMs int32, expected *ProducerIDAndEpoch) (int64, int16, error) {
	switch {
	case txnID == "":
		return noProducerID, noProducerEpoch, kerr.InvalidRequest
	case timeoutMs <= 0 || int64(timeoutMs) > c.cfg.MaxTimeout.Milliseconds():
		return noProducerID, noProducerEpoch, kerr.InvalidTransactionTimeout
	}
	if c.cfg.Image().TopicByName(TopicName) == nil {
		// The producer finds its coordinator first, which creates the
		// topic; an InitProducerId that came first creates it too.
		c.createTopic()
	}
	var res initResult
	err := c.runWithProducerID(ctx, c.PartitionFor(txnID), func(s *shard, spare *int64) error {
		return s.initProducerID(txnID, timeoutMs, expected, spare, &res)
	})
	if err != nil {
		return noProducerID, noProducerEpoch, err
	}
	return res.producerID, res.producerEpoch, nil
}

// AddPartitions adds partitions to the producer's transaction
// (handleAddPartitionsToTransaction): from clients (AddPartitionsToTxn
// v0-3, AddOffsetsToTxn, clientTV 0) and from partition leaders verifying
// a TV2 write (AddPartitionsToTxn v4+ with VerifyOnly false, clientTV 2).
func (c *Coordinator) AddPartitions(ctx context.Context, txnID string, producerID int64, epoch int16, parts []TopicPartition, clientTV int16) error {
	if txnID == "" {
		return kerr.InvalidRequest
	}
	return c.run(ctx, c.PartitionFor(txnID), func(s *shard) error {
		return s.addPartitions(txnID, producerID, epoch, parts, clientTV)
	})
}

// VerifyPartitions answers a partition leader's KIP-890 verification
// (AddPartitionsToTxn v4+ with VerifyOnly, handleVerifyPartitionsInTransaction):
// NONE for each partition in the ongoing transaction, TRANSACTION_ABORTABLE
// for the others; a producer or state error applies to all of them.
func (c *Coordinator) VerifyPartitions(ctx context.Context, txnID string, producerID int64, epoch int16, parts []TopicPartition) map[TopicPartition]error {
	out := make(map[TopicPartition]error, len(parts))
	all := func(err error) map[TopicPartition]error {
		for _, tp := range parts {
			out[tp] = err
		}
		return out
	}
	if txnID == "" {
		return all(kerr.InvalidRequest)
	}
	var res map[TopicPartition]error
	err := c.run(ctx, c.PartitionFor(txnID), func(s *shard) error {
		r, err := s.verifyPartitions(txnID, producerID, epoch, parts)
		res = r
		return err
	})
	if err != nil {
		return all(err)
	}
	return res
}

// EndTxn commits or aborts the producer's transaction
// (handleEndTransaction). clientTV is 2 for EndTxn v5+ (KIP-890 part 2).
// With TV2 it returns the producer id and epoch the producer continues
// with (the epoch is bumped on every commit and abort, and an exhausted
// epoch moves to a new producer id); with TV0/1 -1 and -1.
func (c *Coordinator) EndTxn(ctx context.Context, txnID string, producerID int64, epoch int16, commit bool, clientTV int16) (int64, int16, error) {
	if txnID == "" {
		return noProducerID, noProducerEpoch, kerr.InvalidRequest
	}
	var res endResult
	err := c.runWithProducerID(ctx, c.PartitionFor(txnID), func(s *shard, spare *int64) error {
		res = endResult{producerID: noProducerID, producerEpoch: noProducerEpoch}
		return s.endTransaction(txnID, producerID, epoch, commit, true, clientTV, spare, &res)
	})
	if err != nil {
		return noProducerID, noProducerEpoch, err
	}
	return res.producerID, res.producerEpoch, nil
}

// TransactionDescription is one DescribeTransactions answer.
type TransactionDescription struct {
	State         State
	ProducerID    int64
	ProducerEpoch int16
	TimeoutMs     int32
	StartMs       int64
	Partitions    []TopicPartition // sorted
}

// DescribeTransaction describes a transactional id
// (handleDescribeTransactions): TRANSACTIONAL_ID_NOT_FOUND if unknown or
// being expired, NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS.
func (c *Coordinator) DescribeTransaction(ctx context.Context, txnID string) (TransactionDescription, error) {
	if txnID == "" {
		return TransactionDescription{}, kerr.InvalidRequest
	}
	var d TransactionDescription
	err := c.run(ctx, c.PartitionFor(txnID), func(s *shard) error {
		m := s.txns[txnID]
		if m == nil || m.state == Dead {
			return kerr.TransactionalIDNotFound
		}
		d = TransactionDescription{State: m.state, ProducerID: m.producerID, ProducerEpoch: m.producerEpoch,
			TimeoutMs: m.timeoutMs, StartMs: m.startMs, Partitions: partitionsOf(m.partitions)}
		return nil
	})
	return d, err
}

// ListFilter filters ListTransactions.
type ListFilter struct {
	States      []string // state names; unknown ones are reported back
	ProducerIDs []int64
	DurationMs  int64   // v1+: only transactions running longer; -1 for all
	Pattern     *string // v2+ (KIP-1152): RE2 regular expression on the whole transactional id
}

// ListedTransaction is one ListTransactions entry.
type ListedTransaction struct {
	TransactionalID string
	ProducerID      int64
	State           State
}

// ListTransactions lists the transactions of every partition this node
// leads (listTransactionStates), sorted by transactional id.
// COORDINATOR_LOAD_IN_PROGRESS while a partition loads;
// INVALID_REGULAR_EXPRESSION for a bad pattern.
func (c *Coordinator) ListTransactions(ctx context.Context, f ListFilter) ([]ListedTransaction, []string, error) {
	if c.rt.Loading() {
		return nil, nil, kerr.CoordinatorLoadInProgress
	}
	filter, unknown, err := newListFilter(f)
	if err != nil {
		return nil, nil, err
	}
	parts := c.rt.Partitions()
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var out []ListedTransaction
	for _, p := range parts {
		var got []ListedTransaction
		err := c.run(ctx, p, func(s *shard) error {
			got = s.list(filter)
			return nil
		})
		if errors.Is(err, kerr.CoordinatorLoadInProgress) {
			return nil, nil, err
		}
		if err != nil {
			continue // unloaded meanwhile: not ours any more
		}
		out = append(out, got...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TransactionalID < out[j].TransactionalID })
	return out, unknown, nil
}
