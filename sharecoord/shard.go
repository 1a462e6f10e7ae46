package sharecoord

import (
	"errors"
	"math"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// entry is the state of one share partition (Kafka's ShareCoordinatorShard
// keeps it in four maps: shareStateMap, leaderEpochMap, stateEpochMap,
// snapshotUpdateCount; they live and die together here).
type entry struct {
	state snapshotValue // ShareGroupOffset: the snapshot with the updates since merged in
	// leaderEpoch and stateEpoch are the highest epochs replayed, which
	// requests are fenced against.
	leaderEpoch   int32
	stateEpoch    int32
	hasStateEpoch bool // a ShareUpdate alone carries no state epoch
	// updates counts ShareUpdates since the last snapshot that reset it
	// (snapshotUpdateCount: absent until the first update, which counts 0).
	updates    int
	hasUpdates bool
}

// shard is the share state of one __share_group_state partition. The
// runtime calls it on the partition's event loop only: no lock.
type shard struct {
	c      *Coordinator
	ctx    *coordinator.Context
	log    *zap.Logger
	states map[recordKey]*entry
	// snapshots and redundant are Kafka's ShareCoordinatorOffsetsManager:
	// the offset of each key's latest snapshot (or tombstone), and the
	// smallest of them, below which every record is redundant (each live
	// key has a later snapshot) and may be deleted.
	snapshots map[recordKey]int64
	redundant int64
	pruned    int64 // the offset records were last deleted below
}

func newShard(c *Coordinator, ctx *coordinator.Context) *shard {
	return &shard{c: c, ctx: ctx, log: ctx.Logger(), states: map[recordKey]*entry{},
		snapshots: map[recordKey]int64{}, redundant: math.MaxInt64}
}

// Replay applies one record read back while loading (Kafka's
// ShareCoordinatorShard.replay): a snapshot replaces the state, an update
// is merged into it, a snapshot tombstone deletes it. Unknown record types
// and versions are skipped, as Kafka's serde does; so are corrupt records,
// with a warning.
func (s *shard) Replay(r coordinator.Loaded) error {
	if r.Marker != nil || r.Key == nil {
		return nil
	}
	switch err := s.replay(r.Offset, r.Key, r.Value); {
	case errors.Is(err, errUnknownRecordType), errors.Is(err, errUnknownValueVersion):
		s.log.Debug("skipping a __share_group_state record of an unknown type or version", zap.Int64("offset", r.Offset), zap.Error(err))
	case err != nil:
		s.log.Warn("skipping a corrupt __share_group_state record", zap.Int64("offset", r.Offset), zap.Error(err))
	}
	return nil
}

func (s *shard) replay(offset int64, key, value []byte) error {
	typ, k, err := decodeKey(key)
	if err != nil {
		return err
	}
	switch typ {
	case recordTypeSnapshot:
		if value == nil {
			delete(s.states, k)
			s.snapshotAt(k, offset, true)
			return nil
		}
		v, err := decodeSnapshotValue(value)
		if err != nil {
			return err
		}
		s.applySnapshot(k, v)
		s.snapshotAt(k, offset, false)
	case recordTypeUpdate:
		if value == nil {
			return errors.New("a ShareUpdate tombstone")
		}
		v, err := decodeUpdateValue(value)
		if err != nil {
			return err
		}
		s.applyUpdate(k, v)
	}
	return nil
}

// snapshotAt is ShareCoordinatorOffsetsManager.updateState: key's latest
// snapshot (or its tombstone, deleted) is at offset.
func (s *shard) snapshotAt(k recordKey, offset int64, deleted bool) {
	s.redundant = min(s.redundant, offset)
	s.snapshots[k] = offset
	if len(s.snapshots) > 0 {
		low := int64(math.MaxInt64)
		for _, o := range s.snapshots {
			low = min(low, o)
		}
		s.redundant = low
	}
	if deleted {
		delete(s.snapshots, k)
	}
}

// lastRedundantOffset is ShareCoordinatorOffsetsManager.lastRedundantOffset:
// the offset records may be deleted below, or false.
func (s *shard) lastRedundantOffset() (int64, bool) {
	if s.redundant <= 0 || s.redundant == math.MaxInt64 {
		return 0, false
	}
	return s.redundant, true
}

func (s *shard) sortedKeys() []recordKey {
	keys := make([]recordKey, 0, len(s.states))
	for k := range s.states {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if a.topicID != b.topicID {
			return string(a.topicID[:]) < string(b.topicID[:])
		}
		return a.partition < b.partition
	})
	return keys
}

