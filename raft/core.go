package raft

import (
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka error codes the core answers with.
var (
	errNone                 int16 = 0
	errNotLeaderOrFollower        = kerr.NotLeaderForPartition.Code
	errInvalidRequest             = kerr.InvalidRequest.Code
	errFencedLeaderEpoch          = kerr.FencedLeaderEpoch.Code
	errUnknownLeaderEpoch         = kerr.UnknownLeaderEpoch.Code
	errInconsistentVoterSet       = kerr.InconsistentVoterSet.Code
)

// ErrNotLeader is returned by Propose/Append when this replica is not the leader.
var ErrNotLeader = errors.New("raft: not the leader")

// CoreConfig configures a Core. Times are milliseconds on the caller's clock.
type CoreConfig struct {
	ID int32 // this replica; -1 for an anonymous observer
	// DirectoryID is the directory.id of this replica's metadata log dir.
	DirectoryID [16]byte
	// StaticVoters is the voter set of controller.quorum.voters (empty with
	// controller.quorum.bootstrap.servers); Voters, when StaticVoters is
	// empty, names static voters without endpoints (tests).
	StaticVoters VoterSet
	Voters       []int32
	// ListenerName is the default controller listener
	// (controller.listener.names[0]): requests go to voters' endpoints on it.
	ListenerName string
	// LocalEndpoints are this replica's controller listeners (what it
	// advertises as leader and in its voter entry).
	LocalEndpoints []Endpoint
	// KRaftMin/KRaftMax: the kraft.version range this replica supports (0-1).
	KRaftMin, KRaftMax int16
	// CanBecomeVoter: process.roles contains controller.
	CanBecomeVoter bool
	// AutoJoin: controller.quorum.auto.join.enable; an observer that can
	// become a voter adds itself (and removes an old voter with its id).
	AutoJoin bool
	// Bootstrap are controller.quorum.bootstrap.servers (else the static
	// voters' endpoints): a replica without a leader fetches from one of them
	// to discover it, as Message.To -2-i with ToAddr.
	Bootstrap []Endpoint
	// Control are the control records of the snapshot and log.
	Control ControlRecords
	// ElectionTimeoutMs: controller.quorum.election.timeout.ms (1000).
	ElectionTimeoutMs int64
	// FetchTimeoutMs: controller.quorum.fetch.timeout.ms (2000).
	FetchTimeoutMs int64
	// ElectionBackoffMaxMs: controller.quorum.election.backoff.max.ms (1000).
	ElectionBackoffMaxMs int64
	// RequestTimeoutMs: controller.quorum.request.timeout.ms (2000).
	RequestTimeoutMs int64
	// RetryBackoffMs: controller.quorum.retry.backoff.ms (20).
	RetryBackoffMs int64
	// FetchMaxWaitMs is the MaxWaitMs a follower puts in Fetch (500).
	FetchMaxWaitMs int64
	// FetchSnapshotMaxBytes: controller.quorum.fetch.snapshot.max.bytes (1 MiB).
	FetchSnapshotMaxBytes int32
	Rand                  *rand.Rand

	// Restored state: the quorum-state file, the log and its snapshots.
	State     HardState
	LogStart  int64
	LogEnd    int64
	Epochs    []EpochStart
	Snapshots []SnapshotInfo
	NowMs     int64
}

func (c *CoreConfig) defaults() {
	if c.ElectionTimeoutMs <= 0 {
		c.ElectionTimeoutMs = 1000
	}
	if c.FetchTimeoutMs <= 0 {
		c.FetchTimeoutMs = 2000
	}
	if c.ElectionBackoffMaxMs <= 0 {
		c.ElectionBackoffMaxMs = 1000
	}
	if c.RequestTimeoutMs <= 0 {
		c.RequestTimeoutMs = 2000
	}
	if c.RetryBackoffMs <= 0 {
		c.RetryBackoffMs = 20
	}
	if c.FetchMaxWaitMs <= 0 {
		c.FetchMaxWaitMs = 500
	}
	if c.FetchSnapshotMaxBytes <= 0 {
		c.FetchSnapshotMaxBytes = 1 << 20
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewSource(1))
	}
}

type replicaState struct {
	key            ReplicaKey
	endOffset      int64 // -1 unknown
	lastFetchMs    int64 // -1 never
	lastCaughtUpMs int64 // -1 never
	// leader end offset at the previous fetch, for the caught-up rule
	leaderEndAtLastFetch int64
	beginAcked           bool
	beginSentMs          int64
	// last FetchSnapshot from this replica (counts for check quorum)
	lastSnapshotFetchMs int64
}

type parkedFetch struct {
	req      Message
	deadline int64
	hw       int64
}

