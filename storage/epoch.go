package storage

import (
	"path/filepath"
	"strconv"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// leader-epoch-checkpoint (LeaderEpochCheckpointFile.java): a text checkpoint,
// version 0, entries "<epoch> <startOffset>".
const leaderEpochCheckpointFile = "leader-epoch-checkpoint"

// Undefined epoch and offset (OffsetsForLeaderEpoch).
const (
	UndefinedEpoch       int32 = -1
	UndefinedEpochOffset int64 = -1
)

type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is LeaderEpochFileCache: the start offset of every leader epoch, in
// increasing epoch and offset order. Guarded by the owning Log's mu.
type epochCache struct {
	fs      vfs.FS
	file    string
	entries []epochEntry
	// stale: the file differs from entries, but only in entries that
	// describe no record: ones past the log end or before its start that
	// opening the log truncated (Kafka's LogLoader flushes that truncation
	// asynchronously, truncateFromEndAsyncFlush, KAFKA-15046), and an epoch
	// led from the log end with nothing appended in it yet
	// (AssignEpochStartOffset). Losing either in a crash is the same as
	// never having truncated (a reopen truncates again) or never having led
	// that epoch. The next append writes the file before a record lands in
	// such an epoch (mustFlush), so the file always describes every record.
	stale bool
}

// mustFlush reports whether an append that changed the cache (changed)
// must write the file.
func (c *epochCache) mustFlush(changed bool) bool { return changed || c.stale }

// newEpochCache is the empty cache of a new log, with no file yet.
func newEpochCache(fs vfs.FS, dir string) *epochCache {
	return &epochCache{fs: fs, file: filepath.Join(dir, leaderEpochCheckpointFile)}
}

func loadEpochCache(fs vfs.FS, dir string) (*epochCache, error) {
	c := newEpochCache(fs, dir)
	lines, err := readCheckpoint(fs, c.file, 0, 2)
	if err != nil {
		return nil, err
	}
	for _, l := range lines {
		e, err1 := strconv.ParseInt(l[0], 10, 32)
		o, err2 := strconv.ParseInt(l[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, errBadCheckpoint
		}
		c.entries = append(c.entries, epochEntry{int32(e), o})
	}
	return c, nil
}

func (c *epochCache) flush() error {
	lines := make([]string, len(c.entries))
	for i, e := range c.entries {
		lines[i] = strconv.FormatInt(int64(e.epoch), 10) + " " + strconv.FormatInt(e.start, 10)
	}
	if err := writeCheckpoint(c.fs, c.file, 0, lines); err != nil {
		return err
	}
	c.stale = false
	return nil
}

func (c *epochCache) latest() (epochEntry, bool) {
	if len(c.entries) == 0 {
		return epochEntry{}, false
	}
	return c.entries[len(c.entries)-1], true
}

// assign records that epoch starts at start. Entries with an epoch >= epoch or a
// start offset >= start are removed first (maybeTruncateNonMonotonicEntries). It
// reports whether the cache changed.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if epoch < 0 || start < 0 {
		return false
	}
	if l, ok := c.latest(); ok && l.epoch == epoch && start >= l.start {
		return false
	}
	n := len(c.entries)
	for n > 0 && (c.entries[n-1].epoch >= epoch || c.entries[n-1].start >= start) {
		n--
	}
	c.entries = append(c.entries[:n], epochEntry{epoch, start})
	return true
}

// endOffsetFor is LeaderEpochFileCache.endOffsetFor.
func (c *epochCache) endOffsetFor(requested int32, logEndOffset int64) (int32, int64) {
	if requested == UndefinedEpoch {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if l, ok := c.latest(); ok && l.epoch == requested {
		return requested, logEndOffset
	}
	// higher: first entry with epoch > requested; floor: last with epoch <= requested
	hi := -1
	for i, e := range c.entries {
		if e.epoch > requested {
			hi = i
			break
		}
	}
	if hi < 0 {
		return UndefinedEpoch, UndefinedEpochOffset
	}
	if hi == 0 {
		return requested, c.entries[0].start
	}
	return c.entries[hi-1].epoch, c.entries[hi].start
}

// truncateFromEnd removes every entry with start offset >= end.
func (c *epochCache) truncateFromEnd(end int64) bool {
	n := len(c.entries)
	for n > 0 && c.entries[n-1].start >= end {
		n--
	}
	changed := n != len(c.entries)
	c.entries = c.entries[:n]
	return changed
}

// truncateFromStart drops the entries wholly below start and moves the one that
// contains start up to start (LeaderEpochFileCache.truncateFromStartAsyncFlush).
func (c *epochCache) truncateFromStart(start int64) bool {
	i := 0
	for i < len(c.entries) && c.entries[i].start <= start {
		i++
	}
	if i == 0 {
		return false
	}
	last := c.entries[i-1]
	if i == 1 && last.start == start {
		return false
	}
	last.start = start
	c.entries = append([]epochEntry{last}, c.entries[i:]...)
	return true
}

// recovered makes the cache agree with a batch that recovery found at base
// with leader epoch epoch, scanning the log in order. Kafka's recovery only
// adds an epoch newer than the latest (LogSegment.recover), trusting the
// checkpoint for the rest; but the checkpoint is written, synced, as soon as
// an epoch starts, before the records it describes are synced, so after a
// crash it can name an epoch for offsets that now hold older records (a
// truncation that was not synced came back, the new records did not). An
// epoch the cache says started at or before a batch of an older epoch is
// dropped, with the entries after it; a batch of an epoch newer than the
// one the cache has for it starts that epoch there. It reports whether the
// cache changed.
func (c *epochCache) recovered(epoch int32, base int64) bool {
	if epoch < 0 {
		return false
	}
	changed := false
	for {
		i := len(c.entries) - 1
		for i >= 0 && c.entries[i].start > base {
			i--
		}
		if i >= 0 && c.entries[i].epoch > epoch {
			c.entries = c.entries[:i]
			changed = true
			continue
		}
		if i < 0 || c.entries[i].epoch < epoch {
			changed = c.assign(epoch, base) || changed
		}
		return changed
	}
}

// epochForOffset returns the epoch whose range holds off.
func (c *epochCache) epochForOffset(off int64) (int32, bool) {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].start <= off {
			return c.entries[i].epoch, true
		}
	}
	return 0, false
}
