package storage

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// AppendAsLeader validates records (one or more magic-2 batches) and appends them with
// offsets assigned from the log end offset. The base offset and partition leader
// epoch of every batch are rewritten in place (they lie outside the CRC), so the
// bytes passed in are exactly what is written; under LogAppendTime the max timestamp
// and CRC are rewritten too. Idempotent producers are checked: a duplicate of one of
// the producer's last five batches returns the original offsets without appending
// (AppendInfo.Duplicate). Control batches are accepted (OriginCoordinator rules);
// use AppendAsLeaderOrigin with OriginClient for produce requests.
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendInfo, error) {
	return l.AppendAsLeaderOrigin(records, leaderEpoch, OriginCoordinator)
}

// AppendAsLeaderOrigin is AppendAsLeader with the origin's validation rules.
func (l *Log) AppendAsLeaderOrigin(records []byte, leaderEpoch int32, origin AppendOrigin) (AppendInfo, error) {
	info, d, err := l.AppendAsLeaderDeferred(records, leaderEpoch, origin)
	if err != nil {
		return info, err
	}
	return info, d.Wait()
}

// AppendAsLeaderDeferred is AppendAsLeaderOrigin without the wait for the sync
// that flush.messages asks for: the append is not acknowledged (nor made
// visible to readers by the caller) until Durable.Wait returned nil. A produce
// request appends to all its partitions first and then waits for them together,
// so that their fdatasyncs run at once and share the file system's journal
// commits instead of queueing one behind another.
func (l *Log) AppendAsLeaderDeferred(records []byte, leaderEpoch int32, origin AppendOrigin) (AppendInfo, Durable, error) {
	return l.AppendAsLeaderWith(records, leaderEpoch, AppendOptions{Origin: origin})
}

// AppendOptions are the transactional rules of an append as leader
// (UnifiedLog.appendAsLeader's origin, verificationGuard and
// transactionVersion).
type AppendOptions struct {
	Origin AppendOrigin
	// RequireVerification is transaction.partition.verification.enable
	// (KIP-890): a transactional data batch of a producer with no open
	// transaction here is refused with INVALID_TXN_STATE unless Guard is the
	// producer's current verification guard.
	RequireVerification bool
	// Guard is what MaybeStartTransactionVerification returned before the
	// coordinator confirmed the partition; nil when none.
	Guard *VerificationGuard
	// TransactionVersion is the transaction.version end-transaction markers
	// are written under (WriteTxnMarkers v2, KIP-1228): from 2 a marker must
	// carry a newer producer epoch than the partition has seen. 0 is the
	// legacy rule (not older).
	TransactionVersion int16
}

// AppendAsLeaderWith is AppendAsLeaderDeferred with the transactional rules of o.
func (l *Log) AppendAsLeaderWith(records []byte, leaderEpoch int32, o AppendOptions) (_ AppendInfo, _ Durable, err error) {
	defer func() { err = l.ioErr(err) }()
	info, wait, err := l.appendLeader(records, leaderEpoch, o)
	if err != nil || wait.upTo == 0 {
		return info, Durable{}, err
	}
	return info, Durable{l: l, w: wait}, nil
}

// Durable is an append's pending sync (flush.messages); the zero value has none.
type Durable struct {
	l *Log
	w durableWait
}

// Pending reports whether Wait has a sync to wait for.
func (d Durable) Pending() bool { return d.l != nil }

// Wait returns when the append is on disk (group commit: see syncTo).
func (d Durable) Wait() error {
	if d.l == nil {
		return nil
	}
	return d.l.ioErr(d.l.syncTo(d.w))
}

type validated struct {
	hdrs                 []BatchHeader
	offs                 []int // start of each batch in records
	records              int64
	maxTs, offsetOfMaxTs int64 // offsetOfMaxTs relative: batch index
	maxTsBatch           int
	// hdrs and offs start in these (a produce request carries one batch
	// per partition): one allocation per append instead of three.
	hdr1 [1]BatchHeader
	off1 [1]int
}

