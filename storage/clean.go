package storage

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Log compaction (cleanup.policy=compact), after Kafka's Cleaner.java,
// CleanedTransactionMetadata.java, SkimpyOffsetMap.java and MemoryRecords.filterTo.
//
// A log's offsets split at the first dirty offset (the cleaner-offset-checkpoint):
// below it the log was cleaned, above it records are as appended. A cleaning
//
//  1. builds an offset map (hash of key -> latest offset) over the dirty section up
//     to the first uncleanable offset: the active segment, the first unstable
//     offset (an open transaction) and segments younger than min.compaction.lag.ms
//     are never cleaned; aborted transactional records are left out;
//  2. groups the segments from the log start up to the end of the map so that a
//     group fits one segment (segment.bytes, segment.index.bytes, int32 offsets);
//  3. copies every group into one new segment <base>.log.cleaned (+ .index.cleaned,
//     .timeindex.cleaned, .txnindex.cleaned), batch by batch: a batch whose records
//     all stay is copied byte for byte; otherwise it is rewritten with the same base
//     offset, last offset delta, leader epoch, producer id/epoch/base sequence and
//     codec, fewer records and a new CRC; a batch with a tombstone or the marker of
//     an emptied transaction gets its delete horizon (now + delete.retention.ms) in
//     the base timestamp with attribute bit 6, and once it has passed the tombstones
//     (and markers) go;
//  4. swaps it in: fsync the cleaned files, rename them .cleaned -> .swap (the
//     .log last: its .swap name is the commit point), fsync the directory, rename
//     the old segments' files .deleted (removed file.delete.delay.ms later), fsync,
//     rename .swap -> final names, fsync (LocalLog.replaceSegments).
//
// On open (completeSwaps) a <base>.log.swap means the swap committed: every other
// segment with a base offset in [base, next offset of the swap) is removed and the
// swap files renamed; .cleaned files and .swap index files without a .log.swap are
// removed (the swap had not committed, or the index is rebuilt). The cleaned segment
// always keeps the last batch of its group, emptied if need be (Kafka keeps the
// last batch of the cleaning round only), so that [base, next offset of the swap)
// covers exactly the segments it replaces.

const (
	cleanedSuffix = ".cleaned"
	swapSuffix    = ".swap"
)

// errCleaningAborted: the log changed under the cleaner (truncation, retention,
// DeleteRecords, close); the cleaned files are dropped and nothing is lost.
var errCleaningAborted = errors.New("storage: log cleaning aborted")

// offsetMap maps an MD5 hash of a key to the latest offset of that key, with at
// most limit entries: what SkimpyOffsetMap holds in log.cleaner.dedupe.buffer.size
// bytes (24 bytes per entry) filled to log.cleaner.io.buffer.load.factor.
type offsetMap struct {
	m      map[[md5.Size]byte]int64
	limit  int
	latest int64 // the last offset put (or covered), -1 when empty
}

func newOffsetMap(memory int64, loadFactor float64) *offsetMap {
	slots := memory / (md5.Size + 8)
	limit := int(float64(slots) * loadFactor)
	return &offsetMap{m: map[[md5.Size]byte]int64{}, limit: max(limit, 1), latest: -1}
}

func (om *offsetMap) reset() {
	clear(om.m)
	om.latest = -1
}

func (om *offsetMap) full() bool { return len(om.m) >= om.limit }

func (om *offsetMap) put(key []byte, off int64) {
	om.m[md5.Sum(key)] = off
	om.latest = off
}

func (om *offsetMap) get(key []byte) int64 {
	if off, ok := om.m[md5.Sum(key)]; ok {
		return off
	}
	return -1
}

// cleanedTxns follows transactions through a cleaning (CleanedTransactionMetadata):
// which data batches are aborted, which markers may go, and which aborted
// transactions the cleaned segment's transaction index keeps.
type cleanedTxns struct {
	pending   []AbortedTxn // by first offset, not yet reached
	seen      map[AbortedTxn]bool
	aborted   map[int64]*abortedMeta // producer id -> ongoing aborted transaction
	committed map[int64]bool         // producer ids with an ongoing committed transaction
	index     *txnIndex              // the cleaned segment's, nil while building the map
}

