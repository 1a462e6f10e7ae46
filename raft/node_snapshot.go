package raft

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// SnapshotConfig configures snapshots and the metadata log's retention.
type SnapshotConfig struct {
	// MaxBytesBetweenSnapshots: metadata.log.max.record.bytes.between.snapshots
	// (20 MiB): committed bytes after which the generator writes a snapshot.
	MaxBytesBetweenSnapshots int64
	// MaxInterval: metadata.log.max.snapshot.interval.ms (1h): time after
	// which new commits trigger a snapshot; 0 disables the time trigger.
	MaxInterval time.Duration
	// RetentionBytes: metadata.max.retention.bytes (100 MiB); negative: no
	// size limit. Log plus snapshots above it delete the oldest snapshot and
	// the log before the next one.
	RetentionBytes int64
	// RetentionMs: metadata.max.retention.ms (7 days); negative: no time limit.
	RetentionMs int64
	// SegmentBytes, SegmentMs: metadata.log.segment.bytes (1 GiB) and
	// metadata.log.segment.ms (7 days); only whole segments are deleted.
	SegmentBytes int64
	SegmentMs    int64
	// FetchSnapshotMaxBytes: controller.quorum.fetch.snapshot.max.bytes (1 MiB).
	FetchSnapshotMaxBytes int32
}

// DefaultSnapshotConfig is Kafka's defaults.
func DefaultSnapshotConfig() SnapshotConfig {
	return SnapshotConfig{
		MaxBytesBetweenSnapshots: 20 << 20,
		MaxInterval:              time.Hour,
		RetentionBytes:           100 << 20,
		RetentionMs:              7 * 24 * time.Hour.Milliseconds(),
		SegmentBytes:             1 << 30,
		SegmentMs:                7 * 24 * time.Hour.Milliseconds(),
		FetchSnapshotMaxBytes:    1 << 20,
	}
}

// SetSnapshotConfig replaces the snapshot configuration; call it before Start.
func (n *Node) SetSnapshotConfig(sc SnapshotConfig) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cfg.Snapshots = sc
}

// SnapshotImage is committed state to snapshot: everything before
// EndOffset, whose last batch had epoch Epoch and append time
// LastContainedLogTimestamp. Records produces its records.
type SnapshotImage struct {
	EndOffset                 int64
	Epoch                     int32
	LastContainedLogTimestamp int64
	Records                   func() [][]byte
}

// SnapshotSource returns the current committed state (false: none yet).
type SnapshotSource func() (SnapshotImage, bool)

// openSnapshots recovers the snapshot files at start (KafkaMetadataLog.apply):
// partial, deleted and too-old snapshots go, and a snapshot newer than the
// log (a follower that crashed after a download) truncates the log fully.
// n.mu must be held.
func (n *Node) openSnapshots(store LogStore) (*snapshotFiles, error) {
	sf := &snapshotFiles{fs: n.cfg.FS, dir: partitionDir(n.cfg.MetadataLogDir)}
	if n.cfg.MetadataLogDir == "" {
		return sf, nil // tests with an in-memory log and no dir: no snapshots
	}
	if err := sf.recover(store.LogStartOffset()); err != nil {
		return nil, err
	}
	latest, ok := sf.latest()
	if !ok {
		return sf, nil
	}
	epochs, err := scanEpochs(store)
	if err != nil {
		return nil, err
	}
	last := epochCache(epochs).latest()
	if latest.ID.Epoch > last || latest.ID.Epoch == last && latest.ID.Offset > store.LogEndOffset() {
		n.log.Info("truncating the metadata log fully to the latest snapshot",
			zap.Int64("snapshotEndOffset", latest.ID.Offset), zap.Int32("snapshotEpoch", latest.ID.Epoch))
		if err := store.TruncateFullyAndStartAt(latest.ID.Offset); err != nil {
			return nil, err
		}
		if _, err := sf.forgetBefore(latest.ID); err != nil {
			return nil, err
		}
	}
	return sf, nil
}

// loadControlRecords reads the voter set and kraft.version history at
// start (KRaftControlRecordStateMachine.updateState): the control records
// of the latest snapshot (the bootstrap checkpoint 0-0 too) at its last
// contained offset, then those of the log after it. n.mu must be held.
func (n *Node) loadControlRecords(store LogStore, sf *snapshotFiles) (ControlRecords, error) {
	var out ControlRecords
	from := store.LogStartOffset()
	if latest, ok := sf.latest(); ok {
		ctl, err := sf.control(latest.ID)
		if err != nil {
			return out, fmt.Errorf("raft: reading snapshot %s: %w", SnapshotFileName(latest.ID), err)
		}
		at := latest.ID.Offset - 1
		if ctl.KRaftVersion > 0 {
			out.KRaftVersions = append(out.KRaftVersions, KRaftVersionAt{Offset: at, Version: ctl.KRaftVersion})
			if ctl.Voters != nil {
				out.Voters = append(out.Voters, VotersAt{Offset: at, Voters: *ctl.Voters})
			}
		}
		from = max(from, latest.ID.Offset)
	}
	end := store.LogEndOffset()
	for off := from; off < end; {
		b, err := store.Read(off, end, 1<<20)
		if err != nil {
			return out, err
		}
		if len(b) == 0 {
			return out, fmt.Errorf("raft: empty read at %d below log end %d", off, end)
		}
		next := off
		err = walkBatches(b, false, func(h batchHeader, _ []byte) error {
			next = h.lastOffset() + 1
			return nil
		})
		if err != nil {
			return out, err
		}
		if err := ScanControlRecords(b, &out); err != nil {
			return out, err
		}
		off = next
	}
	return out, nil
}

