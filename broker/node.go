package broker

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/controller"
	"github.com/kgo-broker/kgo-broker/group"
	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/logging"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/quota"
	"github.com/kgo-broker/kgo-broker/raft"
	"github.com/kgo-broker/kgo-broker/replication"
	"github.com/kgo-broker/kgo-broker/security"
	"github.com/kgo-broker/kgo-broker/sharecoord"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
	"github.com/kgo-broker/kgo-broker/txn"
)

// NodeConfig is what a Node is built from: the resolved config and the
// identity read from meta.properties.
type NodeConfig struct {
	Config    *config.Config
	ClusterID string
	// DirectoryIDs maps each log dir to its meta.properties directory.id.
	DirectoryIDs map[string][16]byte
	// OfflineLogDirs are log dirs whose meta.properties could not be read
	// (MetaPropertiesEnsemble.errorLogDirs): offline from the start
	// (storage.ManagerOptions.InitialOfflineDirs). Their directory.id is
	// unknown, so, as Kafka, the node leaves them out of its registration and
	// cannot name them in heartbeats (ReplicaManager.handleLogDirFailure
	// returns early for a dir that was never online).
	OfflineLogDirs []string
	Logger         *zap.Logger
	// LogLevels are Logger's run-time levels by logger name, which
	// DescribeConfigs and IncrementalAlterConfigs show and change on the
	// BROKER_LOGGER resource (KIP-412); nil: the logger levels are fixed and
	// the resource lists no logger.
	LogLevels *logging.Levels
	// FS is the file system under storage and raft (vfs.Default when nil).
	FS vfs.FS
	// KafkaOpts is the KAFKA_OPTS environment variable: a
	// -Djava.security.auth.login.config=<file> in it names a JAAS file
	// for the SASL listeners, as for Kafka.
	KafkaOpts string
	// Metrics turns on the request metrics (RequestMetrics, metrics.go):
	// a clock read and a few atomic adds per request. The other metrics are
	// read when scraped and need nothing.
	Metrics bool
}

// Node is one kgo-broker process: a broker, a controller, or both.
//
// Start order: data logs -> raft (metadata log) -> controller -> CONTROLLER
// listeners -> metadata cache fed by raft -> replica manager -> broker
// registration -> client listeners once the controller unfences us.
// Shutdown runs it backwards, draining in-flight requests first.
type Node struct {
	nc     NodeConfig
	cfg    *config.Config
	logger *zap.Logger

	logs      *storage.Manager
	raft      *raft.Node
	ctrl      *controller.Controller
	cache     *metadatacache.Cache
	replicas  *replication.ReplicaManager
	broker    *Broker
	channel   *controllerChannel
	lifecycle *lifecycle
	ctrlReg   *controllerRegistration

	controllerServers []*protocol.Server
	clientServers     []*protocol.Server

	// Security (security.go): each listener's TLS and SASL, built before
	// anything listens and read-only afterwards; the JAAS file of
	// KAFKA_OPTS.
	listenerSec map[string]*security.Listener
	jaas        map[string][]security.LoginModule

	cancel context.CancelFunc
	wg     sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error

	fatal chan error // cap 1: see Fatal
	// stopAsked (cap 1) asks the process for a graceful shutdown
	// (ShutdownRequested).
	stopAsked chan error

	// Metrics (metrics.go). started is set once Start succeeded: the
	// collector reads the fields above only then.
	started        atomic.Bool
	requestMetrics *requestMetrics
	flushTime      prometheus.Histogram
	registry       *prometheus.Registry
}

// NewNode builds a node; nothing is opened until Start.
func NewNode(nc NodeConfig) (*Node, error) {
	if nc.Config == nil {
		return nil, errors.New("broker: NodeConfig.Config is nil")
	}
	if nc.Logger == nil {
		nc.Logger = zap.NewNop()
	}
	if nc.FS == nil {
		nc.FS = vfs.Default
	}
	n := &Node{nc: nc, cfg: nc.Config, logger: nc.Logger, fatal: make(chan error, 1), stopAsked: make(chan error, 1), requestMetrics: newRequestMetrics(), flushTime: newFlushTime()}
	n.registry = newMetricsRegistry(n)
	if nc.LogLevels != nil {
		// Known before they first log, so that their levels can be set
		// (broker_loggers.go); sub-loggers become known when they log.
		nc.LogLevels.Register(nodeLoggers...)
	}
	return n, nil
}

// nodeLoggers are the names the node gives its components' loggers.
var nodeLoggers = []string{"broker", "controller", "controller-channel", "controller-registration", "group",
	"inter-broker", "lifecycle", "listener", "metadata", "quotas", "raft", "replication", "security",
	"storage", "txn", "txn-verifier"}

// Fatal delivers the reason the node must stop at once: every log dir failed
// (LogManager.handleLogDirFailure) or the one holding the metadata log did
// (ReplicaManager.handleLogDirFailure). Kafka halts the process; the caller
// should exit without a clean shutdown.
func (n *Node) Fatal() <-chan error { return n.fatal }

