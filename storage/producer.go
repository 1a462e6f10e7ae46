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
	"sync/atomic"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Producer state (ProducerStateManager.java, ProducerAppendInfo.java,
// ProducerStateEntry.java, VerificationStateEntry.java). Guarded by the owning
// Log's mu.

const numBatchesToRetain = 5 // ProducerStateEntry.NUM_BATCHES_TO_RETAIN

// originReplication is Kafka's AppendOrigin.REPLICATION: a follower's append
// and the replay of the log, whose batches the leader validated. Epoch and
// coordinator epoch regressions are accepted (Kafka logs them), nothing is
// refused.
const originReplication AppendOrigin = -1

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

// maybeUpdateEpoch is ProducerStateEntry.maybeUpdateProducerEpoch: a new epoch
// forgets the batches of the old one.
func (e *producerEntry) maybeUpdateEpoch(epoch int16) {
	if e.epoch != epoch {
		e.batches = e.batches[:0]
		e.epoch = epoch
	}
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

// VerificationGuard is KIP-890's proof that the transaction coordinator was
// asked, after this leader last saw the producer's transaction end, whether
// the partition is part of its ongoing transaction (VerificationGuard.java).
// A guard is unique: only the pointer handed out by
// Log.MaybeStartTransactionVerification matches the producer's verification
// entry, and any marker or transactional write clears the entry, so a
// verification answered before an abort marker cannot start a transaction
// after it (the ABA case of UnifiedLog.analyzeAndValidateProducerState). nil
// is Kafka's SENTINEL: it verifies nothing.
type VerificationGuard struct{ id uint64 }

var guardSeq atomic.Uint64

func (g *VerificationGuard) String() string {
	if g == nil {
		return "VerificationGuard(SENTINEL)"
	}
	return "VerificationGuard(" + strconv.FormatUint(g.id, 10) + ")"
}

// verificationEntry is VerificationStateEntry: the guard of a producer being
// verified, and the lowest sequence and epoch seen while verifying, so that a
// higher sequence cannot be written while a lower one waits for its retry.
type verificationEntry struct {
	timestampMs       int64
	guard             *VerificationGuard
	lowestSeq         int32
	epoch             int16
	supportsEpochBump bool // transaction.version 2 (produce v12+)
}

// maybeUpdate is maybeUpdateLowestSequenceAndEpoch: a lower sequence of the
// same epoch, or any sequence of a newer epoch, becomes the lowest.
func (v *verificationEntry) maybeUpdate(seq int32, epoch int16) {
	if epoch == v.epoch && seq < v.lowestSeq {
		v.lowestSeq = seq
	}
	if epoch > v.epoch {
		v.epoch, v.lowestSeq = epoch, seq
	}
}

// txnMeta is an open transaction (TxnMetadata) or, once its marker is written,
// a completed one whose marker the high watermark has not passed yet.
type txnMeta struct {
	pid         int64
	first, last int64 // last -1 while open
}

// completedTxn is CompletedTxn, with the last stable offset right after it
// (ProducerStateManager.lastStableOffset), for the transaction index.
type completedTxn struct {
	pid, first, last int64
	aborted          bool
	lso              int64
}

type producerState struct {
	entries map[int64]*producerEntry
	// ongoing are the open transactions by first offset (ongoingTxns), and
	// unreplicated the completed ones whose markers are at or above the high
	// watermark (unreplicatedTxns): both hold the first unstable offset back.
	ongoing, unreplicated []txnMeta
	// verifications are the producers being verified (KIP-890); in memory
	// only, kept across truncations.
	verifications map[int64]*verificationEntry
}

func newProducerState() *producerState {
	return &producerState{entries: map[int64]*producerEntry{}, verifications: map[int64]*verificationEntry{}}
}

// insertTxn adds t to a list ordered by first offset.
func insertTxn(list []txnMeta, t txnMeta) []txnMeta {
	i := sort.Search(len(list), func(i int) bool { return list[i].first > t.first })
	list = append(list, txnMeta{})
	copy(list[i+1:], list[i:])
	list[i] = t
	return list
}

// loadEntries installs the entries of a snapshot: their open transactions
// become ongoing (ProducerStateManager.loadProducerEntry).
func (ps *producerState) loadEntries(entries map[int64]*producerEntry) {
	ps.entries = entries
	ps.ongoing, ps.unreplicated = ps.ongoing[:0], ps.unreplicated[:0]
	for pid, e := range entries {
		if e.currentTxnFirstOffset >= 0 {
			ps.ongoing = insertTxn(ps.ongoing, txnMeta{pid: pid, first: e.currentTxnFirstOffset, last: -1})
		}
	}
}

// hasOngoingTransaction is UnifiedLog.hasOngoingTransaction.
func (ps *producerState) hasOngoingTransaction(pid int64, epoch int16) bool {
	e := ps.entries[pid]
	return e != nil && e.currentTxnFirstOffset >= 0 && e.epoch == epoch
}

// guardOf is UnifiedLog.verificationGuard: the producer's guard, nil (the
// sentinel) when it is not being verified.
func (ps *producerState) guardOf(pid int64) *VerificationGuard {
	if v := ps.verifications[pid]; v != nil {
		return v.guard
	}
	return nil
}

// producerUpdate stages the changes one append makes (ProducerAppendInfo per
// producer), applied by commit only once the batches are written.
type producerUpdate struct {
	ps        *producerState
	origin    AppendOrigin
	tv        int16 // transaction version of markers; 0 legacy
	updated   map[int64]*producerEntry
	started   []txnMeta
	completed []completedTxn
	cleared   []int64 // producers whose verification entry goes (a transactional batch was written)
}

func (ps *producerState) begin(origin AppendOrigin, tv int16) *producerUpdate {
	return &producerUpdate{ps: ps, origin: origin, tv: tv}
}

func (u *producerUpdate) validating() bool { return u.origin != originReplication }

func (u *producerUpdate) entry(pid int64) (*producerEntry, *producerEntry) {
	cur := u.ps.entries[pid]
	if e, ok := u.updated[pid]; ok {
		return cur, e
	}
	var e *producerEntry
	if cur != nil {
		e = cur.clone()
	} else {
		e = &producerEntry{id: pid, epoch: NoProducerEpoch, currentTxnFirstOffset: -1, coordinatorEpoch: -1, lastTimestamp: NoTimestamp}
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

// append stages one batch with its final offsets (ProducerAppendInfo.append):
// a data batch after checkProducerEpoch and, from clients, checkSequence; a
// control batch as an end-transaction marker (appendEndTxnMarker). raw is
// the whole batch; only control batches are read.
func (u *producerUpdate) append(h BatchHeader, raw []byte) error {
	if !h.HasProducerID() {
		return nil
	}
	if h.IsControl() {
		return u.appendMarker(h, raw)
	}
	cur, e := u.entry(h.ProducerID)
	if h.ProducerEpoch < e.epoch && u.validating() {
		// Kafka answers INVALID_PRODUCER_EPOCH (not PRODUCER_FENCED since 2.7) so
		// that the client aborts and retries
		return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is smaller than the last seen epoch %d",
			kerr.InvalidProducerEpoch, h.ProducerID, h.BaseOffset, h.ProducerEpoch, e.epoch)
	}
	if u.origin == OriginClient {
		if err := u.checkSequence(cur, e, h); err != nil {
			return err
		}
	}
	e.maybeUpdateEpoch(h.ProducerEpoch)
	e.batches = append(e.batches, batchMetadata{lastSeq: h.LastSequence(), lastOffset: h.LastOffset(),
		offsetDelta: h.LastOffsetDelta, timestamp: h.MaxTimestamp})
	if len(e.batches) > numBatchesToRetain {
		e.batches = append(e.batches[:0], e.batches[len(e.batches)-numBatchesToRetain:]...)
	}
	e.lastTimestamp = h.MaxTimestamp
	switch {
	case e.currentTxnFirstOffset >= 0 && !h.IsTransactional():
		if u.validating() {
			return fmt.Errorf("%w: expected transactional write from producer %d at offset %d",
				kerr.InvalidTxnState, h.ProducerID, h.BaseOffset)
		}
	case e.currentTxnFirstOffset < 0 && h.IsTransactional():
		e.currentTxnFirstOffset = h.BaseOffset
		u.started = append(u.started, txnMeta{pid: h.ProducerID, first: h.BaseOffset, last: -1})
	}
	if h.IsTransactional() {
		u.cleared = append(u.cleared, h.ProducerID)
	}
	return nil
}

// checkSequence is ProducerAppendInfo.checkSequence, with the KIP-890 rules of
// a producer being verified: its lowest sequence seen caps the sequence, and
// a transaction.version 2 producer without state must start at 0.
func (u *producerUpdate) checkSequence(cur, e *producerEntry, h BatchHeader) error {
	seq := h.BaseSequence
	if v := u.ps.verifications[h.ProducerID]; v != nil {
		if v.supportsEpochBump && seq != 0 && (cur == nil || len(cur.batches) == 0) {
			return fmt.Errorf("%w: invalid sequence number for producer %d at offset %d: %d (incoming seq. number). Expected sequence 0 for transactions v2 idempotent producer with no existing state",
				kerr.OutOfOrderSequenceNumber, h.ProducerID, h.BaseOffset, seq)
		}
		if seq > v.lowestSeq {
			return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (earliest seen sequence)",
				kerr.OutOfOrderSequenceNumber, h.ProducerID, h.BaseOffset, seq, v.lowestSeq)
		}
	}
	if h.ProducerEpoch != e.epoch {
		if seq != 0 && e.epoch != NoProducerEpoch {
			return fmt.Errorf("%w: invalid sequence number for new epoch of producer %d at offset %d: %d (request epoch), %d (seq. number), %d (current producer epoch)",
				kerr.OutOfOrderSequenceNumber, h.ProducerID, h.BaseOffset, h.ProducerEpoch, seq, e.epoch)
		}
		return nil
	}
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
	// no epoch known (its records all deleted by retention or DeleteRecords):
	// any sequence is accepted
	if !(curEpoch == NoProducerEpoch || inSequence(last, seq)) {
		return fmt.Errorf("%w: out of order sequence number for producer %d at offset %d: %d (incoming seq. number), %d (current end sequence number)",
			kerr.OutOfOrderSequenceNumber, h.ProducerID, h.BaseOffset, seq, last)
	}
	return nil
}

// appendMarker is appendEndTxnMarker: the marker's epoch may not go back
// (with transaction.version 2 it must go forward, KIP-890 part 2 / KIP-1228,
// except a retry of a marker already written), its coordinator epoch may not
// go back (a zombie coordinator: TRANSACTION_COORDINATOR_FENCED), and it
// closes the producer's open transaction. A control batch the cleaner emptied
// changes nothing.
func (u *producerUpdate) appendMarker(h BatchHeader, raw []byte) error {
	if h.NumRecords == 0 {
		return nil
	}
	commit, coordEpoch, ts, ok := parseEndTxnMarker(h, raw)
	if !ok {
		if u.validating() {
			return errInvalid("control batch at offset %d of producer %d is not an end transaction marker", h.BaseOffset, h.ProducerID)
		}
		return nil
	}
	_, e := u.entry(h.ProducerID)
	if u.validating() {
		tv := u.tv
		invalid := h.ProducerEpoch < e.epoch
		if tv >= 2 {
			invalid = h.ProducerEpoch <= e.epoch
			// KAFKA-19999: the same epoch with no open transaction is a retry of a
			// marker already written (coordinator failover, lost response)
			if h.ProducerEpoch == e.epoch && e.currentTxnFirstOffset < 0 {
				invalid = false
			}
		}
		if invalid {
			cmp := "<"
			if tv >= 2 {
				cmp = "<="
			}
			return fmt.Errorf("%w: epoch of producer %d at offset %d is %d, which is %s the last seen epoch %d (TV%d)",
				kerr.InvalidProducerEpoch, h.ProducerID, h.BaseOffset, h.ProducerEpoch, cmp, e.epoch, tv)
		}
		if e.coordinatorEpoch > coordEpoch {
			return fmt.Errorf("%w: invalid coordinator epoch for producer %d at offset %d: %d (zombie), %d (current)",
				kerr.TransactionCoordinatorFenced, h.ProducerID, h.BaseOffset, coordEpoch, e.coordinatorEpoch)
		}
	}
	// only a transaction with data here moves the last stable offset and is
	// indexed
	if e.currentTxnFirstOffset >= 0 {
		u.completed = append(u.completed, completedTxn{pid: h.ProducerID, first: e.currentTxnFirstOffset,
			last: h.BaseOffset, aborted: !commit})
	}
	e.maybeUpdateEpoch(h.ProducerEpoch)
	e.currentTxnFirstOffset = -1
	e.coordinatorEpoch = coordEpoch
	e.lastTimestamp = ts
	if h.IsTransactional() {
		u.cleared = append(u.cleared, h.ProducerID)
	}
	return nil
}

// commit applies the staged changes (ProducerStateManager.update, then
// completeTxn for each transaction ended) and returns the ended
// transactions, each with the last stable offset right after it.
func (u *producerUpdate) commit() []completedTxn {
	ps := u.ps
	for pid, e := range u.updated {
		ps.entries[pid] = e
	}
	for _, t := range u.started {
		ps.ongoing = insertTxn(ps.ongoing, t)
	}
	for i := range u.completed {
		c := &u.completed[i]
		c.lso = ps.lastStableOffset(*c)
		ps.completeTxn(*c)
	}
	for _, pid := range u.cleared {
		delete(ps.verifications, pid)
	}
	return u.completed
}

// lastStableOffset is ProducerStateManager.lastStableOffset: the first offset
// of the oldest transaction of another producer still open, else the offset
// after the marker.
func (ps *producerState) lastStableOffset(c completedTxn) int64 {
	for _, t := range ps.ongoing {
		if t.pid != c.pid {
			return t.first
		}
	}
	return c.last + 1
}

// completeTxn moves a transaction from ongoing to unreplicated.
func (ps *producerState) completeTxn(c completedTxn) {
	for i, t := range ps.ongoing {
		if t.first == c.first && t.pid == c.pid {
			ps.ongoing = append(ps.ongoing[:i], ps.ongoing[i+1:]...)
			break
		}
	}
	ps.unreplicated = insertTxn(ps.unreplicated, txnMeta{pid: c.pid, first: c.first, last: c.last})
}

// removeUnreplicated drops the completed transactions whose marker is below
// offset (ProducerStateManager.removeUnreplicatedTransactions), and returns
// the smallest marker offset left (math.MaxInt64 when none).
func (ps *producerState) removeUnreplicated(offset int64) int64 {
	minLast := int64(math.MaxInt64)
	kept := ps.unreplicated[:0]
	for _, t := range ps.unreplicated {
		if t.last < offset {
			continue
		}
		kept = append(kept, t)
		minLast = min(minLast, t.last)
	}
	clear(ps.unreplicated[len(kept):])
	ps.unreplicated = kept
	return minLast
}

// minUnreplicatedLast is the smallest marker offset of the unreplicated
// transactions, math.MaxInt64 when none.
func (ps *producerState) minUnreplicatedLast() int64 {
	m := int64(math.MaxInt64)
	for _, t := range ps.unreplicated {
		m = min(m, t.last)
	}
	return m
}

// removeExpired drops producers idle for producer.id.expiration.ms with no
// open transaction, and verification entries as old
// (ProducerStateManager.removeExpiredProducers).
func (ps *producerState) removeExpired(nowMs, expirationMs int64) {
	for pid, e := range ps.entries {
		if isExpired(e, nowMs, expirationMs) {
			delete(ps.entries, pid)
		}
	}
	for pid, v := range ps.verifications {
		if nowMs-v.timestampMs >= expirationMs {
			delete(ps.verifications, pid)
		}
	}
}

// isExpired is ProducerStateManager.isProducerExpired.
func isExpired(e *producerEntry, nowMs, expirationMs int64) bool {
	return e.currentTxnFirstOffset < 0 && nowMs-e.lastTimestamp >= expirationMs
}

// firstUnstableOffset is the smallest first offset of an open transaction or
// of a completed one whose marker is not replicated yet, or -1
// (ProducerStateManager.firstUnstableOffset).
func (ps *producerState) firstUnstableOffset() int64 {
	fuo := int64(-1)
	if len(ps.ongoing) > 0 {
		fuo = ps.ongoing[0].first
	}
	if len(ps.unreplicated) > 0 && (fuo < 0 || ps.unreplicated[0].first < fuo) {
		fuo = ps.unreplicated[0].first
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
		lastTimestamp := e.lastTimestamp
		if len(e.batches) > 0 {
			last = e.batches[len(e.batches)-1]
			lastTimestamp = max(last.timestamp, lastTimestamp)
		}
		b = be.AppendUint64(b, uint64(e.id))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint32(b, uint32(last.lastSeq))
		b = be.AppendUint64(b, uint64(last.lastOffset))
		b = be.AppendUint32(b, uint32(last.offsetDelta))
		b = be.AppendUint64(b, uint64(lastTimestamp))
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
		if bm.lastOffset >= 0 {
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
