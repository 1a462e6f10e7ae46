package group

// Streams groups (KIP-1071; Kafka 4.4's streams/StreamsGroup,
// StreamsGroupMember, StreamsTopology and the streams parts of
// GroupMetadataManager). A Kafka Streams application's members send their
// topology; the coordinator checks its topics against the metadata
// (streams_topology.go, InternalTopicManager), asks the broker to create
// the missing internal topics, assigns tasks (active and standby, the
// sticky task assignor of streams_assignor.go) and moves each member to
// its target with revocation (CurrentAssignmentBuilder): a task leaves
// one member before another gets it.
//
// The group's state changes only by replaying records (replayStreams),
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

// Streams member states (streams/MemberState).
const (
	smStable           int8 = 0
	smUnrevokedTasks   int8 = 1
	smUnreleasedTasks  int8 = 2
	smUnknown          int8 = 127
	streamsStatusStale int8 = 0
)

// Heartbeat status codes (StreamsGroupHeartbeatResponse.Status).
const (
	stStaleTopology              int8 = 0
	stMissingSourceTopics        int8 = 1
	stIncorrectlyPartitioned     int8 = 2
	stMissingInternalTopics      int8 = 3
	stShutdownApplication        int8 = 4
	stAssignmentDelayed          int8 = 5
	stMissingClientTags          int8 = 6
	streamsLeaveGroupEpoch            = -1
	streamsLeaveGroupStaticEpoch      = -2
)

type endpoint struct {
	host string
	port uint16
}

// streamsMember is a member (StreamsGroupMember).
type streamsMember struct {
	id                 string
	instanceID, rackID *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	topologyEpoch      int32
	processID          string
	endpoint           *endpoint
	clientTags         [][2]string

	epoch, prevEpoch int32
	state            int8
	assigned         tasksTuple
	revoking         tasksTuple
	// activeEpochs is the member epoch each active task was assigned at
	// (TasksTupleWithEpochs; tag 0 of the current assignment record).
	activeEpochs map[string]map[int32]int32
}

func newStreamsMember(id string) *streamsMember {
	return &streamsMember{id: id, rebalanceTimeoutMs: -1, assigned: newTasksTuple(), revoking: newTasksTuple(),
		activeEpochs: map[string]map[int32]int32{}}
}

func (m *streamsMember) clone() *streamsMember {
	c := *m
	c.clientTags = slices.Clone(m.clientTags)
	c.assigned, c.revoking = m.assigned.clone(), m.revoking.clone()
	c.activeEpochs = map[string]map[int32]int32{}
	for s, ps := range m.activeEpochs {
		c.activeEpochs[s] = maps.Clone(ps)
	}
	if m.endpoint != nil {
		e := *m.endpoint
		c.endpoint = &e
	}
	return &c
}

// sameMetadata compares what the member metadata record holds.
func (m *streamsMember) sameMetadata(o *streamsMember) bool {
	return eqp(m.instanceID, o.instanceID) && eqp(m.rackID, o.rackID) && m.clientID == o.clientID &&
		m.clientHost == o.clientHost && m.rebalanceTimeoutMs == o.rebalanceTimeoutMs &&
		m.topologyEpoch == o.topologyEpoch && m.processID == o.processID &&
		((m.endpoint == nil) == (o.endpoint == nil) && (m.endpoint == nil || *m.endpoint == *o.endpoint)) &&
		slices.Equal(m.clientTags, o.clientTags)
}

// streamsGroup is a streams group (StreamsGroup). States: Empty,
// NotReady (topology not configured), Assigning, Reconciling, Stable;
// Dead once deleted.
type streamsGroup struct {
	id                     string
	epoch                  int32
	metadataHash           int64 // the required topics' hash (KIP-1101) of the last group epoch
	validatedTopologyEpoch int32
	lastAssignmentConfigs  map[string]string
	storedDescEpoch        int32
	failedDescEpoch        int32
	assignmentEpoch        int32
	assignmentTs           int64
	topology               *streamsTopology
	members                map[string]*streamsMember
	static                 map[string]string // instance id -> member id
	target                 map[string]tasksTuple

	// In memory only (recomputed at load): the configured topology, the
	// topics hash it was configured for, the endpoint information epoch,
	// and the initial rebalance deadline (ms, 0 none).
	configured        *configuredTopology
	topicsHash        uint64
	endpointInfoEpoch int32
	initialDeadline   int64
	shutdownMember    string
}

func newStreamsGroup(id string) *streamsGroup {
	return &streamsGroup{id: id, validatedTopologyEpoch: -1, storedDescEpoch: -1, failedDescEpoch: -1,
		members: map[string]*streamsMember{}, static: map[string]string{}, target: map[string]tasksTuple{}}
}

// stateString is StreamsGroup.state's name.
func (g *streamsGroup) stateString() string {
	switch {
	case len(g.members) == 0:
		return "Empty"
	case g.topology == nil || g.configured == nil || !g.configured.ready():
		return "NotReady"
	case g.assignmentEpoch != g.epoch:
		return "Assigning"
	}
	for _, m := range g.members {
		if m.state != smStable || m.epoch != g.assignmentEpoch {
			return "Reconciling"
		}
	}
	return "Stable"
}

