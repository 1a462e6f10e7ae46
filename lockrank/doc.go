// Package lockrank gives the project's mutexes a rank, so that the lock
// order of docs/LOCKING.md is one the code enforces instead of one it
// promises: under -tags invariants (and the race detector, which CI runs)
// taking a lock while holding one of equal or higher rank panics, naming
// both; in production builds Mutex and RWMutex are sync's, with one unused
// field.
//
// A lock is ranked by calling SetRank once, before it is shared (where its
// owner is constructed). An unranked lock (rank 0) is not checked. A leaf
// (Leaf and the named ranks above it) may be taken while holding anything,
// and nothing may be taken while holding one: leaves guard a few fields and
// never call out.
//
//	rank order (lower first)                           docs/LOCKING.md
//	MetadataFeeder                                     broker (metadata feed)
//	ControllerDecide -> ControllerState                controller
//	CacheDeliver -> Cache                              metadatacache
//	RaftNode, RaftDial                                 raft
//	GroupCoordinator, MarkerChannel ->
//	  CoordinatorRuntime                               group, txn, coordinator
//	DynamicConfigs                                     broker (dynamic configs)
//	Fetchers -> ReplicaManager -> Partition ->
//	  AlterPartition -> PartitionState                 replication
//	LogMaintain -> LogCheckpoint -> CleanerCheckpoint ->
//	  LogManager -> Cleaner -> LogFlush -> LogCommit ->
//	  Log                                              storage
//	ControllerChannel, BrokerClients                   broker (clients)
//	MemFS, MemFile                                     storage/vfs
//	Leaf, LogDurable, ..., InflightTopics              leaves, everywhere
//
// The check keeps, per goroutine, the ranks it holds (held.go), in shards
// whose locks the race detector does not see, so that the check never
// orders two goroutines and hides a data race between them. The goroutine
// id is read from the runtime's g at an offset found once at start-up (on
// amd64 and arm64: goid_fast.go), a few nanoseconds; elsewhere it is parsed
// from runtime.Stack, which costs microseconds. A checked Lock+Unlock costs
// about 40 ns under -tags invariants (7 ns unchecked) and 1 µs under the
// race detector (0.4 µs unchecked).
package lockrank
