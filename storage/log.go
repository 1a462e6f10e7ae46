package storage

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// ErrClosed is returned by a Log after Close or Delete.
var ErrClosed = errors.New("storage: log is closed")

// ErrUnexpectedAppendOffset is returned by AppendAsFollower when the records do not
// start at or after the log end offset or their offsets do not increase
// (UnexpectedAppendOffsetException / OffsetsOutOfOrderException in Kafka).
var ErrUnexpectedAppendOffset = errors.New("storage: unexpected append offset")

// TopicPartition names a partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

// DirName is the partition directory name, <topic>-<partition>.
func (tp TopicPartition) DirName() string { return tp.String() }

// ParseTopicPartition parses a partition directory name <topic>-<partition>.
func ParseTopicPartition(dir string) (TopicPartition, error) {
	i := strings.LastIndexByte(dir, '-')
	if i <= 0 || i == len(dir)-1 {
		return TopicPartition{}, fmt.Errorf("storage: %q is not a partition directory", dir)
	}
	p, err := strconv.ParseInt(dir[i+1:], 10, 32)
	if err != nil || p < 0 {
		return TopicPartition{}, fmt.Errorf("storage: %q is not a partition directory", dir)
	}
	return TopicPartition{Topic: dir[:i], Partition: int32(p)}, nil
}

// LogOptions configure OpenLog. Zero Config fields that cannot be meant take Kafka's
// defaults (see Config.normalized): a zero Config is DefaultConfig().
type LogOptions struct {
	FS     vfs.FS // default vfs.Default
	Dir    string // the partition directory, created if missing
	Config Config
	Now    func() time.Time // default time.Now
	Logger *zap.Logger      // default no-op
	// RecoveryPoint is the offset up to which the log is known to be flushed
	// (recovery-point-offset-checkpoint); everything from it is rescanned unless
	// HadCleanShutdown.
	RecoveryPoint    int64
	LogStartOffset   int64
	HadCleanShutdown bool
	// TopicID is written to partition.metadata when non-zero and checked against an
	// existing one (kerr.InconsistentTopicID on mismatch).
	TopicID [16]byte
	// Rand returns the segment roll jitter source; default math/rand/v2.
	Rand func(n int64) int64
	// OnIOError, when set, is called (once) with the first I/O error the log meets;
	// the log then refuses every call with kerr.KafkaStorageError (KIP-112: the
	// Manager takes the whole log dir offline). Without it an I/O error is only
	// returned.
	OnIOError func(err error)
	// OnFlush, when set, is told how long each flush took: a full flush (roll,
	// flush.ms, shutdown) or a group commit round (LogFlushStats'
	// LogFlushRateAndTimeMs).
	OnFlush func(time.Duration)
}

// AppendInfo describes an append (LogAppendInfo).
type AppendInfo struct {
	FirstOffset          int64 // offset of the first record; -1 when nothing was appended
	LastOffset           int64
	MaxTimestamp         int64
	OffsetOfMaxTimestamp int64
	LogAppendTime        int64 // -1 unless the topic uses LogAppendTime (or a duplicate's timestamp)
	LogStartOffset       int64
	NumBatches           int
	NumRecords           int64
	ValidBytes           int
	Duplicate            bool // the batch repeats one already in the log (idempotent retry)
}

// ReadInfo is the result of Read.
type ReadInfo struct {
	Region           FileRegion // whole batches within one segment; Len 0 when none
	FirstBatchOffset int64      // base offset of the first batch in Region (the read offset when empty)
	LogStartOffset   int64
	LogEndOffset     int64
}

// AppendOrigin says who appends as leader, which decides the validation applied.
type AppendOrigin int8

const (
	// OriginClient is a producer: control batches are rejected.
	OriginClient AppendOrigin = iota
	// OriginCoordinator is a broker component (transaction markers, group
	// coordinator, raft): control batches are accepted.
	OriginCoordinator
)