// ShutdownRequested delivers the reason the node asks to be shut down
// gracefully (the caller runs Shutdown), as Kafka's BrokerServer runs its
// shutdown on a new thread: a failed log dir that could not be reported to
// the controller within log.dir.failure.timeout.ms (KIP-858).
func (n *Node) ShutdownRequested() <-chan error { return n.stopAsked }

func (n *Node) askShutdown(err error) {
	select {
	case n.stopAsked <- err:
	default:
	}
}

func (n *Node) fail(err error) {
	select {
	case n.fatal <- err:
	default:
	}
}

// Start opens storage, joins the metadata quorum and opens the listeners.
// It returns once the client listeners accept connections (or on error).
func (n *Node) Start() error {
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	if err := n.start(ctx); err != nil {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		n.Shutdown(sctx)
		return err
	}
	n.started.Store(true)
	return nil
}

func (n *Node) start(ctx context.Context) error {
	cfg := n.cfg
	now := time.Now
	if err := cfg.ValidateAuthorizer(); err != nil {
		return err
	}
	if slices.Contains(n.nc.OfflineLogDirs, cfg.MetadataLogDir) {
		// MetaPropertiesEnsemble.verify: the metadata log cannot be offline
		return fmt.Errorf("Encountered I/O error in metadata log directory %s. Cannot continue.", cfg.MetadataLogDir)
	}

	// The metadata image every broker answers from, fed by raft.
	n.cache = metadatacache.NewCache(metadatacache.Config{ClusterID: n.nc.ClusterID, Logger: n.logger.Named("metadata")})

	// Listener security first: a bad keystore, JAAS entry or mechanism
	// stops the node before it joins the quorum, as Kafka fails to start.
	jaas, err := loadJaasFile(n.nc.KafkaOpts)
	if err != nil {
		return err
	}
	n.jaas = jaas
	n.listenerSec = map[string]*security.Listener{}
	for _, l := range cfg.Listeners {
		ls, err := n.listenerSecurity(l)
		if err != nil {
			return err
		}
		n.listenerSec[l.Name] = ls
	}
	n.cache.Subscribe(n.reloadListenerTLS)
	ctrlOpts, err := n.clientOptions(cfg.ControllerListenerNames[0], "sasl.mechanism.controller.protocol")
	if err != nil {
		return err
	}

	voters := make(map[int32]raft.VoterEndpoint, len(cfg.QuorumVoters))
	for id, hp := range cfg.QuorumVoters {
		voters[id] = raft.VoterEndpoint{Host: hp.Host, Port: int(hp.Port)}
	}
	var bootstrap []raft.VoterEndpoint
	for _, hp := range cfg.QuorumBootstrapServers {
		bootstrap = append(bootstrap, raft.VoterEndpoint{Host: hp.Host, Port: int(hp.Port)})
	}
	rn, err := raft.NewNode(raft.Config{
		NodeID: cfg.NodeID,
		// controller.quorum.voters (kraft.version 0) or, for a dynamic
		// quorum (KIP-853), controller.quorum.bootstrap.servers: the voter
		// set then comes from the log and the bootstrap checkpoint.
		Voters:           voters,
		BootstrapServers: bootstrap,
		ListenerName:     firstOr(cfg.ControllerListenerNames, "CONTROLLER"),
		LocalEndpoints:   localControllerEndpoints(cfg),
		CanBecomeVoter:   cfg.ProcessRoles.IsController(),
		AutoJoin:         cfg.ProcessRoles.IsController() && cfg.Bool("controller.quorum.auto.join.enable"),
		ClusterID:        n.nc.ClusterID,
		MetadataLogDir:   cfg.MetadataLogDir,
		FS:               n.nc.FS,
		Now:              now,
		ElectionTimeout:  time.Duration(cfg.Int("controller.quorum.election.timeout.ms")) * time.Millisecond,
		FetchTimeout:     time.Duration(cfg.Int("controller.quorum.fetch.timeout.ms")) * time.Millisecond,
		RequestTimeout:   time.Duration(cfg.Int("controller.quorum.request.timeout.ms")) * time.Millisecond,
		Logger:           n.logger.Named("raft"),
		// The metadata log dir's directory.id, sent in Fetch: a leader
		// describes observers (brokers) with it.
		DirectoryID: n.nc.DirectoryIDs[cfg.MetadataLogDir],
		// The voters' controller listener's TLS and SASL.
		ClientOptions: ctrlOpts,
		// A metadata log or quorum-state I/O error (or a broken raft
		// invariant) halts the node, as Kafka's raft IO thread's fatal fault
		// handler does: the node must not go on with a dead metadata log.
		OnFatal: func(err error) {
			n.fail(fmt.Errorf("unexpected error in the raft IO thread: %w", err))
		},
		// Transport nil: the raft node owns (and closes) a ClientTransport
		// to the voters' CONTROLLER endpoints.
	})
	if err != nil {
		return fmt.Errorf("opening the metadata log: %w", err)
	}
	n.raft = rn
	feeder := &cacheFeeder{cache: n.cache, logger: n.logger.Named("metadata"), highWatermark: rn.HighWatermark}
	feeder.mu.SetRank(lockrank.MetadataFeeder)
	rn.Register(feeder)
	// Metadata snapshots: settings and the generator (metadata_snapshot.go).
	configureMetadataSnapshots(rn, n.cache, cfg)

	if cfg.ProcessRoles.IsController() {
		cc := controller.FromBrokerConfig(cfg)
		cc.ClusterID, cc.Raft, cc.Now, cc.Logger = n.nc.ClusterID, rn, now, n.logger.Named("controller")
		// UpdateFeatures waits for every voter's ControllerRegistration.
		voterIDs := make([]int32, 0, len(cfg.QuorumVoters))
		for id := range cfg.QuorumVoters {
			voterIDs = append(voterIDs, id)
		}
		slices.Sort(voterIDs)
		cc.QuorumNodeIDs = func() []int32 { return voterIDs }
		ctrl, err := controller.New(cc)
		if err != nil {
			return fmt.Errorf("starting the controller: %w", err)
		}
		n.ctrl = ctrl
	}

	if cfg.ProcessRoles.IsBroker() {
		logs, err := storage.OpenManager(storage.ManagerOptions{
			FS:                                n.nc.FS,
			LogDirs:                           cfg.LogDirs,
			InitialOfflineDirs:                n.nc.OfflineLogDirs,
			Config:                            storageDefaults(cfg.TopicDefaults()),
			OnFlush:                           n.observeFlush,
			Now:                               now,
			Logger:                            n.logger.Named("storage"),
			FlushCheckIntervalMs:              cfg.Long("log.flush.scheduler.interval.ms"),
			RecoveryCheckpointMs:              int64(cfg.Int("log.flush.offset.checkpoint.interval.ms")),
			LogStartCheckpointMs:              int64(cfg.Int("log.flush.start.offset.checkpoint.interval.ms")),
			RetentionCheckIntervalMs:          cfg.Long("log.retention.check.interval.ms"),
			ProducerExpirationCheckIntervalMs: int64(cfg.Int("producer.id.expiration.check.interval.ms")),
			RecoveryThreadsPerDataDir:         int(cfg.Int("num.recovery.threads.per.data.dir")),
			Cleaner:                           cleanerOptions(cfg),
			// KIP-112: a failed log dir is reported to the controller in
			// the next heartbeat's OfflineLogDirs.
			OnDirFailure: func(dir string) {
				n.logger.Error("log directory failed and is offline", zap.String("dir", dir))
				if n.lifecycle != nil {
					// KIP-858: the controller moves the dir's partitions
					// away (controller/logdirs.go) once a heartbeat tells it;
					// a broker that cannot tell it in time stops.
					id := n.nc.DirectoryIDs[dir]
					n.lifecycle.dirFailed(id, time.Duration(cfg.Long("log.dir.failure.timeout.ms"))*time.Millisecond, func() {
						n.askShutdown(fmt.Errorf("shutting down because couldn't communicate offline log dir %s (%s) with controllers within log.dir.failure.timeout.ms",
							dir, config.UUID(id)))
					})
				}
				if n.logs == nil {
					return // loading: start() decides below
				}
				switch {
				case dir == cfg.MetadataLogDir:
					n.fail(fmt.Errorf("shutdown broker because the metadata log dir %s has failed", dir))
				case len(n.logs.OfflineDirs()) == len(cfg.LogDirs):
					n.fail(fmt.Errorf("shutdown broker because all log dirs in %s have failed", strings.Join(cfg.LogDirs, ", ")))
				}
			},
		})
		if err != nil {
			return fmt.Errorf("opening log dirs: %w", err)
		}
		n.logs = logs
		// A log dir that failed to load is offline (storage.OpenManager, after
		// LogManager.loadLogs): it is left out of the registration's LogDirs and
		// reported in the heartbeats' OfflineLogDirs (KIP-858), as a failure at run
		// time is. Kafka halts when the failed dir holds the metadata log
		// (ReplicaManager.handleLogDirFailure).
		for _, dir := range logs.OfflineDirs() {
			if dir == cfg.MetadataLogDir {
				return fmt.Errorf("opening log dirs: shutdown broker because the metadata log dir %s has failed", dir)
			}
		}
		// Flush, checkpoint and retention work (LogManager's scheduler).
		logs.Start(time.Second)
	}

	n.broker = &Broker{
		nodeID:              cfg.NodeID,
		clusterID:           n.nc.ClusterID,
		logger:              n.logger.Named("broker"),
		now:                 now,
		cfg:                 cfg,
		meta:                n.cache,
		kraftVersion:        n.raft.KRaftVersion,
		controllerListeners: map[string]bool{},
		logLevels:           n.nc.LogLevels,
		settings: settings{
			autoCreateTopics:  cfg.Bool("auto.create.topics.enable"),
			numPartitions:     cfg.Int("num.partitions"),
			replicationFactor: int16(cfg.Int("default.replication.factor")),
		},
	}
	n.broker.autoCreating.mu.SetRank(lockrank.InflightTopics)
	// Client quotas and connection limits (quotas.go), fed from the image.
	n.broker.quotas = newClientQuotas(cfg, connectionQuotas(cfg, n.logger.Named("quotas")))
	n.cache.Subscribe(n.broker.quotas.onImage)
	n.broker.quotas.onImage(nil, n.cache.Image())
	if a := newAuthorizer(cfg); a != nil {
		n.broker.authz = a
		n.cache.Subscribe(watchACLs(a))
		watchACLs(a)(nil, n.cache.Image())
	}
	for _, name := range cfg.ControllerListenerNames {
		n.broker.controllerListeners[name] = true
	}
	n.channel = newControllerChannel(cfg.NodeID, n.activeController, n.logger.Named("controller-channel"))
	n.channel.opts = ctrlOpts
	n.broker.forward = n.channel
	if n.ctrl != nil {
		n.broker.controllerHandler = n.handleControllerRequest
	}

	// CONTROLLER listeners first: raft peers and brokers (this one too)
	// reach the quorum through them.
	if cfg.ProcessRoles.IsController() {
		for _, l := range cfg.Listeners {
			if !n.broker.controllerListeners[l.Name] {
				continue
			}
			if err := n.listen(l, versionTable(onController), &n.controllerServers); err != nil {
				return err
			}
		}
	}
	if err := rn.Start(); err != nil {
		return fmt.Errorf("starting raft: %w", err)
	}
	if n.ctrl != nil {
		// KIP-919: register this controller with the active one
		// (controller_registration.go).
		n.ctrlReg = newControllerRegistration(n.channel, cfg.NodeID, cfg.AdvertisedControllerListeners, cfg.ListenerSecurityProtocols,
			n.cache.Image, n.logger.Named("controller-registration"))
		n.cache.Subscribe(n.ctrlReg.onImage)
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.ctrlReg.run(ctx)
		}()
	}
	if !cfg.ProcessRoles.IsBroker() {
		return nil
	}

	ibOpts, err := n.clientOptions(cfg.InterBrokerListenerName, "sasl.mechanism.inter.broker.protocol")
	if err != nil {
		return err
	}
	// The broker's ReplicaManager creates the replica selector (KIP-392);
	// a controller-only node never does.
	if err := cfg.ValidateReplicaSelector(); err != nil {
		return err
	}
	// Replication throttles (replication_quotas.go), fed from the image
	// before the replica manager applies it.
	n.broker.replQuotas = newReplicationQuotas(cfg, n.logger.Named("replication-quotas"))
	n.cache.Subscribe(n.broker.replQuotas.onImage)
	n.broker.replQuotas.onImage(nil, n.cache.Image())
	var dirAssign *dirAssigner
	n.replicas = replication.New(replication.Config{
		NodeID:                   cfg.NodeID,
		LeaderQuota:              n.broker.replQuotas.leader,
		FollowerQuota:            n.broker.replQuotas.follower,
		RackAwareReplicaSelector: cfg.RackAwareReplicaSelection(),
		Logs:                     n.logs,
		Now:                      now,
		Logger:                   n.logger.Named("replication"),
		TopicDefaults:            cfg.TopicDefaults,
		Controller:               requestorFunc(n.channel.Request),
		BrokerEpoch:              func() int64 { return n.lifecycle.epoch() },
		LogDirByID: func(id [16]byte) (string, bool) {
			for dir, did := range n.nc.DirectoryIDs {
				if did == id {
					return dir, true
				}
			}
			return "", false
		},
		// KIP-113: a replica moved to another log dir is reported to the
		// controller (AssignReplicasToDirs).
		OnLogMoved: func(storage.TopicPartition) {
			if dirAssign != nil {
				dirAssign.rescan()
			}
		},
		AlterLogDirsQuota:      n.broker.replQuotas.alterLogDirs,
		FetchSessionCacheSlots: fetchSessionCacheSlots(int64(cfg.Int("max.incremental.fetch.session.cache.slots"))),
	})
	n.broker.replicas = n.replicas
	n.cache.Subscribe(n.replicas.OnImage)
	// KIP-858: report replicas whose log is not in the directory the
	// metadata names (dir_assignments.go); after the replica manager, which
	// creates the logs of new replicas from the same image.
	dirAssign = newDirAssigner(cfg.NodeID, n.nc.DirectoryIDs, n.logs.LogDirOf, func() int64 { return n.lifecycle.epoch() },
		n.channel.Request, n.logger.Named("dir-assignments"))
	n.cache.Subscribe(dirAssign.onImage)
	n.broker.peers = newBrokerClients(cfg.NodeID, cfg.InterBrokerListenerName, n.cache.Image, n.broker.Handle,
		n.logger.Named("inter-broker"))
	n.broker.peers.opts = ibOpts
	// KIP-890: leaders verify transactional produces with the transaction
	// coordinators through the peers (txn_verifier.go).
	n.replicas.SetTxnSettings(txnSettingsFrom(ctx, cfg, n.broker.peers, n.cache.Image, n.logger.Named("txn-verifier")))

	// The share coordinator follows the __share_group_state leaders after
	// the replica manager (sharecoord/doc.go); the persister reaches it,
	// here or on other nodes, through the peers (share_persister.go). Both
	// come before the group coordinator, which initializes share state
	// through the persister.
	sc := sharecoord.FromBrokerConfig(cfg)
	sc.Writer = coordinatorWriter{replicas: n.replicas, compression: storage.Compression(cfg.Int("share.coordinator.state.topic.compression.codec"))} // as the group coordinator: both are Kafka's CoordinatorPartitionWriter
	sc.Logger, sc.Image, sc.Controller = n.logger.Named("sharecoord"), n.cache.Image, requestorFunc(n.channel.Request)
	n.broker.shareCoord = sharecoord.New(sc)
	n.cache.Subscribe(n.broker.shareCoord.OnImage)
	n.broker.shareCoord.OnImage(nil, n.cache.Image())
	n.broker.sharePersister = newSharePersister(n.broker, n.logger.Named("share-persister"))
	// Share partitions (KIP-932) on the partitions this node leads, after
	// the replica manager and the persister, before the group coordinator
	// that tells them of members leaving; dropped when their leadership
	// moves (shares.go).
	n.broker.shares = newShareManager(cfg, n.broker, now)
	n.broker.shareMemberLeft = n.broker.sharesMemberLeft
	n.cache.Subscribe(n.broker.sharesOnImage)
	go n.broker.runShares(ctx)

	// The group coordinator follows the __consumer_offsets leaders after
	// the replica manager (group/doc.go).
	gc := group.FromBrokerConfig(cfg)
	gc.Writer = coordinatorWriter{replicas: n.replicas, compression: storage.Compression(cfg.Int("offsets.topic.compression.codec"))}
	gc.Logger, gc.Image, gc.Controller = n.logger.Named("group"), n.cache.Image, requestorFunc(n.channel.Request)
	// KIP-848/KIP-932 group configs: a group's consumer.* and share.*
	// overrides (GROUP config resources in the metadata image) over the
	// broker's group.* values.
	gc.GroupConfig = n.broker.GroupConfig
	n.broker.wireShareGroups(&gc) // share_groups.go: needs sharePersister
	n.broker.groups = group.New(gc)
	n.cache.Subscribe(n.broker.groups.OnImage)
	n.broker.groups.OnImage(nil, n.cache.Image())

	// The transaction coordinator follows the __transaction_state leaders
	// after the replica manager, and sends markers through the
	// inter-broker clients (txn/doc.go).
	tc := txn.FromBrokerConfig(cfg)
	tc.Writer, tc.ProducerIDs, tc.Markers = coordinatorWriter{replicas: n.replicas, minISR: true}, n.replicas, n.broker
	tc.Logger, tc.Image, tc.Controller = n.logger.Named("txn"), n.cache.Image, requestorFunc(n.channel.Request)
	n.broker.txn = txn.New(tc)
	n.cache.Subscribe(n.broker.txn.OnImage)
	n.broker.txn.OnImage(nil, n.cache.Image())

	n.lifecycle = newLifecycle(n.channel, n.registration(), time.Duration(cfg.Int("broker.heartbeat.interval.ms"))*time.Millisecond,
		func() int64 { return n.cache.Image().Offset }, n.logger.Named("lifecycle"))
	n.lifecycle.waitMetadata = n.cache.WaitForOffset
	n.lifecycle.offlineDirs = func() [][16]byte {
		var ids [][16]byte
		for _, dir := range n.logs.OfflineDirs() {
			if id, ok := n.nc.DirectoryIDs[dir]; ok {
				ids = append(ids, id)
			}
		}
		return ids
	}
	// KIP-1066: cordoned log dirs take no new replicas (cordoned.go).
	n.lifecycle.cordonedDirs = func() ([][16]byte, bool) {
		img := n.cache.Image()
		if img == nil || img.MetadataVersion() < metadatacache.MV4_3_IV0 {
			return nil, false
		}
		var ids [][16]byte
		for _, dir := range effectiveCordonedDirs(cfg, img) {
			if id, ok := n.nc.DirectoryIDs[dir]; ok && !n.logs.DirOffline(dir) {
				ids = append(ids, id)
			}
		}
		return ids, true
	}
	applyCordoned := func(_, img *metadatacache.Image) {
		dirs := effectiveCordonedDirs(cfg, img)
		n.logs.SetCordonedDirs(dirs)
		n.lifecycle.cordonedChanged(dirs)
	}
	n.cache.Subscribe(applyCordoned)
	applyCordoned(nil, n.cache.Image())
	// Replication between brokers (replication/fetcher_manager.go): replica
	// fetchers on inter.broker.listener.name, ISR changes through the
	// controller channel (Config.Controller), the HW checkpoint.
	rc := replication.ReplicationConfigFrom(cfg.InterBrokerListenerName, cfg)
	rc.ClientOptions = ibOpts
	n.replicas.StartReplication(rc)
	// Dynamic broker configs applied live (dynamic_configs.go): the
	// fetcher pool, the log cleaner, the connection limits.
	dynCfgs := newDynamicConfigs(n)
	n.cache.Subscribe(dynCfgs.onImage)
	dynCfgs.onImage(nil, n.cache.Image())
	// Moves between log dirs that a restart interrupted go on (KIP-113).
	n.replicas.ResumeLogDirMoves()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		n.lifecycle.run(ctx)
	}()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		dirAssign.run(ctx)
	}()

	// Like Kafka's BrokerServer, serve clients once the controller has
	// unfenced us (we caught up with the metadata log). A broker that is
	// not unfenced in time still opens its listeners, so operators can
	// look at it, and says so.
	select {
	case <-n.lifecycle.unfenced:
	case <-time.After(30 * time.Second):
		n.logger.Warn("not unfenced by the controller within 30s; opening client listeners anyway")
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, l := range cfg.Listeners {
		if n.broker.controllerListeners[l.Name] {
			continue
		}
		if err := n.listen(l, versionTable(onBroker), &n.clientServers); err != nil {
			return err
		}
	}
	return nil
}