type abortedMeta struct {
	txn          AbortedTxn
	lastObsolete int64 // last offset of a discarded batch of it, -1 none
}

func newCleanedTxns() *cleanedTxns {
	return &cleanedTxns{seen: map[AbortedTxn]bool{}, aborted: map[int64]*abortedMeta{}, committed: map[int64]bool{}}
}

func (t *cleanedTxns) add(txns []AbortedTxn) {
	for _, a := range txns {
		if !t.seen[a] {
			t.seen[a] = true
			t.pending = append(t.pending, a)
		}
	}
	sort.SliceStable(t.pending, func(i, j int) bool { return t.pending[i].FirstOffset < t.pending[j].FirstOffset })
}

func (t *cleanedTxns) consumeUpTo(off int64) {
	for len(t.pending) > 0 && t.pending[0].FirstOffset <= off {
		a := t.pending[0]
		t.pending = t.pending[1:]
		if _, ok := t.aborted[a.ProducerID]; !ok {
			t.aborted[a.ProducerID] = &abortedMeta{txn: a, lastObsolete: -1}
		}
	}
}

// onBatch reports whether a data batch belongs to an aborted transaction.
func (t *cleanedTxns) onBatch(h BatchHeader) bool {
	t.consumeUpTo(h.LastOffset())
	if !h.IsTransactional() {
		return false
	}
	if am, ok := t.aborted[h.ProducerID]; ok {
		am.lastObsolete = h.LastOffset()
		return true
	}
	t.committed[h.ProducerID] = true
	return false
}

// onControl reports whether a marker may be discarded: no data of its transaction
// was met in this cleaning (so none is left in the log).
func (t *cleanedTxns) onControl(h BatchHeader, raw []byte) (bool, error) {
	t.consumeUpTo(h.LastOffset())
	if h.NumRecords == 0 {
		return true, nil // emptied by an earlier cleaning
	}
	typ, ok := controlType(h, raw)
	if !ok {
		return false, nil
	}
	switch typ {
	case ControlAbort:
		am, ok := t.aborted[h.ProducerID]
		delete(t.aborted, h.ProducerID)
		if ok && am.lastObsolete >= 0 {
			if t.index != nil {
				if err := t.index.append(am.txn); err != nil {
					return false, err
				}
			}
			return false, nil
		}
		return true, nil
	case ControlCommit:
		had := t.committed[h.ProducerID]
		delete(t.committed, h.ProducerID)
		return !had, nil
	}
	return false, nil
}

// deleteHorizon returns the batch's delete horizon (attribute bit 6: the base
// timestamp holds it).
func deleteHorizon(h BatchHeader) (int64, bool) {
	if h.Attributes&attrDeleteHorizon == 0 {
		return 0, false
	}
	return h.BaseTimestamp, true
}

// lastRecord is what the cleaner must keep of an active producer
// (UnifiedLog.lastRecordsOfActiveProducers).
type lastRecord struct {
	lastDataOffset int64 // -1: only a marker
	epoch          int16
}

// cleanRound is one cleaning of one log.
type cleanRound struct {
	l          *Log
	cfg        Config
	now        int64
	om         *offsetMap
	upper      int64 // first uncleanable offset
	producers  map[int64]lastRecord
	gen        int64
	throttle   func(n int)
	ioBuf      int
	stats      CleanerStats
	retainLast int64     // next offset of the group's last batch: kept even if emptied
	views      []segView // what the cleaning needs of each segment, read under l.mu
}

// segView is a segment's state as the cleaning started.
type segView struct {
	next, createdMs     int64
	idxBytes, tidxBytes int64
}

// CleanerStats describes one cleaning.
type CleanerStats struct {
	BytesRead, BytesWritten    int64
	MessagesRead, MessagesKept int64
	FirstDirty, EndOffset      int64
	Groups                     int
	MapEntries                 int
}

