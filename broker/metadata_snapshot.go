package broker

import (
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// Metadata snapshots (KRaft issue 4 part 2). The broker's metadata image
// (fed by cacheFeeder on every node, controller-only ones too) is what the
// snapshot generator writes; the feeder loads snapshots raft delivers.

// configureMetadataSnapshots sets the metadata log's snapshot and retention
// settings and starts the snapshot generator over the metadata cache. It is
// called once, after raft.NewNode and before Start.
func configureMetadataSnapshots(rn *raft.Node, cache *metadatacache.Cache, cfg *config.Config) {
	rn.SetSnapshotConfig(raft.SnapshotConfig{
		MaxBytesBetweenSnapshots: cfg.Long("metadata.log.max.record.bytes.between.snapshots"),
		MaxInterval:              time.Duration(cfg.Long("metadata.log.max.snapshot.interval.ms")) * time.Millisecond,
		RetentionBytes:           cfg.Long("metadata.max.retention.bytes"),
		RetentionMs:              cfg.Long("metadata.max.retention.ms"),
		SegmentBytes:             int64(cfg.Int("metadata.log.segment.bytes")),
		SegmentMs:                cfg.Long("metadata.log.segment.ms"),
		FetchSnapshotMaxBytes:    cfg.Int("controller.quorum.fetch.snapshot.max.bytes"),
	})
	rn.StartSnapshotGenerator(imageSnapshotSource(cache))
}

// imageSnapshotSource snapshots the published image: everything up to its
// offset, in its epoch, as records (Image.Records, framed by EncodeRecord).
func imageSnapshotSource(cache *metadatacache.Cache) raft.SnapshotSource {
	return func() (raft.SnapshotImage, bool) {
		img := cache.Image()
		if img.Offset < 0 {
			return raft.SnapshotImage{}, false
		}
		return raft.SnapshotImage{
			EndOffset:                 img.Offset + 1,
			Epoch:                     img.Epoch,
			LastContainedLogTimestamp: img.AppendTimeMs,
			Records: func() [][]byte {
				recs := img.Records()
				out := make([][]byte, len(recs))
				for i, r := range recs {
					out[i] = metadatacache.EncodeRecord(r)
				}
				return out
			},
		}, true
	}
}

var _ raft.SnapshotListener = (*cacheFeeder)(nil)

// HandleSnapshot replaces the broker's image by a snapshot's (MetadataLoader
// loading a snapshot); committed batches after the snapshot follow. The zero
// checkpoint holds the bootstrap records the format wrote, not state
// (MetadataLoader's handleLoadBootstrap ignores it too).
func (f *cacheFeeder) HandleSnapshot(s *raft.SnapshotReader) {
	if s.ID == (raft.OffsetAndEpoch{}) {
		return
	}
	var recs []metadatacache.Record
	for _, raw := range s.Records() {
		r, err := metadatacache.DecodeRecord(raw)
		if err != nil {
			f.logger.Error("undecodable metadata record in snapshot", zap.String("snapshot", raft.SnapshotFileName(s.ID)), zap.Error(err))
			continue
		}
		recs = append(recs, r)
	}
	last := s.LastContainedLogOffset()
	if err := f.cache.LoadSnapshot(metadatacache.Batch{
		BaseOffset: last, LastOffset: last, Epoch: s.ID.Epoch, AppendTimeMs: s.LastContainedLogTimestamp, Records: recs,
	}); err != nil {
		f.logger.Error("loading metadata snapshot", zap.String("snapshot", raft.SnapshotFileName(s.ID)), zap.Error(err))
	}
}