// Log is one partition's log: segments of Kafka-format record batches with their
// indexes, the leader epoch cache and idempotent producer state. It is safe for
// concurrent use.
//
// Lock order: flushMu, then commit, then mu, then durable (a leaf). Reads take
// mu shared; appends, truncation and roll take it exclusively; fsync runs
// holding only flushMu.
type Log struct {
	fs     vfs.FS
	dir    string
	now    func() time.Time
	logger *zap.Logger
	rnd    func(int64) int64
	// created: OpenLog made the directory, so it started empty and is
	// synced with its entry in the log dir
	created bool

	flushMu lockrank.Mutex // serializes flushes (group commit) and structural changes
	bg      sync.WaitGroup

	mu struct {
		lockrank.RWMutex
		cfg            Config
		segments       []*segment // ascending base offsets; last is active
		logStartOffset int64
		leo            int64
		recoveryPoint  int64
		lastFlushMs    int64
		epochs         *epochCache
		producers      *producerState
		topicID        [16]byte
		closed         bool
		graveyard      []graveSegment // removed segments whose files close later
		dirGen         int64          // bumped when a segment file is created
		dirSynced      int64          // dirGen covered by the last directory fsync
		// structGen is bumped whenever an inactive segment is removed, replaced or
		// truncated: a cleaning that started before gives up.
		structGen int64
		// firstDirty is the cleaner's checkpoint: offsets below it are cleaned
		// (cleaner-offset-checkpoint); -1 when unknown.
		firstDirty int64
		// syncBarrier is the log end offset the last append that waits for a
		// sync (flush.messages) must see durable, under structGen
		// syncBarrierGen (VisibleEnd).
		syncBarrier, syncBarrierGen int64
	}
	// durable: every offset below upTo is in fdatasynced .log files (group
	// commit, see syncTo); it may run ahead of the recovery point, which also
	// covers the indexes. Valid only while mu.structGen == gen: a truncation or
	// a segment swap makes it fall back to the recovery point. Its own lock, so
	// that a sync publishes its result without queueing behind appenders on mu.
	durable struct {
		lockrank.Mutex // a leaf
		upTo, gen      int64
	}
	// commit coordinates the waiters of group commit (syncTo).
	commit struct {
		lockrank.Mutex              // taken before mu, never held across a sync
		running        *commitRound // the round a leader is syncing, if any
	}
	onIOError func(err error) // from LogOptions.OnIOError
	onFlush   func(time.Duration)
	// offline is set after an I/O error when onIOError is set: the log dir is
	// offline and every call fails with kerr.KafkaStorageError.
	offline atomic.Bool
	// hwSeen is the high watermark last passed to UpdateHighWatermark (-1
	// none), unreplicatedMin the smallest marker offset of a completed
	// transaction not yet below it (math.MaxInt64 none): UpdateHighWatermark
	// takes mu only when it passes one.
	hwSeen, unreplicatedMin atomic.Int64
}

type graveSegment struct {
	seg    *segment
	closed int64 // ms when it may be closed
}

func (l *Log) nowMs() int64 { return l.now().UnixMilli() }

func (l *Log) jitter(cfg Config) int64 {
	if cfg.SegmentJitterMs <= 0 {
		return 0
	}
	return l.rnd(min(cfg.SegmentJitterMs, cfg.SegmentMs))
}