// Core is the KRaft replica state machine. It performs no I/O and reads no clock:
// feed it messages (Step), time (Tick) and proposals (Propose); drain Ready,
// act on it in order, then Advance. Not safe for concurrent use.
type Core struct {
	cfg     CoreConfig
	id      int32
	dir     [16]byte
	ctl     controlHistory
	voters  []int32 // ids of ctl.lastVoters()
	isVoter bool    // this replica's key is in ctl.lastVoters()
	rand    *rand.Rand
	now     int64

	role     Role
	epoch    int32
	leader   int32
	votedID  int32
	votedDir [16]byte
	leaderEP []Endpoint // follower: the leader's endpoints (from it or the voter set)

	epochs    epochCache
	logStart  int64          // log start offset: below it only snapshots
	snapshots []SnapshotInfo // frozen snapshots, ascending
	leo       int64          // log end offset including entries not yet handed to the environment
	handed    int64          // log end offset handed to the environment (Ready)
	written   int64          // log end offset the environment has in the log, readable (LogWritten, Advance)
	flushed   int64          // log end offset the environment has made durable (LogFlushed, Advance)
	logGen    uint64         // bumped whenever handed entries are truncated (or replaced by a snapshot)
	hw        int64          // -1 unknown

	electionDeadline int64

	// Prospective / Candidate
	votes map[int32]bool

	// Follower / observer fetch loop
	fetchDeadline  int64 // follower: fetch timeout expiry
	fetchInflight  uint64
	fetchSentMs    int64
	fetchRetryAt   int64
	leaderResigned bool
	lastContact    int64           // last successful contact with the leader of this epoch
	fetchingSnap   *OffsetAndEpoch // snapshot being downloaded (FetchSnapshot)
	snapPos        int64           // bytes of it received
	// voter set maintenance (pollFollowerAsVoter, pollFollowerAsObserver):
	// UpdateRaftVoter to the leader, or AddRaftVoter/RemoveRaftVoter (auto join)
	updateVoterAt    int64
	updatedLeader    bool // kraft.version 0: the leader took our UpdateRaftVoter this epoch
	voterReqInflight uint64

	// Leader
	hwKnown      bool // the high watermark was established in this epoch
	epochStart   int64
	voterStates  map[int32]*replicaState      // the voters but this replica
	observers    map[ReplicaKey]*replicaState // replicas with ids that are not voters
	parked       []parkedFetch
	checkQuorum  int64 // deadline
	grantingVote []int32
	change       *voterChange // the pending AddRaftVoter / RemoveRaftVoter
	// volatileVoters: at kraft.version 0, the static voters with what their
	// UpdateRaftVoter requests taught (directory ids, endpoints, kraft.version
	// ranges); an upgrade to kraft.version 1 writes them (KRaftVersionUpgrade).
	volatileVoters *VoterSet
	upgrading      bool // an upgrade of kraft.version was appended in this epoch

	// Resigned
	endSentMs  int64
	successors []ReplicaKey // preferred candidates named in EndQuorumEpoch

	nextID uint64

	// pending output
	hsDirty      bool
	truncateTo   int64
	entries      []Entry
	msgs         []Message
	hwChanged    bool
	snapChunks   []SnapshotChunk
	snapLoad     *SnapshotInfo
	lastReported LeaderAndEpoch
	err          error
}

// NewCore restores a replica from its persisted quorum state and log.
func NewCore(cfg CoreConfig) (*Core, error) {
	cfg.defaults()
	c := &Core{
		cfg:        cfg,
		id:         cfg.ID,
		dir:        cfg.DirectoryID,
		rand:       cfg.Rand,
		now:        cfg.NowMs,
		epoch:      cfg.State.LeaderEpoch,
		leader:     cfg.State.LeaderID,
		votedID:    cfg.State.VotedID,
		votedDir:   cfg.State.VotedDirectoryID,
		epochs:     epochCache(slices.Clone(cfg.Epochs)),
		logStart:   cfg.LogStart,
		snapshots:  slices.Clone(cfg.Snapshots),
		leo:        cfg.LogEnd,
		handed:     cfg.LogEnd,
		written:    cfg.LogEnd,
		flushed:    cfg.LogEnd,
		hw:         -1,
		truncateTo: -1,
		lastReported: LeaderAndEpoch{
			LeaderID: NoLeader, Epoch: -1,
		},
		lastContact: cfg.NowMs,
	}
	c.ctl.static = cfg.StaticVoters
	if c.ctl.static.Len() == 0 && len(cfg.Voters) > 0 {
		var vs []Voter
		for _, id := range cfg.Voters {
			vs = append(vs, Voter{Key: ReplicaKey{ID: id}})
		}
		st, err := NewVoterSet(vs...)
		if err != nil {
			return nil, err
		}
		c.ctl.static = st
	}
	c.ctl.kraft = slices.Clone(cfg.Control.KRaftVersions)
	c.ctl.voters = slices.Clone(cfg.Control.Voters)
	c.refreshVoters()
	if len(c.voters) == 0 && len(cfg.Bootstrap) == 0 {
		return nil, errors.New("raft: no voters and no bootstrap servers")
	}
	slices.SortFunc(c.snapshots, func(a, b SnapshotInfo) int { return compareOffsetAndEpoch(a.ID, b.ID) })
	if le := c.lastEpoch(); le > c.epoch {
		// The quorum-state file is older than the log (lost or replaced):
		// start unattached in the log's epoch (QuorumState.initialize).
		c.epoch, c.leader, c.votedID, c.votedDir, c.hsDirty = le, NoLeader, NoLeader, [16]byte{}, true
	}
	switch {
	case c.leader == c.id && c.id >= 0:
		// A leader that restarts cannot resume: it resigns its epoch (QuorumState.initialize).
		c.role = RoleResigned
		c.resetElectionTimer()
	case c.leader >= 0:
		c.role = RoleFollower
		c.leaderEP = c.voterEndpoints(c.leader)
		c.startFollowing()
	case c.votedID == c.id && (c.votedDir == [16]byte{} || c.votedDir == c.dir) && c.canCampaign():
		// Voted for itself: it was a candidate; campaign again in the same epoch.
		c.role = RoleCandidate
		c.startCandidacy()
	default:
		c.role = RoleUnattached
		c.resetElectionTimer()
	}
	// A sole voter elects itself at once.
	if c.isOnlyVoter() && c.role != RoleCandidate && c.role != RoleLeader {
		c.becomeCandidate()
	}
	return c, c.takeErr()
}

// localKey is this replica's key.
func (c *Core) localKey() ReplicaKey { return ReplicaKey{ID: c.id, DirectoryID: c.dir} }

