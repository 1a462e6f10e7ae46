package storage

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Log dir failure (KIP-112, LogDirFailureChannel.java). A Log opened with
// LogOptions.OnIOError goes offline at its first I/O error: every later call fails
// with kerr.KafkaStorageError, and the callback tells the Manager, which takes the
// whole log dir offline (every log in it), stops cleaning it, leaves it out of the
// checkpoints and reports it through OfflineDirs and ManagerOptions.OnDirFailure
// (for the broker heartbeat's OfflineLogDirs). Nothing read from an offline dir is
// served: it stays offline until the broker restarts.

// StorageError is an I/O error a log met: errors.Is matches kerr.KafkaStorageError
// and the underlying error.
type StorageError struct {
	Dir string
	Err error
}

func (e *StorageError) Error() string {
	return fmt.Sprintf("KAFKA_STORAGE_ERROR: log %s: %v", e.Dir, e.Err)
}

// Unwrap returns both kerr.KafkaStorageError and the cause.
func (e *StorageError) Unwrap() []error { return []error{kerr.KafkaStorageError, e.Err} }

// isIOError reports whether err comes from the file system (as opposed to a
// client error, ErrClosed or a broken invariant).
func isIOError(err error) bool {
	if err == nil {
		return false
	}
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se) || errors.As(err, &errno) ||
		errors.Is(err, vfs.ErrInjected) || errors.Is(err, io.ErrShortWrite) || errors.Is(err, io.ErrUnexpectedEOF)
}

// closedErr is what a call on a closed or offline log returns.
func (l *Log) closedErr() error {
	if l.offline.Load() {
		return &StorageError{Dir: l.dir, Err: errors.New("the log dir is offline")}
	}
	return ErrClosed
}

// ioErr takes the log offline when err is an I/O error and the log reports them;
// it returns err (as a StorageError then). Any lock may be held.
func (l *Log) ioErr(err error) error {
	if err == nil || l.onIOError == nil || !isIOError(err) {
		return err
	}
	var se *StorageError
	if errors.As(err, &se) {
		return err
	}
	l.failLocked(err)
	return &StorageError{Dir: l.dir, Err: err}
}

// failLocked takes the log offline (when it reports I/O errors) and tells the
// Manager, asynchronously: the Manager's lock comes before the log's.
func (l *Log) failLocked(err error) {
	if l.onIOError == nil {
		return
	}
	if l.offline.CompareAndSwap(false, true) {
		l.logger.Error("I/O error: log is offline", zap.Error(err))
		go l.onIOError(err)
	}
}

// setOffline takes the log offline without an error of its own (its log dir failed).
func (l *Log) setOffline() { l.offline.Store(true) }

// Offline reports whether the log is offline (its log dir failed).
func (l *Log) Offline() bool { return l.offline.Load() }

// dirFailed takes a log dir offline (LogDirFailureChannel.maybeAddOfflineLogDir +
// ReplicaManager.handleLogDirFailure): its logs stop serving, it is left out of
// checkpoints and cleaning, and OnDirFailure is called once.
func (m *Manager) dirFailed(dir string, cause error) {
	m.mu.Lock()
	if m.mu.offline[dir] {
		m.mu.Unlock()
		return
	}
	m.mu.offline[dir] = true
	var logs []*Log
	for _, ml := range m.mu.logs {
		if ml.dir == dir {
			logs = append(logs, ml.log)
		}
	}
	for _, ml := range m.mu.futures {
		if ml.dir == dir {
			logs = append(logs, ml.log)
		}
	}
	m.mu.Unlock()
	for _, l := range logs {
		l.setOffline()
	}
	m.logger.Error("log dir is offline after an I/O error; its partitions are no longer served",
		zap.String("dir", dir), zap.Int("logs", len(logs)), zap.Error(cause))
	if m.o.OnDirFailure != nil {
		m.o.OnDirFailure(dir)
	}
}

// OfflineDirs returns the log dirs taken offline by an I/O error.
func (m *Manager) OfflineDirs() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, d := range m.o.LogDirs {
		if m.mu.offline[d] {
			out = append(out, d)
		}
	}
	return out
}

// DirOffline reports whether a log dir is offline.
func (m *Manager) DirOffline(dir string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.offline[dir]
}

// FailDir takes a log dir offline as if an I/O error had been met in it (tests,
// and the broker when it learns of a failure elsewhere).
func (m *Manager) FailDir(dir string, cause error) { m.dirFailed(dir, cause) }

// errKafkaStorage is kerr.KafkaStorageError, for errors.Is in tests.
var errKafkaStorage = kerr.KafkaStorageError