// ---- replay ----

func (s *shard) streamsGroupFor(id string) *streamsGroup {
	g := s.stgs[id]
	if g == nil {
		g = newStreamsGroup(id)
		s.stgs[id] = g
		delete(s.groups, id)
		delete(s.cgs, id)
		delete(s.sgs, id)
	}
	return g
}

func (s *shard) streamsMemberFor(g *streamsGroup, mid string) *streamsMember {
	m := g.members[mid]
	if m == nil {
		m = newStreamsMember(mid)
		g.members[mid] = m
	}
	return m
}

func (s *shard) replayStreams(ver int16, k, v []byte) {
	withMember := ver == keyStreamsGroupMemberMetadata || ver == keyStreamsGroupTargetMember || ver == keyStreamsGroupCurrentMember
	gid, mid, ok := readKey(k, withMember)
	if !ok {
		return
	}
	switch ver {
	case keyStreamsGroupMetadata:
		if v == nil {
			delete(s.stgs, gid)
			return
		}
		r := newReader(v)
		epoch, hash := r.i32(), r.i64()
		tags := r.taggedFields()
		if !r.r.Ok() {
			return
		}
		g := s.streamsGroupFor(gid)
		g.epoch, g.metadataHash = epoch, hash
		g.validatedTopologyEpoch, g.lastAssignmentConfigs, g.storedDescEpoch, g.failedDescEpoch = -1, nil, -1, -1
		i32tag := func(b []byte) int32 {
			tr := &fr{}
			tr.r.Src = b
			return tr.i32()
		}
		if b, ok := tags[0]; ok {
			g.validatedTopologyEpoch = i32tag(b)
		}
		if b, ok := tags[1]; ok {
			tr := &fr{}
			tr.r.Src = b
			g.lastAssignmentConfigs = map[string]string{}
			n := tr.arr()
			for i := int32(0); i < n && tr.r.Ok(); i++ {
				key, val := tr.str(), tr.str()
				tr.skipTags()
				g.lastAssignmentConfigs[key] = val
			}
		}
		if b, ok := tags[2]; ok {
			g.storedDescEpoch = i32tag(b)
		}
		if b, ok := tags[3]; ok {
			g.failedDescEpoch = i32tag(b)
		}
	case keyStreamsGroupTopology:
		if v == nil {
			if g := s.stgs[gid]; g != nil {
				g.topology, g.configured = nil, nil
			}
			return
		}
		t, ok := readStreamsTopology(v)
		if !ok {
			return
		}
		g := s.streamsGroupFor(gid)
		g.topology, g.configured = t, nil
	case keyStreamsGroupMemberMetadata:
		if v == nil {
			if g := s.stgs[gid]; g != nil {
				if m := g.members[mid]; m != nil && m.instanceID != nil && g.static[*m.instanceID] == mid {
					delete(g.static, *m.instanceID)
				}
				delete(g.members, mid)
			}
			return
		}
		r := newReader(v)
		m := streamsMember{instanceID: r.nstr(), rackID: r.nstr(), clientID: r.str(), clientHost: r.str(),
			rebalanceTimeoutMs: r.i32(), topologyEpoch: r.i32(), processID: r.str()}
		if r.i8() >= 0 {
			m.endpoint = &endpoint{host: r.str(), port: r.r.Uint16()}
			r.skipTags()
		}
		n := r.arr()
		for i := int32(0); i < n && r.r.Ok(); i++ {
			m.clientTags = append(m.clientTags, [2]string{r.str(), r.str()})
			r.skipTags()
		}
		if !r.r.Ok() {
			return
		}
		g := s.streamsGroupFor(gid)
		cur := s.streamsMemberFor(g, mid)
		cur.instanceID, cur.rackID, cur.clientID, cur.clientHost = m.instanceID, m.rackID, m.clientID, m.clientHost
		cur.rebalanceTimeoutMs, cur.topologyEpoch, cur.processID = m.rebalanceTimeoutMs, m.topologyEpoch, m.processID
		cur.endpoint, cur.clientTags = m.endpoint, m.clientTags
		if m.instanceID != nil {
			g.static[*m.instanceID] = mid
		}
	case keyStreamsGroupTargetMetadata:
		if v == nil {
			return
		}
		epoch, ts, ok := readShareTargetMetadata(v) // same layout: epoch, tag 0 int64
		if !ok {
			return
		}
		g := s.streamsGroupFor(gid)
		g.assignmentEpoch, g.assignmentTs = epoch, ts
	case keyStreamsGroupTargetMember:
		if v == nil {
			if g := s.stgs[gid]; g != nil {
				delete(g.target, mid)
			}
			return
		}
		r := newReader(v)
		t := tasksTuple{r.taskIDs(nil), r.taskIDs(nil), r.taskIDs(nil)}
		if !r.r.Ok() {
			return
		}
		s.streamsGroupFor(gid).target[mid] = t
	case keyStreamsGroupCurrentMember:
		g := s.stgs[gid]
		if v == nil {
			if g != nil {
				if m := g.members[mid]; m != nil {
					m.epoch, m.prevEpoch, m.state = 0, 0, smStable
					m.assigned, m.revoking, m.activeEpochs = newTasksTuple(), newTasksTuple(), map[string]map[int32]int32{}
				}
			}
			return
		}
		r := newReader(v)
		epoch, prev, state := r.i32(), r.i32(), r.i8()
		epochs := map[string]map[int32]int32{}
		assigned := tasksTuple{r.taskIDs(epochs), r.taskIDs(nil), r.taskIDs(nil)}
		revoking := tasksTuple{r.taskIDs(nil), r.taskIDs(nil), r.taskIDs(nil)}
		if !r.r.Ok() {
			return
		}
		g = s.streamsGroupFor(gid)
		m := s.streamsMemberFor(g, mid)
		m.epoch, m.prevEpoch, m.state, m.assigned, m.revoking = epoch, prev, state, assigned, revoking
		// Records written before assignment epochs existed: the member
		// epoch stands in.
		for sub, ps := range assigned.active {
			for p := range ps {
				if _, ok := epochs[sub][p]; !ok {
					if epochs[sub] == nil {
						epochs[sub] = map[int32]int32{}
					}
					epochs[sub][p] = epoch
				}
			}
		}
		m.activeEpochs = epochs
	}
}