// localVoter is this replica as a voter entry (QuorumState.localVoterNodeOrThrow).
func (c *Core) localVoter() Voter {
	return Voter{Key: c.localKey(), Endpoints: slices.Clone(c.cfg.LocalEndpoints), KRaftMin: c.cfg.KRaftMin, KRaftMax: c.cfg.KRaftMax}
}

// refreshVoters recomputes the voter ids and membership after the voter
// set history changed; a leader moves replicas between voters and observers.
func (c *Core) refreshVoters() {
	vs := c.ctl.lastVoters()
	c.voters = vs.IDs()
	c.isVoter = c.id >= 0 && vs.IsVoter(c.localKey())
	if c.role == RoleLeader {
		c.updateVoterStates()
	}
}

// voterEndpoints returns the endpoints of voter id in the latest voter set.
func (c *Core) voterEndpoints(id int32) []Endpoint {
	if v, ok := c.ctl.lastVoters().Get(id); ok {
		return v.Endpoints
	}
	return nil
}

// addrOf returns host:port of id on the default listener ("" unknown).
func (c *Core) addrOf(id int32) string {
	if id == c.leader && c.role == RoleFollower {
		if a := endpointAddr(c.leaderEP, c.cfg.ListenerName); a != "" {
			return a
		}
	}
	return endpointAddr(c.voterEndpoints(id), c.cfg.ListenerName)
}

func endpointAddr(eps []Endpoint, listener string) string {
	for _, e := range eps {
		if e.Name == listener {
			return e.Addr()
		}
	}
	return ""
}

// canCampaign: a voter of the latest voter set may start an election, and
// so may a voter of the voter set before it while the latest one may be
// uncommitted (the high watermark has not passed it, or is unknown after a
// restart): a leader appends a voter set only once the previous one is
// committed, so that one is. Without this, a leader that appended its own
// removal and lost its epoch before the removal committed may hold the only
// up-to-date log of a quorum that then cannot elect anyone (Kafka 4.4 has
// this hole; openraft fixed it the same way). It counts its own vote only
// while it is in the latest set, and a leader that is not resigns once that
// set is committed.
func (c *Core) canCampaign() bool {
	if c.isVoter {
		return true
	}
	n := len(c.ctl.voters)
	if c.id < 0 || n == 0 || c.hw > c.ctl.voters[n-1].Offset {
		return false
	}
	prev := c.ctl.static
	if n >= 2 {
		prev = c.ctl.voters[n-2].Voters
	}
	return prev.IsVoter(c.localKey())
}

func (c *Core) isOnlyVoter() bool { return c.ctl.lastVoters().IsOnlyVoter(c.localKey()) }

func (c *Core) isKnownVoter(id int32) bool { return c.ctl.lastVoters().HasID(id) }

// KRaftVersion returns the latest kraft.version of the log, or the one an
// upgrade in progress asks for (KafkaRaftClient.kraftVersion).
func (c *Core) KRaftVersion() int16 { return c.ctl.kraftVersion() }

// Voters returns the latest voter set.
func (c *Core) Voters() VoterSet { return c.ctl.lastVoters() }

// ControlAt returns the snapshot control records in effect at offset:
// the kraft.version, and the voter set when the kraft.version is 1.
func (c *Core) ControlAt(offset int64) SnapshotControl {
	ctl := SnapshotControl{KRaftVersion: c.ctl.kraftVersionAt(offset)}
	if ctl.KRaftVersion > 0 {
		if vs, ok := c.ctl.votersAt(offset); ok {
			ctl.Voters = &vs
		}
	}
	return ctl
}

func (c *Core) majority() int { return len(c.voters)/2 + 1 }

// Epoch returns the current epoch.
func (c *Core) Epoch() int32 { return c.epoch }

// Role returns the current role.
func (c *Core) Role() Role { return c.role }

// LeaderAndEpoch returns the leader and the epoch: the leader is known only
// while this replica leads or follows (-1 otherwise, also once resigned).
func (c *Core) LeaderAndEpoch() LeaderAndEpoch {
	return LeaderAndEpoch{LeaderID: c.advertisedLeader(), Epoch: c.epoch}
}

// advertisedLeader is the leader this replica names in responses: itself when
// leading, its leader when following, otherwise none (a retained leader of a
// Prospective replica is hearsay).
func (c *Core) advertisedLeader() int32 {
	switch c.role {
	case RoleLeader, RoleFollower:
		return c.leader
	}
	return NoLeader
}

// advertisedLeaderEndpoints are the endpoints of the advertised leader
// (QuorumState.leaderEndpoints): the local listeners when leading.
func (c *Core) advertisedLeaderEndpoints() []Endpoint {
	switch c.role {
	case RoleLeader:
		return c.cfg.LocalEndpoints
	case RoleFollower:
		if len(c.leaderEP) > 0 {
			return c.leaderEP
		}
		return c.voterEndpoints(c.leader)
	}
	return nil
}

// HighWatermark returns the high watermark (-1 unknown).
func (c *Core) HighWatermark() int64 { return c.hw }

