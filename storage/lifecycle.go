package storage

import (
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"
)

// Truncate removes every offset >= offset (UnifiedLog.truncateTo). Truncating at or
// beyond the log end offset keeps every record but still drops the leader epochs
// that start at the log end offset: a replica that became leader and wrote nothing
// in its epoch before another leader was elected has such an entry, which no other
// replica has, and a follower keeping it would fetch with a last fetched epoch the
// leader answers with a diverging epoch at this very offset, forever. Below the
// first segment's base offset it is TruncateFullyAndStartAt(offset); otherwise the
// log start offset follows the truncation down if it was above.
func (l *Log) Truncate(offset int64) (err error) {
	defer func() { err = l.ioErr(err) }()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return l.closedErr()
	}
	if offset < 0 {
		return fmt.Errorf("storage: cannot truncate %s to a negative offset %d", l.dir, offset)
	}
	if offset >= l.mu.leo {
		if l.mu.epochs.truncateFromEnd(l.mu.leo) {
			l.logger.Info("truncating leader epochs at the log end offset", zap.Int64("offset", offset),
				zap.Int64("logEndOffset", l.mu.leo))
			return l.mu.epochs.flush()
		}
		return nil
	}
	if offset < l.mu.segments[0].base {
		return l.truncateFullyLocked(offset)
	}
	l.mu.logStartOffset = min(l.mu.logStartOffset, offset)
	l.logger.Info("truncating log", zap.Int64("offset", offset), zap.Int64("logEndOffset", l.mu.leo))
	keep := l.mu.segments[:0]
	var removed []*segment
	for _, s := range l.mu.segments {
		if s.base > offset {
			removed = append(removed, s)
		} else {
			keep = append(keep, s)
		}
	}
	l.mu.segments = keep
	l.mu.structGen++
	if err := l.bury(removed); err != nil {
		return err
	}
	active := l.active()
	if _, err := active.truncateTo(offset); err != nil {
		return err
	}
	// The truncation is made durable at once: otherwise a crash after later
	// records were synced elsewhere (a segment rolled since, whose sync does
	// not cover this file) could bring the truncated records back in front
	// of them, and buried segments could come back under their old names.
	// Kafka leaves this to the file system's journal; truncations are rare
	// (a follower meeting a new leader), so the fsyncs cost nothing.
	if err := active.sync(); err != nil {
		return err
	}
	if len(removed) > 0 {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
		l.mu.dirSynced = l.mu.dirGen
	}
	l.mu.leo = active.nextOffset
	if l.mu.leo != offset {
		// the truncation point fell inside a batch: the whole batch goes (the log
		// end offset is its base offset), so the log never has a hole
		l.logger.Warn("truncation inside a batch", zap.Int64("offset", offset), zap.Int64("logEndOffset", l.mu.leo))
	}
	l.mu.recoveryPoint = min(l.mu.recoveryPoint, l.mu.leo)
	if l.mu.firstDirty > l.mu.leo {
		l.mu.firstDirty = l.mu.leo // LogManager.truncateTo: the cleaner checkpoint follows
	}
	if l.mu.epochs.truncateFromEnd(l.mu.leo) {
		if err := l.mu.epochs.flush(); err != nil {
			return err
		}
	}
	if err := l.rebuildProducerState(); err != nil {
		return err
	}
	return l.checkInvariants()
}

