package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
)

// segment is one <base>.log with its .index and .timeindex (LogSegment.java).
// Every field is guarded by the owning Log's mu.
type segment struct {
	fs   vfs.FS
	dir  string
	base int64

	log  vfs.File
	size int64 // valid bytes in .log; appends go to this position
	idx  *offsetIndex
	tidx *timeIndex
	txn  *txnIndex

	nextOffset      int64 // last offset in the segment + 1 (base when empty)
	maxTs           int64 // largest batch max timestamp so far (NoTimestamp when none)
	maxTsOffset     int64 // last offset of the batch holding maxTs ("shallow" offset)
	bytesSinceIndex int64
	rollingBasedTs  int64 // max timestamp of the first append, NoTimestamp when none
	createdMs       int64
	rollJitterMs    int64
	missingIndex    bool // an index file did not exist when opened: rebuild
	// inactive: the indexes were trimmed and got their final time index
	// entry (onBecomeInactive); truncateTo preallocates them again.
	inactive   bool
	txnRebuild bool // recovered: the transaction index is rebuilt by the replay
	// suffix follows every file name: "" for a live segment, ".cleaned" while the
	// log cleaner writes it (LogFileUtils.CLEANED_FILE_SUFFIX), ".swap" while it is
	// swapped in, ".deleted" once removed from the log and waiting for
	// file.delete.delay.ms (LogFileUtils.DELETED_FILE_SUFFIX).
	suffix string
}

func segmentName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	txnIndexSuffix  = ".txnindex"
	snapshotSuffix  = ".snapshot"
	deletedSuffix   = ".deleted"
)

func indexEntries(cfg Config, entrySize int) int {
	return max(int(cfg.SegmentIndexBytes)/entrySize, 1)
}

// createSegment makes a new empty active segment with preallocated indexes.
func createSegment(fs vfs.FS, dir string, base int64, cfg Config, nowMs, jitter int64) (*segment, error) {
	return createSegmentSuffix(fs, dir, base, cfg, nowMs, jitter, "")
}

// createSegmentSuffix is createSegment with suffix after every file name.
func createSegmentSuffix(fs vfs.FS, dir string, base int64, cfg Config, nowMs, jitter int64, suffix string) (*segment, error) {
	s := &segment{fs: fs, dir: dir, base: base, nextOffset: base, maxTs: NoTimestamp, maxTsOffset: base,
		rollingBasedTs: NoTimestamp, createdMs: nowMs, rollJitterMs: jitter, suffix: suffix}
	var err error
	flags := os.O_CREATE | os.O_RDWR | os.O_TRUNC
	if s.log, err = fs.OpenFile(segmentName(dir, base, logSuffix+suffix), flags, 0o644); err != nil {
		return nil, err
	}
	s.idx = &offsetIndex{base: base, maxEntries: indexEntries(cfg, offsetIndexEntrySize)}
	s.tidx = &timeIndex{base: base, maxEntries: indexEntries(cfg, timeIndexEntrySize)}
	s.txn = &txnIndex{fs: fs, name: segmentName(dir, base, txnIndexSuffix+suffix)}
	if err := fs.Remove(s.txn.name); err != nil && !os.IsNotExist(err) {
		s.closeFiles()
		return nil, err
	}
	err = s.withIndexFiles(os.O_TRUNC, func(fi, ft vfs.File) error {
		if err := s.idx.resize(fi, true); err != nil {
			return err
		}
		return s.tidx.resize(ft, true)
	})
	if err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// withIndexFiles opens the segment's two index files (creating them when
// missing; flag may add os.O_TRUNC) for fn and closes them after it: index
// files are open only while they are written.
func (s *segment) withIndexFiles(flag int, fn func(fi, ft vfs.File) error) error {
	fi, ft, err := s.openIndexFiles(flag)
	if err != nil {
		return err
	}
	err = fn(fi, ft)
	if cerr := fi.Close(); err == nil {
		err = cerr
	}
	if cerr := ft.Close(); err == nil {
		err = cerr
	}
	return err
}

func (s *segment) openIndexFiles(flag int) (fi, ft vfs.File, err error) {
	flag |= os.O_CREATE | os.O_RDWR
	if fi, err = s.fs.OpenFile(segmentName(s.dir, s.base, indexSuffix+s.suffix), flag, 0o644); err != nil {
		return nil, nil, err
	}
	if ft, err = s.fs.OpenFile(segmentName(s.dir, s.base, timeIndexSuffix+s.suffix), flag, 0o644); err != nil {
		fi.Close()
		return nil, nil, err
	}
	return fi, ft, nil
}

// openSegment opens an existing segment. When trustIndexes, the indexes are loaded and
// sanity-checked (rebuilt if they fail); otherwise the caller recovers the segment.
// nextOffset, maxTs and the other in-memory state are rebuilt from the log.
func openSegment(fs vfs.FS, dir string, base int64, cfg Config, nowMs int64) (*segment, error) {
	s := &segment{fs: fs, dir: dir, base: base, nextOffset: base, maxTs: NoTimestamp, maxTsOffset: base,
		rollingBasedTs: NoTimestamp, createdMs: nowMs}
	var err error
	if s.log, err = fs.OpenFile(segmentName(dir, base, logSuffix), os.O_RDWR, 0o644); err != nil {
		return nil, err
	}
	st, err := s.log.Stat()
	if err != nil {
		s.log.Close()
		return nil, err
	}
	s.size = st.Size()
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if _, err := fs.Stat(segmentName(dir, base, suf)); err != nil {
			s.missingIndex = true
		}
	}
	s.idx = &offsetIndex{base: base, maxEntries: indexEntries(cfg, offsetIndexEntrySize)}
	s.tidx = &timeIndex{base: base, maxEntries: indexEntries(cfg, timeIndexEntrySize)}
	if s.txn, err = loadTxnIndex(fs, dir, base); err != nil {
		s.closeFiles()
		return nil, err
	}
	return s, nil
}

