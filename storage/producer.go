package storage

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Idempotent producer state (ProducerStateManager.java, ProducerAppendInfo.java,
// ProducerStateEntry.java). Guarded by the owning Log's mu.

const numBatchesToRetain = 5 // ProducerStateEntry.NUM_BATCHES_TO_RETAIN

type batchMetadata struct {
	lastSeq     int32
	lastOffset  int64
	offsetDelta int32
	timestamp   int64
}

func (b batchMetadata) firstSeq() int32 {
	return decrementSequence(b.lastSeq, b.offsetDelta)
}
func (b batchMetadata) firstOffset() int64 { return b.lastOffset - int64(b.offsetDelta) }

func decrementSequence(seq, dec int32) int32 {
	if seq < dec {
		return math.MaxInt32 - (dec - seq) + 1
	}
	return seq - dec
}

type producerEntry struct {
	id                    int64
	epoch                 int16
	batches               []batchMetadata // oldest first, at most numBatchesToRetain
	coordinatorEpoch      int32
	currentTxnFirstOffset int64 // -1 when no open transaction
	lastTimestamp         int64
}

func (e *producerEntry) lastSeq() int32 {
	if len(e.batches) == 0 {
		return NoSequence
	}
	return e.batches[len(e.batches)-1].lastSeq
}

func (e *producerEntry) clone() *producerEntry {
	c := *e
	c.batches = append([]batchMetadata(nil), e.batches...)
	return &c
}

func (e *producerEntry) findDuplicate(h BatchHeader) (batchMetadata, bool) {
	// A batch without a sequence (a coordinator's) is never a retry.
	if h.ProducerEpoch != e.epoch || h.BaseSequence == NoSequence {
		return batchMetadata{}, false
	}
	for _, b := range e.batches {
		if b.firstSeq() == h.BaseSequence && b.lastSeq == h.LastSequence() {
			return b, true
		}
	}
	return batchMetadata{}, false
}

func inSequence(last, next int32) bool {
	return next == last+1 || (next == 0 && last == math.MaxInt32)
}

type producerState struct {
	entries map[int64]*producerEntry
}

func newProducerState() *producerState { return &producerState{entries: map[int64]*producerEntry{}} }

// producerUpdate stages the changes one append makes, applied only once it is written.
type producerUpdate struct {
	ps        *producerState
	updated   map[int64]*producerEntry
	completed []completedTxn // transactions ended by a control batch in this update
}

func (ps *producerState) begin() *producerUpdate {
	return &producerUpdate{ps: ps}
}

func (u *producerUpdate) entry(pid int64) (*producerEntry, *producerEntry) {
	cur := u.ps.entries[pid]
	if e, ok := u.updated[pid]; ok {
		return cur, e
	}
	var e *producerEntry
	if cur != nil {
		e = cur.clone()
	} else {
		e = &producerEntry{id: pid, epoch: NoProducerEpoch, currentTxnFirstOffset: -1, coordinatorEpoch: -1}
	}
	if u.updated == nil {
		u.updated = map[int64]*producerEntry{}
	}
	u.updated[pid] = e
	return cur, e
}

// duplicateOf reports whether h repeats one of the producer's last 5 batches.
func (ps *producerState) duplicateOf(h BatchHeader) (batchMetadata, bool) {
	if !h.HasProducerID() {
		return batchMetadata{}, false
	}
	e := ps.entries[h.ProducerID]
	if e == nil {
		return batchMetadata{}, false
	}
	return e.findDuplicate(h)
}

// append validates (when validate, i.e. client origin) and stages one batch with its
// final offsets. It follows ProducerAppendInfo.checkProducerEpoch / checkSequence.
func (u *producerUpdate) append(h BatchHeader, validate bool) error {
	if !h.HasProducerID() {
		return nil
	}
	cur, e := u.entry(h.ProducerID)
	if validate {
		if e.epoch != NoProducerEpoch && h.ProducerEpoch < e.epoch {
			return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is smaller than the last seen epoch %d",
				kerr.InvalidProducerEpoch, h.ProducerID, h.BaseOffset, h.ProducerEpoch, e.epoch)
		}
		// Sequences are checked for batches that carry one: client batches
		// (which must), not a coordinator's NO_SEQUENCE batches
		// (ProducerAppendInfo checks sequences for the client origin only).
		if !h.IsControl() && h.BaseSequence != NoSequence {
			if h.ProducerEpoch != e.epoch {
				if h.BaseSequence != 0 && e.epoch != NoProducerEpoch {
					return fmt.Errorf("%w: invalid sequence number for new epoch of producer %d at offset %d in partition: %d (request epoch), %d (seq. number), %d (current producer epoch)",
						kerr.OutOfOrderSequenceNumber, h.ProducerID, h.BaseOffset, h.ProducerEpoch, h.BaseSequence, e.epoch)
				}
			} else {
				last := NoSequence
				if len(e.batches) > 0 {
					last = e.lastSeq()
				} else if cur != nil && h.ProducerEpoch == cur.epoch {
					last = cur.lastSeq()
				}
				curEpoch := NoProducerEpoch
				if cur != nil {
					curEpoch = cur.epoch
				}
				if !(curEpoch == NoProducerEpoch || inSequence(last, h.BaseSequence)) {
					return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (current end sequence number)",
						kerr.OutOfOrderSequenceNumber, h.ProducerID, h.BaseOffset, h.BaseSequence, last)
				}
			}
		}
	}
	if h.ProducerEpoch != e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
	e.lastTimestamp = h.MaxTimestamp
	if h.IsControl() {
		// an end-transaction marker closes the open transaction
		if e.currentTxnFirstOffset >= 0 {
			u.completed = append(u.completed, completedTxn{pid: h.ProducerID, first: e.currentTxnFirstOffset, last: h.LastOffset()})
		}
		e.currentTxnFirstOffset = -1
		return nil
	}
	e.batches = append(e.batches, batchMetadata{lastSeq: h.LastSequence(), lastOffset: h.LastOffset(),
		offsetDelta: h.LastOffsetDelta, timestamp: h.MaxTimestamp})
	if len(e.batches) > numBatchesToRetain {
		e.batches = append(e.batches[:0], e.batches[len(e.batches)-numBatchesToRetain:]...)
	}
	if h.IsTransactional() && e.currentTxnFirstOffset < 0 {
		e.currentTxnFirstOffset = h.BaseOffset
	}
	return nil
}

