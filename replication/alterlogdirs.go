package replication

// Moving a replica between log dirs (KIP-113, AlterReplicaLogDirs; Kafka's
// ReplicaAlterLogDirsManager / ReplicaAlterLogDirsThread). The broker asks
// AlterLogDir(tp, dir): the LogManager creates a future log in dir
// (storage/future.go) and a mover goroutine copies the partition's current
// log into it, chunk by chunk (storage.CatchUpFuture: read from the current
// log, appended as a follower appends), throttled by the alter-log-dirs
// replication quota (replica.alter.log.dirs.io.max.bytes.per.second). Once the future
// log has caught up, the mover takes the partition's lock (Partition.mu: no
// append runs while it is held, as Kafka's leaderIsrUpdateLock), copies what
// is left, and has the LogManager swap the future log in
// (PromoteFutureLog); the partition then serves from the new log. The
// broker reports the new directory to the controller afterwards
// (Config.OnLogMoved -> AssignReplicasToDirs).
//
// A future log found at startup resumes its move (ResumeLogDirMoves); a
// partition that leaves the broker takes its future log with it
// (storage.Manager.DeleteLog); a failed log dir stops the moves into it.

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/storage"
)

// FutureLogManager is what moving replicas needs of the LogManager (a
// *storage.Manager has it).
type FutureLogManager interface {
	CreateFutureLog(tp storage.TopicPartition, topicID [16]byte, cfg storage.Config, dir string) (*storage.Log, error)
	FutureLog(tp storage.TopicPartition) (*storage.Log, string, bool)
	FutureLogs() map[storage.TopicPartition]*storage.Log
	DeleteFutureLog(tp storage.TopicPartition) error
	PromoteFutureLog(tp storage.TopicPartition) (*storage.Log, error)
}

// ErrLogDirMovesUnsupported: the LogManager cannot hold future logs.
var ErrLogDirMovesUnsupported = errors.New("replication: the log manager cannot move replicas between log dirs")

// moveChunk is how much one copy step reads (replica.fetch.max.bytes' default).
const moveChunk = 1 << 20

// movePoll is how long a mover that has caught up with a log still being
// written waits before it looks again.
const movePoll = 50 * time.Millisecond

// moveWait is how often a mover looks for a partition the broker does not
// host (yet).
const moveWait = time.Second

// AlterLogDir starts moving tp's replica into log dir dir (a no-op success
// when a move there is already running). The partition must have a log on
// this broker.
func (rm *ReplicaManager) AlterLogDir(tp storage.TopicPartition, dir string) error {
	fl, ok := rm.cfg.Logs.(FutureLogManager)
	if !ok {
		return ErrLogDirMovesUnsupported
	}
	rm.mu.RLock()
	p := rm.partitions[tp]
	rm.mu.RUnlock()
	if p == nil {
		return storage.ErrNoCurrentLog
	}
	p.mu.RLock()
	hasLog, cfg := p.log != nil, p.cfg
	p.mu.RUnlock()
	if !hasLog {
		return storage.ErrNoCurrentLog
	}
	if _, err := fl.CreateFutureLog(tp, p.topicID, cfg, dir); err != nil {
		return err
	}
	rm.startMover(tp)
	return nil
}

// ResumeLogDirMoves starts a mover for every future log the LogManager
// loaded at startup (ReplicaManager.maybeAddLogDirFetchers).
func (rm *ReplicaManager) ResumeLogDirMoves() {
	fl, ok := rm.cfg.Logs.(FutureLogManager)
	if !ok {
		return
	}
	for tp := range fl.FutureLogs() {
		rm.startMover(tp)
	}
}

// startMover runs tp's mover unless one is running.
func (rm *ReplicaManager) startMover(tp storage.TopicPartition) {
	rm.moversMu.Lock()
	if rm.movers == nil {
		rm.movers = map[storage.TopicPartition]bool{}
	}
	if rm.movers[tp] {
		rm.moversMu.Unlock()
		return
	}
	rm.movers[tp] = true
	rm.moversMu.Unlock()
	go func() {
		defer func() {
			rm.moversMu.Lock()
			delete(rm.movers, tp)
			rm.moversMu.Unlock()
		}()
		rm.move(tp)
	}()
}

