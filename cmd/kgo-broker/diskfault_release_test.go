//go:build !invariants

package main

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// The release binary (make build: no build tags) has no disk fault hook:
// no file it compiles names the hook's environment variable, and the hook
// is a no-op even when the variable is set.
func TestDiskFaultHookNotInRelease(t *testing.T) {
	const env = "KGO_TEST_DISK_FAULT_FILE"
	pkg, err := build.Default.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.GoFiles) == 0 {
		t.Fatal("no Go files in the default build")
	}
	for _, f := range pkg.GoFiles {
		data, err := os.ReadFile(filepath.Join(pkg.Dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), env) {
			t.Errorf("%s is in the release build and names %s", f, env)
		}
	}
	if !slices.Contains(pkg.IgnoredGoFiles, "diskfault_invariants.go") {
		t.Errorf("diskfault_invariants.go is not excluded from the release build (ignored: %v)", pkg.IgnoredGoFiles)
	}
	t.Setenv(env, filepath.Join(t.TempDir(), "disk-fault"))
	if fs := diskFaultFS(nil, zap.NewNop()); fs != nil {
		t.Fatalf("release build: diskFaultFS = %T, want nil", fs)
	}
}
