package group

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// Member states (Kafka's MemberState).
const (
	msStable               int8 = 0
	msUnrevokedPartitions  int8 = 1
	msUnreleasedPartitions int8 = 2
)

// Member epochs with a meaning in ConsumerGroupHeartbeat.
const (
	leaveGroupEpoch       = -1
	leaveGroupStaticEpoch = -2
)

// consumerGroup is a KIP-848 group (group.protocol=consumer), as Kafka's
// ConsumerGroup. Its state changes only by replaying records (replay848),
// whether they come from the log at load or were just written.
type consumerGroup struct {
	id              string
	epoch           int32 // group epoch
	assignmentEpoch int32 // target assignment epoch
	members         map[string]*consumerMember
	static          map[string]string  // instance id -> member id
	target          map[string]partSet // member -> target assignment
	owner           map[tp]int32       // current owner's epoch of assigned / revoking partitions
	// subMeta is the subscribed topics' partition counts the target was
	// computed from (Kafka persists it; here it is recomputed at load).
	subMeta map[string]int32
	// metadataHash is the subscribed topics' hash of the last group epoch
	// (KIP-1101): the epoch moves when it changes
	metadataHash int64
}

// consumerMember is a member (ConsumerGroupMember).
type consumerMember struct {
	id                 string
	instanceID, rackID *string
	clientID           string
	clientHost         string
	topics             []string
	regex              *string
	rebalanceTimeoutMs int32
	assignor           *string
	epoch, prevEpoch   int32
	state              int8
	assigned, pending  partSet
	// since is the member epoch at which each assigned partition was
	// assigned (KIP-1251 assignment epochs; in memory only, a loaded
	// member starts with its current epoch).
	since map[tp]int32
}

func newConsumerGroup(id string) *consumerGroup {
	return &consumerGroup{id: id, members: map[string]*consumerMember{}, static: map[string]string{},
		target: map[string]partSet{}, owner: map[tp]int32{}, subMeta: map[string]int32{}}
}

func newConsumerMember(id string) *consumerMember {
	return &consumerMember{id: id, rebalanceTimeoutMs: -1, assigned: partSet{}, pending: partSet{}, since: map[tp]int32{}}
}

func (m *consumerMember) clone() *consumerMember {
	c := *m
	c.topics = slices.Clone(m.topics)
	c.assigned, c.pending = m.assigned.clone(), m.pending.clone()
	c.since = map[tp]int32{}
	for k, v := range m.since {
		c.since[k] = v
	}
	return &c
}

func (g *consumerGroup) isEmpty() bool { return len(g.members) == 0 }

func (g *consumerGroup) stateString() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.epoch > g.assignmentEpoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if m.state != msStable || m.epoch != g.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

func (g *consumerGroup) isSubscribedToTopic(topic string) bool {
	if _, ok := g.subMeta[topic]; ok {
		return true
	}
	for _, m := range g.members {
		if slices.Contains(m.topics, topic) {
			return true
		}
	}
	return false
}

// validateOffsetCommit checks a commit against the member (KIP-1251): the
// current epoch commits anything; an older epoch only partitions the member
// has owned since at most that epoch; a newer one is STALE_MEMBER_EPOCH.
// The returned check is per partition (nil: none). txn is set for
// TxnOffsetCommit, whose pre-KIP-447 form (no member, epoch -1) is
// accepted as is and which has no minimum version.
// checkMemberCommit is the part of a KIP-848 or streams group's
// validateOffsetCommit before the per-partition check (ConsumerGroup and
// StreamsGroup.validateOffsetCommit): done (err nil) accepts the commit as
// it is; an error refuses it; neither leaves an older epoch to check
// partition by partition. memberEpoch is nil for an unknown member.
func checkMemberCommit(members int, memberEpoch *int32, memberID string, instanceID *string, epoch int32, version int16, txn bool) (done bool, err error) {
	switch {
	case epoch < 0 && members == 0:
		return true, nil
	case txn && epoch == -1 && memberID == "" && instanceID == nil:
		return true, nil
	case memberEpoch == nil:
		return false, kerr.UnknownMemberID
	case !txn && version < 9:
		return false, kerr.UnsupportedVersion
	case epoch == *memberEpoch:
		return true, nil
	case epoch > *memberEpoch:
		return false, kerr.StaleMemberEpoch
	}
	return false, nil
}

