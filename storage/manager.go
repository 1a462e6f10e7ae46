package storage

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Per-log-dir files (LogManager.scala, CleanShutdownFileHandler.java).
// .kafka_cleanshutdown holds {"broker_epoch":"N","version":"0"}: Jackson's rendering
// of CleanShutdownFileHandler's HashMap<String,String> (string values).
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	CleanShutdownFile            = ".kafka_cleanshutdown"
	// MetadataPartitionDir is the KRaft metadata log, owned by raft, never by the Manager.
	MetadataPartitionDir = "__cluster_metadata-0"
	metadataTopic        = "__cluster_metadata"
)

// ManagerOptions configure OpenManager.
type ManagerOptions struct {
	FS      vfs.FS   // default vfs.Default
	LogDirs []string // log.dirs
	Config  Config   // default topic config for logs found at startup
	// ConfigFor, when set, gives the config of a log found at startup.
	ConfigFor func(tp TopicPartition) Config
	Now       func() time.Time
	Logger    *zap.Logger
	// BrokerEpoch goes into the clean-shutdown marker; SetBrokerEpoch updates it.
	BrokerEpoch int64
	// Intervals of the periodic work (Kafka's defaults when zero):
	FlushCheckIntervalMs     int64 // flush.ms checks; default 1000
	RecoveryCheckpointMs     int64 // log.flush.offset.checkpoint.interval.ms, 60000
	LogStartCheckpointMs     int64 // log.flush.start.offset.checkpoint.interval.ms, 60000
	RetentionCheckIntervalMs int64 // log.retention.check.interval.ms, 300000
	// ProducerExpirationCheckIntervalMs is
	// producer.id.expiration.check.interval.ms (600000): how often idle
	// producer ids (producer.id.expiration.ms) are expired
	// (UnifiedLog's PeriodicProducerExpirationCheck).
	ProducerExpirationCheckIntervalMs int64
	RecoveryThreadsPerDataDir         int // num.recovery.threads.per.data.dir, 2
	// Cleaner configures the log cleaner (log.cleaner.*).
	Cleaner CleanerOptions
	// OnDirFailure is called when a log dir goes offline after an I/O error
	// (KIP-112), e.g. to report OfflineLogDirs in heartbeats: from its own
	// goroutine at run time, from OpenManager's for a dir that failed to load.
	OnDirFailure func(dir string)
	// OnFlush is every log's LogOptions.OnFlush (flush time metrics).
	OnFlush func(time.Duration)
	// InitialOfflineDirs are log dirs offline from the start: their
	// meta.properties could not be read (Kafka's MetaPropertiesEnsemble
	// errorLogDirs, which BrokerServer hands LogManager as initialOfflineDirs).
	// Each is treated as a dir that failed to load before it was listed: never
	// created, listed or written to, reported by OfflineDirs and OnDirFailure.
	InitialOfflineDirs []string
}

// Manager owns every partition log in log.dirs (LogManager).
type Manager struct {
	o      ManagerOptions
	logger *zap.Logger

	mu struct {
		lockrank.Mutex
		logs        map[TopicPartition]*managedLog
		brokerEpoch int64
		closed      bool
		lastRecCkpt int64
		lastLSOCkpt int64
		lastRetain  int64
		lastExpire  int64
		lastFlush   int64
		offline     map[string]bool // log dirs taken offline by an I/O error
		// released: partitions deleted since the start, which a log dir that
		// could not be listed at startup is no longer asked for (offlineDirLocked)
		released map[TopicPartition]bool
		// futures are the future logs of replicas moving to another log dir
		// (KIP-113, future.go), by partition.
		futures map[TopicPartition]*managedLog
		// cordoned are the log dirs that take no new logs (KIP-1066,
		// SetCordonedDirs).
		cordoned map[string]bool
	}
	// loadingFutures are the -future directories loadDir found, resolved
	// once every dir is loaded (resolveFutureLogs); OpenManager's only.
	loadingFutures []foundFuture
	cleaner        cleanerState
	dirDeletes     dirDeletions   // -delete directories waiting for removal (delete.go)
	ckptMu         lockrank.Mutex // serializes checkpoint file writes; taken before mu

	hadClean  map[string]bool
	prevEpoch int64
	unlisted  map[string]bool // log dirs that failed at startup before they were listed
	stop      chan struct{}
	loopDone  chan struct{}
	startOnce sync.Once
	// maintainLock serializes Maintain and Close; taken before ckptMu and mu.
	maintainLock lockrank.Mutex
}

