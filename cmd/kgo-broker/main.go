// Command kgo-broker is a Kafka node (broker, KRaft controller, or both) in one
// binary. It reads Kafka's configuration the way Kafka does: server.properties,
// KAFKA_* environment variables as Apache Kafka's docker image maps them, and
// --override key=value; see docs/CONFIG.md.
//
//	kgo-broker [server.properties] [--override key=value ...]   run the node
//	kgo-broker format -t <cluster-id> -c <server.properties> [--ignore-formatted]
//	           [--standalone | --no-initial-controllers] [--release-version V]
//	           [--feature name=level ...]
//	kgo-broker random-uuid
//	kgo-broker version
//
// With no server.properties and no KAFKA_* variable it runs a single combined
// node on localhost:9092 (controller on 9093) with data under ./data. Empty log
// directories are formatted on first start, as the docker image formats them
// before starting Kafka, with $CLUSTER_ID, else a random cluster id on a
// single-node cluster, else the docker image's default cluster id.
//
// Logging: --log-format console|json (KGO_LOG_FORMAT), --log-level
// debug|info|warn|error (KGO_LOG_LEVEL); info on the console by default.
//
// Keys Kafka does not know are accepted, as Kafka accepts them, with one
// warning each; --strict-config (KGO_STRICT_CONFIG=true) refuses them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/controller"
	"github.com/kgo-broker/kgo-broker/logging"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

// kafkaVersion is the Apache Kafka release whose configuration and tools
// kgo-broker follows.
const kafkaVersion = "4.4.0"

// signalContext is canceled on SIGINT or SIGTERM; a variable for tests.
var signalContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

func main() {
	os.Exit(run(os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args, env []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "format":
			return cmdFormat(args[1:], env, stdout, stderr)
		case "random-uuid":
			fmt.Fprintln(stdout, config.RandomUUID())
			return 0
		case "healthcheck":
			return cmdHealthcheck(args[1:], env, "", stdout, stderr)
		case "docker-launch":
			return cmdDockerLaunch(args[1:], env, stdout, stderr)
		case "version", "--version":
			fmt.Fprintln(stdout, versionString())
			return 0
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	return cmdServe(args, env, stdout, stderr)
}

const usage = `Usage:
  kgo-broker [server.properties] [--override key=value ...] [--log-format console|json] [--log-level LEVEL]
             [--strict-config]
  kgo-broker format -t <cluster-id> -c <server.properties> [--ignore-formatted]
             [--standalone | --no-initial-controllers] [--release-version V]
             [--feature name=level ...]
  kgo-broker random-uuid
  kgo-broker version
  kgo-broker healthcheck [host:port] [-c server.properties] [--timeout 5s]
  kgo-broker docker-launch [args...]   (the container image's entrypoint)

Configuration: server.properties < KAFKA_* environment < --override (docs/CONFIG.md).
Unknown config keys are accepted with a warning; --strict-config refuses them.
Environment: CLUSTER_ID (cluster id for first-start format), KGO_LOG_FORMAT, KGO_LOG_LEVEL,
KGO_STRICT_CONFIG (true: as --strict-config).
`

func versionString() string {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " commit " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("kgo-broker %s (Apache Kafka %s compatible;%s %s)", version, kafkaVersion, rev, runtime.Version())
}

func getenv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// serveOptions are the server command line.
type serveOptions struct {
	File            string
	Overrides       []string
	LogFormat       string
	LogLevel        string
	ShutdownTimeout time.Duration
	// StrictConfig refuses config keys Kafka does not know
	// (--strict-config, KGO_STRICT_CONFIG=true).
	StrictConfig bool
}

func parseServeArgs(args, env []string) (serveOptions, error) {
	o := serveOptions{
		LogFormat:       getenv(env, "KGO_LOG_FORMAT"),
		LogLevel:        getenv(env, "KGO_LOG_LEVEL"),
		ShutdownTimeout: 30 * time.Second,
	}
	switch v := strings.ToLower(getenv(env, "KGO_STRICT_CONFIG")); v {
	case "", "false", "0":
	case "true", "1":
		o.StrictConfig = true
	default:
		return o, fmt.Errorf("KGO_STRICT_CONFIG=%s: use true or false", v)
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			if o.File != "" {
				return o, fmt.Errorf("unexpected argument %q (only one server.properties file)", a)
			}
			o.File = a
			continue
		}
		name, val, hasVal := strings.Cut(a, "=")
		value := func() (string, error) {
			if hasVal {
				return val, nil
			}
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", name)
			}
			i++
			return args[i], nil
		}
		var v string
		var err error
		switch name {
		case "--override":
			v, err = value()
			if err == nil && !strings.Contains(v, "=") {
				err = fmt.Errorf("--override %q: use --override key=value", v)
			}
			o.Overrides = append(o.Overrides, v)
		case "--log-format":
			v, err = value()
			o.LogFormat = v
		case "--log-level":
			v, err = value()
			o.LogLevel = v
		case "--shutdown-timeout":
			v, err = value()
			if err == nil {
				o.ShutdownTimeout, err = time.ParseDuration(v)
			}
		case "--strict-config":
			if hasVal {
				err = fmt.Errorf("--strict-config takes no value")
			}
			o.StrictConfig = true
		case "-daemon":
			err = errors.New("-daemon is not supported: run kgo-broker under a supervisor")
		default:
			err = fmt.Errorf("unknown flag %s", a)
		}
		if err != nil {
			return o, err
		}
	}
	return o, nil
}