// filterBatch returns what of one batch stays (nil: nothing), MemoryRecords.filterTo
// with the cleaner's filter.
func (r *cleanRound) filterBatch(h BatchHeader, raw []byte, txns *cleanedTxns) ([]byte, error) {
	r.stats.MessagesRead += int64(h.NumRecords)
	var canDiscard bool
	if h.IsControl() {
		var err error
		if canDiscard, err = txns.onControl(h, raw); err != nil {
			return nil, err
		}
	} else {
		canDiscard = txns.onBatch(h)
	}
	horizon, hasHorizon := deleteHorizon(h)
	discardRecords := canDiscard
	if h.IsControl() {
		discardRecords = canDiscard && hasHorizon && horizon <= r.now
	}
	retainEmpty := false
	if lr, ok := r.producers[h.ProducerID]; ok && h.HasProducerID() {
		if lr.lastDataOffset >= 0 {
			retainEmpty = h.LastOffset() == lr.lastDataOffset
		} else {
			retainEmpty = h.IsControl() && h.ProducerEpoch == lr.epoch
		}
	}
	if h.NextOffset() == r.upper || h.NextOffset() == r.retainLast {
		retainEmpty = true
	}
	if discardRecords && !retainEmpty {
		return nil, nil
	}
	markerForEmptyTxn := canDiscard && h.IsControl()

	// which records stay
	keep := make([]bool, 0, h.NumRecords)
	kept, tombstones := 0, false
	if err := walkBatchRecords(h, raw, func(rec *Record) error {
		ok := false
		switch {
		case discardRecords:
		case h.IsControl():
			ok = true
		case rec.Offset > r.om.latest:
			ok = true
		case rec.Key == nil:
		default:
			latestForKey := rec.Offset >= r.om.get(rec.Key)
			retainDeletes := !hasHorizon || r.now < horizon
			ok = latestForKey && (rec.Value != nil || retainDeletes)
		}
		if ok {
			kept++
			if rec.Value == nil && !h.IsControl() {
				tombstones = true
			}
		}
		keep = append(keep, ok)
		return nil
	}); err != nil {
		return nil, err
	}
	r.stats.MessagesKept += int64(kept)
	needHorizon := (tombstones || markerForEmptyTxn) && !hasHorizon
	switch {
	case kept > 0 && kept == int(h.NumRecords) && !needHorizon:
		return append([]byte(nil), raw...), nil
	case kept > 0:
		newHorizon := int64(-1)
		if needHorizon {
			newHorizon = r.now + r.cfg.DeleteRetentionMs
			if r.cfg.DeleteRetentionMs > math.MaxInt64-r.now {
				newHorizon = math.MaxInt64
			}
		} else if hasHorizon {
			newHorizon = horizon
		}
		return rebuildBatch(h, raw, keep, newHorizon)
	case retainEmpty:
		return emptyBatch(h), nil
	}
	return nil, nil
}

// rebuildBatch writes the kept records of a batch as a new batch with the original
// base offset, last offset delta, producer fields, epoch and codec (MemoryRecords
// buildRetainedRecordsInto); horizon >= 0 sets the delete horizon.
func rebuildBatch(h BatchHeader, raw []byte, keep []bool, horizon int64) ([]byte, error) {
	type kept struct {
		ts, off int64
		key     []byte
		value   []byte
		headers []RecordHeader
	}
	var recs []kept
	i := 0
	maxTs := int64(NoTimestamp)
	if err := walkBatchRecords(h, raw, func(rec *Record) error {
		if keep[i] {
			ts := h.BaseTimestamp + rec.TimestampDelta
			if h.LogAppendTime() {
				ts = h.MaxTimestamp
			}
			k := kept{ts: ts, off: rec.Offset, key: cloneBytes(rec.Key), value: cloneBytes(rec.Value)}
			for _, hd := range rec.Headers {
				k.headers = append(k.headers, RecordHeader{Key: hd.Key, Value: cloneBytes(hd.Value)})
			}
			recs = append(recs, k)
			maxTs = max(maxTs, ts)
		}
		i++
		return nil
	}); err != nil {
		return nil, err
	}
	base := recs[0].ts
	if horizon >= 0 {
		base = horizon
	}
	if h.LogAppendTime() {
		maxTs = h.MaxTimestamp
	}
	var body, rec []byte
	for _, k := range recs {
		rec = rec[:0]
		rec = append(rec, 0) // record attributes are unused and written as 0
		rec = appendVarint(rec, k.ts-base)
		rec = appendVarint(rec, k.off-h.BaseOffset)
		rec = appendVarBytes(rec, k.key)
		rec = appendVarBytes(rec, k.value)
		rec = appendVarint(rec, int64(len(k.headers)))
		for _, hd := range k.headers {
			rec = appendVarBytes(rec, []byte(hd.Key))
			rec = appendVarBytes(rec, hd.Value)
		}
		body = appendVarint(body, int64(len(rec)))
		body = append(body, rec...)
	}
	if c := h.Compression(); c != CompressionNone {
		body = compress(c, body)
	}
	attrs := uint16(h.Attributes) &^ attrDeleteHorizon
	if horizon >= 0 {
		attrs |= attrDeleteHorizon
	}
	return writeBatchHeader(h, attrs, base, maxTs, int32(len(recs)), body), nil
}

