package storage

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// segmentFor returns the index of the segment holding off (largest base <= off).
// l.mu must be held.
func (l *Log) segmentFor(off int64) int {
	i := sort.Search(len(l.mu.segments), func(i int) bool { return l.mu.segments[i].base > off }) - 1
	return max(i, 0)
}

// Read returns whole batches starting at the batch that contains offset, within one
// segment (like LocalLog.read): at most maxBytes unless minOneBatch and the first
// batch alone is larger, and no batch whose base offset is >= maxOffset (exclusive
// bound, e.g. the high watermark; use math.MaxInt64 or the log end offset for none).
// An offset below the log start offset or beyond the log end offset is
// kerr.OffsetOutOfRange; offset == log end offset reads nothing.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (_ ReadInfo, err error) {
	defer func() { err = l.ioErr(err) }()
	l.mu.RLock()
	defer l.mu.RUnlock()
	ri, _, _, err := l.readLocked(offset, maxBytes, maxOffset, minOneBatch)
	return ri, err
}

// readLocked is Read. It also returns the index of the segment read (-1 when
// no segment holds data from offset on) and whether the read stopped at once
// because offset is the log end or not below maxOffset. l.mu must be held.
func (l *Log) readLocked(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (ReadInfo, int, bool, error) {
	if l.mu.closed || l.offline.Load() {
		return ReadInfo{}, -1, false, l.closedErr()
	}
	maxBytes = max(maxBytes, 0)
	ri := ReadInfo{FirstBatchOffset: offset, LogStartOffset: l.mu.logStartOffset, LogEndOffset: l.mu.leo}
	if offset < l.mu.logStartOffset || offset > l.mu.leo {
		return ri, -1, false, fmt.Errorf("%w: offset %d is out of range [%d, %d] in %s", kerr.OffsetOutOfRange,
			offset, l.mu.logStartOffset, l.mu.leo, l.dir)
	}
	if offset == l.mu.leo || offset >= maxOffset {
		ri.Region = FileRegion{File: l.active().log, Pos: l.active().size}
		return ri, -1, true, nil
	}
	for i := l.segmentFor(offset); i < len(l.mu.segments); i++ {
		s := l.mu.segments[i]
		end := s.size
		start, first, found, err := s.translateOffset(offset, end)
		if err != nil {
			return ri, -1, false, err
		}
		if !found {
			continue
		}
		if first.BaseOffset >= maxOffset {
			ri.Region = FileRegion{File: s.log, Pos: start}
			return ri, i, false, nil
		}
		ri.FirstBatchOffset = first.BaseOffset
		length := int64(0)
		if first.Size() <= int64(maxBytes) || minOneBatch {
			length = first.Size()
			// The offset index bounds the read (issue 16): the batches up to
			// the last indexed one within maxBytes and below maxOffset need
			// no header walk, only the few after it (index.interval.bytes).
			if p := s.idx.lastStartWithin(start+int64(maxBytes), maxOffset); p > start+length {
				length = p - start
			}
			if err := s.scan(start+length, end, func(h BatchHeader, _ int64) bool {
				if h.BaseOffset >= maxOffset || length+h.Size() > int64(maxBytes) {
					return false
				}
				length += h.Size()
				return true
			}); err != nil {
				return ri, -1, false, err
			}
		}
		ri.Region = FileRegion{File: s.log, Pos: start, Len: length}
		return ri, i, false, nil
	}
	ri.Region = FileRegion{File: l.active().log, Pos: l.active().size}
	return ri, -1, false, nil
}

// ReadBatches is Read followed by ReadAll: a convenience for raft and tests.
func (l *Log) ReadBatches(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) ([]byte, error) {
	ri, err := l.Read(offset, maxBytes, maxOffset, minOneBatch)
	if err != nil {
		return nil, err
	}
	return ri.Region.ReadAll()
}

// ListOffsets special timestamps.
const (
	ListOffsetsLatest        int64 = -1
	ListOffsetsEarliest      int64 = -2
	ListOffsetsMaxTimestamp  int64 = -3
	ListOffsetsEarliestLocal int64 = -4
)

// FetchOffsetByTimestamp answers ListOffsets (UnifiedLog.fetchOffsetByTimestamp):
// for ts >= 0 the first offset whose record timestamp >= ts, found through the first
// segment whose largest timestamp >= ts, its time index, offset index and a scan of
// the records. -1 (latest), -2 (earliest), -4 (earliest local) and -3 (max
// timestamp) are handled too. epoch is the batch's partition leader epoch (-1 when
// unknown). ok is false when no record qualifies.
func (l *Log) FetchOffsetByTimestamp(ts int64) (offset int64, timestamp int64, epoch int32, ok bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return -1, NoTimestamp, -1, false
	}
	switch ts {
	case ListOffsetsLatest:
		ep := int32(-1)
		if lt, ok := l.mu.epochs.latest(); ok {
			ep = lt.epoch
		}
		return l.mu.leo, NoTimestamp, ep, true
	case ListOffsetsEarliest, ListOffsetsEarliestLocal:
		ep, ok := l.mu.epochs.epochForOffset(l.mu.logStartOffset)
		if !ok {
			ep = -1
		}
		return l.mu.logStartOffset, NoTimestamp, ep, true
	case ListOffsetsMaxTimestamp:
		t, o, e := l.latestTimestampLocked()
		return o, t, e, o >= 0
	}
	if ts < 0 {
		return -1, NoTimestamp, -1, false
	}
	for _, s := range l.mu.segments {
		if s.maxTs < ts {
			continue
		}
		_, toff := s.tidx.lookup(ts)
		_, pos := s.idx.lookup(max(toff, l.mu.logStartOffset))
		found := false
		_ = s.scan(pos, s.size, func(h BatchHeader, p int64) bool {
			if h.MaxTimestamp < ts || h.LastOffset() < l.mu.logStartOffset {
				return true
			}
			raw := make([]byte, h.Size())
			if _, err := s.log.ReadAt(raw, p); err != nil {
				return false
			}
			_ = walkBatchRecords(h, raw, func(r *Record) error {
				if r.Timestamp >= ts && r.Offset >= l.mu.logStartOffset {
					offset, timestamp, epoch, found = r.Offset, r.Timestamp, h.PartitionLeaderEpoch, true
					return errStop
				}
				return nil
			})
			return !found
		})
		if found {
			return offset, timestamp, max(epoch, -1), true
		}
	}
	return -1, NoTimestamp, -1, false
}

