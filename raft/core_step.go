package raft

import (
	"fmt"
	"slices"
)

// Step feeds one message into the core.
func (c *Core) Step(m Message) error {
	if m.To != c.id && !(m.Type.IsResponse() && c.id < 0) {
		return fmt.Errorf("raft: message for %d delivered to %d", m.To, c.id)
	}
	switch m.Type {
	case MsgVote:
		c.handleVote(m)
	case MsgVoteResp:
		c.handleVoteResp(m)
	case MsgBeginQuorumEpoch:
		c.handleBeginQuorumEpoch(m)
	case MsgBeginQuorumEpochResp:
		if c.handleCommonResponse(m) && c.role == RoleLeader && m.Error == errNone {
			if r := c.voterStates[m.From]; r != nil {
				r.beginAcked = true
			}
		}
	case MsgEndQuorumEpoch:
		c.handleEndQuorumEpoch(m)
	case MsgEndQuorumEpochResp:
		c.handleCommonResponse(m)
	case MsgFetch:
		c.handleFetch(m)
	case MsgFetchResp:
		c.handleFetchResp(m)
	case MsgFetchSnapshot:
		c.handleFetchSnapshot(m)
	case MsgFetchSnapshotResp:
		c.handleFetchSnapshotResp(m)
	case MsgAddVoter:
		c.handleAddVoter(m)
	case MsgRemoveVoter:
		c.handleRemoveVoter(m)
	case MsgUpdateVoter:
		c.handleUpdateVoter(m)
	case MsgApiVersionsResp:
		c.handleApiVersionsResp(m)
	case MsgUpdateVoterResp, MsgAddVoterResp, MsgRemoveVoterResp:
		c.handleVoterResp(m)
	default:
		return fmt.Errorf("raft: unknown message type %d", m.Type)
	}
	return c.takeErr()
}