// emptyBatch keeps only the header of a batch: its offsets and producer fields stay
// (DefaultRecordBatch.writeEmptyHeader).
func emptyBatch(h BatchHeader) []byte {
	attrs := uint16(h.Attributes) & (attrTimestampType | attrTransactional | attrControl)
	return writeBatchHeader(h, attrs, h.MaxTimestamp, h.MaxTimestamp, 0, nil)
}

func writeBatchHeader(h BatchHeader, attrs uint16, baseTs, maxTs int64, count int32, body []byte) []byte {
	b := make([]byte, BatchHeaderSize, BatchHeaderSize+len(body))
	be := binary.BigEndian
	be.PutUint64(b[offBaseOffset:], uint64(h.BaseOffset))
	be.PutUint32(b[offLength:], uint32(BatchHeaderSize-batchLogOverhead+len(body)))
	be.PutUint32(b[offPartitionLeaderEp:], uint32(h.PartitionLeaderEpoch))
	b[offMagic] = 2
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastOffsetDelta:], uint32(h.LastOffsetDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], uint64(h.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(h.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(h.BaseSequence))
	be.PutUint32(b[offRecordsCount:], uint32(count))
	b = append(b, body...)
	be.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], crc32c))
	return b
}

// readBatch reads the whole batch at pos of s.
func readBatch(s *segment, h BatchHeader, pos int64, buf []byte) ([]byte, error) {
	if int64(cap(buf)) < h.Size() {
		buf = make([]byte, h.Size())
	}
	raw := buf[:h.Size()]
	if _, err := s.log.ReadAt(raw, pos); err != nil {
		return nil, err
	}
	if err := checkBatch(h, raw); err != nil {
		return nil, err
	}
	return raw, nil
}

// cleanableInfo is a compacted log's dirty section (LogCleanerManager.cleanableOffsets).
type cleanableInfo struct {
	firstDirty, firstUncleanable int64
	cleanBytes, dirtyBytes       int64
	ratio                        float64
	needNow                      bool // max.compaction.lag.ms passed
}