// validate checks every batch like UnifiedLog.analyzeAndValidateRecords and
// LogValidator (CRC, sizes, counts, record structure, timestamps, keys for compacted
// topics).
func (l *Log) validate(records []byte, cfg Config, origin AppendOrigin, leader bool, nowMs int64) (*validated, error) {
	if len(records) == 0 {
		return &validated{}, nil
	}
	if leader && int64(len(records)) > cfg.SegmentBytes {
		return nil, fmt.Errorf("%w: record set of %d bytes exceeds segment.bytes %d", kerr.RecordListTooLarge, len(records), cfg.SegmentBytes)
	}
	v := &validated{maxTs: NoTimestamp}
	v.hdrs, v.offs = v.hdr1[:0], v.off1[:0]
	pos := 0
	err := WalkBatches(records, true, func(h BatchHeader, raw []byte) error {
		if h.Size() > cfg.SegmentBytes {
			return fmt.Errorf("%w: batch of %d bytes exceeds segment.bytes %d", kerr.RecordListTooLarge, h.Size(), cfg.SegmentBytes)
		}
		if h.Size() > int64(cfg.MaxMessageBytes) {
			return fmt.Errorf("%w: batch of %d bytes exceeds max.message.bytes %d", kerr.MessageTooLarge, h.Size(), cfg.MaxMessageBytes)
		}
		if leader {
			if err := checkProducedCounts(h); err != nil {
				return err
			}
			if h.IsControl() && origin == OriginClient {
				return errInvalid("clients are not allowed to write control records")
			}
			// Sequences are the client's (LogValidator.validateBatch checks
			// them for client batches only): a coordinator's transactional
			// batch carries RecordBatch.NO_SEQUENCE.
			if origin == OriginClient && h.HasProducerID() && h.BaseSequence < 0 && !h.IsControl() {
				return errInvalid("invalid sequence number %d in record batch with producer id %d", h.BaseSequence, h.ProducerID)
			}
			maxRecTs := int64(NoTimestamp)
			compacted := cfg.Compact() && !h.IsControl()
			createTime := cfg.MessageTimestampType != TimestampLogAppendTime
			if err := walkBatchRecords(h, raw, func(r *Record) error {
				if compacted && r.Key == nil {
					return errInvalid("compacted topic cannot accept message without key")
				}
				ts := h.BaseTimestamp + r.TimestampDelta
				if createTime && ts != NoTimestamp && !h.IsControl() {
					if (cfg.MessageTimestampBeforeMaxMs < nowMs && ts < nowMs-cfg.MessageTimestampBeforeMaxMs) ||
						(cfg.MessageTimestampAfterMaxMs < math.MaxInt64-nowMs && ts > nowMs+cfg.MessageTimestampAfterMaxMs) {
						return fmt.Errorf("%w: timestamp %d of record at offset delta %d is out of range (now %d)",
							kerr.InvalidTimestamp, ts, r.OffsetDelta, nowMs)
					}
				}
				maxRecTs = max(maxRecTs, ts)
				return nil
			}); err != nil {
				return err
			}
			if !createTime {
				setMaxTimestamp(raw, true, nowMs)
			} else if h.LogAppendTime() || h.MaxTimestamp != maxRecTs {
				setMaxTimestamp(raw, false, maxRecTs)
			}
			h, _ = ParseBatchHeader(raw)
		}
		v.hdrs = append(v.hdrs, h)
		v.offs = append(v.offs, pos)
		v.records += int64(h.NumRecords)
		if h.MaxTimestamp > v.maxTs {
			v.maxTs, v.maxTsBatch = h.MaxTimestamp, len(v.hdrs)-1
		}
		pos += len(raw)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// checkTransactional is the KIP-890 part of analyzeAndValidateProducerState
// for client and coordinator appends: a transactional batch of a producer with
// no open transaction at its epoch is refused when its epoch is older than the
// last seen (INVALID_PRODUCER_EPOCH, recoverable) or, verification being
// required, when it is data and the append does not carry the producer's
// current guard (INVALID_TXN_STATE): the coordinator did not confirm since
// the last marker that the partition is in the transaction, so the write
// could start a transaction nobody will end (a hanging transaction).
func checkTransactional(ps *producerState, h BatchHeader, o AppendOptions) error {
	if !h.HasProducerID() || !h.IsTransactional() || o.Origin == originReplication || ps.hasOngoingTransaction(h.ProducerID, h.ProducerEpoch) {
		return nil
	}
	if e := ps.entries[h.ProducerID]; e != nil && h.ProducerEpoch < e.epoch {
		return fmt.Errorf("%w: epoch of producer %d is %d, which is smaller than the last seen epoch %d",
			kerr.InvalidProducerEpoch, h.ProducerID, h.ProducerEpoch, e.epoch)
	}
	if o.RequireVerification && !h.IsControl() {
		if g := ps.guardOf(h.ProducerID); g == nil || g != o.Guard {
			return fmt.Errorf("%w: record was not part of an ongoing transaction", kerr.InvalidTxnState)
		}
	}
	return nil
}

// commitProducers applies an append's producer state once its batches are
// written: the transactions it ended are indexed in the active segment (the
// one written to) and the ones it started or ended move the first unstable
// offset. l.mu must be held.
func (l *Log) commitProducers(u *producerUpdate) error {
	done := u.commit()
	l.noteUnreplicated()
	return l.indexAborted(done)
}

// validateOutside runs validate before the log's exclusive lock: CRCs, sizes,
// record structure, timestamps and keys need only the config and the clock, so
// appenders to one partition validate in parallel and the lock covers offset
// assignment, producer state and the write (issue 16; Kafka's
// analyzeAndValidateRecords also runs before UnifiedLog's lock). It returns
// the config it validated with; the caller, holding l.mu, validates again
// (validate is idempotent on a batch it already rewrote) when that is no
// longer the log's config, or when v is nil: with LogAppendTime a leader's
// batches take the time under the lock, so that timestamps grow with offsets
// as in Kafka.
func (l *Log) validateOutside(records []byte, origin AppendOrigin, leader bool) (*validated, Config, error) {
	l.mu.RLock()
	cfg := l.mu.cfg
	l.mu.RUnlock()
	if leader && cfg.MessageTimestampType == TimestampLogAppendTime {
		return nil, cfg, nil
	}
	v, err := l.validate(records, cfg, origin, leader, l.nowMs())
	return v, cfg, err
}

func (l *Log) appendLeader(records []byte, leaderEpoch int32, o AppendOptions) (AppendInfo, durableWait, error) {
	origin := o.Origin
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: NoTimestamp, OffsetOfMaxTimestamp: -1, LogAppendTime: NoTimestamp}
	v, cfg, verr := l.validateOutside(records, origin, true)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return info, durableWait{}, l.closedErr()
	}
	info.LogStartOffset = l.mu.logStartOffset
	nowMs := l.nowMs()
	if (v == nil && verr == nil) || l.mu.cfg != cfg {
		cfg = l.mu.cfg
		v, verr = l.validate(records, cfg, origin, true, nowMs)
	}
	if verr != nil {
		return info, durableWait{}, verr
	}
	if len(v.hdrs) == 0 {
		return info, durableWait{}, nil
	}
	// A retried batch already in the log is answered with its offsets
	// (UnifiedLog.analyzeAndValidateProducerState, after validation as there).
	if origin == OriginClient && len(v.hdrs) == 1 {
		if dup, ok := l.mu.producers.duplicateOf(v.hdrs[0]); ok {
			info.FirstOffset, info.LastOffset = dup.firstOffset(), dup.lastOffset
			info.LogAppendTime, info.MaxTimestamp = dup.timestamp, dup.timestamp
			info.OffsetOfMaxTimestamp = dup.lastOffset
			info.Duplicate, info.NumBatches = true, 1
			return info, durableWait{}, nil
		}
	}
	// assign offsets and the leader epoch in place
	off := l.mu.leo
	ps := l.mu.producers
	u := ps.begin(origin, o.TransactionVersion)
	for i := range v.hdrs {
		raw := records[v.offs[i] : v.offs[i]+int(v.hdrs[i].Size())]
		SetBaseOffset(raw, off)
		SetPartitionLeaderEpoch(raw, leaderEpoch)
		h := &v.hdrs[i]
		h.BaseOffset, h.PartitionLeaderEpoch = off, leaderEpoch
		if err := checkTransactional(ps, *h, o); err != nil {
			return info, durableWait{}, err
		}
		if err := u.append(*h, raw); err != nil {
			return info, durableWait{}, err
		}
		off = h.NextOffset()
	}
	if err := l.appendLocked(records, v, cfg, nowMs); err != nil {
		return info, durableWait{}, err
	}
	if err := l.commitProducers(u); err != nil {
		return info, durableWait{}, err
	}
	if l.mu.epochs.mustFlush(l.mu.epochs.assign(leaderEpoch, v.hdrs[0].BaseOffset)) {
		if err := l.mu.epochs.flush(); err != nil {
			return info, durableWait{}, err
		}
	}
	l.fillInfo(&info, v, cfg)
	if cfg.MessageTimestampType == TimestampLogAppendTime {
		info.LogAppendTime = nowMs
	}
	return info, l.needFlush(cfg), nil
}

func (l *Log) fillInfo(info *AppendInfo, v *validated, cfg Config) {
	info.FirstOffset = v.hdrs[0].BaseOffset
	info.LastOffset = v.hdrs[len(v.hdrs)-1].LastOffset()
	info.MaxTimestamp = v.maxTs
	if len(v.hdrs) > 0 && v.maxTs != NoTimestamp {
		info.OffsetOfMaxTimestamp = v.hdrs[v.maxTsBatch].LastOffset()
	}
	info.NumBatches = len(v.hdrs)
	info.NumRecords = v.records
	info.ValidBytes = int(v.hdrs[len(v.hdrs)-1].Size()) + v.offs[len(v.offs)-1]
	info.LogStartOffset = l.mu.logStartOffset
}

// durableWait is what an append waits for before it is acknowledged: every
// offset below upTo durable (none when upTo is 0), written while the log's
// structGen was gen.
type durableWait struct{ upTo, gen int64 }

// needFlush returns what to make durable when flush.messages is reached. l.mu
// must be held.
func (l *Log) needFlush(cfg Config) durableWait {
	if cfg.FlushMessages != math.MaxInt64 && l.mu.leo-l.durableLocked() >= cfg.FlushMessages {
		l.mu.syncBarrier, l.mu.syncBarrierGen = l.mu.leo, l.mu.structGen
		return durableWait{upTo: l.mu.leo, gen: l.mu.structGen}
	}
	return durableWait{}
}

// VisibleEnd is the log end offset as far as the high watermark may go on this
// replica: the log end offset, except that while an append that flush.messages
// made wait for a sync is not on disk, nothing from that append on is visible.
// Kafka gets the same by flushing inside the append, under the log's lock.
func (l *Log) VisibleEnd() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.syncBarrierGen != l.mu.structGen {
		return l.mu.leo // a truncation or swap since: its waiters gave up
	}
	if d := l.durableLocked(); d < l.mu.syncBarrier {
		return min(d, l.mu.leo)
	}
	return l.mu.leo
}