func (n *Node) listen(l config.Listener, versions protocol.VersionTable, into *[]*protocol.Server) error {
	ln, err := net.Listen("tcp", l.Addr())
	if err != nil {
		return fmt.Errorf("listener %s: %w (check listeners=%s)", l.Name, err, l.String())
	}
	if err := protocol.SetListenBacklog(ln, int(n.cfg.Int("socket.listen.backlog.size"))); err != nil {
		ln.Close()
		return fmt.Errorf("listener %s: %w (check socket.listen.backlog.size)", l.Name, err)
	}
	srv := &protocol.Server{
		Handler:         n.broker,
		Versions:        versions,
		MaxRequestBytes: n.cfg.Int("socket.request.max.bytes"),
		IdleTimeout:     time.Duration(n.cfg.Long("connections.max.idle.ms")) * time.Millisecond,
		ListenerName:    l.Name,
		Logger:          n.logger.Named("listener"),
		Security:        n.listenerSec[l.Name].Server,
	}
	if n.nc.Metrics {
		srv.Observe = n.requestMetrics.observe
	}
	if into == &n.clientServers && n.broker.quotas != nil {
		// Kafka's ConnectionQuotas cover the broker's listeners (the
		// controller's SocketServer has its own, without limits here).
		srv.Admit, srv.Release = n.broker.quotas.admitConn, n.broker.quotas.conns.Release
		n.broker.quotas.conns.AddListener(l.Name, srv.CloseLeastRecent)
	}
	*into = append(*into, srv)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, protocol.ErrServerClosed) {
			n.logger.Error("listener stopped", zap.String("listener", l.Name), zap.Error(err))
		}
	}()
	n.logger.Info("listening", zap.String("listener", l.Name), zap.String("addr", ln.Addr().String()))
	return nil
}

