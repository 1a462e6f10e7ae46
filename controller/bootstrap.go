package controller

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// Bootstrap metadata: the records the first active controller writes on an
// empty log (Kafka's BootstrapMetadata).
//
// Since Kafka 4.2 (KAFKA-19648) kafka-storage.sh format writes them, on a
// node with the controller role, into the zero checkpoint of the metadata
// log, __cluster_metadata-0/00000000000000000000-0000000000.checkpoint: a
// snapshot file (SnapshotHeader, one batch of FeatureLevelRecords from
// offset 1, SnapshotFooter) that raft never replicates and hands to its
// listeners as the bootstrap snapshot (handleLoadBootstrap). Older formats
// wrote the same file as <metadata.log.dir>/bootstrap.checkpoint, which Kafka
// 4.4 still reads when the zero checkpoint has no metadata records. A
// directory with neither bootstraps DefaultBootstrapFeatures.
//
// kgo-broker writes and reads both as Kafka does, so a directory formatted
// by either tool starts either server.

// BootstrapSnapshotFile is the zero checkpoint's name in the metadata
// partition directory.
var BootstrapSnapshotFile = raft.SnapshotFileName(raft.OffsetAndEpoch{})

// LegacyBootstrapFile is the bootstrap file of Kafka before 4.2, in the
// metadata log dir.
const LegacyBootstrapFile = "bootstrap.checkpoint"

// metadataPartitionDir is the raft partition directory under a metadata log dir.
func metadataPartitionDir(metadataLogDir string) string {
	return filepath.Join(metadataLogDir, "__cluster_metadata-0")
}

// BootstrapRecords are the FeatureLevelRecords of the features, in order.
func BootstrapRecords(features []Feature) []metadatacache.Record {
	out := make([]metadatacache.Record, 0, len(features))
	for _, f := range features {
		out = append(out, featureRecord(f.Name, f.Level))
	}
	return out
}

// EncodeBootstrapCheckpoint renders the zero checkpoint kafka-storage.sh
// format writes for these records (Formatter.writeBoostrapSnapshot); ctl are
// the kraft.version and, for --standalone or --initial-controllers, the
// initial voters, in the header's batch (raft reads them as the voter set of
// an empty log).
func EncodeBootstrapCheckpoint(records []metadatacache.Record, nowMs int64, ctl raft.SnapshotControl) []byte {
	raw := make([][]byte, len(records))
	for i, r := range records {
		raw[i] = metadatacache.EncodeRecord(r)
	}
	return raft.EncodeSnapshotControl(raft.OffsetAndEpoch{}, nowMs, nowMs, ctl, raw)
}

// WriteBootstrapCheckpoint writes the zero checkpoint of a static quorum
// (kraft.version 0) into the metadata log dir.
func WriteBootstrapCheckpoint(metadataLogDir string, records []metadatacache.Record, nowMs int64) error {
	return WriteBootstrapCheckpointControl(metadataLogDir, records, nowMs, raft.SnapshotControl{})
}

// WriteBootstrapCheckpointControl writes the zero checkpoint into the
// metadata log dir (creating __cluster_metadata-0), through a temporary file
// that is synced and renamed into place.
func WriteBootstrapCheckpointControl(metadataLogDir string, records []metadatacache.Record, nowMs int64, ctl raft.SnapshotControl) error {
	dir := metadataPartitionDir(metadataLogDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, BootstrapSnapshotFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(EncodeBootstrapCheckpoint(records, nowMs, ctl))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// DecodeBootstrapCheckpoint returns the metadata records of a bootstrap
// file (zero checkpoint or legacy bootstrap.checkpoint).
func DecodeBootstrapCheckpoint(b []byte) ([]metadatacache.Record, error) {
	s, err := raft.DecodeSnapshot(raft.OffsetAndEpoch{}, b)
	if err != nil {
		return nil, err
	}
	return decodeAll(s.Records())
}

func decodeAll(raw [][]byte) ([]metadatacache.Record, error) {
	out := make([]metadatacache.Record, 0, len(raw))
	for i, b := range raw {
		r, err := metadatacache.DecodeRecord(b)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadBootstrap reads the bootstrap records a metadata log dir holds: the
// zero checkpoint's when it has metadata records, else the legacy
// bootstrap.checkpoint's, else none (nil, nil).
func ReadBootstrap(metadataLogDir string) ([]metadatacache.Record, error) {
	for _, p := range []string{
		filepath.Join(metadataPartitionDir(metadataLogDir), BootstrapSnapshotFile),
		filepath.Join(metadataLogDir, LegacyBootstrapFile),
	} {
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		recs, err := DecodeBootstrapCheckpoint(b)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if len(recs) > 0 {
			return recs, nil
		}
	}
	return nil, nil
}

// BootstrapFeaturesOf returns the finalized features among bootstrap
// records, and checks that metadata.version is one kgo-broker runs.
func BootstrapFeaturesOf(recs []metadatacache.Record) ([]Feature, error) {
	var out []Feature
	hasMV := false
	for _, r := range recs {
		if f, ok := r.(*metadatacache.FeatureLevelRecord); ok {
			out = append(out, Feature{f.Name, f.FeatureLevel})
			if f.Name == featureMetadataVersion {
				if _, known := metadatacache.MetadataVersionOf(f.FeatureLevel); !known {
					return nil, fmt.Errorf("bootstrap metadata.version %d is not one kgo-broker supports (%d to %d)",
						f.FeatureLevel, metadatacache.MinimumMetadataVersion, metadatacache.LatestMetadataVersion)
				}
				hasMV = true
			}
		}
	}
	if !hasMV {
		return nil, errors.New("bootstrap metadata has no metadata.version")
	}
	return out, nil
}