// OpenLog opens (creating if needed) the log in o.Dir: it loads the segments,
// recovers the unflushed tail after an unclean shutdown, and rebuilds the producer
// state and leader epoch cache.
func OpenLog(o LogOptions) (*Log, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Rand == nil {
		o.Rand = func(n int64) int64 { return rand.Int64N(n) }
	}
	o.Config = o.Config.normalized()
	l := &Log{fs: o.FS, dir: o.Dir, now: o.Now, rnd: o.Rand, onIOError: o.OnIOError, onFlush: o.OnFlush,
		logger: o.Logger.With(zap.String("dir", filepath.Base(o.Dir)))}
	l.flushMu.SetRank(lockrank.LogFlush)
	l.commit.SetRank(lockrank.LogCommit)
	l.mu.SetRank(lockrank.Log)
	l.durable.SetRank(lockrank.LogDurable)
	l.mu.cfg = o.Config
	l.mu.firstDirty = -1
	l.hwSeen.Store(-1)
	l.unreplicatedMin.Store(math.MaxInt64)
	// A new partition directory must survive a crash with the files in it:
	// it is filled first, then it and its entry in the log dir are fsynced
	// once each (Kafka leaves this to the next checkpoint written in the log
	// dir). A directory this call created is known to be empty: nothing in
	// it is read back (a CreateTopics of 10,000 partitions spent most of its
	// time in the syscalls of new logs, issue 16).
	created, err := vfs.MkdirAllCreated(l.fs, o.Dir, 0o755)
	if err != nil {
		return nil, err
	}
	l.created = len(created) > 0
	if !l.created {
		if err := completeSwaps(l.fs, o.Dir, l.logger); err != nil {
			return nil, fmt.Errorf("storage: %s: completing segment swaps: %w", o.Dir, err)
		}
	}
	if err := l.loadTopicID(o.TopicID); err != nil {
		return nil, err
	}
	if l.created {
		l.mu.epochs = newEpochCache(l.fs, o.Dir)
	} else if l.mu.epochs, err = loadEpochCache(l.fs, o.Dir); err != nil {
		return nil, fmt.Errorf("storage: %s: %w", o.Dir, err)
	}
	if err := l.loadSegments(o); err != nil {
		l.closeSegments()
		return nil, err
	}
	if l.created {
		err := l.fs.SyncDir(o.Dir)
		if err == nil {
			l.mu.dirSynced = l.mu.dirGen
			err = vfs.SyncCreated(l.fs, created)
		}
		if err != nil {
			l.closeSegments()
			return nil, err
		}
	}
	return l, nil
}

func (l *Log) loadTopicID(want [16]byte) error {
	if l.created {
		// a new directory: partition.metadata is synced with the directory
		if want != [16]byte{} {
			if err := vfs.WriteFileRename(l.fs, filepath.Join(l.dir, partitionMetadataFile), topicIDFileData(want)); err != nil {
				return err
			}
			l.mu.topicID = want
		}
		return nil
	}
	have, ok, err := readPartitionMetadata(l.fs, l.dir)
	if err != nil {
		return err
	}
	switch {
	case ok && want != [16]byte{} && have != want:
		return fmt.Errorf("%w: topic id %s in %s does not match %s", kerr.InconsistentTopicID,
			TopicIDString(have), l.dir, TopicIDString(want))
	case ok:
		l.mu.topicID = have
	case want != [16]byte{}:
		if err := writePartitionMetadata(l.fs, l.dir, want); err != nil {
			return err
		}
		l.mu.topicID = want
	}
	return nil
}