type managedLog struct {
	log *Log
	dir string // the log dir holding it
	// stub: log stands for one that did not load in a dir that failed at startup
	// (offlineStub)
	stub bool
}

// cleanShutdownJSON is what CleanShutdownFileHandler writes: a Jackson-serialized
// HashMap<String,String>, so string values, keys in HashMap order.
func cleanShutdownJSON(brokerEpoch int64) []byte {
	return []byte(`{"broker_epoch":"` + strconv.FormatInt(brokerEpoch, 10) + `","version":"0"}`)
}

// parseCleanShutdown reads the broker epoch from the marker; it also accepts numbers
// and a camel-case key. ok is false when the content is not JSON.
func parseCleanShutdown(data []byte) (int64, bool) {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return -1, false
	}
	for _, k := range []string{"broker_epoch", "brokerEpoch"} {
		switch v := m[k].(type) {
		case string:
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n, true
			}
		case float64:
			return int64(v), true
		}
	}
	return -1, true
}

// OpenManager loads every partition directory under each log dir, recovering logs
// after an unclean shutdown (no .kafka_cleanshutdown marker, which is removed as a
// dir starts loading so that a crash is noticed next time).
//
// A log dir that fails to load with an I/O error goes offline and the others are
// served (LogManager.loadLogs hands it to the LogDirFailureChannel): the logs of it
// that did load stay, offline, as after a failure at run time (logdir.go), and
// the partitions it holds that did not load are not created anew elsewhere. Only
// when every log dir failed does OpenManager fail ("Shutdown broker because all
// log dirs in ... have failed"). Errors that are not I/O errors (a directory whose
// name is not a partition's, a partition in two log dirs) fail it as well, as they
// fail Kafka's startup.
func OpenManager(o ManagerOptions) (*Manager, error) {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	o.Config = o.Config.normalized()
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.FlushCheckIntervalMs, 1000)
	def(&o.RecoveryCheckpointMs, 60000)
	def(&o.LogStartCheckpointMs, 60000)
	def(&o.RetentionCheckIntervalMs, 300000)
	def(&o.ProducerExpirationCheckIntervalMs, 600000)
	if o.RecoveryThreadsPerDataDir <= 0 {
		o.RecoveryThreadsPerDataDir = 2
	}
	if len(o.LogDirs) == 0 {
		return nil, errors.New("storage: no log dirs")
	}
	m := &Manager{o: o, logger: o.Logger, hadClean: map[string]bool{}, prevEpoch: -1, unlisted: map[string]bool{}}
	m.maintainLock.SetRank(lockrank.LogMaintain)
	m.ckptMu.SetRank(lockrank.LogCheckpoint)
	m.mu.SetRank(lockrank.LogManager)
	m.dirDeletes.mu.SetRank(lockrank.DirDeletions)
	m.mu.logs = map[TopicPartition]*managedLog{}
	m.mu.offline = map[string]bool{}
	m.mu.released = map[TopicPartition]bool{}
	m.mu.futures = map[TopicPartition]*managedLog{}
	m.initCleaner()
	m.mu.brokerEpoch = o.BrokerEpoch
	now := o.Now().UnixMilli()
	m.mu.lastRecCkpt, m.mu.lastLSOCkpt, m.mu.lastRetain, m.mu.lastFlush, m.mu.lastExpire = now, now, now, now, now
	for _, dir := range o.LogDirs {
		if slices.Contains(o.InitialOfflineDirs, dir) {
			// LogManager.createAndValidateLogDirs: an initial offline dir is a
			// failed dir before anything in it is looked at
			m.loadFailed(dir, nil, false, fmt.Errorf("Failed to load %s during broker startup", dir))
			continue
		}
		parts, listed, err := m.loadDir(dir)
		if err != nil && !loadIOError(err) {
			m.closeLogs()
			return nil, err
		}
		if err != nil || m.DirOffline(dir) {
			m.loadFailed(dir, parts, listed, err)
		}
	}
	if err := m.resolveFutureLogs(m.loadingFutures); err != nil {
		m.closeLogs()
		return nil, err
	}
	m.loadingFutures = nil
	if err := m.allDirsFailed(); err != nil {
		m.closeLogs()
		return nil, err
	}
	if len(m.OfflineDirs()) > 0 {
		// LogManager.readBrokerEpochFromCleanShutdownFiles: no previous epoch
		// unless every log dir is live
		m.prevEpoch = -1
	}
	if err := m.Checkpoint(); err != nil {
		// the dir whose checkpoint failed went offline (checkpointFailed)
		if aerr := m.allDirsFailed(); aerr != nil {
			m.closeLogs()
			return nil, aerr
		}
		m.logger.Error("writing checkpoints after loading", zap.Error(err))
	}
	return m, nil
}