// handleControllerRequest serves a CONTROLLER-listener request: raft RPCs go
// to the raft node, the rest to the controller.
func (n *Node) handleControllerRequest(ctx context.Context, req *protocol.Request) (protocol.Response, error) {
	var (
		resp kmsg.Response
		err  error
	)
	if _, isRaft := raft.ServedVersions[req.Key]; isRaft {
		resp, err = n.raft.HandleRequest(ctx, req.Msg)
	} else if r, ok := req.Msg.(*kmsg.DescribeClusterRequest); ok {
		resp = describeControllers(r, n.nc.ClusterID, req.Listener, n.raft.LeaderAndEpoch().LeaderID, n.cache.Image(), n.voterAddrs())
	} else {
		var mq *quota.Mutation
		if n.broker.quotas != nil {
			ctx, mq = n.broker.quotas.withMutationQuota(ctx, req)
		}
		if loggers := n.controllerBrokerLoggers(req); loggers == nil {
			resp, err = n.ctrl.Handle(ctx, req.Msg)
		} else {
			resp = loggers.rest.ResponseKind()
			if len(loggers.rest.Resources) > 0 {
				resp, err = n.ctrl.Handle(ctx, loggers.rest)
			}
			if err == nil {
				out := resp.(*kmsg.IncrementalAlterConfigsResponse)
				out.Resources = append(loggers.done, out.Resources...)
			}
		}
		if t := mq.ThrottleMs(); t > 0 && err == nil {
			// ControllerApis.sendResponseMaybeThrottleWithControllerQuota
			if st, ok := resp.(kmsg.SetThrottleResponse); ok {
				st.SetThrottle(int32(t))
			}
			n.broker.quotas.mutation.Throttled(req.Principal.Name, req.ClientID, t)
		}
	}
	if err != nil {
		return protocol.Response{}, err
	}
	resp.SetVersion(req.Version)
	return protocol.Response{Msg: resp}, nil
}

