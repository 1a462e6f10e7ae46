package storage

import (
	"errors"
	"math"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
)

// The log cleaner threads the Manager owns (LogCleaner.java, LogCleanerManager.java):
// each takes the compacted log with the highest dirty ratio above its
// min.cleanable.dirty.ratio (or one whose max.compaction.lag.ms has passed), cleans
// it (clean.go) and records the new first dirty offset in cleaner-offset-checkpoint,
// then backs off log.cleaner.backoff.ms when there was nothing to do.

// CleanerCheckpointFile holds each compacted log's first dirty offset, in the
// offset checkpoint format (LogCleanerManager.scala).
const CleanerCheckpointFile = "cleaner-offset-checkpoint"

// CleanerOptions are the broker's log.cleaner.* settings; zero values take Kafka's
// defaults.
type CleanerOptions struct {
	Disabled            bool    // log.cleaner.enable=false
	Threads             int     // log.cleaner.threads, 1
	DedupeBufferSize    int64   // log.cleaner.dedupe.buffer.size, 128 MiB over all threads
	IOBufferSize        int     // log.cleaner.io.buffer.size, 512 KiB
	IOMaxBytesPerSecond float64 // log.cleaner.io.max.bytes.per.second; <= 0 unlimited
	LoadFactor          float64 // log.cleaner.io.buffer.load.factor, 0.9
	BackoffMs           int64   // log.cleaner.backoff.ms, 15000
	// Sleep waits for the I/O throttle (default time.Sleep).
	Sleep func(time.Duration)
}

type cleanerState struct {
	mu         sync.Mutex
	inProgress map[TopicPartition]bool
	maps       chan *offsetMap // one per thread
	throttle   *throttler
	ckptMu     sync.Mutex
	stop       chan struct{}
	wg         sync.WaitGroup
}

func (m *Manager) initCleaner() {
	c := &m.o.Cleaner
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.DedupeBufferSize <= 0 {
		c.DedupeBufferSize = 128 << 20
	}
	if c.IOBufferSize <= 0 {
		c.IOBufferSize = 512 << 10
	}
	if c.LoadFactor <= 0 || c.LoadFactor > 1 {
		c.LoadFactor = 0.9
	}
	if c.BackoffMs <= 0 {
		c.BackoffMs = 15000
	}
	if c.Sleep == nil {
		c.Sleep = time.Sleep
	}
	m.cleaner.inProgress = map[TopicPartition]bool{}
	m.cleaner.maps = make(chan *offsetMap, c.Threads)
	for range c.Threads {
		// Kafka splits the dedupe buffer between the threads
		m.cleaner.maps <- newOffsetMap(c.DedupeBufferSize/int64(c.Threads), c.LoadFactor)
	}
	m.cleaner.throttle = newThrottler(c.IOMaxBytesPerSecond, m.o.Now, c.Sleep)
}

func (m *Manager) startCleaner() {
	if m.o.Cleaner.Disabled {
		return
	}
	m.cleaner.stop = make(chan struct{})
	for i := range m.o.Cleaner.Threads {
		m.cleaner.wg.Add(1)
		go func() {
			defer m.cleaner.wg.Done()
			log := m.logger.With(zap.Int("cleaner", i))
			for {
				cleaned, err := m.Clean()
				if err != nil && !errors.Is(err, ErrClosed) {
					log.Warn("log cleaning failed", zap.Error(err))
				}
				if cleaned && err == nil {
					select {
					case <-m.cleaner.stop:
						return
					default:
						continue
					}
				}
				t := time.NewTimer(time.Duration(m.o.Cleaner.BackoffMs) * time.Millisecond)
				select {
				case <-m.cleaner.stop:
					t.Stop()
					return
				case <-t.C:
				}
			}
		}()
	}
}

func (m *Manager) stopCleaner() {
	if m.cleaner.stop != nil {
		close(m.cleaner.stop)
		m.cleaner.wg.Wait()
		m.cleaner.stop = nil
	}
}

// setFirstDirty sets the cleaner's checkpoint of the log.
func (l *Log) setFirstDirty(off int64) {
	l.mu.Lock()
	l.mu.firstDirty = off
	l.mu.Unlock()
}

// FirstDirtyOffset is the cleaner's checkpoint: offsets below it have been cleaned
// (-1 when the log was never cleaned).
func (l *Log) FirstDirtyOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.firstDirty
}

// CleanableRatio returns the dirty ratio the cleaner sees now (for tests and tools).
func (l *Log) CleanableRatio() float64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.cleanableLocked(l.nowMs(), -1).ratio
}