// TruncateFullyAndStartAt deletes every segment and starts an empty log at offset
// (a follower far behind the leader's log start offset).
func (l *Log) TruncateFullyAndStartAt(offset int64) (err error) {
	defer func() { err = l.ioErr(err) }()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return l.closedErr()
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("storage: cannot start %s at a negative offset %d", l.dir, offset)
	}
	l.logger.Info("truncating fully", zap.Int64("newOffset", offset))
	old := l.mu.segments
	l.mu.segments = nil
	l.mu.structGen++
	// every file is renamed away first, so the new segment may reuse the base
	// offset of an old one (LocalLog.createAndDeleteSegment)
	if err := l.bury(old); err != nil {
		return err
	}
	s, err := l.newSegment(offset, l.mu.cfg, l.nowMs(), l.jitter(l.mu.cfg))
	if err != nil {
		return err
	}
	l.mu.segments = []*segment{s}
	l.mu.leo, l.mu.logStartOffset, l.mu.recoveryPoint = offset, offset, offset
	// durable at once, as Truncate: the old segments must not come back
	// under their old names after a crash
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.mu.dirSynced = l.mu.dirGen
	if l.mu.firstDirty >= 0 {
		l.mu.firstDirty = offset
	}
	l.mu.epochs.entries = nil
	if err := l.mu.epochs.flush(); err != nil {
		return err
	}
	offs, err := snapshotOffsets(l.fs, l.dir)
	if err != nil {
		return err
	}
	for _, o := range offs {
		if err := removeSnapshot(l.fs, l.dir, o); err != nil {
			return err
		}
	}
	ps := newProducerState()
	ps.verifications = l.mu.producers.verifications
	l.mu.producers = ps
	l.noteUnreplicated()
	return nil
}

// Segment deletion (LocalLog.deleteSegmentFiles with asyncDelete, as retention,
// DeleteRecords, truncation, a roll away from an empty segment and the log
// cleaner's swap use it): a segment leaves l.mu.segments, its files are renamed
// <name>.deleted at once (LogSegment.changeFileSuffixes), and only after
// file.delete.delay.ms are its descriptors closed and the files removed
// (LogSegment.deleteIfExists, run by the scheduler). Until then a reader that got
// the segment before it left (a FileRegion being sent, the cleaner) reads on
// through its descriptors; no new read finds it. A failed rename is an I/O error
// (the log dir goes offline); so is a failed removal later. A pending deletion is
// dropped by Close, as Kafka's scheduler drops delayed tasks at shutdown, and the
// .deleted files left behind are removed when the log is next opened (LogLoader).

// bury deletes segments already taken out of l.mu.segments: each is renamed
// .deleted (unless it already is: the cleaner renames the segments it replaces
// itself) and its deletion is scheduled file.delete.delay.ms from now. Every
// segment goes to the graveyard, even after a failed rename, so that Close
// closes its descriptors. l.mu must be held.
func (l *Log) bury(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	delay := l.mu.cfg.FileDeleteDelayMs
	due := l.nowMs() + delay
	var err error
	for _, s := range segs {
		l.mu.graveyard = append(l.mu.graveyard, graveSegment{seg: s, closed: due})
		if err == nil && s.suffix != deletedSuffix {
			err = s.changeFileSuffixes(deletedSuffix)
		}
	}
	if err != nil {
		// ioErr here too: a caller may not look at the error (rollLocked)
		return l.ioErr(fmt.Errorf("storage: renaming segment files for deletion: %w", err))
	}
	// the renames become durable with the next flush's directory fsync (Kafka
	// does not fsync the directory for them: after a crash the log start offset
	// checkpoint and recovery delete such segments again)
	l.mu.dirGen++
	bases := make([]int64, len(segs))
	for i, s := range segs {
		bases[i] = s.base
	}
	l.logger.Info("scheduled segment files for deletion", zap.Int64s("segments", bases), zap.Int64("delayMs", delay))
	// the scheduler's "delete-file" task; Log.Maintain also deletes what is due
	// (with an injected clock, only Maintain does)
	time.AfterFunc(msDuration(delay), l.deleteDueSegments)
	return nil
}