// ---- config ----

// streamsInt is a streams.* group config: the group's override, else the
// broker's group.streams.* value (GroupConfig resolves both), else def.
func (s *shard) streamsInt(gid, key string, def int64) int64 {
	if s.c.cfg.GroupConfig == nil {
		return def
	}
	if v, ok := s.c.cfg.GroupConfig(gid).Value(key); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

func (s *shard) streamsSessionTimeout(gid string) time.Duration {
	return time.Duration(s.streamsInt(gid, "streams.session.timeout.ms", 45000)) * time.Millisecond
}

func (s *shard) streamsHeartbeatInterval(gid string) int32 {
	return int32(s.streamsInt(gid, "streams.heartbeat.interval.ms", 5000))
}

func (s *shard) streamsAssignmentInterval(gid string) int64 {
	return s.streamsInt(gid, "streams.assignment.interval.ms", 1000)
}

func (s *shard) streamsNumStandby(gid string) int {
	return int(s.streamsInt(gid, "streams.num.standby.replicas", 0))
}

// streamsAssignmentConfigs is streamsGroupAssignmentConfigs (a TreeMap).
func (s *shard) streamsAssignmentConfigs(gid string) map[string]string {
	out := map[string]string{"num.standby.replicas": strconv.Itoa(s.streamsNumStandby(gid))}
	if s.c.cfg.GroupConfig != nil {
		if v, ok := s.c.cfg.GroupConfig(gid).Value("streams.rack.aware.assignment.tags"); ok && v != "" {
			out["rack.aware.assignment.tags"] = v
		}
	}
	return out
}

// ---- timers ----

func streamsSessionKey(g, m string) string   { return "stg-session-" + g + "-" + m }
func streamsRebalanceKey(g, m string) string { return "stg-rebalance-" + g + "-" + m }
func streamsInitialKey(g string) string      { return "stg-initial-rebalance-" + g }

func (s *shard) scheduleStreamsSession(gid, mid string) {
	s.schedule(streamsSessionKey(gid, mid), s.streamsSessionTimeout(gid), func() {
		if g := s.stgs[gid]; g != nil && g.members[mid] != nil {
			s.c.log.Info("streams group member fenced: session expired", zap.String("group", gid), zap.String("member", mid))
			_ = s.fenceStreamsMember(g, mid)
		}
	})
}

// scheduleStreamsRebalance is scheduleStreamsGroupRebalanceTimeout: a
// member that does not revoke its tasks within its rebalance timeout is
// fenced.
func (s *shard) scheduleStreamsRebalance(g *streamsGroup, m *streamsMember) {
	gid, mid, epoch := g.id, m.id, m.epoch
	d := time.Duration(m.rebalanceTimeoutMs) * time.Millisecond
	if d <= 0 {
		d = 5 * time.Minute
	}
	s.schedule(streamsRebalanceKey(gid, mid), d, func() {
		g := s.stgs[gid]
		if g == nil {
			return
		}
		if m := g.members[mid]; m != nil && m.state == smUnrevokedTasks && m.epoch == epoch {
			s.c.log.Info("streams group member fenced: did not revoke its tasks in time", zap.String("group", gid), zap.String("member", mid))
			_ = s.fenceStreamsMember(g, mid)
		}
	})
}

func (s *shard) onStreamsGroupLoaded(g *streamsGroup) {
	for id := range g.members {
		s.scheduleStreamsSession(g.id, id)
	}
}

// fenceStreamsMember is streamsGroupFenceMember: the member's tombstones
// and a new group epoch (its tasks go to the others).
func (s *shard) fenceStreamsMember(g *streamsGroup, mid string) error {
	recs := streamsMemberTombstones(g.id, mid)
	g2 := *g
	g2.epoch = g.epoch + 1
	recs = append(recs, streamsGroupMetadataRecord(&g2))
	if err := s.apply(recs); err != nil {
		s.scheduleStreamsSession(g.id, mid)
		return err
	}
	s.cancel(streamsSessionKey(g.id, mid))
	s.cancel(streamsRebalanceKey(g.id, mid))
	return nil
}

func streamsMemberTombstones(gid, mid string) []record {
	return []record{
		{Key: memberKey(keyStreamsGroupCurrentMember, gid, mid)},
		{Key: memberKey(keyStreamsGroupTargetMember, gid, mid)},
		{Key: memberKey(keyStreamsGroupMemberMetadata, gid, mid)},
	}
}

// streamsGroupTombstones is StreamsGroup.createGroupTombstoneRecords.
func streamsGroupTombstones(g *streamsGroup) []record {
	var recs []record
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		recs = append(recs, record{Key: memberKey(keyStreamsGroupCurrentMember, g.id, id)})
	}
	for _, id := range slices.Sorted(maps.Keys(g.target)) {
		recs = append(recs, record{Key: memberKey(keyStreamsGroupTargetMember, g.id, id)})
	}
	recs = append(recs, record{Key: groupKey(keyStreamsGroupTargetMetadata, g.id)})
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		recs = append(recs, record{Key: memberKey(keyStreamsGroupMemberMetadata, g.id, id)})
	}
	recs = append(recs,
		record{Key: groupKey(keyStreamsGroupTopology, g.id)},
		record{Key: groupKey(keyStreamsGroupMetadata, g.id)},
	)
	return recs
}