// applySnapshot is handleShareSnapshot.
func (s *shard) applySnapshot(k recordKey, v snapshotValue) {
	e := s.states[k]
	if e == nil {
		e = &entry{leaderEpoch: v.leaderEpoch, stateEpoch: v.stateEpoch, hasStateEpoch: true}
		s.states[k] = e
	}
	e.leaderEpoch = max(e.leaderEpoch, v.leaderEpoch)
	if !e.hasStateEpoch || e.stateEpoch < v.stateEpoch {
		e.stateEpoch, e.hasStateEpoch = v.stateEpoch, true
	}
	e.state = v
	if e.hasUpdates && e.updates >= s.c.cfg.SnapshotUpdateRecordsPerSnapshot {
		e.updates = 0
	}
}

// applyUpdate is handleShareUpdate and ShareCoordinatorShard.merge: -1 as
// the start offset or leader epoch keeps the current one; the batches are
// combined from the (new) start offset.
func (s *shard) applyUpdate(k recordKey, v updateValue) {
	e := s.states[k]
	if e == nil {
		// ShareGroupOffset.fromRecord(ShareUpdateValue): no state epoch,
		// no timestamps.
		s.states[k] = &entry{leaderEpoch: v.leaderEpoch, state: snapshotValue{snapshotEpoch: v.snapshotEpoch,
			leaderEpoch: v.leaderEpoch, startOffset: v.startOffset, deliveryCompleteCount: v.deliveryCompleteCount,
			batches: v.batches}, hasUpdates: true}
		return
	}
	e.leaderEpoch = max(e.leaderEpoch, v.leaderEpoch)
	cur := e.state
	start := v.startOffset
	if start == -1 {
		start = cur.startOffset
	}
	leader := v.leaderEpoch
	if leader == -1 {
		leader = cur.leaderEpoch
	}
	e.state = snapshotValue{snapshotEpoch: cur.snapshotEpoch, stateEpoch: cur.stateEpoch, leaderEpoch: leader,
		startOffset: start, deliveryCompleteCount: v.deliveryCompleteCount,
		batches: combineBatches(cur.batches, v.batches, start), createMs: cur.createMs, writeMs: cur.writeMs}
	if e.hasUpdates {
		e.updates++
	} else {
		e.hasUpdates = true
	}
}

// Loaded starts the shard's periodic jobs (ShareCoordinatorService's
// setupPeriodicJobs, per partition here): pruning redundant records and
// snapshotting cold share partitions. Timers stop when it unloads.
func (s *shard) Loaded() {
	s.ctx.Schedule(timerPrune, s.c.cfg.PruneInterval, s.prune)
	s.ctx.Schedule(timerColdSnapshots, s.c.cfg.ColdSnapshotInterval, s.snapshotColdPartitions)
}

func (s *shard) Unloaded() {}

// writeRecord appends one record and applies it once the append
// succeeded (write-then-apply: a failed append leaves the state as it
// was). It returns the coordinator error of a failed append.
func (s *shard) writeRecord(key, value []byte) error {
	rec := coordinator.Record{Key: key, Value: value}
	if err := s.ctx.Append(coordinator.Batch{ProducerID: coordinator.NoProducer, Records: []coordinator.Record{rec}}); err != nil {
		return appendErr(err)
	}
	if err := s.replay(s.ctx.LastWritten()-1, key, value); err != nil {
		// Our own encoding: cannot happen short of a bug.
		s.log.Error("applying a written __share_group_state record", zap.Error(err))
	}
	return nil
}

// result is one partition's answer: an error code and message, and what
// reads return.
type result struct {
	code   int16
	msg    *string
	prefix bool // the operation failed: "Unable to <what>: " goes before msg
	// Read and ReadSummary.
	state       snapshotValue
	leaderEpoch int32
}

func errResult(err *kerr.Error, msg string) result {
	if msg == "" {
		msg = KafkaMessage(err)
	}
	return result{code: err.Code, msg: &msg}
}

// opFailed is the answer of a partition whose write failed: Kafka fails
// the operation, and the service answers "Unable to <what>: <message>"
// (runKeys adds the prefix).
func opFailed(err error) result {
	r := errResult(asKerr(err), "")
	r.prefix = true
	return r
}

// KafkaMessage is Errors.message() of Kafka 4.4 for err: kerr's
// description, which for a few errors differs from Kafka's text.
func KafkaMessage(err *kerr.Error) string {
	if err == kerr.FencedLeaderEpoch {
		return "The leader epoch in the request is older than the epoch on the broker."
	}
	return err.Description
}