// Status returns a snapshot of the state.
func (c *Core) Status() Status {
	s := Status{
		ID: c.id, Role: c.role, Epoch: c.epoch, LeaderID: c.leader, VotedID: c.votedID,
		HighWatermark: c.hw, LogStartOffset: c.logStart, LogEndOffset: c.leo, LastEpoch: c.lastEpoch(), EpochStartOffset: -1,
		VoterSet: c.ctl.lastVoters(), KRaftVersion: c.KRaftVersion(), LeaderEndpoints: slices.Clone(c.advertisedLeaderEndpoints()),
	}
	if c.role != RoleLeader {
		return s
	}
	s.EpochStartOffset = c.epochStart
	for _, v := range c.ctl.lastVoters().Voters() {
		if v.Key.ID == c.id && c.isVoter {
			s.Voters = append(s.Voters, ReplicaStatus{ReplicaID: v.Key.ID, DirectoryID: v.Key.DirectoryID, Endpoints: v.Endpoints,
				LogEndOffset: c.flushed, LastFetchTimestamp: c.now, LastCaughtUpTimestamp: c.now})
			continue
		}
		r := c.voterStates[v.Key.ID]
		if r == nil {
			continue
		}
		s.Voters = append(s.Voters, ReplicaStatus{ReplicaID: v.Key.ID, DirectoryID: r.key.DirectoryID, Endpoints: v.Endpoints,
			LogEndOffset: r.endOffset, LastFetchTimestamp: r.lastFetchMs, LastCaughtUpTimestamp: r.lastCaughtUpMs})
	}
	var obs []ReplicaKey
	for k := range c.observers {
		obs = append(obs, k)
	}
	if !c.isVoter {
		// a leader being removed describes itself as an observer
		obs = append(obs, c.localKey())
	}
	slices.SortFunc(obs, compareReplicaKey)
	for _, k := range obs {
		if k == c.localKey() && !c.isVoter {
			s.Observers = append(s.Observers, ReplicaStatus{ReplicaID: k.ID, DirectoryID: k.DirectoryID,
				LogEndOffset: c.flushed, LastFetchTimestamp: c.now, LastCaughtUpTimestamp: c.now})
			continue
		}
		r := c.observers[k]
		s.Observers = append(s.Observers, ReplicaStatus{ReplicaID: k.ID, DirectoryID: k.DirectoryID, LogEndOffset: r.endOffset,
			LastFetchTimestamp: r.lastFetchMs, LastCaughtUpTimestamp: r.lastCaughtUpMs})
	}
	return s
}

func compareReplicaKey(a, b ReplicaKey) int {
	if a.ID != b.ID {
		return int(a.ID) - int(b.ID)
	}
	return bytesCompare(a.DirectoryID[:], b.DirectoryID[:])
}

func bytesCompare(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return 0
}

func (c *Core) fail(err error) {
	if err != nil && c.err == nil {
		c.err = err
	}
}

func (c *Core) takeErr() error {
	err := c.err
	c.err = nil
	return err
}

func (c *Core) newID() uint64 {
	c.nextID++
	return c.nextID
}

// send queues a message; requests get this replica's directory id and,
// when unset, the receiver's address.
func (c *Core) send(m Message) {
	m.From = c.id
	if m.Type != MsgFetchResp && m.Type != MsgFetchSnapshotResp {
		m.ReadFrom, m.ReadTo = -1, -1
	}
	if !m.Type.IsResponse() {
		m.FromDir = c.dir
		if m.ToAddr == "" {
			m.ToAddr = c.addrOf(m.To)
		}
	} else if m.LeaderID >= 0 && m.LeaderEndpoints == nil {
		m.LeaderEndpoints = c.advertisedLeaderEndpoints()
	}
	c.msgs = append(c.msgs, m)
}

// ---------------------------------------------------------------------------
// timers

func (c *Core) randomElectionTimeout() int64 {
	t := c.cfg.ElectionTimeoutMs
	return t + c.rand.Int63n(t)
}

func (c *Core) resetElectionTimer() { c.electionDeadline = c.now + c.randomElectionTimeout() }

// ---------------------------------------------------------------------------
// transitions

func (c *Core) setHardState(epoch, leader, voted int32) {
	dir := c.votedDir
	if voted != c.votedID || epoch != c.epoch {
		dir = [16]byte{}
	}
	c.setHardStateKey(epoch, leader, voted, dir)
}

func (c *Core) setHardStateKey(epoch, leader, voted int32, votedDir [16]byte) {
	if epoch < c.epoch {
		c.fail(violation("epoch going back from %d to %d on %d", c.epoch, epoch, c.id))
		return
	}
	if epoch == c.epoch && c.leader >= 0 && leader >= 0 && leader != c.leader {
		c.fail(violation("two leaders in epoch %d: %d and %d (seen by %d)", epoch, c.leader, leader, c.id))
		return
	}
	if epoch != c.epoch || leader != c.leader || voted != c.votedID || votedDir != c.votedDir {
		c.hsDirty = true
	}
	c.epoch, c.leader, c.votedID, c.votedDir = epoch, leader, voted, votedDir
}

func (c *Core) leaveRole() {
	if c.role == RoleLeader {
		// answer parked fetches: we are no longer the leader
		for _, p := range c.parked {
			c.send(Message{Type: MsgFetchResp, To: p.req.From, ID: p.req.ID, Epoch: c.epoch, LeaderID: NoLeader,
				Error: errNotLeaderOrFollower, HighWatermark: c.advertisedHW(), ReadFrom: -1})
		}
		c.parked = nil
		c.voterStates, c.observers = nil, nil
		c.abortChange(errNotLeaderOrFollower, "")
		c.volatileVoters, c.upgrading = nil, false
	}
	c.votes = nil
	c.fetchInflight = 0
	c.voterReqInflight = 0
	c.leaderResigned = false
	c.fetchingSnap = nil
}

func (c *Core) becomeUnattached(epoch int32) {
	c.leaveRole()
	voted, dir := c.votedID, c.votedDir
	if epoch != c.epoch {
		voted, dir = NoLeader, [16]byte{}
	}
	c.role = RoleUnattached
	c.leaderEP = nil
	c.setHardStateKey(epoch, NoLeader, voted, dir)
	c.resetElectionTimer()
	c.fetchRetryAt = c.now
}

