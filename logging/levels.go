// Package logging gives kgo-broker's zap loggers levels that change at run
// time, per logger name, as Kafka's log4j loggers do (KIP-412: the
// BROKER_LOGGER config resource, kafka-configs.sh --entity-type
// broker-loggers). A logger's name is zap's dotted name ("raft",
// "controller.controller"); its level is the one set for it, else the
// nearest ancestor's, else the root logger's (Log4jController.resolveLevel).
// Levels are Kafka's names: TRACE (zap's debug: zap has no trace), DEBUG,
// INFO, WARN, ERROR, FATAL.
package logging

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.uber.org/zap/zapcore"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// RootLogger is the name of the root logger (Log4jController.ROOT_LOGGER).
const RootLogger = "root"

// ValidLevels are the levels a logger may be set to (LogLevelConfig.VALID_LOG_LEVELS),
// in the order Kafka's error message lists them.
var ValidLevels = []string{"DEBUG", "ERROR", "FATAL", "INFO", "TRACE", "WARN"}

// ParseLevel maps a Kafka level name to zap's.
func ParseLevel(name string) (zapcore.Level, bool) {
	switch name {
	case "TRACE", "DEBUG":
		return zapcore.DebugLevel, true
	case "INFO":
		return zapcore.InfoLevel, true
	case "WARN":
		return zapcore.WarnLevel, true
	case "ERROR":
		return zapcore.ErrorLevel, true
	case "FATAL":
		return zapcore.FatalLevel, true
	}
	return 0, false
}

// state is one immutable generation of the levels (copy on write: a log
// call reads it with one atomic load).
type state struct {
	root    string            // the root logger's level name
	set     map[string]string // loggers with a level of their own
	min     zapcore.Level     // the lowest level any logger lets through
	rootLvl zapcore.Level
	lvl     map[string]zapcore.Level
}

func (s *state) effective(name string) (string, zapcore.Level) {
	for n := name; n != ""; {
		if v, ok := s.set[n]; ok {
			return v, s.lvl[n]
		}
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			break
		}
		n = n[:i]
	}
	return s.root, s.rootLvl
}

// Levels holds the run-time levels of a process's loggers. Safe for
// concurrent use.
type Levels struct {
	cur   atomic.Pointer[state]
	mu    lockrank.Mutex // a leaf: serializes writers of cur
	known sync.Map       // logger names seen or registered -> struct{}
}

// NewLevels returns levels whose root logger is at root (a Kafka level name).
func NewLevels(root string) (*Levels, error) {
	lvl, ok := ParseLevel(root)
	if !ok {
		return nil, fmt.Errorf("unknown log level %q", root)
	}
	l := &Levels{}
	l.mu.SetRank(lockrank.LogLevels)
	l.cur.Store(&state{root: root, rootLvl: lvl, min: lvl, set: map[string]string{}, lvl: map[string]zapcore.Level{}})
	return l, nil
}

// Register makes names known loggers (their levels can be set before they
// first log).
func (l *Levels) Register(names ...string) {
	for _, n := range names {
		if n != "" && n != RootLogger {
			l.known.LoadOrStore(n, struct{}{})
		}
	}
}

// Exists reports whether name is the root logger or a known logger
// (Log4jController.loggerExists).
func (l *Levels) Exists(name string) bool {
	if name == RootLogger {
		return true
	}
	_, ok := l.known.Load(name)
	return ok
}

// Logger is one logger and its effective level.
type Logger struct{ Name, Level string }

// Loggers lists the root logger and every known logger with its effective
// level (Log4jController.loggers), sorted by name with root first.
func (l *Levels) Loggers() []Logger {
	s := l.cur.Load()
	out := []Logger{{RootLogger, s.root}}
	var names []string
	l.known.Range(func(k, _ any) bool { names = append(names, k.(string)); return true })
	slices.Sort(names)
	for _, n := range names {
		v, _ := s.effective(n)
		out = append(out, Logger{n, v})
	}
	return out
}

// Set gives logger name the level (a valid Kafka level name); the root
// logger's level is set with name RootLogger.
func (l *Levels) Set(name, level string) error {
	lvl, ok := ParseLevel(level)
	if !ok {
		return fmt.Errorf("unknown log level %q", level)
	}
	l.update(func(s *state) {
		if name == RootLogger {
			s.root, s.rootLvl = level, lvl
			return
		}
		s.set[name], s.lvl[name] = level, lvl
	})
	return nil
}

// Unset removes logger name's own level: it inherits again
// (Log4jController.unsetLogLevel). The root logger keeps its level.
func (l *Levels) Unset(name string) {
	l.update(func(s *state) {
		delete(s.set, name)
		delete(s.lvl, name)
	})
}

func (l *Levels) update(change func(*state)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.cur.Load()
	s := &state{root: old.root, rootLvl: old.rootLvl, set: make(map[string]string, len(old.set)+1), lvl: make(map[string]zapcore.Level, len(old.lvl)+1)}
	for k, v := range old.set {
		s.set[k], s.lvl[k] = v, old.lvl[k]
	}
	change(s)
	s.min = s.rootLvl
	for _, v := range s.lvl {
		s.min = min(s.min, v)
	}
	l.cur.Store(s)
}

// Core wraps c (built to let every level through) so that each entry is
// written only at or above its logger's level.
func (l *Levels) Core(c zapcore.Core) zapcore.Core { return &core{Core: c, levels: l} }

type core struct {
	zapcore.Core
	levels *Levels
}

// Enabled is the cheap first check zap makes before building an entry: the
// lowest level of any logger.
func (c *core) Enabled(lvl zapcore.Level) bool { return lvl >= c.levels.cur.Load().min }

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	return &core{Core: c.Core.With(fields), levels: c.levels}
}

func (c *core) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if ent.LoggerName != "" {
		c.levels.Register(ent.LoggerName)
	}
	if _, lvl := c.levels.cur.Load().effective(ent.LoggerName); ent.Level < lvl {
		return ce
	}
	return c.Core.Check(ent, ce)
}