// ---- StreamsGroupHeartbeat ----

// streamsResult is what a heartbeat hands back besides the response: the
// internal topics the broker must create (StreamsGroupHeartbeatResult's
// creatableTopics).
type streamsResult struct {
	resp   *kmsg.StreamsGroupHeartbeatResponse
	create []topicInfo
}

// streamsHeartbeat is GroupMetadataManager.streamsGroupHeartbeat.
func (s *shard) streamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) (*streamsResult, error) {
	if req.MemberEpoch == streamsLeaveGroupEpoch || req.MemberEpoch == streamsLeaveGroupStaticEpoch {
		return s.streamsLeave(req)
	}
	gid, mid := req.Group, req.MemberID
	now := s.nowMs()
	g := s.stgs[gid]
	if g == nil {
		if cl := s.groups[gid]; cl != nil && req.MemberEpoch == 0 && len(cl.members) == 0 {
			// An empty classic group becomes a streams group
			// (getOrCreateStreamsGroup).
			s.c.log.Info("converted the empty classic group to a streams group", zap.String("group", gid))
		} else if s.groups[gid] != nil || s.cgs[gid] != nil || s.sgs[gid] != nil {
			return nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a streams group.", gid)
		} else if req.MemberEpoch != 0 {
			return nil, errMsg(kerr.GroupIDNotFound, "Streams group %s not found.", gid)
		}
		g = newStreamsGroup(gid)
	}
	maxSize := s.c.cfg.StreamsMaxSize
	if g.members[mid] == nil && len(g.members) >= maxSize {
		return nil, errMsg(kerr.GroupMaxSizeReached, "The streams group has reached its maximum capacity of %d members.", maxSize)
	}

	var recs []record
	old := g.members[mid]
	isNew := false
	var replaced *streamsMember // a static member's previous incarnation
	switch {
	case req.InstanceID != nil && req.MemberEpoch == 0:
		// getOrMaybeCreateStaticStreamsGroupMember: a static member
		// rejoining takes over its previous incarnation (released with
		// epoch -2) under its new member id, with its assignment.
		if sid, ok := g.static[*req.InstanceID]; ok && g.members[sid] != nil {
			prev := g.members[sid]
			if prev.epoch != streamsLeaveGroupStaticEpoch {
				return nil, errMsg(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.", mid, *req.InstanceID, sid)
			}
			replaced = prev
			old = prev.clone()
			old.id, old.epoch, old.prevEpoch = mid, 0, 0
			recs = append(recs, streamsMemberTombstones(gid, prev.id)...)
			if t, ok := g.target[prev.id]; ok {
				recs = append(recs, streamsTargetMemberRecord(gid, mid, t))
			}
			s.c.log.Info("static member re-joins the streams group", zap.String("group", gid), zap.String("member", mid), zap.String("replaced", prev.id))
		} else {
			if old == nil {
				isNew = true
				old = newStreamsMember(mid)
			}
			s.c.log.Info("static member joins the streams group", zap.String("group", gid), zap.String("member", mid), zap.String("instance", *req.InstanceID))
		}
	case req.InstanceID != nil:
		sid, ok := g.static[*req.InstanceID]
		if !ok || g.members[sid] == nil {
			return nil, errMsg(kerr.UnknownMemberID, "Member with instance id %s is not a member of group %s.", *req.InstanceID, gid)
		}
		if sid != mid {
			return nil, errMsg(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", mid, *req.InstanceID, sid)
		}
		if err := checkStreamsEpoch(old, req); err != nil {
			return nil, err
		}
	case old == nil && req.MemberEpoch != 0:
		return nil, errMsg(kerr.UnknownMemberID, "Member %s is not a member of group %s.", mid, gid)
	case old == nil:
		isNew = true
		old = newStreamsMember(mid)
		s.c.log.Info("member joins the streams group", zap.String("group", gid), zap.String("member", mid))
	case req.MemberEpoch != 0:
		// getOrMaybeCreateDynamicStreamsGroupMember: epoch 0 takes the
		// member as it is; other epochs are checked.
		if err := checkStreamsEpoch(old, req); err != nil {
			return nil, err
		}
	}

	upd := old.clone()
	if req.InstanceID != nil {
		upd.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		upd.rackID = req.RackID
	}
	if req.RebalanceTimeoutMillis != -1 {
		upd.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.Topology != nil {
		upd.topologyEpoch = req.Topology.Epoch
	}
	upd.clientID, upd.clientHost = clientID, clientHost
	if req.ProcessID != nil {
		upd.processID = *req.ProcessID
	}
	if req.ClientTags != nil {
		upd.clientTags = nil
		for _, kv := range req.ClientTags {
			upd.clientTags = append(upd.clientTags, [2]string{kv.Key, kv.Value})
		}
	}
	if req.UserEndpoint != nil {
		upd.endpoint = &endpoint{host: req.UserEndpoint.Host, port: req.UserEndpoint.Port}
	}

	bump := false
	if isNew || replaced != nil || !upd.sameMetadata(old) {
		recs = append(recs, streamsMemberMetadataRecord(gid, upd))
		// hasEpochRelevantMemberConfigChanged: a new member, or one whose
		// process, rack, tags or topology epoch moved, needs a new target.
		if isNew || !eqp(old.rackID, upd.rackID) || old.processID != upd.processID ||
			!slices.Equal(old.clientTags, upd.clientTags) || old.topologyEpoch != upd.topologyEpoch {
			bump = true
		}
	}

	// maybeUpdateTopology.
	topology := g.topology
	if req.Topology != nil {
		t := topologyFromRequest(req.Topology)
		switch {
		case g.topology == nil:
			s.c.log.Info("member initialized the streams topology", zap.String("group", gid), zap.String("member", mid), zap.Int32("epoch", t.epoch))
			recs = append(recs, streamsTopologyRecord(gid, t))
			topology = t
			bump = true
		case g.topology.epoch > t.epoch:
			s.c.log.Info("member joined with stale topology epoch", zap.String("group", gid), zap.String("member", mid), zap.Int32("epoch", t.epoch))
		case !g.topology.equal(t):
			return nil, errMsg(kerr.InvalidRequest, "Topology updates are not supported yet.")
		}
	}
	if topology == nil {
		return nil, errMsg(kerr.InvalidRequest, "The topology is null and the group topology is also null.")
	}

	// Configure the topology when it or the topics changed.
	img := s.c.cfg.Image()
	hash := topicsHash(img, topology)
	// KIP-1101: the required topics' metadata hash (StreamsGroup.computeMetadataHash)
	metadataHash := groupMetadataHash(img, topology.allTopics())
	if metadataHash != g.metadataHash {
		bump = true
	}
	configured := g.configured
	if configured == nil || topology != g.topology || hash != g.topicsHash {
		if g.configured != nil && hash != g.topicsHash {
			bump = true
		}
		configured = configureTopics(img, topology)
		if g.configured == nil && g.topology != nil && configured.ready() && g.validatedTopologyEpoch != topology.epoch {
			bump = true
		}
	}
	if configured.ready() {
		if err := checkOwnedTasks(configured, req); err != nil {
			return nil, err
		}
	}
	assignCfg := s.streamsAssignmentConfigs(gid)
	if g.lastAssignmentConfigs != nil && !maps.Equal(assignCfg, g.lastAssignmentConfigs) {
		bump = true
	}

	groupEpoch := g.epoch
	newG := *g
	if bump {
		groupEpoch++
		newG.epoch = groupEpoch
		newG.metadataHash = metadataHash
		newG.validatedTopologyEpoch = -1
		if configured.ready() {
			newG.validatedTopologyEpoch = topology.epoch
		}
		newG.lastAssignmentConfigs = assignCfg
		recs = append(recs, streamsGroupMetadataRecord(&newG))
		s.c.log.Info("bumped streams group epoch", zap.String("group", gid), zap.String("member", mid), zap.Int32("epoch", groupEpoch))
	}
	// The first member of an empty group starts the initial rebalance
	// delay (streams.initial.rebalance.delay.ms): until it ends the
	// members get epoch max(1, assignment epoch) and no task, with
	// ASSIGNMENT_DELAYED, and the timer computes the first target.
	initialDeadline := g.initialDeadline
	if initialDeadline != 0 && now >= initialDeadline {
		initialDeadline = 0
	}
	startDelay := false
	if bump && len(g.members) == 0 && initialDeadline == 0 {
		if d := s.streamsInt(gid, "streams.initial.rebalance.delay.ms", 3000); d > 0 {
			initialDeadline, startDelay = now+d, true
		}
	}

	// Target assignment.
	targetEpoch := g.assignmentEpoch
	target := g.target[mid]
	if replaced != nil {
		target = g.target[replaced.id]
	}
	delayed := false
	if groupEpoch > g.assignmentEpoch {
		switch {
		case initialDeadline != 0:
			delayed = true
			targetEpoch, target = max(1, g.assignmentEpoch), newTasksTuple()
		case now < g.assignmentTs+s.streamsAssignmentInterval(gid):
			// canComputeNextTargetAssignment: the members keep the
			// current target until the interval passed.
		default:
			// A topology that is not ready (internal topics missing, a
			// bad configuration) assigns no task, at the new epoch
			// (maybeUpdateStreamsTargetAssignment has no readiness check).
			forAssign := configured
			if !configured.ready() {
				forAssign = &configuredTopology{numTasks: map[string]int32{}, stateful: map[string]bool{}}
			}
			trecs, all := s.streamsTargetRecords(g, forAssign, upd, replaced)
			recs = append(recs, trecs...)
			recs = append(recs, streamsTargetMetadataRecord(gid, groupEpoch, now))
			targetEpoch, target = groupEpoch, all[mid]
		}
	}
	if target.active == nil {
		target = newTasksTuple()
	}

	// Reconcile (CurrentAssignmentBuilder).
	next := s.reconcileStreams(g, upd, targetEpoch, target, req)
	if isNew || replaced != nil || next.epoch != old.epoch || next.prevEpoch != old.prevEpoch || next.state != old.state ||
		!next.assigned.equal(old.assigned) || !next.revoking.equal(old.revoking) {
		recs = append(recs, streamsCurrentAssignmentRecord(gid, next))
	}

	prevAssigned := old.assigned
	prevEndpoint := old.endpoint
	if len(recs) > 0 {
		if err := s.apply(recs); err != nil {
			return nil, err
		}
	}
	g = s.streamsGroupFor(gid)
	if replaced != nil {
		s.cancel(streamsSessionKey(gid, replaced.id))
		s.cancel(streamsRebalanceKey(gid, replaced.id))
	}
	g.configured, g.topicsHash, g.initialDeadline = configured, hash, initialDeadline
	if startDelay {
		s.scheduleStreamsInitial(gid, initialDeadline-now)
	}
	m := g.members[mid]
	s.scheduleStreamsSession(gid, mid)
	if m.state == smUnrevokedTasks {
		s.scheduleStreamsRebalance(g, m)
	} else {
		s.cancel(streamsRebalanceKey(gid, mid))
	}
	if req.ShutdownApplication {
		g.shutdownMember = mid
	}

	resp := &kmsg.StreamsGroupHeartbeatResponse{Version: req.Version, MemberID: mid, MemberEpoch: m.epoch,
		HeartbeatIntervalMillis:  s.streamsHeartbeatInterval(gid),
		TaskOffsetIntervalMillis: int32(s.streamsInt(gid, "streams.task.offset.interval.ms", 60000)),
		AcceptableRecoveryLag:    s.streamsInt(gid, "streams.acceptable.recovery.lag", 10000),
		Status:                   []kmsg.StreamsGroupHeartbeatResponseStatus{}}
	resp.AcceptableRecoveryLagLegacy = int32(min(resp.AcceptableRecoveryLag, 1<<31-1))
	if req.MemberEpoch == 0 || !prevAssigned.equal(m.assigned) {
		resp.ActiveTasks = taskIDsOf(m.assigned.active)
		resp.StandbyTasks = taskIDsOf(m.assigned.standby)
		resp.WarmupTasks = taskIDsOf(m.assigned.warmup)
	}
	// Endpoint information (IQ): sent when it changed since the member's
	// epoch of it.
	if !prevAssigned.equal(m.assigned) || ((prevEndpoint == nil) != (m.endpoint == nil)) {
		g.endpointInfoEpoch++
	}
	if req.EndpointInformationEpoch != g.endpointInfoEpoch && s.anyEndpoint(g) {
		resp.PartitionsByUserEndpoint = s.endpointToPartitions(g)
	}
	resp.EndpointInformationEpoch = g.endpointInfoEpoch

	var create []topicInfo
	if m.topologyEpoch != topology.epoch {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: stStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, topology.epoch)})
	}
	if configured.err != nil {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: configured.err.status, StatusDetail: configured.err.msg})
	}
	if len(configured.toCreate) > 0 {
		names := make([]string, 0, len(configured.toCreate))
		for _, t := range configured.toCreate {
			names = append(names, t.name)
			create = append(create, t)
		}
		sort.Strings(names)
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: stMissingInternalTopics,
			StatusDetail: "Internal topics are missing: " + summarizeTopics(names)})
	}
	if delayed {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: stAssignmentDelayed,
			StatusDetail: "Assignment delayed due to the configured initial rebalance delay."})
	}
	if g.shutdownMember != "" {
		resp.Status = append(resp.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: stShutdownApplication,
			StatusDetail: fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", g.shutdownMember)})
	}
	return &streamsResult{resp: resp, create: create}, nil
}

