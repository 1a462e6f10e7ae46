package raft

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Voter changes in the core (KIP-853): AddRaftVoter (AddVoterHandler),
// RemoveRaftVoter (RemoveVoterHandler), UpdateRaftVoter (UpdateVoterHandler),
// the kraft.version upgrade of a static quorum (LeaderState
// .maybeAppendUpgradedKRaftVersion), and the follower's side: UpdateRaftVoter
// to the leader, and auto join (pollFollowerAsVoter, pollFollowerAsObserver).
//
// The leader runs one change at a time, only once it has committed a record
// of its epoch (the high watermark is known) and the latest VotersRecord is
// committed; a new voter must support the finalized kraft.version (the leader
// asks it with ApiVersions) and must have caught up as an observer. The new
// voter set is appended at once and takes effect (for elections and the high
// watermark) before it commits; the request is answered when it commits (or
// when appended with AckWhenCommitted false). A leader that removed itself
// resigns once the removal commits. A pending change fails with
// REQUEST_TIMED_OUT after controller.quorum.request.timeout.ms and with
// NOT_LEADER_OR_FOLLOWER when the leader loses its epoch.

var (
	errInvalidVoterKey      = kerr.InvalidVoterKey.Code
	errBrokerNotAvailable   = kerr.BrokerNotAvailable.Code
	errRequestTimedOut      = kerr.RequestTimedOut.Code
	errUnsupportedVersion   = kerr.UnsupportedVersion.Code
	errDuplicateVoter       = kerr.DuplicateVoter.Code
	errVoterNotFound        = kerr.VoterNotFound.Code
	errInvalidUpdateVersion = kerr.InvalidUpdateVersion.Code
	errUnknownServer        = kerr.UnknownServerError.Code
	errNotController        = kerr.NotController.Code
)

// voterChange is the pending AddRaftVoter or RemoveRaftVoter (Kafka's
// AddVoterHandlerState / RemoveVoterHandlerState).
type voterChange struct {
	add        bool
	req        Message // answered with its ID to req.From
	voter      Voter
	apiID      uint64 // add: the ApiVersions request in flight
	lastOffset int64  // the appended VotersRecord (-1 before)
	deadline   int64
	answered   bool
}

func strp(s string) *string { return &s }

// defaultMessage is Errors.message(): the error's default text, "NONE" for none.
func defaultMessage(code int16) *string {
	if code == errNone {
		return strp("NONE")
	}
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return strp(e.Description)
	}
	return nil
}

// respondChange answers the pending change's request (once).
func (c *Core) respondChange(code int16, msg *string) {
	ch := c.change
	if ch == nil || ch.answered {
		return
	}
	ch.answered = true
	if msg == nil {
		msg = defaultMessage(code)
	}
	t := MsgRemoveVoterResp
	if ch.add {
		t = MsgAddVoterResp
	}
	c.send(Message{Type: t, To: ch.req.From, ID: ch.req.ID, Error: code, ErrorMessage: msg, Epoch: c.epoch, LeaderID: NoLeader})
}

// abortChange ends the pending change with an error (leaving the leader role: NOT_LEADER_OR_FOLLOWER).
func (c *Core) abortChange(code int16, msg string) {
	if c.change == nil {
		return
	}
	var m *string
	if msg != "" {
		m = &msg
	}
	c.respondChange(code, m)
	c.change = nil
}

// expireChange is maybeExpirePendingOperation.
func (c *Core) expireChange() {
	if c.change != nil && c.now >= c.change.deadline {
		c.abortChange(errRequestTimedOut, "")
	}
}

func (c *Core) changePending() bool {
	c.expireChange()
	return c.change != nil
}

// onHighWatermark completes the pending change once its VotersRecord is
// committed (AddVoterHandler/RemoveVoterHandler.highWatermarkUpdated).
func (c *Core) onHighWatermark() {
	ch := c.change
	if ch == nil || ch.lastOffset < 0 || c.hw <= ch.lastOffset {
		return
	}
	c.respondChange(errNone, nil)
	c.change = nil
	if !ch.add && !c.ctl.lastVoters().IsVoter(c.localKey()) {
		// The leader is not in the committed voter set: resign.
		c.Resign()
	}
}

