package lockrank

import "fmt"

// Rank orders locks: a goroutine takes them in increasing rank.
type Rank uint16

// The ranks, lowest (taken first) to highest. Gaps leave room. Each comment
// says what may be taken under the lock; docs/LOCKING.md is the same table.
const (
	Unranked Rank = 0

	// MetadataFeeder is held while a committed metadata batch is applied to
	// the broker's image: raft's high watermark is read and the image
	// subscribers run under it.
	MetadataFeeder Rank = 50 // broker.cacheFeeder.mu

	ControllerDecide Rank = 100 // controller.Controller.mu (held across the raft append)
	ControllerState  Rank = 110 // controller.Controller.stateMu (held while replaying into the controller's image)

	CacheDeliver Rank = 200 // metadatacache.Cache.deliverMu (held while image subscribers run)
	Cache        Rank = 210 // metadatacache.Cache.mu

	RaftNode Rank = 300 // raft.Node.mu (the core, the metadata log and snapshot files)
	RaftDial Rank = 310 // raft.transportConn.mu (dialling one voter)

	GroupCoordinator   Rank = 350 // group.Coordinator.mu (takes the clock's lock)
	MarkerChannel      Rank = 360 // txn.markerChannel.mu (takes the clock's lock)
	CoordinatorRuntime Rank = 370 // coordinator.Runtime.mu (the loop map; takes a loop's mu)

	// DynamicConfigs is held while the dynamic broker configs of an image
	// are applied (the fetcher pool, the log cleaner, the connection limits).
	DynamicConfigs Rank = 390 // broker.dynamicConfigs.mu

	Fetchers       Rank = 400 // replication.fetcherManager.mu
	ReplicaManager Rank = 410 // replication.ReplicaManager.mu
	Partition      Rank = 420 // replication.Partition.mu
	AlterPartition Rank = 425 // replication.alterPartitionManager.mu (re-queues checking Partition.stateMu)
	PartitionState Rank = 430 // replication.Partition.stateMu

	LogMaintain       Rank = 470 // storage.Manager.maintainLock
	LogCheckpoint     Rank = 480 // storage.Manager.ckptMu
	CleanerCheckpoint Rank = 490 // storage.Manager.cleaner.ckptMu
	LogManager        Rank = 500 // storage.Manager.mu
	Cleaner           Rank = 510 // storage.Manager.cleaner.mu
	LogFlush          Rank = 520 // storage.Log.flushMu
	LogCommit         Rank = 530 // storage.Log.commit (group commit rounds)
	Log               Rank = 540 // storage.Log.mu

	ControllerChannel Rank = 800 // broker.controllerChannel.mu (closes protocol clients)
	BrokerClients     Rank = 810 // broker.brokerClients.mu (closes protocol clients)

	MemFS   Rank = 900 // storage/vfs.MemFS.mu (takes file nodes' locks)
	MemFile Rank = 910 // storage/vfs.memFile.mu (takes its node's lock)

	ClientQuotas Rank = 950 // quota.ClientManager.mu (takes a sensor's lock)

	// Leaf and the ranks above it are leaves: they guard a few fields and
	// never call out, so nothing may be taken while holding one. Any number
	// of them may be taken under other locks; they are named only so that
	// a panic says which one was held.
	Leaf Rank = 1000

	LogDurable       Rank = 1001 // storage.Log.durable
	DirDeletions     Rank = 1002 // storage.dirDeletions.mu
	CleanerThrottle  Rank = 1003 // storage.throttler.mu
	MemNode          Rank = 1004 // storage/vfs.memNode.mu
	FaultSwitch      Rank = 1005 // storage/vfs.Switch.mu
	LoadErrors       Rank = 1006 // storage.Manager.loadDir's emu (the log loaders' errors)
	Watchers         Rank = 1010 // replication.watchers.mu
	FetchSessions    Rank = 1011 // replication.sessionCache.mu
	ProducerIDBlocks Rank = 1012 // replication.producerIDs.mu
	FetcherParts     Rank = 1013 // replication.replicaFetcher.mu
	LogMovers        Rank = 1017 // replication.ReplicaManager.moversMu
	CacheNotify      Rank = 1020 // metadatacache.Cache.notifyMu
	RaftTransport    Rank = 1030 // raft.ClientTransport.mu
	CoordinatorLoop  Rank = 1040 // coordinator.loop.mu
	ManualClock      Rank = 1041 // coordinator.ManualClock.mu
	MemLog           Rank = 1042 // coordinator.MemLog.mu
	TxnCoordinator   Rank = 1043 // txn.Coordinator.mu
	ShareCoordinator Rank = 1047 // sharecoord.Coordinator.mu
	ConnSet          Rank = 1050 // protocol.Server.mu
	ClientCalls      Rank = 1051 // protocol.Client.mu
	Lifecycle        Rank = 1060 // broker.lifecycle.mu
	TxnVerifier      Rank = 1061 // broker.txnVerifier.mu
	InflightTopics   Rank = 1062 // broker.inflightTopics.mu
	JWKS             Rank = 1070 // security.JWTValidator.mu
	QuotaSensor      Rank = 1080 // quota.sensor.mu (one client's rate)
	ConnQuotas       Rank = 1081 // quota.ConnectionQuotas.mu (connection counts; waited on for a free slot)
	ReplicationQuota Rank = 1082 // quota.ReplicationQuota.mu (a replication throttle's rate)
	LogLevels        Rank = 1090 // logging.Levels.mu (the loggers' run-time levels)

	// Share partitions (KIP-932): each lock is held only to read or change
	// its own state; the Persister and the log are called with none held.
	ShareManager      Rank = 1110 // share.Manager.mu (the share partitions by key, the parked fetches)
	SharePartition    Rank = 1111 // share.Partition.mu (one share partition's in-flight records)
	ShareSessions     Rank = 1112 // share.SessionCache.mu (share sessions, KIP-932)
	ShareMemPersister Rank = 1113 // share.MemPersister.mu (the in-memory share state)
)