// durableLocked is the offset below which every record is on disk. l.mu must be held.
func (l *Log) durableLocked() int64 {
	l.durable.Lock()
	upTo, gen := l.durable.upTo, l.durable.gen
	l.durable.Unlock()
	if gen == l.mu.structGen {
		return max(upTo, l.mu.recoveryPoint)
	}
	return l.mu.recoveryPoint
}

// appendLocked rolls if needed and writes the validated batches. l.mu must be held.
// A follower's record set may be larger than segment.bytes: it is written in chunks
// of whole batches that each fit a segment.
func (l *Log) appendLocked(records []byte, v *validated, cfg Config, nowMs int64) error {
	for i := 0; i < len(v.hdrs); {
		j, size, maxTs := i, int64(0), int64(NoTimestamp)
		for j < len(v.hdrs) && (j == i || size+v.hdrs[j].Size() <= cfg.SegmentBytes) {
			size += v.hdrs[j].Size()
			maxTs = max(maxTs, v.hdrs[j].MaxTimestamp)
			j++
		}
		first, last := v.hdrs[i].BaseOffset, v.hdrs[j-1].LastOffset()
		if err := l.maybeRoll(size, maxTs, first, last, cfg, nowMs); err != nil {
			return err
		}
		start := v.offs[i]
		if err := l.active().appendBatches(records[start:start+int(size)], v.hdrs[i:j], cfg.IndexIntervalBytes); err != nil {
			l.logger.Error("append failed", zap.Int64("offset", first), zap.Error(err))
			return err
		}
		l.mu.leo = last + 1
		i = j
	}
	return l.checkInvariants()
}

