package replication

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// replicationExt is the ReplicaManager's replication state: the running
// replicator (nil until StartReplication) and the high watermarks read
// from replication-offset-checkpoint at start.
type replicationExt struct {
	repl atomic.Pointer[replicator]
	isr  isrView // what every led partition's ISR rules read (isr.go)

	hwOnce   sync.Once
	hwLoaded map[storage.TopicPartition]int64 // written once under hwOnce
}

// hwCheckpointLogs is what the high watermark checkpoint needs of the
// LogManager (a *storage.Manager has it). Without it there is no checkpoint.
type hwCheckpointLogs interface {
	LogDirs() []string
	LogDirOf(tp storage.TopicPartition) (string, bool)
	FS() vfs.FS
}

// offlineDirs is optionally implemented by the LogManager.
type offlineDirs interface {
	DirOffline(dir string) bool
}

// loadedHighWatermarks reads replication-offset-checkpoint of every log dir
// once (ReplicaManager.highWatermarkCheckpoints at startup).
func (rm *ReplicaManager) loadedHighWatermarks() map[storage.TopicPartition]int64 {
	rm.hwOnce.Do(func() {
		rm.hwLoaded = map[storage.TopicPartition]int64{}
		logs, ok := rm.cfg.Logs.(hwCheckpointLogs)
		if !ok {
			return
		}
		for _, dir := range logs.LogDirs() {
			m, err := storage.ReadOffsetCheckpointFile(logs.FS(), filepath.Join(dir, storage.ReplicationOffsetCheckpointFile))
			if err != nil {
				rm.logger.Warn("reading the high watermark checkpoint failed", zap.String("dir", dir), zap.Error(err))
				continue
			}
			for tp, off := range m {
				rm.hwLoaded[tp] = off
			}
		}
	})
	return rm.hwLoaded
}

// initialHighWatermark is a newly opened log's high watermark: the
// checkpointed one clamped to [log start, log end], else the log start.
func (rm *ReplicaManager) initialHighWatermark(tp storage.TopicPartition, l *storage.Log) int64 {
	hw, ok := rm.loadedHighWatermarks()[tp]
	if !ok {
		return l.LogStartOffset()
	}
	return min(max(hw, l.LogStartOffset()), l.LogEndOffset())
}

// CheckpointHighWatermarks writes every partition's high watermark to the
// replication-offset-checkpoint of its log dir (checkpointHighWatermarks);
// every online dir gets a file, possibly empty.
func (rm *ReplicaManager) CheckpointHighWatermarks() error {
	logs, ok := rm.cfg.Logs.(hwCheckpointLogs)
	if !ok {
		return nil
	}
	rm.mu.RLock()
	parts := make([]*Partition, 0, len(rm.partitions))
	for _, p := range rm.partitions {
		parts = append(parts, p)
	}
	rm.mu.RUnlock()
	byDir := map[string]map[storage.TopicPartition]int64{}
	for _, dir := range logs.LogDirs() {
		byDir[dir] = map[storage.TopicPartition]int64{}
	}
	for _, p := range parts {
		p.mu.RLock()
		open := p.log != nil
		p.mu.RUnlock()
		if !open {
			continue
		}
		dir, ok := logs.LogDirOf(p.tp)
		if !ok {
			continue
		}
		if m, ok := byDir[dir]; ok {
			m[p.tp] = p.hw.Load()
		}
	}
	off, _ := rm.cfg.Logs.(offlineDirs)
	var errs []error
	for dir, m := range byDir {
		if off != nil && off.DirOffline(dir) {
			continue
		}
		if err := storage.WriteOffsetCheckpointFile(logs.FS(), filepath.Join(dir, storage.ReplicationOffsetCheckpointFile), m); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// hwCheckpointLoop writes the checkpoint every interval.
func (rm *ReplicaManager) hwCheckpointLoop(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := rm.CheckpointHighWatermarks(); err != nil {
				rm.logger.Warn("writing the high watermark checkpoint failed", zap.Error(err))
			}
		}
	}
}
