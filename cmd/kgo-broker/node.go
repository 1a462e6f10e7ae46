package main

import (
	"context"
	"os"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/broker"
	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/logging"
)

// node is what main runs; *broker.Node satisfies it.
type node interface {
	Start() error
	Shutdown(ctx context.Context) error
	// Fatal delivers an error after which the node must not go on (every log
	// dir failed, or the metadata log dir did): main exits 1 at once, as Kafka
	// halts.
	Fatal() <-chan error
	// ShutdownRequested delivers why the node asks for a graceful shutdown.
	ShutdownRequested() <-chan error
}

// nodeConfig is what main hands the node (broker.NodeConfig's fields).
type nodeConfig struct {
	Config       *config.Config
	ClusterID    string
	DirectoryIDs map[string][16]byte // log dir -> meta.properties directory.id
	// OfflineLogDirs: log dirs whose meta.properties could not be read, offline
	// from the start (Kafka's MetaPropertiesEnsemble errorLogDirs)
	OfflineLogDirs []string
	Logger         *zap.Logger
	LogLevels      *logging.Levels // the loggers' run-time levels (broker-loggers)
}

// newNode builds the node; a variable so tests can run main's server path with
// a fake node.
var newNode = func(nc nodeConfig) (node, error) {
	metrics := listenMetrics(os.Getenv("KGO_METRICS_ADDR"), os.Stderr)
	n, err := broker.NewNode(broker.NodeConfig{
		Config:         nc.Config,
		ClusterID:      nc.ClusterID,
		DirectoryIDs:   nc.DirectoryIDs,
		OfflineLogDirs: nc.OfflineLogDirs,
		Logger:         nc.Logger,
		LogLevels:      nc.LogLevels,
		// nil (vfs.Default) but in the fault suite's test binary
		// (diskfault_invariants.go).
		FS:        diskFaultFS(nc.Config, nc.Logger),
		KafkaOpts: os.Getenv("KAFKA_OPTS"),
		// Request metrics cost a little per request: only when served.
		Metrics: metrics != nil,
	})
	if err != nil {
		if metrics != nil {
			metrics.Close()
		}
		return nil, err
	}
	serveMetrics(metrics, n.MetricsHandler())
	return n, nil
}
