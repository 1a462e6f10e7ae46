package storage

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Index files (AbstractIndex.java, OffsetIndex.java, TimeIndex.java). The entries are
// kept in memory (Kafka mmaps the file) and written to the file when the segment is
// synced, rolled, truncated or closed (writePending), with the file open only for
// that: a segment holds one file descriptor, its .log, as Kafka's does (AbstractIndex
// closes its RandomAccessFile once the file is mmapped), instead of three. This is
// as durable as Kafka's mmap, whose pages reach the disk when the segment is flushed
// (LogSegment.flush) or closed: an index not flushed before a crash belongs to a
// segment above the recovery point, which recovery rebuilds. A new index file is
// preallocated to maxIndexSize rounded down to a whole entry; it is trimmed to its
// entries when the segment rolls or closes.

const (
	offsetIndexEntrySize = 8
	timeIndexEntrySize   = 12
)

type offsetEntry struct {
	rel int32 // offset - base
	pos int32
}

type offsetIndex struct {
	base       int64
	maxEntries int
	entries    []offsetEntry
	// written is how many of entries the file holds; unsynced: the file
	// changed since it was last synced.
	written  int
	unsynced bool
}

type timeEntry struct {
	ts  int64
	rel int32
}

type timeIndex struct {
	base       int64
	maxEntries int
	entries    []timeEntry
	written    int // as offsetIndex's
	unsynced   bool
}

// loadOffsetIndex reads the entries of an existing index. The file's length is rounded
// down to whole entries; zero padding or any non-increasing entry ends the valid part
// (a preallocated, never trimmed index after a crash). ok is false when the index does
// not pass Kafka's sanity check and must be rebuilt.
func loadOffsetIndex(f vfs.File, base int64, maxEntries int, logSize int64) (*offsetIndex, bool, error) {
	ix := &offsetIndex{base: base, maxEntries: maxEntries}
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	n := st.Size() / offsetIndexEntrySize
	buf := make([]byte, n*offsetIndexEntrySize)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, false, err
	}
	ok := true
	for i := int64(0); i < n; i++ {
		e := offsetEntry{
			rel: int32(binary.BigEndian.Uint32(buf[i*8:])),
			pos: int32(binary.BigEndian.Uint32(buf[i*8+4:])),
		}
		if i > 0 && e.rel <= ix.entries[len(ix.entries)-1].rel {
			if e.rel == 0 && e.pos == 0 { // preallocated zero tail
				break
			}
			ok = false
			break
		}
		if e.rel < 0 || e.pos < 0 || int64(e.pos) >= logSize {
			ok = false
			break
		}
		ix.entries = append(ix.entries, e)
	}
	ix.written = len(ix.entries)
	if len(ix.entries) > maxEntries {
		ok = false
	}
	return ix, ok, nil
}

func (ix *offsetIndex) isFull() bool { return len(ix.entries) >= ix.maxEntries }

func (ix *offsetIndex) lastOffset() int64 {
	if len(ix.entries) == 0 {
		return ix.base
	}
	return ix.base + int64(ix.entries[len(ix.entries)-1].rel)
}

func (ix *offsetIndex) append(off int64, pos int64) error {
	rel := off - ix.base
	if len(ix.entries) > 0 && off <= ix.lastOffset() {
		return fmt.Errorf("attempt to append offset %d to index no larger than the last offset %d", off, ix.lastOffset())
	}
	if ix.isFull() {
		return fmt.Errorf("attempt to append to a full index (%d entries)", len(ix.entries))
	}
	ix.entries = append(ix.entries, offsetEntry{rel: int32(rel), pos: int32(pos)})
	return nil
}

// lookup returns the largest entry with offset <= target, or (base, 0).
func (ix *offsetIndex) lookup(target int64) (int64, int64) {
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.base+int64(ix.entries[i].rel) > target }) - 1
	if i < 0 {
		return ix.base, 0
	}
	return ix.base + int64(ix.entries[i].rel), int64(ix.entries[i].pos)
}

// lastStartWithin is the position of the last indexed batch that starts at or
// before pos and whose entry offset (its last offset) is at most maxOffset, or
// -1: every batch before it ends by pos and has a base offset below maxOffset
// (the entry's batch itself may not), so a read can jump there without
// walking the headers in between.
func (ix *offsetIndex) lastStartWithin(pos, maxOffset int64) int64 {
	byOff := sort.Search(len(ix.entries), func(i int) bool { return ix.base+int64(ix.entries[i].rel) > maxOffset })
	byPos := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].pos) > pos })
	if i := min(byOff, byPos) - 1; i >= 0 {
		return int64(ix.entries[i].pos)
	}
	return -1
}

// upperBoundOffset is OffsetIndex.fetchUpperBoundOffset: the offset of the
// first entry whose position is at or after pos.
func (ix *offsetIndex) upperBoundOffset(pos int64) (int64, bool) {
	i := sort.Search(len(ix.entries), func(i int) bool { return int64(ix.entries[i].pos) >= pos })
	if i == len(ix.entries) {
		return 0, false
	}
	return ix.base + int64(ix.entries[i].rel), true
}

// truncateTo removes every entry with offset >= off (from memory: resize
// clears them from the file).
func (ix *offsetIndex) truncateTo(off int64) {
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.base+int64(ix.entries[i].rel) >= off })
	ix.entries = ix.entries[:i]
	ix.written = min(ix.written, i)
}

func (ix *offsetIndex) reset() { ix.entries, ix.written = ix.entries[:0], 0 }

