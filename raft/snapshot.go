package raft

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Snapshots on disk (Snapshots.java, FileRawSnapshotWriter.java,
// RecordsSnapshotWriter.java). A snapshot of the state up to (not including)
// offset O, whose last contained batch has epoch E, is the file
//
//	<partition dir>/%020d(O)-%010d(E).checkpoint
//
// written first as <name>-<random>.checkpoint.part, fsynced, then renamed
// (and the directory fsynced): a .checkpoint file is always complete. A
// snapshot being deleted is renamed to .checkpoint.deleted first. Its content
// is raft batches (magic 2, PartitionLeaderEpoch E, offsets from 0):
//
//	control batch   SnapshotHeaderRecord{Version 0, LastContainedLogTimestamp}
//	data batches    the records of the state (metadata records, framed as in the log)
//	control batch   SnapshotFooterRecord{Version 0}
//
// A kraft.version 1 snapshot has, in the header's batch after the
// SnapshotHeaderRecord, a KRaftVersionRecord and the VotersRecord in effect
// at its last contained offset (RecordsSnapshotWriter); kraft.version 0
// snapshots carry neither.

const (
	snapshotSuffix        = ".checkpoint"
	snapshotPartSuffix    = ".checkpoint.part"
	snapshotDeletedSuffix = ".checkpoint.deleted"

	// snapshotBatchRecords bounds the records per data batch of a snapshot
	// (RaftSnapshotWriter hands the writer lists of this many records).
	snapshotBatchRecords = 1024
	// snapshotBatchBytes bounds a data batch of a snapshot (MAX_BATCH_SIZE_BYTES).
	snapshotBatchBytes = maxBatchBytes

	snapshotHeaderVersion int16 = 0
	snapshotFooterVersion int16 = 0
)

// bootstrapSnapshotID is Snapshots.BOOTSTRAP_SNAPSHOT_ID: never replicated.
var bootstrapSnapshotID = OffsetAndEpoch{Offset: 0, Epoch: 0}

// SnapshotFileName is the file name of a frozen snapshot.
func SnapshotFileName(id OffsetAndEpoch) string {
	return fmt.Sprintf("%020d-%010d%s", id.Offset, id.Epoch, snapshotSuffix)
}

type snapshotFileKind uint8

const (
	snapshotFrozen snapshotFileKind = iota
	snapshotPartial
	snapshotDeleted
)

// parseSnapshotName parses a snapshot file name (Snapshots.parse).
func parseSnapshotName(name string) (OffsetAndEpoch, snapshotFileKind, bool) {
	kind := snapshotFrozen
	base := name
	switch {
	case strings.HasSuffix(name, snapshotPartSuffix):
		kind, base = snapshotPartial, strings.TrimSuffix(name, snapshotPartSuffix)
	case strings.HasSuffix(name, snapshotDeletedSuffix):
		kind, base = snapshotDeleted, strings.TrimSuffix(name, snapshotDeletedSuffix)
	case strings.HasSuffix(name, snapshotSuffix):
		base = strings.TrimSuffix(name, snapshotSuffix)
	default:
		return OffsetAndEpoch{}, 0, false
	}
	// <20 digits>-<10 digits>[-<random>]
	if len(base) < 31 || base[20] != '-' {
		return OffsetAndEpoch{}, 0, false
	}
	off, err1 := strconv.ParseInt(base[:20], 10, 64)
	ep, err2 := strconv.ParseInt(base[21:31], 10, 32)
	if err1 != nil || err2 != nil || off < 0 || ep < 0 {
		return OffsetAndEpoch{}, 0, false
	}
	if kind != snapshotPartial && len(base) != 31 {
		return OffsetAndEpoch{}, 0, false
	}
	return OffsetAndEpoch{Offset: off, Epoch: int32(ep)}, kind, true
}

// encodeSnapshotHeader renders SnapshotHeaderRecord v0 (flexible): Version,
// LastContainedLogTimestamp, no tagged fields.
func encodeSnapshotHeader(lastContainedLogTimestamp int64) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(snapshotHeaderVersion))
	b = binary.BigEndian.AppendUint64(b, uint64(lastContainedLogTimestamp))
	return append(b, 0)
}