// loadIOError reports whether an error met loading a log dir takes the dir offline
// rather than failing the startup: an I/O error, or a malformed checkpoint file,
// which Kafka's CheckpointFile reports as an IOException
// (CheckpointFileWithFailureHandler.read then takes the dir offline).
func loadIOError(err error) bool {
	return isIOError(err) || errors.Is(err, errBadCheckpoint) || errors.Is(err, errKafkaStorage)
}

// allDirsFailed returns LogManager's fatal error when no log dir is online.
func (m *Manager) allDirsFailed() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.o.LogDirs {
		if !m.mu.offline[d] {
			return nil
		}
	}
	return &StorageError{Dir: strings.Join(m.o.LogDirs, ","),
		Err: fmt.Errorf("shutdown broker because all log dirs in %s have failed", strings.Join(m.o.LogDirs, ", "))}
}

// loadFailed takes a log dir that failed while loading offline: its loaded logs go
// offline and the partitions of it (parts, when the dir could be listed) that did
// not load get an offline stub (offlineStub), so that none is created empty in
// another dir.
func (m *Manager) loadFailed(dir string, parts []TopicPartition, listed bool, cause error) {
	m.mu.Lock()
	for _, tp := range parts {
		if _, ok := m.mu.logs[tp]; !ok {
			if l, err := m.offlineStub(dir, tp, [16]byte{}); err == nil {
				m.mu.logs[tp] = &managedLog{log: l, dir: dir, stub: true}
			} else {
				m.logger.Error("stub for a partition of a failed log dir", zap.Stringer("partition", tp), zap.Error(err))
			}
		}
	}
	if !listed {
		m.unlisted[dir] = true
	}
	m.mu.Unlock()
	if cause == nil {
		cause = errors.New("a log in it met an I/O error while loading")
	}
	m.logger.Error("error while loading log dir; it is offline", zap.String("dir", dir), zap.Error(cause))
	m.dirFailed(dir, cause)
	m.mu.Lock()
	for _, ml := range m.mu.logs {
		if ml.dir == dir {
			ml.log.setOffline() // also the logs loaded after an earlier dirFailed
		}
	}
	m.mu.Unlock()
}

var (
	// Kafka's LocalLog.DeleteDirPattern, FutureDirPattern and StrayDirPattern
	deleteDirPattern = regexp.MustCompile(`^(\S+)-(\S+)\.(\S+)-delete$`)
	futureDirPattern = regexp.MustCompile(`^(\S+)-(\S+)\.(\S+)-future$`)
	strayDirPattern  = regexp.MustCompile(`^(\S+)-(\S+)\.(\S+)-stray$`)
)

// remoteIndexCacheDir is tiered storage's index cache (RemoteIndexCache.DIR_NAME),
// the one directory in a log dir that Kafka does not take for a partition.
const remoteIndexCacheDir = "remote-log-index-cache"

// parseLogDirEntry parses the name of a directory in a log dir
// (LocalLog.parseTopicPartitionName): <topic>-<partition>, or
// <topic>-<partition>.<id> followed by -delete, -future or -stray (suffix). Kafka
// refuses to start on any other directory (a KafkaException, not an IOException).
func parseLogDirEntry(dir, name string) (tp TopicPartition, suffix string, err error) {
	bad := fmt.Errorf("storage: found directory %s, '%s' is not in the form of topic-partition or "+
		"topic-partition.uniqueId-delete (if marked for deletion); Kafka's log directories (and children) "+
		"should only contain Kafka topic data", filepath.Join(dir, name), name)
	base := name
	for suf, re := range map[string]*regexp.Regexp{"-delete": deleteDirPattern, "-future": futureDirPattern, "-stray": strayDirPattern} {
		if strings.HasSuffix(name, suf) {
			if !re.MatchString(name) {
				return tp, "", bad
			}
			base, suffix = name[:strings.LastIndexByte(name, '.')], suf
		}
	}
	if tp, err = ParseTopicPartition(base); err != nil {
		return tp, "", bad
	}
	return tp, suffix, nil
}