// move copies tp's current log into its future log and promotes it.
func (rm *ReplicaManager) move(tp storage.TopicPartition) {
	fl := rm.cfg.Logs.(FutureLogManager)
	log := []zap.Field{zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition)}
	var copied int64
	started := rm.now()
	for {
		select {
		case <-rm.closed:
			return
		default:
		}
		fut, dir, ok := fl.FutureLog(tp)
		if !ok {
			return // cancelled, or the partition was deleted
		}
		rm.mu.RLock()
		p := rm.partitions[tp]
		rm.mu.RUnlock()
		var cur *storage.Log
		if p != nil {
			p.mu.RLock()
			cur = p.log
			p.mu.RUnlock()
		}
		if cur == nil {
			// Not (yet) hosted: at startup the metadata may still be
			// replaying. A partition that leaves the broker deletes its
			// future log (storage.Manager.DeleteLog), which ends this loop.
			rm.sleep(moveWait)
			continue
		}
		if fut.Offline() {
			rm.logger.Warn("the future log's dir failed; the move stops", append(log, zap.String("dir", dir))...)
			_ = fl.DeleteFutureLog(tp)
			return
		}
		rm.throttleMove()
		n, caughtUp, err := storage.CatchUpFuture(cur, fut, moveChunk)
		if err != nil {
			if cur.Offline() {
				rm.logger.Warn("the current log's dir failed; the move stops", log...)
				return
			}
			// the current log was replaced or closed meanwhile (a
			// truncation, a topic deletion): look again
			rm.logger.Debug("copying to the future log", append(log, zap.Error(err))...)
			rm.sleep(movePoll)
			continue
		}
		copied += int64(n)
		rm.cfg.AlterLogDirsQuota.Record(int64(n))
		if !caughtUp {
			if n == 0 {
				rm.sleep(movePoll)
			}
			continue
		}
		if done, err := rm.promote(p, cur, fut); err != nil {
			rm.logger.Warn("promoting the future log failed", append(log, zap.Error(err))...)
			rm.sleep(movePoll)
			continue
		} else if !done {
			continue
		}
		rm.logger.Info("moved the replica to another log dir", append(log, zap.String("dir", dir),
			zap.Int64("bytes", copied), zap.Duration("took", rm.now().Sub(started)))...)
		if rm.cfg.OnLogMoved != nil {
			rm.cfg.OnLogMoved(tp)
		}
		return
	}
}

// promote finishes the copy with appends stopped (p.mu held) and swaps the
// future log in (Partition.maybeReplaceCurrentWithFutureReplica): done false
// when the current log moved on too far to finish under the lock, or changed.
func (rm *ReplicaManager) promote(p *Partition, cur, fut *storage.Log) (done bool, _ error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.log != cur {
		return false, nil
	}
	for range 4 {
		_, caughtUp, err := storage.CatchUpFuture(cur, fut, moveChunk)
		if err != nil {
			return false, err
		}
		if caughtUp {
			l, err := rm.cfg.Logs.(FutureLogManager).PromoteFutureLog(p.tp)
			if err != nil {
				// the current log is gone (renamed for deletion) when the
				// promotion failed after it: the partition is offline, as
				// Kafka's is after an I/O error in the swap
				return false, err
			}
			l.UpdateHighWatermark(p.hw.Load())
			p.log = l
			return true, nil
		}
	}
	return false, nil
}

// throttleMove waits while the alter-log-dirs replication quota is
// exceeded (Config.AlterLogDirsQuota: quota.ReplicationQuota bounded by
// replica.alter.log.dirs.io.max.bytes.per.second, one for every move, as
// Kafka's ReplicaAlterLogDirsThread leaves its partitions out of a fetch
// while ReplicationQuotaManager(ALTER_LOG_DIRS_REPLICATION) is exceeded).
func (rm *ReplicaManager) throttleMove() {
	for rm.cfg.AlterLogDirsQuota.IsQuotaExceeded() {
		select {
		case <-rm.closed:
			return
		default:
		}
		rm.sleep(movePoll)
	}
}

// sleep waits d or until the manager closes.
func (rm *ReplicaManager) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-rm.closed:
	}
}

// MovingLogs lists the partitions whose replica is moving between log dirs
// with their future log (DescribeLogDirs' is_future entries).
func (rm *ReplicaManager) MovingLogs() map[storage.TopicPartition]*storage.Log {
	fl, ok := rm.cfg.Logs.(FutureLogManager)
	if !ok {
		return nil
	}
	return fl.FutureLogs()
}

// CancelLogDirMove drops tp's future log, if any (AlterReplicaLogDirs back to
// the dir the replica is in: Partition.futureReplicaDirChanged).
func (rm *ReplicaManager) CancelLogDirMove(tp storage.TopicPartition) error {
	fl, ok := rm.cfg.Logs.(FutureLogManager)
	if !ok {
		return nil
	}
	return fl.DeleteFutureLog(tp)
}