// encodeSnapshotFooter renders SnapshotFooterRecord v0: Version, no tagged fields.
func encodeSnapshotFooter() []byte {
	return append(binary.BigEndian.AppendUint16(nil, uint16(snapshotFooterVersion)), 0)
}

func decodeSnapshotHeader(v []byte) (int64, error) {
	if len(v) < 11 || int16(binary.BigEndian.Uint16(v)) != snapshotHeaderVersion {
		return 0, fmt.Errorf("%w: bad SnapshotHeaderRecord", errBadSnapshot)
	}
	return int64(binary.BigEndian.Uint64(v[2:])), nil
}

// errBadSnapshot reports a snapshot file that is not header, records, footer.
var errBadSnapshot = errors.New("raft: corrupt snapshot")

// SnapshotControl are the control records a snapshot carries after its
// header, in the header's batch (RecordsSnapshotWriter): a KRaftVersionRecord
// when the kraft.version is 1 or more, and the voter set when there is one
// (never at kraft.version 0).
type SnapshotControl struct {
	KRaftVersion int16
	Voters       *VoterSet
}

// EncodeSnapshot renders a whole snapshot file of kraft.version 0: the
// header batch, the records in batches of at most 1024 records (and 8 MiB),
// the footer batch. Every batch carries the snapshot's epoch and nowMs as
// its timestamp.
func EncodeSnapshot(id OffsetAndEpoch, lastContainedLogTimestamp, nowMs int64, records [][]byte) []byte {
	return EncodeSnapshotControl(id, lastContainedLogTimestamp, nowMs, SnapshotControl{}, records)
}

// EncodeSnapshotControl is EncodeSnapshot with the control records of ctl
// in the header batch.
func EncodeSnapshotControl(id OffsetAndEpoch, lastContainedLogTimestamp, nowMs int64, ctl SnapshotControl, records [][]byte) []byte {
	head := Entry{Offset: 0, Epoch: id.Epoch, AppendTimeMs: nowMs, Control: true,
		ControlType: ControlSnapshotHeader, Records: [][]byte{encodeSnapshotHeader(lastContainedLogTimestamp)}}
	if ctl.KRaftVersion > 0 {
		head.ControlTypes = []int16{ControlSnapshotHeader, ControlKRaftVersion}
		head.Records = append(head.Records, EncodeKRaftVersionRecord(ctl.KRaftVersion))
		if ctl.Voters != nil {
			head.ControlTypes = append(head.ControlTypes, ControlKRaftVoters)
			head.Records = append(head.Records, EncodeVotersRecord(*ctl.Voters))
		}
	}
	head.LastOffset = int64(len(head.Records)) - 1
	out := EncodeEntry(head)
	off := head.LastOffset + 1
	for len(records) > 0 {
		n, size := 0, 0
		for n < len(records) && n < snapshotBatchRecords && (n == 0 || size+len(records[n])+32 <= snapshotBatchBytes-batchHeaderSize) {
			size += len(records[n]) + 32
			n++
		}
		out = append(out, EncodeEntry(Entry{Offset: off, LastOffset: off + int64(n) - 1, Epoch: id.Epoch, AppendTimeMs: nowMs,
			Records: records[:n]})...)
		off += int64(n)
		records = records[n:]
	}
	return append(out, EncodeEntry(Entry{Offset: off, LastOffset: off, Epoch: id.Epoch, AppendTimeMs: nowMs, Control: true,
		ControlType: ControlSnapshotFooter, Records: [][]byte{encodeSnapshotFooter()}})...)
}

// SnapshotReader is a snapshot as listeners get it (Kafka's SnapshotReader):
// its id, the timestamp of its header, and its data batches in order (the
// header and footer control batches are not included).
type SnapshotReader struct {
	ID                        OffsetAndEpoch
	LastContainedLogTimestamp int64
	Batches                   []Batch
	// Control: the KRaftVersionRecord and VotersRecord of the snapshot
	// (kraft.version 0 and no voters when it has none).
	Control SnapshotControl
}

// LastContainedLogOffset is the offset of the last record the snapshot
// includes (its end offset minus one).
func (s *SnapshotReader) LastContainedLogOffset() int64 { return s.ID.Offset - 1 }

// LastContainedLogEpoch is the epoch of the snapshot.
func (s *SnapshotReader) LastContainedLogEpoch() int32 { return s.ID.Epoch }

