package raft

// epochCache is the in-memory leader-epoch cache (Kafka's LeaderEpochFileCache):
// the start offset of each epoch present in the log, ascending in both.
type epochCache []EpochStart

// latest returns the epoch of the last batch in the log (0 for an empty log).
func (c epochCache) latest() int32 {
	if len(c) == 0 {
		return 0
	}
	return c[len(c)-1].Epoch
}

// assign records that epoch starts at offset (no-op when epoch is not newer).
func (c *epochCache) assign(epoch int32, offset int64) {
	if n := len(*c); n > 0 && (*c)[n-1].Epoch >= epoch {
		return
	}
	*c = append(*c, EpochStart{Epoch: epoch, StartOffset: offset})
}

// truncateFrom removes every epoch that starts at or after offset.
func (c *epochCache) truncateFrom(offset int64) {
	s := *c
	for len(s) > 0 && s[len(s)-1].StartOffset >= offset {
		s = s[:len(s)-1]
	}
	*c = s
}

// truncateFromStart drops the epochs that end before offset; the epoch
// covering offset then starts at offset (LeaderEpochFileCache.truncateFromStart).
func (c *epochCache) truncateFromStart(offset int64) {
	s := *c
	i := 0
	for i < len(s) && s[i].StartOffset < offset {
		i++
	}
	if i > 0 && (i == len(s) || s[i].StartOffset > offset) {
		i--
		s[i].StartOffset = offset
	}
	*c = append(epochCache(nil), s[i:]...)
}

// endOffsetFor answers "where does epoch end in this log": the largest epoch
// <= requested present in the log and the first offset after it, as Kafka's
// LeaderEpochFileCache.endOffsetFor. logEnd is the log end offset.
// Returns (-1, -1) when the requested epoch is newer than every epoch in the log
// but not the latest (cannot happen for well-formed requests).
func (c epochCache) endOffsetFor(epoch int32, logEnd int64) OffsetAndEpoch {
	if len(c) == 0 {
		return OffsetAndEpoch{Offset: logEnd, Epoch: epoch}
	}
	if epoch == c.latest() {
		return OffsetAndEpoch{Offset: logEnd, Epoch: epoch}
	}
	// first entry with Epoch > epoch
	hi := -1
	for i, e := range c {
		if e.Epoch > epoch {
			hi = i
			break
		}
	}
	if hi < 0 {
		// requested epoch is larger than every known epoch
		return OffsetAndEpoch{Offset: logEnd, Epoch: c.latest()}
	}
	if hi == 0 {
		// smaller than every known epoch
		return OffsetAndEpoch{Offset: c[0].StartOffset, Epoch: epoch}
	}
	return OffsetAndEpoch{Offset: c[hi].StartOffset, Epoch: c[hi-1].Epoch}
}

func (c epochCache) clone() epochCache { return append(epochCache(nil), c...) }
