// Package group is the group coordinator (Kafka's group-coordinator
// module): consumer groups of the classic protocol (JoinGroup, SyncGroup,
// Heartbeat, LeaveGroup) and of KIP-848 (ConsumerGroupHeartbeat), and
// committed offsets, all kept in the internal topic __consumer_offsets.
//
//	broker/08..16,42,47,68,69 ──► Coordinator ──shardOf(group)──► shard (one per
//	                                 │                            __consumer_offsets
//	  metadatacache ──OnImage───────►│ load / unload              partition led here)
//	  controller ◄──CreateTopics─────┘ (first FindCoordinator)       │ write (acks=all,
//	                                                                 ▼ __admin_client)
//	                                                     Store ─► ReplicaManager.Produce
//	                                                     (replay: storage.Log)
//
// # Partitioning and loading
//
// A group lives on partition abs(javaStringHashCode(groupId)) % N of
// __consumer_offsets (N its partition count, offsets.topic.num.partitions
// before it exists), so every Kafka tool agrees on the coordinator.
// FindCoordinator creates the topic through the controller on first use
// (cleanup.policy=compact) and answers COORDINATOR_NOT_AVAILABLE until a
// leader exists. When the metadata image makes this node leader of a
// partition (new leader epoch), a shard is created in state loading and a
// goroutine replays the partition's log into it (records.go); group APIs
// answer COORDINATOR_LOAD_IN_PROGRESS meanwhile, then the members'
// session timers start. Losing leadership unloads the shard: timers stop,
// parked JoinGroup/SyncGroup calls answer NOT_COORDINATOR, later calls
// NOT_COORDINATOR.
//
// # Writes
//
// Every state change that Kafka persists is written before it is made
// visible: the handler builds the records (OffsetCommit, GroupMetadata,
// KIP-848 records), appends them through the replica manager with acks=all
// as the internal admin client and waits for the high watermark
// (offsets.commit.timeout.ms), then applies them. Write errors map as
// Kafka's appendGroupMetadataErrorToResponseError (NOT_LEADER_OR_FOLLOWER
// -> NOT_COORDINATOR, REQUEST_TIMED_OUT -> COORDINATOR_NOT_AVAILABLE, ...).
// Replaying the log rebuilds the same state; tombstones delete offsets and
// groups. The retention pass (offsets.retention.check.interval.ms) writes
// tombstones for offsets older than offsets.retention.minutes (counted from
// when a classic group became Empty, or from the commit for simple groups
// and topics a group no longer subscribes to) and deletes empty groups left
// without offsets.
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
// not revoke within its rebalance timeout is fenced too.
//
// # Differences from Kafka
//
//   - Classic-protocol members cannot join a non-empty KIP-848 group (no
//     online migration, group.consumer.migration.policy): JoinGroup answers
//     INCONSISTENT_GROUP_PROTOCOL. Empty groups are converted both ways.
//   - No transactional offsets (TxnOffsetCommit): require_stable never
//     waits, and FindCoordinator has no transaction coordinator.
//   - KIP-848 subscription metadata is recomputed from the image instead of
//     being persisted (no metadataHash / ConsumerGroupPartitionMetadata), and
//     KIP-1251 assignment epochs live in memory only (after a reload a
//     member's partitions date from its current epoch).
//   - OffsetCommitValue is written at v3 (v1 with an expire timestamp), not
//     v4 with the topic id tag; every version is readable by Kafka's tools.
//   - Each write is its own append (no append linger batching).
//
// # Locks
//
//	Coordinator.mu (shard map, topic creation)  →  shard.mu (all of one
//	partition's groups, offsets and timers)
//
// Coordinator.mu is never held while waiting on a shard: requests look the
// shard up, release Coordinator.mu, then lock the shard. Everything a shard
// does — requests, timer callbacks (Clock.AfterFunc, which re-take shard.mu
// and check the timer is still current), log writes — runs under shard.mu,
// so a partition's groups change one operation at a time, as in Kafka's
// single-threaded coordinator shards. Parked JoinGroup/SyncGroup requests
// wait on one-slot channels outside every lock. The metadata callback
// (OnImage) takes Coordinator.mu only; loading runs in its own goroutine.
package group