// Records returns every record value of the snapshot, in order.
func (s *SnapshotReader) Records() [][]byte {
	var out [][]byte
	for _, b := range s.Batches {
		out = append(out, b.Records...)
	}
	return out
}

// DecodeSnapshot checks a snapshot file's content (CRCs, header first,
// footer last, offsets contiguous from 0) and decodes its data batches.
func DecodeSnapshot(id OffsetAndEpoch, b []byte) (*SnapshotReader, error) {
	s := &SnapshotReader{ID: id}
	var (
		next       int64
		sawHeader  bool
		sawFooter  bool
		firstBatch = true
	)
	err := walkBatches(b, true, func(h batchHeader, raw []byte) error {
		if sawFooter {
			return fmt.Errorf("%w: batch after the footer", errBadSnapshot)
		}
		if h.baseOffset != next {
			return fmt.Errorf("%w: batch at %d, expected %d", errBadSnapshot, h.baseOffset, next)
		}
		next = h.lastOffset() + 1
		if h.control() {
			recs, err := controlRecords(h, raw)
			if err != nil {
				return err
			}
			for i, r := range recs {
				switch {
				case r.typ == ControlSnapshotHeader && firstBatch && i == 0:
					ts, err := decodeSnapshotHeader(r.value)
					if err != nil {
						return err
					}
					s.LastContainedLogTimestamp, sawHeader = ts, true
				case r.typ == ControlSnapshotFooter && !firstBatch:
					sawFooter = true
				case r.typ == ControlKRaftVersion && sawHeader:
					v, err := DecodeKRaftVersionRecord(r.value)
					if err != nil {
						return fmt.Errorf("%w: %v", errBadSnapshot, err)
					}
					s.Control.KRaftVersion = v
				case r.typ == ControlKRaftVoters && sawHeader:
					vs, err := DecodeVotersRecord(r.value)
					if err != nil {
						return fmt.Errorf("%w: %v", errBadSnapshot, err)
					}
					s.Control.Voters = &vs
				default:
					return fmt.Errorf("%w: unexpected control record type %d", errBadSnapshot, r.typ)
				}
			}
			firstBatch = false
			return nil
		}
		vals, err := recordValues(h, raw)
		if err != nil {
			return err
		}
		if firstBatch {
			return fmt.Errorf("%w: no SnapshotHeaderRecord", errBadSnapshot)
		}
		s.Batches = append(s.Batches, Batch{BaseOffset: h.baseOffset, LastOffset: h.lastOffset(), Epoch: h.epoch,
			AppendTimeMs: h.maxTs, Records: vals, SizeInBytes: len(raw)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !sawHeader || !sawFooter {
		return nil, fmt.Errorf("%w: header or footer missing", errBadSnapshot)
	}
	return s, nil
}

// ---------------------------------------------------------------------------
// snapshot files

// snapshotFiles keeps the frozen snapshots of a partition dir (KafkaMetadataLog's
// snapshots map). Not safe for concurrent use: the node holds its mutex.
type snapshotFiles struct {
	fs  vfs.FS
	dir string
	ids []SnapshotInfo // ascending
	// part is the snapshot being fetched from the leader, if any.
	part     vfs.File
	partPath string
	partID   OffsetAndEpoch
	partSize int64
	ts       map[OffsetAndEpoch]int64 // LastContainedLogTimestamp, read lazily
}

func (s *snapshotFiles) path(id OffsetAndEpoch) string {
	return filepath.Join(s.dir, SnapshotFileName(id))
}

// recover scans the dir as KafkaMetadataLog.recoverSnapshots: partial and
// deleted snapshots and those below the log start offset are deleted; with a
// log start offset above 0 a snapshot at or above it must exist.
func (s *snapshotFiles) recover(logStart int64) error {
	ents, err := s.fs.ReadDir(s.dir)
	if err != nil {
		return err
	}
	var del []string
	for _, e := range ents {
		id, kind, ok := parseSnapshotName(e.Name())
		if !ok {
			continue
		}
		if kind != snapshotFrozen || id.Offset < logStart {
			del = append(del, e.Name())
			continue
		}
		st, err := s.fs.Stat(filepath.Join(s.dir, e.Name()))
		if err != nil {
			return err
		}
		s.ids = append(s.ids, SnapshotInfo{ID: id, Size: st.Size()})
	}
	slices.SortFunc(s.ids, func(a, b SnapshotInfo) int { return compareOffsetAndEpoch(a.ID, b.ID) })
	if logStart > 0 && (len(s.ids) == 0 || s.ids[len(s.ids)-1].ID.Offset < logStart) {
		return fmt.Errorf("raft: inconsistent snapshot state: the log starts at %d but no snapshot reaches it", logStart)
	}
	for _, name := range del {
		if err := s.fs.Remove(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

func compareOffsetAndEpoch(a, b OffsetAndEpoch) int {
	if a.Offset != b.Offset {
		if a.Offset < b.Offset {
			return -1
		}
		return 1
	}
	return int(a.Epoch) - int(b.Epoch)
}

func (s *snapshotFiles) latest() (SnapshotInfo, bool) {
	if len(s.ids) == 0 {
		return SnapshotInfo{}, false
	}
	return s.ids[len(s.ids)-1], true
}

func (s *snapshotFiles) find(id OffsetAndEpoch) (SnapshotInfo, bool) {
	for _, m := range s.ids {
		if m.ID == id {
			return m, true
		}
	}
	return SnapshotInfo{}, false
}

// write stores a complete snapshot: .part, fsync, rename, fsync the dir.
func (s *snapshotFiles) write(id OffsetAndEpoch, content []byte) error {
	tmp, err := s.createPart(id)
	if err != nil {
		return err
	}
	if err := writeSynced(s.fs, tmp, content); err != nil {
		return err
	}
	return s.freeze(tmp, id, int64(len(content)))
}

// writeSynced creates path with content and fsyncs it (removed on failure).
func writeSynced(fs vfs.FS, path string, content []byte) error {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fs.Remove(path)
	}
	return err
}

func (s *snapshotFiles) setTimestamp(id OffsetAndEpoch, ts int64) {
	if s.ts == nil {
		s.ts = map[OffsetAndEpoch]int64{}
	}
	s.ts[id] = ts
}

// timestamp is the snapshot's LastContainedLogTimestamp (Snapshots.lastContainedLogTimestamp):
// read from the header batch the first time.
func (s *snapshotFiles) timestamp(id OffsetAndEpoch) (int64, error) {
	if ts, ok := s.ts[id]; ok {
		return ts, nil
	}
	b, err := s.readAt(id, 0, 4096)
	if err != nil {
		return 0, err
	}
	var ts int64 = -1
	err = walkBatches(b, false, func(h batchHeader, raw []byte) error {
		vals, err := recordValues(h, raw)
		if err != nil || !h.control() || len(vals) == 0 {
			return fmt.Errorf("%w: no header batch", errBadSnapshot)
		}
		if ts, err = decodeSnapshotHeader(vals[0]); err != nil {
			return err
		}
		return errStopDecode
	})
	if err != errStopDecode {
		if err == nil {
			err = fmt.Errorf("%w: no header batch", errBadSnapshot)
		}
		return 0, err
	}
	s.setTimestamp(id, ts)
	return ts, nil
}

// control reads the control records of a snapshot's header batch.
func (s *snapshotFiles) control(id OffsetAndEpoch) (SnapshotControl, error) {
	b, err := s.readAt(id, 0, 4096)
	if err != nil {
		return SnapshotControl{}, err
	}
	if len(b) >= 12 {
		if size := int64(int32(binary.BigEndian.Uint32(b[8:]))) + 12; size > int64(len(b)) && size <= maxBatchBytes {
			if b, err = s.readAt(id, 0, int(size)); err != nil {
				return SnapshotControl{}, err
			}
		}
	}
	return decodeSnapshotControl(b)
}

// decodeSnapshotControl decodes the control records of the first batch of
// a snapshot (the header's).
func decodeSnapshotControl(b []byte) (SnapshotControl, error) {
	var ctl SnapshotControl
	err := walkBatches(b, true, func(h batchHeader, raw []byte) error {
		if !h.control() {
			return fmt.Errorf("%w: no header batch", errBadSnapshot)
		}
		recs, err := controlRecords(h, raw)
		if err != nil {
			return err
		}
		for _, r := range recs {
			switch r.typ {
			case ControlKRaftVersion:
				if ctl.KRaftVersion, err = DecodeKRaftVersionRecord(r.value); err != nil {
					return err
				}
			case ControlKRaftVoters:
				vs, err := DecodeVotersRecord(r.value)
				if err != nil {
					return err
				}
				ctl.Voters = &vs
			}
		}
		return errStopDecode
	})
	if err == errStopDecode || err == nil && len(b) == 0 {
		return ctl, nil
	}
	if err == nil {
		err = fmt.Errorf("%w: no header batch", errBadSnapshot)
	}
	return ctl, err
}

func (s *snapshotFiles) createPart(id OffsetAndEpoch) (string, error) {
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	name := fmt.Sprintf("%020d-%010d-%s%s", id.Offset, id.Epoch, hex.EncodeToString(r[:]), snapshotPartSuffix)
	return filepath.Join(s.dir, name), nil
}

// freeze renames a synced .part file to its final name and records it.
func (s *snapshotFiles) freeze(tmp string, id OffsetAndEpoch, size int64) error {
	if err := s.fs.Rename(tmp, s.path(id)); err != nil {
		return err
	}
	if err := s.fs.SyncDir(s.dir); err != nil {
		return err
	}
	delete(s.ts, id)
	for i := range s.ids {
		if s.ids[i].ID == id { // replaced by the rename: the new file's size
			s.ids[i].Size = size
			return nil
		}
	}
	s.ids = append(s.ids, SnapshotInfo{ID: id, Size: size})
	slices.SortFunc(s.ids, func(a, b SnapshotInfo) int { return compareOffsetAndEpoch(a.ID, b.ID) })
	return nil
}

// read returns a whole snapshot file.
func (s *snapshotFiles) read(id OffsetAndEpoch) ([]byte, error) {
	return vfs.ReadFile(s.fs, s.path(id))
}

// readAt returns up to n bytes of a snapshot from pos.
func (s *snapshotFiles) readAt(id OffsetAndEpoch, pos int64, n int) ([]byte, error) {
	f, err := s.fs.Open(s.path(id))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	k, err := f.ReadAt(buf, pos)
	if err == io.EOF {
		err = nil
	}
	return buf[:k], err
}

// forgetBefore deletes every snapshot older than id (rename to
// .checkpoint.deleted, then remove) and returns how many went.
func (s *snapshotFiles) forgetBefore(id OffsetAndEpoch) (int, error) {
	n := 0
	for n < len(s.ids) && compareOffsetAndEpoch(s.ids[n].ID, id) < 0 {
		n++
	}
	old := slices.Clone(s.ids[:n])
	s.ids = slices.Delete(s.ids, 0, n)
	for _, m := range old {
		delete(s.ts, m.ID)
		p := s.path(m.ID)
		del := strings.TrimSuffix(p, snapshotSuffix) + snapshotDeletedSuffix
		if err := s.fs.Rename(p, del); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, err
		}
		if err := s.fs.Remove(del); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, err
		}
	}
	if n > 0 {
		return n, s.fs.SyncDir(s.dir)
	}
	return 0, nil
}

// appendPart appends a chunk fetched from the leader to the snapshot being
// downloaded (created at position 0).
func (s *snapshotFiles) appendPart(id OffsetAndEpoch, pos int64, data []byte) error {
	if s.part != nil && (s.partID != id || pos != s.partSize) {
		s.abortPart()
	}
	if s.part == nil {
		if pos != 0 {
			return fmt.Errorf("raft: snapshot %v chunk at %d without the start", id, pos)
		}
		tmp, err := s.createPart(id)
		if err != nil {
			return err
		}
		f, err := s.fs.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		s.part, s.partPath, s.partID, s.partSize = f, tmp, id, 0
	}
	if _, err := s.part.Write(data); err != nil {
		return err
	}
	s.partSize += int64(len(data))
	return nil
}

// freezePart syncs and renames the downloaded snapshot.
func (s *snapshotFiles) freezePart(id OffsetAndEpoch) error {
	if s.part == nil || s.partID != id {
		return fmt.Errorf("raft: no download of snapshot %v to freeze", id)
	}
	f, tmp, size := s.part, s.partPath, s.partSize
	s.part = nil
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return s.freeze(tmp, id, size)
}

// abortPart drops a download in progress.
func (s *snapshotFiles) abortPart() {
	if s.part != nil {
		s.part.Close()
		_ = s.fs.Remove(s.partPath)
		s.part = nil
	}
}