// maybeRoll rolls the active segment like UnifiedLog.maybeRoll / LogSegment.shouldRoll:
// segment.bytes, segment.ms minus this segment's jitter (measured from the first
// batch's timestamp), a full index, or an offset that no longer fits the index.
func (l *Log) maybeRoll(size, maxTs, first, last int64, cfg Config, nowMs int64) error {
	seg := l.active()
	if seg.size > 0 && seg.rollingBasedTs == NoTimestamp {
		_ = seg.scan(0, seg.size, func(h BatchHeader, _ int64) bool { seg.rollingBasedTs = h.MaxTimestamp; return false })
	}
	var waited int64
	if seg.rollingBasedTs >= 0 {
		waited = maxTs - seg.rollingBasedTs
	} else {
		waited = nowMs - seg.createdMs
	}
	overflow := last-seg.base > math.MaxInt32
	should := seg.size > cfg.SegmentBytes-size ||
		(seg.size > 0 && waited > cfg.SegmentMs-seg.rollJitterMs) ||
		seg.idx.isFull() || seg.tidx.isFull() || overflow
	if !should {
		return nil
	}
	newBase := max(first, l.mu.leo)
	if seg.size == 0 {
		if seg.base == newBase || !overflow {
			return nil // nothing to roll away from
		}
	}
	return l.rollLocked(newBase, cfg, nowMs)
}