// scheduleStreamsInitial computes the delayed first target assignment
// when the initial rebalance delay ends (streamsInitialRebalanceKey).
func (s *shard) scheduleStreamsInitial(gid string, delayMs int64) {
	s.schedule(streamsInitialKey(gid), time.Duration(delayMs)*time.Millisecond, func() {
		g := s.stgs[gid]
		if g == nil {
			return
		}
		g.initialDeadline = 0
		if len(g.members) == 0 {
			s.c.log.Info("skipping delayed target assignment: group is empty", zap.String("group", gid))
			return
		}
		if g.epoch <= g.assignmentEpoch {
			return
		}
		if g.configured == nil || !g.configured.ready() {
			s.c.log.Info("cannot compute delayed target assignment: configured topology is not present", zap.String("group", gid))
			return
		}
		now := s.nowMs()
		ids := slices.Sorted(maps.Keys(g.members))
		trecs, _ := s.streamsTargetRecords(g, g.configured, g.members[ids[0]], nil)
		trecs = append(trecs, streamsTargetMetadataRecord(gid, g.epoch, now))
		_ = s.apply(trecs)
	})
}

func taskIDsOf(t tasks) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, sub := range t.subs() {
		out = append(out, kmsg.TaskIDs{SubtopologyID: sub, Partitions: t.parts(sub)})
	}
	return out
}