// loadIndexes loads the index files and derives nextOffset/maxTs by scanning from the
// last index entry. It reports false when the indexes must be rebuilt (recover).
func (s *segment) loadIndexes() (bool, error) {
	if s.missingIndex {
		return false, nil
	}
	fi, ft, err := s.openIndexFiles(0)
	if err != nil {
		return false, err
	}
	defer fi.Close()
	defer ft.Close()
	idx, ok, err := loadOffsetIndex(fi, s.base, s.idx.maxEntries, s.size)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, nil
	}
	s.idx = idx
	// the last batch: scan from the last index entry
	_, pos := s.idx.lookup(1<<62 - 1)
	next := s.base
	var lastBatchEnd int64 = pos
	err = s.scan(pos, s.size, func(h BatchHeader, p int64) bool {
		next = h.NextOffset()
		lastBatchEnd = p + h.Size()
		return true
	})
	if err != nil || lastBatchEnd != s.size {
		return false, nil // torn or corrupt tail: recover
	}
	if len(s.idx.entries) > 0 && next <= s.idx.lastOffset() {
		return false, nil
	}
	s.nextOffset = next
	tidx, ok, err := loadTimeIndex(ft, s.base, s.tidx.maxEntries, next)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, nil
	}
	s.tidx = tidx
	// max timestamp so far: last time index entry, then the batches after it
	// (LogSegment.readLargestTimestamp)
	if err := s.readLargestTimestamp(); err != nil {
		return false, err
	}
	s.bytesSinceIndex = s.size - pos
	return true, nil
}

func (s *segment) readLargestTimestamp() error {
	ts, off := s.tidx.last()
	s.maxTs, s.maxTsOffset = ts, off
	_, pos := s.idx.lookup(off)
	return s.scan(pos, s.size, func(h BatchHeader, _ int64) bool {
		if h.indexTimestamp() > s.maxTs {
			s.maxTs, s.maxTsOffset = h.indexTimestamp(), h.LastOffset()
		}
		return true
	})
}

var errTorn = errors.New("torn batch at the end of the segment")

