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
// Leader side (isr.go), Kafka 4.4's Partition and Replica:
//
//   - A follower's fetch records its log end offset (the fetch offset), its
//     broker epoch, and when it was last caught up with the leader's log end
//     (Replica.updateFetchStateOrThrow: at the leader's log end now, or at
//     the leader's log end as of its previous fetch then). A fetch with a
//     broker epoch older than the follower's registration (a previous
//     incarnation) fails with NOT_LEADER_OR_FOLLOWER and changes nothing
//     (KIP-903). A fetch answered with a diverging epoch records nothing.
//   - ISR expansion (maybeExpandIsr, isFollowerInSync, canAddReplicaToIsr):
//     no change pending, an assigned replica not in the ISR, its log end at
//     or past the high watermark and the start of the current leader epoch,
//     on a broker that is registered, not fenced, not in controlled shutdown
//     (KIP-841), and fetching with its registration's broker epoch.
//   - ISR shrink (maybeShrinkIsr, every replica.lag.time.max.ms/2): the ISR
//     members neither at the leader's log end nor caught up within
//     replica.lag.time.max.ms.
//   - A new leader knows nothing of its followers: each one's state starts
//     at its first fetch, an ISR member's as caught up when the leadership
//     began. A leader starting another epoch keeps their log end offsets and
//     restarts their clocks (caught up now if in the ISR, never otherwise;
//     resetReplicaState).
//   - One change per partition is pending at a time; alterPartitionManager
//     sends them to the controller in AlterPartition v2/v3 (topic ids, leader
//     and partition epochs, broker epochs), one request in flight, retrying
//     transport and top-level errors after replica.fetch.backoff.ms. An
//     accepted change commits the ISR and partition epoch of the answer at
//     once (handleAlterPartitionUpdate), and an image with an older partition
//     epoch is then skipped; OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA
//     drop it at once, INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH,
//     UNKNOWN_TOPIC_* and NEW_LEADER_ELECTED wait for the image.
//
// The high watermark (Partition.maybeIncrementLeaderHW) is the smallest log
// end offset over the followers it must wait for: those of the maximal ISR
// (the committed ISR plus the members of a pending expansion, so that it
// never counts on a replica the controller may not admit, nor drops one it
// has not removed) and those outside it that are caught up within
// replica.lag.time.max.ms and eligible to join it (shouldWaitForReplicaToJoinIsr:
// a follower about to join is not left behind a high watermark it never
// reached). It does not move while the committed ISR is below the effective
// min.insync.replicas (min of the config and the replica count; KAFKA-15583,
// Kafka 3.7's "strict min ISR"), never past the leader's log end offset or an
// append still waiting for its flush.messages sync, and never backwards. So
// acks=all completes when the high watermark passes the batch, answering
// NOT_ENOUGH_REPLICAS before the append when the ISR is below
// min.insync.replicas and NOT_ENOUGH_REPLICAS_AFTER_APPEND when it fell below
// after the high watermark passed; a batch appended before the ISR fell below
// it waits for the ISR to recover or times out. With one replica the high
// watermark is the log end offset right after each append. The last stable
// offset is the high watermark while there are no transactions.
//
// A follower's high watermark is the leader's, capped at its own log end.
// Truncation (truncateFollower, Partition.truncateTo) always reaches the log,
// even at or past its end: that drops leader epochs starting at the log end
// that the leader does not have (a replica that led an epoch and appended
// nothing in it before another leader was elected), which would otherwise
// make its last fetched epoch diverge at its own log end forever and keep it
// out of the ISR. A diverging-epoch answer that leaves the fetch state
// unchanged is backed off and logged rather than refetched at once.
//
// # Invariants
//
// invariants.go checks them where the state changes; a broken one panics
// under -tags invariants and the race detector and is returned as an error
// (the change refused) in production:
//
//   - the leader's high watermark never moves backwards, never passes its log
//     end offset, nor the log end offset of a maximal ISR member that fetched;
//   - a follower's high watermark never passes its log end offset;
//   - a leader never truncates its log (nothing below its high watermark is
//     ever removed; followers may truncate below theirs only after an unclean
//     election, logged);
//   - a proposed ISR keeps the leader, lists assigned replicas only, and adds
//     only members at or past the high watermark.
//
// sim_test.go checks the cluster-wide ones on three in-process replicas under
// random crashes (kill -9 and power losses, vfs.MemFS.CrashClone), restarts,
// network partitions, lost and delayed messages and leader changes, with an
// acks=all idempotent producer: no acknowledged record is lost or duplicated,
// the high watermark never exceeds an ISR member's log end offset, all
// replicas agree below their high watermarks, no two nodes lead one epoch,
// and once healed every replica rejoins the ISR. Thousands of seeds run in
// go test; -sim.seed=N replays one with its step log.
//
// Every store of the high watermark is passed to the log
// (highWatermark.Store -> storage.Log.UpdateHighWatermark).
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
// # Replication throttles and fetch from follower
//
// Config.LeaderQuota and FollowerQuota (KIP-73, quota.ReplicationQuota):
// the leader answers an out-of-sync follower's partition in
// leader.replication.throttled.replicas with no records while the leader
// rate is exceeded (shouldLeaderThrottle; DelayedFetch does not count those
// bytes) and records the bytes of every throttled partition it sends; a
// fetcher leaves its throttled partitions that are not caught up (lag > 0)
// out of its requests while the follower rate is exceeded, sleeping
// replica.fetch.backoff.ms when nothing else is left, and records what it
// appends for them (fetch.go, fetcher.go). Consumers may fetch from any
// replica from v11; with Config.RackAwareReplicaSelector the leader names a
// preferred read replica in the consumer's rack (KIP-392, preferred.go).
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
//	    → alterPartitionManager.mu (submitting an ISR change)
//	    → Partition.stateMu (high watermark moves, followers' fetch state)
//	      → storage (Manager.mu to create or delete a log, the log's locks)
//	Partition.watch.mu, sessionCache.mu and producerIDs.mu are leaves: no
//	other lock is taken while holding them (a fetch resolves topic ids
//	against one image read before it takes sessionCache.mu).
//
//	fetcherManager.mu  (fetcher assignments; OnImage's hook, after rm.mu
//	                    is released)
//	  → Partition.mu → Partition.stateMu (reads leadership, truncates)
//	  → replicaFetcher.mu (a leaf: the fetcher's partition states)
//	alterPartitionManager.mu (the queue) is taken before stateMu: a retried
//	change is re-queued only while it is still the partition's pending one.
//	Its goroutine sends holding nothing, then takes Partition.mu (for
//	writing: an accepted change commits the ISR) then stateMu. The ISR
//	rules read the image and the lag time from isrView, lock-free, so that
//	Partition.mu never waits on ReplicaManager.mu. Fetcher goroutines take
//	replicaFetcher.mu, or Partition.mu then stateMu, never both (what a
//	fetch state update needs from the partition is read first), and never
//	fetcherManager.mu; network requests hold no lock. stateMu guards the
//	pending ISR change (isrChg) with the followers' fetch state.
//
//	The ranks (lockrank.Fetchers, ReplicaManager, Partition, AlterPartition,
//	PartitionState, and the leaves) are docs/LOCKING.md's table; under the
//	race detector and -tags invariants a lock taken out of order panics.
//
// Request paths take ReplicaManager.mu only to look a partition up and
// release it before taking Partition.mu; parked requests hold no lock.
package replication