func (l *Log) loadSegments(o LogOptions) error {
	var ents []os.DirEntry
	if !l.created {
		var err error
		if ents, err = l.fs.ReadDir(l.dir); err != nil {
			return err
		}
	}
	cfg := l.mu.cfg
	nowMs := l.nowMs()
	var bases []int64
	hasLog := map[int64]bool{}
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, ".checkpoint"+deletedSuffix):
			// a KRaft snapshot being deleted: raft's to remove (LogLoader skips
			// SNAPSHOT_DELETE_SUFFIX; KafkaMetadataLog.recoverSnapshots removes it)
		case strings.HasSuffix(name, deletedSuffix):
			// a deletion that had not run before the shutdown (lifecycle.go bury):
			// removed now, as LogLoader.removeTempFilesAndCollectSwapFiles does;
			// failing to is an I/O error like any other
			if err := l.fs.Remove(filepath.Join(l.dir, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		case strings.HasSuffix(name, ".cleaned"), strings.HasSuffix(name, ".swap"), strings.HasSuffix(name, ".tmp"):
			_ = l.fs.Remove(filepath.Join(l.dir, name))
		case strings.HasSuffix(name, logSuffix):
			if b, err := strconv.ParseInt(strings.TrimSuffix(name, logSuffix), 10, 64); err == nil && b >= 0 {
				bases = append(bases, b)
				hasLog[b] = true
			}
		}
	}
	// orphaned index files (no .log) are removed, as LogLoader does
	for _, e := range ents {
		name := e.Name()
		for _, suf := range []string{indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if strings.HasSuffix(name, suf) {
				if b, err := strconv.ParseInt(strings.TrimSuffix(name, suf), 10, 64); err == nil && !hasLog[b] {
					_ = l.fs.Remove(filepath.Join(l.dir, name))
				}
			}
		}
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })

	recoveryPoint := o.RecoveryPoint
	var prevNext int64 = -1
	epochsChanged := false
	for i, base := range bases {
		s, err := openSegment(l.fs, l.dir, base, cfg, nowMs)
		if err != nil {
			return err
		}
		l.mu.segments = append(l.mu.segments, s)
		// a segment holds offsets up to the next segment's base: it needs recovery
		// when the recovery point falls inside or before it
		needRecovery := !o.HadCleanShutdown && (i == len(bases)-1 || bases[i+1] > recoveryPoint)
		if !needRecovery {
			ok, err := s.loadIndexes()
			if err != nil {
				return err
			}
			needRecovery = !ok
			if !ok {
				l.logger.Warn("rebuilding corrupt or missing index", zap.Int64("segment", base))
			}
		}
		if needRecovery {
			truncated, err := s.recover(cfg.IndexIntervalBytes, func(h BatchHeader) {
				epochsChanged = l.mu.epochs.recovered(h.PartitionLeaderEpoch, h.BaseOffset) || epochsChanged
			})
			if err != nil {
				return err
			}
			if truncated > 0 {
				l.logger.Warn("truncated invalid bytes at the end of segment during recovery",
					zap.Int64("segment", base), zap.Int64("bytes", truncated))
			}
			if err := s.sync(); err != nil {
				return err
			}
			overlaps := prevNext >= 0 && s.size > 0 && s.base < prevNext
			if overlaps {
				// a segment starting inside the previous one is garbage
				s.closeFiles()
				if err := s.removeFiles(); err != nil {
					return err
				}
				l.mu.segments = l.mu.segments[:len(l.mu.segments)-1]
			}
			if truncated > 0 || overlaps {
				// everything after the first corruption is gone (LogLoader.recoverLog)
				for _, later := range bases[i+1:] {
					for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
						_ = l.fs.Remove(segmentName(l.dir, later, suf))
					}
				}
				break
			}
		}
		prevNext = s.nextOffset
	}
	// an empty segment other than the active one is dropped
	segs := l.mu.segments[:0]
	for i, s := range l.mu.segments {
		if s.size == 0 && i < len(l.mu.segments)-1 {
			s.closeFiles()
			s.removeFiles()
			continue
		}
		segs = append(segs, s)
	}
	l.mu.segments = segs

	// after a crash the rolled-to segment may be empty while data before it was lost:
	// start the empty active segment right after the data that survived
	if n := len(l.mu.segments); n >= 2 && !o.HadCleanShutdown {
		prev, last := l.mu.segments[n-2], l.mu.segments[n-1]
		if last.size == 0 && last.base > prev.nextOffset {
			last.closeFiles()
			if err := last.removeFiles(); err != nil {
				return err
			}
			l.mu.segments = l.mu.segments[:n-1]
			if err := removeSnapshot(l.fs, l.dir, last.base); err != nil {
				return err
			}
			s, err := l.newSegment(prev.nextOffset, cfg, nowMs, 0)
			if err != nil {
				return err
			}
			l.mu.segments = append(l.mu.segments, s)
		}
	}
	preallocated := false
	if len(l.mu.segments) == 0 {
		s, err := l.newSegment(max(o.LogStartOffset, 0), cfg, nowMs, l.jitter(cfg))
		if err != nil {
			return err
		}
		l.mu.segments = []*segment{s}
		preallocated = true // createSegment sized its index files
	}
	for _, s := range l.mu.segments[:len(l.mu.segments)-1] {
		if err := s.onBecomeInactive(); err != nil {
			return err
		}
	}
	active := l.active()
	active.rollJitterMs = l.jitter(cfg)
	if !preallocated {
		err := active.withIndexFiles(0, func(fi, ft vfs.File) error {
			if err := active.idx.resize(fi, true); err != nil {
				return err
			}
			return active.tidx.resize(ft, true)
		})
		if err != nil {
			return err
		}
	}
	l.mu.leo = active.nextOffset
	l.mu.logStartOffset = max(o.LogStartOffset, l.mu.segments[0].base)
	if l.mu.logStartOffset > l.mu.leo {
		// the checkpointed log start is beyond the data: start over there
		if err := l.truncateFullyLocked(l.mu.logStartOffset); err != nil {
			return err
		}
	}
	l.mu.recoveryPoint = l.mu.leo
	if o.HadCleanShutdown {
		l.mu.recoveryPoint = l.mu.leo
	}
	l.mu.lastFlushMs = nowMs
	endChanged := l.mu.epochs.truncateFromEnd(l.mu.leo)
	startChanged := l.mu.epochs.truncateFromStart(l.mu.logStartOffset)
	switch {
	case epochsChanged: // entries recovered from the batches
		if err := l.mu.epochs.flush(); err != nil {
			return err
		}
	case endChanged || startChanged:
		// written by the next append or epoch change, not here: a restart
		// of 10,000 empty logs spent 60% of its CPU rewriting each one's
		// file here and again when it led its next epoch (issue 16)
		l.mu.epochs.stale = true
	}
	if err := l.rebuildProducerState(); err != nil {
		return err
	}
	return l.checkInvariants()
}

