// Package raft is KRaft: the Raft variant Apache Kafka uses to replicate the
// __cluster_metadata-0 log among its voters: the controllers listed in
// controller.quorum.voters (static voters, kraft.version 0) or, for a
// dynamic quorum (KIP-853, kraft.version 1), the voter set of the log.
//
// # Shape
//
// The consensus logic is a pure state machine (Core, in the style of
// etcd-io/raft): no sockets, no files, no clock. It takes messages (Step),
// time (Tick) and proposals (Propose), and returns a Ready: the quorum state
// to persist, log truncation and entries to append, messages to send, the new
// high watermark and leader changes. The Node runs a Core over the metadata
// log, the quorum-state file and a Transport, and speaks the KRaft RPCs as
// kmsg requests on the CONTROLLER listener.
//
//	 Step(Message) / Tick(now) / Propose(records)
//	               │
//	          ┌────▼────┐   Ready{HardState, TruncateTo, Entries,
//	          │  Core   ├──────    Messages, HighWatermark, LeaderChange}
//	          └────▲────┘                │
//	               │ LogWritten(rd)      ▼
//	               │ LogFlushed(rd)
//	┌──────────────┴──────────────────────────────────────────────┐
//	│ Node (under Node.mu): queue the disk work; send messages    │
//	│   once the HardState is durable; listeners read up to the HW │
//	│ quorum-state writer (no lock): .tmp, fsync, rename           │
//	│ log writer (no lock): truncate, append -> LogWritten,        │
//	│   flush -> LogFlushed (node_persist.go)                      │
//	└──────────────────────────────────────────────────────────────┘
//
// A leader serves Fetch from what it wrote and counts its own log for the
// high watermark only up to what it flushed; a follower sends its next Fetch
// (its fetch offset acknowledges what it holds) only once its entries are
// durable, as Kafka's follower flushes before fetching again
// (KafkaRaftClient.appendAsFollower). Kafka 4.4's leader counts its log end
// before its flush (flushLeaderLog updates the end offset first); this one
// waits for its own fsync, so a high watermark never passes what a majority
// made durable. A test harness (Advance) may still do everything in line.
//
// # States (QuorumState.java, EpochState implementations)
//
//	                election timeout              majority of pre-votes
//	┌────────────┐ ───────────────► ┌─────────────┐ ─────────────────► ┌───────────┐
//	│ Unattached │                  │ Prospective │                    │ Candidate │
//	└────────────┘ ◄─────────────── └─────────────┘ ◄───────────────── └───────────┘
//	  ▲   │  higher epoch, no leader   ▲     ▲   │      election timeout    │
//	  │   │                            │     │   │ leader found             │ majority of votes
//	  │   │ BeginQuorumEpoch /         │     │   ▼                          ▼
//	  │   │ leader in a response  ┌────┴─────┴─┐  fetch timeout     ┌──────────┐
//	  │   └─────────────────────► │  Follower  │ ◄──────────────────│  Leader  │
//	  │                           └────────────┘   higher epoch     └────┬─────┘
//	  │                                  ▲                               │ Resign (shutdown,
//	  │   higher epoch                   │ leader of a newer epoch       ▼ check-quorum)
//	  └──────────────────────────── ┌──────────┐ ◄───────────────────────┘
//	                                │ Resigned │ ── election timeout ──► Prospective
//	                                └──────────┘
//
// Unattached may have voted in its epoch (Kafka's former Voted state). A
// Prospective replica asks for pre-votes (Vote v2, PreVote=true, KIP-996) for
// epoch+1 without bumping its epoch; only with a majority of pre-votes does it
// become a Candidate, bump the epoch and vote for itself. A voter grants a
// vote to a candidate whose log (last epoch, end offset) is at least as new as
// its own, at most once per epoch; a follower rejects pre-votes while its
// leader answers fetches. The sole voter of a quorum elects itself at start.
// A leader that restarts comes back Resigned and campaigns for a new epoch.
//
// The leader starts its epoch with a LeaderChange control record (voters and
// granting voters). Followers and observers (replica id -1 or non-voters) pull
// with Fetch(fetch offset = log end offset, last fetched epoch); the leader
// answers with records, or a DivergingEpoch after which the follower
// truncates, and the high watermark. The high watermark is the offset a
// majority of voters hold once that includes a record of the leader's epoch;
// it never decreases and no replica truncates below it. Fetches with nothing
// to return are parked until new records, a new high watermark or MaxWaitMs;
// a fetcher that says (Fetch v18, KIP-1166) it knows an older high watermark
// than the leader's is answered at once.
// A leader that does not hear from a majority for 1.5 x fetch timeout resigns.
//
// Elections, in detail. A voter becomes Prospective when its election timer
// (election timeout + random [0, election timeout)) or its fetch timer
// (fetch timeout since the last successful fetch) expires; the Node ticks the
// core at that moment (Core.NextTimerMs), not only on its 10 ms ticker, as
// Kafka's raft thread wakes at its timers: followers whose fetch timers
// expire together would otherwise race a tick apart and split the vote. A follower rejects
// pre-votes while it has heard from its leader within the fetch timeout,
// unless the leader resigned (EndQuorumEpoch); a replica that rejoins the
// leader it had keeps its old contact time, so hearsay does not revive a dead
// leader. Responses name a leader only when the responder leads or follows.
// A follower takes the high watermark of a fetch response only when the
// leader validated its log (never with a DivergingEpoch).
//
// # Node
//
// Append(records) proposes one batch and returns its last offset once the
// high watermark passed it. Listeners get committed batches in offset order
// from offset 0 (control batches skipped) on their own goroutine, and leader
// changes; a change making this node the leader is delivered after every
// batch before the leader's epoch start. A SnapshotListener gets the latest
// snapshot first (HandleSnapshot) and the batches after it, and the latest
// snapshot again whenever its next offset falls below the log start. Close
// resigns (EndQuorumEpoch) and stops. An I/O error or invariant violation
// stops the node: Append and HandleRequest then return it, and
// Config.OnFatal is called once (the broker halts, as Kafka's raft IO
// thread's fatal fault handler does).
//
// # Snapshots
//
// A snapshot <end offset>-<epoch>.checkpoint holds the state before its end
// offset as raft batches: a SnapshotHeader control batch, the records, a
// SnapshotFooter control batch (snapshot.go). CreateSnapshot writes one from
// a SnapshotImage (.checkpoint.part, fsync, rename) when its end offset is a
// batch boundary at or below the high watermark and valid against the log
// (KafkaMetadataLog.createNewSnapshot). The SnapshotGenerator (a listener)
// does so when metadata.log.max.record.bytes.between.snapshots were committed
// or metadata.log.max.snapshot.interval.ms passed, off the raft goroutine.
// Retention (KafkaMetadataLog.maybeClean): while log plus snapshots exceed
// metadata.max.retention.bytes, or the oldest snapshot is older than
// metadata.max.retention.ms, the oldest snapshot goes and the log start moves
// to the next one (segments wholly below it are deleted); the latest snapshot
// always stays. At start, .part/.deleted files and snapshots below the log
// start are removed, and a snapshot newer than the log truncates it fully.
//
//	leader                                   follower (fetch offset < log start,
//	                                           or 0 while a snapshot exists)
//	FetchResp{SnapshotId: latest} ─────────► fetchingSnap = id, position 0
//	                              ◄───────── FetchSnapshot{id, Position, MaxBytes}
//	FetchSnapshotResp{Size, Position, ─────► Ready.SnapshotChunks (append to .part)
//	  UnalignedRecords}                      ... until Position = Size, then
//	                                         Ready.LoadSnapshot: fsync, rename,
//	                                         truncate the log fully to start at
//	                                         the end offset; HW >= end offset;
//	                              ◄───────── Fetch from the end offset
//
// Errors: SNAPSHOT_NOT_FOUND (deleted meanwhile: the follower starts over with
// Fetch), POSITION_OUT_OF_RANGE (the download restarts at 0), and the
// leader-only epoch checks of Fetch.
//
// Locking: Node.mu guards the core, the Ready loop and the snapshot files
// (FetchSnapshot reads, freezing, deletion); listener goroutines and
// transport goroutines take it briefly and never call out while holding it.
// No write or sync of the metadata log or the quorum-state file runs under
// it (node_persist.go), nor do the log reads of Fetch responses and
// listeners (the log writer holds the log's own lock across an append).
// CreateSnapshot encodes and writes the .part file without it and takes it to
// validate, freeze and clean. The log (a storage.Log) has its own locks,
// taken under Node.mu only by retention, snapshot creation and a fetched
// snapshot's load. Callers hold controller.Controller.mu (Append) or the
// broker's metadata feeder lock (HighWatermark) when they take Node.mu, so
// it ranks after those (lockrank.RaftNode). The transport's per-voter dial
// lock (transportConn.mu, held while dialling) takes the connection map's
// lock and the client's, both leaves; no Node.mu is held while sending.
//
// # Files
//
//	doc.go           this overview
//	types.go         Role, Message, Entry, Ready, HardState, Status
//	core.go          Core: configuration, transitions, timers, Ready/Advance, Propose
//	core_step.go     Core: handling of Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch
//	core_snapshot.go Core: log start, snapshot ids, FetchSnapshot (both sides), validateOffsetAndEpoch
//	epochs.go        the leader-epoch cache (end offset for an epoch)
//	invariants*.go   violation(): panics under -tags invariants, an error otherwise
//	control.go       control record types (kmsg misnames type 2)
//	batch.go         raft batch codec (magic 2) and listener Batch decoding
//	snapshot.go      snapshot files: names, header/footer, encode/decode, .part/.deleted
//	quorumstate.go   the quorum-state file (FileQuorumStateStore)
//	log.go           LogStore: what the node needs of the metadata log
//	storagelog.go    LogStore over storage.Log (segments, indexes, leader-epoch-checkpoint)
//	node.go          Node: configuration, the Ready loop, Append, Close
//	node_persist.go  Node: the log and quorum-state writers, outside Node.mu
//	node_snapshot.go Node: CreateSnapshot, retention, loading, the SnapshotGenerator
//	rpc.go           kmsg <-> Message, request validation, DescribeQuorum
//	listeners.go     Register and the per-listener delivery goroutines
//	transport.go     ClientTransport: Transport over protocol.Client
//
// # On disk: <metadata.log.dir>/__cluster_metadata-0/
//
//	00000000000000000000.log  raft batches (see batch.go), with .index/.timeindex
//	leader-epoch-checkpoint   epoch start offsets
//	00000000000000004096-0000000003.checkpoint  a snapshot (end offset 4096, epoch 3)
//	quorum-state              {"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,
//	                           "appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}
//
// # Voter sets (KIP-853)
//
// A dynamic quorum's voters are the last VotersRecord of the log (or of the
// snapshot or bootstrap checkpoint it starts from; voters.go, control.go,
// control_state.go), in effect as soon as appended and undone with a
// truncation. A node finds the leader through Config.BootstrapServers
// (controller.quorum.bootstrap.servers) and identifies itself with its
// replica key (node id and metadata log dir directory id) in Vote,
// BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot. The leader
// serves AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter one change at a
// time (core_voters.go), and appends the kraft.version upgrade of a static
// quorum once every voter has sent its directory id with UpdateRaftVoter
// (Node.UpgradeKRaftVersion). quorum-state is written as data_version 1 at
// kraft.version 1.
//
// # Not yet
//
// The log start offset
// is not checkpointed: after a restart it is the first segment's base, as
// for Kafka's metadata log.
package raft
