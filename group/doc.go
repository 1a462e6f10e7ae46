// Package group is the group coordinator (Kafka's group-coordinator
// module): consumer groups of the classic protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup) and of KIP-848 (ConsumerGroupHeartbeat), and
// committed offsets, plain and transactional (TxnOffsetCommit), all kept in
// the internal topic __consumer_offsets. It runs on the coordinator runtime
// (package coordinator, Kafka's CoordinatorRuntime): one event loop per
// __consumer_offsets partition this node leads, each owning that
// partition's shard (Kafka's GroupCoordinatorShard).
//
//	broker/08..16,28,42,47,68,69,76,77,90..92 ─► Coordinator ─rt.Run(partition of group, op)─► event loop ─► shard
//	WriteTxnMarkers ─CompleteTransaction─┘ │      (one per partition led here)        │ ctx.Append
//	metadatacache ─OnImage─► rt.SetLeaders: load (replay the log) / unload            ▼
//	controller ◄─CreateTopics (first FindCoordinator)                        coordinator.Writer
//	                                                        (replica manager: local append, high
//	                                                         watermark, log read; KIP-890 verify)
//
// # Partitioning and loading
//
// A group lives on partition abs(javaStringHashCode(groupId)) % N of
// __consumer_offsets (N its partition count, offsets.topic.num.partitions
// before it exists), so every Kafka tool agrees on the coordinator.
// FindCoordinator creates the topic through the controller on first use
// (cleanup.policy=compact) and answers COORDINATOR_NOT_AVAILABLE until a
// leader exists. OnImage hands the runtime the partitions this node leads
// and their leader epochs (SetLeaders). A partition newly led (or led at a
// new epoch) gets a loop that replays its log into a fresh shard
// (Shard.Replay: records.go, transactional batches and end markers
// included); group APIs answer COORDINATOR_LOAD_IN_PROGRESS meanwhile,
// then Shard.Loaded starts the members' session timers. Losing leadership
// unloads the shard: the runtime stops its timers, Shard.Unloaded answers
// parked JoinGroup/SyncGroup calls NOT_COORDINATOR, and every operation
// still queued or waiting for its records to commit, and every later one,
// answers NOT_COORDINATOR.
//
// # Writes
//
// Every request runs as an operation on its partition's loop
// (Coordinator.with -> Runtime.Run, bounded by offsets.commit.timeout.ms).
// A state change that Kafka persists is written before it is made
// visible (write-then-apply): the operation builds the records
// (OffsetCommit, GroupMetadata, KIP-848 records), appends them locally
// (Context.Append) and changes the state only once the append returned
// nil, so a failed write leaves nothing to revert. The operation's caller
// is answered once the high watermark passed everything the partition
// wrote up to then, so a reply never reports state a leader change could
// take back; parked JoinGroup/SyncGroup answers are delivered the same way
// (Context.Defer). Write errors map as Kafka's
// appendGroupMetadataErrorToResponseError (NOT_LEADER_OR_FOLLOWER ->
// NOT_COORDINATOR, a commit timeout -> COORDINATOR_NOT_AVAILABLE, ...).
// Replaying the log rebuilds the same state; tombstones delete offsets and
// groups. The retention pass (offsets.retention.check.interval.ms, an
// event posted to every loaded partition) writes tombstones for offsets
// older than offsets.retention.minutes (counted from when a classic group
// became Empty, or from the commit for simple groups and topics a group no
// longer subscribes to) and deletes empty groups left without offsets;
// deleted topics lose their offsets the same way.
//
// # Transactional offsets (offsets.go)
//
// TxnOffsetCommit first verifies the producer's transaction with its
// transaction coordinator (Writer.VerifyTransaction, KIP-890; from v5 the
// verification adds the partition to the transaction), then writes the
// offsets as one transactional batch of the producer. They are pending,
// kept per producer id and invisible to OffsetFetch, until the
// transaction coordinator's end marker: WriteTxnMarkers calls
// CompleteTransaction, which appends the COMMIT or ABORT marker to the
// partition and then makes the producer's pending offsets the committed
// ones (a later plain commit of the same partition wins, by log offset) or
// drops them; it returns once the marker is committed. OffsetFetch with
// require_stable answers UNSTABLE_OFFSET_COMMIT for partitions with pending
// offsets. An offset tombstone (OffsetDelete, DeleteGroups, deleted
// topics) drops pending offsets of its partition too; DeleteGroups writes
// tombstones for partitions only a transaction has an offset for; the
// retention pass keeps offsets a transaction is about to replace, and
// groups with open transactions.
//
// # Classic group state machine (ClassicGroupState)
//
//	          join (new group)                      all members rejoined, or
//	Empty ─────────────────────► PreparingRebalance ─rebalance timeout / initial delay─┐
//	  ▲                            ▲        ▲                                          │
//	  │ last member leaves /       │        │ member joins, leaves,                    ▼
//	  │ expires (generation+1,     │        │ expires, leader rejoins        CompletingRebalance
//	  │ empty GroupMetadata)       │        │                                 │  leader's SyncGroup:
//	  │                            │        └────────── Stable ◄──────────────┘  GroupMetadata with
//	  └────────────────────────────┴─────────────────────┘                       assignments written
//	Dead: deleted (DeleteGroups, retention), never reused.
//
// Joining: v4+ members without an id get MEMBER_ID_REQUIRED and a pending
// id (KIP-394); static members (group.instance.id) replace their previous
// member id and keep its assignment without a rebalance when the protocol
// does not change (KIP-345). A new group waits group.initial.rebalance.delay.ms
// (extended while members keep arriving, up to the rebalance timeout);
// otherwise the join phase completes as soon as every member rejoined, or
// when the rebalance timeout ends (members that did not rejoin are
// removed). The leader receives the member list; followers park in
// SyncGroup until the leader's assignment is written. Members that do not
// sync within the rebalance timeout are removed and the group rebalances.
// Session timers: a member that neither heartbeats nor commits within its
// session timeout is removed; new members waiting in JoinGroup expire after
// 5 minutes.
//
// # KIP-848 consumer groups (consumer.go)
//
//	Empty ──member joins──► Assigning ──target assignment computed──► Reconciling ──every member
//	  ▲                        ▲ (group epoch > assignment epoch)        (members at     at the target
//	  │                        │                                          older epochs)  epoch──► Stable
//	  └──last member leaves────┴───────── subscription / membership change ◄─────────────────┘
//
// The server computes the target assignment with the uniform or range
// assignor (assignor.go) whenever the group epoch moves. Each member
// reconciles towards its target through ConsumerGroupHeartbeat: partitions
// it must give up are revoked first (member state UNREVOKED_PARTITIONS,
// epoch unchanged), partitions still owned by another member wait until
// that member released them (UNRELEASED_PARTITIONS), and only then does the
// member move to the target epoch (STABLE). Members that stop heartbeating
// are fenced after group.consumer.session.timeout.ms; a member that does
// not revoke within its rebalance timeout is fenced too. A group's
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms GROUP
// configs (KIP-848 group configs, Config.GroupConfig) replace the broker's
// two for its members, read at each heartbeat as GroupMetadataManager reads
// GroupConfigManager.
//
// # Share groups (share*.go, KIP-932)
//
//	Empty ──member joins──► Stable ──last member leaves / expires──► Empty
//	Dead: deleted (DeleteGroups, after its share state was deleted)
//
// Members consume the same partitions together; the share partitions on
// the partition leaders (package share) hand records out and take
// acknowledgements, and the share coordinator keeps their state
// (sharestate.Persister). Here: ShareGroupHeartbeat (epoch 0 joins with
// a client-made member id, KIP-1082; -1 leaves), the target assignment by
// the "simple" assignor (share_assignor.go: each partition shared by
// ceil(members / partitions) members, balanced, sticky) computed at most
// every group.share.assignment.interval.ms (KIP-1263), members moving to
// their target at once (no revocation), session expiry
// (group.share.session.timeout.ms or the GROUP config
// share.session.timeout.ms), group.share.max.size. Records: key types
// 10-15 (share_records.go).
//
// Share state initialization (share_state.go, Kafka 4.1+): a partition is
// assignable only once the share coordinator holds its state. A heartbeat
// that finds subscribed partitions without it records them as
// initializing (ShareGroupStatePartitionMetadata) and, after that write,
// its request goroutine calls Persister.InitializeState (start offset -1,
// which the share partition resolves with share.auto.offset.reset; 0 for
// partitions added to a topic the group already has state for); the
// answer is applied by another operation (all initialized; or, when any
// partition failed, none: they stop initializing, the heartbeat answers
// the persister's error and the next one retries; an unanswered call is
// retried after group.share.initialize.retry.interval.ms). The next heartbeat
// sees initialized partitions the target lacks and moves the group epoch.
// DeleteGroups, DeleteShareGroupOffsets and AlterShareGroupOffsets (empty
// groups only) go the same way through DeleteState / InitializeState,
// recording deleting topics first so a failure can be retried;
// DescribeShareGroupOffsets reads ReadStateSummary. Deleted topics leave
// the metadata. A member's removal, once committed, is told to the share
// partitions (Config.OnShareMemberLeft) so they release its records.
// A share group's id is refused by the other protocols: JoinGroup answers
// INCONSISTENT_GROUP_PROTOCOL, ConsumerGroupHeartbeat and the offset APIs
// GROUP_ID_NOT_FOUND ("Group g is not a consumer group."), as Kafka.
//
// # Differences from Kafka
//
//   - Share groups: the assignment is computed on the
//     loop (group.share.assignor.offload.enable is not honoured), and the
//     simple assignor sorts where Kafka iterates hash maps, so among
//     equally balanced assignments it may pick another one.
//   - Classic-protocol members cannot join a non-empty KIP-848 group (no
//     online migration, group.consumer.migration.policy): JoinGroup answers
//     INCONSISTENT_GROUP_PROTOCOL. Empty groups are converted both ways.
//   - KIP-1251 assignment epochs live in memory only (after a reload a
//     member's partitions date from its current epoch).
//   - Streams groups (streams.go, KIP-1071): the topology is configured
//     again from the image when a topic of it changes (StreamsGroupMetadata
//     carries KIP-1101's hash of the required topics); the sticky task assignor follows
//     StickyTaskAssignor's active passes, but places standby tasks
//     without Kafka's ranking by reported changelog offsets and without
//     rack-aware client tags (neither makes warm-up tasks); source topic
//     regexes are not resolved; the assignor runs on the loop
//     (streams.assignor.offload.enable is not honoured); there is no
//     topology description plugin (KIP-1331).
//   - OffsetCommitValue is written at v3 (v1 with an expire timestamp), not
//     v4 with the topic id tag; every version is readable by Kafka's tools.
//   - Each write is its own append (no append linger batching).
//   - Every reply waits until the high watermark passed everything the
//     partition wrote before it, reads included (Kafka answers reads from a
//     snapshot at the last committed offset, and parked JoinGroup answers
//     at once).
//   - Heartbeat while the partition loads answers
//     COORDINATOR_LOAD_IN_PROGRESS (Kafka answers NONE).
//   - A failed write of a classic group's state (static member
//     replacement, the empty group record of a join phase) is not reverted
//     in memory as Kafka's timeline snapshots revert it.
//
// # Locks
//
// Shards have no lock: everything a shard owns — groups, offsets, pending
// transactional offsets, timers (Context.Schedule) — is touched only from
// its partition's event loop, so a partition's groups change one
// operation at a time, as in Kafka's single-threaded coordinator shards.
// No lock is held while a write replicates: the loop appends locally and
// goes on; callers wait on channels. Coordinator.mu (topic creation, the
// retention timer; lockrank.GroupCoordinator) takes only the clock's lock,
// a leaf, to schedule or stop the timer; the runtime's locks come after it
// and are never taken under it (coordinator/doc.go, docs/LOCKING.md).
// Request goroutines hold nothing while they wait
// for a commit or a parked answer. The metadata callback (OnImage) only
// calls Runtime.SetLeaders and posts events.
package group
