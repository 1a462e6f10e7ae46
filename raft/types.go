package raft

import "fmt"

// Role is the KRaft election state of a replica (QuorumState's EpochState).
type Role uint8

const (
	// RoleUnattached: epoch known, leader unknown; may have voted (Kafka's Unattached/Voted).
	RoleUnattached Role = iota
	// RoleProspective: KIP-996 pre-vote in progress; the epoch is not bumped yet.
	RoleProspective
	// RoleCandidate: bumped the epoch, voted for itself, asks for votes.
	RoleCandidate
	// RoleLeader: won the epoch; appends and serves Fetch.
	RoleLeader
	// RoleFollower: knows the leader of its epoch and fetches from it.
	RoleFollower
	// RoleResigned: was leader of its epoch and gave it up (shutdown, check-quorum, restart).
	RoleResigned
)

func (r Role) String() string {
	switch r {
	case RoleUnattached:
		return "Unattached"
	case RoleProspective:
		return "Prospective"
	case RoleCandidate:
		return "Candidate"
	case RoleLeader:
		return "Leader"
	case RoleFollower:
		return "Follower"
	case RoleResigned:
		return "Resigned"
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// NoLeader is Kafka's sentinel for "no leader / no vote" (-1).
const NoLeader int32 = -1

// LeaderAndEpoch is what listeners and clients see of the quorum.
type LeaderAndEpoch struct {
	LeaderID int32 // -1 when unknown
	Epoch    int32
}

// HardState is the part of the quorum state that must be durable before the
// replica acts on it (the quorum-state file).
type HardState struct {
	LeaderEpoch int32
	LeaderID    int32 // -1 when unknown
	VotedID     int32 // -1 when no vote in LeaderEpoch
	// VotedDirectoryID is the directory id of the replica voted for (zero:
	// none or unknown); written from kraft.version 1 (quorum-state v1).
	VotedDirectoryID [16]byte
	// KRaftVersion is the kraft.version when the state was written: it picks
	// the quorum-state data_version (FileQuorumStateStore: 0 or 1).
	KRaftVersion int16
}

// EpochStart is one leader-epoch-checkpoint entry: the first offset of an epoch.
type EpochStart struct {
	Epoch       int32
	StartOffset int64
}

// OffsetAndEpoch names a point in the log as "end offset of epoch".
type OffsetAndEpoch struct {
	Offset int64
	Epoch  int32
}

// Entry is one raft batch: every offset in [Offset, LastOffset] written with
// PartitionLeaderEpoch = Epoch. The core only looks at offsets and epochs.
type Entry struct {
	Offset       int64
	LastOffset   int64
	Epoch        int32
	AppendTimeMs int64
	// Control marks a control batch; ControlType is the key type of its
	// records, ControlTypes (when set) the type of each record (a batch of
	// LeaderChange, KRaftVersion and Voters records).
	Control      bool
	ControlType  int16
	ControlTypes []int16
	// Records are the record values (for a control batch, the encoded control value).
	Records [][]byte
	// Raw is the encoded batch when it came off the wire or the log (opaque to the core).
	Raw []byte
}

// MsgType names the KRaft RPC a Message stands for.
type MsgType uint8

const (
	MsgVote MsgType = iota + 1
	MsgVoteResp
	MsgBeginQuorumEpoch
	MsgBeginQuorumEpochResp
	MsgEndQuorumEpoch
	MsgEndQuorumEpochResp
	MsgFetch
	MsgFetchResp
	MsgFetchSnapshot
	MsgFetchSnapshotResp
	MsgAddVoter
	MsgAddVoterResp
	MsgRemoveVoter
	MsgRemoveVoterResp
	MsgUpdateVoter
	MsgUpdateVoterResp
	MsgApiVersions
	MsgApiVersionsResp
)

var msgTypeNames = map[MsgType]string{
	MsgVote: "Vote", MsgVoteResp: "VoteResp",
	MsgBeginQuorumEpoch: "BeginQuorumEpoch", MsgBeginQuorumEpochResp: "BeginQuorumEpochResp",
	MsgEndQuorumEpoch: "EndQuorumEpoch", MsgEndQuorumEpochResp: "EndQuorumEpochResp",
	MsgFetch: "Fetch", MsgFetchResp: "FetchResp",
	MsgFetchSnapshot: "FetchSnapshot", MsgFetchSnapshotResp: "FetchSnapshotResp",
	MsgAddVoter: "AddVoter", MsgAddVoterResp: "AddVoterResp",
	MsgRemoveVoter: "RemoveVoter", MsgRemoveVoterResp: "RemoveVoterResp",
	MsgUpdateVoter: "UpdateVoter", MsgUpdateVoterResp: "UpdateVoterResp",
	MsgApiVersions: "ApiVersions", MsgApiVersionsResp: "ApiVersionsResp",
}

func (t MsgType) String() string {
	if s, ok := msgTypeNames[t]; ok {
		return s
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// IsResponse reports whether t is a response type.
func (t MsgType) IsResponse() bool {
	switch t {
	case MsgVoteResp, MsgBeginQuorumEpochResp, MsgEndQuorumEpochResp, MsgFetchResp, MsgFetchSnapshotResp,
		MsgAddVoterResp, MsgRemoveVoterResp, MsgUpdateVoterResp, MsgApiVersionsResp:
		return true
	}
	return false
}

// Message is one KRaft request or response as the core sees it. It is a flat
// struct (like etcd's raftpb.Message): which fields matter depends on Type.
//
// Every request names its sender's directory id (FromDir) and, when the
// core knows it, the receiver's address on the default controller listener
// (ToAddr; "" lets the environment route by id). Responses carry the
// advertised leader's endpoints (LeaderEndpoints, Kafka's NodeEndpoints).
//
//	Vote:             Epoch (candidate epoch), PreVote, LastEpoch/LastOffset (candidate log end),
//	                  VoterKey (the receiver the candidate means, nil: any)
//	VoteResp:         Epoch/LeaderID (responder's view), Granted, PreVote, Error
//	BeginQuorumEpoch: Epoch, LeaderID, VoterKey, LeaderEndpoints (the leader's listeners)
//	EndQuorumEpoch:   Epoch, LeaderID, PreferredCandidates, LeaderEndpoints
//	Fetch:            Epoch (current leader epoch), LastOffset (fetch offset),
//	                  LastEpoch (last fetched epoch), MaxWaitMs, FetcherHW (v18)
//	FetchResp:        Epoch/LeaderID, Error, HighWatermark, Diverging, SnapshotID, Entries;
//	                  a leader's outgoing FetchResp has ReadFrom/ReadTo set and the
//	                  environment fills Entries from its log before delivery.
//	FetchSnapshot:    Epoch (current leader epoch), SnapshotID, Position, MaxBytes
//	FetchSnapshotResp: Epoch/LeaderID, Error, SnapshotID, Size, Position, Data; a
//	                  leader's outgoing one has ReadFrom/ReadTo (bytes of the snapshot
//	                  file) set and the environment fills Data.
//	AddVoter:         Voter (key with directory id, endpoints), AckWhenCommitted, TimeoutMs
//	RemoveVoter:      Voter.Key
//	UpdateVoter:      Epoch (current leader epoch), Voter (key, endpoints, kraft.version range)
//	*VoterResp:       Error, ErrorMessage; UpdateVoterResp also Epoch/LeaderID/LeaderEndpoints
//	ApiVersions:      the leader asks a voter being added (ToAddr) for its kraft.version range
//	ApiVersionsResp:  Error, KRaftRange (nil: the feature is not advertised)
type Message struct {
	Type MsgType
	From int32
	To   int32
	// ID matches a response to its request: the sender of a request picks it and
	// the response echoes it. The core ignores responses it is not waiting for.
	ID uint64

	Epoch    int32
	LeaderID int32
	Error    int16

	PreVote    bool
	Granted    bool
	LastEpoch  int32
	LastOffset int64

	PreferredCandidates []ReplicaKey

	// Replica keys and addresses (KIP-853).
	FromDir         [16]byte
	VoterKey        *ReplicaKey // Vote/BeginQuorumEpoch: the voter the request is meant for
	ToAddr          string      // requests: host:port of the receiver ("" route by id)
	LeaderEndpoints []Endpoint

	// Voter changes.
	Voter            *Voter
	AckWhenCommitted bool
	TimeoutMs        int64
	ErrorMessage     *string
	KRaftRange       *[2]int16 // ApiVersionsResp: kraft.version supported range

	MaxWaitMs int64
	// FetcherHW is the high watermark the sender of a Fetch knows (-1
	// unknown) when HasFetcherHW: Fetch v18 (KIP-1166). A leader answers a
	// fetcher that is behind its high watermark at once instead of parking
	// the fetch. Not set: the fetcher does not send it (before v18).
	FetcherHW     int64
	HasFetcherHW  bool
	HighWatermark int64
	Diverging     *OffsetAndEpoch
	ReadFrom      int64 // -1: no records
	ReadTo        int64 // exclusive
	Entries       []Entry

	SnapshotID *OffsetAndEpoch // Fetch/FetchSnapshot responses: the snapshot to load
	Position   int64           // FetchSnapshot: byte position in the snapshot
	Size       int64           // FetchSnapshotResp: size of the whole snapshot
	MaxBytes   int32           // FetchSnapshot: bytes wanted
	Data       []byte          // FetchSnapshotResp: the bytes at Position
}

func (m Message) String() string {
	s := fmt.Sprintf("%s %d->%d epoch=%d", m.Type, m.From, m.To, m.Epoch)
	switch m.Type {
	case MsgVote:
		s += fmt.Sprintf(" pre=%v last=%d@%d", m.PreVote, m.LastOffset, m.LastEpoch)
	case MsgVoteResp:
		s += fmt.Sprintf(" leader=%d pre=%v granted=%v", m.LeaderID, m.PreVote, m.Granted)
	case MsgBeginQuorumEpoch, MsgEndQuorumEpoch:
		s += fmt.Sprintf(" leader=%d", m.LeaderID)
	case MsgFetch:
		s += fmt.Sprintf(" offset=%d lastEpoch=%d", m.LastOffset, m.LastEpoch)
	case MsgFetchResp:
		s += fmt.Sprintf(" leader=%d hw=%d", m.LeaderID, m.HighWatermark)
		if m.Diverging != nil {
			s += fmt.Sprintf(" diverging=%d@%d", m.Diverging.Offset, m.Diverging.Epoch)
		}
		if m.SnapshotID != nil {
			s += fmt.Sprintf(" snapshot=%d@%d", m.SnapshotID.Offset, m.SnapshotID.Epoch)
		}
		if len(m.Entries) > 0 {
			s += fmt.Sprintf(" entries=[%d,%d]", m.Entries[0].Offset, m.Entries[len(m.Entries)-1].LastOffset)
		}
	case MsgFetchSnapshot:
		if m.SnapshotID != nil {
			s += fmt.Sprintf(" snapshot=%d@%d", m.SnapshotID.Offset, m.SnapshotID.Epoch)
		}
		s += fmt.Sprintf(" position=%d", m.Position)
	case MsgFetchSnapshotResp:
		s += fmt.Sprintf(" leader=%d", m.LeaderID)
		if m.SnapshotID != nil {
			s += fmt.Sprintf(" snapshot=%d@%d size=%d position=%d bytes=%d", m.SnapshotID.Offset, m.SnapshotID.Epoch, m.Size, m.Position, len(m.Data))
		}
	case MsgAddVoter, MsgRemoveVoter, MsgUpdateVoter:
		if m.Voter != nil {
			s += fmt.Sprintf(" voter=%d", m.Voter.Key.ID)
		}
	case MsgUpdateVoterResp:
		s += fmt.Sprintf(" leader=%d", m.LeaderID)
	case MsgApiVersionsResp:
		if m.KRaftRange != nil {
			s += fmt.Sprintf(" kraft=%d-%d", m.KRaftRange[0], m.KRaftRange[1])
		}
	}
	if m.Error != 0 {
		s += fmt.Sprintf(" err=%d", m.Error)
	}
	if m.ErrorMessage != nil && m.Error != 0 {
		s += fmt.Sprintf(" msg=%q", *m.ErrorMessage)
	}
	return s
}

// Ready is what the core asks its environment to do, in this order:
//  1. persist HardState (when non-nil) durably,
//  2. truncate the log to TruncateTo (when >= 0), then append Entries and flush,
//  3. append SnapshotChunks to the snapshot being downloaded; when LoadSnapshot
//     is set, make that snapshot durable (fsync, rename), then truncate the
//     log fully to start at its end offset and forget older snapshots,
//  4. send Messages (fill FetchResp records from the log, FetchSnapshotResp
//     bytes from the snapshot file first),
//  5. call Advance(rd).
//
// An environment may instead persist the log asynchronously (the Node
// does: no lock is held across a write or sync of the metadata log). It
// then carries out steps 2 and 3 of each Ready in Ready order on a writer
// of its own, tells the core LogWritten(rd) once the entries are in the log
// (readable) and LogFlushed(rd) once they are durable, and never calls
// Advance; meanwhile Step, Tick and Propose may go on and further Readys be
// taken. Messages of a Ready go out once its HardState, and every earlier
// one, is durable (a vote, a leadership claim), whatever the log writes of
// it still do: the core makes nothing else depend on the log's durability.
// It counts its own log only up to LogFlushed for the high watermark (a
// leader) or the fetch offset (a follower sends no Fetch while entries are
// not yet durable, as Kafka's flushes before fetching again), and serves
// Fetch only up to LogWritten.
//
// HighWatermark and LeaderChange are informational (deliver committed entries,
// notify listeners); they never require durability.
type Ready struct {
	HardState     *HardState
	TruncateTo    int64 // -1: none
	Entries       []Entry
	Messages      []Message
	HighWatermark int64 // current high watermark (-1 unknown)
	HWChanged     bool
	LeaderChange  *LeaderAndEpoch

	SnapshotChunks []SnapshotChunk
	LoadSnapshot   *SnapshotInfo

	logEnd int64  // the log end offset once the log work is carried out
	logGen uint64 // the core's truncation generation when it was taken
}

// HasLogWork reports whether rd asks for log or snapshot-file I/O (steps 2 and 3).
func (rd *Ready) HasLogWork() bool {
	return rd.TruncateTo >= 0 || len(rd.Entries) > 0 || len(rd.SnapshotChunks) > 0 || rd.LoadSnapshot != nil
}

// SnapshotChunk is a piece of a snapshot fetched from the leader: Data goes
// at Position of the snapshot ID being downloaded.
type SnapshotChunk struct {
	ID       OffsetAndEpoch
	Position int64
	Data     []byte
}

// SnapshotInfo names a frozen snapshot: the state before offset ID.Offset,
// whose last batch has epoch ID.Epoch, in a file of Size bytes.
type SnapshotInfo struct {
	ID   OffsetAndEpoch
	Size int64
}

// ReplicaStatus is the leader's view of one replica (DescribeQuorum).
type ReplicaStatus struct {
	ReplicaID             int32
	DirectoryID           [16]byte
	Endpoints             []Endpoint // voters: their listeners
	LogEndOffset          int64      // -1 unknown
	LastFetchTimestamp    int64      // -1 unknown
	LastCaughtUpTimestamp int64      // -1 unknown
}

// Status is a snapshot of the core's state.
type Status struct {
	ID               int32
	Role             Role
	Epoch            int32
	LeaderID         int32
	VotedID          int32
	HighWatermark    int64
	LogStartOffset   int64
	LogEndOffset     int64
	LastEpoch        int32
	EpochStartOffset int64 // leader only: offset of its LeaderChange record
	Voters           []ReplicaStatus
	Observers        []ReplicaStatus
	// VoterSet is the latest voter set (of the log, else the static one),
	// KRaftVersion the latest kraft.version.
	VoterSet     VoterSet
	KRaftVersion int16
	// LeaderEndpoints are the advertised leader's endpoints (the local
	// listeners when leading, what the leader sent when following).
	LeaderEndpoints []Endpoint
}