// cleanableLocked computes the dirty section; bound >= 0 is a further upper bound
// (the high watermark: UnifiedLog.lastStableOffset is below it). l.mu must be held
// (shared).
func (l *Log) cleanableLocked(nowMs, bound int64) cleanableInfo {
	segs := l.mu.segments
	cfg := l.mu.cfg
	fd := l.mu.firstDirty
	if fd < l.mu.logStartOffset || fd > l.mu.leo {
		fd = l.mu.logStartOffset
	}
	fu := l.active().base
	if fuo := l.mu.producers.firstUnstableOffset(); fuo >= 0 {
		fu = min(fu, fuo)
	}
	if bound >= 0 {
		fu = min(fu, bound)
	}
	fu = max(fu, fd)
	first := l.segmentFor(fd)
	if cfg.MinCompactionLagMs > 0 {
		for _, s := range segs[first:] {
			if s.base >= fu {
				break
			}
			ts := s.maxTs
			if ts == NoTimestamp {
				ts = s.createdMs
			}
			if ts > nowMs-cfg.MinCompactionLagMs {
				fu = max(fd, s.base)
				break
			}
		}
	}
	ci := cleanableInfo{firstDirty: fd, firstUncleanable: fu}
	for _, s := range segs {
		if s.base < fd {
			ci.cleanBytes += s.size
		}
	}
	for _, s := range segs[first:] {
		if s.base >= fu || fu <= fd {
			break
		}
		ci.dirtyBytes += s.size
	}
	if total := ci.cleanBytes + ci.dirtyBytes; total > 0 {
		ci.ratio = float64(ci.dirtyBytes) / float64(total)
	}
	if cfg.MaxCompactionLagMs < math.MaxInt64 && fu > fd {
		s := segs[first]
		if ts := s.rollingBasedTs; ts > 0 && nowMs-ts > cfg.MaxCompactionLagMs {
			ci.needNow = true
		}
	}
	return ci
}

// cleanOnce cleans the log once (Cleaner.doClean). It returns errCleaningAborted
// when the log changed meanwhile.
func (l *Log) cleanOnce(om *offsetMap, ioBuf int, throttle func(int), bound int64) (CleanerStats, error) {
	nowMs := l.nowMs()
	l.mu.RLock()
	if l.mu.closed || l.offline.Load() {
		l.mu.RUnlock()
		return CleanerStats{}, errCleaningAborted
	}
	ci := l.cleanableLocked(nowMs, bound)
	r := &cleanRound{l: l, cfg: l.mu.cfg, now: nowMs, om: om, upper: ci.firstUncleanable,
		gen: l.mu.structGen, throttle: throttle, ioBuf: max(ioBuf, 1<<10), producers: map[int64]lastRecord{}}
	for pid, e := range l.mu.producers.entries {
		lr := lastRecord{lastDataOffset: -1, epoch: e.epoch}
		if len(e.batches) > 0 {
			lr.lastDataOffset = e.batches[len(e.batches)-1].lastOffset
		}
		r.producers[pid] = lr
	}
	segs := append([]*segment(nil), l.mu.segments[:len(l.mu.segments)-1]...)
	sizes := make([]int64, len(segs))
	r.views = make([]segView, len(segs))
	for i, s := range segs {
		sizes[i] = s.size
		r.views[i] = segView{next: s.nextOffset, createdMs: s.createdMs,
			idxBytes: int64(len(s.idx.entries)) * offsetIndexEntrySize, tidxBytes: int64(len(s.tidx.entries)) * timeIndexEntrySize}
	}
	l.mu.RUnlock()
	r.stats.FirstDirty = ci.firstDirty
	if ci.firstUncleanable <= ci.firstDirty {
		return r.stats, nil
	}
	end, err := r.buildOffsetMap(segs, sizes, ci.firstDirty)
	if err != nil {
		return r.stats, err
	}
	r.stats.EndOffset = end
	r.stats.MapEntries = len(om.m)
	var todo []int
	for i, s := range segs {
		if s.base < end {
			todo = append(todo, i)
		}
	}
	txns := newCleanedTxns()
	for _, g := range groupSegments(segs, r.views, sizes, todo, r.cfg, ci.firstUncleanable) {
		if err := r.cleanGroup(segs, sizes, g, txns); err != nil {
			return r.stats, err
		}
		r.stats.Groups++
	}
	l.mu.Lock()
	if l.mu.structGen == r.gen {
		l.mu.firstDirty = end
	}
	l.mu.Unlock()
	return r.stats, nil
}