// CreateSnapshot writes a snapshot of img (KafkaRaftClient.createSnapshot,
// RecordsSnapshotWriter): it must end at a batch boundary at or below the
// high watermark and be valid against the log. The file is written outside
// the node's lock, then frozen, and the log before older snapshots is cleaned
// by the retention settings. It returns the snapshot id, or
// ErrSnapshotExists when there is nothing new to write.
func (n *Node) CreateSnapshot(img SnapshotImage) (OffsetAndEpoch, error) {
	id := OffsetAndEpoch{Offset: img.EndOffset, Epoch: img.Epoch}
	n.mu.Lock()
	err := n.usableLocked()
	if err == nil {
		err = n.core.CheckSnapshotID(id)
	}
	if err == nil {
		err = n.checkBatchBoundaryLocked(id.Offset)
	}
	n.mu.Unlock()
	if err != nil {
		return id, err
	}
	var recs [][]byte
	if img.Records != nil {
		recs = img.Records()
	}
	n.mu.Lock()
	ctl := n.core.ControlAt(id.Offset - 1)
	n.mu.Unlock()
	content := EncodeSnapshotControl(id, img.LastContainedLogTimestamp, n.nowMs(), ctl, recs)
	sf := n.snaps
	tmp, err := sf.createPart(id)
	if err == nil {
		err = writeSynced(n.cfg.FS, tmp, content)
	}
	if err != nil {
		return id, fmt.Errorf("raft: writing snapshot %d@%d: %w", id.Offset, id.Epoch, err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.usableLocked(); err != nil {
		_ = n.cfg.FS.Remove(tmp)
		return id, err
	}
	if err := n.core.CheckSnapshotID(id); err != nil {
		_ = n.cfg.FS.Remove(tmp)
		return id, err
	}
	if err := sf.freeze(tmp, id, int64(len(content))); err != nil {
		n.fail(err)
		return id, err
	}
	sf.setTimestamp(id, img.LastContainedLogTimestamp)
	n.core.AddSnapshot(SnapshotInfo{ID: id, Size: int64(len(content))})
	n.log.Info("wrote metadata snapshot", zap.String("file", SnapshotFileName(id)), zap.Int("bytes", len(content)), zap.Int("records", len(recs)))
	n.fail(n.maybeCleanLocked())
	n.cond.Broadcast()
	return id, n.failed
}

// checkBatchBoundaryLocked: a snapshot must end where a batch starts (or at
// the log end), so that the log after it is whole batches.
func (n *Node) checkBatchBoundaryLocked(off int64) error {
	if off == n.store.LogEndOffset() || off == n.core.LogStartOffset() {
		return nil
	}
	b, err := n.store.Read(off, off+1, 1)
	if err != nil {
		return err
	}
	bad := fmt.Errorf("raft: snapshot end offset %d is inside a batch", off)
	err = walkBatches(b, false, func(h batchHeader, _ []byte) error {
		if h.baseOffset != off {
			return bad
		}
		return errStopDecode
	})
	if err == errStopDecode {
		return nil
	}
	if err == nil {
		return bad
	}
	return err
}

// maybeCleanLocked applies the retention settings (KafkaMetadataLog.maybeClean):
// while log and snapshots are over metadata.max.retention.bytes, or the oldest
// snapshot is older than metadata.max.retention.ms, the oldest snapshot goes
// and the log start moves to the next one; the latest snapshot always stays.
// n.mu must be held.
func (n *Node) maybeCleanLocked() error {
	sc := n.cfg.Snapshots
	if sc.RetentionBytes >= 0 {
		var total int64
		for _, s := range n.core.Snapshots() {
			total += s.Size
		}
		if err := n.cleanSnapshotsLocked(func(s SnapshotInfo) bool {
			if n.store.Size()+total > sc.RetentionBytes {
				total -= s.Size
				return true
			}
			return false
		}); err != nil {
			return err
		}
	}
	if sc.RetentionMs >= 0 {
		now := n.nowMs()
		return n.cleanSnapshotsLocked(func(s SnapshotInfo) bool {
			ts, err := n.snaps.timestamp(s.ID)
			return err == nil && now-ts > sc.RetentionMs
		})
	}
	return nil
}

func (n *Node) cleanSnapshotsLocked(expired func(SnapshotInfo) bool) error {
	snaps := n.core.Snapshots()
	for i := 0; i+1 < len(snaps); i++ {
		if !expired(snaps[i]) {
			return nil
		}
		ok, err := n.deleteBeforeSnapshotLocked(snaps[i+1].ID)
		if err != nil || !ok {
			return err
		}
	}
	return nil
}

// deleteBeforeSnapshotLocked moves the log start to snapshot id, deletes the
// segments wholly below it and the older snapshots.
func (n *Node) deleteBeforeSnapshotLocked(id OffsetAndEpoch) (bool, error) {
	if !n.core.CanDeleteBeforeSnapshot(id) {
		return false, nil
	}
	if err := n.store.IncrementLogStartOffset(id.Offset); err != nil {
		return false, err
	}
	n.core.DeleteBeforeSnapshot(id)
	if _, err := n.snaps.forgetBefore(id); err != nil {
		return false, err
	}
	n.log.Info("deleted the metadata log before snapshot", zap.Int64("logStartOffset", id.Offset), zap.Int32("snapshotEpoch", id.Epoch))
	return true, nil
}

// loadFetchedSnapshotLocked freezes a downloaded snapshot and truncates the
// log fully to start at its end offset (truncateToLatestSnapshot).
func (n *Node) loadFetchedSnapshotLocked(s SnapshotInfo) error {
	if err := n.snaps.freezePart(s.ID); err != nil {
		return fmt.Errorf("raft: freezing fetched snapshot: %w", err)
	}
	if err := n.store.TruncateFullyAndStartAt(s.ID.Offset); err != nil {
		return err
	}
	if _, err := n.snaps.forgetBefore(s.ID); err != nil {
		return err
	}
	ctl, err := n.snaps.control(s.ID)
	if err != nil {
		return fmt.Errorf("raft: reading fetched snapshot %s: %w", SnapshotFileName(s.ID), err)
	}
	if err := n.core.SnapshotLoaded(s.ID, ctl); err != nil {
		return err
	}
	n.log.Info("loaded a snapshot from the leader; the log now starts at its end offset",
		zap.String("file", SnapshotFileName(s.ID)), zap.Int64("bytes", s.Size), zap.Int16("kraftVersion", ctl.KRaftVersion))
	n.cond.Broadcast()
	return nil
}

// readSnapshotLocked returns the latest snapshot for a listener. n.mu must be held.
func (n *Node) readLatestSnapshotLocked() (OffsetAndEpoch, []byte, bool, error) {
	latest, ok := n.snaps.latest()
	if !ok {
		return OffsetAndEpoch{}, nil, false, nil
	}
	b, err := n.snaps.read(latest.ID)
	return latest.ID, b, true, err
}

// ---------------------------------------------------------------------------
// generator

// SnapshotGenerator writes a snapshot of a committed image when enough
// bytes were committed since the last one or enough time passed (Kafka's
// SnapshotGenerator publisher). It is a raft listener: it counts the bytes
// of committed batches on its own goroutine and writes snapshots there, off
// the raft goroutine.
type SnapshotGenerator struct {
	n        *Node
	src      SnapshotSource
	maxBytes int64
	maxTime  time.Duration

	bytes    int64
	lastTime time.Time
	// OnSnapshot, when set, is called after each snapshot attempt (tests).
	onSnapshot func(OffsetAndEpoch, error)
}

// StartSnapshotGenerator registers a generator of snapshots from src with the
// node's SnapshotConfig triggers.
func (n *Node) StartSnapshotGenerator(src SnapshotSource) *SnapshotGenerator {
	g := n.newSnapshotGenerator(src)
	n.Register(g)
	return g
}

func (n *Node) newSnapshotGenerator(src SnapshotSource) *SnapshotGenerator {
	n.mu.Lock()
	sc := n.cfg.Snapshots
	n.mu.Unlock()
	return &SnapshotGenerator{n: n, src: src, maxBytes: sc.MaxBytesBetweenSnapshots, maxTime: sc.MaxInterval, lastTime: n.cfg.Now()}
}

// HandleCommit counts committed bytes and writes a snapshot when due.
func (g *SnapshotGenerator) HandleCommit(b Batch) {
	g.bytes += int64(b.SizeInBytes)
	now := g.n.cfg.Now()
	switch {
	case g.maxBytes > 0 && g.bytes >= g.maxBytes:
	case g.maxTime > 0 && now.Sub(g.lastTime) >= g.maxTime:
	default:
		return
	}
	g.emit(now)
}

func (g *SnapshotGenerator) emit(now time.Time) {
	img, ok := g.src()
	if !ok {
		return
	}
	id, err := g.n.CreateSnapshot(img)
	switch {
	case err == nil:
		g.bytes, g.lastTime = 0, now
	case errors.Is(err, ErrSnapshotExists):
		// the image has not moved past the latest snapshot yet: try again later
	default:
		g.n.log.Warn("writing a metadata snapshot failed", zap.Int64("endOffset", img.EndOffset), zap.Error(err))
	}
	if g.onSnapshot != nil {
		g.onSnapshot(id, err)
	}
}

// HandleSnapshot: a loaded snapshot resets the counters.
func (g *SnapshotGenerator) HandleSnapshot(*SnapshotReader) {
	g.bytes, g.lastTime = 0, g.n.cfg.Now()
}

// HandleLeaderChange is not used.
func (g *SnapshotGenerator) HandleLeaderChange(LeaderAndEpoch) {}