// The messages of Kafka's ShareCoordinatorShard exceptions.
const (
	msgNegativePartition   = "The partition id cannot be a negative number."
	msgNegativeLeaderEpoch = "The leader epoch cannot be a negative number."
	msgNegativeStateEpoch  = "The state epoch cannot be a negative number."
	msgWriteUninitialized  = "Write operation on uninitialized share partition not allowed."
	msgReadUninitialized   = "Read operation on uninitialized share partition not allowed."
)

// unknownPartition reports whether the image lacks the topic partition
// (Kafka answers UNKNOWN_TOPIC_OR_PARTITION then, also with no image).
func (s *shard) unknownPartition(k recordKey) bool {
	img := s.c.cfg.Image()
	return img == nil || img.Partition(k.topicID, k.partition) == nil
}

func (s *shard) fenced(k recordKey) {
	s.log.Debug("share state request fenced", zap.String("group", k.group),
		zap.String("topic_id", sharestate.UUIDString(k.topicID)), zap.Int32("partition", k.partition))
}

// writeState is ShareCoordinatorShard.writeState for one partition.
func (s *shard) writeState(k recordKey, leaderEpoch, stateEpoch int32, startOffset int64, dcc int32, batches []stateBatch) result {
	switch {
	case k.partition < 0:
		return errResult(kerr.InvalidRequest, msgNegativePartition)
	case leaderEpoch < 0:
		return errResult(kerr.InvalidRequest, msgNegativeLeaderEpoch)
	case stateEpoch < 0:
		return errResult(kerr.InvalidRequest, msgNegativeStateEpoch)
	}
	e := s.states[k]
	switch {
	case e == nil:
		return errResult(kerr.InvalidRequest, msgWriteUninitialized)
	case e.leaderEpoch > leaderEpoch:
		s.log.Error("Write request leader epoch is smaller than last recorded", zap.Int32("current", e.leaderEpoch), zap.Int32("requested", leaderEpoch))
		return errResult(kerr.FencedLeaderEpoch, "")
	case e.hasStateEpoch && e.stateEpoch > stateEpoch:
		s.fenced(k)
		return errResult(kerr.FencedStateEpoch, "")
	case s.unknownPartition(k):
		return errResult(kerr.UnknownTopicOrPartition, "")
	}
	key, value := s.stateRecord(k, e, e.state.leaderEpoch, startOffset, dcc, batches)
	if err := s.writeRecord(key, value); err != nil {
		return opFailed(err)
	}
	return result{}
}

// stateRecord is generateShareStateRecord: a ShareSnapshot once
// share.coordinator.snapshot.update.records.per.snapshot updates were
// written since the last one (with every batch so far combined), a
// ShareUpdate (with the request's batches only) otherwise. The start
// offset never moves back; the delivery complete count goes with the
// start offset it was counted from.
func (s *shard) stateRecord(k recordKey, e *entry, leaderEpoch int32, startOffset int64, dcc int32, batches []stateBatch) ([]byte, []byte) {
	cur := e.state
	start := max(startOffset, cur.startOffset)
	switch {
	case startOffset == cur.startOffset:
		dcc = max(dcc, cur.deliveryCompleteCount)
	case startOffset < cur.startOffset:
		dcc = cur.deliveryCompleteCount
	}
	if e.updates >= s.c.cfg.SnapshotUpdateRecordsPerSnapshot {
		now := s.ctx.NowMs()
		return encodeKey(recordTypeSnapshot, k), encodeSnapshotValue(snapshotValue{snapshotEpoch: cur.snapshotEpoch + 1,
			stateEpoch: cur.stateEpoch, leaderEpoch: leaderEpoch, startOffset: start, deliveryCompleteCount: dcc,
			batches: combineBatches(cur.batches, batches, start), createMs: now, writeMs: now})
	}
	return encodeKey(recordTypeUpdate, k), encodeUpdateValue(updateValue{snapshotEpoch: cur.snapshotEpoch,
		leaderEpoch: leaderEpoch, startOffset: start, deliveryCompleteCount: dcc,
		batches: combineBatches(nil, batches, start)})
}