// newSegment creates a segment; the directory then needs an fsync (done by the next
// flush). l.mu must be held (or the log not yet shared).
func (l *Log) newSegment(base int64, cfg Config, nowMs, jitter int64) (*segment, error) {
	s, err := createSegment(l.fs, l.dir, base, cfg, nowMs, jitter)
	if err == nil {
		l.mu.dirGen++
	}
	return s, err
}

func (l *Log) active() *segment { return l.mu.segments[len(l.mu.segments)-1] }

// rebuildProducerState loads the newest producer snapshot at or below the log end
// offset and replays the batches after it (ProducerStateManager.truncateAndReload +
// UnifiedLog.rebuildProducerState). l.mu must be held.
func (l *Log) rebuildProducerState() error {
	var offs []int64
	if !l.created || l.mu.producers != nil {
		// (a directory OpenLog just created holds no snapshot)
		var err error
		if offs, err = snapshotOffsets(l.fs, l.dir); err != nil {
			return err
		}
	}
	ps := newProducerState()
	from := l.mu.logStartOffset
	// a recovered segment's transaction index is rebuilt by the replay, which must
	// then start at or before it (LogLoader.recoverSegment)
	limit := l.mu.leo
	for _, s := range l.mu.segments {
		if s.txnRebuild {
			limit = min(limit, s.base)
			break
		}
	}
	for i := len(offs) - 1; i >= 0; i-- {
		off := offs[i]
		if off > l.mu.leo {
			if err := removeSnapshot(l.fs, l.dir, off); err != nil {
				return err
			}
			continue
		}
		if off > limit {
			continue
		}
		data, err := vfs.ReadFile(l.fs, segmentName(l.dir, off, snapshotSuffix))
		if err != nil {
			return err
		}
		entries, derr := decodeSnapshot(data)
		if derr != nil {
			l.logger.Warn("deleting corrupt producer snapshot", zap.Int64("offset", off), zap.Error(derr))
			if err := removeSnapshot(l.fs, l.dir, off); err != nil {
				return err
			}
			continue
		}
		if off >= from {
			ps.entries, from = entries, off
		}
		break
	}
	// expired producers are not loaded (ProducerStateManager.loadFromSnapshot)
	nowMs := l.nowMs()
	for pid, e := range ps.entries {
		if isExpired(e, nowMs, l.mu.cfg.ProducerIDExpirationMs) {
			delete(ps.entries, pid)
		}
	}
	ps.loadEntries(ps.entries)
	if old := l.mu.producers; old != nil {
		ps.verifications = old.verifications // in memory only: a truncation keeps them
	}
	// Replay batch by batch, as LogSegment.recover and loadProducersFromRecords
	// do: each batch's changes are committed before the next is read.
	var raw []byte
	for _, s := range l.mu.segments {
		if s.nextOffset <= from {
			continue
		}
		_, pos := s.idx.lookup(from)
		var ierr error
		if err := s.scan(pos, s.size, func(h BatchHeader, p int64) bool {
			if h.BaseOffset < from || !h.HasProducerID() {
				return true
			}
			var b []byte
			if h.IsControl() {
				if int64(cap(raw)) < h.Size() {
					raw = make([]byte, h.Size())
				}
				b = raw[:h.Size()]
				if _, ierr = s.log.ReadAt(b, p); ierr != nil {
					return false
				}
			}
			u := ps.begin(originReplication, 0)
			_ = u.append(h, b)
			done := u.commit()
			if s.txnRebuild {
				for _, c := range done {
					if c.aborted {
						if ierr = s.txn.append(AbortedTxn{ProducerID: c.pid, FirstOffset: c.first, LastOffset: c.last, LastStableOffset: c.lso}); ierr != nil {
							return false
						}
					}
				}
			}
			return true
		}); err != nil {
			return err
		}
		if ierr != nil {
			return ierr
		}
		s.txnRebuild = false
	}
	l.mu.producers = ps
	for _, s := range l.mu.segments {
		s.txnRebuild = false
	}
	// transactions completed by the replay whose markers the high watermark
	// already passed are stable
	ps.removeUnreplicated(l.hwSeen.Load())
	l.noteUnreplicated()
	return nil
}