// windowPool holds the read-ahead buffers of scan.
var windowPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// scan calls fn with every batch header from pos up to end (positions of batch
// starts); fn returns false to stop. It checks framing only, not CRCs. A batch that
// does not fit before end returns errTorn.
func (s *segment) scan(pos, end int64, fn func(h BatchHeader, pos int64) bool) error {
	var buf [BatchHeaderSize]byte
	wb := windowPool.Get().(*[]byte)
	defer windowPool.Put(wb)
	window := (*wb)[:0]
	var wpos int64 // file position of window[0]
	big := false   // the last batch did not fit half a window: read headers alone
	for pos < end {
		if end-pos < BatchHeaderSize {
			return errTorn
		}
		if pos < wpos || pos+BatchHeaderSize > wpos+int64(len(window)) {
			n := min(int64(cap(window)), end-pos)
			if big {
				n = BatchHeaderSize
			}
			window = window[:n]
			m, err := s.log.ReadAt(window, pos)
			if err != nil && !(err == io.EOF && int64(m) >= BatchHeaderSize) {
				if err == io.EOF {
					return errTorn
				}
				return err
			}
			window, wpos = window[:m], pos
		}
		copy(buf[:], window[pos-wpos:])
		h, _ := ParseBatchHeader(buf[:])
		if _, err := checkFraming(h, int(min(end-pos, 1<<31-1))); err != nil {
			if h.Length >= minBatchLength && pos+h.Size() > end {
				return errTorn
			}
			return err
		}
		if !fn(h, pos) {
			return nil
		}
		pos += h.Size()
		big = h.Size() > int64(cap(window))/2
	}
	return nil
}

// translateOffset finds the first batch whose last offset >= off (searching from the
// index entry below it). found is false when there is none before end.
func (s *segment) translateOffset(off, end int64) (pos int64, h BatchHeader, found bool, err error) {
	_, start := s.idx.lookup(off)
	err = s.scan(start, end, func(bh BatchHeader, p int64) bool {
		if bh.LastOffset() >= off {
			pos, h, found = p, bh, true
			return false
		}
		return true
	})
	return pos, h, found, err
}

// appendBatches writes already validated batches (with final offsets) at s.size and
// maintains the indexes like LogSegment.append, one index decision per batch.
func (s *segment) appendBatches(data []byte, hdrs []BatchHeader, interval int32) error {
	if _, err := s.log.WriteAt(data, s.size); err != nil {
		_ = s.log.Truncate(s.size) // best effort: drop a partial write
		return err
	}
	pos := s.size
	// on an index write error everything goes back to how it was
	saved := *s
	nIdx, nTidx := len(s.idx.entries), len(s.tidx.entries)
	undo := func(err error) error {
		idx, tidx, txn := s.idx, s.tidx, s.txn
		*s = saved
		s.idx, s.tidx, s.txn = idx, tidx, txn
		s.idx.entries, s.tidx.entries = s.idx.entries[:nIdx], s.tidx.entries[:nTidx]
		_ = s.log.Truncate(s.size)
		return err
	}
	if s.size == 0 && len(hdrs) > 0 {
		var maxTs int64 = NoTimestamp
		for _, h := range hdrs {
			maxTs = max(maxTs, h.indexTimestamp())
		}
		s.rollingBasedTs = maxTs
	}
	for _, h := range hdrs {
		if h.indexTimestamp() > s.maxTs {
			s.maxTs, s.maxTsOffset = h.indexTimestamp(), h.LastOffset()
		}
		if s.bytesSinceIndex > int64(interval) && !s.idx.isFull() && !s.tidx.isFull() {
			if err := s.idx.append(h.LastOffset(), pos); err != nil {
				return undo(err)
			}
			if err := s.tidx.maybeAppend(s.maxTs, s.maxTsOffset, false); err != nil {
				return undo(err)
			}
			s.bytesSinceIndex = 0
		}
		s.bytesSinceIndex += h.Size()
		pos += h.Size()
		s.nextOffset = h.NextOffset()
	}
	s.size = pos
	return nil
}