// loadDir loads the logs of one log dir (LogManager.loadLogs): parts are the
// partitions found in it and listed whether it could be listed. An I/O error (see
// loadIOError) is returned after every log that could be opened is loaded; any
// other error stops the startup.
func (m *Manager) loadDir(dir string) (parts []TopicPartition, listed bool, _ error) {
	fs := m.o.FS
	// LogManager.createAndValidateLogDirs: created when missing (and its parent
	// flushed), a readable directory
	if err := vfs.MkdirAllSync(fs, dir, 0o755); err != nil {
		return nil, false, err
	}
	clean := false
	if data, err := vfs.ReadFile(fs, filepath.Join(dir, CleanShutdownFile)); err == nil {
		// Kafka trusts the file's existence; its content only carries the epoch
		clean = true
		if epoch, ok := parseCleanShutdown(data); ok {
			m.prevEpoch = max(m.prevEpoch, epoch)
		}
		// removed before loading (KAFKA-10471): a crash while loading, or a failure
		// of this dir, makes the next start recover it
		if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil && !os.IsNotExist(err) {
			return nil, false, err
		}
		if err := fs.SyncDir(dir); err != nil {
			return nil, false, err
		}
	} else if !os.IsNotExist(err) {
		return nil, false, err
	}
	m.hadClean[dir] = clean
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return nil, false, err
	}
	type job struct {
		tp   TopicPartition
		path string
	}
	var jobs []job
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || name == remoteIndexCacheDir {
			continue
		}
		tp, suffix, err := parseLogDirEntry(dir, name)
		if err != nil {
			return parts, true, err
		}
		switch {
		case tp.Topic == metadataTopic:
			continue // raft's
		case suffix == "-delete":
			// a deletion that did not finish before the shutdown: removed
			// file.delete.delay.ms from now (delete.go)
			m.scheduleDirDeletion(filepath.Join(dir, name), dir, nil)
			continue
		case suffix == "-future":
			// a move between log dirs (future.go): resumed or promoted once
			// every dir is loaded
			m.loadingFutures = append(m.loadingFutures, foundFuture{tp: tp, dir: dir, path: filepath.Join(dir, name), hadCleanSD: clean})
			continue
		case suffix != "":
			continue // -stray logs are not served
		}
		m.mu.Lock()
		_, dup := m.mu.logs[tp]
		m.mu.Unlock()
		if dup {
			return parts, true, fmt.Errorf("storage: duplicate log directories for %s: one is %s", tp, filepath.Join(dir, name))
		}
		parts = append(parts, tp)
		jobs = append(jobs, job{tp, filepath.Join(dir, name)})
	}
	// Kafka reads each checkpoint through CheckpointFileWithFailureHandler: an
	// unreadable or malformed one takes the dir offline
	recovery, err := readOffsetCheckpoint(fs, filepath.Join(dir, RecoveryPointCheckpointFile))
	if err != nil {
		return parts, true, err
	}
	starts, err := readOffsetCheckpoint(fs, filepath.Join(dir, LogStartOffsetCheckpointFile))
	if err != nil {
		return parts, true, err
	}
	dirty, err := readOffsetCheckpoint(fs, filepath.Join(dir, CleanerCheckpointFile))
	if err != nil {
		return parts, true, err
	}
	var (
		wg           sync.WaitGroup
		emu          lockrank.Mutex // a leaf: the loaders' errors
		ioErr, fatal error
		sem          = make(chan struct{}, m.o.RecoveryThreadsPerDataDir)
	)
	emu.SetRank(lockrank.LoadErrors)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cfg := m.o.Config
			if m.o.ConfigFor != nil {
				cfg = m.o.ConfigFor(j.tp)
			}
			l, err := OpenLog(LogOptions{FS: fs, Dir: j.path, Config: cfg, Now: m.o.Now,
				Logger:        m.logger.With(zap.String("topic", j.tp.Topic), zap.Int32("partition", j.tp.Partition)),
				RecoveryPoint: recovery[j.tp], LogStartOffset: starts[j.tp], HadCleanShutdown: clean,
				OnIOError: func(err error) { m.dirFailed(dir, err) }, OnFlush: m.o.OnFlush})
			if err != nil {
				err = fmt.Errorf("storage: loading %s: %w", j.path, err)
				m.logger.Error("error while loading log", zap.String("log", j.path), zap.Error(err))
				emu.Lock()
				switch {
				case !loadIOError(err):
					if fatal == nil {
						fatal = err
					}
				case ioErr == nil:
					ioErr = err
				}
				emu.Unlock()
				return
			}
			if off, ok := dirty[j.tp]; ok {
				l.setFirstDirty(off)
			}
			m.mu.Lock()
			m.mu.logs[j.tp] = &managedLog{log: l, dir: dir}
			if m.mu.offline[dir] {
				l.setOffline()
			}
			m.mu.Unlock()
		}()
	}
	wg.Wait()
	if fatal != nil {
		return parts, true, fatal
	}
	return parts, true, ioErr
}

