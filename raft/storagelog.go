package raft

import (
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// maxBatchBytes is KafkaRaftClient.MAX_BATCH_SIZE_BYTES: the metadata log's
// max.message.bytes.
const maxBatchBytes = 8 << 20

// metadataLogConfig is the log config of __cluster_metadata-0
// (KafkaMetadataLog.apply): no time or size retention (snapshots clean the
// log), raft does its own flushing, 8 MiB batches.
func metadataLogConfig(segmentBytes, segmentMs int64) storage.Config {
	cfg := storage.DefaultConfig()
	if segmentBytes > 0 {
		cfg.SegmentBytes = segmentBytes
	}
	if segmentMs > 0 {
		cfg.SegmentMs = segmentMs
	}
	cfg.RetentionMs, cfg.RetentionBytes = -1, -1
	cfg.FlushMessages, cfg.FlushMs = math.MaxInt64, math.MaxInt64
	cfg.MaxMessageBytes = maxBatchBytes
	cfg.CleanupPolicy = "delete"
	return cfg
}

// storageLog is the LogStore over storage.Log: Kafka's segment files,
// indexes and leader-epoch-checkpoint in __cluster_metadata-0.
type storageLog struct{ l *storage.Log }

func openStorageLog(fs vfs.FS, dir string, segmentBytes, segmentMs int64, now func() time.Time, logger *zap.Logger) (*storageLog, error) {
	l, err := storage.OpenLog(storage.LogOptions{FS: fs, Dir: dir, Config: metadataLogConfig(segmentBytes, segmentMs), Now: now, Logger: logger})
	if err != nil {
		return nil, err
	}
	return &storageLog{l: l}, nil
}

func (s *storageLog) LogEndOffset() int64 { return s.l.LogEndOffset() }

func (s *storageLog) Append(b []byte) error {
	_, err := s.l.AppendAsFollower(b)
	return err
}

func (s *storageLog) Truncate(offset int64) error { return s.l.Truncate(offset) }
func (s *storageLog) LogStartOffset() int64       { return s.l.LogStartOffset() }
func (s *storageLog) Size() int64                 { return s.l.Size() }
func (s *storageLog) IncrementLogStartOffset(offset int64) error {
	return s.l.IncrementLogStartOffset(offset)
}
func (s *storageLog) TruncateFullyAndStartAt(offset int64) error {
	return s.l.TruncateFullyAndStartAt(offset)
}
func (s *storageLog) Flush() error { return s.l.Flush() }
func (s *storageLog) Close() error { return s.l.Close() }

func (s *storageLog) Read(from, to int64, maxBytes int) ([]byte, error) {
	return s.l.ReadBatches(from, int32(min(maxBytes, math.MaxInt32)), to, true)
}

// Epochs returns the leader-epoch cache (leader-epoch-checkpoint).
func (s *storageLog) Epochs() ([]EpochStart, error) {
	var out []EpochStart
	for _, e := range s.l.EpochEntries() {
		out = append(out, EpochStart{Epoch: int32(e[0]), StartOffset: e[1]})
	}
	return out, nil
}
