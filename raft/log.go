package raft

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

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
}

// scanEpochs rebuilds the leader-epoch cache from the batches of a log.
func scanEpochs(l LogStore) ([]EpochStart, error) {
	var c epochCache
	end := l.LogEndOffset()
	for off := int64(0); off < end; {
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

// fileLog is a one-segment log in Kafka's .log format (00000000000000000000.log),
// used until the metadata log moves onto storage.Log. On open it keeps the
// longest valid prefix (framing and CRC) and truncates a torn tail.
type fileLog struct {
	mu      sync.Mutex
	f       vfs.File
	batches []batchPos
	size    int64
}

type batchPos struct {
	base, last int64
	pos, size  int64
}

const segmentName = "00000000000000000000.log"

func openFileLog(fsys vfs.FS, dir string) (*fileLog, error) {
	if err := fsys.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile(filepath.Join(dir, segmentName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	buf := make([]byte, st.Size())
	if n, err := f.ReadAt(buf, 0); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
		f.Close()
		return nil, err
	}
	l := &fileLog{f: f}
	next := int64(0)
	for pos := int64(0); pos < int64(len(buf)); {
		var stop bool
		werr := walkBatches(buf[pos:], true, func(h batchHeader, raw []byte) error {
			if h.baseOffset != next {
				stop = true
				return io.EOF
			}
			l.batches = append(l.batches, batchPos{base: h.baseOffset, last: h.lastOffset(), pos: pos, size: int64(len(raw))})
			pos += int64(len(raw))
			next = h.lastOffset() + 1
			return nil
		})
		if werr != nil || stop {
			break
		}
	}
	if n := len(l.batches); n > 0 {
		l.size = l.batches[n-1].pos + l.batches[n-1].size
	}
	if l.size != int64(len(buf)) {
		if err := f.Truncate(l.size); err != nil {
			f.Close()
			return nil, err
		}
	}
	return l, nil
}

func (l *fileLog) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.endLocked()
}

func (l *fileLog) endLocked() int64 {
	if n := len(l.batches); n > 0 {
		return l.batches[n-1].last + 1
	}
	return 0
}

func (l *fileLog) Append(b []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	next := l.endLocked()
	var add []batchPos
	pos := l.size
	err := walkBatches(b, true, func(h batchHeader, raw []byte) error {
		if h.baseOffset != next {
			return fmt.Errorf("raft: append at %d, log end %d", h.baseOffset, next)
		}
		add = append(add, batchPos{base: h.baseOffset, last: h.lastOffset(), pos: pos, size: int64(len(raw))})
		pos += int64(len(raw))
		next = h.lastOffset() + 1
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := l.f.WriteAt(b, l.size); err != nil {
		return err
	}
	l.batches = append(l.batches, add...)
	l.size = pos
	return nil
}

func (l *fileLog) Truncate(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].base >= offset })
	if i == len(l.batches) {
		return nil
	}
	if i > 0 && l.batches[i-1].last >= offset {
		return fmt.Errorf("raft: truncate to %d inside a batch", offset)
	}
	if err := l.f.Truncate(l.batches[i].pos); err != nil {
		return err
	}
	l.size = l.batches[i].pos
	l.batches = l.batches[:i]
	return nil
}

func (l *fileLog) Flush() error { return l.f.Sync() }

func (l *fileLog) Read(from, to int64, maxBytes int) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.batches), func(i int) bool { return l.batches[i].last >= from })
	if i == len(l.batches) || l.batches[i].base >= to {
		return nil, nil
	}
	j := i
	size := int64(0)
	for j < len(l.batches) && l.batches[j].base < to && (j == i || size+l.batches[j].size <= int64(maxBytes)) {
		size += l.batches[j].size
		j++
	}
	buf := make([]byte, size)
	if _, err := l.f.ReadAt(buf, l.batches[i].pos); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}

func (l *fileLog) Close() error { return l.f.Close() }
