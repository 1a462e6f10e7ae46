package group

// Share groups (KIP-932, Kafka's modern/share/ShareGroup and the share
// group parts of GroupMetadataManager). A share group's members consume
// the same partitions together: the server assigns (assignor "simple",
// share_assignor.go), several members may hold one partition, and the
// records are handed out and acknowledged per record by the share
// partitions on the partition leaders (package share), whose persisted
// state the share coordinator keeps (sharestate.Persister). There is no
// revocation: a member takes its target assignment at once.
//
// The group's state changes only by replaying records (replayShare),
// whether read at load or just written, as for KIP-848 groups.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// shareGroup is a share group (ShareGroup). Its states are Empty and
// Stable (members or not); Dead once deleted.
type shareGroup struct {
	id              string
	epoch           int32
	metadataHash    int64 // the subscribed topics' hash (KIP-1101) of the last group epoch
	assignmentEpoch int32
	assignmentTs    int64 // when the target was computed (KIP-1263), 0 unknown
	members         map[string]*shareMember
	target          map[string]partSet
	// subMeta is the subscribed topics' partition counts the group epoch
	// was last bumped for (recomputed from the image at load).
	subMeta map[string]int32
}

// shareMember is a member (ShareGroupMember).
type shareMember struct {
	id                 string
	rackID             *string
	clientID           string
	clientHost         string
	topics             []string
	epoch, prevEpoch   int32
	state              int8
	assigned           partSet
	hasCurrentAssigned bool // a ShareGroupCurrentMemberAssignment record exists
}

func newShareGroup(id string) *shareGroup {
	return &shareGroup{id: id, members: map[string]*shareMember{}, target: map[string]partSet{}, subMeta: map[string]int32{}}
}

func newShareMember(id string) *shareMember { return &shareMember{id: id, assigned: partSet{}} }

func (m *shareMember) clone() *shareMember {
	c := *m
	c.topics = slices.Clone(m.topics)
	c.assigned = m.assigned.clone()
	return &c
}

func (g *shareGroup) stateString() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

// subscribedTopics is every topic name a member subscribes to.
func (g *shareGroup) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	for _, m := range g.members {
		for _, t := range m.topics {
			out[t] = true
		}
	}
	return out
}

// ---- replay ----

// shareGroupFor returns the share group id, creating it (a group of
// another type with the same id is replaced: the log said so).
func (s *shard) shareGroupFor(id string) *shareGroup {
	g := s.sgs[id]
	if g == nil {
		g = newShareGroup(id)
		s.sgs[id] = g
		delete(s.groups, id)
		delete(s.cgs, id)
	}
	return g
}