// msDuration is ms milliseconds, saturated (file.delete.delay.ms may be up to
// Long.MAX_VALUE).
func msDuration(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// deleteDueSegments is the scheduled deletion task: it deletes the buried segments
// whose file.delete.delay.ms has passed, taking the log dir offline on an I/O
// error (LocalLog.maybeHandleIOException). It takes flushMu so that a flush never
// syncs a descriptor the deletion closes.
func (l *Log) deleteDueSegments() {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleteBuriedLocked()
}

// deleteBuriedLocked closes and removes the files of the buried segments that are
// due. Nothing is removed from a closed or offline log (the next open removes the
// .deleted files). flushMu and l.mu must be held.
func (l *Log) deleteBuriedLocked() {
	if l.mu.closed || l.offline.Load() {
		return
	}
	now := l.nowMs()
	keep := l.mu.graveyard[:0]
	var first error
	for _, g := range l.mu.graveyard {
		if now < g.closed {
			keep = append(keep, g)
			continue
		}
		if err := g.seg.deleteIfExists(); err != nil && first == nil {
			first = err
		}
		l.logger.Info("deleted segment files", zap.Int64("segment", g.seg.base))
	}
	clear(l.mu.graveyard[len(keep):])
	l.mu.graveyard = keep
	if first != nil {
		l.logger.Error("deleting segment files", zap.Error(first))
		_ = l.ioErr(first)
	}
}

// closeBuried closes the descriptors of every buried segment without removing its
// files: the log is closing (a shutdown drops pending deletions; the next open
// removes the .deleted files) or its whole directory goes. l.mu must be held.
func (l *Log) closeBuried() {
	for _, g := range l.mu.graveyard {
		g.seg.closeFiles()
	}
	clear(l.mu.graveyard)
	l.mu.graveyard = l.mu.graveyard[:0]
}

// IncrementLogStartOffset raises the log start offset (DeleteRecords, retention) and
// deletes the segments wholly below it. It never moves the start backwards or past
// the log end offset.
func (l *Log) IncrementLogStartOffset(offset int64) (err error) {
	defer func() { err = l.ioErr(err) }()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return l.closedErr()
	}
	if offset > l.mu.leo {
		return fmt.Errorf("storage: cannot move the log start offset of %s to %d beyond the log end offset %d", l.dir, offset, l.mu.leo)
	}
	if offset <= l.mu.logStartOffset {
		return nil
	}
	l.mu.logStartOffset = offset
	if l.mu.epochs.truncateFromStart(offset) {
		if err := l.mu.epochs.flush(); err != nil {
			return err
		}
	}
	return l.deleteSegmentsBelowLocked(offset)
}

// deleteSegmentsBelowLocked deletes non-active segments whose every offset < off
// (UnifiedLog.deleteSegments: the log start offset has already moved).
func (l *Log) deleteSegmentsBelowLocked(off int64) error {
	// completed transactions wholly below the log start stop holding the last
	// stable offset back (ProducerStateManager.onLogStartOffsetIncremented)
	l.mu.producers.removeUnreplicated(l.mu.logStartOffset)
	l.noteUnreplicated()
	n := 0
	for n < len(l.mu.segments)-1 && l.mu.segments[n+1].base <= off {
		n++
	}
	if n == 0 {
		return nil
	}
	removed := append([]*segment(nil), l.mu.segments[:n]...)
	l.mu.segments = append(l.mu.segments[:0], l.mu.segments[n:]...)
	l.mu.structGen++
	if err := l.bury(removed); err != nil {
		return err
	}
	// producer snapshots below the new first segment go too (keep the newest)
	if offs, err := snapshotOffsets(l.fs, l.dir); err == nil {
		for i, o := range offs {
			if o < l.mu.segments[0].base && i < len(offs)-1 {
				_ = removeSnapshot(l.fs, l.dir, o)
			}
		}
	}
	return nil
}