// controllerLoggers is an IncrementalAlterConfigs on the CONTROLLER
// listener split as ControllerApis.handleIncrementalAlterConfigs splits it:
// the BROKER_LOGGER resources answered by this node (broker_loggers.go), the
// rest for the controller.
type controllerLoggers struct {
	done []kmsg.IncrementalAlterConfigsResponseResource
	rest *kmsg.IncrementalAlterConfigsRequest
}

// controllerBrokerLoggers applies req's BROKER_LOGGER resources, if it is an
// IncrementalAlterConfigs with any; nil otherwise.
func (n *Node) controllerBrokerLoggers(req *protocol.Request) *controllerLoggers {
	r, ok := req.Msg.(*kmsg.IncrementalAlterConfigsRequest)
	if !ok || n.broker == nil || !slices.ContainsFunc(r.Resources, func(rs kmsg.IncrementalAlterConfigsRequestResource) bool {
		return rs.ResourceType == kmsg.ConfigResourceTypeBrokerLogger
	}) {
		return nil
	}
	rest := *r
	rest.Resources = nil
	out := &controllerLoggers{rest: &rest}
	for i := range r.Resources {
		rs := &r.Resources[i]
		if rs.ResourceType != kmsg.ConfigResourceTypeBrokerLogger {
			rest.Resources = append(rest.Resources, *rs)
			continue
		}
		out.done = append(out.done, n.broker.brokerLoggerResult(req, r.ValidateOnly, rs))
	}
	return out
}

