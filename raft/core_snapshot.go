package raft

import (
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Snapshots in the core (KafkaRaftClient, KafkaMetadataLog, ReplicatedLog).
// The core knows the log start offset and the frozen snapshots (id and size);
// the environment keeps the files. A leader answers a Fetch below its log
// start (or from offset 0 while a snapshot exists) with SnapshotID; the
// follower then pulls the snapshot with FetchSnapshot (Position, MaxBytes)
// chunk by chunk, hands each chunk to the environment (Ready.SnapshotChunks)
// and, with the last one, has it frozen and the log truncated fully to start
// at the snapshot's end offset (Ready.LoadSnapshot), then fetches from there.

var (
	errSnapshotNotFound   = kerr.SnapshotNotFound.Code
	errPositionOutOfRange = kerr.PositionOutOfRange.Code
)

// ErrSnapshotExists is returned by CheckSnapshotID for a snapshot that is
// already stored or older than the log start offset: nothing to write.
var ErrSnapshotExists = errors.New("raft: snapshot exists or is below the log start offset")

// lastEpoch is the epoch of the last batch in the log, or of the latest
// snapshot when the log is empty after it (KafkaMetadataLog.lastFetchedEpoch).
func (c *Core) lastEpoch() int32 {
	if len(c.epochs) == 0 {
		if s, ok := c.latestSnapshot(); ok {
			return s.ID.Epoch
		}
	}
	return c.epochs.latest()
}

func (c *Core) latestSnapshot() (SnapshotInfo, bool) {
	if len(c.snapshots) == 0 {
		return SnapshotInfo{}, false
	}
	return c.snapshots[len(c.snapshots)-1], true
}

func (c *Core) earliestSnapshot() (SnapshotInfo, bool) {
	if len(c.snapshots) == 0 {
		return SnapshotInfo{}, false
	}
	return c.snapshots[0], true
}

func (c *Core) findSnapshot(id OffsetAndEpoch) (SnapshotInfo, bool) {
	for _, s := range c.snapshots {
		if s.ID == id {
			return s, true
		}
	}
	return SnapshotInfo{}, false
}

// endOffsetForEpoch is KafkaMetadataLog.endOffsetForEpoch: the epoch cache's
// answer, with an epoch older than the log answered by the snapshot at the
// log start.
func (c *Core) endOffsetForEpoch(epoch int32) OffsetAndEpoch {
	if len(c.epochs) == 0 {
		return OffsetAndEpoch{Offset: c.leo, Epoch: c.lastEpoch()}
	}
	e := c.epochs.endOffsetFor(epoch, c.leo)
	if s, ok := c.earliestSnapshot(); ok && e.Offset == s.ID.Offset && e.Epoch == epoch {
		return s.ID
	}
	return e
}

type validKind uint8

const (
	validOK validKind = iota
	validDiverging
	validSnapshot
)

// validateOffsetAndEpoch is ReplicatedLog.validateOffsetAndEpoch.
func (c *Core) validateOffsetAndEpoch(offset int64, epoch int32) (validKind, OffsetAndEpoch) {
	if c.logStart == 0 && offset == 0 {
		return validOK, OffsetAndEpoch{}
	}
	if es, ok := c.earliestSnapshot(); ok &&
		(offset < c.logStart || offset == c.logStart && epoch != es.ID.Epoch || epoch < es.ID.Epoch) {
		ls, _ := c.latestSnapshot()
		return validSnapshot, ls.ID
	}
	end := c.endOffsetForEpoch(epoch)
	if end.Epoch != epoch || end.Offset < offset {
		return validDiverging, end
	}
	return validOK, OffsetAndEpoch{}
}

// CheckSnapshotID validates the id of a snapshot this replica is about to
// write from its own state (KafkaMetadataLog.createNewSnapshot): at or below
// the high watermark, valid against the log. ErrSnapshotExists: nothing to do.
func (c *Core) CheckSnapshotID(id OffsetAndEpoch) error {
	if id.Offset < c.logStart {
		return ErrSnapshotExists
	}
	if _, ok := c.findSnapshot(id); ok {
		return ErrSnapshotExists
	}
	if id.Offset > c.hw {
		return fmt.Errorf("raft: snapshot id %d@%d beyond the high watermark %d", id.Offset, id.Epoch, c.hw)
	}
	if k, _ := c.validateOffsetAndEpoch(id.Offset, id.Epoch); k != validOK {
		return fmt.Errorf("raft: snapshot id %d@%d is not valid against the log", id.Offset, id.Epoch)
	}
	return nil
}

// AddSnapshot records a snapshot the environment froze (one it wrote
// itself); a snapshot with the same id is replaced (its file was).
func (c *Core) AddSnapshot(s SnapshotInfo) {
	for i := range c.snapshots {
		if c.snapshots[i].ID == s.ID {
			c.snapshots[i] = s
			return
		}
	}
	c.snapshots = append(c.snapshots, s)
	slices.SortFunc(c.snapshots, func(a, b SnapshotInfo) int { return compareOffsetAndEpoch(a.ID, b.ID) })
}

// Snapshots returns the frozen snapshots, oldest first.
func (c *Core) Snapshots() []SnapshotInfo { return slices.Clone(c.snapshots) }

// LogStartOffset returns the log start offset.
func (c *Core) LogStartOffset() int64 { return c.logStart }

// CanDeleteBeforeSnapshot reports whether the log start offset may move to
// snapshot id (KafkaMetadataLog.deleteBeforeSnapshot): id is stored, above
// the log start and not newer than the latest snapshot.
func (c *Core) CanDeleteBeforeSnapshot(id OffsetAndEpoch) bool {
	ls, ok := c.latestSnapshot()
	_, has := c.findSnapshot(id)
	return ok && has && c.logStart < id.Offset && id.Offset <= ls.ID.Offset && id.Offset <= c.hw
}

// DeleteBeforeSnapshot moves the log start offset to snapshot id and forgets
// older snapshots. The environment deletes the segments wholly below it and
// the older snapshot files. It returns false when CanDeleteBeforeSnapshot is false.
func (c *Core) DeleteBeforeSnapshot(id OffsetAndEpoch) bool {
	if !c.CanDeleteBeforeSnapshot(id) {
		return false
	}
	c.logStart = id.Offset
	c.epochs.truncateFromStart(id.Offset)
	c.forgetSnapshotsBefore(id)
	c.ctl.truncateOld(id.Offset)
	return true
}

func (c *Core) forgetSnapshotsBefore(id OffsetAndEpoch) {
	n := 0
	for n < len(c.snapshots) && compareOffsetAndEpoch(c.snapshots[n].ID, id) < 0 {
		n++
	}
	c.snapshots = slices.Delete(c.snapshots, 0, n)
}

// ---------------------------------------------------------------------------
// leader side

// handleFetchSnapshot answers FetchSnapshot (handleFetchSnapshotRequest).
func (c *Core) handleFetchSnapshot(m Message) {
	resp := Message{Type: MsgFetchSnapshotResp, To: m.From, ID: m.ID, Epoch: c.epoch, LeaderID: c.advertisedLeader(), ReadFrom: -1}
	switch {
	case m.Epoch < c.epoch:
		resp.Error = errFencedLeaderEpoch
	case m.Epoch > c.epoch:
		resp.Error = errUnknownLeaderEpoch
	case c.role != RoleLeader:
		resp.Error = errNotLeaderOrFollower
	}
	if resp.Error != errNone {
		c.send(resp)
		return
	}
	var s SnapshotInfo
	ok := false
	if m.SnapshotID != nil {
		s, ok = c.findSnapshot(*m.SnapshotID)
	}
	if !ok || s.ID == bootstrapSnapshotID {
		resp.Error = errSnapshotNotFound
		c.send(resp)
		return
	}
	if m.Position < 0 || m.Position >= s.Size {
		resp.Error = errPositionOutOfRange
		c.send(resp)
		return
	}
	n := min(int64(max(m.MaxBytes, 1)), s.Size)
	id := s.ID
	resp.SnapshotID, resp.Size, resp.Position = &id, s.Size, m.Position
	resp.ReadFrom, resp.ReadTo = m.Position, min(s.Size, m.Position+n)
	if r := c.voterStates[m.From]; r != nil && r.matches(ReplicaKey{ID: m.From, DirectoryID: m.FromDir}) {
		r.lastSnapshotFetchMs = c.now // check quorum: the voter follows us
	}
	c.send(resp)
}

// ---------------------------------------------------------------------------
// follower side

// startSnapshotFetch: the leader answered a Fetch with a SnapshotID.
func (c *Core) startSnapshotFetch(id OffsetAndEpoch) {
	if id.Offset < 0 || id.Epoch < 0 {
		return
	}
	c.fetchingSnap = &id
	c.snapPos = 0
}

func (c *Core) sendFetchSnapshotTo(to int32) {
	c.fetchInflight = c.newID()
	c.fetchSentMs = c.now
	id := *c.fetchingSnap
	c.send(Message{Type: MsgFetchSnapshot, To: to, ID: c.fetchInflight, Epoch: c.epoch,
		SnapshotID: &id, Position: c.snapPos, MaxBytes: c.cfg.FetchSnapshotMaxBytes})
}

// handleFetchSnapshotResp takes one chunk (handleFetchSnapshotResponse).
func (c *Core) handleFetchSnapshotResp(m Message) {
	if m.ID == 0 || m.ID != c.fetchInflight {
		return
	}
	c.fetchInflight = 0
	if !c.handleCommonResponse(m) {
		return
	}
	if c.role != RoleFollower || c.leader != m.From || c.fetchingSnap == nil {
		c.fetchRetryAt = c.now + c.cfg.RetryBackoffMs
		return
	}
	if m.Error == errSnapshotNotFound || m.Error == errNone && (m.SnapshotID == nil || m.SnapshotID.Offset < 0 || m.SnapshotID.Epoch < 0) {
		// The leader deleted the snapshot before we got it: start over with a Fetch.
		c.fetchingSnap = nil
		c.markLeaderContact()
		c.sendFetch()
		return
	}
	if m.Error == errPositionOutOfRange {
		c.snapPos = 0 // start the download again
		c.fetchRetryAt = c.now + c.cfg.RetryBackoffMs
		return
	}
	if m.Error != errNone {
		c.fetchRetryAt = c.now + c.cfg.RetryBackoffMs
		return
	}
	id := *c.fetchingSnap
	if *m.SnapshotID != id || m.Position != c.snapPos || m.Size <= 0 || m.Position+int64(len(m.Data)) > m.Size {
		c.fail(violation("fetch snapshot response %d@%d position %d size %d does not continue %d@%d at %d",
			m.SnapshotID.Offset, m.SnapshotID.Epoch, m.Position, m.Size, id.Offset, id.Epoch, c.snapPos))
		return
	}
	c.markLeaderContact()
	c.snapChunks = append(c.snapChunks, SnapshotChunk{ID: id, Position: m.Position, Data: m.Data})
	c.snapPos += int64(len(m.Data))
	if c.snapPos == m.Size {
		c.fetchingSnap = nil
		c.loadSnapshot(SnapshotInfo{ID: id, Size: m.Size})
	}
	c.sendFetch()
}

func (c *Core) markLeaderContact() {
	if !c.leaderResigned {
		c.lastContact = c.now
		c.fetchDeadline = c.now + c.cfg.FetchTimeoutMs
	}
}

// loadSnapshot replaces the log by a downloaded snapshot
// (KafkaMetadataLog.truncateToLatestSnapshot): the log starts empty at the
// snapshot's end offset and the high watermark is at least that.
func (c *Core) loadSnapshot(s SnapshotInfo) {
	last := c.epochs.latest()
	if !(s.ID.Epoch > last || s.ID.Epoch == last && s.ID.Offset > c.leo) {
		c.fail(violation("downloaded snapshot %d@%d does not pass the log end %d@%d of %d", s.ID.Offset, s.ID.Epoch, c.leo, last, c.id))
		return
	}
	c.entries = nil
	c.truncateTo = -1
	c.leo, c.logStart, c.handed = s.ID.Offset, s.ID.Offset, s.ID.Offset
	// Nothing is readable or durable until the environment acknowledges
	// the load (Advance, or LogWritten and LogFlushed of its Ready): no
	// listener reads and no Fetch goes out before it.
	c.written, c.flushed = -1, -1
	c.logGen++
	c.epochs = nil
	c.forgetSnapshotsBefore(s.ID)
	c.AddSnapshot(s)
	loaded := s
	c.snapLoad = &loaded
	if s.ID.Offset > c.hw {
		c.setHW(s.ID.Offset)
	}
}

// SnapshotLoaded gives the core the control records of the snapshot Ready
// asked it to load (LoadSnapshot), before Advance: the voter set and
// kraft.version history restarts from them, at the snapshot's last
// contained offset (KRaftControlRecordStateMachine.maybeLoadSnapshot).
func (c *Core) SnapshotLoaded(id OffsetAndEpoch, ctl SnapshotControl) error {
	if id.Offset != c.logStart {
		return c.takeErr()
	}
	c.ctl.clear()
	if ctl.KRaftVersion > 0 {
		c.fail(c.ctl.addKRaftVersion(id.Offset-1, ctl.KRaftVersion))
		if ctl.Voters != nil {
			c.fail(c.ctl.addVoters(id.Offset-1, *ctl.Voters))
		}
	}
	c.refreshVoters()
	return c.takeErr()
}