func (u *producerUpdate) commit() {
	for pid, e := range u.updated {
		u.ps.entries[pid] = e
	}
}

// removeExpired drops producers idle for longer than expirationMs with no open
// transaction (ProducerStateManager.removeExpiredProducers).
func (ps *producerState) removeExpired(nowMs, expirationMs int64) {
	for pid, e := range ps.entries {
		if e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= expirationMs {
			delete(ps.entries, pid)
		}
	}
}

// firstUnstableOffset is the smallest first offset of an open transaction, or -1.
func (ps *producerState) firstUnstableOffset() int64 {
	fuo := int64(-1)
	for _, e := range ps.entries {
		if e.currentTxnFirstOffset >= 0 && (fuo < 0 || e.currentTxnFirstOffset < fuo) {
			fuo = e.currentTxnFirstOffset
		}
	}
	return fuo
}

// Producer snapshot file <offset>.snapshot (ProducerSnapshot.json, ProducerStateManager
// writeSnapshot):
//
//	int16  version = 1
//	uint32 crc32c of everything after this field
//	int32  count
//	count x { int64 producerId; int16 epoch; int32 lastSequence; int64 lastOffset;
//	          int32 offsetDelta; int64 timestamp; int32 coordinatorEpoch;
//	          int64 currentTxnFirstOffset }   (46 bytes each)
const (
	snapshotVersion   = 1
	snapshotEntrySize = 46
)