// buildOffsetMap fills the map from start up to r.upper and returns the end offset
// of the cleaning (the first offset not in the map).
func (r *cleanRound) buildOffsetMap(segs []*segment, sizes []int64, start int64) (int64, error) {
	r.om.reset()
	txns := newCleanedTxns()
	txns.add(r.l.AbortedTransactions(start, r.upper))
	var buf []byte
	full := false
	for i, s := range segs {
		next := r.upper
		if i+1 < len(segs) {
			next = min(next, segs[i+1].base)
		}
		if s.base >= r.upper || next <= start {
			continue
		}
		var ferr error
		err := s.scan(0, sizes[i], func(h BatchHeader, pos int64) bool {
			if h.BaseOffset >= r.upper {
				return false
			}
			if h.LastOffset() < start {
				return true
			}
			raw, err := readBatch(s, h, pos, buf)
			if err != nil {
				ferr = err
				return false
			}
			buf = raw[:0]
			r.stats.BytesRead += h.Size()
			r.throttle(int(h.Size()))
			if h.IsControl() {
				if _, err := txns.onControl(h, raw); err != nil {
					ferr = err
					return false
				}
				return true
			}
			if txns.onBatch(h) {
				return true
			}
			ferr = walkBatchRecords(h, raw, func(rec *Record) error {
				if rec.Offset < start || rec.Key == nil {
					return nil
				}
				if r.om.full() {
					full = true
					return errStop
				}
				r.om.put(rec.Key, rec.Offset)
				return nil
			})
			if errors.Is(ferr, errStop) {
				ferr = nil
			}
			return ferr == nil && !full
		})
		if err == nil {
			err = ferr
		}
		if err != nil {
			return 0, r.abortOr(err)
		}
		if full {
			break
		}
		r.om.latest = next - 1
	}
	if r.om.latest < start {
		return start, nil
	}
	return r.om.latest + 1, nil
}

// abortOr turns an error met while the log changed into errCleaningAborted.
func (r *cleanRound) abortOr(err error) error {
	r.l.mu.RLock()
	changed := r.l.mu.structGen != r.gen || r.l.mu.closed
	r.l.mu.RUnlock()
	if changed {
		return errCleaningAborted
	}
	return err
}

// groupSegments groups the segments at idx into groups that fit one segment
// (Cleaner.groupSegmentsBySize).
func groupSegments(segs []*segment, views []segView, sizes []int64, idx []int, cfg Config, firstUncleanable int64) [][]int {
	var out [][]int
	for len(idx) > 0 {
		g := []int{idx[0]}
		logSize := sizes[idx[0]]
		ixSize := views[idx[0]].idxBytes
		tixSize := views[idx[0]].tidxBytes
		idx = idx[1:]
		for len(idx) > 0 {
			lastOff := firstUncleanable - 1
			if len(idx) > 1 {
				lastOff = segs[idx[1]].base - 1
			}
			ix := views[idx[0]].idxBytes
			tix := views[idx[0]].tidxBytes
			if logSize+sizes[idx[0]] > cfg.SegmentBytes || ixSize+ix > int64(cfg.SegmentIndexBytes) ||
				tixSize+tix > int64(cfg.SegmentIndexBytes) ||
				(sizes[idx[0]] > 0 && lastOff-segs[g[0]].base > math.MaxInt32) {
				break
			}
			g = append(g, idx[0])
			logSize += sizes[idx[0]]
			ixSize += ix
			tixSize += tix
			idx = idx[1:]
		}
		out = append(out, g)
	}
	return out
}