// becomeFollower follows leader in epoch; eps are the leader's endpoints
// when the message that named it carried them (else the voter set's).
func (c *Core) becomeFollower(epoch, leader int32, eps []Endpoint) {
	c.leaveRole()
	voted, dir := c.votedID, c.votedDir
	if epoch != c.epoch {
		voted, dir = NoLeader, [16]byte{}
	}
	if epoch != c.epoch || leader != c.leader {
		// a new leader: it was alive recently. Rejoining the leader we had
		// keeps the old contact time, so a dead leader is not revived by
		// hearsay and a voter that lost it keeps granting pre-votes.
		c.lastContact = c.now
		c.updatedLeader = false
	}
	if len(eps) == 0 {
		eps = c.voterEndpoints(leader)
	}
	c.leaderEP = slices.Clone(eps)
	c.role = RoleFollower
	c.setHardStateKey(epoch, leader, voted, dir)
	c.startFollowing()
}

func (c *Core) startFollowing() {
	c.fetchDeadline = max(c.lastContact+c.cfg.FetchTimeoutMs, c.now+c.cfg.FetchTimeoutMs/2)
	c.fetchInflight = 0
	c.fetchRetryAt = c.now
	c.updateVoterAt = c.now + c.cfg.FetchTimeoutMs // FollowerState.updateVoterSetPeriodTimer
	c.sendFetch()
}

func (c *Core) becomeProspective() {
	if !c.canCampaign() {
		// no longer a voter (the voter set changed): look for the leader
		if c.role != RoleUnattached && c.role != RoleFollower {
			c.becomeUnattached(c.epoch)
		}
		return
	}
	c.leaveRole()
	if c.leader == c.id {
		c.setHardState(c.epoch, NoLeader, c.votedID)
	}
	c.role = RoleProspective
	c.votes = map[int32]bool{c.id: true}
	c.resetElectionTimer()
	if c.countVotes() >= c.majority() {
		c.becomeCandidate()
		return
	}
	c.sendVotes(true)
}

// sendVotes asks every other voter for its (pre-)vote, naming its key. A
// pre-vote carries the current epoch (KafkaRaftClient.buildVoteRequest):
// the epoch is bumped only once a majority granted it.
func (c *Core) sendVotes(pre bool) {
	epoch := c.epoch
	for _, v := range c.ctl.lastVoters().Voters() {
		if v.Key.ID == c.id {
			continue
		}
		key := v.Key
		c.send(Message{Type: MsgVote, To: v.Key.ID, ID: c.newID(), Epoch: epoch, PreVote: pre,
			LastEpoch: c.lastEpoch(), LastOffset: c.leo, VoterKey: &key})
	}
}

func (c *Core) becomeCandidate() {
	c.leaveRole()
	c.role = RoleCandidate
	c.setHardStateKey(c.epoch+1, NoLeader, c.id, c.dir)
	c.startCandidacy()
}

func (c *Core) startCandidacy() {
	c.votes = map[int32]bool{c.id: true}
	c.resetElectionTimer()
	if c.countVotes() >= c.majority() {
		c.becomeLeader()
		return
	}
	c.sendVotes(false)
}

// countVotes counts the granted votes of current voters.
func (c *Core) countVotes() int {
	n := 0
	for id, g := range c.votes {
		if g && (id != c.id && c.isKnownVoter(id) || id == c.id && c.isVoter) {
			n++
		}
	}
	return n
}

func (c *Core) becomeLeader() {
	granting := []int32{}
	for id, g := range c.votes {
		if g {
			granting = append(granting, id)
		}
	}
	slices.Sort(granting)
	c.leaveRole()
	c.role = RoleLeader
	c.leaderEP = nil
	c.setHardState(c.epoch, c.id, c.votedID)
	c.grantingVote = granting
	c.voterStates, c.observers = map[int32]*replicaState{}, map[ReplicaKey]*replicaState{}
	c.updateVoterStates()
	c.checkQuorum = c.now + c.checkQuorumTimeout()
	c.hwKnown = false
	// The epoch starts with a LeaderChange control record
	// (LeaderState.appendStartOfEpochControlRecords) ...
	c.epochStart = c.leo
	lcm := kmsg.NewLeaderChangeMessage()
	lcm.LeaderID = c.id
	for _, v := range c.voters {
		lv := kmsg.NewLeaderChangeMessageVoter()
		lv.VoterID = v
		lcm.Voters = append(lcm.Voters, lv)
	}
	for _, v := range granting {
		lv := kmsg.NewLeaderChangeMessageVoter()
		lv.VoterID = v
		lcm.GrantingVoters = append(lcm.GrantingVoters, lv)
	}
	e := Entry{Control: true, ControlType: ControlLeaderChange, Records: [][]byte{lcm.AppendTo(nil)}}
	kv := c.ctl.kraftVersion()
	last, hasLast := c.ctl.lastVotersEntry()
	local := c.localVoter()
	switch {
	case kv >= 1 && hasLast && (last.Offset == -1 || last.Voters.NeedsUpdate(local)):
		// ... followed, at kraft.version 1, by the voter set when it comes
		// from the bootstrap checkpoint (never replicated) or does not have
		// this leader's current endpoints and kraft.version range.
		updated, ok := last.Voters.Update(local)
		if !ok {
			c.fail(fmt.Errorf("raft: update expected for leader node %v and voter set %v", local.Key, last.Voters))
			return
		}
		e.ControlTypes = []int16{ControlLeaderChange, ControlKRaftVersion, ControlKRaftVoters}
		e.Records = append(e.Records, EncodeKRaftVersionRecord(kv), EncodeVotersRecord(updated))
	case kv == 0:
		// kraft.version 0: the static voters with this leader's key and
		// endpoints, completed by the followers' UpdateRaftVoter requests.
		if vv, ok := c.ctl.lastVoters().UpdateIgnoringDirectoryID(local); ok {
			c.volatileVoters = &vv
		}
	}
	c.appendLocal(e)
	for _, v := range c.voters {
		if v != c.id {
			c.sendBeginQuorumEpoch(v)
		}
	}
}