// activeController reports the raft leader and its CONTROLLER address (the
// leader's endpoint from the voter set or its own messages: with dynamic
// voters it need not be in the configuration).
func (n *Node) activeController() (int32, string, bool) {
	return n.raft.LeaderEndpoint()
}

// voterAddrs are the voters' addresses on the default controller listener
// (DescribeCluster on the CONTROLLER listener).
func (n *Node) voterAddrs() map[int32]config.HostPort {
	out := map[int32]config.HostPort{}
	listener := firstOr(n.cfg.ControllerListenerNames, "CONTROLLER")
	for _, v := range n.raft.Voters().Voters() {
		if e, ok := v.Endpoint(listener); ok {
			out[v.Key.ID] = config.HostPort{Host: e.Host, Port: int32(e.Port)}
		} else if hp, ok := n.cfg.QuorumVoters[v.Key.ID]; ok {
			out[v.Key.ID] = hp
		}
	}
	return out
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// localControllerEndpoints are this controller's advertised controller
// listeners (KafkaRaftManager's localListeners); an empty host is the
// machine's host name, as Kafka advertises it.
func localControllerEndpoints(cfg *config.Config) []raft.Endpoint {
	if !cfg.ProcessRoles.IsController() {
		return nil
	}
	var out []raft.Endpoint
	for _, l := range cfg.AdvertisedControllerListeners {
		host := l.Host
		if host == "" {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
		out = append(out, raft.Endpoint{Name: l.Name, Host: host, Port: uint16(l.Port)})
	}
	return out
}

// registration builds this broker's BrokerRegistration request.
func (n *Node) registration() *kmsg.BrokerRegistrationRequest {
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID = n.cfg.NodeID
	req.ClusterID = n.nc.ClusterID
	if _, err := rand.Read(req.IncarnationID[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	for _, l := range n.cfg.AdvertisedListeners {
		rl := kmsg.NewBrokerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
		rl.SecurityProtocol = securityProtocolID(n.cfg.ListenerSecurityProtocols[l.Name])
		req.Listeners = append(req.Listeners, rl)
	}
	for _, f := range supportedFeatures {
		rf := kmsg.NewBrokerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		req.Features = append(req.Features, rf)
	}
	if rack := n.cfg.String("broker.rack"); rack != "" {
		req.Rack = &rack
	}
	// KIP-858: the online log dirs only, as LogManager.directoryIdsSet holds the
	// live dirs' ids; a dir offline from the start is not registered
	for _, dir := range n.cfg.LogDirs {
		if n.logs != nil && n.logs.DirOffline(dir) {
			continue
		}
		if id, ok := n.nc.DirectoryIDs[dir]; ok {
			req.LogDirs = append(req.LogDirs, id)
		}
	}
	req.PreviousBrokerEpoch = -1
	if n.logs != nil {
		req.PreviousBrokerEpoch = n.logs.PreviousBrokerEpoch()
	}
	return req
}

func securityProtocolID(name string) int16 {
	switch name {
	case "SSL":
		return 1
	case "SASL_PLAINTEXT":
		return 2
	case "SASL_SSL":
		return 3
	}
	return 0
}

// Shutdown stops the node gracefully: a controlled shutdown with the
// controller, then client listeners stop accepting and drain in-flight
// requests, then logs are flushed and closed (with the clean-shutdown
// marker), then the controller, raft and the CONTROLLER listeners stop.
func (n *Node) Shutdown(ctx context.Context) error {
	n.shutdownOnce.Do(func() { n.shutdownErr = n.shutdown(ctx) })
	return n.shutdownErr
}

func (n *Node) shutdown(ctx context.Context) error {
	var errs []error
	if n.lifecycle != nil {
		// Controlled shutdown: the controller moves leadership away and
		// fences us, so the next start registers at once instead of
		// waiting out broker.session.timeout.ms.
		n.lifecycle.beginShutdown()
		select {
		case <-n.lifecycle.stopped:
		case <-ctx.Done():
		case <-time.After(controlledShutdownTimeout):
			n.logger.Warn("controlled shutdown not acknowledged by the controller in time; shutting down anyway")
		}
	}
	// Closing the replica manager first answers parked long-poll fetches
	// and acks=all produces at once, so draining the listeners is quick.
	if n.broker != nil && n.broker.groups != nil {
		n.broker.groups.Close()
	}
	if n.broker != nil && n.broker.txn != nil {
		n.broker.txn.Close()
	}
	if n.broker != nil && n.broker.shareCoord != nil {
		n.broker.shareCoord.Close()
	}
	if n.broker != nil && n.broker.peers != nil {
		n.broker.peers.Close()
	}
	if n.replicas != nil {
		n.replicas.Close()
	}
	for _, s := range n.clientServers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if n.cancel != nil {
		n.cancel()
	}
	if n.logs != nil {
		if n.lifecycle != nil {
			n.logs.SetBrokerEpoch(n.lifecycle.epoch())
		}
		if err := n.logs.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing logs: %w", err))
		}
	}
	if n.ctrl != nil {
		if err := n.ctrl.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	for _, s := range n.controllerServers {
		if err := s.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if n.raft != nil {
		if err := n.raft.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if n.channel != nil {
		n.channel.Close()
	}
	n.wg.Wait()
	return errors.Join(errs...)
}

// cacheFeeder replays committed metadata batches into the broker's image.
//
// While it is behind the high watermark (a restart or a new broker catching
// up) it defers publishing, so a long log builds one image per catch-up
// instead of one per batch (Kafka's MetadataLoader publishes when caught up);
// every maxDeferredBatches batches, and flushDelay after the last deferred
// one, it publishes anyway, so readers never wait long and a log ending in
// control records (which listeners do not see) still gets published.
type cacheFeeder struct {
	cache         *metadatacache.Cache
	logger        *zap.Logger
	highWatermark func() int64 // nil: publish every batch

	// mu is held while a batch is applied to the image (so the image's
	// subscribers run under it) and while raft's high watermark is read:
	// it ranks before both (lockrank.MetadataFeeder).
	mu       lockrank.Mutex
	deferred int
	timer    *time.Timer
}

const (
	maxDeferredBatches = 1000
	flushDelay         = 20 * time.Millisecond
)

func (f *cacheFeeder) HandleCommit(b raft.Batch) {
	recs := make([]metadatacache.Record, 0, len(b.Records))
	for i, raw := range b.Records {
		r, err := metadatacache.DecodeRecord(raw)
		if err != nil {
			// Kafka treats an undecodable committed record as fatal for
			// the metadata loader; we keep serving the last good image
			// and say loudly where the log is bad.
			f.logger.Error("undecodable metadata record", zap.Int64("offset", b.BaseOffset+int64(i)), zap.Error(err))
			return
		}
		recs = append(recs, r)
	}
	mb := metadatacache.Batch{
		BaseOffset: b.BaseOffset, LastOffset: b.LastOffset, Epoch: b.Epoch,
		AppendTimeMs: b.AppendTimeMs, Records: recs,
	}
	f.mu.Lock()
	behind := f.highWatermark != nil && b.LastOffset+1 < f.highWatermark()
	var err error
	if behind && f.deferred < maxDeferredBatches {
		f.deferred++
		err = f.cache.ApplyDeferred(mb)
		if f.timer == nil {
			f.timer = time.AfterFunc(flushDelay, f.flush)
		} else {
			f.timer.Reset(flushDelay)
		}
	} else {
		f.deferred = 0
		err = f.cache.Apply(mb)
	}
	f.mu.Unlock()
	if err != nil {
		f.logger.Error("applying metadata batch", zap.Int64("base_offset", b.BaseOffset), zap.Error(err))
	}
}

func (f *cacheFeeder) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deferred = 0
	f.cache.Flush()
}

func (f *cacheFeeder) HandleLeaderChange(raft.LeaderAndEpoch) {}

// requestorFunc adapts a function to kmsg.Requestor.
type requestorFunc func(context.Context, kmsg.Request) (kmsg.Response, error)

func (f requestorFunc) Request(ctx context.Context, r kmsg.Request) (kmsg.Response, error) {
	return f(ctx, r)
}

// controlledShutdownTimeout bounds how long Shutdown waits for the
// controller to grant a controlled shutdown.
const controlledShutdownTimeout = 10 * time.Second

// supportedFeatures are the feature ranges this node registers with
// (BrokerRegistration Features) and advertises (ApiVersions): what
// kgo-broker implements (controller.SupportedFeatures).
var supportedFeatures = controller.SupportedFeatures()

// storageDefaults is the broker-wide topic config (the log.* synonyms) as the
// storage Manager's default: logs found at startup and the partition dirs it
// deletes (log.segment.delete.delay.ms) follow it until the metadata image gives
// each topic its own. Keys storage does not know, or bad values (which
// replication logs when it applies them), are skipped.
func storageDefaults(topicDefaults map[string]string) storage.Config {
	return storage.DefaultConfig().WithValid(topicDefaults, nil)
}

// fetchSessionCacheSlots is the fetch session capacity Kafka's broker has
// for max.incremental.fetch.session.cache.slots: BrokerServer splits the
// slots over 8 FetchSessionCacheShards of slots/8 each (KIP-227 sessions,
// sharded since Kafka 3.8), so 7 slots give no session at all. Sessions
// are one cache here; the capacity is the shards' sum (replication.Config
// takes a negative value for none).
func fetchSessionCacheSlots(slots int64) int {
	const kafkaFetchSessionCacheShards = 8
	n := int(slots / kafkaFetchSessionCacheShards * kafkaFetchSessionCacheShards)
	if n <= 0 {
		return -1
	}
	return n
}