// readState is readStateAndMaybeUpdateLeaderEpoch: the state as it is,
// and, when the reader's leader epoch is not the one recorded, a record
// that makes it the recorded one (which fences writes from older leaders
// of the share partition).
func (s *shard) readState(k recordKey, leaderEpoch int32) result {
	switch {
	case k.partition < 0:
		return errResult(kerr.InvalidRequest, msgNegativePartition)
	case leaderEpoch < 0:
		return errResult(kerr.InvalidRequest, msgNegativeLeaderEpoch)
	}
	e := s.states[k]
	switch {
	case e == nil:
		return errResult(kerr.InvalidRequest, msgReadUninitialized)
	case e.leaderEpoch > leaderEpoch:
		s.log.Error("Read request leader epoch is smaller than last recorded", zap.Int32("current", e.leaderEpoch), zap.Int32("requested", leaderEpoch))
		return errResult(kerr.FencedLeaderEpoch, "")
	case s.unknownPartition(k):
		return errResult(kerr.UnknownTopicOrPartition, "")
	}
	res := result{state: e.state}
	res.state.batches = append([]stateBatch(nil), e.state.batches...)
	if e.leaderEpoch == leaderEpoch {
		return res
	}
	s.log.Info("read with leader epoch update", zap.String("group", k.group),
		zap.String("topic_id", sharestate.UUIDString(k.topicID)), zap.Int32("partition", k.partition), zap.Int32("leader_epoch", leaderEpoch))
	key, value := s.stateRecord(k, e, leaderEpoch, e.state.startOffset, e.state.deliveryCompleteCount, nil)
	if err := s.writeRecord(key, value); err != nil {
		return opFailed(err)
	}
	return res
}

// readStateSummary is ShareCoordinatorShard.readStateSummary: an
// uninitialized partition answers start offset -1, delivery complete count
// -1 and epochs 0.
func (s *shard) readStateSummary(k recordKey) result {
	switch {
	case k.partition < 0:
		return errResult(kerr.InvalidRequest, msgNegativePartition)
	case s.unknownPartition(k):
		return errResult(kerr.UnknownTopicOrPartition, "")
	}
	e := s.states[k]
	if e == nil {
		return result{state: snapshotValue{startOffset: -1, deliveryCompleteCount: -1}}
	}
	return result{state: e.state, leaderEpoch: e.state.leaderEpoch}
}

// deleteState is ShareCoordinatorShard.deleteState: a tombstone of the
// snapshot key; deleting what does not exist succeeds without a record.
func (s *shard) deleteState(k recordKey) result {
	switch {
	case k.partition < 0:
		return errResult(kerr.InvalidRequest, msgNegativePartition)
	case s.unknownPartition(k):
		return errResult(kerr.UnknownTopicOrPartition, "")
	}
	if s.states[k] == nil {
		s.log.Warn("Attempted to delete non-existent share partition", zap.String("group", k.group),
			zap.String("topic_id", sharestate.UUIDString(k.topicID)), zap.Int32("partition", k.partition))
		return result{}
	}
	if err := s.writeRecord(encodeKey(recordTypeSnapshot, k), nil); err != nil {
		return opFailed(err)
	}
	return result{}
}

// initializeState is ShareCoordinatorShard.initializeState: a new snapshot
// (the next snapshot epoch if state exists) at the request's state epoch
// and start offset, leader epoch 0, no batches; the delivery complete
// count is 0 from a known start offset and -1 from none.
func (s *shard) initializeState(k recordKey, stateEpoch int32, startOffset int64) result {
	switch {
	case k.partition < 0:
		return errResult(kerr.InvalidRequest, msgNegativePartition)
	case stateEpoch < 0:
		return errResult(kerr.InvalidRequest, msgNegativeStateEpoch)
	}
	e := s.states[k]
	switch {
	case e != nil && e.hasStateEpoch && e.stateEpoch > stateEpoch:
		s.fenced(k)
		return errResult(kerr.FencedStateEpoch, "")
	case s.unknownPartition(k):
		return errResult(kerr.UnknownTopicOrPartition, "")
	}
	snapshotEpoch := int32(0)
	if e != nil {
		snapshotEpoch = e.state.snapshotEpoch + 1
	}
	dcc := int32(0)
	if startOffset == -1 {
		dcc = noDeliveryCompleteCount
	}
	now := s.ctx.NowMs()
	v := snapshotValue{snapshotEpoch: snapshotEpoch, stateEpoch: stateEpoch, startOffset: startOffset,
		deliveryCompleteCount: dcc, createMs: now, writeMs: now}
	if err := s.writeRecord(encodeKey(recordTypeSnapshot, k), encodeSnapshotValue(v)); err != nil {
		return opFailed(err)
	}
	return result{}
}

// appendErr is CoordinatorOperationExceptionHelper's mapping of a failed
// write to a coordinator error.
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
	return ke
}

func asKerr(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}