// noteUnreplicated publishes the smallest marker offset of the completed
// transactions the high watermark has not passed, for UpdateHighWatermark.
// l.mu must be held (exclusively).
func (l *Log) noteUnreplicated() {
	l.unreplicatedMin.Store(l.mu.producers.minUnreplicatedLast())
}

// UpdateHighWatermark tells the log its partition's high watermark
// (UnifiedLog.updateHighWatermarkMetadata ->
// ProducerStateManager.onHighWatermarkUpdated): completed transactions whose
// markers it passed no longer hold the first unstable offset back, so the
// last stable offset passes a transaction only once its marker is
// replicated. Cheap when nothing is waiting: one atomic load.
func (l *Log) UpdateHighWatermark(hw int64) {
	l.hwSeen.Store(hw)
	if hw <= l.unreplicatedMin.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return
	}
	l.mu.producers.removeUnreplicated(hw)
	l.noteUnreplicated()
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// TopicID returns the topic id from partition.metadata (zero when unknown).
func (l *Log) TopicID() [16]byte {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.topicID
}

// SetTopicID writes partition.metadata when the log has no topic id yet.
func (l *Log) SetTopicID(id [16]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.topicID == id {
		return nil
	}
	if l.mu.topicID != [16]byte{} {
		return fmt.Errorf("%w: log %s has topic id %s, not %s", kerr.InconsistentTopicID, l.dir,
			TopicIDString(l.mu.topicID), TopicIDString(id))
	}
	if err := writePartitionMetadata(l.fs, l.dir, id); err != nil {
		return err
	}
	l.mu.topicID = id
	return nil
}

// Config returns the log's config.
func (l *Log) Config() Config {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.cfg
}

// SetConfig changes the config (topic config change); it applies to later appends.
func (l *Log) SetConfig(cfg Config) {
	l.mu.Lock()
	l.mu.cfg = cfg.normalized()
	l.mu.Unlock()
}

// LogStartOffset is the first offset a reader may fetch.
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.logStartOffset
}

// LogEndOffset is the offset the next record will get.
func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.leo
}

// RecoveryPoint is the offset below which everything is fsynced.
func (l *Log) RecoveryPoint() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.recoveryPoint
}

// Size is the total size of the segments' .log files.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segments {
		n += s.size
	}
	return n
}

// NumSegments is the number of segments.
func (l *Log) NumSegments() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.mu.segments)
}