// updateVoterStates moves replicas between the voters and the observers
// after the voter set changed (LeaderState.updateVoterAndObserverStates).
func (c *Core) updateVoterStates() {
	if c.voterStates == nil {
		return
	}
	old := c.voterStates
	c.voterStates = map[int32]*replicaState{}
	for _, v := range c.ctl.lastVoters().Voters() {
		if v.Key.ID == c.id {
			continue
		}
		r := old[v.Key.ID]
		if r == nil || !r.matches(v.Key) {
			if o := c.observers[v.Key]; o != nil {
				r = o
			} else if r == nil || !r.matches(v.Key) {
				r = newReplicaState(v.Key)
			}
		}
		delete(c.observers, v.Key)
		delete(old, v.Key.ID)
		r.key = v.Key
		c.voterStates[v.Key.ID] = r
	}
	for _, r := range old {
		if r.key.ID >= 0 {
			c.observers[r.key] = r
		}
	}
}

func newReplicaState(k ReplicaKey) *replicaState {
	return &replicaState{key: k, endOffset: -1, lastFetchMs: -1, lastCaughtUpMs: -1}
}

// matches is ReplicaState.matchesKey.
func (r *replicaState) matches(k ReplicaKey) bool {
	return r.key.ID == k.ID && (!r.key.hasDir() || r.key.DirectoryID == k.DirectoryID)
}

func (c *Core) sendBeginQuorumEpoch(to int32) {
	r := c.voterStates[to]
	if r == nil {
		return
	}
	r.beginSentMs = c.now
	key := r.key
	c.send(Message{Type: MsgBeginQuorumEpoch, To: to, ID: c.newID(), Epoch: c.epoch, LeaderID: c.id,
		VoterKey: &key, LeaderEndpoints: slices.Clone(c.cfg.LocalEndpoints)})
}

func (c *Core) checkQuorumTimeout() int64 { return c.cfg.FetchTimeoutMs * 3 / 2 }

// Resign gives up leadership of the current epoch (graceful shutdown): the
// leader becomes Resigned and sends EndQuorumEpoch to the other voters, with
// the most caught-up voters as preferred successors.
func (c *Core) Resign() error {
	if c.role != RoleLeader {
		return nil
	}
	c.successors = c.preferredSuccessors()
	c.leaveRole()
	c.role = RoleResigned
	c.resetElectionTimer()
	c.sendEndQuorumEpoch(c.successors)
	return c.takeErr()
}

// preferredSuccessors are the other voters, most caught up first
// (LeaderState.nonLeaderVotersByDescendingFetchOffset).
func (c *Core) preferredSuccessors() []ReplicaKey {
	var succ []*replicaState
	for _, v := range c.voters {
		if r := c.voterStates[v]; v != c.id && r != nil {
			succ = append(succ, r)
		}
	}
	sort.SliceStable(succ, func(i, j int) bool { return succ[i].endOffset > succ[j].endOffset })
	out := make([]ReplicaKey, len(succ))
	for i, r := range succ {
		out[i] = r.key
	}
	return out
}

func (c *Core) sendEndQuorumEpoch(succ []ReplicaKey) {
	c.endSentMs = c.now
	for _, v := range c.voters {
		if v != c.id {
			c.send(Message{Type: MsgEndQuorumEpoch, To: v, ID: c.newID(), Epoch: c.epoch, LeaderID: c.id,
				PreferredCandidates: slices.Clone(succ), LeaderEndpoints: slices.Clone(c.cfg.LocalEndpoints)})
		}
	}
}

// ---------------------------------------------------------------------------
// log

func (c *Core) appendLocal(e Entry) {
	n := int64(len(e.Records))
	if n == 0 {
		n = 1
	}
	e.Offset = c.leo
	e.LastOffset = c.leo + n - 1
	e.Epoch = c.epoch
	e.AppendTimeMs = c.now
	c.epochs.assign(e.Epoch, e.Offset)
	c.leo = e.LastOffset + 1
	c.entries = append(c.entries, e)
	c.applyControl(e)
}

// applyControl records the KRaftVersion and Voters records of an appended
// batch: a voter set takes effect once appended, committed or not.
func (c *Core) applyControl(e Entry) {
	if !e.Control {
		return
	}
	recs, err := entryControlRecords(e)
	if err != nil {
		c.fail(err)
		return
	}
	changed := false
	for _, r := range recs {
		if r.typ == ControlKRaftVoters || r.typ == ControlKRaftVersion {
			changed = true
		}
	}
	if !changed {
		return
	}
	if err := c.ctl.apply(recs); err != nil {
		c.fail(err)
		return
	}
	c.refreshVoters()
}

// truncate removes every offset >= offset from the log.
func (c *Core) truncate(offset int64) {
	if offset >= c.leo {
		return
	}
	if c.hw >= 0 && offset < c.hw {
		c.fail(violation("replica %d truncating to %d below high watermark %d", c.id, offset, c.hw))
		return
	}
	// drop pending entries at or above offset
	kept := c.entries[:0]
	for _, e := range c.entries {
		if e.Offset < offset {
			if e.LastOffset >= offset {
				c.fail(fmt.Errorf("raft: truncation offset %d inside batch [%d,%d]", offset, e.Offset, e.LastOffset))
			}
			kept = append(kept, e)
		}
	}
	c.entries = kept
	if offset < c.handed {
		// Entries the environment has (or is writing) go: acknowledgements
		// of Readys taken before this one no longer say anything.
		if c.truncateTo < 0 || offset < c.truncateTo {
			c.truncateTo = offset
		}
		c.handed = offset
		c.logGen++
	}
	c.written = min(c.written, offset)
	c.flushed = min(c.flushed, offset)
	c.leo = offset
	c.epochs.truncateFrom(offset)
	c.ctl.truncateNew(offset)
	c.refreshVoters()
}

