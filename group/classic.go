package group

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// classicState is a classic group's state (ClassicGroupState).
type classicState uint8

const (
	stEmpty classicState = iota
	stPreparingRebalance
	stCompletingRebalance
	stStable
	stDead
)

func (s classicState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

type protocol struct {
	name     string
	metadata []byte
}

// classicMember is a member of a classic group (ClassicGroupMember).
type classicMember struct {
	id               string
	instanceID       *string
	clientID         string
	clientHost       string
	rebalanceTimeout time.Duration
	sessionTimeout   time.Duration
	protocolType     string
	protocols        []protocol
	assignment       []byte
	isNew            bool
	// The member's parked JoinGroup / SyncGroup; nil when it awaits none.
	join *parked[*kmsg.JoinGroupResponse]
	sync *parked[*kmsg.SyncGroupResponse]
}

func (m *classicMember) awaitingJoin() bool { return m.join != nil }
func (m *classicMember) awaitingSync() bool { return m.sync != nil }

func (m *classicMember) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.name == name {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether the member's protocols equal ps (same names,
// metadata and order).
func (m *classicMember) matches(ps []kmsg.JoinGroupRequestProtocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i, p := range ps {
		if p.Name != m.protocols[i].name || !bytes.Equal(p.Metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// vote is the member's most preferred protocol among candidates.
func (m *classicMember) vote(candidates map[string]bool) string {
	for _, p := range m.protocols {
		if candidates[p.name] {
			return p.name
		}
	}
	return ""
}

// classicGroup is a group using the classic protocol (ClassicGroup).
type classicGroup struct {
	id             string
	state          classicState
	prevState      classicState
	stateTs        int64 // currentStateTimestamp, ms; -1 unknown
	generation     int32
	protocolType   *string
	protocolName   *string
	leader         *string
	members        map[string]*classicMember
	order          []string // member ids in join order
	pending        map[string]bool
	static         map[string]string // group.instance.id -> member id
	pendingSync    map[string]bool
	supported      map[string]int // protocol name -> members supporting it
	newMemberAdded bool
	// subscribed topics of the consumer protocol; nil when unknown.
	subscribed map[string]bool
}

func newClassicGroup(id string, nowMs int64) *classicGroup {
	return &classicGroup{id: id, state: stEmpty, prevState: stEmpty, stateTs: nowMs,
		members: map[string]*classicMember{}, pending: map[string]bool{}, static: map[string]string{},
		pendingSync: map[string]bool{}, supported: map[string]int{}}
}

func classicGroupFromRecord(id string, v *kmsg.GroupMetadataValue) *classicGroup {
	g := newClassicGroup(id, v.CurrentStateTimestamp)
	if v.Version < 2 {
		g.stateTs = -1
	}
	g.generation = v.Generation
	if v.ProtocolType != "" {
		pt := v.ProtocolType
		g.protocolType = &pt
	}
	g.protocolName, g.leader = v.Protocol, v.Leader
	for _, rm := range v.Members {
		m := &classicMember{id: rm.MemberID, instanceID: rm.InstanceID, clientID: rm.ClientID, clientHost: rm.ClientHost,
			rebalanceTimeout: time.Duration(rm.RebalanceTimeoutMillis) * time.Millisecond,
			sessionTimeout:   time.Duration(rm.SessionTimeoutMillis) * time.Millisecond,
			protocolType:     v.ProtocolType, assignment: rm.Assignment}
		if v.Protocol != nil {
			m.protocols = []protocol{{name: *v.Protocol, metadata: rm.Subscription}}
		}
		if m.rebalanceTimeout <= 0 {
			m.rebalanceTimeout = m.sessionTimeout
		}
		g.add(m)
	}
	if len(g.members) > 0 {
		g.state = stStable
	}
	g.subscribed = g.computeSubscribed()
	return g
}

func (g *classicGroup) transition(s classicState, nowMs int64) {
	g.prevState = g.state
	g.state = s
	g.stateTs = nowMs
}

func (g *classicGroup) canRebalance() bool {
	return g.state == stStable || g.state == stCompletingRebalance || g.state == stEmpty
}

func (g *classicGroup) isLeader(id string) bool { return g.leader != nil && *g.leader == id }

func (g *classicGroup) add(m *classicMember) {
	if len(g.members) == 0 {
		pt := m.protocolType
		g.protocolType = &pt
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	delete(g.pending, m.id)
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	if g.leader == nil {
		id := m.id
		g.leader = &id
	}
}

func (g *classicGroup) remove(id string) {
	delete(g.pending, id)
	m, ok := g.members[id]
	if !ok {
		return
	}
	delete(g.members, id)
	g.order = slices.DeleteFunc(g.order, func(x string) bool { return x == id })
	delete(g.pendingSync, id)
	if m.instanceID != nil && g.static[*m.instanceID] == id {
		delete(g.static, *m.instanceID)
	}
	for _, p := range m.protocols {
		g.supported[p.name]--
	}
	if g.isLeader(id) {
		g.leader = nil
		if len(g.order) > 0 {
			l := g.order[0]
			g.leader = &l
		}
	}
}

func (g *classicGroup) allMembers() []*classicMember {
	out := make([]*classicMember, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.members[id])
	}
	return out
}

func (g *classicGroup) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.awaitingJoin() {
			n++
		}
	}
	return n
}

func (g *classicGroup) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin() && len(g.pending) == 0
}

func (g *classicGroup) supportsProtocols(ptype string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if g.state == stEmpty || len(g.members) == 0 {
		return ptype != "" && len(ps) > 0
	}
	if g.protocolType == nil || *g.protocolType != ptype {
		return false
	}
	for _, p := range ps {
		if g.supported[p.Name] == len(g.members) {
			return true
		}
	}
	return false
}

func (g *classicGroup) selectProtocol() string {
	candidates := map[string]bool{}
	for name, n := range g.supported {
		if n == len(g.members) && n > 0 {
			candidates[name] = true
		}
	}
	votes := map[string]int{}
	best, bestVotes := "", -1
	for _, m := range g.allMembers() {
		v := m.vote(candidates)
		votes[v]++
	}
	// Most votes; ties go to the leader's preference order, then name.
	var order []string
	if g.leader != nil {
		if l := g.members[*g.leader]; l != nil {
			for _, p := range l.protocols {
				order = append(order, p.name)
			}
		}
	}
	for name := range votes {
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
	}
	for _, name := range order {
		if n, ok := votes[name]; ok && n > bestVotes {
			best, bestVotes = name, n
		}
	}
	return best
}

// validateMember is ClassicGroup.validateMember.
func (g *classicGroup) validateMember(id string, instanceID *string) error {
	if instanceID != nil {
		existing, ok := g.static[*instanceID]
		if !ok {
			return kerr.UnknownMemberID
		}
		if existing != id {
			return kerr.FencedInstanceID
		}
	}
	if _, ok := g.members[id]; !ok {
		return kerr.UnknownMemberID
	}
	return nil
}

// parked is a request waiting in the coordinator for its answer: JoinGroup
// until the join phase completes, SyncGroup until the leader's assignment
// is written. The first answer wins, as Kafka completes a request's future
// once.
type parked[T any] struct {
	ch   chan T        // one slot, written once
	fail func(error) T // the answer when the partition unloads first
	done bool          // answered (the answer may still wait for a commit)
}

func newParked[T any](fail func(error) T) *parked[T] {
	return &parked[T]{ch: make(chan T, 1), fail: fail}
}

// answer delivers v to p once every record written so far is committed
// (coordinator.Context.Defer): the answer reports group state that a
// leader change could otherwise still take back. It reports false if p
// was answered already.
func answer[T any](s *shard, p *parked[T], v T) bool {
	if p == nil || p.done {
		return false
	}
	p.done = true
	s.ctx.Defer(func(err error) {
		if err != nil {
			v = p.fail(err)
		}
		p.ch <- v
	})
	return true
}

// answerJoin answers the member's parked JoinGroup, if any.
func (s *shard) answerJoin(m *classicMember, r *kmsg.JoinGroupResponse) bool {
	if m.join == nil {
		return false
	}
	answer(s, m.join, r)
	m.join = nil
	return true
}

// answerSync answers the member's parked SyncGroup, if any.
func (s *shard) answerSync(m *classicMember, r *kmsg.SyncGroupResponse) bool {
	if m.sync == nil {
		return false
	}
	answer(s, m.sync, r)
	m.sync = nil
	return true
}

// currentMembers is the member list the leader receives.
func (g *classicGroup) currentMembers() []kmsg.JoinGroupResponseMember {
	var out []kmsg.JoinGroupResponseMember
	name := ""
	if g.protocolName != nil {
		name = *g.protocolName
	}
	for _, m := range g.allMembers() {
		rm := kmsg.NewJoinGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ProtocolMetadata = m.id, m.instanceID, m.metadata(name)
		out = append(out, rm)
	}
	return out
}

func (g *classicGroup) joinResponse(m *classicMember, members []kmsg.JoinGroupResponseMember) *kmsg.JoinGroupResponse {
	r := &kmsg.JoinGroupResponse{Generation: g.generation, ProtocolType: g.protocolType, Protocol: g.protocolName, MemberID: m.id, Members: members}
	if g.leader != nil {
		r.LeaderID = *g.leader
	}
	return r
}

// computeSubscribed parses the consumer protocol subscriptions (v0 prefix)
// of all members; nil when unknown (not the consumer protocol).
func (g *classicGroup) computeSubscribed() map[string]bool {
	if g.protocolType == nil || *g.protocolType != "consumer" {
		return nil
	}
	out := map[string]bool{}
	if len(g.members) == 0 || g.protocolName == nil {
		return out
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(*g.protocolName)); err != nil {
			return nil
		}
		for _, t := range meta.Topics {
			out[t] = true
		}
	}
	return out
}

// isSubscribedToTopic is ClassicGroup.isSubscribedToTopic.
func (g *classicGroup) isSubscribedToTopic(topic string) bool {
	if g.subscribed == nil {
		return g.protocolType != nil && *g.protocolType == "consumer" && len(g.members) > 0
	}
	return g.subscribed[topic]
}

func (g *classicGroup) initNextGeneration(nowMs int64) {
	g.generation++
	if len(g.members) > 0 {
		p := g.selectProtocol()
		g.protocolName = &p
		g.subscribed = g.computeSubscribed()
		g.transition(stCompletingRebalance, nowMs)
	} else {
		g.protocolName = nil
		g.subscribed = g.computeSubscribed()
		g.transition(stEmpty, nowMs)
	}
	clear(g.pendingSync)
}

func (g *classicGroup) rebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// maybeElectNewJoinedLeader keeps a leader that rejoined, or picks a member
// that did.
func (g *classicGroup) maybeElectNewJoinedLeader() bool {
	if g.leader == nil {
		return false
	}
	if l := g.members[*g.leader]; l != nil && l.awaitingJoin() {
		return true
	}
	for _, m := range g.allMembers() {
		if m.awaitingJoin() {
			id := m.id
			g.leader = &id
			return true
		}
	}
	return false
}

// record is the GroupMetadataValue of the group with the given assignment.
func (g *classicGroup) record(assignment map[string][]byte, nowMs int64) record {
	v := kmsg.NewGroupMetadataValue()
	v.Version = 3
	if g.protocolType != nil {
		v.ProtocolType = *g.protocolType
	}
	v.Generation, v.Protocol, v.Leader, v.CurrentStateTimestamp = g.generation, g.protocolName, g.leader, nowMs
	if g.stateTs >= 0 {
		v.CurrentStateTimestamp = g.stateTs
	}
	name := ""
	if g.protocolName != nil {
		name = *g.protocolName
	}
	for _, m := range g.allMembers() {
		rm := kmsg.NewGroupMetadataValueMember()
		rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
		rm.RebalanceTimeoutMillis = int32(m.rebalanceTimeout / time.Millisecond)
		rm.SessionTimeoutMillis = int32(m.sessionTimeout / time.Millisecond)
		rm.Subscription = m.metadata(name)
		if rm.Subscription == nil {
			rm.Subscription = []byte{}
		}
		rm.Assignment = assignment[m.id]
		if rm.Assignment == nil {
			rm.Assignment = []byte{}
		}
		v.Members = append(v.Members, rm)
	}
	return record{Key: groupMetadataKey(g.id), Value: v.AppendTo(nil)}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// memberID is ClassicGroup.generateMemberId: clientId-UUID, or
// instanceId-UUID for static members.
func memberID(clientID string, instanceID *string) string {
	if instanceID != nil {
		return *instanceID + "-" + newUUID()
	}
	return clientID + "-" + newUUID()
}

// ---- shard operations (on the partition's event loop) ----

func heartbeatKey(group, member string) string { return "hb-" + group + "-" + member }
func joinKey(group string) string              { return "join-" + group }
func syncKey(group string) string              { return "sync-" + group }

// joinRequest is what the shard needs of a JoinGroup request.
type joinRequest struct {
	req        *kmsg.JoinGroupRequest
	clientID   string
	clientHost string
}

// classicJoin handles JoinGroup. The returned channel receives the answer,
// at once or when the join phase completes.
func (s *shard) classicJoin(jr joinRequest) *parked[*kmsg.JoinGroupResponse] {
	req := jr.req
	out := newParked(func(err error) *kmsg.JoinGroupResponse {
		return &kmsg.JoinGroupResponse{ErrorCode: code(err), MemberID: req.MemberID, Generation: -1}
	})
	reply := func(code int16, memberID string) *parked[*kmsg.JoinGroupResponse] {
		answer(s, out, &kmsg.JoinGroupResponse{ErrorCode: code, MemberID: memberID, Generation: -1})
		return out
	}
	if s.sgs[req.Group] != nil || s.stgs[req.Group] != nil {
		// A share or streams group's id cannot be joined with the classic protocol
		// (GroupMetadataManager.classicGroupJoin).
		return reply(kerr.InconsistentGroupProtocol.Code, req.MemberID)
	}
	if cg := s.cgs[req.Group]; cg != nil {
		if !cg.isEmpty() {
			return reply(kerr.InconsistentGroupProtocol.Code, req.MemberID)
		}
		// An empty consumer group becomes a classic group.
		if err := s.deleteConsumerGroupRecords(cg); err != nil {
			return reply(code(err), req.MemberID)
		}
		delete(s.cgs, req.Group)
	}
	unknown := req.MemberID == ""
	g := s.groups[req.Group]
	isNew := g == nil
	if g == nil {
		if !unknown {
			return reply(kerr.UnknownMemberID.Code, req.MemberID)
		}
		g = newClassicGroup(req.Group, s.nowMs())
		s.groups[req.Group] = g
	}
	if !s.acceptJoiningMember(g, req.MemberID) {
		g.remove(req.MemberID)
		return reply(kerr.GroupMaxSizeReached.Code, "")
	}
	if unknown {
		s.joinNewMember(g, jr, out)
	} else {
		s.joinExistingMember(g, jr, out)
	}
	if isNew && len(s.groups[req.Group].members) == 0 {
		// Commit the new group to the log (Kafka writes an empty group record).
		if err := s.write([]record{g.record(nil, s.nowMs())}); err != nil {
			// Whatever the join answered stands (the first answer wins, as
			// in Kafka); the group was never written, so it goes.
			delete(s.groups, req.Group)
			return reply(code(err), "")
		}
	}
	return out
}

func (s *shard) acceptJoiningMember(g *classicGroup, id string) bool {
	max := s.c.cfg.MaxSize
	switch g.state {
	case stPreparingRebalance:
		if m := g.members[id]; m != nil && m.awaitingJoin() {
			return true
		}
		return g.numAwaitingJoin() < max
	case stCompletingRebalance, stStable:
		return g.members[id] != nil || len(g.members) < max
	}
	return true
}

func (s *shard) joinNewMember(g *classicGroup, jr joinRequest, out *parked[*kmsg.JoinGroupResponse]) {
	req := jr.req
	switch {
	case g.state == stDead:
		answer(s, out, &kmsg.JoinGroupResponse{ErrorCode: kerr.CoordinatorNotAvailable.Code, Generation: -1})
		return
	case !g.supportsProtocols(req.ProtocolType, req.Protocols):
		answer(s, out, &kmsg.JoinGroupResponse{ErrorCode: kerr.InconsistentGroupProtocol.Code, Generation: -1})
		return
	}
	newID := memberID(jr.clientID, req.InstanceID)
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok {
			s.updateStaticMember(g, jr, old, newID, out)
			return
		}
		s.addMemberAndRebalance(g, jr, newID, out)
		return
	}
	if req.Version >= 4 {
		// KIP-394: hand out the member id and make the client rejoin with it.
		g.pending[newID] = true
		gid := g.id
		s.schedule(heartbeatKey(g.id, newID), time.Duration(req.SessionTimeoutMillis)*time.Millisecond, func() {
			s.expireHeartbeat(gid, newID)
		})
		answer(s, out, &kmsg.JoinGroupResponse{ErrorCode: kerr.MemberIDRequired.Code, MemberID: newID, Generation: -1})
		return
	}
	s.addMemberAndRebalance(g, jr, newID, out)
}

func (s *shard) joinExistingMember(g *classicGroup, jr joinRequest, out *parked[*kmsg.JoinGroupResponse]) {
	req := jr.req
	id := req.MemberID
	fail := func(err error) {
		answer(s, out, &kmsg.JoinGroupResponse{ErrorCode: code(err), MemberID: id, Generation: -1})
	}
	switch {
	case g.state == stDead:
		fail(kerr.CoordinatorNotAvailable)
		return
	case !g.supportsProtocols(req.ProtocolType, req.Protocols):
		fail(kerr.InconsistentGroupProtocol)
		return
	case g.pending[id]:
		s.addMemberAndRebalance(g, jr, id, out)
		return
	}
	if err := g.validateMember(id, req.InstanceID); err != nil {
		fail(err)
		return
	}
	m := g.members[id]
	switch g.state {
	case stPreparingRebalance:
		s.updateMemberAndRebalance(g, m, jr, out)
	case stCompletingRebalance:
		if m.matches(req.Protocols) {
			var members []kmsg.JoinGroupResponseMember
			if g.isLeader(id) {
				members = g.currentMembers()
			}
			answer(s, out, g.joinResponse(m, members))
		} else {
			s.updateMemberAndRebalance(g, m, jr, out)
		}
	case stStable:
		if g.isLeader(id) || !m.matches(req.Protocols) {
			s.updateMemberAndRebalance(g, m, jr, out)
		} else {
			answer(s, out, g.joinResponse(m, nil))
		}
	default:
		fail(kerr.UnknownMemberID)
	}
}

func rebalanceTimeoutOf(req *kmsg.JoinGroupRequest) time.Duration {
	if req.Version == 0 || req.RebalanceTimeoutMillis <= 0 {
		return time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	}
	return time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
}

func protocolsOf(req *kmsg.JoinGroupRequest) []protocol {
	ps := make([]protocol, len(req.Protocols))
	for i, p := range req.Protocols {
		ps[i] = protocol{name: p.Name, metadata: p.Metadata}
	}
	return ps
}

func (s *shard) addMemberAndRebalance(g *classicGroup, jr joinRequest, id string, out *parked[*kmsg.JoinGroupResponse]) {
	req := jr.req
	m := &classicMember{id: id, instanceID: req.InstanceID, clientID: jr.clientID, clientHost: jr.clientHost,
		rebalanceTimeout: rebalanceTimeoutOf(req), sessionTimeout: time.Duration(req.SessionTimeoutMillis) * time.Millisecond,
		protocolType: req.ProtocolType, protocols: protocolsOf(req), isNew: true, join: out}
	if g.state == stPreparingRebalance && g.prevState == stEmpty {
		g.newMemberAdded = true
	}
	g.add(m)
	s.scheduleHeartbeat(g, m, s.c.cfg.NewMemberJoinTimeout)
	s.maybePrepareRebalanceOrCompleteJoin(g, "adding new member "+id)
}

func (s *shard) updateMemberAndRebalance(g *classicGroup, m *classicMember, jr joinRequest, out *parked[*kmsg.JoinGroupResponse]) {
	s.updateMember(g, m, jr.req, out)
	s.maybePrepareRebalanceOrCompleteJoin(g, "member "+m.id+" rejoining")
}

func (s *shard) updateMember(g *classicGroup, m *classicMember, req *kmsg.JoinGroupRequest, out *parked[*kmsg.JoinGroupResponse]) {
	for _, p := range m.protocols {
		g.supported[p.name]--
	}
	m.protocols = protocolsOf(req)
	for _, p := range m.protocols {
		g.supported[p.name]++
	}
	m.rebalanceTimeout = rebalanceTimeoutOf(req)
	m.sessionTimeout = time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if m.join != nil && m.join != out {
		// A retried join replaces the parked one.
		answer(s, m.join, &kmsg.JoinGroupResponse{ErrorCode: kerr.UnknownMemberID.Code, MemberID: m.id, Generation: -1})
	}
	m.join = out
}

func (s *shard) updateStaticMember(g *classicGroup, jr joinRequest, oldID, newID string, out *parked[*kmsg.JoinGroupResponse]) {
	req := jr.req
	old := g.members[oldID]
	// replaceStaticMember: the old member's parked calls are fenced.
	s.answerJoin(old, &kmsg.JoinGroupResponse{ErrorCode: kerr.FencedInstanceID.Code, MemberID: oldID, Generation: -1})
	s.answerSync(old, &kmsg.SyncGroupResponse{ErrorCode: kerr.FencedInstanceID.Code})
	s.cancel(heartbeatKey(g.id, oldID))
	wasLeader := g.isLeader(oldID)
	idx := slices.Index(g.order, oldID)
	delete(g.members, oldID)
	old.id = newID
	old.clientID, old.clientHost = jr.clientID, jr.clientHost
	g.members[newID] = old
	g.order[idx] = newID
	g.static[*req.InstanceID] = newID
	if wasLeader {
		g.leader = &newID
	}
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	s.scheduleHeartbeat(g, old, old.sessionTimeout)
	prevLeader := g.leader
	s.updateMember(g, old, req, out)
	switch g.state {
	case stStable:
		if g.protocolName != nil && *g.protocolName == g.selectProtocol() {
			// Same protocol: persist the new member id, no rebalance.
			assignment := map[string][]byte{}
			for _, m := range g.members {
				assignment[m.id] = m.assignment
			}
			if err := s.write([]record{g.record(assignment, s.nowMs())}); err != nil {
				s.answerJoin(old, &kmsg.JoinGroupResponse{ErrorCode: code(err), Generation: g.generation})
				return
			}
			var members []kmsg.JoinGroupResponseMember
			skip := false
			if req.Version >= 9 && g.isLeader(newID) {
				members, skip = g.currentMembers(), true
			}
			r := g.joinResponse(old, members)
			r.SkipAssignment = skip
			if req.Version < 9 && prevLeader != nil {
				r.LeaderID = *prevLeader
			}
			s.answerJoin(old, r)
			return
		}
		s.maybePrepareRebalanceOrCompleteJoin(g, "static member "+newID+" changed protocol")
	case stCompletingRebalance:
		s.prepareRebalance(g, "static member "+newID+" rejoined during CompletingRebalance")
	default:
		s.maybeCompleteJoinPhase(g)
	}
}

func (s *shard) maybePrepareRebalanceOrCompleteJoin(g *classicGroup, reason string) {
	if g.canRebalance() {
		s.prepareRebalance(g, reason)
	} else {
		s.maybeCompleteJoinPhase(g)
	}
}

func (s *shard) maybeCompleteJoinPhase(g *classicGroup) {
	if g.state == stPreparingRebalance && g.prevState != stEmpty && g.hasAllMembersJoined() {
		s.completeJoin(g)
	}
}

func (s *shard) prepareRebalance(g *classicGroup, reason string) {
	if g.state == stCompletingRebalance {
		for _, m := range g.members {
			m.assignment = nil
		}
		s.propagateAssignment(g, kerr.RebalanceInProgress)
	}
	clear(g.pendingSync)
	s.cancel(syncKey(g.id))
	initial := g.state == stEmpty
	gid := g.id
	if initial {
		delay := s.c.cfg.InitialRebalanceDelay
		remaining := max(g.rebalanceTimeout()-delay, 0)
		s.schedule(joinKey(g.id), delay, func() { s.tryCompleteInitialRebalance(gid, delay, remaining) })
	}
	g.transition(stPreparingRebalance, s.nowMs())
	s.c.log.Info("preparing to rebalance group", zap.String("group", g.id), zap.Int32("generation", g.generation), zap.String("reason", reason))
	if !initial {
		if g.hasAllMembersJoined() {
			s.completeJoin(g)
		} else {
			s.schedule(joinKey(g.id), g.rebalanceTimeout(), func() {
				if g := s.groups[gid]; g != nil {
					s.completeJoin(g)
				}
			})
		}
	}
}

func (s *shard) tryCompleteInitialRebalance(gid string, delay, remaining time.Duration) {
	g := s.groups[gid]
	if g == nil {
		return
	}
	if g.newMemberAdded && remaining != 0 {
		g.newMemberAdded = false
		newDelay := min(s.c.cfg.InitialRebalanceDelay, remaining)
		newRemaining := max(remaining-delay, 0)
		s.schedule(joinKey(gid), newDelay, func() { s.tryCompleteInitialRebalance(gid, newDelay, newRemaining) })
		return
	}
	s.completeJoin(g)
}

// completeJoin is completeClassicGroupJoin: members that did not rejoin
// are dropped, the next generation starts, everyone gets its JoinGroup
// answer (the leader with the member list) and the sync phase begins.
func (s *shard) completeJoin(g *classicGroup) {
	s.cancel(joinKey(g.id))
	for _, m := range g.allMembers() {
		if !m.awaitingJoin() && m.instanceID == nil {
			g.remove(m.id)
			s.cancel(heartbeatKey(g.id, m.id))
		}
	}
	if g.state == stDead {
		return
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		gid := g.id
		s.schedule(joinKey(g.id), g.rebalanceTimeout(), func() {
			if g := s.groups[gid]; g != nil {
				s.completeJoin(g)
			}
		})
		return
	}
	g.initNextGeneration(s.nowMs())
	if g.state == stEmpty {
		if err := s.write([]record{g.record(nil, s.nowMs())}); err != nil {
			s.c.log.Warn("writing empty group metadata failed", zap.String("group", g.id), zap.Error(err))
		}
		return
	}
	s.c.log.Info("stabilized group", zap.String("group", g.id), zap.Int32("generation", g.generation), zap.Int("members", len(g.members)))
	for _, m := range g.allMembers() {
		var members []kmsg.JoinGroupResponseMember
		if g.isLeader(m.id) {
			members = g.currentMembers()
		}
		s.answerJoin(m, g.joinResponse(m, members))
		s.scheduleHeartbeat(g, m, m.sessionTimeout)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	gid, gen := g.id, g.generation
	s.schedule(syncKey(g.id), g.rebalanceTimeout(), func() { s.expirePendingSync(gid, gen) })
}

func (s *shard) expirePendingSync(gid string, gen int32) {
	g := s.groups[gid]
	if g == nil || g.generation != gen {
		return
	}
	if (g.state == stCompletingRebalance || g.state == stStable) && len(g.pendingSync) > 0 {
		for id := range g.pendingSync {
			g.remove(id)
			s.cancel(heartbeatKey(gid, id))
		}
		s.prepareRebalance(g, "members did not sync in time")
	}
}

func (s *shard) scheduleHeartbeat(g *classicGroup, m *classicMember, d time.Duration) {
	gid, mid := g.id, m.id
	s.schedule(heartbeatKey(gid, mid), d, func() { s.expireHeartbeat(gid, mid) })
}

func (s *shard) expireHeartbeat(gid, mid string) {
	g := s.groups[gid]
	if g == nil || g.state == stDead {
		return
	}
	if g.pending[mid] {
		g.remove(mid)
		if g.state == stPreparingRebalance && g.hasAllMembersJoined() {
			s.completeJoin(g)
		}
		return
	}
	m := g.members[mid]
	if m == nil {
		return
	}
	if !m.isNew && (m.awaitingJoin() || m.awaitingSync()) {
		return
	}
	s.c.log.Info("member session expired", zap.String("group", gid), zap.String("member", mid))
	s.removeMemberAndUpdate(g, m)
}

func (s *shard) removeMemberAndUpdate(g *classicGroup, m *classicMember) {
	s.answerJoin(m, &kmsg.JoinGroupResponse{ErrorCode: kerr.UnknownMemberID.Code, Generation: -1})
	s.answerSync(m, &kmsg.SyncGroupResponse{ErrorCode: kerr.UnknownMemberID.Code})
	g.remove(m.id)
	s.cancel(heartbeatKey(g.id, m.id))
	switch {
	case g.state == stStable || g.state == stCompletingRebalance:
		s.maybePrepareRebalanceOrCompleteJoin(g, "removing member "+m.id)
	case g.state == stPreparingRebalance && g.hasAllMembersJoined():
		s.completeJoin(g)
	}
}

func (s *shard) propagateAssignment(g *classicGroup, err error) {
	for _, m := range g.allMembers() {
		r := &kmsg.SyncGroupResponse{ErrorCode: code(err), MemberAssignment: m.assignment}
		if err == nil {
			r.ProtocolType, r.Protocol = g.protocolType, g.protocolName
		}
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		if s.answerSync(m, r) {
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
	}
}

// classicSync handles SyncGroup.
func (s *shard) classicSync(req *kmsg.SyncGroupRequest) *parked[*kmsg.SyncGroupResponse] {
	out := newParked(func(err error) *kmsg.SyncGroupResponse {
		return &kmsg.SyncGroupResponse{ErrorCode: code(err), MemberAssignment: []byte{}}
	})
	reply := func(err error) *parked[*kmsg.SyncGroupResponse] {
		answer(s, out, &kmsg.SyncGroupResponse{ErrorCode: code(err), MemberAssignment: []byte{}})
		return out
	}
	if cg := s.cgs[req.Group]; cg != nil {
		return reply(kerr.UnknownMemberID)
	}
	g := s.groups[req.Group]
	if g == nil || g.state == stEmpty {
		return reply(kerr.UnknownMemberID)
	}
	if g.state == stDead {
		return reply(kerr.CoordinatorNotAvailable)
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return reply(err)
	}
	if req.Generation != g.generation {
		return reply(kerr.IllegalGeneration)
	}
	if inconsistent(req.ProtocolType, g.protocolType) || inconsistent(req.Protocol, g.protocolName) {
		return reply(kerr.InconsistentGroupProtocol)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case stPreparingRebalance:
		return reply(kerr.RebalanceInProgress)
	case stCompletingRebalance:
		if m.sync != nil {
			answer(s, m.sync, &kmsg.SyncGroupResponse{ErrorCode: kerr.RebalanceInProgress.Code, MemberAssignment: []byte{}})
		}
		m.sync = out
		s.removePendingSync(g, m.id)
		if g.isLeader(m.id) {
			assignment := map[string][]byte{}
			for _, a := range req.GroupAssignment {
				assignment[a.MemberID] = a.MemberAssignment
			}
			for _, x := range g.members {
				if _, ok := assignment[x.id]; !ok {
					assignment[x.id] = []byte{}
				}
			}
			err := s.write([]record{g.record(assignment, s.nowMs())})
			if g.state != stCompletingRebalance || req.Generation != g.generation {
				return out
			}
			if err != nil {
				for _, x := range g.members {
					x.assignment = nil
				}
				s.propagateAssignment(g, err)
				s.maybePrepareRebalanceOrCompleteJoin(g, "error storing the group assignment")
				return out
			}
			for _, x := range g.members {
				x.assignment = assignment[x.id]
			}
			s.propagateAssignment(g, nil)
			g.transition(stStable, s.nowMs())
		}
		return out
	case stStable:
		s.removePendingSync(g, m.id)
		a := m.assignment
		if a == nil {
			a = []byte{}
		}
		answer(s, out, &kmsg.SyncGroupResponse{ProtocolType: g.protocolType, Protocol: g.protocolName, MemberAssignment: a})
		return out
	}
	return reply(kerr.UnknownMemberID)
}

func inconsistent(req, group *string) bool {
	return req != nil && group != nil && *req != *group
}

func (s *shard) removePendingSync(g *classicGroup, id string) {
	delete(g.pendingSync, id)
	switch g.state {
	case stDead, stEmpty, stPreparingRebalance:
		s.cancel(syncKey(g.id))
	default:
		if len(g.pendingSync) == 0 {
			s.cancel(syncKey(g.id))
		}
	}
}

// classicHeartbeat handles Heartbeat.
func (s *shard) classicHeartbeat(req *kmsg.HeartbeatRequest) error {
	if cg := s.cgs[req.Group]; cg != nil {
		return kerr.UnknownMemberID
	}
	g := s.groups[req.Group]
	if g == nil {
		return kerr.UnknownMemberID
	}
	if g.state == stDead {
		return kerr.CoordinatorNotAvailable
	}
	if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
		return err
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration
	}
	switch g.state {
	case stEmpty:
		return kerr.UnknownMemberID
	case stPreparingRebalance:
		m := g.members[req.MemberID]
		s.scheduleHeartbeat(g, m, m.sessionTimeout)
		return kerr.RebalanceInProgress
	}
	m := g.members[req.MemberID]
	s.scheduleHeartbeat(g, m, m.sessionTimeout)
	return nil
}

// leaveMember is one member of a LeaveGroup request.
type leaveMember struct {
	memberID   string
	instanceID *string
}

// classicLeave handles LeaveGroup: a top-level error or per-member errors.
func (s *shard) classicLeave(group string, members []leaveMember) (error, []error) {
	g := s.groups[group]
	if g == nil {
		if s.cgs[group] != nil {
			return kerr.UnknownMemberID, nil
		}
		return kerr.UnknownMemberID, nil
	}
	if g.state == stDead {
		return kerr.CoordinatorNotAvailable, nil
	}
	errs := make([]error, len(members))
	valid := 0
	for i, lm := range members {
		switch {
		case lm.memberID == "":
			if lm.instanceID != nil {
				if id, ok := g.static[*lm.instanceID]; ok {
					s.removeCurrentMember(g, id)
					valid++
					continue
				}
			}
			errs[i] = kerr.UnknownMemberID
		case g.pending[lm.memberID]:
			g.remove(lm.memberID)
			s.cancel(heartbeatKey(g.id, lm.memberID))
			valid++
		default:
			if err := g.validateMember(lm.memberID, lm.instanceID); err != nil {
				errs[i] = err
				continue
			}
			s.removeCurrentMember(g, lm.memberID)
			valid++
		}
	}
	if valid > 0 {
		switch g.state {
		case stStable, stCompletingRebalance:
			s.maybePrepareRebalanceOrCompleteJoin(g, "members left the group")
		case stPreparingRebalance:
			s.maybeCompleteJoinPhase(g)
		}
	}
	return nil, errs
}

func (s *shard) removeCurrentMember(g *classicGroup, id string) {
	m := g.members[id]
	s.cancel(heartbeatKey(g.id, id))
	s.answerJoin(m, &kmsg.JoinGroupResponse{ErrorCode: kerr.UnknownMemberID.Code, Generation: -1})
	s.answerSync(m, &kmsg.SyncGroupResponse{ErrorCode: kerr.UnknownMemberID.Code})
	g.remove(id)
}
