package storage

import (
	"encoding/binary"
	"io"
	"os"
	"sort"
	"sync/atomic"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Transaction index <base>.txnindex (TransactionIndex.java, AbortedTxn.java): one
// 34-byte entry per aborted transaction whose ABORT marker is in the segment:
//
//	int16 version = 0
//	int64 producerId
//	int64 firstOffset       first offset of the transaction
//	int64 lastOffset        offset of the ABORT marker
//	int64 lastStableOffset  the LSO right after the abort
//
// Created on the first entry. Read committed fetches use it to tell consumers which
// records to drop.

const abortedTxnSize = 34

// AbortedTxn is one entry of a transaction index.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

// Control record types (ControlRecordType.java).
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

type txnIndex struct {
	fs   vfs.FS
	name string
	// file is nil until the first entry or when loaded read-only. It is
	// set by an append under Log.mu while a background flush (after a
	// roll, outside Log.mu) may be syncing the same segment: atomic.
	file    atomic.Pointer[vfs.File]
	entries []AbortedTxn
}

func loadTxnIndex(fs vfs.FS, dir string, base int64) (*txnIndex, error) {
	ti := &txnIndex{fs: fs, name: segmentName(dir, base, txnIndexSuffix)}
	data, err := vfs.ReadFile(fs, ti.name)
	if err != nil {
		if os.IsNotExist(err) {
			return ti, nil
		}
		return nil, err
	}
	be := binary.BigEndian
	for len(data) >= abortedTxnSize && be.Uint16(data) == 0 {
		ti.entries = append(ti.entries, AbortedTxn{
			ProducerID:       int64(be.Uint64(data[2:])),
			FirstOffset:      int64(be.Uint64(data[10:])),
			LastOffset:       int64(be.Uint64(data[18:])),
			LastStableOffset: int64(be.Uint64(data[26:])),
		})
		data = data[abortedTxnSize:]
	}
	return ti, nil
}

// f is the open file, nil if none.
func (ti *txnIndex) f() vfs.File {
	if p := ti.file.Load(); p != nil {
		return *p
	}
	return nil
}

func (ti *txnIndex) open() error {
	if ti.f() != nil {
		return nil
	}
	f, err := ti.fs.OpenFile(ti.name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	ti.file.Store(&f)
	return nil
}

func (ti *txnIndex) append(a AbortedTxn) error {
	if err := ti.open(); err != nil {
		return err
	}
	var b [abortedTxnSize]byte
	be := binary.BigEndian
	be.PutUint64(b[2:], uint64(a.ProducerID))
	be.PutUint64(b[10:], uint64(a.FirstOffset))
	be.PutUint64(b[18:], uint64(a.LastOffset))
	be.PutUint64(b[26:], uint64(a.LastStableOffset))
	if _, err := ti.f().WriteAt(b[:], int64(len(ti.entries))*abortedTxnSize); err != nil {
		return err
	}
	ti.entries = append(ti.entries, a)
	return nil
}

// truncateTo removes the entries whose marker is at or after off.
func (ti *txnIndex) truncateTo(off int64) error {
	n := sort.Search(len(ti.entries), func(i int) bool { return ti.entries[i].LastOffset >= off })
	if n == len(ti.entries) {
		return nil
	}
	ti.entries = ti.entries[:n]
	if err := ti.open(); err != nil {
		return err
	}
	return ti.f().Truncate(int64(n) * abortedTxnSize)
}

func (ti *txnIndex) reset() error { return ti.truncateTo(-1 << 62) }

func (ti *txnIndex) sync() error {
	f := ti.f()
	if f == nil {
		return nil
	}
	return f.Sync()
}

func (ti *txnIndex) close() error {
	f := ti.f()
	if f == nil {
		return nil
	}
	err := f.Close()
	ti.file.Store(nil)
	return err
}

// controlType returns the type of a control batch from its first record's key.
func controlType(h BatchHeader, raw []byte) (int16, bool) {
	var typ int16 = -1
	_ = walkBatchRecords(h, raw, func(r *Record) error {
		if len(r.Key) >= 4 {
			typ = int16(binary.BigEndian.Uint16(r.Key[2:]))
		}
		return io.EOF
	})
	return typ, typ >= 0
}

// indexAborted appends the aborted transactions among done (as commit returned
// them, with their last stable offsets) to the transaction index of the
// segment holding each ABORT marker (LogSegment.updateTxnIndex). l.mu must be
// held.
func (l *Log) indexAborted(done []completedTxn) error {
	for _, c := range done {
		if !c.aborted {
			continue
		}
		seg := l.mu.segments[l.segmentFor(c.last)]
		if err := seg.txn.append(AbortedTxn{ProducerID: c.pid, FirstOffset: c.first, LastOffset: c.last, LastStableOffset: c.lso}); err != nil {
			return err
		}
	}
	return nil
}

// AbortedTransactions returns the aborted transactions that overlap [from, upTo),
// for a read_committed fetch starting at from whose data ends before upTo
// (LocalLog.collectAbortedTransactions).
func (l *Log) AbortedTransactions(from, upTo int64) []AbortedTxn {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.collectAbortedLocked(l.segmentFor(from), from, upTo, nil)
}

// collectAbortedLocked walks the transaction indexes from segment i on
// (TransactionIndex.collectAbortedTxns): an entry overlaps when its marker is
// at or after from and it began before upTo; the walk ends at the first entry
// whose last stable offset reaches upTo, since every later transaction
// began after it. l.mu must be held.
func (l *Log) collectAbortedLocked(i int, from, upTo int64, out []AbortedTxn) []AbortedTxn {
	for ; i < len(l.mu.segments); i++ {
		for _, a := range l.mu.segments[i].txn.entries {
			if a.LastOffset >= from && a.FirstOffset < upTo {
				out = append(out, a)
			}
			if a.LastStableOffset >= upTo {
				return out
			}
		}
	}
	return out
}

// ReadCommitted is Read for a read_committed consumer (maxOffset its last
// stable offset) with the aborted transactions a consumer needs to drop the
// records of (LocalLog.read with includeAbortedTxns, addAbortedTransactions).
// As Kafka, the upper bound of the search is the offset of the first index
// entry at or after the end of the data read (LogSegment.fetchUpperBoundOffset),
// else the next segment's base offset, else the log end offset. aborted is
// empty, not nil, when there are none, and nil only when no segment holds
// data from the offset on (Kafka answers a null list then).
func (l *Log) ReadCommitted(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (_ ReadInfo, aborted []AbortedTxn, err error) {
	defer func() { err = l.ioErr(err) }()
	l.mu.RLock()
	defer l.mu.RUnlock()
	ri, seg, empty, err := l.readLocked(offset, maxBytes, maxOffset, minOneBatch)
	switch {
	case err != nil:
		return ri, nil, err
	case empty:
		return ri, []AbortedTxn{}, nil
	case seg < 0:
		return ri, nil, nil
	}
	s := l.mu.segments[seg]
	upper := l.mu.leo
	if seg+1 < len(l.mu.segments) {
		upper = l.mu.segments[seg+1].base
	}
	if off, ok := s.idx.upperBoundOffset(ri.Region.Pos + ri.Region.Len); ok {
		upper = off
	}
	return ri, l.collectAbortedLocked(seg, offset, upper, []AbortedTxn{}), nil
}

// endTxnMarkerValueSize is EndTransactionMarker's value: int16 version 0,
// int32 coordinator epoch.
const endTxnMarkerValueSize = 6

// BuildEndTxnMarker encodes a control batch holding one end-transaction
// marker (EndTransactionMarker.java): key = control record key (version 0,
// type COMMIT or ABORT), value = int16 version 0 + int32 coordinatorEpoch,
// with the producer's id and epoch, transactional and control bits set.
func BuildEndTxnMarker(producerID int64, producerEpoch int16, commit bool, coordinatorEpoch int32, timestampMs int64) []byte {
	typ := ControlAbort
	if commit {
		typ = ControlCommit
	}
	v := make([]byte, endTxnMarkerValueSize)
	binary.BigEndian.PutUint32(v[2:], uint32(coordinatorEpoch))
	return BuildBatch(BatchOptions{Control: true, Transactional: true,
		Producer: &BatchProducer{ID: producerID, Epoch: producerEpoch, BaseSequence: NoSequence}},
		Record{Key: ControlRecordKey(typ), Value: v, Timestamp: timestampMs})
}

// ParseEndTxnMarker reads the marker of a control batch (h, raw as WalkBatches
// gives them): whether it commits, and the coordinator epoch. ok is false
// for other control batches (LEADER_CHANGE, snapshot markers) and malformed
// ones.
func ParseEndTxnMarker(h BatchHeader, raw []byte) (commit bool, coordinatorEpoch int32, ok bool) {
	commit, coordinatorEpoch, _, ok = parseEndTxnMarker(h, raw)
	return commit, coordinatorEpoch, ok
}

// parseEndTxnMarker is ParseEndTxnMarker with the record's timestamp
// (EndTransactionMarker.deserialize on the batch's first record).
func parseEndTxnMarker(h BatchHeader, raw []byte) (commit bool, coordinatorEpoch int32, timestamp int64, ok bool) {
	if !h.IsControl() {
		return false, 0, NoTimestamp, false
	}
	_ = walkBatchRecords(h, raw, func(r *Record) error {
		if len(r.Key) < 4 || binary.BigEndian.Uint16(r.Key) != 0 || len(r.Value) < endTxnMarkerValueSize {
			return io.EOF
		}
		switch int16(binary.BigEndian.Uint16(r.Key[2:])) {
		case ControlCommit:
			commit, ok = true, true
		case ControlAbort:
			ok = true
		default:
			return io.EOF
		}
		coordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
		timestamp = r.Timestamp
		return io.EOF
	})
	return commit, coordinatorEpoch, timestamp, ok
}
