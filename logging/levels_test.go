package logging

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

func newTestLogger(t *testing.T, root string) (*zap.Logger, *Levels, *bytes.Buffer) {
	t.Helper()
	lv, err := NewLevels(root)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := zapcore.NewConsoleEncoder(zapcore.EncoderConfig{MessageKey: "msg", NameKey: "logger", LevelKey: "level", EncodeLevel: zapcore.CapitalLevelEncoder})
	return zap.New(lv.Core(zapcore.NewCore(enc, zapcore.AddSync(&buf), zapcore.DebugLevel))), lv, &buf
}

func TestLevelsPerLogger(t *testing.T) {
	log, lv, buf := newTestLogger(t, "INFO")
	raft, child, other := log.Named("raft"), log.Named("raft").Named("core"), log.Named("storage")
	lines := func() string { s := buf.String(); buf.Reset(); return s }

	raft.Debug("d1")
	if got := lines(); got != "" {
		t.Fatalf("debug at INFO written: %q", got)
	}
	if lv.Exists("raft") {
		t.Fatal("a logger that never logged exists")
	}
	raft.Info("i1")
	if !strings.Contains(lines(), "i1") || !lv.Exists("raft") {
		t.Fatal("info at INFO not written or the logger not known")
	}

	// A level of its own, inherited by the children, not by the others.
	if err := lv.Set("raft", "DEBUG"); err != nil {
		t.Fatal(err)
	}
	raft.Debug("d2")
	child.Debug("d3")
	other.Debug("d4")
	got := lines()
	if !strings.Contains(got, "d2") || !strings.Contains(got, "d3") || strings.Contains(got, "d4") {
		t.Fatalf("raft=DEBUG wrote %q", got)
	}
	// A child's own level wins over its parent's.
	if err := lv.Set("raft.core", "ERROR"); err != nil {
		t.Fatal(err)
	}
	child.Warn("w1")
	raft.Debug("d5")
	if got := lines(); strings.Contains(got, "w1") || !strings.Contains(got, "d5") {
		t.Fatalf("raft.core=ERROR wrote %q", got)
	}
	want := map[string]string{"root": "INFO", "raft": "DEBUG", "raft.core": "ERROR", "storage": "INFO"}
	for _, l := range lv.Loggers() {
		if w, ok := want[l.Name]; ok && w != l.Level {
			t.Errorf("%s at %s, want %s", l.Name, l.Level, w)
		}
		delete(want, l.Name)
	}
	if len(want) != 0 {
		t.Errorf("loggers missing: %v", want)
	}
	if ls := lv.Loggers(); ls[0].Name != RootLogger {
		t.Errorf("root is not first: %v", ls)
	}

	// Unset: inherit again; the root's level moves everyone who inherits.
	lv.Unset("raft")
	lv.Unset("raft.core")
	if err := lv.Set(RootLogger, "WARN"); err != nil {
		t.Fatal(err)
	}
	raft.Info("i2")
	other.Warn("w2")
	if got := lines(); strings.Contains(got, "i2") || !strings.Contains(got, "w2") {
		t.Fatalf("root=WARN wrote %q", got)
	}
	if err := lv.Set("raft", "VERBOSE"); err == nil {
		t.Fatal("VERBOSE accepted")
	}
	// TRACE is shown as set and lets debug through.
	if err := lv.Set("storage", "TRACE"); err != nil {
		t.Fatal(err)
	}
	other.Debug("d6")
	if !strings.Contains(lines(), "d6") {
		t.Fatal("TRACE did not write debug")
	}
	for _, l := range lv.Loggers() {
		if l.Name == "storage" && l.Level != "TRACE" {
			t.Fatalf("storage at %s", l.Level)
		}
	}
}

// With nothing below the root's level, a debug call stops at Enabled.
func TestLevelsEnabledIsTheLowest(t *testing.T) {
	log, lv, _ := newTestLogger(t, "WARN")
	if log.Core().Enabled(zapcore.InfoLevel) {
		t.Fatal("info enabled at WARN")
	}
	lv.Register("group")
	if err := lv.Set("group", "DEBUG"); err != nil {
		t.Fatal(err)
	}
	if !log.Core().Enabled(zapcore.DebugLevel) {
		t.Fatal("debug not enabled with group=DEBUG")
	}
	lv.Unset("group")
	if log.Core().Enabled(zapcore.InfoLevel) {
		t.Fatal("info still enabled after unset")
	}
}
