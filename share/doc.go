// Package share is the leader side of share groups (KIP-932, queues for
// Kafka): the share partitions of the partitions this node leads, the share
// sessions of the members fetching from it, and the fetch and
// acknowledgement paths of ShareFetch (78) and ShareAcknowledge (79).
// Kafka's classes: SharePartition (partition.go), SharePartitionManager
// and DelayedShareFetch (manager.go, fetch.go), ShareSessionCache and
// ShareSession (session.go), ShareFetchUtils (fetch.go).
//
// # A share partition
//
// A share group consumes a topic partition cooperatively: any member may
// get any record, and each record is delivered until a member accepts it.
// The leader of the partition keeps, for each share group, the in-flight
// records: those between the share-partition start offset (SPSO) and end
// offset (SPEO), each in one state:
//
//	                   fetch (delivery count + 1,
//	                   lock for record.lock.duration)
//	┌───────────┐  ───────────────────────────────────►  ┌──────────┐
//	│ AVAILABLE │                                        │ ACQUIRED │ by one member
//	└───────────┘  ◄───────────────────────────────────  └──────────┘
//	      ▲          release / lock expiry / member left    │   │  renew
//	      │          (delivery count < limit)               │   └──────┐(lock
//	      │                                                 │          │ again)
//	new records                          accept             │ reject, gap,
//	read from the log  ┌──────────────┐ ◄───────────────────┤ or release / expiry
//	(offset >= SPEO)   │ ACKNOWLEDGED │                     │ at the delivery limit
//	                   └──────────────┘     ┌──────────┐ ◄──┘
//	                                        │ ARCHIVED │
//	                                        └──────────┘
//
// ACKNOWLEDGED and ARCHIVED are terminal. The SPSO moves past the terminal
// records at its head once their write has completed, and the records
// below it leave memory; new records enter at the SPEO as the log is read
// from the next fetch offset (the first AVAILABLE record, else SPEO+1).
// Reading stops while group.share.partition.max.record.locks records are in
// flight (the whole batch that crosses it is still taken in
// batch_optimized mode, KIP-1206; record_limit mode takes exactly
// max_records).
//
// The records are kept as spans: runs of consecutive offsets in one state
// with one delivery count and lock (Kafka's InFlightBatch and its
// per-offset state once a batch is split). Spans cover [SPSO, SPEO]
// without holes; a change splits them at its edges and equal neighbours
// merge again, so memory follows the number of distinct runs, never a
// count from a request or the persisted state.
//
// # Persistence
//
// The state lives in the share coordinator (__share_group_state), reached
// through sharestate.Persister. A share partition is loaded on its first
// fetch with ReadShareGroupState at the partition's leader epoch: the state
// epoch, the SPSO (-1, never written, is resolved by share.auto.offset.reset:
// earliest = the log start offset, latest = the high watermark,
// by_duration:<ISO-8601> = the first record at most that old, KIP-1106) and the
// state batches (an offset between batches is AVAILABLE, never delivered;
// an ACQUIRED state read back is AVAILABLE: locks do not survive a
// leader). Every change Kafka persists leaves the state machine as a
// Write (WriteShareGroupState: state and leader epochs, the SPSO the
// partition will have, the changed records at or above it, the
// delivery-complete count of KIP-1226) which the Manager sends with no lock
// held and reports back with Complete:
//
//   - an acknowledgement is answered only after its write: a failed write
//     restores the states it changed (unless a later change replaced them)
//     and answers the write's error, as Kafka's InFlightState rollback;
//   - lock expiry, a member leaving, aborted records archived and the SPSO
//     moved to a new log start offset are written as committed (nothing
//     waits on them; a failure is logged);
//   - FENCED_STATE_EPOCH or a stale leader epoch fences the partition: the
//     manager drops it and the next fetch loads the persisted state again.
//
// Renewals (KIP-1222) extend a lock and write nothing.
//
// # Reading the log
//
// The logs come through LogReader (the broker implements it on the replica
// manager): whole batches from an offset, up to the high watermark, or up
// to the last stable offset with share.isolation.level=read_committed,
// whose aborted transactions' data batches are ARCHIVED rather than
// delivered. The answer returns every batch that overlaps an acquired
// range; the client delivers only the acquired offsets and acknowledges
// the others it meets (control records, compacted gaps) as gaps.
//
// # Fetch and sessions
//
// Manager.Fetch is DelayedShareFetch: one pass over the session's
// partitions acquires what is there; fewer than min_bytes parks the fetch
// until an append to one of its partitions (LogReader.Watch), a release of
// records anywhere on the node, or max_wait_ms. max_records bounds the
// records acquired by the whole request; max_bytes is shared evenly by the
// partitions. Share sessions (session.go) are Kafka's: epoch 0 opens,
// n > 0 continues, -1 closes and releases the member's records; a session
// also closes with the connection that opened it (BindSession).
//
// The group coordinator tells the manager of membership: OnMemberLeft
// releases a member's records and closes its session, OnGroupEmpty drops
// the group's share partitions from memory (Kafka's ShareGroupListener).
//
// # Invariants
//
// Checked after every change, panicking under -tags invariants and the
// race detector, an error otherwise (invariants.go): the spans cover
// [SPSO, SPEO] in order (so SPSO <= every in-flight offset and
// SPSO <= SPEO+1); an ACQUIRED record has exactly one member and no other
// state has one (no record is acquired by two members); no delivery count
// passes the limit.
//
// # Locks
//
// Manager.mu (the share partitions by key, the release broadcast), each
// Partition.mu, SessionCache.mu and MemPersister.mu are leaves: none is
// held while another lock is taken, the persister is called, the log is
// read, or a fetch waits. A fetch's wake-ups are non-blocking sends.
//
// # Not yet
//
// The dead-letter queue (share.version 2) and the share partition metrics
// (SharePartitionMetrics) are not built; min_bytes counts the bytes of the
// records acquired, where Kafka's DelayedShareFetch counts the bytes
// readable from the fetch offsets.
package share