var errStop = fmt.Errorf("stop")

// LatestTimestamp returns the largest record timestamp in the log and the offset of
// the first record carrying it (ListOffsets MAX_TIMESTAMP), or (-1, -1) when empty.
func (l *Log) LatestTimestamp() (ts, offset int64) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	t, o, _ := l.latestTimestampLocked()
	return t, o
}

func (l *Log) latestTimestampLocked() (int64, int64, int32) {
	var best *segment
	for _, s := range l.mu.segments {
		if s.maxTs != NoTimestamp && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if best == nil {
		return NoTimestamp, -1, -1
	}
	_, pos := best.idx.lookup(best.maxTsOffset)
	ts, off, ep := NoTimestamp, int64(-1), int32(-1)
	_ = best.scan(pos, best.size, func(h BatchHeader, p int64) bool {
		if h.MaxTimestamp != best.maxTs {
			return true
		}
		ts, ep = h.MaxTimestamp, max(h.PartitionLeaderEpoch, -1)
		if h.LogAppendTime() {
			off = h.BaseOffset
			return false
		}
		raw := make([]byte, h.Size())
		if _, err := best.log.ReadAt(raw, p); err != nil {
			return false
		}
		off = h.LastOffset()
		_ = walkBatchRecords(h, raw, func(r *Record) error {
			if r.Timestamp == h.MaxTimestamp {
				off = r.Offset
				return errStop
			}
			return nil
		})
		return false
	})
	return ts, off, ep
}