// rollLocked makes a new active segment at newBase. l.mu must be held.
func (l *Log) rollLocked(newBase int64, cfg Config, nowMs int64) error {
	old := l.active()
	if old.size == 0 {
		// an empty active segment is replaced (closed later: a flush may hold it)
		l.mu.segments = l.mu.segments[:len(l.mu.segments)-1]
		if err := l.bury([]*segment{old}); err != nil {
			return err
		}
	} else if err := old.onBecomeInactive(); err != nil {
		return err
	}
	if err := writeSnapshot(l.fs, l.dir, newBase, l.mu.producers); err != nil {
		return err
	}
	s, err := l.newSegment(newBase, cfg, nowMs, l.jitter(cfg))
	if err != nil {
		return err
	}
	l.mu.segments = append(l.mu.segments, s)
	l.logger.Debug("rolled segment", zap.Int64("base", newBase))
	// Kafka flushes the rolled segment in the background right away
	if old.size > 0 {
		l.bg.Add(1)
		go func() {
			defer l.bg.Done()
			if err := l.flushTo(newBase); err != nil && !errors.Is(err, ErrClosed) {
				l.logger.Warn("flush after roll failed", zap.Error(err))
			}
		}()
	}
	return nil
}

// Roll forces a new segment at the log end offset (if the active one is not empty).
func (l *Log) Roll() (err error) {
	defer func() { err = l.ioErr(err) }()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return l.closedErr()
	}
	if l.active().size == 0 {
		return nil
	}
	return l.rollLocked(l.mu.leo, l.mu.cfg, l.nowMs())
}

// AppendAsFollower appends batches whose offsets were assigned by the leader. The first
// batch must start at or after the log end offset and offsets must increase (gaps,
// as after compaction, are allowed). CRCs are checked; producer state and the leader
// epoch cache are updated from the batches.
func (l *Log) AppendAsFollower(records []byte) (_ AppendInfo, err error) {
	defer func() { err = l.ioErr(err) }()
	info := AppendInfo{FirstOffset: -1, LastOffset: -1, MaxTimestamp: NoTimestamp, OffsetOfMaxTimestamp: -1, LogAppendTime: NoTimestamp}
	v, cfg, err := l.validateOutside(records, OriginCoordinator, false)
	l.mu.Lock()
	if l.mu.closed || l.offline.Load() {
		l.mu.Unlock()
		return info, l.closedErr()
	}
	info.LogStartOffset = l.mu.logStartOffset
	nowMs := l.nowMs()
	if l.mu.cfg != cfg {
		cfg = l.mu.cfg
		v, err = l.validate(records, cfg, OriginCoordinator, false, nowMs)
	}
	if err != nil {
		l.mu.Unlock()
		return info, err
	}
	if len(v.hdrs) == 0 {
		l.mu.Unlock()
		return info, nil
	}
	next := l.mu.leo
	for _, h := range v.hdrs {
		if h.BaseOffset < next {
			l.mu.Unlock()
			return info, fmt.Errorf("%w: batch at %d is below the expected offset %d", ErrUnexpectedAppendOffset, h.BaseOffset, next)
		}
		next = h.NextOffset()
	}
	if err := l.appendLocked(records, v, cfg, nowMs); err != nil {
		l.mu.Unlock()
		return info, err
	}
	u := l.mu.producers.begin(originReplication, 0)
	changed := false
	for i, h := range v.hdrs {
		_ = u.append(h, records[v.offs[i]:v.offs[i]+int(h.Size())])
		// every batch's epoch goes to the cache, as the leader stamped it
		// (UnifiedLog.maybeAssignEpochStartOffset): one older than the latest
		// entry drops the entries it contradicts (LeaderEpochFileCache.assign)
		if h.PartitionLeaderEpoch >= 0 {
			changed = l.mu.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset) || changed
		}
	}
	if err := l.commitProducers(u); err != nil {
		l.mu.Unlock()
		return info, err
	}
	if l.mu.epochs.mustFlush(changed) {
		if err := l.mu.epochs.flush(); err != nil {
			l.mu.Unlock()
			return info, err
		}
	}
	l.fillInfo(&info, v, cfg)
	wait := l.needFlush(cfg)
	l.mu.Unlock()
	if wait.upTo > 0 {
		if err := l.syncTo(wait); err != nil {
			return info, err
		}
	}
	return info, nil
}

