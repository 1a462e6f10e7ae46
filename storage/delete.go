package storage

import (
	"path/filepath"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Deleting a whole partition directory (LogManager.asyncDelete, deleteLogs): the
// log is taken out of the Manager, its directory renamed
// <topic>-<partition>.<uuid>-delete (LocalLog.logDeleteDirName) and the rename
// fsynced; file.delete.delay.ms (the broker default, currentDefaultConfig in
// LogManager) later the directory is removed. Meanwhile the log answers
// ErrClosed but keeps its descriptors, so that fetches already handed a
// FileRegion finish. A -delete directory found at startup is removed the same
// delay after the start (LogManager.loadLog queues it with the load time). A
// failed removal takes the log dir offline (UnifiedLog.delete runs under
// maybeHandleIOException). Close drops what is pending, as Kafka's scheduler does;
// the next start finds the -delete directories again.

// dirDeletions are the partition directories waiting for their removal.
type dirDeletions struct {
	mu      lockrank.Mutex // a leaf (OpenManager ranks it)
	pending []dirDeletion
}

type dirDeletion struct {
	path   string // the renamed <topic>-<partition>.<uuid>-delete directory
	logDir string // the log dir holding it
	log    *Log   // its log, retired with open descriptors; nil when found at startup
	due    int64  // ms when it is removed
}

// scheduleDirDeletion queues path for removal file.delete.delay.ms from now.
func (m *Manager) scheduleDirDeletion(path, logDir string, l *Log) {
	due := m.o.Now().UnixMilli() + m.o.Config.FileDeleteDelayMs
	m.dirDeletes.mu.Lock()
	m.dirDeletes.pending = append(m.dirDeletes.pending, dirDeletion{path: path, logDir: logDir, log: l, due: due})
	m.dirDeletes.mu.Unlock()
	m.logger.Info("scheduled log dir for deletion", zap.String("dir", path), zap.Int64("delayMs", m.o.Config.FileDeleteDelayMs))
}

// asyncDeleteLog retires ml's log, renames its directory to a -delete name and
// schedules its removal (LogManager.asyncDelete). ml is no longer in m.mu.logs.
func (m *Manager) asyncDeleteLog(tp TopicPartition, ml *managedLog) error {
	var l *Log
	if ml.log.retire() {
		l = ml.log // its descriptors close when the directory goes
	}
	dst := filepath.Join(ml.dir, deleteDirName(tp))
	if err := m.o.FS.Rename(ml.log.Dir(), dst); err != nil {
		if l != nil {
			l.releaseFiles()
		}
		return m.deleteFailed(ml.dir, err)
	}
	if err := m.o.FS.SyncDir(ml.dir); err != nil {
		m.scheduleDirDeletion(dst, ml.dir, l)
		return m.deleteFailed(ml.dir, err)
	}
	m.scheduleDirDeletion(dst, ml.dir, l)
	m.logger.Info("log renamed for deletion", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition),
		zap.String("dir", dst))
	return nil
}

// deleteFailed takes logDir offline after a failed deletion (LocalLog.renameDir and
// UnifiedLog.delete run under maybeHandleIOException) and returns err as a
// StorageError.
func (m *Manager) deleteFailed(logDir string, err error) error {
	m.dirFailed(logDir, err)
	return &StorageError{Dir: logDir, Err: err}
}

// deleteDueDirs removes the -delete directories whose delay has passed on the
// Manager's clock (LogManager.deleteLogs), closing their logs' descriptors first.
// Run by Maintain.
func (m *Manager) deleteDueDirs() error {
	now := m.o.Now().UnixMilli()
	m.dirDeletes.mu.Lock()
	var due []dirDeletion
	keep := m.dirDeletes.pending[:0]
	for _, d := range m.dirDeletes.pending {
		if now >= d.due {
			due = append(due, d)
		} else {
			keep = append(keep, d)
		}
	}
	clear(m.dirDeletes.pending[len(keep):])
	m.dirDeletes.pending = keep
	m.dirDeletes.mu.Unlock()
	var first error
	for _, d := range due {
		if d.log != nil {
			d.log.releaseFiles()
		}
		if m.DirOffline(d.logDir) {
			continue // nothing more is done in a failed log dir: the next start removes it
		}
		if err := m.o.FS.RemoveAll(d.path); err != nil {
			m.logger.Error("deleting log dir", zap.String("dir", d.path), zap.Error(err))
			if first == nil {
				first = m.deleteFailed(d.logDir, err)
			}
			continue
		}
		m.logger.Info("deleted log dir", zap.String("dir", d.path))
	}
	return first
}

// dropDirDeletions closes the descriptors of the logs waiting for deletion and
// forgets them, leaving their -delete directories for the next start (Close).
func (m *Manager) dropDirDeletions() {
	m.dirDeletes.mu.Lock()
	pending := m.dirDeletes.pending
	m.dirDeletes.pending = nil
	m.dirDeletes.mu.Unlock()
	for _, d := range pending {
		if d.log != nil {
			d.log.releaseFiles()
		}
	}
}

// retire closes the log for a deletion of its whole directory
// (LogManager.asyncDelete): every later call fails with ErrClosed, but the
// descriptors stay open so that reads already handed out go on until the Manager
// removes the directory file.delete.delay.ms later (releaseFiles). It reports
// whether the log was open (a closed log has no descriptors left).
func (l *Log) retire() bool {
	l.flushMu.Lock()
	l.mu.Lock()
	open := !l.mu.closed
	l.mu.closed = true
	l.mu.Unlock()
	l.flushMu.Unlock()
	l.bg.Wait()
	return open
}

// releaseFiles closes every descriptor of a retired log: its segments and the
// buried ones.
func (l *Log) releaseFiles() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.mu.segments {
		s.closeFiles()
	}
	l.closeBuried()
}