func (g *consumerGroup) validateOffsetCommit(memberID string, instanceID *string, epoch int32, version int16, txn bool) (func(id [16]byte, p int32) error, error) {
	m := g.members[memberID]
	var memberEpoch *int32
	if m != nil {
		memberEpoch = &m.epoch
	}
	if done, err := checkMemberCommit(len(g.members), memberEpoch, memberID, instanceID, epoch, version, txn); done || err != nil {
		return nil, err
	}
	return func(id [16]byte, p int32) error {
		x := tp{id, p}
		if _, ok := m.assigned[x]; !ok {
			return kerr.StaleMemberEpoch
		}
		if e, ok := m.since[x]; !ok || e > epoch {
			return kerr.StaleMemberEpoch
		}
		return nil
	}, nil
}

// checkMemberFetch is a KIP-848 or streams group's validateOffsetFetch: a
// fetch without member and epoch is anyone's; with them the member must
// exist (UNKNOWN_MEMBER_ID) at that epoch (STALE_MEMBER_EPOCH).
func checkMemberFetch(memberID *string, epoch int32, memberEpoch func(string) (int32, bool)) error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	if memberID == nil {
		return kerr.UnknownMemberID
	}
	e, ok := memberEpoch(*memberID)
	if !ok {
		return kerr.UnknownMemberID
	}
	if epoch != e {
		return kerr.StaleMemberEpoch
	}
	return nil
}

func (g *consumerGroup) validateOffsetFetch(memberID *string, epoch int32) error {
	return checkMemberFetch(memberID, epoch, func(id string) (int32, bool) {
		if m := g.members[id]; m != nil {
			return m.epoch, true
		}
		return 0, false
	})
}

// ---- replay ----

func (s *shard) consumerGroupFor(id string) *consumerGroup {
	g := s.cgs[id]
	if g == nil {
		g = newConsumerGroup(id)
		s.cgs[id] = g
		delete(s.groups, id)
		delete(s.sgs, id)
	}
	return g
}

func (s *shard) replayConsumer(ver int16, k, v []byte) {
	switch ver {
	case keyConsumerGroupMetadata:
		gid, _, ok := readKey(k, false)
		if !ok {
			return
		}
		if v == nil {
			delete(s.cgs, gid)
			return
		}
		epoch, hash, ok := readEpochTag0Long(v)
		if !ok {
			return
		}
		g := s.consumerGroupFor(gid)
		g.epoch, g.metadataHash = epoch, hash
	case keyConsumerGroupTargetMetadata:
		gid, _, ok := readKey(k, false)
		if !ok || v == nil {
			return
		}
		s.consumerGroupFor(gid).assignmentEpoch = newReader(v).i32()
	case keyConsumerGroupMemberMetadata:
		gid, mid, ok := readKey(k, true)
		if !ok {
			return
		}
		g := s.cgs[gid]
		if v == nil {
			if g != nil {
				if m := g.members[mid]; m != nil {
					if m.instanceID != nil && g.static[*m.instanceID] == mid {
						delete(g.static, *m.instanceID)
					}
					delete(g.members, mid)
				}
			}
			return
		}
		g = s.consumerGroupFor(gid)
		m := g.members[mid]
		if m == nil {
			m = newConsumerMember(mid)
			g.members[mid] = m
		}
		r := newReader(v)
		m.instanceID, m.rackID = r.nstr(), r.nstr()
		m.clientID, m.clientHost = r.str(), r.str()
		n := r.arr()
		m.topics = nil
		for i := int32(0); i < n && r.r.Ok(); i++ {
			m.topics = append(m.topics, r.str())
		}
		m.regex = r.nstr()
		m.rebalanceTimeoutMs = r.i32()
		m.assignor = r.nstr()
		if m.instanceID != nil {
			g.static[*m.instanceID] = mid
		}
	case keyConsumerGroupTargetMember:
		gid, mid, ok := readKey(k, true)
		if !ok {
			return
		}
		if v == nil {
			if g := s.cgs[gid]; g != nil {
				delete(g.target, mid)
			}
			return
		}
		s.consumerGroupFor(gid).target[mid] = partSetOf(newReader(v).topicParts())
	case keyConsumerGroupCurrentMember:
		gid, mid, ok := readKey(k, true)
		if !ok {
			return
		}
		g := s.cgs[gid]
		if v == nil {
			if g != nil {
				if m := g.members[mid]; m != nil {
					g.releaseOwnership(m)
					m.assigned, m.pending = partSet{}, partSet{}
					m.epoch, m.prevEpoch, m.state = 0, 0, msStable
				}
			}
			return
		}
		g = s.consumerGroupFor(gid)
		m := g.members[mid]
		if m == nil {
			m = newConsumerMember(mid)
			g.members[mid] = m
		}
		g.releaseOwnership(m)
		r := newReader(v)
		m.epoch, m.prevEpoch, m.state = r.i32(), r.i32(), r.i8()
		prev := m.assigned
		m.assigned, m.pending = partSetOf(r.topicParts()), partSetOf(r.topicParts())
		since := map[tp]int32{}
		for x := range m.assigned {
			if _, ok := prev[x]; ok && m.since[x] > 0 {
				since[x] = m.since[x]
			} else {
				since[x] = max(m.epoch, 0)
			}
		}
		m.since = since
		for x := range m.assigned {
			g.owner[x] = m.epoch
		}
		for x := range m.pending {
			g.owner[x] = m.epoch
		}
	}
}