func (c *Core) setHW(hw int64) {
	if hw <= c.hw {
		if hw >= 0 && hw < c.hw {
			// A leader only counts offsets past its epoch start, which is
			// past everything committed before: a lower value is a bug.
			c.fail(violation("replica %d high watermark going back from %d to %d", c.id, c.hw, hw))
		}
		return
	}
	if hw > c.leo {
		c.fail(violation("replica %d high watermark %d beyond log end %d", c.id, hw, c.leo))
		return
	}
	c.hw = hw
	c.hwChanged = true
}

// Propose appends records as one batch of the leader's epoch. It returns the
// batch's offsets; the batch is committed when the high watermark passes last.
func (c *Core) Propose(records [][]byte) (base, last int64, err error) {
	if c.role != RoleLeader {
		return -1, -1, ErrNotLeader
	}
	if len(records) == 0 {
		return -1, -1, errors.New("raft: empty batch")
	}
	c.appendLocal(Entry{Records: records})
	e := c.entries[len(c.entries)-1]
	return e.Offset, e.LastOffset, c.takeErr()
}

// ---------------------------------------------------------------------------
// Ready

// HasReady reports whether Ready has anything to do.
func (c *Core) HasReady() bool {
	return c.hsDirty || c.truncateTo >= 0 || len(c.entries) > 0 || len(c.msgs) > 0 || c.hwChanged ||
		len(c.snapChunks) > 0 || c.snapLoad != nil || c.lastReported != c.LeaderAndEpoch()
}

// Ready returns the pending work. The caller must act on it and call Advance
// before calling Step, Tick or Propose again.
func (c *Core) Ready() Ready {
	rd := Ready{TruncateTo: c.truncateTo, Entries: c.entries, Messages: c.msgs,
		HighWatermark: c.hw, HWChanged: c.hwChanged, SnapshotChunks: c.snapChunks, LoadSnapshot: c.snapLoad, logEnd: c.leo, logGen: c.logGen}
	c.handed = c.leo
	if c.hsDirty {
		hs := HardState{LeaderEpoch: c.epoch, LeaderID: c.leader, VotedID: c.votedID, VotedDirectoryID: c.votedDir,
			KRaftVersion: c.ctl.kraftVersion()}
		rd.HardState = &hs
	}
	if le := c.LeaderAndEpoch(); le != c.lastReported {
		rd.LeaderChange = &le
		c.lastReported = le
	}
	c.hsDirty = false
	c.truncateTo = -1
	c.entries = nil
	c.msgs = nil
	c.hwChanged = false
	c.snapChunks = nil
	c.snapLoad = nil
	return rd
}

// Advance tells the core that rd has been carried out: state persisted, log
// truncated, entries appended and flushed, messages handed to the network.
func (c *Core) Advance(rd Ready) error {
	c.logDone(rd, true)
	if c.role == RoleLeader {
		c.maybeAdvanceHW()
		c.completeParked(false)
	}
	return c.takeErr()
}

// LogWritten tells the core that the log work of rd (and of every Ready
// before it) is done but not yet durable: its entries can be read and served
// to followers. For an environment that persists the log asynchronously
// (see Ready); it calls it for each Ready with log work, in order.
func (c *Core) LogWritten(rd Ready) error {
	c.logDone(rd, false)
	return c.takeErr()
}

// LogFlushed tells the core that the log work of rd (and of every Ready
// before it) is durable: a leader counts its log up to there for the high
// watermark, a follower fetches from there.
func (c *Core) LogFlushed(rd Ready) error {
	c.logDone(rd, true)
	return c.takeErr()
}

// logDone records that the log holds rd's end offset (durably with
// flushed), unless a truncation since rd was taken made that meaningless:
// the Ready carrying the truncation acknowledges the new end.
func (c *Core) logDone(rd Ready, flushed bool) {
	if rd.logGen != c.logGen || rd.logEnd > c.handed {
		return
	}
	if rd.logEnd > c.written {
		c.written = rd.logEnd
		if c.role == RoleLeader {
			c.completeParked(false)
		}
	}
	if !flushed || rd.logEnd <= c.flushed {
		return
	}
	c.flushed = rd.logEnd
	switch c.role {
	case RoleLeader:
		c.maybeAdvanceHW()
		c.completeParked(false)
	case RoleFollower:
		// the Fetch held back while entries were not durable
		if c.fetchInflight == 0 && c.now >= c.fetchRetryAt {
			c.sendFetch()
		}
	}
}

// NextTimerMs is when the core's next election timer fires: a follower's
// fetch timeout, an election timeout, a leader's check-quorum (-1: none).
// The Node ticks then as well as on its ticker: Kafka's raft thread wakes at
// its timers' expiry, and two followers whose fetch timeouts expire together
// must not be a tick apart, or the later one becomes a prospective while the
// earlier one's pre-vote is in flight, both grant, and the vote splits.
func (c *Core) NextTimerMs() int64 {
	switch c.role {
	case RoleFollower:
		return c.fetchDeadline
	case RoleLeader:
		return c.checkQuorum
	case RoleUnattached:
		if !c.canCampaign() {
			return -1
		}
	}
	return c.electionDeadline
}