// DeleteOldSegments applies retention.ms and retention.bytes (when cleanup.policy has
// delete) and the log start offset (UnifiedLog.deleteOldSegments): segments are
// deleted from the oldest while one of the three says so, and the log start offset
// moves to the next segment's base. As in Kafka, a segment is deletable only below
// the high watermark (its next segment's base, or the log end offset for the active
// segment, at or below UpdateHighWatermark's last value; a log never told its high
// watermark deletes nothing), so the log start offset never passes it; and the
// active segment counts too: when every segment is deletable a new empty segment is
// rolled at the log end offset first, so an idle topic's data expires. An empty
// active segment is never deleted. It returns how many segments were deleted.
func (l *Log) DeleteOldSegments() (_ int, err error) {
	defer func() { err = l.ioErr(err) }()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return 0, l.closedErr()
	}
	cfg := l.mu.cfg
	// a compact-only log keeps its segments; only a log start offset raised by
	// DeleteRecords deletes them (UnifiedLog.deleteOldSegments)
	retain := cfg.Delete()
	now := l.nowMs()
	hw := l.hwSeen.Load()
	var total int64
	for _, s := range l.mu.segments {
		total += s.size
	}
	// retention.bytes: deleteRetentionSizeBreachedSegments does nothing while
	// the log is within it
	sizeBreached := retain && cfg.RetentionBytes >= 0 && total >= cfg.RetentionBytes
	segs := l.mu.segments
	n := 0
	for n < len(segs) {
		s := segs[n]
		last := n == len(segs)-1
		if last && s.size == 0 {
			break
		}
		upper := l.mu.leo
		if !last {
			upper = segs[n+1].base
		}
		if hw < upper {
			break
		}
		byTime := false
		if retain && cfg.RetentionMs >= 0 {
			// LogSegment.largestTimestamp: the largest record timestamp,
			// else the segment's age
			if s.maxTs != NoTimestamp {
				byTime = now-s.maxTs > cfg.RetentionMs
			} else {
				byTime = now-s.createdMs > cfg.RetentionMs
			}
		}
		bySize := sizeBreached && total-s.size >= cfg.RetentionBytes
		byStart := !last && segs[n+1].base <= l.mu.logStartOffset // DeleteRecords / checkpoint
		if !byTime && !bySize && !byStart {
			break
		}
		total -= s.size
		n++
	}
	if n == 0 {
		return 0, nil
	}
	if n == len(segs) {
		// deleteSegments: a log always keeps a segment; the new active one
		// starts at the log end offset, which becomes the log start offset
		newStart := l.mu.leo
		if err := l.rollLocked(newStart, cfg, now); err != nil {
			return 0, err
		}
		l.logger.Info("rolled the active segment to delete it by retention", zap.Int64("base", newStart))
		return n, l.advanceStartLocked(newStart)
	}
	return n, l.advanceStartLocked(segs[n].base)
}

// advanceStartLocked moves the log start offset up to newStart (if higher) and
// deletes the segments wholly below the log start offset. l.mu must be held.
func (l *Log) advanceStartLocked(newStart int64) error {
	if newStart > l.mu.logStartOffset {
		l.mu.logStartOffset = newStart
		if l.mu.epochs.truncateFromStart(newStart) {
			if err := l.mu.epochs.flush(); err != nil {
				return err
			}
		}
	}
	if err := l.deleteSegmentsBelowLocked(l.mu.logStartOffset); err != nil {
		return err
	}
	l.logger.Info("deleted segments", zap.Int64("logStartOffset", l.mu.logStartOffset))
	return nil
}

// Maintain does periodic housekeeping: deletes the files of removed segments whose
// file.delete.delay.ms has passed on the log's clock and expires idle producer ids.
func (l *Log) Maintain() { l.maintain(true) }

// maintain is Maintain; the Manager expires producers only every
// producer.id.expiration.check.interval.ms.
func (l *Log) maintain(expire bool) {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return
	}
	l.deleteBuriedLocked()
	if expire {
		l.mu.producers.removeExpired(l.nowMs(), l.mu.cfg.ProducerIDExpirationMs)
	}
}