// cleanGroup cleans the segments g into one and swaps it in (Cleaner.cleanSegments).
func (r *cleanRound) cleanGroup(segs []*segment, sizes []int64, g []int, txns *cleanedTxns) error {
	l := r.l
	first := segs[g[0]]
	cleaned, err := createSegmentSuffix(l.fs, l.dir, first.base, r.cfg, r.views[g[len(g)-1]].createdMs, 0, cleanedSuffix)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		cleaned.closeFiles()
		_ = cleaned.removeFiles()
		return r.abortOr(err)
	}
	txns.index = cleaned.txn
	last := g[len(g)-1]
	r.retainLast = -1
	_ = segs[last].scan(0, sizes[last], func(h BatchHeader, _ int64) bool { r.retainLast = h.NextOffset(); return true })
	var (
		out  []byte
		hdrs []BatchHeader
		buf  []byte
	)
	flush := func() error {
		if len(out) == 0 {
			return nil
		}
		if err := cleaned.appendBatches(out, hdrs, r.cfg.IndexIntervalBytes); err != nil {
			return err
		}
		r.stats.BytesWritten += int64(len(out))
		r.throttle(len(out))
		out, hdrs = out[:0], hdrs[:0]
		return nil
	}
	for k, i := range g {
		s := segs[i]
		upper := r.views[i].next
		if k+1 < len(g) {
			upper = segs[g[k+1]].base
		}
		txns.add(l.AbortedTransactions(s.base, upper))
		var ferr error
		err := s.scan(0, sizes[i], func(h BatchHeader, pos int64) bool {
			raw, err := readBatch(s, h, pos, buf)
			if err != nil {
				ferr = err
				return false
			}
			buf = raw[:0]
			r.stats.BytesRead += h.Size()
			r.throttle(int(h.Size()))
			kept, err := r.filterBatch(h, raw, txns)
			if err != nil {
				ferr = err
				return false
			}
			if kept != nil {
				kh, _ := ParseBatchHeader(kept)
				out = append(out, kept...)
				hdrs = append(hdrs, kh)
				if len(out) >= r.ioBuf {
					ferr = flush()
				}
			}
			return ferr == nil
		})
		if err == nil {
			err = ferr
		}
		if err == nil {
			err = flush()
		}
		if err != nil {
			return fail(err)
		}
	}
	if err := cleaned.onBecomeInactive(); err != nil {
		return fail(err)
	}
	if err := cleaned.sync(); err != nil {
		return fail(err)
	}
	old := make([]*segment, len(g))
	for k, i := range g {
		old[k] = segs[i]
	}
	return l.replaceSegments(cleaned, old, &r.gen)
}

// replaceSegments swaps cleaned in for old (LocalLog.replaceSegments), crash-safe:
// see the comment at the top of this file.
func (l *Log) replaceSegments(cleaned *segment, old []*segment, gen *int64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	start := -1
	for i, s := range l.mu.segments {
		if s == old[0] {
			start = i
			break
		}
	}
	abort := func() error {
		cleaned.closeFiles()
		_ = cleaned.removeFiles()
		return errCleaningAborted
	}
	if l.mu.closed || l.offline.Load() || l.mu.structGen != *gen || start < 0 || start+len(old) >= len(l.mu.segments) {
		return abort()
	}
	for k, s := range old {
		if l.mu.segments[start+k] != s {
			return abort()
		}
	}
	base := cleaned.base
	hasTxn := cleaned.txn.f() != nil
	suffixes := []string{indexSuffix, timeIndexSuffix}
	if hasTxn {
		suffixes = append(suffixes, txnIndexSuffix)
	}
	rename := func(suf, from, to string) error {
		return l.fs.Rename(segmentName(l.dir, base, suf+from), segmentName(l.dir, base, suf+to))
	}
	// .cleaned -> .swap, the .log last: from here on the swap completes, even after a crash
	for _, suf := range append(suffixes, logSuffix) {
		if err := rename(suf, cleanedSuffix, swapSuffix); err != nil {
			return l.swapFailed(cleaned, err)
		}
	}
	cleaned.suffix = swapSuffix
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.swapFailed(cleaned, err)
	}
	// the replaced segments are renamed .deleted (LocalLog.replaceSegments ->
	// deleteSegmentFiles): readers holding them go on, the files go
	// file.delete.delay.ms later (bury below), a crash leaves .deleted files that
	// the next open removes
	for _, s := range old {
		if err := s.changeFileSuffixes(deletedSuffix); err != nil {
			return l.swapFailed(cleaned, err)
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.swapFailed(cleaned, err)
	}
	for _, suf := range append([]string{logSuffix}, suffixes...) {
		if err := rename(suf, swapSuffix, ""); err != nil {
			return l.swapFailed(cleaned, err)
		}
	}
	cleaned.suffix = ""
	cleaned.txn.name = segmentName(l.dir, base, txnIndexSuffix)
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.swapFailed(cleaned, err)
	}
	if err := l.bury(old); err != nil { // already renamed: only schedules the deletion
		return err
	}
	segs := append([]*segment(nil), l.mu.segments[:start]...)
	segs = append(segs, cleaned)
	segs = append(segs, l.mu.segments[start+len(old):]...)
	l.mu.segments = segs
	l.mu.structGen++
	*gen = l.mu.structGen
	l.logger.Info("swapped in cleaned segment", zap.Int64("base", base), zap.Int("replaced", len(old)),
		zap.Int64("bytes", cleaned.size))
	return l.checkInvariants()
}

