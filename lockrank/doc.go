// Package lockrank gives the project's mutexes a rank, so that the lock
// order of docs/LOCKING.md is one the code enforces instead of one it
// promises: under -tags invariants (and the race detector, which CI runs)
// taking a lock while holding one of equal or higher rank panics, naming
// both; in production builds Mutex and RWMutex are sync's, with one unused
// field.
//
// A lock is ranked by calling SetRank once, before it is shared (where its
// owner is constructed). An unranked lock (rank 0) is not checked. A Leaf
// lock may be taken while holding anything, and nothing may be taken while
// holding one: leaves guard a few fields and never call out.
//
//	rank order (lower first)                      docs/LOCKING.md
//	CacheDeliver -> Cache                         metadatacache
//	ControllerDecide -> ControllerState           controller
//	Fetchers -> ReplicaManager -> Partition ->
//	  PartitionState -> LogManager -> Cleaner ->
//	  LogFlush -> LogCommit -> Log                replication, storage
//	Leaf                                          everything that never calls out
//
// The check keeps, per goroutine, the ranks it holds (found from the
// goroutine id in runtime.Stack, which is slow: tests only).
package lockrank
