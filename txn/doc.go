// Package txn is the transaction coordinator: Kafka 4.4's
// TransactionCoordinator, TransactionStateManager, TransactionMetadata and
// TransactionMarkerChannelManager, on the coordinator runtime (package
// coordinator).
//
// # Where the state lives
//
// A transactional id belongs to the __transaction_state partition
// coordinator.PartitionFor(id, partitions) (Kafka's abs(hashCode) %
// partitions). Each partition this node leads has a shard (shard.go) on its
// own event loop: a map of transactional ids to their metadata
// (metadata.go), rebuilt from the partition's records when the partition is
// loaded (records.go has the byte layout, which kafka-dump-log.sh
// --transaction-log-decoder reads). FindCoordinator creates the topic
// through the controller on first use, with Kafka's configs (compact,
// uncompressed, min.insync.replicas, segment.bytes).
//
// # A transaction
//
//	producer                      coordinator (loop of the id's partition)          partition leaders
//	FindCoordinator(type 1) ────► leader of the id's partition
//	InitProducerId ─────────────► Empty, epoch bumped (new id: a fresh producer id)
//	AddPartitionsToTxn ─────────► Ongoing + partitions     (TV2: sent by the leaders, v4+)
//	EndTxn(commit) ─────────────► PrepareCommit written; answered once committed
//	                              pending CompleteCommit; markers per leader ──────► WriteTxnMarkers
//	                              every marker acked ◄──────────────────────────────
//	                              CompleteCommit written
//
// Every change is two steps, as in Kafka: a prepare method checks the
// transition and marks the transaction pending, the record is appended
// (Context.Append, local) and the change is applied when the high watermark
// passes it (Context.Defer). While pending, other changes of the same
// transaction answer CONCURRENT_TRANSACTIONS; a failed append clears the
// pending state and nothing else changed.
//
// # States (TransactionState; ids as written in the log)
//
//	InitProducerId ──► Empty(0) ── AddPartitionsToTxn ──► Ongoing(1) ◄── AddPartitionsToTxn
//	(Empty, Complete*)   │                                  │     │         (from Complete*)
//	                     │                    EndTxn(commit)│     │EndTxn(abort), timeout,
//	                     │                                  ▼     │new producer instance
//	                     │                      PrepareCommit(2)  │
//	                     │                                  │     ▼
//	                     └── TV2 EndTxn(abort) ─────────────┼─► PrepareAbort(3) ◄── TV2 EndTxn(abort)
//	                                         every marker   │     │ every marker     (from Complete*)
//	                                                        ▼     ▼
//	                                       CompleteCommit(4)     CompleteAbort(5)
//
//	Dead(6): an expired Empty or Complete* id, pending until its tombstone is committed.
//
// PrepareEpochFence(7) is only ever a pending state: the coordinator aborts
// an ongoing transaction with a bumped epoch to fence its producer (a new
// producer instance's InitProducerId, which then answers
// CONCURRENT_TRANSACTIONS; or a transaction older than its timeout).
//
// # Epochs and transaction versions
//
// transaction.version comes from the metadata image. Level 1+ writes
// TransactionLogValue v1 (with the tagged previous/next producer ids and the
// client's transaction version), level 0 writes v0. Which rules a request
// gets depends on its version, as Kafka decides: EndTxn v5 and
// AddPartitionsToTxn v4+ (from partition leaders) follow transaction version
// 2 (KIP-890 part 2: every commit and abort bumps the epoch, a retried EndTxn
// is recognised by the epoch one below, an exhausted epoch moves the producer
// to a new producer id at epoch 0); older versions keep the same epoch for
// the producer's life. Aborts the coordinator starts itself follow the
// cluster's level. The epoch 32767 is kept for fencing: a producer at 32766
// moves to a new producer id. KIP-360: InitProducerId may name the producer
// id and epoch it had, to resume after an error.
//
// # Markers
//
// markers.go: once PrepareCommit/PrepareAbort is committed the partitions are
// grouped by their leader in the image and queued per destination broker;
// one goroutine per broker sends one WriteTxnMarkers at a time (all queued
// transactions in it) through MarkerSender, never from a loop. The answers
// go back to each transaction's loop (Runtime.Post): written partitions are
// dropped, retriable errors re-resolve the leader and are sent again after a
// backoff, deleted topics are skipped, leaderless partitions wait for a
// metadata change, a fenced producer or coordinator epoch stops the
// transaction's markers (as in Kafka, until the partition loads again). When
// none is left, CompleteCommit/CompleteAbort is written. Loading a partition
// resumes the markers of every transaction in a Prepare state: this is what
// finishes a commit after the coordinator failed over. Markers carry the
// partition's loaded leader epoch as the coordinator epoch.
//
// # Timers
//
// Each shard runs, on its loop and the injected clock, the abort of timed
// out transactions every transaction.abort.timed.out.transaction.cleanup.interval.ms
// and the expiration of transactional ids idle for
// transactional.id.expiration.ms every
// transaction.remove.expired.transaction.cleanup.interval.ms (tombstones,
// batched below message.max.bytes).
//
// # What it depends on
//
// coordinator.Writer (the replica manager's coordinator appends),
// ProducerIDGenerator (the broker's producer id blocks), MarkerSender (the
// broker's inter-broker clients), a metadata image function and a
// controller Requestor for CreateTopics. api.go turns Kafka's requests into
// these operations, with the per-version error mapping; the broker files
// only route to it.
//
// # Locks
//
// Shards have no lock: everything they own is touched on their loop.
// Coordinator.mu (topic creation, closing) is a leaf; markerChannel.mu (the
// per-broker queues, parked markers, retry timers; lockrank.MarkerChannel)
// takes only the clock's lock, a leaf, to schedule or stop a retry timer.
// Neither is held while sending, posting to a loop or waiting. Producer ids
// and markers go over the network from their own goroutines; results come
// back as loop events. Nothing here is called with another package's lock
// held except Context methods on the loop, and the runtime's and clock's
// locks come after these (docs/LOCKING.md).
package txn