// newLogger builds the zap logger: format console (default) or json; level
// debug, info (default), warn, error (Kafka's TRACE, DEBUG, INFO, WARN, ERROR,
// FATAL are accepted too).
func newLogger(format, level string, w io.Writer) (*zap.Logger, *logging.Levels, error) {
	var kafkaLevel string
	switch strings.ToLower(level) {
	case "", "info":
		kafkaLevel = "INFO"
	case "debug":
		kafkaLevel = "DEBUG"
	case "trace":
		kafkaLevel = "TRACE"
	case "warn", "warning":
		kafkaLevel = "WARN"
	case "error":
		kafkaLevel = "ERROR"
	case "fatal":
		kafkaLevel = "FATAL"
	default:
		return nil, nil, fmt.Errorf("unknown log level %q (use debug, info, warn or error)", level)
	}
	levels, err := logging.NewLevels(kafkaLevel)
	if err != nil {
		return nil, nil, err
	}
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	ec.EncodeDuration = zapcore.StringDurationEncoder
	var enc zapcore.Encoder
	switch strings.ToLower(format) {
	case "", "console", "text":
		ec.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(ec)
	case "json":
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, nil, fmt.Errorf("unknown log format %q (use console or json)", format)
	}
	// Every level reaches the wrapped core; the per-logger levels (KIP-412
	// broker-loggers, logging.Levels) decide.
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), zapcore.DebugLevel)
	return zap.New(levels.Core(core)), levels, nil
}