// AssignEpochStartOffset records that leader epoch epoch starts at startOffset and
// writes leader-epoch-checkpoint (LeaderEpochFileCache.assign), or, for an
// epoch starting at the log end, leaves that to its first append.
func (l *Log) AssignEpochStartOffset(epoch int32, startOffset int64) (err error) {
	defer func() { err = l.ioErr(err) }()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return l.closedErr()
	}
	if epoch < 0 || startOffset < 0 {
		return fmt.Errorf("storage: invalid leader epoch %d / start offset %d", epoch, startOffset)
	}
	if !l.mu.epochs.assign(epoch, startOffset) {
		return nil
	}
	if startOffset == l.mu.leo {
		// an epoch with no record yet: written with its first append (a
		// restart of 10,000 partitions spent 65% of its CPU writing and
		// syncing leader-epoch-checkpoint for each one here, issue 16)
		l.mu.epochs.stale = true
		return nil
	}
	return l.mu.epochs.flush()
}

// EndOffsetForEpoch answers OffsetsForLeaderEpoch (LeaderEpochFileCache.endOffsetFor):
// the largest epoch <= epoch known to this log and the start offset of the next
// epoch (or the log end offset for the latest epoch). (-1, -1) when unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (foundEpoch int32, endOffset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.endOffsetFor(epoch, l.mu.leo)
}

// LatestEpoch returns the newest leader epoch in the cache.
func (l *Log) LatestEpoch() (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e, ok := l.mu.epochs.latest()
	return e.epoch, ok
}

// EpochEntries returns the leader epoch cache as (epoch, start offset) pairs.
func (l *Log) EpochEntries() [][2]int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([][2]int64, len(l.mu.epochs.entries))
	for i, e := range l.mu.epochs.entries {
		out[i] = [2]int64{int64(e.epoch), e.start}
	}
	return out
}

// EpochForOffset returns the leader epoch of the given offset, if known.
func (l *Log) EpochForOffset(off int64) (int32, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.epochs.epochForOffset(off)
}

// Close flushes the log, writes a producer snapshot at the log end offset, trims the
// indexes and closes every file. Later calls return ErrClosed (Close itself nil).
func (l *Log) Close() error {
	l.flushMu.Lock()
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		l.flushMu.Unlock()
		return nil
	}
	l.mu.closed = true
	if l.offline.Load() {
		// nothing more is written to a failed log dir: recovery sorts it out
		for _, s := range l.mu.segments {
			s.closeFiles()
		}
		l.closeBuried()
		l.mu.Unlock()
		l.flushMu.Unlock()
		l.bg.Wait()
		return nil
	}
	var err error
	for i, s := range l.mu.segments {
		if i+1 < len(l.mu.segments) && l.mu.segments[i+1].base <= l.mu.recoveryPoint {
			continue
		}
		if serr := s.sync(); serr != nil && err == nil {
			err = serr
		}
	}
	if err == nil && l.mu.dirGen != l.mu.dirSynced {
		err = l.fs.SyncDir(l.dir)
	}
	if err == nil {
		l.mu.recoveryPoint = l.mu.leo
		err = writeSnapshot(l.fs, l.dir, l.mu.leo, l.mu.producers)
	}
	if cerr := l.closeSegments(); err == nil {
		err = cerr
	}
	l.mu.Unlock()
	l.flushMu.Unlock()
	l.bg.Wait()
	return err
}

// closeSegments closes every segment (trimming indexes). l.mu must be held or the
// log not yet shared.
func (l *Log) closeSegments() error {
	var first error
	for _, s := range l.mu.segments {
		if err := s.close(); err != nil && first == nil {
			first = err
		}
	}
	l.closeBuried()
	return first
}

// Delete closes the log and removes its directory at once (UnifiedLog.delete).
func (l *Log) Delete() error {
	l.flushMu.Lock()
	l.mu.Lock()
	if !l.mu.closed {
		l.mu.closed = true
		for _, s := range l.mu.segments {
			s.closeFiles()
		}
		l.closeBuried()
	}
	err := l.fs.RemoveAll(l.dir)
	l.mu.Unlock()
	l.flushMu.Unlock()
	l.bg.Wait()
	return err
}
