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
//	any ──leader != this node──► Follower: handed to a replica fetcher
//	          for the leader (see Follower state machine)
//	any ──topic deleted, recreated with a new id, or replica moved away──►
//	          removed: the log is deleted
//
// Config changes (topic ConfigRecords or broker defaults) are applied to the
// log in place. Every transition wakes the requests parked on the partition.
// A new log's high watermark is read from replication-offset-checkpoint
// (clamped to the log); StartReplication writes that file every
// replica.high.watermark.checkpoint.interval.ms and Close once more.
//
// # Replication between brokers
//
// StartReplication (fetcher_manager.go) starts the follower side and the
// leader side. After every image, OnImage hands the partitions whose
// leadership changed to the fetcherManager (Kafka's ReplicaFetcherManager),
// which runs one replicaFetcher goroutine per (leader broker, fetcher id),
// fetcher id = hash(topic, partition) mod num.replica.fetchers, dialing the
// leader's inter.broker.listener.name endpoint from the image, and stops
// fetchers left without partitions.
//
// Follower state machine, per partition in a fetcher (fetcher.go):
//
//	image: follower of L, epoch E ──► added: truncate to the high watermark
//	    if the log has no leader epochs (KIP-101 fallback); fetch offset =
//	    log end, last fetched epoch = latest epoch in the log
//	  (leader without KIP-320, Fetch < v12: first OffsetForLeaderEpoch for
//	    the last fetched epoch, truncating by the same rules as for a
//	    diverging epoch until our latest epoch is the leader's)
//	Fetching ──Fetch (ReplicaState{id, broker epoch}, current leader epoch E,
//	    last fetched epoch, KIP-227 session)──► answer:
//	  records / HW ──► AppendAsFollower (offsets and leader epochs as the
//	      leader assigned them; the epoch cache follows the batches), HW =
//	      min(leader HW, log end), log start follows the leader's ──► Fetching
//	  DivergingEpoch (KIP-320) ──► truncate (KIP-279 rules, see
//	      truncateOnDivergence) ──► Fetching at the new log end
//	  OFFSET_OUT_OF_RANGE ──► ListOffsets latest/earliest as a replica:
//	      truncate to the leader's end if ours is longer, else truncate
//	      fully and start at the leader's log start ──► Fetching
//	  FENCED_LEADER_EPOCH ──► Fenced: not fetched until an image brings a
//	      new leader epoch (which re-adds the partition)
//	  NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, other errors ──►
//	      delayed replica.fetch.backoff.ms (or until re-added by an image)
//	image: this node leads, partition removed, or no leader ──► removed
//
// Appends and truncations run under Partition.mu (read) after checking that
// the partition still follows with the fetch state's leader epoch, so an
// answer from a previous leadership is never applied. The follower session
// (fetcher_session.go) sends a full request first, then only partitions
// whose fetch state changed, and lists the others it dropped as forgotten;
// a session error or a new connection starts over with a full request.
//
// Leader side (isr.go): a follower's fetch records its log end offset, its
// broker epoch and when it was last caught up with the leader's log end
// (Kafka's Replica.updateFetchStateOrThrow). The high watermark is the
// smallest log end offset over the maximal ISR: the committed ISR plus the
// members of a pending expansion. A follower outside the ISR that reached
// the high watermark and the start of the current leader epoch, on a
// live, unfenced broker not in controlled shutdown whose epoch it fetched
// with (KIP-903), is proposed for the ISR; every replica.lag.time.max.ms/2
// the ISR members neither at the log end nor caught up within
// replica.lag.time.max.ms are proposed for removal. One change per
// partition is pending at a time; alterPartitionManager sends them to the
// controller in AlterPartition v2/v3 (topic ids, leader and partition
// epochs, broker epochs), one request in flight, retrying transport and
// top-level errors after replica.fetch.backoff.ms. The ISR changes when
// the controller's PartitionChangeRecord reaches the image, which also
// ends the pending state; OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA
// drop it at once, INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH,
// UNKNOWN_TOPIC_* and NEW_LEADER_ELECTED wait for the image. acks=all
// completes when the high watermark passes the batch, answering
// NOT_ENOUGH_REPLICAS (before the append) or NOT_ENOUGH_REPLICAS_AFTER_APPEND
// when the ISR is below min.insync.replicas.
//
// The high watermark is the smallest log end offset over the ISR (the
// leader's own, and for each follower the offset of its last fetch); it only
// moves forward. With one replica (ISR = {leader}) it is the log end offset
// right after each append. Every store of it is passed to the log
// (highWatermark.Store -> storage.Log.UpdateHighWatermark). The last stable
// offset is the high watermark while there are no transactions.
//
// # Transactions
//
// txn.go is the leader's side of transactions (Kafka's
// ReplicaManager.handleProduceAppend and the appends of WriteTxnMarkers):
//
//	Produce (transactional batches, one producer per request, else
//	  INVALID_PRODUCER_ID_MAPPING; no transactional id:
//	  TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition)
//	  └─ per partition: Log.MaybeStartTransactionVerification
//	       nothing open here ──► guard ──► TxnVerifier.AddOrVerify
//	         (the broker's AddPartitionsToTxnManager; VerifyOnly for
//	          produce v3-11, add for v12+ = transaction.version 2)
//	       open here ──► no guard, no request
//	  └─ failures: INVALID_TXN_STATE ("Partition was not added to the
//	     transaction"); NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE,
//	     COORDINATOR_LOAD_IN_PROGRESS, NETWORK_EXCEPTION (and
//	     CONCURRENT_TRANSACTIONS before v12) as NOT_ENOUGH_REPLICAS with the
//	     underlying error, which old clients retry; v12 retries
//	     CONCURRENT_TRANSACTIONS itself every add.partitions.to.txn.retry.backoff.ms
//	  └─ append with the guard: the log refuses it if a marker cleared
//	     the verification meanwhile (no hanging transaction)
//	AppendTxnMarkers (WriteTxnMarkers): control batch per partition as
//	  leader, origin coordinator, acks=all up to the request timeout
//	VerifyTransaction + AppendCoordinator(guard): the same for the
//	  coordinator runtime's transactional writes (TxnOffsetCommit)
//	Fetch READ_COMMITTED: up to the last stable offset, with the aborted
//	  transactions of the data read (storage.Log.ReadCommitted)
//	ActiveProducers (DescribeProducers): any local replica's producer state
//
// TxnSettings (SetTxnSettings) carries the verifier and
// transaction.partition.verification.enable; without a verifier nothing is
// verified. The verifier is called holding no lock.
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
//	fetcherManager.mu  (fetcher assignments; OnImage's hook, after rm.mu
//	                    is released)
//	  → Partition.mu → Partition.stateMu (reads leadership, truncates)
//	  → replicaFetcher.mu (a leaf: the fetcher's partition states)
//	alterPartitionManager.mu is a leaf. Fetcher goroutines take
//	replicaFetcher.mu, or Partition.mu then stateMu, never both, and
//	never fetcherManager.mu; network requests hold no lock. stateMu guards
//	the pending ISR change (isrChg) with the followers' fetch state.
//
// Request paths take ReplicaManager.mu only to look a partition up and
// release it before taking Partition.mu; parked requests hold no lock.
package replication
