package group

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// shard is the coordinator state of one __consumer_offsets partition
// (Kafka's GroupCoordinatorShard): its groups, committed offsets and
// pending transactional offsets. It implements coordinator.Shard: the
// runtime calls it on the partition's event loop only, and so do the
// operations and timers it runs, so it has no lock of its own.
type shard struct {
	c   *Coordinator
	ctx *coordinator.Context // nil in replay-only shards (fuzz tests)

	groups map[string]*classicGroup
	cgs    map[string]*consumerGroup
	sgs    map[string]*shareGroup   // share groups (share.go)
	stgs   map[string]*streamsGroup // streams groups (streams.go)
	// shareMeta is each share group's ShareGroupStatePartitionMetadata
	// (share_state.go); it may outlive or precede its group.
	shareMeta map[string]*shareStateMeta
	// offsets are the committed offsets.
	offsets offsetMap
	// pending are the transactional offsets of ongoing transactions, by
	// producer id (Kafka's pendingTransactionalOffsets): moved to offsets
	// by the COMMIT marker, dropped by ABORT, invisible to OffsetFetch
	// until then.
	pending map[int64]offsetMap
	// openTxns are the producers with a pending offset, by partition
	// (Kafka's OpenTransactions).
	openTxns openTxns
}

// openTxns holds, for each group, topic and partition, the producers
// whose ongoing transaction holds an offset for it.
type openTxns map[string]map[string]map[int32]map[int64]struct{}

func (o openTxns) add(group, topic string, partition int32, producerID int64) {
	g := o[group]
	if g == nil {
		g = map[string]map[int32]map[int64]struct{}{}
		o[group] = g
	}
	t := g[topic]
	if t == nil {
		t = map[int32]map[int64]struct{}{}
		g[topic] = t
	}
	ps := t[partition]
	if ps == nil {
		ps = map[int64]struct{}{}
		t[partition] = ps
	}
	ps[producerID] = struct{}{}
}

// remove drops producerID from the partition's set.
func (o openTxns) remove(group, topic string, partition int32, producerID int64) {
	ps := o[group][topic][partition]
	delete(ps, producerID)
	if len(ps) == 0 {
		o.clear(group, topic, partition)
	}
}

// clear drops the partition's set.
func (o openTxns) clear(group, topic string, partition int32) {
	t := o[group][topic]
	delete(t, partition)
	if len(t) == 0 {
		delete(o[group], topic)
	}
	if len(o[group]) == 0 {
		delete(o, group)
	}
}

func (o openTxns) producers(group, topic string, partition int32) map[int64]struct{} {
	return o[group][topic][partition]
}

// offsetEntry is a committed offset (Kafka's OffsetAndMetadata).
type offsetEntry struct {
	offset      int64
	leaderEpoch int32
	metadata    string
	commitTs    int64
	expireTs    int64 // -1: none (v1 value records only)
	// recordOffset is where the record sits in __consumer_offsets: when a
	// transaction commits, its offsets replace committed ones only if they
	// were written later (compaction keeps the last record of a key, so
	// this is what a reload would see).
	recordOffset int64
}

// offsetMap holds offsets by group, topic and partition.
type offsetMap map[string]map[string]map[int32]offsetEntry

func (m offsetMap) get(group, topic string, partition int32) (offsetEntry, bool) {
	o, ok := m[group][topic][partition]
	return o, ok
}

func (m offsetMap) set(group, topic string, partition int32, o offsetEntry) {
	g := m[group]
	if g == nil {
		g = map[string]map[int32]offsetEntry{}
		m[group] = g
	}
	t := g[topic]
	if t == nil {
		t = map[int32]offsetEntry{}
		g[topic] = t
	}
	t[partition] = o
}

func (m offsetMap) remove(group, topic string, partition int32) {
	g := m[group]
	if g == nil {
		return
	}
	if t := g[topic]; t != nil {
		delete(t, partition)
		if len(t) == 0 {
			delete(g, topic)
		}
	}
	if len(g) == 0 {
		delete(m, group)
	}
}

var _ coordinator.Shard = (*shard)(nil)