func cmdServe(args, env []string, stdout, stderr io.Writer) int {
	o, err := parseServeArgs(args, env)
	if err != nil {
		fmt.Fprintf(stderr, "kgo-broker: %v\n\n%s", err, usage)
		return 2
	}
	logger, levels, err := newLogger(o.LogFormat, o.LogLevel, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "kgo-broker: %v\n", err)
		return 2
	}
	defer logger.Sync() //nolint:errcheck

	cfg, err := config.Load(config.LoadOptions{File: o.File, Env: env, Overrides: o.Overrides, Strict: o.StrictConfig})
	if err != nil {
		logger.Error("invalid configuration", zap.Error(err))
		return 1
	}
	// Kafka accepts keys it does not know (plugin, reporter and vendor
	// settings) and keeps them for plugins; kgo-broker says so once per key,
	// as AbstractConfig.logUnused did.
	for _, u := range cfg.UnknownKeys() {
		logger.Warn(fmt.Sprintf("The configuration '%s' was supplied but isn't a known config.", u.Key),
			zap.String("key", u.Key), zap.String("from", u.Origin), zap.String("hint", u.Hint))
	}
	source := o.File
	if source == "" {
		source = "environment"
		if cfg.Origin("node.id") == config.OriginDefaults {
			source = config.OriginDefaults
		}
	}
	logger.Info("starting kgo-broker",
		zap.String("version", version),
		zap.String("config", source),
		zap.Int32("node.id", cfg.NodeID),
		zap.Stringer("process.roles", cfg.ProcessRoles),
		zap.Strings("listeners", listenerStrings(cfg.Listeners)),
		zap.Strings("advertised.listeners", listenerStrings(cfg.AdvertisedListeners)),
		zap.Strings("log.dirs", cfg.LogDirs),
		zap.String("metadata.log.dir", cfg.MetadataLogDir))
	if keys := cfg.ExplicitNotActedOn(); len(keys) > 0 {
		logger.Info("config keys accepted but not acted on by kgo-broker (see docs/CONFIG.md)", zap.Strings("keys", keys))
	}

	st, err := prepareStorage(io.Discard, cfg, getenv(env, "CLUSTER_ID"))
	if err != nil {
		logger.Error("log directories", zap.Error(err))
		return 1
	}
	clusterID := st.ClusterID
	if st.Warning != "" {
		logger.Warn(st.Warning)
	}
	for _, s := range st.Unreadable {
		// MetaPropertiesEnsemble.Loader's error, then the dir is offline
		logger.Error("Error while reading meta.properties file; the log directory is offline",
			zap.String("file", filepath.Join(s.Dir, config.MetaPropertiesFile)), zap.Error(s.Err))
	}
	if len(st.Formatted) > 0 {
		logger.Info("formatted empty log directories", zap.String("cluster.id", clusterID),
			zap.Strings("dirs", st.Formatted), zap.String("metadata.version", metadatacache.MetadataVersionName(controller.DefaultMetadataVersion)))
	} else {
		logger.Info("log directories formatted", zap.String("cluster.id", clusterID), zap.Strings("dirs", cfg.AllDirs()))
	}

	ctx, stop := signalContext()
	defer stop()
	n, err := newNode(nodeConfig{Config: cfg, ClusterID: clusterID, DirectoryIDs: st.DirIDs, OfflineLogDirs: st.OfflineDirs(), Logger: logger, LogLevels: levels})
	if err != nil {
		logger.Error("creating node", zap.Error(err))
		return 1
	}
	if err := n.Start(); err != nil {
		logger.Error("starting node", zap.Error(err))
		return 1
	}
	logger.Info("kgo-broker started", zap.Int32("node.id", cfg.NodeID), zap.String("cluster.id", clusterID))
	select {
	case <-ctx.Done():
	case err := <-n.Fatal():
		// Kafka's Exit.halt(1): no clean shutdown (no clean-shutdown marker,
		// so the next start recovers every log past its recovery point)
		logger.Error("halting", zap.Error(err))
		return 1
	case err := <-n.ShutdownRequested():
		logger.Error("shutting down", zap.Error(err))
	}
	stop()
	logger.Info("shutting down", zap.Duration("timeout", o.ShutdownTimeout))
	sctx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout)
	defer cancel()
	if err := n.Shutdown(sctx); err != nil {
		logger.Error("shutdown", zap.Error(err))
		return 1
	}
	logger.Info("shut down cleanly")
	return 0
}

func listenerStrings(ls []config.Listener) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.String())
	}
	return out
}

// cmdFormat is kafka-storage.sh format: output on stdout, failures on stderr
// with exit code 1.
func cmdFormat(args, env []string, stdout, stderr io.Writer) int {
	file, o, err := parseFormatArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "kgo-broker format: error: %v\n", err)
		return 1
	}
	// The same resolution as the server, so format and start agree (the docker
	// image's server.properties already holds the KAFKA_* settings).
	cfg, err := config.Load(config.LoadOptions{File: file, Env: env})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if err := runFormat(stdout, cfg, o); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
