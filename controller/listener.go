package controller

import (
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// listener receives committed batches and leader changes from raft. It
// takes only stateMu, never c.mu: a decision holding c.mu waits for the
// replay of its own batch.
type listener struct{ c *Controller }

var _ raft.Listener = listener{}

// HandleCommit replays one committed batch into the controller's state and
// its metadata image, then wakes the decisions waiting for it.
func (l listener) HandleCommit(b raft.Batch) {
	c := l.c
	recs := make([]metadatacache.Record, 0, len(b.Records))
	for i, raw := range b.Records {
		r, err := metadatacache.DecodeRecord(raw)
		if err != nil {
			// Keep offsets aligned: Records[i] is at BaseOffset+i.
			c.log.Error("undecodable metadata record", zap.Int64("offset", b.BaseOffset+int64(i)), zap.Error(err))
			r = metadatacache.NewNoOpRecord()
		}
		recs = append(recs, r)
	}
	c.stateMu.Lock()
	for i, r := range recs {
		if err := c.st.replay(b.BaseOffset+int64(i), r); err != nil {
			c.log.Error("metadata record replay failed", zap.Int64("offset", b.BaseOffset+int64(i)), zap.Error(err))
		}
	}
	if c.st.lastOffset < b.LastOffset {
		c.st.lastOffset = b.LastOffset
	}
	// The image is updated before waiters wake, so an answered request's
	// effect is visible in Image().
	if err := c.cache.Apply(metadatacache.Batch{
		BaseOffset: b.BaseOffset, LastOffset: b.LastOffset, Epoch: b.Epoch,
		AppendTimeMs: b.AppendTimeMs, Records: recs,
	}); err != nil {
		c.log.Error("metadata image replay failed", zap.Int64("last_offset", b.LastOffset), zap.Error(err))
	}
	close(c.appliedCh)
	c.appliedCh = make(chan struct{})
	c.stateMu.Unlock()
}

// HandleLeaderChange records the new leader and wakes the background loop,
// which activates or deactivates the controller.
func (l listener) HandleLeaderChange(le raft.LeaderAndEpoch) {
	c := l.c
	c.stateMu.Lock()
	c.leader = le
	c.stateMu.Unlock()
	select {
	case c.leaderCh <- struct{}{}:
	default:
	}
}

var _ raft.SnapshotListener = listener{}

// HandleSnapshot replaces the replayed state and the image by a snapshot's
// (QuorumController's handleLoadSnapshot): every record is replayed on an
// empty state at the snapshot's last contained offset, then batches after
// the snapshot follow through HandleCommit.
//
// The zero checkpoint is the bootstrap snapshot (Kafka's
// handleLoadBootstrap), not state: New read its records already, and they
// are written to the log when the controller activates on an empty log.
func (l listener) HandleSnapshot(s *raft.SnapshotReader) {
	c := l.c
	if s.ID == (raft.OffsetAndEpoch{}) {
		return
	}
	last := s.LastContainedLogOffset()
	var recs []metadatacache.Record
	for _, raw := range s.Records() {
		r, err := metadatacache.DecodeRecord(raw)
		if err != nil {
			c.log.Error("undecodable metadata record in snapshot", zap.String("snapshot", raft.SnapshotFileName(s.ID)), zap.Error(err))
			continue
		}
		recs = append(recs, r)
	}
	c.stateMu.Lock()
	st := newState()
	st.nodeID, st.staticUnclean, st.staticMinISR = c.st.nodeID, c.st.staticUnclean, c.st.staticMinISR
	for _, r := range recs {
		if err := st.replay(last, r); err != nil {
			c.log.Error("snapshot record replay failed", zap.String("snapshot", raft.SnapshotFileName(s.ID)), zap.Error(err))
		}
	}
	st.lastOffset = last
	c.st = st
	if err := c.cache.LoadSnapshot(metadatacache.Batch{
		BaseOffset: last, LastOffset: last, Epoch: s.ID.Epoch, AppendTimeMs: s.LastContainedLogTimestamp, Records: recs,
	}); err != nil {
		c.log.Error("metadata snapshot load failed", zap.String("snapshot", raft.SnapshotFileName(s.ID)), zap.Error(err))
	}
	close(c.appliedCh)
	c.appliedCh = make(chan struct{})
	c.stateMu.Unlock()
}
