// Package replication is the broker's ReplicaManager (Kafka's
// kafka.server.ReplicaManager and kafka.cluster.Partition): the partitions
// this node holds a replica of, as leader or follower, and the produce,
// fetch and offset requests served on them.
//
//	metadatacache.Cache ──OnImage──► ReplicaManager ──► Partition (one per replica)
//	                                   │  │  │             │ mu: leadership, ISR
//	  broker/00_produce ──Produce──────┘  │  │             │ hw: high watermark
//	  broker/01_fetch ────Fetch───────────┘  │             │ watch: parked requests
//	  broker/02,23,35 ────ListOffsets, ...───┘             └─► storage.Log
//
// # Partition state machine
//
// The metadata image is the only input that changes leadership. OnImage
// compares each partition registration that lists this node as a replica
// with the local Partition:
//
//	(none) ──image lists this node──► created: log opened or created with
//	                                  the topic's effective config
//	any ──leader == this node, new leader epoch──► Leader: the new epoch is
//	          recorded in leader-epoch-checkpoint at the log end offset
//	          (AssignEpochStartOffset), followers' state is reset, and
//	          ListOffsets answers OFFSET_NOT_AVAILABLE until the high
//	          watermark reaches that offset (KIP-207)
//	any ──leader != this node──► Follower: recorded (the replica fetchers
//	          that make followers catch up come later)
//	any ──topic deleted, recreated with a new id, or replica moved away──►
//	          removed: the log is deleted
//
// Config changes (topic ConfigRecords or broker defaults) are applied to the
// log in place. Every transition wakes the requests parked on the partition.
//
// The high watermark is the smallest log end offset over the ISR (the
// leader's own, and for each follower the offset of its last fetch); it only
// moves forward. With one replica (ISR = {leader}) it is the log end offset
// right after each append. The last stable offset is the high watermark
// while there are no transactions.
//
// # Purgatory
//
// Kafka parks a produce with acks=all (DelayedProduce) and a fetch that has
// fewer than min_bytes ready (DelayedFetch) in purgatories keyed by
// partition. Here the request's own goroutine parks on a waiter registered
// with each partition it concerns; appends, high watermark moves and
// leadership changes wake the waiters (a non-blocking send on a one-slot
// channel), and the request re-checks its condition under the partition's
// lock. Timeouts are time.Timers, which tests fake with testing/synctest.
// Nothing polls.
//
// # Fetch sessions
//
// Incremental fetch sessions (KIP-227) are kept in sessionCache
// (sessions.go), Kafka's FetchSessionCache: sessionless, full and
// incremental contexts, the session epoch, forgotten topics, and the
// eviction of unused or smaller sessions when the cache is full.
//
// # Zero copy
//
// A fetch never decodes records. Reads return storage.FileRegions; Fetch
// returns a FetchResult whose Body encodes the response by hand for the
// request version around those regions and streams them with sendfile
// (fetchbody.go).
//
// # Locks
//
// Acquire in this order, never the reverse:
//
//	ReplicaManager.mu  (partitions map, image; written by OnImage only)
//	  → Partition.mu   (leadership, ISR, log pointer; read-locked across
//	                    every append and read, write-locked by OnImage)
//	    → Partition.stateMu (high watermark moves, followers' fetch state)
//	      → storage.Log's own locks
//	Partition.watch.mu, sessionCache.mu and producerIDs.mu are leaves: no
//	other lock is taken while holding them.
//
// Request paths take ReplicaManager.mu only to look a partition up and
// release it before taking Partition.mu; parked requests hold no lock.
package replication
