// Package sharecoord is the share coordinator of share groups (KIP-932):
// Kafka 4.4's ShareCoordinatorService, ShareCoordinatorShard and
// PersisterStateBatchCombiner (share-coordinator module), on the
// coordinator runtime (package coordinator). It keeps, for every share
// partition (group, topic id, partition), what its share-partition leader
// persisted: the start offset, the in-flight record batches past it with
// their delivery state and count, and the epochs that fence stale writers.
//
// # Where the state lives
//
// A share partition's coordinator key is sharestate.Key ("group:topicId:
// partition", Kafka's SharePartitionKey.asCoordinatorKey); its state lives in
// the __share_group_state partition abs(javaStringHashCode(key)) % N
// (ShareCoordinatorService.partitionFor, coordinator.PartitionFor). Each
// partition this node leads has a shard (shard.go) on its own event loop,
// rebuilt from the partition's records on load. FindCoordinator key type 2
// (broker/10_find_coordinator.go) creates the topic through the controller
// on first use, with Kafka's configs: cleanup.policy=delete, retention.ms=-1,
// compression.type=producer, min.insync.replicas, segment.bytes.
//
//	share-partition leader ──Persister (broker/share_persister.go)──► leader of the key's partition
//	   Initialize (group coordinator) ─► ShareSnapshot(state epoch, start offset)
//	   Read (leader epoch E)          ─► state; E recorded (a ShareUpdate) when new
//	   Write (acked/released batches) ─► ShareUpdate, or ShareSnapshot every
//	                                     share.coordinator.snapshot.update.records.per.snapshot
//	   ReadSummary                    ─► start offset, epochs, delivery complete count
//	   Delete                         ─► ShareSnapshot tombstone
//
// # Records
//
// records.go draws the byte layout (ShareSnapshotKey/Value, ShareUpdateKey/
// Value; CoordinatorRecordType 0 and 1). A snapshot is the whole state; an
// update carries only the batches of one write, merged into the state on
// replay exactly as when it was written: the combiner (combiner.go) prunes
// batches below the start offset and gives every offset the batch of highest
// (delivery count, delivery state), coalescing runs. Loading replays the
// latest snapshot of each key and the updates after it, so every replica
// rebuilds the same state.
//
// # Fencing (ShareCoordinatorShard)
//
//	Write: partition >= 0, leader epoch >= 0, state epoch >= 0 (INVALID_REQUEST),
//	       initialized (INVALID_REQUEST), leader epoch >= recorded (FENCED_LEADER_EPOCH),
//	       state epoch >= recorded (FENCED_STATE_EPOCH), topic partition in the
//	       image (UNKNOWN_TOPIC_OR_PARTITION)
//	Read:  partition, leader epoch >= 0, initialized, leader epoch >= recorded, image
//	Initialize: partition, state epoch >= 0, state epoch >= recorded, image
//	ReadSummary, Delete: partition, image
//
// A write keeps the recorded leader epoch; only a read by a new leader
// records a new one (Kafka 4.4). The start offset never moves back; the
// delivery complete count (KIP-1226) goes with the start offset it counts
// from.
//
// # Operations and errors
//
// A request is split by coordinator partition; each partition runs one
// operation on its loop (coordinator.Runtime.Run, bounded by
// share.coordinator.write.timeout.ms), the partitions in parallel, and every
// record is appended, applied (write-then-apply) and answered once
// committed. A partition this node does not lead answers NOT_COORDINATOR,
// one loading COORDINATOR_LOAD_IN_PROGRESS, a timeout
// COORDINATOR_NOT_AVAILABLE; failed appends are mapped as Kafka's
// CoordinatorOperationExceptionHelper does. An empty request (no group id,
// no topics, a topic without partitions) answers an empty response.
//
// # Periodic jobs and deleted topics (periodic.go)
//
// While share.version is 1 or more, each shard runs two timers on the
// injected clock: every share.coordinator.cold.partition.snapshot.interval.ms
// a share partition whose last snapshot is older than that gets a new one,
// and every share.coordinator.state.topic.prune.interval.ms the records below
// the oldest latest snapshot of any share partition (Kafka's
// ShareCoordinatorOffsetsManager) are deleted once committed, through the
// Writer's DeleteRecords (RecordsDeleter; the broker moves the log start
// offset of the leader's __share_group_state partition). A topic deleted
// from the image has its share partitions' state tombstoned.
//
// # Locks
//
// Shards have no lock: everything they own is touched on their loop.
// Coordinator.mu (topic creation, closing; lockrank.ShareCoordinator) is a
// leaf, never held while sending or waiting. See docs/LOCKING.md.
package sharecoord