func (g *consumerGroup) releaseOwnership(m *consumerMember) {
	for x := range m.assigned {
		delete(g.owner, x)
	}
	for x := range m.pending {
		delete(g.owner, x)
	}
}

// ---- timers ----

func sessionKey(g, m string) string   { return "cg-session-" + g + "-" + m }
func rebalanceKey(g, m string) string { return "cg-rebalance-" + g + "-" + m }

func (s *shard) scheduleSession(gid, mid string) {
	s.schedule(sessionKey(gid, mid), s.c.cfg.consumerSessionTimeout(gid), func() {
		if g := s.cgs[gid]; g != nil && g.members[mid] != nil {
			s.c.log.Info("consumer group member session expired", zap.String("group", gid), zap.String("member", mid))
			_ = s.fenceMember(g, mid)
		}
	})
}

func (s *shard) scheduleRebalanceTimeout(g *consumerGroup, m *consumerMember) {
	gid, mid, epoch := g.id, m.id, m.epoch
	d := time.Duration(m.rebalanceTimeoutMs) * time.Millisecond
	if d <= 0 {
		d = 5 * time.Minute
	}
	s.schedule(rebalanceKey(gid, mid), d, func() {
		g := s.cgs[gid]
		if g == nil {
			return
		}
		if m := g.members[mid]; m != nil && m.epoch == epoch && m.state == msUnrevokedPartitions {
			s.c.log.Info("consumer group member did not revoke in time", zap.String("group", gid), zap.String("member", mid))
			_ = s.fenceMember(g, mid)
		}
	})
}

func (s *shard) onConsumerGroupLoaded(g *consumerGroup) {
	g.subMeta = s.subscriptionMetadata(g, nil)
	for id, m := range g.members {
		s.scheduleSession(g.id, id)
		if m.state == msUnrevokedPartitions {
			s.scheduleRebalanceTimeout(g, m)
		}
	}
}

func (s *shard) cancelConsumerGroupTimers(g *consumerGroup) {
	for id := range g.members {
		s.cancel(sessionKey(g.id, id))
		s.cancel(rebalanceKey(g.id, id))
	}
}