// handleCommonResponse applies what every response teaches: a newer epoch or a
// leader for the current epoch. It returns false when the response is stale
// (older epoch) and must otherwise be ignored.
func (c *Core) handleCommonResponse(m Message) bool {
	switch {
	case m.Epoch > c.epoch:
		if m.LeaderID >= 0 && m.LeaderID != c.id {
			c.becomeFollower(m.Epoch, m.LeaderID, m.LeaderEndpoints)
		} else {
			c.becomeUnattached(m.Epoch)
		}
		return false
	case m.Epoch < c.epoch:
		return false
	}
	// A granted vote names the responder's old leader, which it has given
	// up on: that is no reason to stop campaigning.
	if m.LeaderID >= 0 && m.LeaderID != c.id && (c.leader != m.LeaderID || c.role != RoleFollower) &&
		!(m.Type == MsgVoteResp && m.Granted) {
		switch c.role {
		case RoleUnattached, RoleProspective, RoleCandidate:
			c.becomeFollower(m.Epoch, m.LeaderID, m.LeaderEndpoints)
			return false
		case RoleLeader, RoleResigned:
			c.fail(violation("two leaders in epoch %d: %d and %d (seen by %d)", c.epoch, c.id, m.LeaderID, c.id))
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Vote

func (c *Core) logUpToDate(lastEpoch int32, endOffset int64) bool {
	my := c.lastEpoch()
	if lastEpoch != my {
		return lastEpoch > my
	}
	return endOffset >= c.leo
}

func (c *Core) handleVote(m Message) {
	resp := Message{Type: MsgVoteResp, To: m.From, ID: m.ID, PreVote: m.PreVote}
	reply := func(granted bool, errCode int16) {
		resp.Granted = granted
		resp.Error = errCode
		resp.Epoch = c.epoch
		resp.LeaderID = c.advertisedLeader()
		c.send(resp)
	}
	// KafkaRaftClient.handleVoteRequest's order: argument ranges (a
	// candidate bumped its epoch past its log's last epoch; a prospective
	// did not), then validateVoterOnlyRequest (stale epoch, negative id),
	// then a newer epoch is taken, then the request must be meant for this
	// replica (INVALID_VOTER_KEY). Any replica may ask: a voter that was just
	// added campaigns before every voter has its VotersRecord.
	illegalEpoch := m.LastEpoch >= m.Epoch
	if m.PreVote {
		illegalEpoch = m.LastEpoch > m.Epoch
	}
	switch {
	case m.LastOffset < 0 || m.LastEpoch < 0 || illegalEpoch:
		reply(false, errInvalidRequest)
		return
	case m.Epoch < c.epoch:
		reply(false, errFencedLeaderEpoch)
		return
	case m.From < 0:
		reply(false, errInvalidRequest)
		return
	}
	// Only a real vote moves this replica to the candidate's epoch: a
	// pre-vote is answered from the current state (KIP-996; Kafka 4.4's
	// handleVoteRequest transitions to unattached only when !preVote), or
	// a pre-vote at a higher epoch would unseat a live leader's follower.
	if m.Epoch > c.epoch && !m.PreVote {
		c.becomeUnattached(m.Epoch)
	}
	if !c.isValidVoterKey(m.VoterKey) {
		reply(false, errInvalidVoterKey)
		return
	}
	upToDate := c.logUpToDate(m.LastEpoch, m.LastOffset)
	if m.PreVote {
		// A pre-vote never changes our state.
		granted := upToDate
		switch c.role {
		case RoleLeader:
			granted = false
		case RoleFollower:
			// reject while the leader is alive (fetch timer running), unless it resigned
			if !c.leaderResigned && c.now-c.lastContact < c.cfg.FetchTimeoutMs {
				granted = false
			}
		}
		reply(granted, errNone)
		return
	}
	granted := false
	if (c.role == RoleUnattached || c.role == RoleProspective) && upToDate && (c.votedID == NoLeader ||
		c.votedID == m.From && (c.votedDir == [16]byte{} || c.votedDir == m.FromDir)) {
		granted = true
		if c.votedID != m.From {
			c.setHardStateKey(c.epoch, NoLeader, m.From, m.FromDir)
		}
		c.resetElectionTimer()
	}
	reply(granted, errNone)
}

// isValidVoterKey: a request naming its receiver must name this replica
// (KafkaRaftClient.isValidVoterKey; no directory id matches any).
func (c *Core) isValidVoterKey(k *ReplicaKey) bool {
	return k == nil || k.ID == c.id && (!k.hasDir() || k.DirectoryID == c.dir)
}

func (c *Core) handleVoteResp(m Message) {
	if !c.handleCommonResponse(m) {
		return
	}
	if m.Error != errNone || c.votes == nil {
		return
	}
	switch {
	case m.PreVote && c.role == RoleProspective:
	case !m.PreVote && c.role == RoleCandidate:
	default:
		return
	}
	if _, seen := c.votes[m.From]; seen || !c.isKnownVoter(m.From) {
		return
	}
	c.votes[m.From] = m.Granted
	if c.countVotes() < c.majority() {
		return
	}
	if c.role == RoleProspective {
		c.becomeCandidate()
	} else {
		c.becomeLeader()
	}
}

// ---------------------------------------------------------------------------
// BeginQuorumEpoch / EndQuorumEpoch

func (c *Core) handleBeginQuorumEpoch(m Message) {
	resp := Message{Type: MsgBeginQuorumEpochResp, To: m.From, ID: m.ID}
	// handleBeginQuorumEpochRequest: validateVoterOnlyRequest, take the
	// leader (its endpoints from the request, else the voter set), then the
	// request must be meant for this replica.
	switch {
	case m.Epoch < c.epoch:
		resp.Error, resp.Epoch, resp.LeaderID = errFencedLeaderEpoch, c.epoch, c.advertisedLeader()
		c.send(resp)
		return
	case m.LeaderID < 0 || m.LeaderID != m.From:
		resp.Error, resp.Epoch, resp.LeaderID = errInvalidRequest, c.epoch, c.advertisedLeader()
		c.send(resp)
		return
	}
	if m.Epoch > c.epoch || c.role != RoleFollower || c.leader != m.LeaderID {
		if m.Epoch == c.epoch && (c.role == RoleLeader || c.role == RoleResigned) {
			c.fail(violation("two leaders in epoch %d: %d and %d", m.Epoch, c.id, m.LeaderID))
			return
		}
		c.becomeFollower(m.Epoch, m.LeaderID, m.LeaderEndpoints)
	} else if len(m.LeaderEndpoints) > 0 {
		c.leaderEP = slices.Clone(m.LeaderEndpoints)
	}
	c.lastContact = c.now
	resp.Epoch, resp.LeaderID = c.epoch, c.advertisedLeader()
	if !c.isValidVoterKey(m.VoterKey) {
		resp.Error = errInvalidVoterKey
	}
	c.send(resp)
}

func (c *Core) handleEndQuorumEpoch(m Message) {
	resp := Message{Type: MsgEndQuorumEpochResp, To: m.From, ID: m.ID}
	if m.Epoch < c.epoch {
		resp.Error, resp.Epoch, resp.LeaderID = errFencedLeaderEpoch, c.epoch, c.advertisedLeader()
		c.send(resp)
		return
	}
	if m.Epoch > c.epoch {
		c.becomeUnattached(m.Epoch)
	}
	if c.canCampaign() && (c.role == RoleFollower && c.leader == m.LeaderID || c.role == RoleUnattached) {
		// The leader resigned: start an election soon, the preferred successors first.
		pos := slices.IndexFunc(m.PreferredCandidates, func(k ReplicaKey) bool {
			return k.ID == c.id && (!k.hasDir() || k.DirectoryID == c.dir)
		})
		backoff := int64(0)
		if pos < 0 {
			backoff = c.cfg.ElectionBackoffMaxMs
		} else if pos > 0 {
			backoff = min(c.cfg.ElectionBackoffMaxMs, c.cfg.RetryBackoffMs<<min(pos, 10))
		}
		if c.role == RoleFollower {
			c.leaderResigned = true
			c.fetchDeadline = min(c.fetchDeadline, c.now+backoff)
		} else {
			c.electionDeadline = min(c.electionDeadline, c.now+backoff)
		}
	}
	resp.Epoch, resp.LeaderID = c.epoch, c.advertisedLeader()
	c.send(resp)
}

// ---------------------------------------------------------------------------
// Fetch (leader side)

func (c *Core) fetchResp(m Message) Message {
	return Message{Type: MsgFetchResp, To: m.From, ID: m.ID, Epoch: c.epoch, LeaderID: c.advertisedLeader(),
		HighWatermark: c.advertisedHW(), ReadFrom: -1}
}

// advertisedHW is the high watermark a leader tells followers: unknown (-1)
// until it is established in the leader's epoch, as the value carried over
// from its follower days may be behind what a follower already knows.
func (c *Core) advertisedHW() int64 {
	if c.role == RoleLeader && !c.hwKnown {
		return -1
	}
	return c.hw
}

func (c *Core) handleFetch(m Message) {
	resp := c.fetchResp(m)
	if m.LastOffset < 0 || m.LastEpoch < 0 || m.LastEpoch > m.Epoch || m.MaxWaitMs < 0 {
		resp.Error = errInvalidRequest
		c.send(resp)
		return
	}
	switch {
	case m.Epoch < c.epoch:
		resp.Error = errFencedLeaderEpoch
	case m.Epoch > c.epoch:
		resp.Error = errUnknownLeaderEpoch
	case c.role != RoleLeader:
		resp.Error = errNotLeaderOrFollower
	}
	if resp.Error != errNone {
		c.send(resp)
		return
	}
	// A follower with an empty log gets the latest snapshot at once;
	// otherwise validateOffsetAndEpoch decides (records, divergence or snapshot).
	if ls, ok := c.latestSnapshot(); ok && m.LastOffset == 0 && ls.ID != bootstrapSnapshotID {
		id := ls.ID
		resp.SnapshotID = &id
		c.send(resp)
		return
	}
	switch kind, at := c.validateOffsetAndEpoch(m.LastOffset, m.LastEpoch); kind {
	case validDiverging:
		resp.Diverging = &at
		c.send(resp)
		return
	case validSnapshot:
		resp.SnapshotID = &at
		c.send(resp)
		return
	}
	c.updateReplica(ReplicaKey{ID: m.From, DirectoryID: m.FromDir}, m.LastOffset)
	c.maybeAdvanceHW()
	// Fetch v18 (KIP-1166, KafkaRaftClient.isHighWatermarkUpdated): a
	// fetcher whose high watermark is behind the one this answer carries is
	// answered at once, so it learns of new commits without waiting for
	// new records or MaxWaitMs.
	behind := m.HasFetcherHW && m.FetcherHW < c.advertisedHW()
	if m.LastOffset >= c.written && m.MaxWaitMs > 0 && !behind {
		c.parked = append(c.parked, parkedFetch{req: m, deadline: c.now + m.MaxWaitMs, hw: c.hw})
		return
	}
	c.answerFetch(m)
}

func (c *Core) answerFetch(m Message) {
	resp := c.fetchResp(m)
	// Only what the log already holds: entries still being written are
	// served once LogWritten says so (completeParked).
	if m.LastOffset < c.written {
		resp.ReadFrom, resp.ReadTo = m.LastOffset, c.written
	}
	c.send(resp)
}

// replicaFor returns the leader's state of replica k: its voter state when
// k is a voter (same id, and directory id unless the voter has none), else
// its observer state (LeaderState.getOrCreateReplicaState).
func (c *Core) replicaFor(k ReplicaKey) *replicaState {
	if r := c.voterStates[k.ID]; r != nil && r.matches(k) {
		return r
	}
	r := c.observers[k]
	if r == nil {
		r = newReplicaState(k)
		c.observers[k] = r
	}
	return r
}

func (c *Core) updateReplica(k ReplicaKey, fetchOffset int64) {
	if k.ID < 0 || k.ID == c.id && c.role == RoleLeader && k.DirectoryID == c.dir {
		return
	}
	r := c.replicaFor(k)
	if fetchOffset >= c.leo {
		r.lastCaughtUpMs = c.now
	} else if r.lastFetchMs >= 0 && fetchOffset >= r.leaderEndAtLastFetch {
		r.lastCaughtUpMs = max(r.lastCaughtUpMs, r.lastFetchMs)
	}
	r.endOffset = fetchOffset
	r.lastFetchMs = c.now
	r.leaderEndAtLastFetch = c.leo
}

// maybeAdvanceHW moves the leader's high watermark to the offset a majority of
// voters hold, once that includes a record of the leader's own epoch. The
// voters are those of the latest voter set, committed or not; the leader
// counts only while it is one. A smaller majority offset after a voter
// change leaves the high watermark where it is (LeaderState.maybeUpdateHighWatermark).
func (c *Core) maybeAdvanceHW() {
	if c.role != RoleLeader || len(c.voters) == 0 {
		return
	}
	offs := make([]int64, 0, len(c.voters))
	for _, v := range c.voters {
		switch r := c.voterStates[v]; {
		case v == c.id && c.isVoter:
			offs = append(offs, c.flushed)
		case r != nil:
			offs = append(offs, r.endOffset)
		default:
			offs = append(offs, -1)
		}
	}
	slices.Sort(offs)
	slices.Reverse(offs)
	cand := offs[len(offs)/2]
	if cand > c.epochStart && cand >= c.hw {
		c.hwKnown = true
		if cand > c.hw {
			c.setHW(cand)
			c.onHighWatermark()
		}
	}
	if last, ok := c.ctl.lastVotersEntry(); c.role == RoleLeader && !c.isVoter && ok && last.Offset < c.hw {
		// A leader outside the committed voter set resigns.
		c.Resign()
	}
}

// completeParked answers parked fetches that have data, a new high watermark
// or an expired wait.
func (c *Core) completeParked(all bool) {
	if len(c.parked) == 0 {
		return
	}
	kept := c.parked[:0]
	for _, p := range c.parked {
		if all || c.written > p.req.LastOffset || c.hw != p.hw || c.now >= p.deadline {
			c.answerFetch(p.req)
			continue
		}
		kept = append(kept, p)
	}
	c.parked = kept
}

// ---------------------------------------------------------------------------
// Fetch (follower side)

func (c *Core) handleFetchResp(m Message) {
	if m.ID == 0 || m.ID != c.fetchInflight {
		return // duplicate, reordered or from an earlier role
	}
	c.fetchInflight = 0
	if !c.handleCommonResponse(m) {
		return
	}
	if c.role != RoleFollower || c.leader != m.From {
		// discovery answer without a leader, or an error: retry later
		c.fetchRetryAt = c.now + c.cfg.RetryBackoffMs
		return
	}
	if m.Error != errNone {
		c.fetchRetryAt = c.now + c.cfg.RetryBackoffMs
		return
	}
	if !c.leaderResigned {
		c.lastContact = c.now
		c.fetchDeadline = c.now + c.cfg.FetchTimeoutMs
	}
	// The high watermark applies only to a log the leader validated: never
	// after a DivergingEpoch (the local log may still differ below it).
	validated := m.Diverging == nil && m.SnapshotID == nil
	switch {
	case m.SnapshotID != nil:
		// The leader asks us to fetch a snapshot; its id is beyond our log,
		// so it is not validated against it.
		c.startSnapshotFetch(*m.SnapshotID)
	case m.Diverging != nil:
		if c.hw >= 0 && m.Diverging.Offset < c.hw {
			c.fail(violation("leader %d asks %d to truncate to %d below high watermark %d", m.From, c.id, m.Diverging.Offset, c.hw))
			return
		}
		local := c.endOffsetForEpoch(m.Diverging.Epoch)
		to := local.Offset
		if local.Epoch == m.Diverging.Epoch {
			to = min(to, m.Diverging.Offset)
		}
		if to < 0 {
			to = 0
		}
		c.truncate(to)
	case len(m.Entries) > 0:
		if m.Entries[0].Offset != c.leo {
			validated = false
			break // stale
		}
		for _, e := range m.Entries {
			if e.Offset != c.leo || e.LastOffset < e.Offset || e.Epoch > c.epoch || e.Epoch < c.lastEpoch() {
				c.fail(fmt.Errorf("raft: bad batch [%d,%d] epoch %d from leader %d at log end %d", e.Offset, e.LastOffset, e.Epoch, m.From, c.leo))
				return
			}
			c.epochs.assign(e.Epoch, e.Offset)
			c.leo = e.LastOffset + 1
			c.entries = append(c.entries, e)
			c.applyControl(e)
		}
	}
	if validated && m.HighWatermark >= 0 {
		c.setHW(min(m.HighWatermark, c.leo))
	}
	c.sendFetch()
}

// RequestFailed tells the core that request m got no response (connection
// refused or lost, timeout): a fetch is retried after a backoff instead of
// waiting for the request timeout.
func (c *Core) RequestFailed(m Message) error {
	switch {
	case (m.Type == MsgFetch || m.Type == MsgFetchSnapshot) && m.ID != 0 && m.ID == c.fetchInflight:
		c.fetchInflight = 0
		c.fetchRetryAt = c.now + 5*c.cfg.RetryBackoffMs
	case m.Type == MsgApiVersions:
		c.handleApiVersionsResp(Message{Type: MsgApiVersionsResp, From: m.To, To: c.id, ID: m.ID, Error: errBrokerNotAvailable})
	case m.ID != 0 && m.ID == c.voterReqInflight:
		c.voterReqInflight = 0
	}
	return c.takeErr()
}