// Flush fsyncs every segment up to the log end offset and advances the recovery point.
func (l *Log) Flush() error {
	l.mu.RLock()
	leo := l.mu.leo
	l.mu.RUnlock()
	return l.flushTo(leo)
}

// flushTo makes every offset below target durable. Concurrent callers share fsyncs
// (group commit): a caller that waited on flushMu usually finds the recovery point
// already past its target.
func (l *Log) flushTo(target int64) (err error) {
	defer func() { err = l.ioErr(err) }()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushToLocked(target)
}

func (l *Log) flushToLocked(target int64) error {
	l.mu.RLock()
	if l.mu.closed || l.offline.Load() {
		l.mu.RUnlock()
		return l.closedErr()
	}
	if l.mu.recoveryPoint >= target {
		l.mu.RUnlock()
		return nil
	}
	upTo := l.mu.leo // flush everything written so far: serves every waiter
	rp := l.mu.recoveryPoint
	dirGen := l.mu.dirGen
	syncDir := dirGen != l.mu.dirSynced
	var segs []*segment
	for i, s := range l.mu.segments {
		if i+1 < len(l.mu.segments) && l.mu.segments[i+1].base <= rp {
			continue
		}
		segs = append(segs, s)
	}
	// The index entries are written under the shared lock (flushMu keeps
	// other flushers out, appends only add entries in memory); the fsyncs
	// run without it.
	indexFiles := make([][]vfs.File, len(segs))
	for i, s := range segs {
		files, err := s.writeIndexes()
		if err != nil {
			for _, fs := range indexFiles[:i] {
				closeAll(fs)
			}
			l.mu.RUnlock()
			return err
		}
		indexFiles[i] = files
	}
	l.mu.RUnlock()
	start := time.Now()
	for i, s := range segs {
		if err := s.syncWith(indexFiles[i]); err != nil {
			l.logger.Error("fsync failed", zap.Int64("segment", s.base), zap.Error(err))
			for _, fs := range indexFiles[i+1:] {
				closeAll(fs)
			}
			return err
		}
	}
	if syncDir {
		// new segment files must survive a crash too (LocalLog.flush flushes the dir)
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.mu.dirSynced = max(l.mu.dirSynced, dirGen)
	if upTo > l.mu.recoveryPoint && upTo <= l.mu.leo {
		l.mu.recoveryPoint = upTo
	}
	l.mu.lastFlushMs = l.nowMs()
	l.mu.Unlock()
	if l.onFlush != nil {
		l.onFlush(time.Since(start))
	}
	return nil
}

// DurableOffset is the offset below which every record is on disk: at least the
// recovery point, and past it after a group commit (flush.messages).
func (l *Log) DurableOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.durableLocked()
}