// removeMemberRecords are the tombstones of a member (removeMember).
func removeMemberRecords(gid, mid string) []record {
	return []record{
		{Key: memberKey(keyConsumerGroupCurrentMember, gid, mid)},
		{Key: memberKey(keyConsumerGroupTargetMember, gid, mid)},
		{Key: memberKey(keyConsumerGroupMemberMetadata, gid, mid)},
	}
}

// fenceMember removes a member and bumps the group epoch, so the others
// get a new target at their next heartbeat.
func (s *shard) fenceMember(g *consumerGroup, mid string) error {
	recs := removeMemberRecords(g.id, mid)
	recs = append(recs, consumerGroupMetadataRecord(g.id, g.epoch+1, groupMetadataHash(s.c.cfg.Image(), s.subscribedTopics(g, nil, mid))))
	s.cancel(sessionKey(g.id, mid))
	s.cancel(rebalanceKey(g.id, mid))
	if err := s.apply(recs); err != nil {
		return err
	}
	g.subMeta = s.subscriptionMetadata(g, nil)
	return nil
}

func (s *shard) consumerGroupTombstones(g *consumerGroup) []record {
	var recs []record
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		recs = append(recs, removeMemberRecords(g.id, id)...)
	}
	recs = append(recs, record{Key: groupKey(keyConsumerGroupTargetMetadata, g.id)}, record{Key: groupKey(keyConsumerGroupMetadata, g.id)})
	return recs
}

func (s *shard) deleteConsumerGroupRecords(g *consumerGroup) error {
	if err := s.write(s.consumerGroupTombstones(g)); err != nil {
		return err
	}
	s.cancelConsumerGroupTimers(g)
	return nil
}

// ---- subscriptions ----

