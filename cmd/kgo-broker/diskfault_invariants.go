//go:build invariants

package main

// The disk fault hook of the fault suite (integration/faults_test.go,
// kinds slow-disk and failing-disk), compiled only into the test binary
// (make build-invariants): when KGO_TEST_DISK_FAULT_FILE names a file, the
// node's file system (broker.NodeConfig.FS, under storage and raft) is
// vfs.NewInjecting(vfs.Default, ...) with the mode that file holds:
//
//	ok                      (or no file, or an empty one) no fault
//	slow <d>[-<max>]        every write and sync under the log dirs waits d
//	                        (uniform in [d, max] with a max) before it runs
//	fail                    every write, sync, truncate, rename, remove and
//	                        directory change under the log dirs fails with EIO
//	fail <dir>              the same under one log dir only (a JBOD disk
//	                        failure, KIP-858: integration/jbod_test.go)
//
// The file is re-read on a short ticker into an atomic, never per
// operation: the injector itself costs one atomic load. A test flips the
// mode by rewriting the file (write to a temporary name and rename, so that
// a read never sees half a line).
//
// Kafka has no such seam; the release binary (make build) does not have it
// either (diskfault_off.go, TestDiskFaultHookNotInRelease).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

const diskFaultEnv = "KGO_TEST_DISK_FAULT_FILE"

// diskFaultPoll is how often the control file is re-read.
const diskFaultPoll = 20 * time.Millisecond

// diskFaultFS returns the injecting file system when the environment asks
// for one, else nil (vfs.Default).
func diskFaultFS(cfg *config.Config, logger *zap.Logger) vfs.FS {
	path := os.Getenv(diskFaultEnv)
	if path == "" {
		return nil
	}
	d := newDiskFault(path, cfg.AllDirs(), logger)
	d.reload()
	// The process's lifetime: the hook is never turned off.
	go d.watch(diskFaultPoll, nil)
	logger.Warn("test hook: disk faults injected from the control file", zap.String("file", path), zap.Strings("dirs", d.dirs))
	return vfs.NewInjecting(vfs.Default, d.inject)
}

type diskMode struct {
	kind     string // "ok", "slow" or "fail"
	min, max time.Duration
	// dir, for "fail <dir>", is the one dir that fails (cleaned, ending
	// in a separator); empty: every log dir.
	dir  string
	line string
}

var diskModeOK = &diskMode{kind: "ok", line: "ok"}

type diskFault struct {
	path   string
	dirs   []string // cleaned, each ending in a separator
	logger *zap.Logger
	mode   atomic.Pointer[diskMode]
}

func newDiskFault(path string, dirs []string, logger *zap.Logger) *diskFault {
	d := &diskFault{path: path, logger: logger}
	for _, dir := range dirs {
		if abs, err := filepath.Abs(dir); err == nil {
			dir = abs
		}
		d.dirs = append(d.dirs, filepath.Clean(dir)+string(filepath.Separator))
	}
	d.mode.Store(diskModeOK)
	return d
}

// parseDiskMode parses the control file's first line.
func parseDiskMode(s string) (*diskMode, error) {
	line, _, _ := strings.Cut(s, "\n")
	f := strings.Fields(line)
	if len(f) == 0 {
		return diskModeOK, nil
	}
	m := &diskMode{kind: f[0], line: strings.Join(f, " ")}
	switch {
	case f[0] == "ok" && len(f) == 1, f[0] == "fail" && len(f) == 1:
		return m, nil
	case f[0] == "fail" && len(f) == 2 && filepath.IsAbs(f[1]):
		m.dir = filepath.Clean(f[1]) + string(filepath.Separator)
		return m, nil
	case f[0] == "slow" && len(f) == 2:
		lo, hi, ranged := strings.Cut(f[1], "-")
		var err error
		if m.min, err = time.ParseDuration(lo); err != nil || m.min < 0 {
			return nil, fmt.Errorf("slow: bad duration %q", lo)
		}
		m.max = m.min
		if ranged {
			if m.max, err = time.ParseDuration(hi); err != nil || m.max < m.min {
				return nil, fmt.Errorf("slow: bad range %q", f[1])
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("unknown disk fault mode %q (want ok, slow <d>[-<max>], fail or fail <absolute dir>)", line)
}

// reload reads the control file; a missing file is "ok", a bad one keeps
// the mode in force.
func (d *diskFault) reload() {
	data, err := os.ReadFile(d.path)
	if errors.Is(err, os.ErrNotExist) {
		data, err = nil, nil
	}
	var m *diskMode
	if err == nil {
		m, err = parseDiskMode(string(data))
	}
	if err != nil {
		d.logger.Warn("test hook: disk fault control file", zap.String("file", d.path), zap.Error(err))
		return
	}
	if old := d.mode.Load(); old.line != m.line {
		d.mode.Store(m)
		d.logger.Warn("test hook: disk fault mode", zap.String("mode", m.line), zap.String("was", old.line))
	}
}

// watch reloads every interval until stop is closed (nil: never).
func (d *diskFault) watch(interval time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			d.reload()
		}
	}
}

func (d *diskFault) under(path string) bool {
	if !filepath.IsAbs(path) {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
	}
	path = filepath.Clean(path) + string(filepath.Separator)
	for _, dir := range d.dirs {
		if strings.HasPrefix(path, dir) {
			return true
		}
	}
	return false
}

// underDir reports whether path is dir (cleaned, ending in a separator) or
// below it.
func underDir(path, dir string) bool {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return strings.HasPrefix(filepath.Clean(path)+string(filepath.Separator), dir)
}

// inject is the vfs.Injector.
func (d *diskFault) inject(op vfs.Op) vfs.Fault {
	m := d.mode.Load()
	switch m.kind {
	case "slow":
		if (op.Kind == vfs.OpWrite || op.Kind == vfs.OpSync || op.Kind == vfs.OpSyncDir) && d.under(op.Path) {
			delay := m.min
			if m.max > m.min {
				delay += rand.N(m.max - m.min + 1)
			}
			time.Sleep(delay)
		}
	case "fail":
		switch op.Kind {
		case vfs.OpWrite, vfs.OpSync, vfs.OpTruncate, vfs.OpSyncDir, vfs.OpRename, vfs.OpRemove, vfs.OpMkdir:
			if d.under(op.Path) && (m.dir == "" || underDir(op.Path, m.dir)) {
				return vfs.Fault{Err: &os.PathError{Op: op.Kind.String(), Path: op.Path, Err: syscall.EIO}}
			}
		}
	}
	return vfs.Fault{}
}