func tasksOf(l []kmsg.TaskIDs) tasks {
	t := tasks{}
	for _, x := range l {
		for _, p := range x.Partitions {
			t.add(x.SubtopologyID, p)
		}
	}
	return t
}

// checkStreamsEpoch is throwIfStreamsGroupMemberEpochIsInvalid: a member
// may come back with its previous epoch if it owns no task it lost.
func checkStreamsEpoch(m *streamsMember, req *kmsg.StreamsGroupHeartbeatRequest) error {
	e := req.MemberEpoch
	switch {
	case e > m.epoch:
		return errMsg(kerr.FencedMemberEpoch, "The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", e, m.epoch)
	case e < m.epoch:
		ok := e == m.prevEpoch
		if ok && req.ActiveTasks != nil {
			owned := tasksOf(req.ActiveTasks)
			ok = owned.minus(m.assigned.active).size() == 0
		}
		if !ok {
			return errMsg(kerr.FencedMemberEpoch, "The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", e, m.epoch)
		}
	}
	return nil
}

// checkOwnedTasks is throwIfRequestContainsInvalidTasks.
func checkOwnedTasks(c *configuredTopology, req *kmsg.StreamsGroupHeartbeatRequest) error {
	for _, l := range [][]kmsg.TaskIDs{req.ActiveTasks, req.StandbyTasks, req.WarmupTasks} {
		for _, t := range l {
			n, ok := c.numTasks[t.SubtopologyID]
			for _, p := range t.Partitions {
				if !ok || p < 0 || p >= n {
					return errMsg(kerr.StreamsInvalidTopology, "Task %d for subtopology %s is invalid. Number of tasks for this subtopology: %d", p, t.SubtopologyID, n)
				}
			}
		}
	}
	return nil
}