func (s *shard) replayShare(ver int16, k, v []byte) {
	switch ver {
	case keyShareGroupMetadata:
		gid, _, ok := readKey(k, false)
		if !ok {
			return
		}
		if v == nil {
			delete(s.sgs, gid)
			return
		}
		r := newReader(v)
		epoch, hash := r.i32(), r.r.Int64()
		if !r.r.Ok() {
			return
		}
		g := s.shareGroupFor(gid)
		g.epoch, g.metadataHash = epoch, hash
	case keyShareGroupTargetMetadata:
		gid, _, ok := readKey(k, false)
		if !ok || v == nil {
			return
		}
		epoch, ts, ok := readShareTargetMetadata(v)
		if !ok {
			return
		}
		g := s.shareGroupFor(gid)
		g.assignmentEpoch, g.assignmentTs = epoch, ts
	case keyShareGroupMemberMetadata:
		gid, mid, ok := readKey(k, true)
		if !ok {
			return
		}
		if v == nil {
			if g := s.sgs[gid]; g != nil {
				delete(g.members, mid)
			}
			return
		}
		r := newReader(v)
		rack, clientID, clientHost := r.nstr(), r.str(), r.str()
		n := r.arr()
		var topics []string
		for i := int32(0); i < n && r.r.Ok(); i++ {
			topics = append(topics, r.str())
		}
		if !r.r.Ok() {
			return
		}
		g := s.shareGroupFor(gid)
		m := g.members[mid]
		if m == nil {
			m = newShareMember(mid)
			g.members[mid] = m
		}
		m.rackID, m.clientID, m.clientHost, m.topics = rack, clientID, clientHost, topics
	case keyShareGroupTargetMember:
		gid, mid, ok := readKey(k, true)
		if !ok {
			return
		}
		if v == nil {
			if g := s.sgs[gid]; g != nil {
				delete(g.target, mid)
			}
			return
		}
		r := newReader(v)
		parts := partSetOf(r.topicParts())
		if !r.r.Ok() {
			return
		}
		s.shareGroupFor(gid).target[mid] = parts
	case keyShareGroupCurrentMember:
		gid, mid, ok := readKey(k, true)
		if !ok {
			return
		}
		g := s.sgs[gid]
		if v == nil {
			if g != nil {
				if m := g.members[mid]; m != nil {
					m.epoch, m.prevEpoch, m.state, m.assigned, m.hasCurrentAssigned = 0, 0, 0, partSet{}, false
				}
			}
			return
		}
		r := newReader(v)
		epoch, prev, state := r.i32(), r.i32(), r.i8()
		assigned := partSetOf(r.topicParts())
		if !r.r.Ok() {
			return
		}
		g = s.shareGroupFor(gid)
		m := g.members[mid]
		if m == nil {
			m = newShareMember(mid)
			g.members[mid] = m
		}
		m.epoch, m.prevEpoch, m.state, m.assigned, m.hasCurrentAssigned = epoch, prev, state, assigned, true
	case keyShareGroupStatePartition:
		gid, _, ok := readKey(k, false)
		if !ok {
			return
		}
		if v == nil {
			delete(s.shareMeta, gid)
			return
		}
		m, ok := readShareStateMeta(v, s.nowMs())
		if !ok {
			return
		}
		// Initializing topics keep when they started, so a replayed
		// write does not restart the retry interval.
		if old := s.shareMeta[gid]; old != nil {
			for id, t := range m.initializing {
				if o, ok := old.initializing[id]; ok {
					t.ts = o.ts
					m.initializing[id] = t
				}
			}
		}
		s.shareMeta[gid] = m
	}
}

// ---- config ----

// shareGroupInt reads a share.* group config override (the GROUP config
// resource, KIP-848/KIP-932 GroupConfig), else def.
func (s *shard) shareGroupInt(groupID, key string, def time.Duration) time.Duration {
	if s.c.cfg.GroupConfig == nil {
		return def
	}
	if v, ok := s.c.cfg.GroupConfig(groupID).Override(key); ok {
		if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
			return time.Duration(n) * time.Millisecond
		}
	}
	return def
}

func (s *shard) shareSessionTimeout(gid string) time.Duration {
	return s.shareGroupInt(gid, "share.session.timeout.ms", s.c.cfg.ShareSessionTimeout)
}

func (s *shard) shareHeartbeatInterval(gid string) time.Duration {
	return s.shareGroupInt(gid, "share.heartbeat.interval.ms", s.c.cfg.ShareHeartbeatInterval)
}

func (s *shard) shareAssignmentInterval(gid string) time.Duration {
	d := s.c.cfg.ShareAssignmentInterval
	if d < 0 {
		d = 0
	}
	return s.shareGroupInt(gid, "share.assignment.interval.ms", d)
}

// ---- timers ----

func shareSessionKey(g, m string) string { return "sg-session-" + g + "-" + m }

func (s *shard) scheduleShareSession(gid, mid string) {
	s.schedule(shareSessionKey(gid, mid), s.shareSessionTimeout(gid), func() {
		if g := s.sgs[gid]; g != nil && g.members[mid] != nil {
			s.c.log.Info("share group member session expired", zap.String("group", gid), zap.String("member", mid))
			_ = s.fenceShareMember(g, mid)
		}
	})
}

