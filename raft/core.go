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
	ID     int32   // this replica; -1 for an anonymous observer
	Voters []int32 // controller.quorum.voters ids
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
	voters  []int32
	isVoter bool
	rand    *rand.Rand
	now     int64

	role    Role
	epoch   int32
	leader  int32
	votedID int32

	epochs    epochCache
	logStart  int64          // log start offset: below it only snapshots
	snapshots []SnapshotInfo // frozen snapshots, ascending
	leo       int64          // log end offset including entries not yet handed to the environment
	flushed   int64          // log end offset the environment has made durable (Advance)
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

	// Leader
	hwKnown      bool // the high watermark was established in this epoch
	epochStart   int64
	replicas     map[int32]*replicaState // voters (not self) and observers with ids
	parked       []parkedFetch
	checkQuorum  int64 // deadline
	grantingVote []int32

	// Resigned
	endSentMs  int64
	successors []int32 // preferred successors named in EndQuorumEpoch

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
		voters:     slices.Clone(cfg.Voters),
		rand:       cfg.Rand,
		now:        cfg.NowMs,
		epoch:      cfg.State.LeaderEpoch,
		leader:     cfg.State.LeaderID,
		votedID:    cfg.State.VotedID,
		epochs:     epochCache(slices.Clone(cfg.Epochs)),
		logStart:   cfg.LogStart,
		snapshots:  slices.Clone(cfg.Snapshots),
		leo:        cfg.LogEnd,
		flushed:    cfg.LogEnd,
		hw:         -1,
		truncateTo: -1,
		lastReported: LeaderAndEpoch{
			LeaderID: NoLeader, Epoch: -1,
		},
		lastContact: cfg.NowMs,
	}
	sort.Slice(c.voters, func(i, j int) bool { return c.voters[i] < c.voters[j] })
	if len(c.voters) == 0 {
		return nil, errors.New("raft: no voters")
	}
	c.isVoter = slices.Contains(c.voters, c.id)
	slices.SortFunc(c.snapshots, func(a, b SnapshotInfo) int { return compareOffsetAndEpoch(a.ID, b.ID) })
	if le := c.lastEpoch(); le > c.epoch {
		// The quorum-state file is older than the log (lost or replaced):
		// start unattached in the log's epoch (QuorumState.initialize).
		c.epoch, c.leader, c.votedID, c.hsDirty = le, NoLeader, NoLeader, true
	}
	switch {
	case c.leader == c.id && c.id >= 0:
		// A leader that restarts cannot resume: it resigns its epoch (QuorumState.initialize).
		c.role = RoleResigned
		c.resetElectionTimer()
	case c.leader >= 0:
		c.role = RoleFollower
		c.startFollowing()
	case c.votedID == c.id && c.isVoter:
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

func (c *Core) isOnlyVoter() bool { return len(c.voters) == 1 && c.voters[0] == c.id }

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

// HighWatermark returns the high watermark (-1 unknown).
func (c *Core) HighWatermark() int64 { return c.hw }

// Status returns a snapshot of the state.
func (c *Core) Status() Status {
	s := Status{
		ID: c.id, Role: c.role, Epoch: c.epoch, LeaderID: c.leader, VotedID: c.votedID,
		HighWatermark: c.hw, LogStartOffset: c.logStart, LogEndOffset: c.leo, LastEpoch: c.lastEpoch(), EpochStartOffset: -1,
	}
	if c.role != RoleLeader {
		return s
	}
	s.EpochStartOffset = c.epochStart
	for _, v := range c.voters {
		if v == c.id {
			s.Voters = append(s.Voters, ReplicaStatus{ReplicaID: v, LogEndOffset: c.flushed, LastFetchTimestamp: c.now, LastCaughtUpTimestamp: c.now})
			continue
		}
		r := c.replicas[v]
		s.Voters = append(s.Voters, ReplicaStatus{ReplicaID: v, LogEndOffset: r.endOffset, LastFetchTimestamp: r.lastFetchMs, LastCaughtUpTimestamp: r.lastCaughtUpMs})
	}
	var obs []int32
	for id := range c.replicas {
		if !slices.Contains(c.voters, id) {
			obs = append(obs, id)
		}
	}
	slices.Sort(obs)
	for _, id := range obs {
		r := c.replicas[id]
		s.Observers = append(s.Observers, ReplicaStatus{ReplicaID: id, LogEndOffset: r.endOffset, LastFetchTimestamp: r.lastFetchMs, LastCaughtUpTimestamp: r.lastCaughtUpMs})
	}
	return s
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

func (c *Core) send(m Message) {
	m.From = c.id
	if m.Type != MsgFetchResp && m.Type != MsgFetchSnapshotResp {
		m.ReadFrom, m.ReadTo = -1, -1
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
	if epoch < c.epoch {
		c.fail(violation("epoch going back from %d to %d on %d", c.epoch, epoch, c.id))
		return
	}
	if epoch == c.epoch && c.leader >= 0 && leader >= 0 && leader != c.leader {
		c.fail(violation("two leaders in epoch %d: %d and %d (seen by %d)", epoch, c.leader, leader, c.id))
		return
	}
	if epoch != c.epoch || leader != c.leader || voted != c.votedID {
		c.hsDirty = true
	}
	c.epoch, c.leader, c.votedID = epoch, leader, voted
}

func (c *Core) leaveRole() {
	if c.role == RoleLeader {
		// answer parked fetches: we are no longer the leader
		for _, p := range c.parked {
			c.send(Message{Type: MsgFetchResp, To: p.req.From, ID: p.req.ID, Epoch: c.epoch, LeaderID: NoLeader,
				Error: errNotLeaderOrFollower, HighWatermark: c.advertisedHW(), ReadFrom: -1})
		}
		c.parked = nil
		c.replicas = nil
	}
	c.votes = nil
	c.fetchInflight = 0
	c.leaderResigned = false
	c.fetchingSnap = nil
}

func (c *Core) becomeUnattached(epoch int32) {
	c.leaveRole()
	voted := c.votedID
	if epoch != c.epoch {
		voted = NoLeader
	}
	c.role = RoleUnattached
	c.setHardState(epoch, NoLeader, voted)
	c.resetElectionTimer()
	c.fetchRetryAt = c.now
}

func (c *Core) becomeFollower(epoch, leader int32) {
	c.leaveRole()
	voted := c.votedID
	if epoch != c.epoch {
		voted = NoLeader
	}
	if epoch != c.epoch || leader != c.leader {
		// a new leader: it was alive recently. Rejoining the leader we had
		// keeps the old contact time, so a dead leader is not revived by
		// hearsay and a voter that lost it keeps granting pre-votes.
		c.lastContact = c.now
	}
	c.role = RoleFollower
	c.setHardState(epoch, leader, voted)
	c.startFollowing()
}

func (c *Core) startFollowing() {
	c.fetchDeadline = max(c.lastContact+c.cfg.FetchTimeoutMs, c.now+c.cfg.FetchTimeoutMs/2)
	c.fetchInflight = 0
	c.fetchRetryAt = c.now
	c.sendFetch()
}

func (c *Core) becomeProspective() {
	if !c.isVoter {
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
	for _, v := range c.voters {
		if v == c.id {
			continue
		}
		c.send(Message{Type: MsgVote, To: v, ID: c.newID(), Epoch: c.epoch + 1, PreVote: true,
			LastEpoch: c.lastEpoch(), LastOffset: c.leo})
	}
}

func (c *Core) becomeCandidate() {
	c.leaveRole()
	c.role = RoleCandidate
	c.setHardState(c.epoch+1, NoLeader, c.id)
	c.startCandidacy()
}

func (c *Core) startCandidacy() {
	c.votes = map[int32]bool{c.id: true}
	c.resetElectionTimer()
	if c.countVotes() >= c.majority() {
		c.becomeLeader()
		return
	}
	for _, v := range c.voters {
		if v == c.id {
			continue
		}
		c.send(Message{Type: MsgVote, To: v, ID: c.newID(), Epoch: c.epoch,
			LastEpoch: c.lastEpoch(), LastOffset: c.leo})
	}
}

func (c *Core) countVotes() int {
	n := 0
	for _, g := range c.votes {
		if g {
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
	c.setHardState(c.epoch, c.id, c.votedID)
	c.grantingVote = granting
	c.replicas = map[int32]*replicaState{}
	for _, v := range c.voters {
		if v != c.id {
			c.replicas[v] = &replicaState{endOffset: -1, lastFetchMs: -1, lastCaughtUpMs: -1}
		}
	}
	c.checkQuorum = c.now + c.checkQuorumTimeout()
	c.hwKnown = false
	// The epoch starts with a LeaderChange control record.
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
	c.appendLocal(Entry{Control: true, ControlType: ControlLeaderChange, Records: [][]byte{lcm.AppendTo(nil)}})
	for _, v := range c.voters {
		if v != c.id {
			c.sendBeginQuorumEpoch(v)
		}
	}
}

func (c *Core) sendBeginQuorumEpoch(to int32) {
	c.replicas[to].beginSentMs = c.now
	c.send(Message{Type: MsgBeginQuorumEpoch, To: to, ID: c.newID(), Epoch: c.epoch, LeaderID: c.id})
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

func (c *Core) preferredSuccessors() []int32 {
	var succ []int32
	for _, v := range c.voters {
		if v != c.id {
			succ = append(succ, v)
		}
	}
	sort.SliceStable(succ, func(i, j int) bool {
		return c.replicas[succ[i]].endOffset > c.replicas[succ[j]].endOffset
	})
	return succ
}

func (c *Core) sendEndQuorumEpoch(succ []int32) {
	c.endSentMs = c.now
	for _, v := range c.voters {
		if v != c.id {
			c.send(Message{Type: MsgEndQuorumEpoch, To: v, ID: c.newID(), Epoch: c.epoch, LeaderID: c.id,
				PreferredSuccessors: slices.Clone(succ)})
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
	c.onLeaderLogChange()
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
	if offset < c.flushed {
		if c.truncateTo < 0 || offset < c.truncateTo {
			c.truncateTo = offset
		}
		c.flushed = offset
	}
	c.leo = offset
	c.epochs.truncateFrom(offset)
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
		HighWatermark: c.hw, HWChanged: c.hwChanged, SnapshotChunks: c.snapChunks, LoadSnapshot: c.snapLoad, logEnd: c.leo}
	if c.hsDirty {
		hs := HardState{LeaderEpoch: c.epoch, LeaderID: c.leader, VotedID: c.votedID}
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
	if rd.logEnd > c.flushed && rd.logEnd <= c.leo {
		c.flushed = rd.logEnd
	}
	if c.role == RoleLeader {
		c.maybeAdvanceHW()
		c.completeParked(false)
	}
	return c.takeErr()
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
		if c.isVoter {
			if c.now >= c.electionDeadline {
				c.becomeProspective()
			}
		} else {
			c.maybeDiscover()
		}
	case RoleProspective:
		if c.now >= c.electionDeadline {
			c.becomeProspective()
		}
	case RoleCandidate:
		if c.now >= c.electionDeadline {
			// lost or split: back off through pre-vote (KIP-996)
			c.becomeProspective()
		}
	case RoleFollower:
		if c.now >= c.fetchDeadline {
			if c.isVoter {
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
	case RoleLeader:
		c.leaderTick()
	case RoleResigned:
		if c.now >= c.electionDeadline {
			c.becomeProspective()
		} else if c.now-c.endSentMs >= c.cfg.RequestTimeoutMs {
			c.sendEndQuorumEpoch(c.successors)
		}
	}
	return c.takeErr()
}

func (c *Core) leaderTick() {
	c.completeParked(false)
	for _, v := range c.voters {
		if v == c.id {
			continue
		}
		r := c.replicas[v]
		if !r.beginAcked && r.lastFetchMs < 0 && c.now-r.beginSentMs >= c.cfg.RequestTimeoutMs/2 {
			c.sendBeginQuorumEpoch(v)
		}
	}
	if len(c.voters) > 1 && c.now >= c.checkQuorum {
		// check quorum: a majority must have fetched within 1.5 * fetch timeout
		n := 1
		for _, v := range c.voters {
			if r := c.replicas[v]; v != c.id && max(r.lastFetchMs, r.lastSnapshotFetchMs) >= c.now-c.checkQuorumTimeout() {
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

// maybeDiscover: an observer without a leader asks a random voter.
func (c *Core) maybeDiscover() {
	if c.fetchInflight != 0 && c.now-c.fetchSentMs < c.cfg.RequestTimeoutMs {
		return
	}
	if c.now < c.fetchRetryAt {
		return
	}
	to := c.voters[c.rand.Intn(len(c.voters))]
	c.sendFetchTo(to)
	c.fetchRetryAt = c.now + c.cfg.RetryBackoffMs
}

func (c *Core) sendFetch() {
	if c.role != RoleFollower || c.leader < 0 {
		return
	}
	if c.fetchingSnap != nil {
		c.sendFetchSnapshotTo(c.leader)
		return
	}
	c.sendFetchTo(c.leader)
}

func (c *Core) sendFetchTo(to int32) {
	c.fetchInflight = c.newID()
	c.fetchSentMs = c.now
	c.send(Message{Type: MsgFetch, To: to, ID: c.fetchInflight, Epoch: c.epoch,
		LastOffset: c.leo, LastEpoch: c.lastEpoch(), MaxWaitMs: c.cfg.FetchMaxWaitMs})
}