// HadCleanShutdown reports whether every log dir had the clean-shutdown marker.
func (m *Manager) HadCleanShutdown() bool {
	for _, c := range m.hadClean {
		if !c {
			return false
		}
	}
	return true
}

// PreviousBrokerEpoch is the broker epoch read from the clean-shutdown marker, or -1
// (BrokerRegistrationRequest.PreviousBrokerEpoch).
func (m *Manager) PreviousBrokerEpoch() int64 { return m.prevEpoch }

// SetBrokerEpoch sets the epoch written into the marker on Close.
func (m *Manager) SetBrokerEpoch(e int64) {
	m.mu.Lock()
	m.mu.brokerEpoch = e
	m.mu.Unlock()
}

// LogDirs returns the log dirs.
func (m *Manager) LogDirs() []string { return append([]string(nil), m.o.LogDirs...) }

// Log returns the log of tp, if this broker has one.
func (m *Manager) Log(tp TopicPartition) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.mu.logs[tp]
	if !ok {
		return nil, false
	}
	return ml.log, true
}

// Logs returns every log, keyed by partition.
func (m *Manager) Logs() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[TopicPartition]*Log, len(m.mu.logs))
	for tp, ml := range m.mu.logs {
		out[tp] = ml.log
	}
	return out
}

// GetOrCreateLog returns the log of tp, creating it in the log dir holding the fewest
// logs. For an existing log, cfg replaces its config and a topic id is checked (or
// recorded when the log had none).
func (m *Manager) GetOrCreateLog(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	return m.getOrCreateLog(tp, topicID, cfg, "")
}

// GetOrCreateLogIn is GetOrCreateLog creating a new log in dir when dir is
// one of the online log dirs (LogManager.getOrCreateLog with a target
// directory id, KIP-858), else in the one holding the fewest logs.
func (m *Manager) GetOrCreateLogIn(tp TopicPartition, topicID [16]byte, cfg Config, dir string) (*Log, error) {
	return m.getOrCreateLog(tp, topicID, cfg, dir)
}

func (m *Manager) getOrCreateLog(tp TopicPartition, topicID [16]byte, cfg Config, prefer string) (*Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.closed {
		return nil, ErrClosed
	}
	if ml, ok := m.mu.logs[tp]; ok {
		if cfg.SegmentBytes != 0 {
			ml.log.SetConfig(cfg)
		}
		if topicID != [16]byte{} {
			if err := ml.log.SetTopicID(topicID); err != nil {
				return nil, err
			}
		}
		return ml.log, nil
	}
	if tp.Topic == "" || tp.Partition < 0 || tp.DirName() == MetadataPartitionDir {
		return nil, fmt.Errorf("storage: invalid partition %q", tp)
	}
	if dir, ok := m.offlineDirLocked(tp); ok {
		l, err := m.offlineStub(dir, tp, topicID)
		if err != nil {
			return nil, err
		}
		m.mu.logs[tp] = &managedLog{log: l, dir: dir, stub: true}
		return l, nil
	}
	var dirs []string
	for _, d := range m.o.LogDirs {
		if !m.mu.offline[d] {
			dirs = append(dirs, d)
		}
	}
	// The least loaded dir needs the logs counted, a walk of every log: only
	// when there is a choice (a walk per new log on a single dir made
	// creating n partitions O(n^2): 10,000 took seconds of CPU in this loop).
	counts := map[string]int{}
	if len(dirs) > 1 {
		for _, ml := range m.mu.logs {
			counts[ml.dir]++
		}
	}
	if len(dirs) == 0 {
		return nil, &StorageError{Dir: tp.DirName(), Err: errors.New("every log dir is offline")}
	}
	preferOnline := prefer != "" && slices.Contains(dirs, prefer)
	// KIP-1066: a new log avoids cordoned dirs while another one is open
	if open := slices.DeleteFunc(slices.Clone(dirs), func(d string) bool { return m.mu.cordoned[d] }); len(open) > 0 {
		dirs = open
	}
	sort.SliceStable(dirs, func(i, j int) bool { return counts[dirs[i]] < counts[dirs[j]] })
	dir := dirs[0]
	if preferOnline {
		dir = prefer
	}
	if cfg.SegmentBytes == 0 {
		cfg = m.o.Config
	}
	l, err := m.createLogIn(dir, tp.DirName(), topicID, cfg,
		m.logger.With(zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition)))
	if err != nil {
		return nil, err
	}
	m.mu.logs[tp] = &managedLog{log: l, dir: dir}
	m.logger.Info("created log", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.String("dir", dir))
	return l, nil
}