// streamsLeave is streamsGroupLeave: -1 leaves, -2 is a static member
// leaving temporarily (it keeps its assignment for its return).
func (s *shard) streamsLeave(req *kmsg.StreamsGroupHeartbeatRequest) (*streamsResult, error) {
	gid, mid := req.Group, req.MemberID
	g := s.stgs[gid]
	if g == nil {
		if s.groups[gid] != nil || s.cgs[gid] != nil || s.sgs[gid] != nil {
			return nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a streams group.", gid)
		}
		return nil, errMsg(kerr.GroupIDNotFound, "Streams group %s not found.", gid)
	}
	resp := &kmsg.StreamsGroupHeartbeatResponse{Version: req.Version, MemberID: mid, MemberEpoch: req.MemberEpoch,
		Status: []kmsg.StreamsGroupHeartbeatResponseStatus{}}
	if req.InstanceID != nil {
		sid, ok := g.static[*req.InstanceID]
		if !ok {
			return nil, errMsg(kerr.UnknownMemberID, "Member with instance id %s is not a member of group %s.", *req.InstanceID, gid)
		}
		if sid != mid {
			return nil, errMsg(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", mid, *req.InstanceID, sid)
		}
		if req.MemberEpoch == streamsLeaveGroupStaticEpoch {
			m := g.members[mid].clone()
			m.epoch = streamsLeaveGroupStaticEpoch
			s.c.log.Info("static member temporarily left the streams group", zap.String("group", gid), zap.String("member", mid))
			if err := s.apply([]record{streamsCurrentAssignmentRecord(gid, m)}); err != nil {
				return nil, err
			}
			return &streamsResult{resp: resp}, nil
		}
	}
	if g.members[mid] == nil {
		return nil, errMsg(kerr.UnknownMemberID, "Member %s is not a member of group %s.", mid, gid)
	}
	s.c.log.Info("member left the streams group", zap.String("group", gid), zap.String("member", mid))
	if err := s.fenceStreamsMember(g, mid); err != nil {
		return nil, err
	}
	return &streamsResult{resp: resp}, nil
}

// ---- endpoints (IQ) ----

func (s *shard) anyEndpoint(g *streamsGroup) bool {
	for _, m := range g.members {
		if m.endpoint != nil {
			return true
		}
	}
	return false
}

// endpointToPartitions is EndpointToPartitionsManager: for every member
// with an endpoint, the source and repartition-source partitions (by
// topic) of its active and standby tasks.
func (s *shard) endpointToPartitions(g *streamsGroup) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	if g.topology == nil {
		return out
	}
	topicsOf := map[string][]string{}
	for _, sub := range g.topology.subs {
		ts := slices.Clone(sub.sources)
		for _, r := range sub.repartitionSources {
			ts = append(ts, r.name)
		}
		sort.Strings(ts)
		topicsOf[sub.id] = ts
	}
	byTopic := func(t tasks) map[string][]int32 {
		m := map[string][]int32{}
		for sub, ps := range t {
			for _, topic := range topicsOf[sub] {
				for p := range ps {
					m[topic] = append(m[topic], p)
				}
			}
		}
		return m
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.NewStreamsGroupHeartbeatResponsePartitionsByUserEndpoint()
		e.UserEndpoint.Host, e.UserEndpoint.Port = m.endpoint.host, m.endpoint.port
		e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		a := byTopic(m.assigned.active)
		for _, t := range slices.Sorted(maps.Keys(a)) {
			ps := a[t]
			slices.Sort(ps)
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: t, Partitions: ps})
		}
		sb := byTopic(m.assigned.standby)
		for _, t := range slices.Sorted(maps.Keys(sb)) {
			ps := sb[t]
			slices.Sort(ps)
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: t, Partitions: ps})
		}
		out = append(out, e)
	}
	return out
}

