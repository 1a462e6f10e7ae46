package storage

// Future logs (KIP-113: moving a replica between log dirs, LogManager's
// futureLogs). AlterReplicaLogDirs asks for a partition's replica to live in
// another log dir: the Manager creates a future log there, in a directory
// named <topic>-<partition>.<uuid hex>-future, which the broker's copier
// (replication/alterlogdirs.go, ReplicaAlterLogDirsThread) fills from the
// current log until it has caught up; then PromoteFutureLog swaps it in
// (LogManager.replaceCurrentWithFutureLog):
//
//	1. the future log is flushed and closed;
//	2. the current log's directory is renamed to <topic>-<partition>.<uuid>-delete
//	   in its log dir (removed file.delete.delay.ms later, delete.go);
//	3. the future directory is renamed to <topic>-<partition> in the target dir,
//	   the dir fsynced, and the log opened there as the current one.
//
// Crash safety, at the next start (OpenManager -> resolveFutureLogs): a future
// directory next to a current log is a move in progress: it is opened as the
// future log and the copy resumes (ReplicaManager.maybeAddLogDirFetchers); a
// future directory without a current log crashed between steps 2 and 3 (the
// current log is already a -delete directory): it is the partition's log, and is
// renamed as in step 3 (LogManager.recoverAbandonedFutureLogs promotes a future
// log the same way). There is never a moment with two <topic>-<partition>
// directories, which Kafka refuses to start with.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"go.uber.org/zap"
)

// futureDirName is <topic>-<partition>.<uuid hex>-future
// (LocalLog.logFutureDirName). Unlike a -delete name it is not cut short: the
// topic is read back from it at startup.
func futureDirName(tp TopicPartition) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) + "." + hex.EncodeToString(u[:]) + "-future"
}

// ErrNoCurrentLog: a future log needs the partition's current log.
var ErrNoCurrentLog = errors.New("storage: the partition has no log on this broker")

// ErrTopicTooLongToMove: the future directory name of the partition would
// exceed 255 bytes (ReplicaManager.alterReplicaLogDirs: InvalidTopicException
// "The topic name is too long.", KAFKA-4893).
var ErrTopicTooLongToMove = errors.New("The topic name is too long.")

// CreateFutureLog returns the future log of tp in dir, creating it when there
// is none (an existing one in another dir is deleted first, as a new
// AlterReplicaLogDirs target replaces the previous one). It fails when tp has
// no current log, when dir is not an online log dir, or when the current log
// already lives in dir.
func (m *Manager) CreateFutureLog(tp TopicPartition, topicID [16]byte, cfg Config, dir string) (*Log, error) {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	cur, ok := m.mu.logs[tp]
	switch {
	case len(futureDirName(tp)) > 255:
		m.mu.Unlock()
		return nil, ErrTopicTooLongToMove
	case !ok || cur.stub:
		m.mu.Unlock()
		return nil, ErrNoCurrentLog
	case !slices.Contains(m.o.LogDirs, dir):
		m.mu.Unlock()
		return nil, fmt.Errorf("storage: %s is not a log dir", dir)
	case m.mu.offline[dir]:
		m.mu.Unlock()
		return nil, &StorageError{Dir: dir, Err: errors.New("the log dir is offline")}
	case cur.dir == dir:
		m.mu.Unlock()
		return nil, fmt.Errorf("storage: the log of %s is already in %s", tp, dir)
	}
	if f, ok := m.mu.futures[tp]; ok {
		if f.dir == dir {
			m.mu.Unlock()
			return f.log, nil
		}
		delete(m.mu.futures, tp)
		m.mu.Unlock()
		if err := m.asyncDeleteLog(tp, f); err != nil {
			return nil, err
		}
		m.mu.Lock()
	}
	defer m.mu.Unlock()
	if cfg.SegmentBytes == 0 {
		cfg = cur.log.Config()
	}
	l, err := m.createLogIn(dir, futureDirName(tp), topicID, cfg,
		m.logger.With(zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Bool("future", true)))
	if err != nil {
		return nil, err
	}
	m.mu.futures[tp] = &managedLog{log: l, dir: dir}
	m.logger.Info("created future log", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.String("dir", dir))
	return l, nil
}

// FutureLog returns tp's future log and the log dir it is in.
func (m *Manager) FutureLog(tp TopicPartition) (*Log, string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.mu.futures[tp]
	if !ok {
		return nil, "", false
	}
	return f.log, f.dir, true
}