// createLogIn opens a new log in directory name of log dir dir and syncs dir
// so the new directory survives a crash; an I/O error fails dir.
func (m *Manager) createLogIn(dir, name string, topicID [16]byte, cfg Config, logger *zap.Logger) (*Log, error) {
	l, err := OpenLog(LogOptions{FS: m.o.FS, Dir: filepath.Join(dir, name), Config: cfg, Now: m.o.Now,
		Logger: logger, HadCleanShutdown: true, TopicID: topicID,
		OnIOError: func(err error) { m.dirFailed(dir, err) }, OnFlush: m.o.OnFlush})
	if err == nil && !l.created {
		// OpenLog synced the entry of a directory it made; one that was
		// there already is synced here
		if err = m.o.FS.SyncDir(dir); err != nil {
			l.Close()
		}
	}
	if err != nil {
		if isIOError(err) {
			go m.dirFailed(dir, err)
			return nil, &StorageError{Dir: dir, Err: err}
		}
		return nil, err
	}
	return l, nil
}

// SetCordonedDirs sets the log dirs that take no new log (KIP-1066,
// cordoned.log.dirs): a new log goes to another online dir unless every
// online dir is cordoned or the caller names the dir (GetOrCreateLogIn).
func (m *Manager) SetCordonedDirs(dirs []string) {
	c := make(map[string]bool, len(dirs))
	for _, d := range dirs {
		c[d] = true
	}
	m.mu.Lock()
	m.mu.cordoned = c
	m.mu.Unlock()
}

// offlineDirLocked finds a partition without a log in a log dir that failed at
// startup before it could be listed, by asking that dir for the partition's
// directory; a partition deleted since is not looked for. m.mu is held.
//
// A partition found in a failed dir gets an offline stub rather than an empty log
// in another dir, which would stand in for its data: Kafka's
// Partition.createLogInAssignedDirectoryId skips creating a log while "there are
// potentially offline log directories and log may already exist there"; kgo's
// controller leaves the replicas of a broker with several log dirs unassigned, so
// the Manager looks in the dir itself.
func (m *Manager) offlineDirLocked(tp TopicPartition) (string, bool) {
	if m.mu.released[tp] {
		return "", false
	}
	for _, d := range m.o.LogDirs {
		if !m.unlisted[d] {
			continue
		}
		if _, err := m.o.FS.Stat(filepath.Join(d, tp.DirName())); !os.IsNotExist(err) {
			return d, true
		}
	}
	return "", false
}

// offlineStub stands for the log of a partition in a log dir that failed at
// startup, which did not load: an empty log on a private in-memory file system,
// offline and closed, so that the partition answers KAFKA_STORAGE_ERROR as the logs
// of a dir failed at run time do, and nothing reaches the failed dir through it.
func (m *Manager) offlineStub(dir string, tp TopicPartition, topicID [16]byte) (*Log, error) {
	cfg := m.o.Config
	if m.o.ConfigFor != nil {
		cfg = m.o.ConfigFor(tp)
	}
	cfg.SegmentIndexBytes = 4096 // nothing is appended: a small preallocation
	l, err := OpenLog(LogOptions{FS: vfs.NewMem(), Dir: filepath.Join(dir, tp.DirName()), Config: cfg, Now: m.o.Now,
		Logger:           m.logger.With(zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition)),
		HadCleanShutdown: true, TopicID: topicID})
	if err != nil {
		return nil, err
	}
	l.setOffline()
	_ = l.Close()
	return l, nil
}

// deleteDirName is <topic>-<partition>.<uuid hex>-delete with the topic cut so the
// name stays within 255 bytes (LocalLog.logDeleteDirName).
func deleteDirName(tp TopicPartition) string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	suffix := "-" + strconv.Itoa(int(tp.Partition)) + "." + hex.EncodeToString(u[:]) + "-delete"
	topic := tp.Topic
	if len(topic)+len(suffix) > 255 {
		topic = topic[:255-len(suffix)]
	}
	return topic + suffix
}

