package sharecoord

import (
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// RecordsDeleter is what pruning needs of the Writer (Kafka's
// PartitionWriter.deleteRecords, allowed on the internal topic): move the
// partition's log start offset up to beforeOffset. A Writer without it
// never prunes.
type RecordsDeleter interface {
	DeleteRecords(tp coordinator.TopicPartition, beforeOffset int64) error
}

const (
	timerPrune         = "prune-share-group-state"
	timerColdSnapshots = "snapshot-cold-share-partitions"
)

// shareGroupsEnabled is ShareCoordinatorService.isShareGroupsEnabled: the
// periodic jobs run only while share.version enables share groups.
func (c *Coordinator) shareGroupsEnabled() bool {
	img := c.cfg.Image()
	if img == nil {
		return false
	}
	v, _ := img.Feature("share.version")
	return v >= 1
}

// prune is performRecordPruning for this partition: once everything
// written so far is committed, records below the last redundant offset are
// deleted, if that moved since the last time.
func (s *shard) prune() {
	defer s.ctx.Schedule(timerPrune, s.c.cfg.PruneInterval, s.prune)
	deleter, ok := s.c.cfg.Writer.(RecordsDeleter)
	if !ok || !s.c.shareGroupsEnabled() {
		return
	}
	offset, ok := s.lastRedundantOffset()
	if !ok || offset <= s.pruned {
		return
	}
	s.ctx.Defer(func(err error) {
		if err != nil {
			return // unloaded meanwhile
		}
		tp := coordinator.TopicPartition{Topic: TopicName, Partition: s.ctx.Partition()}
		if err := deleter.DeleteRecords(tp, offset); err != nil {
			s.log.Warn("pruning __share_group_state failed", zap.Int64("offset", offset), zap.Error(err))
			return
		}
		s.log.Debug("pruned __share_group_state", zap.Int64("below_offset", offset))
		s.pruned = offset
	})
}

// snapshotColdPartitions is ShareCoordinatorShard.snapshotColdPartitions:
// a share partition whose last snapshot is older than
// share.coordinator.cold.partition.snapshot.interval.ms gets a new one (the
// same state, the next snapshot epoch, its write timestamp now), so that
// pruning can pass its old records. Partitions snapshotted that way and not
// written since (write timestamp apart from the create timestamp) are left
// alone once all are.
func (s *shard) snapshotColdPartitions() {
	defer s.ctx.Schedule(timerColdSnapshots, s.c.cfg.ColdSnapshotInterval, s.snapshotColdPartitions)
	if !s.c.shareGroupsEnabled() || len(s.states) == 0 {
		return
	}
	cold := 0
	for _, e := range s.states {
		if e.state.createMs != e.state.writeMs {
			cold++
		}
	}
	if cold == len(s.states) {
		return
	}
	now := s.ctx.NowMs()
	for _, k := range s.sortedKeys() {
		e := s.states[k]
		if now-e.state.writeMs < s.c.cfg.ColdSnapshotInterval.Milliseconds() {
			continue
		}
		v := e.state
		v.snapshotEpoch++
		v.writeMs = now
		if err := s.writeRecord(encodeKey(recordTypeSnapshot, k), encodeSnapshotValue(v)); err != nil {
			s.log.Warn("snapshotting a cold share partition failed", zap.Error(err))
			return
		}
	}
}

// deleteTopics is maybeCleanupShareState: the state of share partitions
// of deleted topics is tombstoned.
func (s *shard) deleteTopics(deleted map[[16]byte]bool) {
	for _, k := range s.sortedKeys() {
		if !deleted[k.topicID] {
			continue
		}
		if err := s.writeRecord(encodeKey(recordTypeSnapshot, k), nil); err != nil {
			s.log.Warn("deleting the share state of a deleted topic failed", zap.String("group", k.group),
				zap.String("topic_id", sharestate.UUIDString(k.topicID)), zap.Error(err))
			return
		}
	}
}