// ---- StreamsGroupDescribe ----

func (s *shard) describeStreamsGroup(id string, rg *kmsg.StreamsGroupDescribeResponseGroup) {
	g := s.stgs[id]
	if g == nil {
		msg := fmt.Sprintf("Group %s not found.", id)
		if s.groups[id] != nil || s.cgs[id] != nil || s.sgs[id] != nil {
			msg = fmt.Sprintf("Group %s is not a streams group.", id)
		}
		rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
		return
	}
	if g.configured == nil && g.topology != nil {
		g.configured = configureTopics(s.c.cfg.Image(), g.topology)
		g.topicsHash = topicsHash(s.c.cfg.Image(), g.topology)
	}
	rg.State, rg.Epoch, rg.AssignmentEpoch = g.stateString(), g.epoch, g.assignmentEpoch
	assignor := "sticky"
	if s.c.cfg.GroupConfig != nil {
		if v, ok := s.c.cfg.GroupConfig(id).Value("streams.assignor.name"); ok && v != "" {
			assignor = v
		}
	}
	rg.AssignorName = &assignor
	if g.topology != nil {
		t := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: g.topology.epoch}
		for _, sub := range g.topology.subs {
			st := kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{SubtopologyID: sub.id,
				SourceTopics: slices.Clone(sub.sources), RepartitionSinkTopics: slices.Clone(sub.repartitionSinks)}
			if st.SourceTopics == nil {
				st.SourceTopics = []string{}
			}
			if st.RepartitionSinkTopics == nil {
				st.RepartitionSinkTopics = []string{}
			}
			st.StateChangelogTopics = describeTopicInfos(sub.changelogs)
			st.RepartitionSourceTopics = describeTopicInfos(sub.repartitionSources)
			t.Subtopologies = append(t.Subtopologies, st)
		}
		if t.Subtopologies == nil {
			t.Subtopologies = []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{}
		}
		rg.Topology = t
	}
	rg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, mid := range slices.Sorted(maps.Keys(g.members)) {
		m := g.members[mid]
		rm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
		rm.MemberID, rm.MemberEpoch, rm.InstanceID, rm.RackID = m.id, m.epoch, m.instanceID, m.rackID
		rm.ClientID, rm.ClientHost, rm.TopologyEpoch, rm.ProcessID = m.clientID, m.clientHost, m.topologyEpoch, m.processID
		if m.endpoint != nil {
			rm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpoint.host, Port: m.endpoint.port}
		}
		rm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
		for _, kv := range m.clientTags {
			rm.ClientTags = append(rm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: kv[0], Value: kv[1]})
		}
		rm.TaskOffsets, rm.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
		rm.Assignment = kmsg.StreamsAssignment{ActiveTasks: taskIDsOf(m.assigned.active),
			StandbyTasks: taskIDsOf(m.assigned.standby), WarmupTasks: taskIDsOf(m.assigned.warmup)}
		t := g.target[mid]
		rm.TargetAssignment = kmsg.StreamsAssignment{ActiveTasks: taskIDsOf(t.active),
			StandbyTasks: taskIDsOf(t.standby), WarmupTasks: taskIDsOf(t.warmup)}
		rg.Members = append(rg.Members, rm)
	}
}

func describeTopicInfos(a []topicInfo) []kmsg.TopicInfo {
	out := []kmsg.TopicInfo{}
	for _, t := range a {
		ti := kmsg.TopicInfo{Topic: t.name, NumPartitions: t.partitions, ReplicationFactor: t.rf, Configs: []kmsg.TopicInfoConfig{}}
		for _, kv := range t.configs {
			ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: kv[0], Value: kv[1]})
		}
		out = append(out, ti)
	}
	return out
}
