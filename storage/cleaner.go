package storage

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// The log cleaner threads the Manager owns (LogCleaner.java, LogCleanerManager.java):
// each takes the compacted log with the highest dirty ratio above its
// min.cleanable.dirty.ratio (or one whose max.compaction.lag.ms has passed), cleans
// it (clean.go) and records the new first dirty offset in cleaner-offset-checkpoint,
// then backs off log.cleaner.backoff.ms when there was nothing to do.
//
// Failures (LogCleaner.CleanerThread.cleanLog / tryCleanFilthiestLog): a cleaning
// the log changed under is aborted and retried later (LogCleaningAbortedException);
// an I/O error takes the log dir offline (LogDirFailureChannel, logdir.go); any other
// error (a corrupt batch, a broken invariant: Kafka's LogCleaningException) marks
// the partition uncleanable in its log dir (LogCleanerManager.markPartitionUncleanable).
// The cleaner then skips it, and, for cleanup.policy=compact,delete, so does
// retention, since Kafka's cleaner thread applies it to compacted logs
// (LogCleanerManager.deletableLogs). The mark is in memory only and lasts as long as
// the log it was set on: Kafka drops it when the partition is no longer among the
// broker's logs (maintainUncleanablePartitions: deleted, or its log dir went
// offline); here a deleted and recreated partition is a new Log and starts clean
// too. Truncation and restarts of the cleaner do not clear it; a broker restart does.

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
	mu         lockrank.Mutex // taken after Manager.mu, before a Log's locks
	inProgress map[TopicPartition]bool
	maps       chan *offsetMap // one per thread
	throttle   *throttler
	// uncleanable: per log dir, the partitions whose cleaning failed with an
	// unexpected error and the log it failed on (LogCleanerManager's
	// uncleanablePartitions). Guarded by mu, taken after Manager.mu.
	uncleanable map[string]map[TopicPartition]*Log
	ckptMu      lockrank.Mutex // serializes cleaner-offset-checkpoint writes; taken before Manager.mu
	stop        chan struct{}
	wg          sync.WaitGroup
}

func (m *Manager) initCleaner() {
	m.cleaner.mu.SetRank(lockrank.Cleaner)
	m.cleaner.ckptMu.SetRank(lockrank.CleanerCheckpoint)
	m.cleaner.inProgress = map[TopicPartition]bool{}
	m.cleaner.uncleanable = map[string]map[TopicPartition]*Log{}
	m.applyCleanerOptions()
}