var names = map[Rank]string{
	MetadataFeeder:   "broker.cacheFeeder.mu",
	ControllerDecide: "controller.Controller.mu", ControllerState: "controller.Controller.stateMu",
	CacheDeliver: "metadatacache.Cache.deliverMu", Cache: "metadatacache.Cache.mu",
	RaftNode: "raft.Node.mu", RaftDial: "raft.transportConn.mu",
	GroupCoordinator: "group.Coordinator.mu", MarkerChannel: "txn.markerChannel.mu",
	CoordinatorRuntime: "coordinator.Runtime.mu",
	DynamicConfigs:     "broker.dynamicConfigs.mu",
	Fetchers:           "replication.fetcherManager.mu", ReplicaManager: "replication.ReplicaManager.mu",
	Partition: "replication.Partition.mu", AlterPartition: "replication.alterPartitionManager.mu",
	PartitionState: "replication.Partition.stateMu",
	LogMaintain:    "storage.Manager.maintainLock", LogCheckpoint: "storage.Manager.ckptMu",
	CleanerCheckpoint: "storage.Manager.cleaner.ckptMu",
	LogManager:        "storage.Manager.mu", Cleaner: "storage.Manager.cleaner.mu", LogFlush: "storage.Log.flushMu",
	LogCommit: "storage.Log.commit", Log: "storage.Log.mu",
	ControllerChannel: "broker.controllerChannel.mu", BrokerClients: "broker.brokerClients.mu",
	MemFS: "vfs.MemFS.mu", MemFile: "vfs.memFile.mu",

	Leaf:       "a leaf lock",
	LogDurable: "storage.Log.durable (a leaf)", DirDeletions: "storage.dirDeletions.mu (a leaf)",
	CleanerThrottle: "storage.throttler.mu (a leaf)", MemNode: "vfs.memNode.mu (a leaf)",
	FaultSwitch: "vfs.Switch.mu (a leaf)", LoadErrors: "storage.Manager.loadDir emu (a leaf)", Watchers: "replication.watchers.mu (a leaf)",
	FetchSessions: "replication.sessionCache.mu (a leaf)", ProducerIDBlocks: "replication.producerIDs.mu (a leaf)",
	FetcherParts: "replication.replicaFetcher.mu (a leaf)", LogMovers: "replication.ReplicaManager.moversMu (a leaf)", CacheNotify: "metadatacache.Cache.notifyMu (a leaf)",
	RaftTransport: "raft.ClientTransport.mu (a leaf)", CoordinatorLoop: "coordinator.loop.mu (a leaf)",
	ManualClock: "coordinator.ManualClock.mu (a leaf)", MemLog: "coordinator.MemLog.mu (a leaf)",
	TxnCoordinator: "txn.Coordinator.mu (a leaf)", ConnSet: "protocol.Server.mu (a leaf)",
	ClientCalls: "protocol.Client.mu (a leaf)", Lifecycle: "broker.lifecycle.mu (a leaf)",
	TxnVerifier: "broker.txnVerifier.mu (a leaf)", InflightTopics: "broker.inflightTopics.mu (a leaf)",
	JWKS: "security.JWTValidator.mu (a leaf)", LogLevels: "logging.Levels.mu (a leaf)",
	ReplicationQuota: "quota.ReplicationQuota.mu (a leaf)",
	ShareCoordinator: "sharecoord.Coordinator.mu (a leaf)",
	ShareManager:     "share.Manager.mu (a leaf)", SharePartition: "share.Partition.mu (a leaf)",
	ShareSessions: "share.SessionCache.mu (a leaf)", ShareMemPersister: "share.MemPersister.mu (a leaf)",
}

// IsLeaf reports whether r is a leaf: nothing may be taken while holding it.
func (r Rank) IsLeaf() bool { return r >= Leaf }

func (r Rank) String() string {
	if n, ok := names[r]; ok {
		return n
	}
	return fmt.Sprintf("rank %d", uint16(r))
}
