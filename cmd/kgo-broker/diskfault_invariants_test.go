//go:build invariants

package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func TestParseDiskMode(t *testing.T) {
	for _, tc := range []struct {
		in       string
		kind     string
		min, max time.Duration
		bad      bool
	}{
		{in: "", kind: "ok"},
		{in: "ok\n", kind: "ok"},
		{in: "fail", kind: "fail"},
		{in: "slow 300ms\n", kind: "slow", min: 300 * time.Millisecond, max: 300 * time.Millisecond},
		{in: "slow 200ms-500ms", kind: "slow", min: 200 * time.Millisecond, max: 500 * time.Millisecond},
		{in: "slow", bad: true},
		{in: "slow 500ms-200ms", bad: true},
		{in: "slow -1s", bad: true},
		{in: "fail now", bad: true},
		{in: "fail /data/two", kind: "fail"},
		{in: "broken", bad: true},
	} {
		m, err := parseDiskMode(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: parsed as %+v, want an error", tc.in, m)
			}
			continue
		}
		if err != nil || m.kind != tc.kind || m.min != tc.min || m.max != tc.max {
			t.Errorf("%q: got %+v, %v; want %s [%v, %v]", tc.in, m, err, tc.kind, tc.min, tc.max)
		}
	}
}

func writeMode(t *testing.T, path, mode string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(mode+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// The control file switches the mode for files under the log dirs only.
func TestDiskFaultModes(t *testing.T) {
	root := t.TempDir()
	logDir, other := filepath.Join(root, "data"), filepath.Join(root, "other")
	for _, d := range []string{logDir, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctl := filepath.Join(root, "disk-fault")
	d := newDiskFault(ctl, []string{logDir}, zap.NewNop())
	d.reload() // no file: ok
	fs := vfs.NewInjecting(vfs.Default, d.inject)
	write := func(dir string) (time.Duration, error) {
		f, err := fs.OpenFile(filepath.Join(dir, "f"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		start := time.Now()
		if _, err := f.Write([]byte("x")); err != nil {
			return time.Since(start), err
		}
		err = f.Sync()
		return time.Since(start), err
	}
	if _, err := write(logDir); err != nil {
		t.Fatalf("ok mode: %v", err)
	}

	writeMode(t, ctl, "fail")
	d.reload()
	_, err := write(logDir)
	var errno syscall.Errno
	if !errors.As(err, &errno) || errno != syscall.EIO {
		t.Fatalf("fail mode: write under the log dir: %v, want EIO", err)
	}
	if err := fs.Rename(filepath.Join(logDir, "f"), filepath.Join(logDir, "g")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fail mode: rename under the log dir: %v, want EIO", err)
	}
	if _, err := vfs.ReadFile(fs, filepath.Join(logDir, "f")); err != nil {
		t.Fatalf("fail mode: reads still work: %v", err)
	}
	if _, err := write(other); err != nil {
		t.Fatalf("fail mode: write outside the log dirs: %v", err)
	}

	writeMode(t, ctl, "slow 30ms")
	d.reload()
	if took, err := write(logDir); err != nil || took < 60*time.Millisecond {
		t.Fatalf("slow mode: write+sync under the log dir took %v (%v), want >= 60ms", took, err)
	}
	if took, err := write(other); err != nil || took >= 30*time.Millisecond {
		t.Fatalf("slow mode: write+sync outside the log dirs took %v (%v), want no delay", took, err)
	}

	// A bad line keeps the mode in force.
	writeMode(t, ctl, "sideways")
	d.reload()
	if m := d.mode.Load(); m.kind != "slow" {
		t.Fatalf("after a bad control line the mode is %q, want slow kept", m.line)
	}
	writeMode(t, ctl, "ok")
	d.reload()
	if _, err := write(logDir); err != nil {
		t.Fatalf("ok again: %v", err)
	}
}

// watch picks up a rewritten control file on its own.
func TestDiskFaultWatch(t *testing.T) {
	root := t.TempDir()
	ctl := filepath.Join(root, "disk-fault")
	d := newDiskFault(ctl, []string{root}, zap.NewNop())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); d.watch(time.Millisecond, stop) }()
	defer func() { close(stop); <-done }()
	writeMode(t, ctl, "fail")
	deadline := time.Now().Add(10 * time.Second)
	for d.mode.Load().kind != "fail" {
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not pick up the fail mode")
		}
		time.Sleep(time.Millisecond)
	}
}

// diskFaultFS is on only with the environment variable, over every log
// dir and the metadata log dir.
func TestDiskFaultFSEnv(t *testing.T) {
	root := t.TempDir()
	props := config.SingleNodeDefaults()
	props["log.dirs"] = filepath.Join(root, "a") + "," + filepath.Join(root, "b")
	props["metadata.log.dir"] = filepath.Join(root, "meta")
	cfg, err := config.New(props)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(diskFaultEnv, "")
	if fs := diskFaultFS(cfg, zap.NewNop()); fs != nil {
		t.Fatalf("without %s: %T, want nil", diskFaultEnv, fs)
	}
	ctl := filepath.Join(root, "disk-fault")
	writeMode(t, ctl, "fail")
	t.Setenv(diskFaultEnv, ctl)
	fs := diskFaultFS(cfg, zap.NewNop())
	if fs == nil {
		t.Fatalf("with %s: no injecting file system", diskFaultEnv)
	}
	for _, dir := range []string{"a", "b", "meta"} {
		if err := fs.MkdirAll(filepath.Join(root, dir, "p-0"), 0o755); !errors.Is(err, syscall.EIO) {
			t.Errorf("mkdir under %s: %v, want EIO", dir, err)
		}
	}
	if err := fs.MkdirAll(filepath.Join(root, "elsewhere"), 0o755); err != nil {
		t.Errorf("mkdir outside the log dirs: %v", err)
	}
}
