// Package raft is KRaft: the Raft variant Apache Kafka uses to replicate the
// __cluster_metadata-0 log among the controllers listed in
// controller.quorum.voters (static voters, kraft.version 0).
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
//	               │ Advance(rd)         ▼
//	┌──────────────┴─────────────────────────────────────┐
//	│ Node: 1. write quorum-state (.tmp, fsync, rename)  │
//	│       2. truncate, append, flush the log           │
//	│       3. send requests / answer HandleRequest      │
//	│       4. Advance; listeners read up to the HW      │
//	└────────────────────────────────────────────────────┘
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
// to return are parked until new records, a new high watermark or MaxWaitMs.
// A leader that does not hear from a majority for 1.5 x fetch timeout resigns.
//
// Elections, in detail. A voter becomes Prospective when its election timer
// (election timeout + random [0, election timeout)) or its fetch timer
// (fetch timeout since the last successful fetch) expires. A follower rejects
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
// batch before the leader's epoch start. Close resigns (EndQuorumEpoch) and
// stops. An I/O error or invariant violation stops the node: Append and
// HandleRequest then return it.
//
// Locking: Node.mu guards the core and the Ready loop (quorum-state and log
// writes happen under it); listener goroutines and transport goroutines take
// it briefly and never call out while holding it. The log has its own lock.
//
// # Files
//
//	doc.go          this overview
//	types.go        Role, Message, Entry, Ready, HardState, Status
//	core.go         Core: configuration, transitions, timers, Ready/Advance, Propose
//	core_step.go    Core: handling of Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch
//	epochs.go       the leader-epoch cache (end offset for an epoch)
//	invariants*.go  violation(): panics under -tags invariants, an error otherwise
//	control.go      control record types (kmsg misnames type 2)
//	batch.go        raft batch codec (magic 2) and listener Batch decoding
//	quorumstate.go  the quorum-state file (FileQuorumStateStore)
//	log.go          LogStore: what the node needs of the metadata log
//	storagelog.go   LogStore over storage.Log (segments, indexes, leader-epoch-checkpoint)
//	node.go         Node: configuration, the Ready loop, Append, Close
//	rpc.go          kmsg <-> Message, request validation, DescribeQuorum
//	listeners.go    Register and the per-listener delivery goroutines
//	transport.go    ClientTransport: Transport over protocol.Client
//
// # On disk: <metadata.log.dir>/__cluster_metadata-0/
//
//	00000000000000000000.log  raft batches (see batch.go), with .index/.timeindex
//	leader-epoch-checkpoint   epoch start offsets
//	quorum-state              {"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,
//	                           "appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}
//
// # Not yet
//
// Snapshots (<offset>-<epoch>.checkpoint) and FetchSnapshot: the seams are
// the leader's Fetch validation (answer SnapshotId when the fetch offset is
// below the log start) and the follower's FetchResp handling. Dynamic voters
// (kraft.version 1, VotersRecord, AddRaftVoter) are not implemented.
package raft