func (s *shard) onShareGroupLoaded(g *shareGroup) {
	g.subMeta = s.shareSubscriptionMetadata(g, nil)
	for id := range g.members {
		s.scheduleShareSession(g.id, id)
	}
}

// memberLeft tells the share partitions that a member is gone, once its
// removal is committed, so they release the records it acquired.
func (s *shard) shareMemberLeft(gid, mid string) {
	if cb := s.c.cfg.OnShareMemberLeft; cb != nil {
		s.ctx.Defer(func(err error) {
			if err == nil {
				cb(gid, mid)
			}
		})
	}
}

// fenceShareMember removes a member (shareGroupFenceMember): its
// tombstones and a new group epoch; the last member leaving also moves
// the assignment epoch, so an empty group is at its target.
func (s *shard) fenceShareMember(g *shareGroup, mid string) error {
	recs := shareMemberTombstones(g.id, mid)
	epoch := g.epoch + 1
	recs = append(recs, shareGroupMetadataRecord(g.id, epoch, groupMetadataHash(s.c.cfg.Image(), shareSubscribedTopics(g, nil, mid))))
	if len(g.members) == 1 {
		recs = append(recs, shareTargetMetadataRecord(g.id, epoch, g.assignmentTs))
	}
	if err := s.apply(recs); err != nil {
		// Still a member: its session runs again, so a later expiry
		// retries the removal.
		s.scheduleShareSession(g.id, mid)
		return err
	}
	s.cancel(shareSessionKey(g.id, mid))
	g.subMeta = s.shareSubscriptionMetadata(g, nil)
	s.shareMemberLeft(g.id, mid)
	return nil
}

func shareMemberTombstones(gid, mid string) []record {
	return []record{
		{Key: memberKey(keyShareGroupCurrentMember, gid, mid)},
		{Key: memberKey(keyShareGroupTargetMember, gid, mid)},
		{Key: memberKey(keyShareGroupMemberMetadata, gid, mid)},
	}
}

// shareGroupTombstones deletes a group's records (ShareGroup.createGroupTombstoneRecords),
// the state partition metadata included.
func (s *shard) shareGroupTombstones(g *shareGroup) []record {
	var recs []record
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		recs = append(recs, shareMemberTombstones(g.id, id)...)
	}
	for _, id := range slices.Sorted(maps.Keys(g.target)) {
		if g.members[id] == nil {
			recs = append(recs, record{Key: memberKey(keyShareGroupTargetMember, g.id, id)})
		}
	}
	recs = append(recs,
		record{Key: groupKey(keyShareGroupTargetMetadata, g.id)},
		record{Key: groupKey(keyShareGroupMetadata, g.id)},
	)
	if s.shareMeta[g.id] != nil {
		recs = append(recs, record{Key: groupKey(keyShareGroupStatePartition, g.id)})
	}
	return recs
}

// ---- subscriptions and assignment ----

// shareSubscriptionMetadata is the partition count of every existing
// topic a member subscribes to, with updated replacing its member.
// shareSubscribedTopics are the topics the members subscribe to, with
// updated replacing its member and without member skip.
func shareSubscribedTopics(g *shareGroup, updated *shareMember, skip string) []string {
	var out []string
	for id, m := range g.members {
		if id == skip || updated != nil && id == updated.id {
			continue
		}
		out = append(out, m.topics...)
	}
	if updated != nil && updated.id != skip {
		out = append(out, updated.topics...)
	}
	return out
}