func newShard(c *Coordinator, ctx *coordinator.Context) *shard {
	return &shard{
		c: c, ctx: ctx,
		groups:    map[string]*classicGroup{},
		cgs:       map[string]*consumerGroup{},
		sgs:       map[string]*shareGroup{},
		stgs:      map[string]*streamsGroup{},
		shareMeta: map[string]*shareStateMeta{},
		offsets:   offsetMap{},
		pending:   map[int64]offsetMap{},
		openTxns:  openTxns{},
	}
}

func (s *shard) nowMs() int64 { return s.c.clock.Now().UnixMilli() }

// Replay applies one record (or end-transaction marker) read back from
// the partition's log while loading.
func (s *shard) Replay(r coordinator.Loaded) error {
	if r.Marker != nil {
		s.replayEndTxn(r.ProducerID, r.Marker.Commit)
		return nil
	}
	s.replay(r.Offset, r.ProducerID, r.Key, r.Value)
	return nil
}

// Loaded starts the members' session timers (Kafka's onLoaded).
func (s *shard) Loaded() {
	for _, g := range s.groups {
		for _, m := range g.members {
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
	}
	for _, g := range s.cgs {
		s.onConsumerGroupLoaded(g)
	}
	for _, g := range s.sgs {
		s.onShareGroupLoaded(g)
	}
	for _, g := range s.stgs {
		s.onStreamsGroupLoaded(g)
	}
	if len(s.groups)+len(s.cgs)+len(s.sgs)+len(s.stgs) > 0 {
		s.c.log.Info("loaded group coordinator partition", zap.Int32("partition", s.ctx.Partition()),
			zap.Int32("epoch", s.ctx.LeaderEpoch()), zap.Int("classic_groups", len(s.groups)),
			zap.Int("consumer_groups", len(s.cgs)), zap.Int("share_groups", len(s.sgs)), zap.Int("streams_groups", len(s.stgs)), zap.Int("open_transactions", len(s.pending)))
	}
}

// Unloaded answers the parked JoinGroup/SyncGroup calls NOT_COORDINATOR,
// so their clients look the coordinator up again; the runtime has stopped
// the timers.
func (s *shard) Unloaded() {
	for _, g := range s.groups {
		for _, m := range g.members {
			s.answerJoin(m, &kmsg.JoinGroupResponse{ErrorCode: kerr.NotCoordinator.Code, MemberID: m.id})
			s.answerSync(m, &kmsg.SyncGroupResponse{ErrorCode: kerr.NotCoordinator.Code})
		}
	}
}

// schedule runs op on the loop after d, replacing any timer with the same
// key (Kafka's CoordinatorTimer.schedule).
func (s *shard) schedule(key string, d time.Duration, op func()) { s.ctx.Schedule(key, d, op) }

func (s *shard) cancel(key string) { s.ctx.Cancel(key) }

// write appends records to the partition as one batch. It returns once
// the records are in the local log; the operation completes when they are
// committed. State must change only after write returned nil. Errors are
// mapped for group clients (appendErr).
func (s *shard) write(recs []record) error {
	return s.append(coordinator.Batch{Records: recs, ProducerID: coordinator.NoProducer})
}

func (s *shard) append(b coordinator.Batch) error {
	if err := s.ctx.Append(b); err != nil {
		s.c.log.Warn("writing group records failed", zap.Int32("partition", s.ctx.Partition()), zap.Error(err))
		return appendErr(err)
	}
	return nil
}

// firstOffset is the log offset of the first of n records just written.
func (s *shard) firstOffset(n int) int64 { return s.ctx.LastWritten() - int64(n) }

// replay applies one record: from the log at load, or just written
// (apply). offset is the record's log offset and producerID the producer
// of its batch (coordinator.NoProducer unless transactional).
func (s *shard) replay(offset, producerID int64, k, v []byte) {
	if len(k) < 2 {
		return
	}
	switch ver := int16(binary.BigEndian.Uint16(k)); ver {
	case 0, 1:
		var key kmsg.OffsetCommitKey
		if key.ReadFrom(k) != nil {
			return
		}
		if v == nil {
			s.replayOffsetTombstone(key.Group, key.Topic, key.Partition)
			return
		}
		var val kmsg.OffsetCommitValue
		if val.ReadFrom(v) != nil {
			return
		}
		o := offsetEntry{offset: val.Offset, leaderEpoch: val.LeaderEpoch, metadata: val.Metadata,
			commitTs: val.CommitTimestamp, expireTs: -1, recordOffset: offset}
		if val.Version < 3 {
			o.leaderEpoch = -1
		}
		if val.Version == 1 {
			o.expireTs = val.ExpireTimestamp
		}
		// Offsets committed without group management make a simple group.
		if s.groups[key.Group] == nil && s.cgs[key.Group] == nil && s.sgs[key.Group] == nil && s.stgs[key.Group] == nil {
			s.groups[key.Group] = newClassicGroup(key.Group, s.nowMs())
		}
		if producerID == coordinator.NoProducer {
			s.offsets.set(key.Group, key.Topic, key.Partition, o)
			return
		}
		p := s.pending[producerID]
		if p == nil {
			p = offsetMap{}
			s.pending[producerID] = p
		}
		p.set(key.Group, key.Topic, key.Partition, o)
		s.openTxns.add(key.Group, key.Topic, key.Partition, producerID)
	case 2:
		var key kmsg.GroupMetadataKey
		if key.ReadFrom(k) != nil {
			return
		}
		if v == nil {
			delete(s.groups, key.Group)
			return
		}
		var val kmsg.GroupMetadataValue
		if val.ReadFrom(v) != nil {
			return
		}
		delete(s.cgs, key.Group)
		delete(s.sgs, key.Group)
		delete(s.stgs, key.Group)
		s.groups[key.Group] = classicGroupFromRecord(key.Group, &val)
	default:
		if isShareKey(ver) {
			s.replayShare(ver, k, v)
			return
		}
		if isStreamsKey(ver) {
			s.replayStreams(ver, k, v)
			return
		}
		s.replayConsumer(ver, k, v)
	}
}

// replayOffsetTombstone deletes a committed offset and the pending
// transactional offsets of the same partition.
func (s *shard) replayOffsetTombstone(group, topic string, partition int32) {
	s.offsets.remove(group, topic, partition)
	for pid := range s.openTxns.producers(group, topic, partition) {
		s.pending[pid].remove(group, topic, partition)
	}
	s.openTxns.clear(group, topic, partition)
}

// replayEndTxn applies an end-transaction marker (Kafka's
// replayEndTransactionMarker): the producer's pending offsets become
// committed (COMMIT) or are dropped (ABORT).
func (s *shard) replayEndTxn(producerID int64, commit bool) {
	p, ok := s.pending[producerID]
	if !ok {
		return
	}
	delete(s.pending, producerID)
	for group, topics := range p {
		for topic, parts := range topics {
			for partition := range parts {
				s.openTxns.remove(group, topic, partition, producerID)
			}
		}
	}
	if !commit {
		return
	}
	for group, topics := range p {
		for topic, parts := range topics {
			for partition, o := range parts {
				// A mix of transactional and plain commits keeps the one
				// written last, as a reload of the compacted log would.
				if cur, ok := s.offsets.get(group, topic, partition); !ok || o.recordOffset > cur.recordOffset {
					s.offsets.set(group, topic, partition, o)
				}
			}
		}
	}
}

func (s *shard) hasOffset(group, topic string, partition int32) bool {
	_, ok := s.offsets.get(group, topic, partition)
	return ok
}

// hasPendingOffset reports whether an ongoing transaction holds an offset
// of the partition for the group (hasPendingTransactionalOffsets).
func (s *shard) hasPendingOffset(group, topic string, partition int32) bool {
	return len(s.openTxns.producers(group, topic, partition)) > 0
}

// apply writes records and then replays them into the shard, for state
// the records describe completely (offsets, KIP-848 groups).
func (s *shard) apply(recs []record) error {
	if err := s.write(recs); err != nil {
		return err
	}
	base := s.firstOffset(len(recs))
	for i, r := range recs {
		s.replay(base+int64(i), coordinator.NoProducer, r.Key, r.Value)
	}
	return nil
}