// FutureLogs returns every future log, keyed by partition.
func (m *Manager) FutureLogs() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.mu.futures))
	for tp, f := range m.mu.futures {
		out[tp] = f.log
	}
	return out
}

// DeleteFutureLog abandons tp's future log (the move is cancelled, or the
// partition left this broker): renamed to -delete and removed later.
func (m *Manager) DeleteFutureLog(tp TopicPartition) error {
	m.mu.Lock()
	f, ok := m.mu.futures[tp]
	delete(m.mu.futures, tp)
	m.mu.Unlock()
	if !ok {
		return nil
	}
	return m.asyncDeleteLog(tp, f)
}

// PromoteFutureLog makes tp's future log its current log (the steps in the
// package comment) and returns it; the previous current log is closed. The
// caller has stopped appends to the current log and checked that the future
// log has caught up with it.
func (m *Manager) PromoteFutureLog(tp TopicPartition) (*Log, error) {
	m.mu.Lock()
	f, fok := m.mu.futures[tp]
	cur, cok := m.mu.logs[tp]
	m.mu.Unlock()
	if !fok || !cok {
		return nil, ErrNoCurrentLog
	}
	cfg, topicID := f.log.Config(), f.log.TopicID()
	recovery := f.log.LogEndOffset()
	if err := f.log.Close(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	delete(m.mu.futures, tp)
	delete(m.mu.logs, tp)
	m.mu.Unlock()
	if err := m.asyncDeleteLog(tp, cur); err != nil {
		return nil, err
	}
	final := filepath.Join(f.dir, tp.DirName())
	if err := m.o.FS.Rename(f.log.Dir(), final); err != nil {
		return nil, m.deleteFailed(f.dir, err)
	}
	if err := m.o.FS.SyncDir(f.dir); err != nil {
		return nil, m.deleteFailed(f.dir, err)
	}
	l, err := m.openPromoted(tp, f.dir, final, cfg, topicID, recovery, true)
	if err != nil {
		return nil, err
	}
	m.logger.Info("replaced the current log with the future log", zap.String("topic", tp.Topic),
		zap.Int32("partition", tp.Partition), zap.String("from", cur.dir), zap.String("to", f.dir))
	return l, nil
}

// openPromoted opens the log renamed into path in dir as tp's current log.
func (m *Manager) openPromoted(tp TopicPartition, dir, path string, cfg Config, topicID [16]byte, recovery int64, clean bool) (*Log, error) {
	l, err := OpenLog(LogOptions{FS: m.o.FS, Dir: path, Config: cfg, Now: m.o.Now,
		Logger:        m.logger.With(zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition)),
		RecoveryPoint: recovery, HadCleanShutdown: clean, TopicID: topicID,
		OnIOError: func(err error) { m.dirFailed(dir, err) }, OnFlush: m.o.OnFlush})
	if err != nil {
		if isIOError(err) {
			go m.dirFailed(dir, err)
			return nil, &StorageError{Dir: dir, Err: err}
		}
		return nil, err
	}
	m.mu.Lock()
	m.mu.logs[tp] = &managedLog{log: l, dir: dir}
	m.mu.Unlock()
	return l, nil
}

// foundFuture is a -future directory met while loading a log dir.
type foundFuture struct {
	tp         TopicPartition
	dir, path  string
	hadCleanSD bool
}

