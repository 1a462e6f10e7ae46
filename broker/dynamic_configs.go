package broker

// Dynamic broker configs applied without a restart (KIP-226), as Kafka's
// DynamicBrokerConfig reconfigures its components when the image's
// ConfigRecords for this broker or the cluster default change
// (DynamicConfigPublisher -> BrokerConfigHandler -> updateCurrentConfig).
// The effective value of a key is this broker's dynamic one, else the
// cluster-wide default, else the static one (config.WithDynamic):
//
//   - num.replica.fetchers: the replica fetcher pool is resized and the
//     followed partitions move with their fetch state
//     (ReplicaManager.SetNumReplicaFetchers, resizeFetcherThreadPool);
//   - log.cleaner.threads, log.cleaner.dedupe.buffer.size,
//     log.cleaner.io.buffer.size, log.cleaner.io.buffer.load.factor,
//     log.cleaner.io.max.bytes.per.second, log.cleaner.backoff.ms: the
//     cleaner threads restart with them (storage.Manager.ReconfigureCleaner,
//     LogCleaner.reconfigure);
//   - max.connections, max.connection.creation.rate,
//     max.connections.per.ip, max.connections.per.ip.overrides: the
//     connection quotas (quota.ConnectionQuotas.SetBrokerLimits,
//     SocketServer.reconfigure).
//
// The topic defaults (message.max.bytes, log.retention.*, log.segment.bytes
// and the other log.* synonyms of topic configs) are applied by the
// replica manager from the same image (replication.ReplicaManager.OnImage,
// DynamicLogConfig); the replication throttles by replication_quotas.go;
// listener keystores by security.go (reloadListenerTLS); cordoned.log.dirs
// by cordoned.go. Dynamic configs that fail KafkaConfig's checks together
// (the broker validates each change, config_admin.go, but the cluster
// default and a per-broker value are validated apart) leave the static
// values in force, logged.

import (
	"maps"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

// cleanerOptions are the log.cleaner.* settings of cfg.
func cleanerOptions(cfg *config.Config) storage.CleanerOptions {
	return storage.CleanerOptions{
		Disabled:            !cfg.Bool("log.cleaner.enable") || cfg.Int("log.cleaner.threads") == 0,
		Threads:             int(cfg.Int("log.cleaner.threads")),
		DedupeBufferSize:    cfg.Long("log.cleaner.dedupe.buffer.size"),
		IOBufferSize:        int(cfg.Int("log.cleaner.io.buffer.size")),
		IOMaxBytesPerSecond: cfg.Double("log.cleaner.io.max.bytes.per.second"),
		LoadFactor:          cfg.Double("log.cleaner.io.buffer.load.factor"),
		BackoffMs:           cfg.Long("log.cleaner.backoff.ms"),
	}
}

// connLimits are the broker-wide connection limits of a config.
type connLimits struct {
	maxConnections, maxCreationRate, maxPerIP int
	overrides                                 string
}

func connLimitsOf(cfg *config.Config) connLimits {
	return connLimits{int(cfg.Int("max.connections")), int(cfg.Int("max.connection.creation.rate")),
		int(cfg.Int("max.connections.per.ip")), cfg.String("max.connections.per.ip.overrides")}
}

// appliedDynamic is what dynamicConfigs last applied.
type appliedDynamic struct {
	fetchers int
	cleaner  storage.CleanerOptions
	conns    connLimits
	dyn      map[string]string
}

// dynamicConfigs applies the dynamic broker configs of each image. mu
// serializes the subscriber with the call at startup, so that the last
// image's configs are the ones in force.
type dynamicConfigs struct {
	node *Node
	mu   lockrank.Mutex
	last *appliedDynamic // guarded by mu
}

func newDynamicConfigs(n *Node) *dynamicConfigs {
	d := &dynamicConfigs{node: n}
	d.mu.SetRank(lockrank.DynamicConfigs)
	d.last = &appliedDynamic{
		fetchers: int(n.cfg.Int("num.replica.fetchers")),
		cleaner:  cleanerOptions(n.cfg),
		conns:    connLimitsOf(n.cfg),
	}
	return d
}

// onImage is an image subscriber (and is called once with the image at
// startup).
func (d *dynamicConfigs) onImage(prev, img *metadatacache.Image) {
	if img == nil {
		return
	}
	if ch := img.Changes(); prev != nil && !ch.Full && !ch.Configs {
		return
	}
	n := d.node
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur := n.cache.Image(); cur != nil && cur.Offset > img.Offset {
		img = cur // the startup call lost the race with a newer image's subscriber
	}
	dyn := dynamicBrokerConfigs(img, n.cfg.NodeID)
	last := d.last
	if maps.Equal(dyn, last.dyn) {
		return
	}
	eff, err := n.cfg.WithDynamic(img.DefaultBrokerConfig(), img.BrokerConfig(n.cfg.NodeID))
	if err != nil {
		n.logger.Error("the dynamic broker configs are invalid together; the static configs stay in force", zap.Error(err))
		eff = n.cfg
	}
	next := &appliedDynamic{
		fetchers: int(eff.Int("num.replica.fetchers")),
		cleaner:  cleanerOptions(eff),
		conns:    connLimitsOf(eff),
		dyn:      dyn,
	}
	d.last = next
	if next.fetchers != last.fetchers && n.replicas != nil {
		n.logger.Info("num.replica.fetchers changed dynamically", zap.Int("from", last.fetchers), zap.Int("to", next.fetchers))
		n.replicas.SetNumReplicaFetchers(next.fetchers)
	}
	if !sameCleaner(next.cleaner, last.cleaner) && n.logs != nil {
		n.logs.ReconfigureCleaner(next.cleaner)
	}
	if next.conns != last.conns && n.broker != nil && n.broker.quotas != nil && n.broker.quotas.conns != nil {
		c := next.conns
		n.broker.quotas.conns.SetBrokerLimits(c.maxConnections, c.maxCreationRate, c.maxPerIP, ipOverrides(c.overrides, n.logger))
	}
}

// sameCleaner compares the settings of two CleanerOptions (Sleep aside).
func sameCleaner(a, b storage.CleanerOptions) bool {
	return a.Disabled == b.Disabled && a.Threads == b.Threads && a.DedupeBufferSize == b.DedupeBufferSize &&
		a.IOBufferSize == b.IOBufferSize && a.IOMaxBytesPerSecond == b.IOMaxBytesPerSecond &&
		a.LoadFactor == b.LoadFactor && a.BackoffMs == b.BackoffMs
}