// recover rescans the whole segment: CRC of every batch, offsets increasing, rebuilds
// both indexes and truncates at the first invalid byte (LogSegment.recover). It calls
// onBatch for every valid batch (producer state, leader epochs). It returns the number
// of bytes truncated.
func (s *segment) recover(interval int32, onBatch func(h BatchHeader)) (int64, error) {
	s.idx.reset()
	s.tidx.reset()
	if err := s.txn.reset(); err != nil {
		return 0, err
	}
	s.txnRebuild = true
	s.maxTs, s.maxTsOffset = NoTimestamp, s.base
	s.nextOffset = s.base
	var valid, lastIndexEntry int64
	buf := getBuf()
	defer putBuf(buf)
	err := s.scan(0, s.size, func(h BatchHeader, pos int64) bool {
		if h.BaseOffset < s.base || h.LastOffset()-s.base > 1<<31-1 || (valid > 0 && h.BaseOffset < s.nextOffset) {
			return false
		}
		if cap(buf.b) < int(h.Size()) {
			buf.b = make([]byte, h.Size())
		}
		raw := buf.b[:h.Size()]
		if _, err := s.log.ReadAt(raw, pos); err != nil {
			return false
		}
		if checkBatch(h, raw) != nil {
			return false
		}
		if h.indexTimestamp() > s.maxTs {
			s.maxTs, s.maxTsOffset = h.indexTimestamp(), h.LastOffset()
		}
		if valid-lastIndexEntry > int64(interval) && !s.idx.isFull() {
			if s.idx.append(h.LastOffset(), valid) != nil {
				return false
			}
			_ = s.tidx.maybeAppend(s.maxTs, s.maxTsOffset, false)
			lastIndexEntry = valid
		}
		valid += h.Size()
		s.nextOffset = h.NextOffset()
		if onBatch != nil {
			onBatch(h)
		}
		return true
	})
	var hard error
	if err != nil && !errors.Is(err, errTorn) && !isCorrupt(err) {
		hard = err
	}
	if hard != nil {
		return 0, hard
	}
	truncated := s.size - valid
	if truncated > 0 {
		if err := s.log.Truncate(valid); err != nil {
			return 0, err
		}
		s.size = valid
	}
	s.bytesSinceIndex = valid - lastIndexEntry
	if valid == 0 {
		s.bytesSinceIndex = 0
		s.rollingBasedTs = NoTimestamp
	}
	return truncated, nil
}

func isCorrupt(err error) bool {
	return errors.Is(err, kerr.CorruptMessage) || errors.Is(err, kerr.InvalidRecord)
}

// onBecomeInactive: final time index entry, trim both indexes (LogSegment.onBecomeInactiveSegment).
func (s *segment) onBecomeInactive() error {
	if s.inactive {
		return nil // already inactive and trimmed
	}
	if s.maxTs != NoTimestamp {
		if err := s.tidx.maybeAppend(s.maxTs, s.maxTsOffset, true); err != nil {
			return err
		}
	}
	err := s.withIndexFiles(0, func(fi, ft vfs.File) error {
		if err := s.idx.resize(fi, false); err != nil {
			return err
		}
		return s.tidx.resize(ft, false)
	})
	if err != nil {
		return err
	}
	s.inactive = true
	return nil
}

// truncateTo removes every batch with offset >= off from this segment.
func (s *segment) truncateTo(off int64) (int64, error) {
	pos, _, found, err := s.translateOffset(off, s.size)
	if err != nil {
		return 0, err
	}
	s.idx.truncateTo(off)
	s.tidx.truncateTo(off)
	if err := s.txn.truncateTo(off); err != nil {
		return 0, err
	}
	err = s.withIndexFiles(0, func(fi, ft vfs.File) error {
		if err := s.idx.resize(fi, true); err != nil {
			return err
		}
		return s.tidx.resize(ft, true)
	})
	if err != nil {
		return 0, err
	}
	s.inactive = false
	if !found {
		return 0, nil
	}
	truncated := s.size - pos
	if err := s.log.Truncate(pos); err != nil {
		return 0, err
	}
	s.size = pos
	s.bytesSinceIndex = 0
	// recompute nextOffset and the max timestamp from what is left
	s.nextOffset = s.base
	_, ipos := s.idx.lookup(off)
	if err := s.scan(ipos, s.size, func(h BatchHeader, _ int64) bool { s.nextOffset = h.NextOffset(); return true }); err != nil {
		return 0, err
	}
	if s.size == 0 {
		s.rollingBasedTs = NoTimestamp
	}
	if err := s.readLargestTimestamp(); err != nil {
		return 0, err
	}
	return truncated, nil
}