// resolvedTopics are the existing topics a member subscribes to (names and
// regex).
func (s *shard) resolvedTopics(m *consumerMember) []string {
	img := s.c.cfg.Image()
	seen := map[string]bool{}
	var out []string
	for _, t := range m.topics {
		if img.TopicByName(t) != nil && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	if m.regex != nil && *m.regex != "" {
		if re, err := regexp.Compile("^(?:" + *m.regex + ")$"); err == nil {
			for _, t := range img.TopicNames() {
				if !seen[t] && !isInternal(t) && re.MatchString(t) {
					seen[t] = true
					out = append(out, t)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func isInternal(t string) bool {
	return t == OffsetsTopic || t == "__transaction_state" || t == "__share_group_state"
}

// subscribedTopics are the topics the members subscribe to, by name or
// resolved regular expression, with updated replacing its member and
// without member skip (ConsumerGroup.computeSubscribedTopicNames).
func (s *shard) subscribedTopics(g *consumerGroup, updated *consumerMember, skip string) []string {
	var out []string
	for id, m := range g.members {
		if id == skip || updated != nil && id == updated.id {
			continue
		}
		out = append(out, s.resolvedTopics(m)...)
	}
	if updated != nil && updated.id != skip {
		out = append(out, s.resolvedTopics(updated)...)
	}
	return out
}

// subscriptionMetadata is the partition count of every subscribed topic,
// with updated replacing its member (nil: the members as they are).
func (s *shard) subscriptionMetadata(g *consumerGroup, updated *consumerMember) map[string]int32 {
	img := s.c.cfg.Image()
	out := map[string]int32{}
	add := func(m *consumerMember) {
		for _, t := range s.resolvedTopics(m) {
			if ti := img.TopicByName(t); ti != nil {
				out[t] = int32(len(ti.Partitions))
			}
		}
	}
	for id, m := range g.members {
		if updated != nil && id == updated.id {
			continue
		}
		add(m)
	}
	if updated != nil {
		add(updated)
	}
	return out
}

func equalMeta(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// preferredAssignor is the server assignor most members ask for, else the
// first of group.consumer.assignors.
func (s *shard) preferredAssignor(g *consumerGroup, updated *consumerMember) string {
	votes := map[string]int{}
	for id, m := range g.members {
		if updated != nil && id == updated.id {
			m = updated
		}
		if m.assignor != nil {
			votes[*m.assignor]++
		}
	}
	if updated != nil && g.members[updated.id] == nil && updated.assignor != nil {
		votes[*updated.assignor]++
	}
	best, n := s.c.cfg.ConsumerAssignors[0], 0
	for _, name := range s.c.cfg.ConsumerAssignors {
		if votes[name] > n {
			best, n = name, votes[name]
		}
	}
	return best
}

// targetRecords computes the target assignment of epoch with updated in
// place of its member and returns the records of what changed.
func (s *shard) targetRecords(g *consumerGroup, epoch int32, updated *consumerMember) ([]record, partSet) {
	img := s.c.cfg.Image()
	topics := map[string]assignTopic{}
	var members []assignMember
	add := func(m *consumerMember) {
		am := assignMember{id: m.id}
		for _, t := range s.resolvedTopics(m) {
			if ti := img.TopicByName(t); ti != nil {
				topics[t] = assignTopic{id: ti.ID, parts: int32(len(ti.Partitions))}
				am.topics = append(am.topics, t)
			}
		}
		members = append(members, am)
	}
	for id, m := range g.members {
		if id == updated.id {
			continue
		}
		add(m)
	}
	add(updated)
	target := assign(s.preferredAssignor(g, updated), members, topics, g.target)
	var recs []record
	ids := make([]string, 0, len(target))
	for id := range target {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if old, ok := g.target[id]; !ok || !old.equal(target[id]) {
			recs = append(recs, targetMemberRecord(g.id, id, target[id]))
		}
	}
	recs = append(recs, targetMetadataRecord(g.id, epoch))
	return recs, target[updated.id]
}

// ---- reconciliation (CurrentAssignmentBuilder) ----

// ownsAny reports whether owned (nil: unknown, treated as owning) holds any
// partition of set.
func ownsAny(owned []kmsg.ConsumerGroupHeartbeatRequestTopic, ownedKnown bool, set partSet) bool {
	if !ownedKnown {
		return true
	}
	for _, t := range owned {
		for _, p := range t.Partitions {
			if _, ok := set[tp{t.TopicID, p}]; ok {
				return true
			}
		}
	}
	return false
}

func (s *shard) reconcile(g *consumerGroup, m *consumerMember, targetEpoch int32, target partSet,
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic, ownedKnown bool) *consumerMember {
	if m.state == msStable && m.epoch == targetEpoch {
		return m
	}
	switch m.state {
	case msStable:
		return s.nextAssignment(g, m, m.epoch, targetEpoch, target, owned, ownedKnown)
	case msUnrevokedPartitions:
		if ownsAny(owned, ownedKnown, m.pending) {
			return m
		}
		return s.nextAssignment(g, m, m.epoch+1, targetEpoch, target, owned, ownedKnown)
	default:
		return s.nextAssignment(g, m, m.epoch, targetEpoch, target, owned, ownedKnown)
	}
}

func (s *shard) nextAssignment(g *consumerGroup, m *consumerMember, memberEpoch, targetEpoch int32, target partSet,
	owned []kmsg.ConsumerGroupHeartbeatRequestTopic, ownedKnown bool) *consumerMember {
	assigned, revoke, add := partSet{}, partSet{}, partSet{}
	unreleased := false
	for x := range m.assigned {
		if _, ok := target[x]; ok {
			assigned[x] = struct{}{}
		} else {
			revoke[x] = struct{}{}
		}
	}
	self := g.members[m.id] // its stored state: its own partitions are not "owned by another"
	for x := range target {
		if _, ok := assigned[x]; ok {
			continue
		}
		if _, owned := g.owner[x]; owned {
			mine := false
			if self != nil {
				_, a := self.assigned[x]
				_, p := self.pending[x]
				mine = a || p
			}
			if !mine {
				unreleased = true
				continue
			}
		}
		add[x] = struct{}{}
	}
	n := m.clone()
	setEpoch := func(e int32) {
		if e != n.epoch {
			n.prevEpoch = n.epoch
		}
		n.epoch = e
	}
	switch {
	case len(revoke) > 0 && ownsAny(owned, ownedKnown, revoke):
		n.state = msUnrevokedPartitions
		setEpoch(memberEpoch)
		n.assigned, n.pending = assigned, revoke
	default:
		for x := range add {
			assigned[x] = struct{}{}
		}
		n.state = msStable
		if unreleased {
			n.state = msUnreleasedPartitions
		}
		setEpoch(targetEpoch)
		n.assigned, n.pending = assigned, partSet{}
	}
	return n
}

func sameMemberAssignment(a, b *consumerMember) bool {
	return a.epoch == b.epoch && a.prevEpoch == b.prevEpoch && a.state == b.state &&
		a.assigned.equal(b.assigned) && a.pending.equal(b.pending)
}

func sameMemberMetadata(a, b *consumerMember) bool {
	return eqp(a.instanceID, b.instanceID) && eqp(a.rackID, b.rackID) && a.clientID == b.clientID &&
		a.clientHost == b.clientHost && slices.Equal(a.topics, b.topics) && eqp(a.regex, b.regex) &&
		a.rebalanceTimeoutMs == b.rebalanceTimeoutMs && eqp(a.assignor, b.assignor)
}

func eqp(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// ---- ConsumerGroupHeartbeat ----

func (s *shard) consumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	resp := &kmsg.ConsumerGroupHeartbeatResponse{MemberEpoch: req.MemberEpoch}
	mid := req.MemberID
	if req.MemberEpoch == leaveGroupEpoch || req.MemberEpoch == leaveGroupStaticEpoch {
		return s.consumerLeave(req)
	}
	g := s.cgs[req.Group]
	var pre []record
	if g == nil && (s.sgs[req.Group] != nil || s.stgs[req.Group] != nil) {
		return nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
	}
	if g == nil {
		if req.MemberEpoch != 0 {
			return nil, errMsg(kerr.GroupIDNotFound, "Consumer group %s not found.", req.Group)
		}
		if cg := s.groups[req.Group]; cg != nil {
			if cg.state != stEmpty {
				return nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
			}
			// An empty classic group becomes a consumer group.
			pre = append(pre, record{Key: groupMetadataKey(req.Group)})
		}
		g = newConsumerGroup(req.Group)
	}
	if len(g.members) >= s.c.cfg.ConsumerMaxSize && (mid == "" || g.members[mid] == nil) {
		return nil, kerr.GroupMaxSizeReached
	}
	if mid == "" {
		mid = newUUID()
	}
	ownedKnown := req.Topics != nil
	var old *consumerMember
	switch {
	case req.InstanceID != nil:
		existingID, ok := g.static[*req.InstanceID]
		existing := g.members[existingID]
		if req.MemberEpoch == 0 {
			if ok && existingID != mid {
				if existing.epoch != leaveGroupStaticEpoch {
					return nil, errMsg(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by member %s.", mid, *req.InstanceID, existingID)
				}
				// Replace the departed static member: it is removed first
				// (its partitions are released), the new one joins with its
				// subscription.
				s.cancel(sessionKey(g.id, existingID))
				s.cancel(rebalanceKey(g.id, existingID))
				old = existing.clone()
				if err := s.apply(append(pre, removeMemberRecords(g.id, existingID)...)); err != nil {
					return nil, err
				}
				pre = nil
				if s.cgs[req.Group] != nil {
					g = s.cgs[req.Group]
				}
				old.id = mid
				old.epoch, old.prevEpoch, old.state = 0, 0, msStable
				old.assigned, old.pending = partSet{}, partSet{}
			} else if ok {
				old = existing.clone()
				old.epoch = 0
			} else {
				old = newConsumerMember(mid)
			}
			break
		}
		if !ok {
			return nil, errMsg(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		}
		if existingID != mid {
			return nil, kerr.FencedInstanceID
		}
		old = existing
		if err := checkEpoch(old, req.MemberEpoch, req.Topics); err != nil {
			return nil, err
		}
	default:
		m := g.members[mid]
		switch {
		case m == nil && req.MemberEpoch != 0:
			return nil, errMsg(kerr.UnknownMemberID, "Member %s is not a member of group %s.", mid, g.id)
		case m == nil:
			old = newConsumerMember(mid)
		case req.MemberEpoch == 0:
			// The member rejoins: it gave up its partitions.
			old = m.clone()
			old.epoch, old.state = 0, msStable
			old.assigned, old.pending = partSet{}, partSet{}
		default:
			old = m
			if err := checkEpoch(old, req.MemberEpoch, req.Topics); err != nil {
				return nil, err
			}
		}
	}
	upd := old.clone()
	upd.instanceID = req.InstanceID
	if req.RackID != nil {
		upd.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		upd.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.ServerAssignor != nil {
		upd.assignor = req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		upd.topics = slices.Clone(req.SubscribedTopicNames)
		sort.Strings(upd.topics)
	}
	if req.SubscribedTopicRegex != nil {
		if *req.SubscribedTopicRegex == "" {
			upd.regex = nil
		} else {
			r := *req.SubscribedTopicRegex
			upd.regex = &r
		}
	}
	upd.clientID, upd.clientHost = clientID, clientHost

	recs := pre
	bump := false
	if g.members[old.id] == nil || old.id != mid || !sameMemberMetadata(old, upd) {
		recs = append(recs, memberMetadataRecord(g.id, upd))
		if g.members[old.id] == nil || !slices.Equal(old.topics, upd.topics) || !eqp(old.regex, upd.regex) {
			bump = true
		}
	}
	groupEpoch := g.epoch
	meta := s.subscriptionMetadata(g, upd)
	hash := groupMetadataHash(s.c.cfg.Image(), s.subscribedTopics(g, upd, ""))
	if !equalMeta(meta, g.subMeta) || hash != g.metadataHash {
		bump = true
	}
	if bump {
		groupEpoch++
		recs = append(recs, consumerGroupMetadataRecord(g.id, groupEpoch, hash))
	}
	targetEpoch := g.assignmentEpoch
	target := g.target[upd.id]
	if groupEpoch > g.assignmentEpoch {
		var trecs []record
		trecs, target = s.targetRecords(g, groupEpoch, upd)
		recs = append(recs, trecs...)
		targetEpoch = groupEpoch
	}
	next := s.reconcile(g, upd, targetEpoch, target, req.Topics, ownedKnown)
	if g.members[old.id] == nil || req.MemberEpoch == 0 || !sameMemberAssignment(g.members[old.id], next) {
		recs = append(recs, currentAssignmentRecord(g.id, next))
	}
	prevAssigned := old.assigned.clone() // replay updates the stored member in place
	if err := s.apply(recs); err != nil {
		return nil, err
	}
	g = s.cgs[req.Group]
	g.subMeta = meta
	m := g.members[next.id]
	if m.state == msUnrevokedPartitions {
		s.scheduleRebalanceTimeout(g, m)
	} else {
		s.cancel(rebalanceKey(g.id, m.id))
	}
	s.scheduleSession(g.id, m.id)

	id := m.id
	resp.MemberID, resp.MemberEpoch = &id, m.epoch
	resp.HeartbeatIntervalMillis = int32(s.c.cfg.consumerHeartbeatInterval(g.id) / time.Millisecond)
	full := req.MemberEpoch == 0 || (req.RebalanceTimeoutMillis != -1 && req.SubscribedTopicNames != nil && req.Topics != nil)
	if full || !prevAssigned.equal(m.assigned) {
		a := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
		for _, t := range m.assigned.topicParts() {
			at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
			at.TopicID, at.Partitions = t.id, t.parts
			a.Topics = append(a.Topics, at)
		}
		resp.Assignment = &a
	}
	return resp, nil
}

// checkEpoch is throwIfConsumerGroupMemberEpochIsInvalid.
func checkEpoch(m *consumerMember, epoch int32, owned []kmsg.ConsumerGroupHeartbeatRequestTopic) error {
	switch {
	case epoch > m.epoch:
		return kerr.FencedMemberEpoch
	case epoch < m.epoch:
		if epoch != m.prevEpoch || owned == nil {
			return kerr.FencedMemberEpoch
		}
		for _, t := range owned {
			for _, p := range t.Partitions {
				if _, ok := m.assigned[tp{t.TopicID, p}]; !ok {
					return kerr.FencedMemberEpoch
				}
			}
		}
	}
	return nil
}

func (s *shard) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	g := s.cgs[req.Group]
	if g == nil {
		return nil, errMsg(kerr.GroupIDNotFound, "Consumer group %s not found.", req.Group)
	}
	mid := req.MemberID
	resp := &kmsg.ConsumerGroupHeartbeatResponse{MemberID: &mid, MemberEpoch: req.MemberEpoch}
	if req.InstanceID == nil {
		if g.members[mid] == nil {
			return nil, errMsg(kerr.UnknownMemberID, "Member %s is not a member of group %s.", mid, g.id)
		}
		return resp, s.fenceMember(g, mid)
	}
	existing, ok := g.static[*req.InstanceID]
	if !ok {
		return nil, errMsg(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
	}
	if existing != mid {
		return nil, kerr.FencedInstanceID
	}
	if req.MemberEpoch == leaveGroupStaticEpoch {
		m := g.members[mid].clone()
		m.epoch, m.pending = leaveGroupStaticEpoch, partSet{}
		return resp, s.apply([]record{currentAssignmentRecord(g.id, m)})
	}
	return resp, s.fenceMember(g, mid)
}

func (s *shard) classicHeartbeatToConsumerGroup(g *consumerGroup, req *kmsg.HeartbeatRequest) error {
	// Classic members in KIP-848 groups (online migration) are not
	// supported; no such member can exist.
	return kerr.UnknownMemberID
}

func (s *shard) classicLeaveConsumerGroup(g *consumerGroup, members []leaveMember) (error, []error) {
	errs := make([]error, len(members))
	for i := range members {
		errs[i] = kerr.UnknownMemberID
	}
	return nil, errs
}

// errMsg is a kerr error with a message for the response.
type msgError struct {
	err *kerr.Error
	msg string
}

func (e *msgError) Error() string { return e.err.Error() + ": " + e.msg }
func (e *msgError) Unwrap() error { return e.err }

func errMsg(err *kerr.Error, format string, args ...any) error {
	return &msgError{err: err, msg: fmt.Sprintf(format, args...)}
}

// ---- ConsumerGroupDescribe ----

func (s *shard) describeConsumerGroup(id string, rg *kmsg.ConsumerGroupDescribeResponseGroup) {
	g := s.cgs[id]
	if g == nil {
		msg := fmt.Sprintf("Group %s not found.", id)
		if s.groups[id] != nil || s.sgs[id] != nil || s.stgs[id] != nil {
			msg = fmt.Sprintf("Group %s is not a consumer group.", id)
		}
		rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		return
	}
	img := s.c.cfg.Image()
	rg.State, rg.Epoch, rg.AssignmentEpoch = g.stateString(), g.epoch, g.assignmentEpoch
	rg.AssignorName = s.preferredAssignor(g, nil)
	toAssignment := func(set partSet) kmsg.Assignment {
		a := kmsg.NewAssignment()
		for _, t := range set.topicParts() {
			at := kmsg.NewAssignmentTopicPartition()
			at.TopicID, at.Partitions = t.id, t.parts
			if ti := img.TopicByID(t.id); ti != nil {
				at.Topic = ti.Name
			}
			a.TopicPartitions = append(a.TopicPartitions, at)
		}
		return a
	}
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, mid := range ids {
		m := g.members[mid]
		rm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		rm.MemberID, rm.InstanceID, rm.RackID, rm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		rm.ClientID, rm.ClientHost = m.clientID, m.clientHost
		rm.SubscribedTopics = slices.Clone(m.topics)
		if rm.SubscribedTopics == nil {
			rm.SubscribedTopics = []string{}
		}
		rm.SubscribedTopicRegex = m.regex
		rm.Assignment = toAssignment(m.assigned)
		rm.TargetAssignment = toAssignment(g.target[mid])
		rm.MemberType = 1
		rg.Members = append(rg.Members, rm)
	}
}