// resolveFutureLogs handles the future directories found at startup (the
// package comment's crash safety): resumed next to a current log, promoted
// without one. A second future directory of the same partition (never
// written by kgo-broker) is deleted.
func (m *Manager) resolveFutureLogs(found []foundFuture) error {
	for _, f := range found {
		m.mu.Lock()
		_, hasCur := m.mu.logs[f.tp]
		_, hasFut := m.mu.futures[f.tp]
		offline := m.mu.offline[f.dir]
		m.mu.Unlock()
		if offline {
			continue
		}
		cfg := m.o.Config
		if m.o.ConfigFor != nil {
			cfg = m.o.ConfigFor(f.tp)
		}
		switch {
		case hasFut:
			m.scheduleDirDeletion(f.path, f.dir, nil)
		case hasCur:
			l, err := OpenLog(LogOptions{FS: m.o.FS, Dir: f.path, Config: cfg, Now: m.o.Now,
				Logger:           m.logger.With(zap.String("topic", f.tp.Topic), zap.Int32("partition", f.tp.Partition), zap.Bool("future", true)),
				HadCleanShutdown: f.hadCleanSD, OnIOError: func(err error) { m.dirFailed(f.dir, err) }, OnFlush: m.o.OnFlush})
			if err != nil {
				if isIOError(err) {
					m.dirFailed(f.dir, err)
					continue
				}
				return fmt.Errorf("storage: loading future log %s: %w", f.path, err)
			}
			m.mu.Lock()
			m.mu.futures[f.tp] = &managedLog{log: l, dir: f.dir}
			m.mu.Unlock()
			m.logger.Info("loaded a future log: the move between log dirs resumes", zap.String("topic", f.tp.Topic),
				zap.Int32("partition", f.tp.Partition), zap.String("dir", f.dir))
		default:
			final := filepath.Join(f.dir, f.tp.DirName())
			if err := m.o.FS.Rename(f.path, final); err != nil {
				m.dirFailed(f.dir, err)
				continue
			}
			if err := m.o.FS.SyncDir(f.dir); err != nil {
				m.dirFailed(f.dir, err)
				continue
			}
			if _, err := m.openPromoted(f.tp, f.dir, final, cfg, [16]byte{}, 0, f.hadCleanSD); err != nil {
				if isIOError(err) {
					continue
				}
				return fmt.Errorf("storage: loading promoted future log %s: %w", final, err)
			}
			m.logger.Info("recovered an abandoned future log as the current log", zap.String("topic", f.tp.Topic),
				zap.Int32("partition", f.tp.Partition), zap.String("dir", f.dir))
		}
	}
	return nil
}

// CatchUpFuture copies the next batches of cur (from fut's log end offset, at
// most maxBytes, at least one batch) into fut, as ReplicaAlterLogDirsThread
// fetches from the current replica and appends to the future one
// (appendAsFollower: the future log rebuilds its leader epochs and producer
// state from the batches). A future log behind cur's log start offset starts
// over there (truncateFullyAndStartAt), and follows cur's log start offset up.
// It returns the bytes copied and whether fut has caught up with cur (same log
// end offset): then, with appends to cur stopped, fut can be promoted.
func CatchUpFuture(cur, fut *Log, maxBytes int32) (copied int, caughtUp bool, err error) {
	start, end := cur.LogStartOffset(), cur.LogEndOffset()
	// The current log may have been truncated (a follower's divergence)
	// since the last copy: cut the future log back to where the two agree,
	// by leader epochs, as a follower does (ReplicaAlterLogDirsThread
	// truncates the future replica through the current one's
	// OffsetsForLeaderEpoch).
	if err := reconcileFuture(cur, fut); err != nil {
		return 0, false, err
	}
	fleo := fut.LogEndOffset()
	switch {
	case fleo < start:
		// behind the current log's start (retention moved it): start over
		// there
		if err := fut.TruncateFullyAndStartAt(start); err != nil {
			return 0, false, err
		}
		fleo = start
	case fut.LogStartOffset() < start:
		if err := fut.IncrementLogStartOffset(start); err != nil {
			return 0, false, err
		}
	}
	if fleo == end {
		return 0, true, nil
	}
	data, err := cur.ReadBatches(fleo, maxBytes, end, true)
	if err != nil {
		return 0, false, err
	}
	if len(data) == 0 {
		return 0, fut.LogEndOffset() == cur.LogEndOffset(), nil
	}
	if _, err := fut.AppendAsFollower(data); err != nil {
		return 0, false, err
	}
	return len(data), fut.LogEndOffset() == cur.LogEndOffset(), nil
}

// reconcileFuture truncates fut to the offset up to which it agrees with cur:
// the end of the newest leader epoch both know at the same place, capped by
// where cur's copy of that epoch ends; fully (to cur's start) when they share
// none, or when fut runs past cur's end without epochs.
func reconcileFuture(cur, fut *Log) error {
	fleo := fut.LogEndOffset()
	if fleo <= fut.LogStartOffset() {
		return nil
	}
	entries := fut.EpochEntries() // ascending [epoch, start offset]
	for i := len(entries) - 1; i >= 0; i-- {
		e := int32(entries[i][0])
		found, cend := cur.EndOffsetForEpoch(e)
		if found != e {
			continue
		}
		fend := fleo
		if i+1 < len(entries) {
			fend = entries[i+1][1] // fut's later epochs are not cur's
		}
		if to := min(cend, fend); to < fleo {
			return fut.Truncate(to)
		}
		return nil
	}
	if len(entries) == 0 && fleo <= cur.LogEndOffset() {
		return nil // no epochs to compare (nothing to go on), and not ahead
	}
	return fut.TruncateFullyAndStartAt(cur.LogStartOffset())
}
