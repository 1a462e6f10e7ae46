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
	"maps"
	"slices"
	"strings"
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

// level is a Kafka level name and the zap level it means.
type level struct {
	name string
	zap  zapcore.Level
}

// state is one immutable generation of the levels (copy on write: a log
// call reads it with one atomic load).
type state struct {
	root  level
	set   map[string]level    // loggers with a level of their own
	known map[string]struct{} // logger names seen or registered
	min   zapcore.Level       // the lowest level any logger lets through
}

func (s *state) effective(name string) level {
	for n := name; n != ""; {
		if v, ok := s.set[n]; ok {
			return v
		}
		i := strings.LastIndexByte(n, '.')
		if i < 0 {
			break
		}
		n = n[:i]
	}
	return s.root
}

// Levels holds the run-time levels of a process's loggers. Safe for
// concurrent use.
type Levels struct {
	cur atomic.Pointer[state]
	mu  lockrank.Mutex // a leaf: serializes writers of cur
}

// NewLevels returns levels whose root logger is at root (a Kafka level name).
func NewLevels(root string) (*Levels, error) {
	lvl, ok := ParseLevel(root)
	if !ok {
		return nil, fmt.Errorf("unknown log level %q", root)
	}
	l := &Levels{}
	l.mu.SetRank(lockrank.LogLevels)
	l.cur.Store(&state{root: level{root, lvl}, min: lvl, set: map[string]level{}, known: map[string]struct{}{}})
	return l, nil
}

// Register makes names known loggers (their levels can be set before they
// first log).
func (l *Levels) Register(names ...string) {
	s := l.cur.Load()
	var add []string
	for _, n := range names {
		if _, ok := s.known[n]; !ok && n != "" && n != RootLogger {
			add = append(add, n)
		}
	}
	if len(add) == 0 {
		return
	}
	l.update(func(s *state) {
		for _, n := range add {
			s.known[n] = struct{}{}
		}
	})
}

// Exists reports whether name is the root logger or a known logger
// (Log4jController.loggerExists).
func (l *Levels) Exists(name string) bool {
	_, ok := l.cur.Load().known[name]
	return ok || name == RootLogger
}

// Logger is one logger and its effective level.
type Logger struct{ Name, Level string }

// Loggers lists the root logger and every known logger with its effective
// level (Log4jController.loggers), sorted by name with root first.
func (l *Levels) Loggers() []Logger {
	s := l.cur.Load()
	out := []Logger{{RootLogger, s.root.name}}
	for _, n := range slices.Sorted(maps.Keys(s.known)) {
		out = append(out, Logger{n, s.effective(n).name})
	}
	return out
}

// Set gives logger name the level (a valid Kafka level name); the root
// logger's level is set with name RootLogger.
func (l *Levels) Set(name, lvlName string) error {
	lvl, ok := ParseLevel(lvlName)
	if !ok {
		return fmt.Errorf("unknown log level %q", lvlName)
	}
	l.update(func(s *state) {
		if name == RootLogger {
			s.root = level{lvlName, lvl}
			return
		}
		s.set[name] = level{lvlName, lvl}
	})
	return nil
}

// Unset removes logger name's own level: it inherits again
// (Log4jController.unsetLogLevel). The root logger keeps its level.
func (l *Levels) Unset(name string) {
	l.update(func(s *state) { delete(s.set, name) })
}

func (l *Levels) update(change func(*state)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.cur.Load()
	s := &state{root: old.root, set: maps.Clone(old.set), known: maps.Clone(old.known)}
	change(s)
	s.min = s.root.zap
	for _, v := range s.set {
		s.min = min(s.min, v.zap)
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
	s := c.levels.cur.Load()
	if _, ok := s.known[ent.LoggerName]; !ok && ent.LoggerName != "" {
		c.levels.Register(ent.LoggerName)
	}
	if ent.Level < s.effective(ent.LoggerName).zap {
		return ce
	}
	return c.Core.Check(ent, ce)
}