// sync makes the segment durable: its log, its index entries and its
// transaction index. The owning Log's mu must be held.
func (s *segment) sync() error {
	files, err := s.writeIndexes()
	if err != nil {
		return err
	}
	return s.syncWith(files)
}

// writeIndexes writes the index entries not yet in their files and returns
// the index files that changed since they were last synced, open, for
// syncWith. It runs under the owning Log's mu (shared, with the Log's
// flushMu, or exclusive) so syncWith's fsyncs can run without it.
func (s *segment) writeIndexes() ([]vfs.File, error) {
	if s.idx.written >= len(s.idx.entries) && s.tidx.written >= len(s.tidx.entries) &&
		!s.idx.unsynced && !s.tidx.unsynced {
		return nil, nil
	}
	fi, ft, err := s.openIndexFiles(0)
	if err != nil {
		return nil, err
	}
	if err := s.idx.writePending(fi); err != nil {
		fi.Close()
		ft.Close()
		return nil, err
	}
	if err := s.tidx.writePending(ft); err != nil {
		fi.Close()
		ft.Close()
		return nil, err
	}
	// Cleared before the fsync: a change made after this (under the
	// exclusive lock) sets them again. If the fsync fails the log goes
	// offline.
	s.idx.unsynced, s.tidx.unsynced = false, false
	return []vfs.File{fi, ft}, nil
}

// syncWith fsyncs the log, the index files writeIndexes returned (and
// closes them) and the transaction index.
func (s *segment) syncWith(indexFiles []vfs.File) error {
	err := s.log.Sync()
	for _, f := range indexFiles {
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	return s.txn.sync()
}

func (s *segment) closeFiles() error {
	var first error
	if s.log != nil {
		if err := s.log.Close(); err != nil {
			first = err
		}
	}
	if s.txn != nil {
		if err := s.txn.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// close trims the indexes (with the final time index entry) and closes the files.
func (s *segment) close() error {
	err := s.onBecomeInactive()
	if cerr := s.closeFiles(); err == nil {
		err = cerr
	}
	return err
}

// removeFiles deletes the segment's files at once, without closing them. Only for
// segments nobody reads: a cleaning given up, garbage found while loading. A
// segment of a live log goes through changeFileSuffixes(deletedSuffix) and
// deleteIfExists instead (Log.bury).
func (s *segment) removeFiles() error {
	var first error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		if err := s.fs.Remove(segmentName(s.dir, s.base, suf+s.suffix)); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

// changeFileSuffixes renames the segment's files from their current suffix to
// suffix (LogSegment.changeFileSuffixes). The .log must exist; a missing index,
// time index or transaction index is no error (LazyIndex.renameTo,
// TransactionIndex.renameTo: the index may never have been written). Open
// descriptors are unaffected by a rename, so readers holding the segment (a
// FileRegion in a sendfile, the cleaner) go on reading. Like Kafka
// (Utils.atomicMoveWithFallback without a parent flush) the directory is not
// fsynced here.
func (s *segment) changeFileSuffixes(suffix string) error {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix, txnIndexSuffix} {
		err := s.fs.Rename(segmentName(s.dir, s.base, suf+s.suffix), segmentName(s.dir, s.base, suf+suffix))
		if err != nil && (suf == logSuffix || !errors.Is(err, os.ErrNotExist)) {
			return err
		}
	}
	s.suffix = suffix
	if s.txn != nil {
		s.txn.name = segmentName(s.dir, s.base, txnIndexSuffix+suffix)
	}
	return nil
}

// deleteIfExists closes the segment's files and removes them under their current
// names (LogSegment.deleteIfExists: every file is tried, the first error returned;
// a file already gone is no error).
func (s *segment) deleteIfExists() error {
	_ = s.closeFiles() // a close error changes nothing: the files go
	return s.removeFiles()
}