func (s *shard) shareSubscriptionMetadata(g *shareGroup, updated *shareMember) map[string]int32 {
	img := s.c.cfg.Image()
	out := map[string]int32{}
	add := func(m *shareMember) {
		for _, t := range m.topics {
			if ti := img.TopicByName(t); ti != nil && !isInternal(t) {
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

// initializedAssignmentPending reports whether a subscribed topic has
// initialized partitions the target assignment does not hold exactly
// (GroupMetadataManager.initializedAssignmentPending): the group epoch
// must move so the new partitions get assigned.
func (s *shard) initializedAssignmentPending(g *shareGroup) bool {
	if len(g.members) == 0 {
		return false
	}
	meta := s.shareMeta[g.id]
	if meta == nil || len(meta.initialized) == 0 {
		return false
	}
	subs := g.subscribedTopics()
	if len(subs) == 0 {
		return false
	}
	assigned := map[[16]byte]map[int32]struct{}{}
	for _, set := range g.target {
		for x := range set {
			if assigned[x.id] == nil {
				assigned[x.id] = map[int32]struct{}{}
			}
			assigned[x.id][x.p] = struct{}{}
		}
	}
	for id, t := range meta.initialized {
		if !subs[t.name] {
			continue
		}
		a := assigned[id]
		if a == nil || len(a) != len(t.parts) {
			return true
		}
		for p := range t.parts {
			if _, ok := a[p]; !ok {
				return true
			}
		}
	}
	return false
}

// shareTargetRecords computes the target assignment of epoch with updated
// in place of its member, over the initialized partitions only, and
// returns the records of what changed and the new target.
func (s *shard) shareTargetRecords(g *shareGroup, epoch int32, updated *shareMember) ([]record, map[string]partSet) {
	img := s.c.cfg.Image()
	assignable := map[[16]byte][]int32{}
	if meta := s.shareMeta[g.id]; meta != nil {
		for id, t := range meta.initialized {
			if ti := img.TopicByID(id); ti != nil {
				var ps []int32
				for _, p := range t.sorted() {
					if ti.Partition(p) != nil {
						ps = append(ps, p)
					}
				}
				assignable[id] = ps
			}
		}
	}
	var members []shareAssignMember
	add := func(m *shareMember) {
		am := shareAssignMember{id: m.id}
		for _, t := range m.topics {
			if ti := img.TopicByName(t); ti != nil && !isInternal(t) {
				am.topics = append(am.topics, ti.ID)
			}
		}
		sort.Slice(am.topics, func(i, j int) bool { return string(am.topics[i][:]) < string(am.topics[j][:]) })
		am.topics = slices.Compact(am.topics)
		members = append(members, am)
	}
	for id, m := range g.members {
		if id != updated.id {
			add(m)
		}
	}
	add(updated)
	target := assignShare(members, assignable, g.target)
	var recs []record
	for _, id := range slices.Sorted(maps.Keys(target)) {
		// A member without a target record has an empty target
		// (TargetAssignmentBuilder compares with Assignment.EMPTY).
		if old := g.target[id]; !old.equal(target[id]) {
			recs = append(recs, shareTargetMemberRecord(g.id, id, target[id]))
		}
	}
	return recs, target
}

// ---- ShareGroupHeartbeat ----

// shareHeartbeat is GroupMetadataManager.shareGroupHeartbeat. It returns
// the response and the share partitions to initialize (nil: none), which
// the caller initializes through the persister off the loop.
func (s *shard) shareHeartbeat(req *kmsg.ShareGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.ShareGroupHeartbeatResponse, *shareInit, error) {
	if req.MemberEpoch == leaveGroupEpoch {
		resp, err := s.shareLeave(req.GroupID, req.MemberID)
		return resp, nil, err
	}
	g := s.sgs[req.GroupID]
	if g == nil {
		if s.groups[req.GroupID] != nil || s.cgs[req.GroupID] != nil {
			return nil, nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a share group.", req.GroupID)
		}
		if req.MemberEpoch != 0 {
			return nil, nil, errMsg(kerr.GroupIDNotFound, "Share group %s not found.", req.GroupID)
		}
		g = newShareGroup(req.GroupID)
	}
	mid := req.MemberID
	if len(g.members) >= s.c.cfg.ShareMaxSize && g.members[mid] == nil {
		return nil, nil, errMsg(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of %d members.", s.c.cfg.ShareMaxSize)
	}
	old := g.members[mid]
	isNew := old == nil
	switch {
	case old == nil && req.MemberEpoch != 0:
		return nil, nil, errMsg(kerr.UnknownMemberID, "Member %s is not a member of group %s.", mid, g.id)
	case old == nil:
		old = newShareMember(mid)
		s.c.log.Info("member joins the share group", zap.String("group", g.id), zap.String("member", mid))
	default:
		if err := checkShareEpoch(old, req.MemberEpoch); err != nil {
			return nil, nil, err
		}
	}
	upd := old.clone()
	if req.RackID != nil {
		upd.rackID = req.RackID
	}
	if req.SubscribedTopicNames != nil {
		upd.topics = slices.Clone(req.SubscribedTopicNames)
		sort.Strings(upd.topics)
		upd.topics = slices.Compact(upd.topics)
	}
	upd.clientID, upd.clientHost = clientID, clientHost

	var recs []record
	bump := false
	if isNew || !sameShareMemberMetadata(old, upd) {
		recs = append(recs, shareMemberMetadataRecord(g.id, upd))
		if isNew || !slices.Equal(old.topics, upd.topics) {
			bump = true
		}
	}
	groupEpoch := g.epoch
	meta := s.shareSubscriptionMetadata(g, upd)
	hash := groupMetadataHash(s.c.cfg.Image(), shareSubscribedTopics(g, upd, ""))
	if !equalMeta(meta, g.subMeta) || hash != g.metadataHash {
		bump = true
	}
	// Newly initialized partitions move the epoch, unless it is already
	// ahead of the target (a target is pending anyway).
	if !bump && g.assignmentEpoch >= g.epoch && s.initializedAssignmentPending(g) {
		bump = true
	}
	if bump {
		groupEpoch++
		recs = append(recs, shareGroupMetadataRecord(g.id, groupEpoch, hash))
	}
	targetEpoch := g.assignmentEpoch
	target := g.target[upd.id]
	now := s.nowMs()
	if groupEpoch > g.assignmentEpoch && now >= g.assignmentTs+s.shareAssignmentInterval(g.id).Milliseconds() {
		trecs, all := s.shareTargetRecords(g, groupEpoch, upd)
		recs = append(recs, trecs...)
		recs = append(recs, shareTargetMetadataRecord(g.id, groupEpoch, now))
		targetEpoch, target = groupEpoch, all[upd.id]
	}
	next := upd
	if upd.epoch != targetEpoch || !upd.hasCurrentAssigned {
		// ShareGroupAssignmentBuilder: no revocation, the member moves to
		// its target at once.
		next = upd.clone()
		if next.epoch != targetEpoch {
			next.prevEpoch = next.epoch
		}
		next.epoch, next.state = targetEpoch, msStable
		next.assigned = target.clone()
		if next.assigned == nil {
			next.assigned = partSet{}
		}
	}
	if isNew || next.epoch != old.epoch || next.prevEpoch != old.prevEpoch || !next.assigned.equal(old.assigned) || !old.hasCurrentAssigned {
		recs = append(recs, shareCurrentAssignmentRecord(g.id, next))
	}
	// Partitions of subscribed topics without share state get it first
	// (maybeCreateInitializeShareGroupStateRequest), last in the batch.
	subs := map[string]bool{}
	for id, m := range g.members {
		if id != upd.id {
			for _, t := range m.topics {
				subs[t] = true
			}
		}
	}
	for _, t := range upd.topics {
		subs[t] = true
	}
	init, metaRec := s.shareInitRequest(g.id, groupEpoch, subs, now)
	if metaRec != nil {
		recs = append(recs, *metaRec)
	}
	prevAssigned := old.assigned.clone()
	if err := s.apply(recs); err != nil {
		return nil, nil, err
	}
	g = s.sgs[req.GroupID]
	g.subMeta = meta
	m := g.members[mid]
	s.scheduleShareSession(g.id, mid)

	id := m.id
	resp := &kmsg.ShareGroupHeartbeatResponse{MemberID: &id, MemberEpoch: m.epoch,
		HeartbeatIntervalMillis: int32(s.shareHeartbeatInterval(g.id) / time.Millisecond)}
	if req.MemberEpoch == 0 || !prevAssigned.equal(m.assigned) {
		a := kmsg.NewShareGroupHeartbeatResponseAssignment()
		for _, t := range m.assigned.topicParts() {
			at := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
			at.TopicID, at.Partitions = t.id, t.parts
			a.TopicPartitions = append(a.TopicPartitions, at)
		}
		resp.Assignment = &a
	}
	return resp, init, nil
}

// checkShareEpoch is throwIfShareGroupMemberEpochIsInvalid: a member may
// come back with its previous epoch (the answer that bumped it was lost).
func checkShareEpoch(m *shareMember, epoch int32) error {
	switch {
	case epoch > m.epoch:
		return errMsg(kerr.FencedMemberEpoch, "The share group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	case epoch < m.epoch && epoch != m.prevEpoch:
		return errMsg(kerr.FencedMemberEpoch, "The share group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	}
	return nil
}

func sameShareMemberMetadata(a, b *shareMember) bool {
	return eqp(a.rackID, b.rackID) && a.clientID == b.clientID && a.clientHost == b.clientHost && slices.Equal(a.topics, b.topics)
}

// shareLeave is shareGroupLeave (member epoch -1).
func (s *shard) shareLeave(gid, mid string) (*kmsg.ShareGroupHeartbeatResponse, error) {
	g := s.sgs[gid]
	if g == nil {
		if s.groups[gid] != nil || s.cgs[gid] != nil {
			return nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a share group.", gid)
		}
		return nil, errMsg(kerr.GroupIDNotFound, "Share group %s not found.", gid)
	}
	if g.members[mid] == nil {
		return nil, errMsg(kerr.UnknownMemberID, "Member %s is not a member of group %s.", mid, gid)
	}
	s.c.log.Info("member left the share group", zap.String("group", gid), zap.String("member", mid))
	if err := s.fenceShareMember(g, mid); err != nil {
		return nil, err
	}
	return &kmsg.ShareGroupHeartbeatResponse{MemberID: &mid, MemberEpoch: leaveGroupEpoch}, nil
}

// ---- ShareGroupDescribe ----

func (s *shard) describeShareGroup(id string, rg *kmsg.ShareGroupDescribeResponseGroup) {
	g := s.sgs[id]
	if g == nil {
		msg := fmt.Sprintf("Group %s not found.", id)
		if s.groups[id] != nil || s.cgs[id] != nil {
			msg = fmt.Sprintf("Group %s is not a share group.", id)
		}
		rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		return
	}
	img := s.c.cfg.Image()
	rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor = g.stateString(), g.epoch, g.assignmentEpoch, "simple"
	for _, mid := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[mid]
		rm := kmsg.NewShareGroupDescribeResponseGroupMember()
		rm.MemberID, rm.RackID, rm.MemberEpoch, rm.ClientID, rm.ClientHost = m.id, m.rackID, m.epoch, m.clientID, m.clientHost
		rm.SubscribedTopicNames = slices.Clone(m.topics)
		if rm.SubscribedTopicNames == nil {
			rm.SubscribedTopicNames = []string{}
		}
		for _, t := range m.assigned.topicParts() {
			at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			at.TopicID, at.Partitions = t.id, t.parts
			if ti := img.TopicByID(t.id); ti != nil {
				at.Topic = ti.Name
			}
			rm.Assignment.TopicPartitions = append(rm.Assignment.TopicPartitions, at)
		}
		rg.Members = append(rg.Members, rm)
	}
}