// applyCleanerOptions fills in the defaults of m.o.Cleaner and builds the
// threads' offset maps and the I/O throttle from it; no cleaner thread runs.
func (m *Manager) applyCleanerOptions() {
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

// ReconfigureCleaner is LogCleaner.reconfigure (KIP-226: log.cleaner.threads,
// log.cleaner.dedupe.buffer.size, log.cleaner.io.buffer.size,
// log.cleaner.io.buffer.load.factor, log.cleaner.io.max.bytes.per.second
// and log.cleaner.backoff.ms changed dynamically): the cleaner threads stop
// (a cleaning under way finishes first) and as many as o asks for start
// again with the new buffers and throttle. Disabled and Sleep are kept from
// the Manager's options (log.cleaner.enable is not dynamic). Before Start or
// after Close only the options change.
func (m *Manager) ReconfigureCleaner(o CleanerOptions) {
	m.maintainLock.Lock()
	defer m.maintainLock.Unlock()
	m.mu.Lock()
	closed := m.mu.closed
	m.mu.Unlock()
	if closed {
		return
	}
	running := m.cleaner.stop != nil
	m.stopCleaner()
	o.Disabled, o.Sleep = m.o.Cleaner.Disabled, m.o.Cleaner.Sleep
	m.o.Cleaner = o
	m.applyCleanerOptions()
	if running {
		m.startCleaner()
	}
	m.logger.Info("reconfigured the log cleaner", zap.Int("threads", m.o.Cleaner.Threads),
		zap.Int64("dedupeBufferSize", m.o.Cleaner.DedupeBufferSize), zap.Float64("ioMaxBytesPerSecond", m.o.Cleaner.IOMaxBytesPerSecond))
}

// CleanerThreads is the number of log cleaner threads running.
func (m *Manager) CleanerThreads() int {
	m.maintainLock.Lock()
	defer m.maintainLock.Unlock()
	if m.cleaner.stop == nil {
		return 0
	}
	return m.o.Cleaner.Threads
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
// An error other than an I/O error marks the partition uncleanable (see the top of
// this file); the error is returned either way, for the caller to log.
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
	m.pruneUncleanableLocked()
	for tp, ml := range m.mu.logs {
		if m.mu.offline[ml.dir] || m.cleaner.inProgress[tp] || ml.log.Offline() || m.uncleanableLocked(tp, ml) {
			continue
		}
		ml.log.mu.RLock()
		if ml.log.mu.closed || !ml.log.mu.cfg.Compact() {
			ml.log.mu.RUnlock()
			continue
		}
		inf := ml.log.cleanableLocked(now, ml.log.HighWatermark())
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
	stats, err := l.cleanOnce(om, m.o.Cleaner.IOBufferSize, m.cleaner.throttle.take, l.HighWatermark())
	switch {
	case err == nil:
	case errors.Is(err, errCleaningAborted) || errors.Is(err, ErrClosed):
		m.logger.Info("log cleaning aborted", zap.Stringer("partition", best.tp))
		return false, nil
	case isIOError(err) || errors.Is(err, errKafkaStorage):
		// Kafka: an IOException takes the log dir offline; a KafkaStorageException
		// means it already is
		return false, l.ioErr(err)
	default:
		m.markUncleanable(best.ml.dir, best.tp, l)
		return false, fmt.Errorf("storage: unexpected error cleaning %s in %s; its partition is marked uncleanable: %w",
			best.tp, best.ml.dir, err)
	}
	if stats.Groups == 0 {
		return false, nil // nothing cleanable after all: back off
	}
	m.logger.Info("cleaned log", zap.String("topic", best.tp.Topic), zap.Int32("partition", best.tp.Partition),
		zap.Float64("dirtyRatio", best.inf.ratio), zap.Stringer("stats", stats))
	return true, m.checkpointCleaner(best.ml.dir)
}

// markUncleanable marks tp (whose log in dir is l) uncleanable
// (LogCleanerManager.markPartitionUncleanable).
func (m *Manager) markUncleanable(dir string, tp TopicPartition, l *Log) {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	parts := m.cleaner.uncleanable[dir]
	if parts == nil {
		parts = map[TopicPartition]*Log{}
		m.cleaner.uncleanable[dir] = parts
	}
	parts[tp] = l
}

// uncleanableLocked reports whether the log ml of tp is marked uncleanable.
// m.mu and m.cleaner.mu are held.
func (m *Manager) uncleanableLocked(tp TopicPartition, ml *managedLog) bool {
	return m.cleaner.uncleanable[ml.dir][tp] == ml.log
}

// isUncleanable reports whether tp's log l is marked uncleanable.
func (m *Manager) isUncleanable(tp TopicPartition, l *Log) bool {
	m.cleaner.mu.Lock()
	defer m.cleaner.mu.Unlock()
	for _, parts := range m.cleaner.uncleanable {
		if parts[tp] == l {
			return true
		}
	}
	return false
}

// pruneUncleanableLocked drops the marks of logs the Manager no longer serves: the
// partition was deleted (or deleted and created again: a new Log), or its log dir
// went offline (LogCleanerManager.maintainUncleanablePartitions, which Kafka runs
// after every cleaner pass). m.mu and m.cleaner.mu are held.
func (m *Manager) pruneUncleanableLocked() {
	for dir, parts := range m.cleaner.uncleanable {
		for tp, l := range parts {
			if ml, ok := m.mu.logs[tp]; !ok || ml.log != l || ml.dir != dir || m.mu.offline[dir] {
				delete(parts, tp)
			}
		}
		if len(parts) == 0 {
			delete(m.cleaner.uncleanable, dir)
		}
	}
}

// UncleanableStats is one log dir's uncleanable partitions, as Kafka's
// LogCleanerManager gauges (tag logDirectory) report them.
type UncleanableStats struct {
	// Partitions is uncleanable-partitions-count: the partitions marked uncleanable.
	Partitions int
	// Bytes is uncleanable-bytes: what the cleaner would clean in them now.
	Bytes int64
}

// Uncleanable returns, for every log dir, its uncleanable partitions count and
// bytes (zero when none), for the broker's metrics.
func (m *Manager) Uncleanable() map[string]UncleanableStats {
	type mark struct {
		dir string
		tp  TopicPartition
		l   *Log
	}
	var marks []mark
	m.mu.Lock()
	m.cleaner.mu.Lock()
	m.pruneUncleanableLocked()
	for dir, parts := range m.cleaner.uncleanable {
		for tp, l := range parts {
			marks = append(marks, mark{dir, tp, l})
		}
	}
	m.cleaner.mu.Unlock()
	m.mu.Unlock()
	out := make(map[string]UncleanableStats, len(m.o.LogDirs))
	for _, d := range m.o.LogDirs {
		out[d] = UncleanableStats{}
	}
	now := m.o.Now().UnixMilli()
	for _, mk := range marks {
		st := out[mk.dir]
		st.Partitions++
		mk.l.mu.RLock()
		if !mk.l.mu.closed {
			st.Bytes += mk.l.cleanableLocked(now, mk.l.HighWatermark()).dirtyBytes
		}
		mk.l.mu.RUnlock()
		out[mk.dir] = st
	}
	return out
}

// UncleanablePartitions lists the partitions of a log dir marked uncleanable.
func (m *Manager) UncleanablePartitions(dir string) []TopicPartition {
	m.mu.Lock()
	m.cleaner.mu.Lock()
	m.pruneUncleanableLocked()
	var out []TopicPartition
	for tp := range m.cleaner.uncleanable[dir] {
		out = append(out, tp)
	}
	m.cleaner.mu.Unlock()
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
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
	mu       lockrank.Mutex // a leaf, held while sleeping off the excess
	rate     float64        // bytes per second; <= 0 or +Inf: none
	now      func() time.Time
	sleep    func(time.Duration)
	start    time.Time
	observed float64
}

const throttleCheckInterval = 300 * time.Millisecond

func newThrottler(rate float64, now func() time.Time, sleep func(time.Duration)) *throttler {
	t := &throttler{rate: rate, now: now, sleep: sleep, start: now()}
	t.mu.SetRank(lockrank.CleanerThrottle)
	return t
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