// Clean cleans the filthiest compacted log once, on the calling goroutine
// (LogCleaner.CleanerThread.tryCleanFilthiestLog). It reports whether a log was
// cleaned. The cleaner threads call it; tests call it with an injected clock.
func (m *Manager) Clean() (bool, error) {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return false, ErrClosed
	}
	type cand struct {
		tp  TopicPartition
		ml  *managedLog
		inf cleanableInfo
	}
	var best *cand // its bound is recomputed when cleaning
	now := m.o.Now().UnixMilli()
	m.cleaner.mu.Lock()
	for tp, ml := range m.mu.logs {
		if m.mu.offline[ml.dir] || m.cleaner.inProgress[tp] || ml.log.Offline() {
			continue
		}
		ml.log.mu.RLock()
		if ml.log.mu.closed || !ml.log.mu.cfg.Compact() {
			ml.log.mu.RUnlock()
			continue
		}
		bound := int64(-1)
		if m.o.HighWatermark != nil {
			bound = m.o.HighWatermark(tp)
		}
		inf := ml.log.cleanableLocked(now, bound)
		minRatio := ml.log.mu.cfg.MinCleanableDirtyRatio
		ml.log.mu.RUnlock()
		if !(inf.needNow && inf.dirtyBytes > 0) && !(inf.ratio > minRatio) {
			continue
		}
		if best == nil || inf.ratio > best.inf.ratio {
			best = &cand{tp, ml, inf}
		}
	}
	if best != nil {
		m.cleaner.inProgress[best.tp] = true
	}
	m.cleaner.mu.Unlock()
	m.mu.Unlock()
	if best == nil {
		return false, nil
	}
	defer func() {
		m.cleaner.mu.Lock()
		delete(m.cleaner.inProgress, best.tp)
		m.cleaner.mu.Unlock()
	}()
	om := <-m.cleaner.maps
	defer func() { m.cleaner.maps <- om }()
	l := best.ml.log
	bound := int64(-1)
	if m.o.HighWatermark != nil {
		bound = m.o.HighWatermark(best.tp)
	}
	stats, err := l.cleanOnce(om, m.o.Cleaner.IOBufferSize, m.cleaner.throttle.take, bound)
	if errors.Is(err, errCleaningAborted) {
		m.logger.Info("log cleaning aborted", zap.Stringer("partition", best.tp))
		return false, nil
	}
	if err != nil {
		_ = l.ioErr(err)
		return false, err
	}
	if stats.Groups == 0 {
		return false, nil // nothing cleanable after all: back off
	}
	m.logger.Info("cleaned log", zap.String("topic", best.tp.Topic), zap.Int32("partition", best.tp.Partition),
		zap.Float64("dirtyRatio", best.inf.ratio), zap.Stringer("stats", stats))
	return true, m.checkpointCleaner(best.ml.dir)
}

// checkpointCleaner writes cleaner-offset-checkpoint of one log dir: every
// compacted log's first dirty offset.
func (m *Manager) checkpointCleaner(dir string) error {
	m.cleaner.ckptMu.Lock()
	defer m.cleaner.ckptMu.Unlock()
	offs := map[TopicPartition]int64{}
	m.mu.Lock()
	if m.mu.offline[dir] {
		m.mu.Unlock()
		return nil
	}
	for tp, ml := range m.mu.logs {
		if ml.dir != dir {
			continue
		}
		if off := ml.log.FirstDirtyOffset(); off >= 0 {
			offs[tp] = off
		}
	}
	m.mu.Unlock()
	if err := writeOffsetCheckpoint(m.o.FS, filepath.Join(dir, CleanerCheckpointFile), offs); err != nil {
		return m.checkpointFailed(dir, err)
	}
	return nil
}

// checkpointFailed takes the dir offline when writing one of its checkpoints failed.
func (m *Manager) checkpointFailed(dir string, err error) error {
	if isIOError(err) {
		m.dirFailed(dir, err)
		return &StorageError{Dir: dir, Err: err}
	}
	return err
}

// throttler limits the cleaner's I/O to a rate (Throttler.java): every 300 ms of
// the clock it compares the bytes done with the rate and sleeps off the excess.
type throttler struct {
	mu       sync.Mutex
	rate     float64 // bytes per second; <= 0 or +Inf: none
	now      func() time.Time
	sleep    func(time.Duration)
	start    time.Time
	observed float64
}

const throttleCheckInterval = 300 * time.Millisecond

func newThrottler(rate float64, now func() time.Time, sleep func(time.Duration)) *throttler {
	return &throttler{rate: rate, now: now, sleep: sleep, start: now()}
}

func (t *throttler) take(n int) {
	if t == nil || t.rate <= 0 || math.IsInf(t.rate, 1) || t.rate >= math.MaxFloat64 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.observed += float64(n)
	elapsed := t.now().Sub(t.start)
	if elapsed < throttleCheckInterval {
		return
	}
	if rate := t.observed / elapsed.Seconds(); rate > t.rate {
		want := time.Duration(t.observed / t.rate * float64(time.Second))
		if d := want - elapsed; d > 0 {
			t.sleep(d)
		}
	}
	t.observed = 0
	t.start = t.now()
}