// ReadableHighWatermark is the high watermark capped at the log the
// environment has written: what listeners can read (-1 unknown).
func (c *Core) ReadableHighWatermark() int64 {
	if c.hw < 0 {
		return c.hw
	}
	return min(c.hw, c.written)
}

// ---------------------------------------------------------------------------
// Tick

// Tick advances the core's clock to nowMs and fires expired timers.
func (c *Core) Tick(nowMs int64) error {
	if nowMs > c.now {
		c.now = nowMs
	}
	switch c.role {
	case RoleUnattached:
		if c.canCampaign() {
			if c.now >= c.electionDeadline {
				c.becomeProspective()
			} else if len(c.cfg.Bootstrap) > 0 {
				// KAFKA-17030: an unattached voter fetches from the
				// bootstrap servers while it waits, to find a leader that
				// does not count it a voter (pollUnattachedCommon).
				c.maybeDiscover()
			}
		} else {
			c.maybeDiscover()
		}
	case RoleProspective:
		if c.now >= c.electionDeadline {
			c.becomeProspective()
		} else if len(c.cfg.Bootstrap) > 0 {
			// Kafka's prospective becomes unattached after a lost
			// pre-vote, which fetches from the bootstrap servers.
			c.maybeDiscover()
		}
	case RoleCandidate:
		if c.now >= c.electionDeadline {
			// lost or split: back off through pre-vote (KIP-996)
			c.becomeProspective()
		}
	case RoleFollower:
		if c.now >= c.fetchDeadline {
			if c.canCampaign() {
				c.becomeProspective()
			} else {
				c.becomeUnattached(c.epoch)
			}
			break
		}
		if c.fetchInflight != 0 && c.now-c.fetchSentMs >= c.cfg.RequestTimeoutMs {
			c.fetchInflight = 0
		}
		if c.fetchInflight == 0 && c.now >= c.fetchRetryAt {
			c.sendFetch()
		}
		c.maybeSendVoterRequest()
	case RoleLeader:
		c.leaderTick()
	case RoleResigned:
		if c.now >= c.electionDeadline {
			// KafkaRaftClient.pollResigned: the next epoch, so that nobody
			// keeps following this replica's leadership of the last one.
			c.becomeUnattached(c.epoch + 1)
		} else if c.now-c.endSentMs >= c.cfg.RequestTimeoutMs {
			c.sendEndQuorumEpoch(c.successors)
		}
	}
	return c.takeErr()
}

func (c *Core) leaderTick() {
	c.completeParked(false)
	c.expireChange()
	if c.role != RoleLeader {
		return
	}
	for _, v := range c.voters {
		r := c.voterStates[v]
		if v == c.id || r == nil {
			continue
		}
		if !r.beginAcked && r.lastFetchMs < 0 && c.now-r.beginSentMs >= c.cfg.RequestTimeoutMs/2 {
			c.sendBeginQuorumEpoch(v)
		}
	}
	if c.now >= c.checkQuorum && !c.isOnlyVoter() {
		// check quorum: a majority must have fetched within 1.5 * fetch timeout
		n := 0
		if c.isVoter {
			n = 1
		}
		for _, v := range c.voters {
			if r := c.voterStates[v]; v != c.id && r != nil && max(r.lastFetchMs, r.lastSnapshotFetchMs) >= c.now-c.checkQuorumTimeout() {
				n++
			}
		}
		if n < c.majority() {
			c.Resign()
			return
		}
		c.checkQuorum = c.now + c.cfg.FetchTimeoutMs/2
	}
}

// maybeDiscover: a replica without a leader that is not a voter fetches
// from a bootstrap server (or a random voter) to learn of the leader.
func (c *Core) maybeDiscover() {
	if c.fetchInflight != 0 && c.now-c.fetchSentMs < c.cfg.RequestTimeoutMs {
		return
	}
	if c.now < c.fetchRetryAt {
		return
	}
	if n := len(c.cfg.Bootstrap); n > 0 {
		i := c.rand.Intn(n)
		c.sendFetchTo(BootstrapID(i), c.cfg.Bootstrap[i].Addr())
	} else if len(c.voters) > 0 {
		c.sendFetchTo(c.voters[c.rand.Intn(len(c.voters))], "")
	}
	c.fetchRetryAt = c.now + c.cfg.RetryBackoffMs
}

// BootstrapID is the node id requests to bootstrap server i go to (Kafka
// names bootstrap servers with negative ids too).
func BootstrapID(i int) int32 { return -2 - int32(i) }

func (c *Core) sendFetch() {
	if c.role != RoleFollower || c.leader < 0 {
		return
	}
	if c.fetchingSnap != nil {
		c.sendFetchSnapshotTo(c.leader)
		return
	}
	c.sendFetchTo(c.leader, "")
}

func (c *Core) sendFetchTo(to int32, addr string) {
	if c.flushed < c.leo {
		// The fetch offset tells the leader what this replica holds
		// durably (KafkaRaftClient.appendAsFollower flushes before the next
		// Fetch): wait for LogFlushed, which sends it.
		return
	}
	c.fetchInflight = c.newID()
	c.fetchSentMs = c.now
	// FetcherHW: the high watermark known here, -1 unknown (KIP-1166;
	// KafkaRaftClient.buildFetchRequest).
	c.send(Message{Type: MsgFetch, To: to, ToAddr: addr, ID: c.fetchInflight, Epoch: c.epoch,
		LastOffset: c.leo, LastEpoch: c.lastEpoch(), MaxWaitMs: c.cfg.FetchMaxWaitMs,
		FetcherHW: c.hw, HasFetcherHW: true})
}