// syncTo returns when every offset below w.upTo is on disk: the group commit of
// flush.messages (issue #3: durable mode at most 2x the cost of the default).
//
// One waiter at a time leads a round: it fdatasyncs the .log files that hold
// offsets past the durable point, which covers every append made before it read
// the log end offset, however many are waiting. The others wait for the round to
// end and read its result from the round itself, touching neither flushMu nor
// l.mu: a covered waiter queued behind the next leader, or behind appenders on
// l.mu, would wait for nothing. Each uncovered waiter then tries to lead the
// next round, which holds everything appended during the previous one.
//
// Only the .log files are synced here. The indexes and the recovery point advance
// with full flushes (a roll flushes the old segment, flush.ms, shutdown), so after a
// crash recovery rebuilds the indexes from the recovery point as under the default
// policy, and every acknowledged byte is in the .log (LogSegment.flush syncs the
// indexes too, which would triple the fsyncs per round).
func (l *Log) syncTo(w durableWait) error {
	c := &l.commit
	for {
		c.Lock()
		if r := c.running; r != nil {
			c.Unlock()
			<-r.done
			if r.err != nil {
				return r.err
			}
			if r.covers(w) {
				return nil
			}
			continue
		}
		l.mu.RLock()
		durable, gen, closed := l.durableLocked(), l.mu.structGen, l.mu.closed || l.offline.Load()
		l.mu.RUnlock()
		if gen == w.gen && durable >= w.upTo {
			c.Unlock()
			return nil
		}
		if closed {
			c.Unlock()
			return l.closedErr()
		}
		r := &commitRound{done: make(chan struct{})}
		c.running = r
		c.Unlock()
		r.upTo, r.gen, r.err = l.syncData()
		c.Lock()
		c.running = nil
		c.Unlock()
		close(r.done)
		if r.err != nil {
			return r.err
		}
		if r.covers(w) || r.gen != w.gen {
			// a truncation or segment swap since the append: what is left of it
			// is below the durable point of the new structure, which this round
			// synced up to its log end offset
			return nil
		}
	}
}

// commitRound is one fdatasync of group commit. upTo, gen and err are written
// before done is closed.
type commitRound struct {
	done      chan struct{}
	upTo, gen int64
	err       error
}

func (r *commitRound) covers(w durableWait) bool { return r.gen == w.gen && r.upTo >= w.upTo }

// syncData fdatasyncs the .log files holding offsets past the durable point (and
// the directory when a segment file was created since its last fsync), then moves
// the durable point to the log end offset read before syncing, which it returns
// with the structGen it was read under.

func (l *Log) syncData() (upTo, gen int64, err error) {

	defer func() { err = l.ioErr(err) }()
	l.flushMu.Lock() // excludes truncation, roll-flush and close
	defer l.flushMu.Unlock()
	l.mu.RLock()
	if l.mu.closed || l.offline.Load() {
		l.mu.RUnlock()
		return 0, 0, l.closedErr()
	}
	from := l.durableLocked()
	upTo, gen = l.mu.leo, l.mu.structGen
	dirGen := l.mu.dirGen
	syncDir := dirGen != l.mu.dirSynced
	var logs []vfs.File
	for i, s := range l.mu.segments {
		if i+1 < len(l.mu.segments) && l.mu.segments[i+1].base <= from {
			continue
		}
		logs = append(logs, s.log)
	}
	l.mu.RUnlock()
	start := time.Now()
	for _, f := range logs {
		if err := vfs.Datasync(f); err != nil {
			l.logger.Error("fdatasync failed", zap.String("file", f.Name()), zap.Error(err))
			return 0, 0, err
		}
	}
	if syncDir {
		if err := l.fs.SyncDir(l.dir); err != nil {
			return 0, 0, err
		}
	}
	if syncDir {
		l.mu.Lock()
		l.mu.dirSynced = max(l.mu.dirSynced, dirGen)
		l.mu.Unlock()
	}
	if l.onFlush != nil {
		l.onFlush(time.Since(start))
	}
	// structGen changes only under flushMu (truncation, retention, a compaction
	// swap), which this round holds: gen is still current. Not l.mu: taking it
	// exclusively would queue this round's result behind every waiting appender.
	l.durable.Lock()
	if l.durable.gen != gen {
		l.durable.upTo, l.durable.gen = 0, gen
	}
	l.durable.upTo = max(l.durable.upTo, upTo)
	l.durable.Unlock()
	return upTo, gen, nil
}

// FlushIfDue flushes when flush.ms has passed since the last flush and there is
// unflushed data (the Manager's periodic flusher calls it).
func (l *Log) FlushIfDue() error {
	l.mu.RLock()
	due := !l.mu.closed && l.mu.leo > l.mu.recoveryPoint && l.nowMs()-l.mu.lastFlushMs >= l.mu.cfg.FlushMs
	l.mu.RUnlock()
	if !due {
		return nil
	}
	return l.Flush()
}

func closeAll(files []vfs.File) {
	for _, f := range files {
		f.Close()
	}
}