// DeleteLog closes the log of tp, renames its directory to
// <topic>-<partition>.<uuid>-delete and removes it file.delete.delay.ms later
// (LogManager.asyncDelete; delete.go).
func (m *Manager) DeleteLog(tp TopicPartition) error {
	// a move between log dirs stops with the partition (future.go)
	if err := m.DeleteFutureLog(tp); err != nil {
		m.logger.Warn("deleting the future log failed", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Error(err))
	}
	m.mu.Lock()
	ml, ok := m.mu.logs[tp]
	if ok {
		delete(m.mu.logs, tp)
	}
	if len(m.unlisted) > 0 {
		m.mu.released[tp] = true
	}
	m.mu.Unlock()
	if !ok || ml.stub {
		// a partition left in a failed log dir: its files stay there (Kafka finds
		// such a replica stray when the dir is back)
		return nil
	}
	return m.asyncDeleteLog(tp, ml)
}

// readOffsetCheckpoint reads "<topic> <partition> <offset>" entries.
func readOffsetCheckpoint(fs vfs.FS, name string) (map[TopicPartition]int64, error) {
	lines, err := readCheckpoint(fs, name, 0, 3)
	if err != nil {
		return nil, err
	}
	out := make(map[TopicPartition]int64, len(lines))
	for _, l := range lines {
		p, err1 := strconv.ParseInt(l[1], 10, 32)
		o, err2 := strconv.ParseInt(l[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w %s: bad entry %q", errBadCheckpoint, name, strings.Join(l, " "))
		}
		out[TopicPartition{l[0], int32(p)}] = o
	}
	return out, nil
}

func writeOffsetCheckpoint(fs vfs.FS, name string, m map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(m))
	for tp := range m {
		tps = append(tps, tp)
	}
	sort.Slice(tps, func(i, j int) bool {
		if tps[i].Topic != tps[j].Topic {
			return tps[i].Topic < tps[j].Topic
		}
		return tps[i].Partition < tps[j].Partition
	})
	lines := make([]string, len(tps))
	for i, tp := range tps {
		lines[i] = tp.Topic + " " + strconv.Itoa(int(tp.Partition)) + " " + strconv.FormatInt(m[tp], 10)
	}
	return writeCheckpoint(fs, name, 0, lines)
}

// Checkpoint writes recovery-point-offset-checkpoint and log-start-offset-checkpoint
// in every log dir.
func (m *Manager) Checkpoint() error {
	if err := m.checkpointRecovery(); err != nil {
		return err
	}
	return m.checkpointLogStart()
}

func (m *Manager) snapshotBy(fn func(l *Log) (int64, bool)) map[string]map[TopicPartition]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]map[TopicPartition]int64{}
	for _, d := range m.o.LogDirs {
		if !m.mu.offline[d] {
			out[d] = map[TopicPartition]int64{}
		}
	}
	for tp, ml := range m.mu.logs {
		if out[ml.dir] == nil {
			continue
		}
		if v, ok := fn(ml.log); ok {
			out[ml.dir][tp] = v
		}
	}
	return out
}

func (m *Manager) checkpointRecovery() error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	for dir, offs := range m.snapshotBy(func(l *Log) (int64, bool) { return l.RecoveryPoint(), true }) {
		if err := writeOffsetCheckpoint(m.o.FS, filepath.Join(dir, RecoveryPointCheckpointFile), offs); err != nil {
			return m.checkpointFailed(dir, err)
		}
	}
	return nil
}

func (m *Manager) checkpointLogStart() error {
	m.ckptMu.Lock()
	defer m.ckptMu.Unlock()
	// Kafka records only logs whose start offset is above their first segment's base
	// (that is what it cannot rediscover); writing every log is harmless and simpler.
	for dir, offs := range m.snapshotBy(func(l *Log) (int64, bool) { return l.LogStartOffset(), true }) {
		if err := writeOffsetCheckpoint(m.o.FS, filepath.Join(dir, LogStartOffsetCheckpointFile), offs); err != nil {
			return m.checkpointFailed(dir, err)
		}
	}
	return nil
}