func (ps *producerState) encodeSnapshot() []byte {
	ids := make([]int64, 0, len(ps.entries))
	for id := range ps.entries {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	b := make([]byte, 10, 10+len(ids)*snapshotEntrySize)
	be := binary.BigEndian
	be.PutUint16(b, snapshotVersion)
	be.PutUint32(b[6:], uint32(len(ids)))
	for _, id := range ids {
		e := ps.entries[id]
		last := batchMetadata{lastSeq: NoSequence, lastOffset: -1, timestamp: NoTimestamp}
		if len(e.batches) > 0 {
			last = e.batches[len(e.batches)-1]
		}
		b = be.AppendUint64(b, uint64(e.id))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint32(b, uint32(last.lastSeq))
		b = be.AppendUint64(b, uint64(last.lastOffset))
		b = be.AppendUint32(b, uint32(last.offsetDelta))
		b = be.AppendUint64(b, uint64(max(last.timestamp, e.lastTimestamp)))
		b = be.AppendUint32(b, uint32(e.coordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.currentTxnFirstOffset))
	}
	be.PutUint32(b[2:], crc32.Checksum(b[6:], crc32c))
	return b
}

func decodeSnapshot(b []byte) (map[int64]*producerEntry, error) {
	be := binary.BigEndian
	if len(b) < 10 {
		return nil, fmt.Errorf("producer snapshot too short (%d bytes)", len(b))
	}
	if v := be.Uint16(b); v != snapshotVersion {
		return nil, fmt.Errorf("producer snapshot has unknown version %d", v)
	}
	if crc := crc32.Checksum(b[6:], crc32c); crc != be.Uint32(b[2:]) {
		return nil, fmt.Errorf("producer snapshot crc mismatch")
	}
	n := int32(be.Uint32(b[6:]))
	rest := b[10:]
	if n < 0 || int64(n)*snapshotEntrySize != int64(len(rest)) {
		return nil, fmt.Errorf("producer snapshot has %d entries in %d bytes", n, len(rest))
	}
	out := make(map[int64]*producerEntry, n)
	for i := int32(0); i < n; i++ {
		r := rest[int(i)*snapshotEntrySize:]
		e := &producerEntry{
			id:                    int64(be.Uint64(r)),
			epoch:                 int16(be.Uint16(r[8:])),
			coordinatorEpoch:      int32(be.Uint32(r[34:])),
			currentTxnFirstOffset: int64(be.Uint64(r[38:])),
		}
		bm := batchMetadata{
			lastSeq:     int32(be.Uint32(r[10:])),
			lastOffset:  int64(be.Uint64(r[14:])),
			offsetDelta: int32(be.Uint32(r[22:])),
			timestamp:   int64(be.Uint64(r[26:])),
		}
		e.lastTimestamp = bm.timestamp
		if bm.lastOffset >= 0 && bm.lastSeq >= 0 {
			e.batches = []batchMetadata{bm}
		}
		out[e.id] = e
	}
	return out, nil
}

// snapshotOffsets lists the offsets of the <offset>.snapshot files in dir, ascending.
func snapshotOffsets(fs vfs.FS, dir string) ([]int64, error) {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, snapshotSuffix) {
			continue
		}
		off, err := strconv.ParseInt(strings.TrimSuffix(name, snapshotSuffix), 10, 64)
		if err == nil && off >= 0 {
			out = append(out, off)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func writeSnapshot(fs vfs.FS, dir string, off int64, ps *producerState) error {
	return vfs.WriteFileAtomic(fs, segmentName(dir, off, snapshotSuffix), ps.encodeSnapshot())
}

func removeSnapshot(fs vfs.FS, dir string, off int64) error {
	err := fs.Remove(filepath.Join(dir, fmt.Sprintf("%020d%s", off, snapshotSuffix)))
	if os.IsNotExist(err) {
		return nil
	}
	return err
}