// swapFailed: an I/O error in the middle of a swap. The files on disk are in one of
// the states completeSwaps finishes; in memory the old segments stay, and the log
// is unusable until reopened (with a Manager its log dir goes offline). l.mu held.
func (l *Log) swapFailed(cleaned *segment, err error) error {
	cleaned.closeFiles()
	l.logger.Error("segment swap failed", zap.Int64("base", cleaned.base), zap.Error(err))
	l.failLocked(err)
	return err
}

// completeSwaps finishes or rolls back a segment swap interrupted by a crash
// (LogLoader.removeTempFilesAndCollectSwapFiles and the swap completion): see the
// top of this file.
func completeSwaps(fs vfs.FS, dir string, logger *zap.Logger) error {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return err
	}
	type swap struct{ base, next int64 }
	var swaps []swap
	changed := false
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, logSuffix+swapSuffix) {
			continue
		}
		base, err := strconv.ParseInt(strings.TrimSuffix(name, logSuffix+swapSuffix), 10, 64)
		if err != nil || base < 0 {
			continue
		}
		// the swap was fsynced before it got this name: its batches are whole
		s := &segment{fs: fs, dir: dir, base: base, suffix: swapSuffix}
		if s.log, err = fs.OpenFile(filepath.Join(dir, name), os.O_RDONLY, 0); err != nil {
			return err
		}
		st, err := s.log.Stat()
		if err != nil {
			s.log.Close()
			return err
		}
		next := base
		serr := s.scan(0, st.Size(), func(h BatchHeader, _ int64) bool { next = h.NextOffset(); return true })
		s.log.Close()
		if serr != nil {
			return fmt.Errorf("swap segment %s is unreadable: %w", name, serr)
		}
		swaps = append(swaps, swap{base, next})
	}
	isSegFile := func(name string) (int64, string, bool) {
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			if strings.HasSuffix(name, suf) {
				b, err := strconv.ParseInt(strings.TrimSuffix(name, suf), 10, 64)
				return b, suf, err == nil
			}
		}
		return 0, "", false
	}
	for _, sw := range swaps {
		// the segments it replaces, whatever is left of them
		for _, e := range ents {
			if b, _, ok := isSegFile(e.Name()); ok && b >= sw.base && b < sw.next {
				if err := fs.Remove(filepath.Join(dir, e.Name())); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
		for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
			from := segmentName(dir, sw.base, suf+swapSuffix)
			if err := fs.Rename(from, segmentName(dir, sw.base, suf)); err != nil && !os.IsNotExist(err) {
				var le *os.LinkError
				if !errors.As(err, &le) || !os.IsNotExist(le.Err) {
					return err
				}
			}
		}
		logger.Info("completed an interrupted segment swap", zap.Int64("base", sw.base), zap.Int64("next", sw.next))
		changed = true
	}
	// what is left: swaps that never committed (index files) and cleanings cut short
	ents, err = fs.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if name := e.Name(); strings.HasSuffix(name, swapSuffix) || strings.HasSuffix(name, cleanedSuffix) {
			if err := fs.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
			changed = true
		}
	}
	if changed {
		return fs.SyncDir(dir)
	}
	return nil
}

// String describes the stats for logs.
func (s CleanerStats) String() string {
	return fmt.Sprintf("read %d bytes (%d records), wrote %d bytes (%d records), [%d, %d) in %d groups",
		s.BytesRead, s.MessagesRead, s.BytesWritten, s.MessagesKept, s.FirstDirty, s.EndOffset, s.Groups)
}