// writePending writes to f the entries it does not hold yet.
func (ix *offsetIndex) writePending(f vfs.File) error {
	if ix.written >= len(ix.entries) {
		return nil
	}
	buf := make([]byte, 0, (len(ix.entries)-ix.written)*offsetIndexEntrySize)
	for _, e := range ix.entries[ix.written:] {
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.rel))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.pos))
	}
	if _, err := f.WriteAt(buf, int64(ix.written)*offsetIndexEntrySize); err != nil {
		return err
	}
	ix.written, ix.unsynced = len(ix.entries), true
	return nil
}

// resize writes the pending entries and sets the file length: entries*8 to trim,
// maxEntries*8 to preallocate. The bytes after the entries are zeroed first so that a
// later crash leaves a clean tail.
func (ix *offsetIndex) resize(f vfs.File, prealloc bool) error {
	if err := ix.writePending(f); err != nil {
		return err
	}
	ix.unsynced = true
	n := int64(len(ix.entries)) * offsetIndexEntrySize
	if err := f.Truncate(n); err != nil {
		return err
	}
	if prealloc {
		return f.Truncate(int64(ix.maxEntries) * offsetIndexEntrySize)
	}
	return nil
}

func loadTimeIndex(f vfs.File, base int64, maxEntries int, nextOffset int64) (*timeIndex, bool, error) {
	ix := &timeIndex{base: base, maxEntries: maxEntries}
	st, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	n := st.Size() / timeIndexEntrySize
	buf := make([]byte, n*timeIndexEntrySize)
	if _, err := f.ReadAt(buf, 0); err != nil && err != io.EOF {
		return nil, false, err
	}
	ok := true
	for i := int64(0); i < n; i++ {
		e := timeEntry{
			ts:  int64(binary.BigEndian.Uint64(buf[i*12:])),
			rel: int32(binary.BigEndian.Uint32(buf[i*12+8:])),
		}
		if e.ts == 0 && e.rel == 0 && i > 0 {
			break // preallocated zero tail
		}
		if i > 0 {
			last := ix.entries[len(ix.entries)-1]
			if e.ts <= last.ts || e.rel < last.rel {
				ok = false
				break
			}
		}
		if e.ts < 0 || e.rel < 0 || base+int64(e.rel) >= max(nextOffset, base+1) {
			ok = false
			break
		}
		ix.entries = append(ix.entries, e)
	}
	ix.written = len(ix.entries)
	if len(ix.entries) > maxEntries {
		ok = false
	}
	return ix, ok, nil
}

// isFull keeps the last slot for the entry written on roll or close (TimeIndex.isFull).
func (ix *timeIndex) isFull() bool { return len(ix.entries) >= ix.maxEntries-1 }

// last returns the last entry, or (NoTimestamp, base) when there is none.
func (ix *timeIndex) last() (int64, int64) {
	if len(ix.entries) == 0 {
		return NoTimestamp, ix.base
	}
	e := ix.entries[len(ix.entries)-1]
	return e.ts, ix.base + int64(e.rel)
}

// maybeAppend adds (ts, off) when ts is larger than the last entry's timestamp
// (TimeIndex.maybeAppend). skipFullCheck is used on roll and close.
func (ix *timeIndex) maybeAppend(ts, off int64, skipFullCheck bool) error {
	if !skipFullCheck && ix.isFull() {
		return fmt.Errorf("attempt to append to a full time index (%d entries)", len(ix.entries))
	}
	lts, loff := ix.last()
	if len(ix.entries) > 0 && off < loff {
		return fmt.Errorf("attempt to append an offset %d to the time index no larger than the last offset %d", off, loff)
	}
	if len(ix.entries) > 0 && ts < lts {
		return fmt.Errorf("attempt to append a timestamp %d to the time index no larger than the last timestamp %d", ts, lts)
	}
	if ts <= lts {
		return nil
	}
	if len(ix.entries) >= ix.maxEntries {
		return nil // no room at all (a one-entry index)
	}
	ix.entries = append(ix.entries, timeEntry{ts: ts, rel: int32(off - ix.base)})
	return nil
}

// lookup returns the entry with the largest timestamp <= ts, or (NoTimestamp, base).
func (ix *timeIndex) lookup(ts int64) (int64, int64) {
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].ts > ts }) - 1
	if i < 0 {
		return NoTimestamp, ix.base
	}
	return ix.entries[i].ts, ix.base + int64(ix.entries[i].rel)
}

func (ix *timeIndex) truncateTo(off int64) {
	i := sort.Search(len(ix.entries), func(i int) bool { return ix.base+int64(ix.entries[i].rel) >= off })
	ix.entries = ix.entries[:i]
	ix.written = min(ix.written, i)
}

func (ix *timeIndex) reset() { ix.entries, ix.written = ix.entries[:0], 0 }

// writePending is offsetIndex.writePending.
func (ix *timeIndex) writePending(f vfs.File) error {
	if ix.written >= len(ix.entries) {
		return nil
	}
	buf := make([]byte, 0, (len(ix.entries)-ix.written)*timeIndexEntrySize)
	for _, e := range ix.entries[ix.written:] {
		buf = binary.BigEndian.AppendUint64(buf, uint64(e.ts))
		buf = binary.BigEndian.AppendUint32(buf, uint32(e.rel))
	}
	if _, err := f.WriteAt(buf, int64(ix.written)*timeIndexEntrySize); err != nil {
		return err
	}
	ix.written, ix.unsynced = len(ix.entries), true
	return nil
}

// resize is offsetIndex.resize.
func (ix *timeIndex) resize(f vfs.File, prealloc bool) error {
	if err := ix.writePending(f); err != nil {
		return err
	}
	ix.unsynced = true
	n := int64(len(ix.entries)) * timeIndexEntrySize
	if err := f.Truncate(n); err != nil {
		return err
	}
	if prealloc {
		return f.Truncate(int64(ix.maxEntries) * timeIndexEntrySize)
	}
	return nil
}