// Maintain runs one pass of the periodic work, each part on its own interval of the
// injected clock: flush.ms flushes, recovery point and log start checkpoints,
// retention, closing removed segment files and expiring producer ids.
func (m *Manager) Maintain() error {
	m.maintainLock.Lock()
	defer m.maintainLock.Unlock()
	now := m.o.Now().UnixMilli()
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	doFlush := now-m.mu.lastFlush >= m.o.FlushCheckIntervalMs
	doRec := now-m.mu.lastRecCkpt >= m.o.RecoveryCheckpointMs
	doLSO := now-m.mu.lastLSOCkpt >= m.o.LogStartCheckpointMs
	doRet := now-m.mu.lastRetain >= m.o.RetentionCheckIntervalMs
	doExpire := now-m.mu.lastExpire >= m.o.ProducerExpirationCheckIntervalMs
	if doExpire {
		m.mu.lastExpire = now
	}
	if doFlush {
		m.mu.lastFlush = now
	}
	if doRec {
		m.mu.lastRecCkpt = now
	}
	if doLSO {
		m.mu.lastLSOCkpt = now
	}
	if doRet {
		m.mu.lastRetain = now
	}
	m.mu.Unlock()
	var first error
	note := func(err error) {
		if err != nil && !errors.Is(err, ErrClosed) && first == nil {
			first = err
		}
	}
	logs := m.Logs()
	for tp, l := range logs {
		if l.Offline() {
			continue
		}
		if doFlush {
			if err := l.FlushIfDue(); err != nil {
				m.logger.Error("flush failed", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition), zap.Error(err))
				note(err)
			}
		}
		// Kafka's cleaner thread applies retention to compacted logs and skips the
		// uncleanable ones (LogCleanerManager.deletableLogs)
		if doRet && !(l.Config().Compact() && m.isUncleanable(tp, l)) {
			if _, err := l.DeleteOldSegments(); err != nil {
				note(err)
			}
		}
		l.maintain(doExpire)
	}
	if doRec {
		note(m.checkpointRecovery())
	}
	if doLSO || doRet {
		note(m.checkpointLogStart())
	}
	note(m.deleteDueDirs())
	return first
}

// Start runs Maintain every tick (default one second) and the log cleaner threads
// until Close.
func (m *Manager) Start(tick time.Duration) {
	if tick <= 0 {
		tick = time.Second
	}
	m.startOnce.Do(func() {
		m.maintainLock.Lock()
		m.startCleaner()
		m.maintainLock.Unlock()
		m.stop = make(chan struct{})
		m.loopDone = make(chan struct{})
		go func() {
			defer close(m.loopDone)
			t := time.NewTicker(tick)
			defer t.Stop()
			for {
				select {
				case <-m.stop:
					return
				case <-t.C:
					if err := m.Maintain(); err != nil && !errors.Is(err, ErrClosed) {
						m.logger.Warn("log maintenance", zap.Error(err))
					}
				}
			}
		}()
	})
}

func (m *Manager) closeLogs() error {
	var first error
	for _, ml := range m.mu.logs {
		if err := ml.log.Close(); err != nil && first == nil {
			first = err
		}
	}
	for _, ml := range m.mu.futures {
		if err := ml.log.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close stops the periodic work, closes (flushes) every log, writes both checkpoints
// and, when all went well, the clean-shutdown marker in every log dir.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.mu.closed {
		m.mu.Unlock()
		return nil
	}
	m.mu.closed = true
	m.mu.Unlock()
	if m.stop != nil {
		close(m.stop)
		<-m.loopDone
	}
	m.maintainLock.Lock()
	defer m.maintainLock.Unlock()
	m.stopCleaner() // under maintainLock: ReconfigureCleaner restarts the threads under it
	m.dropDirDeletions()
	m.mu.Lock()
	err := m.closeLogs()
	epoch := m.mu.brokerEpoch
	m.mu.Unlock()
	if cerr := m.Checkpoint(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	data := cleanShutdownJSON(epoch)
	for _, dir := range m.o.LogDirs {
		if m.DirOffline(dir) {
			continue // recovered at the next start
		}
		if err := vfs.WriteFileAtomic(m.o.FS, filepath.Join(dir, CleanShutdownFile), data); err != nil {
			return err
		}
	}
	return nil
}

// ReplicationOffsetCheckpointFile is the high watermark checkpoint the replica
// manager keeps in each log dir (ReplicaManager.scala); same format as the others.
const ReplicationOffsetCheckpointFile = "replication-offset-checkpoint"

// ReadOffsetCheckpointFile reads a "<topic> <partition> <offset>" checkpoint
// (version 0). A missing file is an empty map.
func ReadOffsetCheckpointFile(fs vfs.FS, path string) (map[TopicPartition]int64, error) {
	return readOffsetCheckpoint(fs, path)
}

// WriteOffsetCheckpointFile writes a "<topic> <partition> <offset>" checkpoint
// atomically (tmp file, fsync, rename, directory fsync).
func WriteOffsetCheckpointFile(fs vfs.FS, path string, offsets map[TopicPartition]int64) error {
	return writeOffsetCheckpoint(fs, path, offsets)
}

// LogDirOf returns the log dir holding tp's log.
func (m *Manager) LogDirOf(tp TopicPartition) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.mu.logs[tp]
	if !ok {
		return "", false
	}
	return ml.dir, true
}

// FS returns the file system the Manager works on.
func (m *Manager) FS() vfs.FS { return m.o.FS }