// FirstUnstableOffset is the first offset of the oldest transaction that is
// open or whose marker the high watermark has not passed (UpdateHighWatermark),
// never below the log start offset; -1 when none
// (UnifiedLog.maybeIncrementFirstUnstableOffset). The last stable offset is
// the smaller of it and the high watermark.
func (l *Log) FirstUnstableOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.firstUnstableLocked()
}

func (l *Log) firstUnstableLocked() int64 {
	fuo := l.mu.producers.firstUnstableOffset()
	if fuo >= 0 {
		fuo = max(fuo, l.mu.logStartOffset)
	}
	return fuo
}

// ProducerInfo is one active producer (DescribeProducers,
// UnifiedLog.activeProducers).
type ProducerInfo struct {
	ProducerID            int64
	ProducerEpoch         int16
	LastSequence          int32
	LastTimestamp         int64
	CoordinatorEpoch      int32
	CurrentTxnStartOffset int64 // -1 without an open transaction
}

// ActiveProducers lists the producers the log keeps state for, by id.
func (l *Log) ActiveProducers() []ProducerInfo {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ProducerInfo, 0, len(l.mu.producers.entries))
	for pid, e := range l.mu.producers.entries {
		out = append(out, ProducerInfo{ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: e.lastSeq(),
			LastTimestamp: e.lastTimestamp, CoordinatorEpoch: e.coordinatorEpoch, CurrentTxnStartOffset: e.currentTxnFirstOffset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// HasOngoingTransaction reports whether the producer has an open transaction
// here at that epoch (UnifiedLog.hasOngoingTransaction).
func (l *Log) HasOngoingTransaction(pid int64, epoch int16) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.producers.hasOngoingTransaction(pid, epoch)
}

// MaybeStartTransactionVerification is UnifiedLog.maybeStartTransactionVerification
// (KIP-890): before a transactional produce of a producer with no open
// transaction here, the leader records a verification entry and asks the
// transaction coordinator; the append then carries the returned guard,
// which only matches while no marker or transactional write came in between.
// A producer with an open transaction at that epoch needs none (nil guard).
// seq is the produce's base sequence (the lowest seen caps later ones);
// supportsEpochBump marks a transaction.version 2 producer (produce v12+).
// An epoch older than the last seen is INVALID_PRODUCER_EPOCH at once.
func (l *Log) MaybeStartTransactionVerification(pid int64, seq int32, epoch int16, supportsEpochBump bool) (*VerificationGuard, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed || l.offline.Load() {
		return nil, l.closedErr()
	}
	ps := l.mu.producers
	if e := ps.entries[pid]; e != nil && epoch < e.epoch {
		return nil, fmt.Errorf("%w: epoch of producer %d is %d, which is smaller than the last seen epoch %d",
			kerr.InvalidProducerEpoch, pid, epoch, e.epoch)
	}
	if ps.hasOngoingTransaction(pid, epoch) {
		return nil, nil
	}
	v := ps.verifications[pid]
	if v == nil {
		v = &verificationEntry{timestampMs: l.nowMs(), guard: &VerificationGuard{id: guardSeq.Add(1)},
			lowestSeq: seq, epoch: epoch, supportsEpochBump: supportsEpochBump}
		ps.verifications[pid] = v
	}
	v.maybeUpdate(seq, epoch)
	return v.guard, nil
}

// VerificationGuardOf returns the producer's current verification guard, nil
// when none (UnifiedLog.verificationGuard).
func (l *Log) VerificationGuardOf(pid int64) *VerificationGuard {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.producers.guardOf(pid)
}

// ProducerEpoch returns the last epoch and sequence seen for a producer id.
func (l *Log) ProducerEpoch(pid int64) (epoch int16, lastSeq int32, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	e := l.mu.producers.entries[pid]
	if e == nil {
		return NoProducerEpoch, NoSequence, false
	}
	return e.epoch, e.lastSeq(), true
}

// HighWatermark is the high watermark last passed to UpdateHighWatermark,
// or -1 if none was. The log owns it so that storage (the cleaner's upper
// bound) never asks replication for it.
func (l *Log) HighWatermark() int64 { return l.hwSeen.Load() }