// appendVoters appends a VotersRecord batch and returns its offset.
func (c *Core) appendVoters(vs VoterSet) int64 {
	c.appendLocal(Entry{Control: true, ControlType: ControlKRaftVoters, Records: [][]byte{EncodeVotersRecord(vs)}})
	return c.leo - 1
}

// keysString is a Java Set<ReplicaKey>'s toString.
func keysString(vs VoterSet) string {
	var parts []string
	for _, v := range vs.voters {
		parts = append(parts, v.Key.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// endpointsString is Endpoints.toString.
func endpointsString(eps []Endpoint) string {
	var parts []string
	for _, e := range eps {
		parts = append(parts, fmt.Sprintf("ListenerName(%s)=%s", e.Name, e.Addr()))
	}
	return "Endpoints(endpoints={" + strings.Join(parts, ", ") + "})"
}

// uncommittedVotersMsg is the REQUEST_TIMED_OUT message of a change while the
// latest VotersRecord is not committed.
func (c *Core) uncommittedVoters() (VoterSet, string, bool) {
	last, ok := c.ctl.lastVotersEntry()
	if ok && last.Offset < c.hw {
		return last.Voters, "", true
	}
	at := "Optional.empty"
	if ok {
		at = fmt.Sprintf("Optional[%d]", last.Offset)
	}
	return VoterSet{}, fmt.Sprintf("Request timed out waiting for voters to commit the latest voter change at %s with HWM %d", at, c.hw), false
}

// handleAddVoter is KafkaRaftClient.handleAddVoterRequest and
// AddVoterHandler.handleAddVoterRequest.
func (c *Core) handleAddVoter(m Message) {
	reply := func(code int16, msg *string) {
		c.send(Message{Type: MsgAddVoterResp, To: m.From, ID: m.ID, Error: code, ErrorMessage: msg, Epoch: c.epoch, LeaderID: NoLeader})
	}
	switch {
	case c.role != RoleLeader:
		reply(errNotLeaderOrFollower, nil)
		return
	case m.Voter == nil || !m.Voter.Key.hasDir():
		reply(errInvalidRequest, strp("Add voter request didn't include a valid voter"))
		return
	}
	ep, ok := m.Voter.Endpoint(c.cfg.ListenerName)
	if !ok {
		reply(errInvalidRequest, strp(fmt.Sprintf("Add voter request didn't include the endpoint (%s) for the default listener %s",
			endpointsString(m.Voter.Endpoints), c.cfg.ListenerName)))
		return
	}
	if c.changePending() {
		reply(errRequestTimedOut, strp("Request timed out waiting for leader to handle previous voter change request"))
		return
	}
	if !c.hwKnown {
		reply(errRequestTimedOut, strp("Request timed out waiting for leader to establish HWM and fence previous voter changes"))
		return
	}
	if kv := c.ctl.kraftVersion(); kv < 1 {
		reply(errUnsupportedVersion, strp(fmt.Sprintf("Cluster doesn't support adding voter because the kraft.version feature is %d", kv)))
		return
	}
	voters, msg, ok := c.uncommittedVoters()
	if !ok {
		reply(errRequestTimedOut, &msg)
		return
	}
	if voters.HasID(m.Voter.Key.ID) {
		reply(errDuplicateVoter, strp(fmt.Sprintf("The voter id for %s is already part of the set of voters %s.", m.Voter.Key, keysString(voters))))
		return
	}
	// Ask the new voter which kraft.version range it supports.
	ch := &voterChange{add: true, req: m, voter: m.Voter.clone(), apiID: c.newID(), lastOffset: -1,
		deadline: c.now + c.cfg.RequestTimeoutMs}
	c.change = ch
	c.send(Message{Type: MsgApiVersions, To: m.Voter.Key.ID, ToAddr: ep.Addr(), ID: ch.apiID})
}

// isReplicaCaughtUp is LeaderState.isReplicaCaughtUp: the replica fetched as
// an observer, reached the log end once, and fetched within the hour.
func (c *Core) isReplicaCaughtUp(k ReplicaKey) bool {
	r := c.observers[k]
	return r != nil && r.lastCaughtUpMs >= 0 && r.lastFetchMs >= 0 && r.lastFetchMs > c.now-3_600_000
}

// handleApiVersionsResp is AddVoterHandler.handleApiVersionsResponse.
func (c *Core) handleApiVersionsResp(m Message) {
	ch := c.change
	if c.role != RoleLeader || ch == nil || !ch.add || ch.apiID == 0 || m.ID != ch.apiID {
		return
	}
	ch.apiID = 0
	key := ch.voter.Key
	if m.Error != errNone {
		name := fmt.Sprint(m.Error)
		if e := kerr.ErrorForCode(m.Error); e != nil {
			if ke, ok := e.(*kerr.Error); ok {
				name = ke.Message
			}
		}
		c.abortChange(errRequestTimedOut, "Aborted add voter operation for since API_VERSIONS returned an error "+name)
		return
	}
	kv := c.ctl.kraftVersion()
	if r := m.KRaftRange; r == nil || r[0] > kv || r[1] < kv {
		rng := "(min: 0, max: 0)"
		if r != nil {
			rng = fmt.Sprintf("(min: %d, max: %d", r[0], r[1]) // sic: Kafka's text lacks the parenthesis
		}
		c.abortChange(errInvalidRequest, fmt.Sprintf("Aborted add voter operation for %s since the kraft.version range %s doesn't support the finalized version %d", key, rng, kv))
		return
	}
	if !c.isReplicaCaughtUp(key) {
		c.abortChange(errRequestTimedOut, fmt.Sprintf("Aborted add voter operation for %s since it is lagging behind", key))
		return
	}
	v := ch.voter
	v.KRaftMin, v.KRaftMax = m.KRaftRange[0], m.KRaftRange[1]
	vs, ok := c.ctl.lastVoters().Add(v)
	if !ok {
		c.fail(fmt.Errorf("raft: unable to add %v to the set of voters %v", key, c.ctl.lastVoters()))
		return
	}
	ch.lastOffset = c.appendVoters(vs)
	if !ch.req.AckWhenCommitted {
		c.respondChange(errNone, nil)
	}
}

// handleRemoveVoter is KafkaRaftClient.handleRemoveVoterRequest and
// RemoveVoterHandler.handleRemoveVoterRequest.
func (c *Core) handleRemoveVoter(m Message) {
	reply := func(code int16, msg *string) {
		c.send(Message{Type: MsgRemoveVoterResp, To: m.From, ID: m.ID, Error: code, ErrorMessage: msg, Epoch: c.epoch, LeaderID: NoLeader})
	}
	switch {
	case c.role != RoleLeader:
		reply(errNotLeaderOrFollower, nil)
		return
	case m.Voter == nil || !m.Voter.Key.hasDir():
		reply(errInvalidRequest, strp("Remove voter request didn't include a valid voter"))
		return
	case c.changePending():
		reply(errRequestTimedOut, strp("Request timed out waiting for leader to handle previous voter change request"))
		return
	case !c.hwKnown:
		reply(errRequestTimedOut, strp("Request timed out waiting for leader to establish HWM and fence previous voter changes"))
		return
	}
	if kv := c.ctl.kraftVersion(); kv < 1 {
		reply(errUnsupportedVersion, strp(fmt.Sprintf("Cluster doesn't support removing voter because the kraft.version feature is %d", kv)))
		return
	}
	voters, msg, ok := c.uncommittedVoters()
	if !ok {
		reply(errRequestTimedOut, &msg)
		return
	}
	vs, ok := voters.Remove(m.Voter.Key)
	if !ok {
		reply(errVoterNotFound, strp(fmt.Sprintf("Cannot remove voter %s from the set of voters %s", m.Voter.Key, keysString(voters))))
		return
	}
	c.change = &voterChange{req: m, voter: m.Voter.clone(), lastOffset: -1, deadline: c.now + c.cfg.RequestTimeoutMs}
	c.change.lastOffset = c.appendVoters(vs)
}

// handleUpdateVoter is KafkaRaftClient.handleUpdateVoterRequest and Kafka
// 4.4's UpdateVoterHandler: at kraft.version 1 the updated voter set is
// appended; at 0 the leader keeps it in memory for an upgrade.
func (c *Core) handleUpdateVoter(m Message) {
	reply := func(code int16) {
		c.send(Message{Type: MsgUpdateVoterResp, To: m.From, ID: m.ID, Error: code, Epoch: c.epoch, LeaderID: c.advertisedLeader()})
	}
	switch {
	case m.Epoch < c.epoch:
		reply(errFencedLeaderEpoch)
		return
	case m.Epoch > c.epoch:
		reply(errUnknownLeaderEpoch)
		return
	case c.role != RoleLeader:
		reply(errNotLeaderOrFollower)
		return
	case m.Voter == nil || !m.Voter.Key.hasDir():
		reply(errInvalidRequest)
		return
	}
	v := m.Voter.clone()
	if _, ok := v.Endpoint(c.cfg.ListenerName); !ok || v.KRaftMin < 0 || v.KRaftMax < 0 || v.KRaftMax < v.KRaftMin {
		reply(errInvalidRequest)
		return
	}
	if c.changePending() || !c.hwKnown {
		reply(errRequestTimedOut)
		return
	}
	kv := c.ctl.kraftVersion()
	var voters *VoterSet
	if kv >= 1 {
		if vs, _, ok := c.uncommittedVoters(); ok {
			voters = &vs
		}
	} else {
		voters = c.volatileVoters
	}
	switch {
	case voters == nil:
		reply(errRequestTimedOut)
		return
	case v.KRaftMin > kv || v.KRaftMax < kv:
		reply(errInvalidRequest)
		return
	}
	var updated VoterSet
	var ok bool
	if kv >= 1 {
		updated, ok = voters.Update(v)
	} else {
		updated, ok = voters.UpdateIgnoringDirectoryID(v)
	}
	if !ok {
		reply(errVoterNotFound)
		return
	}
	if kv >= 1 {
		c.appendVoters(updated)
	} else {
		c.volatileVoters = &updated
	}
	if r := c.voterStates[v.Key.ID]; r != nil {
		r.lastSnapshotFetchMs = c.now // updateCheckQuorumForFollowingVoter
	}
	reply(errNone)
}

// UpgradeError is a refused kraft.version upgrade: Code is the Kafka error
// the controller answers UpdateFeatures with, Msg its message.
type UpgradeError struct {
	Code int16
	Msg  string
}

func (e *UpgradeError) Error() string { return e.Msg }

func kraftVersionName(v int16) string { return fmt.Sprintf("KRAFT_VERSION_%d", v) }

// UpgradeKRaftVersion appends the upgrade of kraft.version to version
// (KafkaRaftClient.upgradeKRaftVersion, LeaderState.maybeAppendUpgradedKRaftVersion):
// every voter must have told the leader its directory id and support the
// version (UpdateRaftVoter), the voters must be the persisted ones; the
// KRaftVersionRecord and the VotersRecord of the voters with their
// directory ids and endpoints go in one control batch. validateOnly checks
// without appending. A second request for the same version is a no-op.
func (c *Core) UpgradeKRaftVersion(epoch int32, version int16, validateOnly bool) error {
	if c.role != RoleLeader {
		return &UpgradeError{errNotController, "Upgrade kraft version failed because the replica is not the current leader"}
	}
	if epoch < c.epoch {
		return &UpgradeError{errNotController, fmt.Sprintf("Upgrade kraft version failed because the given epoch %d is stale. Current leader epoch is %d", epoch, c.epoch)}
	}
	if epoch > c.epoch {
		return &UpgradeError{errInvalidUpdateVersion, fmt.Sprintf("Attempt to append from epoch %d which is larger than the current epoch of %d", epoch, c.epoch)}
	}
	current := c.ctl.kraftVersion()
	if c.upgrading {
		if version == current {
			return nil
		}
		return &UpgradeError{errInvalidUpdateVersion, fmt.Sprintf("Invalid concurrent upgrade of kraft.version from version %s to %s", kraftVersionName(current), kraftVersionName(version))}
	}
	if version == current {
		return nil
	}
	if current > version {
		return &UpgradeError{errInvalidUpdateVersion, fmt.Sprintf("Invalid upgrade of kraft.version from version %s to %s because the new version is a downgrade", kraftVersionName(current), kraftVersionName(version))}
	}
	if c.volatileVoters == nil {
		return &UpgradeError{errInvalidUpdateVersion, fmt.Sprintf("Invalid upgrade of kraft.version from version %s to %s", kraftVersionName(current), kraftVersionName(version))}
	}
	inMemory, persisted := *c.volatileVoters, c.ctl.lastVoters()
	if !slices.Equal(inMemory.IDs(), persisted.IDs()) {
		return &UpgradeError{errUnknownServer, fmt.Sprintf("Unable to update kraft.version to %s due to missing voters %v compared to %v", kraftVersionName(version), inMemory.IDs(), persisted.IDs())}
	}
	if !inMemory.SupportsVersion(version) {
		return &UpgradeError{errInvalidUpdateVersion, fmt.Sprintf("Invalid upgrade of kraft.version to %s because not all of the voters support it", kraftVersionName(version))}
	}
	for _, v := range inMemory.voters {
		if !v.Key.hasDir() {
			return &UpgradeError{errUnknownServer, fmt.Sprintf("Directory id must be known for all of the voters: %v", inMemory)}
		}
	}
	if validateOnly {
		return nil
	}
	c.upgrading = true
	e := Entry{Control: true, ControlType: ControlKRaftVersion, Records: [][]byte{EncodeKRaftVersionRecord(version)}}
	if !inMemory.Equal(persisted) {
		e.ControlTypes = []int16{ControlKRaftVersion, ControlKRaftVoters}
		e.Records = append(e.Records, EncodeVotersRecord(inMemory))
	}
	c.appendLocal(e)
	c.volatileVoters = nil
	return c.takeErr()
}

// maybeSendVoterRequest keeps this replica's voter entry current
// (pollFollowerAsVoter: UpdateRaftVoter once per leader at kraft.version 0,
// whenever its endpoints or kraft.version range changed at 1) or, for an
// observer that may be a voter with controller.quorum.auto.join.enable,
// adds it (pollFollowerAsObserver), removing first a voter with its id and
// another directory. At most every fetch timeout.
func (c *Core) maybeSendVoterRequest() {
	if c.voterReqInflight != 0 || c.now < c.updateVoterAt || c.leader < 0 || c.id < 0 || !c.hasLocalDir() {
		return
	}
	c.updateVoterAt = c.now + c.cfg.FetchTimeoutMs
	kv := c.ctl.kraftVersion()
	local := c.localVoter()
	switch {
	case c.isVoter:
		need := kv >= 1 && c.ctl.lastVoters().NeedsUpdate(local) || kv == 0 && !c.updatedLeader
		if !need || endpointAddr(local.Endpoints, c.cfg.ListenerName) == "" {
			return
		}
		c.voterReqInflight = c.newID()
		c.send(Message{Type: MsgUpdateVoter, To: c.leader, ID: c.voterReqInflight, Epoch: c.epoch, Voter: &local})
	case kv >= 1 && c.cfg.CanBecomeVoter && c.cfg.AutoJoin:
		c.voterReqInflight = c.newID()
		if old, ok := c.ctl.lastVoters().Get(c.id); ok {
			key := Voter{Key: old.Key}
			c.send(Message{Type: MsgRemoveVoter, To: c.leader, ID: c.voterReqInflight, Voter: &key})
			return
		}
		c.send(Message{Type: MsgAddVoter, To: c.leader, ID: c.voterReqInflight, Voter: &local,
			TimeoutMs: c.cfg.RequestTimeoutMs, AckWhenCommitted: false})
	}
}

func (c *Core) hasLocalDir() bool { return c.dir != [16]byte{} }

// handleVoterResp takes the answer to this follower's UpdateRaftVoter,
// AddRaftVoter or RemoveRaftVoter.
func (c *Core) handleVoterResp(m Message) {
	if m.ID == 0 || m.ID != c.voterReqInflight {
		return
	}
	c.voterReqInflight = 0
	if m.Type != MsgUpdateVoterResp {
		return // the next try is a fetch timeout away
	}
	if !c.handleCommonResponse(m) {
		return
	}
	if c.role == RoleFollower && (m.Error == errNone || m.Error == errUnsupportedVersion) {
		c.updatedLeader = true
		c.markLeaderContact()
	}
}
