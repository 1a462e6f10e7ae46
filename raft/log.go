package raft

import "fmt"

// LogStore is what the node needs of the __cluster_metadata-0 log. Batches
// handed to Append already carry their offsets and epochs. Safe for concurrent use.
type LogStore interface {
	LogEndOffset() int64
	// Append appends whole batches starting exactly at LogEndOffset.
	Append(batches []byte) error
	// Truncate removes every offset >= offset (a batch boundary).
	Truncate(offset int64) error
	Flush() error
	// Read returns whole batches from the batch containing from up to (not
	// including) batches starting at or after to, at most maxBytes unless the
	// first batch alone is larger.
	Read(from, to int64, maxBytes int) ([]byte, error)
	Close() error

	// LogStartOffset is the first offset of the log (offsets below it are in snapshots).
	LogStartOffset() int64
	// IncrementLogStartOffset raises the log start offset and deletes the
	// segments wholly below it.
	IncrementLogStartOffset(offset int64) error
	// TruncateFullyAndStartAt empties the log and starts it at offset.
	TruncateFullyAndStartAt(offset int64) error
	// Size is the size of the log in bytes.
	Size() int64
}

// epochLister is implemented by stores that keep a leader-epoch cache.
type epochLister interface {
	Epochs() ([]EpochStart, error)
}

// scanEpochs returns the leader-epoch cache of a log, rebuilt from the
// batches when the store does not keep one.
func scanEpochs(l LogStore) ([]EpochStart, error) {
	if el, ok := l.(epochLister); ok {
		return el.Epochs()
	}
	var c epochCache
	end := l.LogEndOffset()
	for off := l.LogStartOffset(); off < end; {
		b, err := l.Read(off, end, 1<<20)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("raft: empty read at %d below log end %d", off, end)
		}
		err = walkBatches(b, false, func(h batchHeader, _ []byte) error {
			c.assign(h.epoch, h.baseOffset)
			off = h.lastOffset() + 1
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return c, nil
}
