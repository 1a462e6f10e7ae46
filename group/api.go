package group

// The coordinator's API: one method per Kafka group API, taking the
// decoded request and returning the response for the request's version.
// The broker's handler files (broker/08_*.go ... 69_*.go) call these.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// topicKnown reports whether topic-partition exists in the metadata
// image (KafkaApis answers UNKNOWN_TOPIC_OR_PARTITION for the rest).
func (c *Coordinator) topicKnown() func(string, int32) bool {
	img := c.cfg.Image()
	return func(topic string, p int32) bool {
		t := img.TopicByName(topic)
		return t != nil && t.Partition(p) != nil
	}
}

// JoinGroup serves JoinGroup v0-9; it parks until the join phase
// completes or ctx ends.
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest, clientID, clientHost string) *kmsg.JoinGroupResponse {
	fail := func(err error) *kmsg.JoinGroupResponse {
		r := req.ResponseKind().(*kmsg.JoinGroupResponse)
		r.ErrorCode, r.MemberID, r.Generation = code(err), req.MemberID, -1
		return r
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	st := msDuration(req.SessionTimeoutMillis)
	if st < c.cfg.MinSessionTimeout || st > c.cfg.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout)
	}
	var p *parked[*kmsg.JoinGroupResponse]
	err := c.with(req.Group, func(s *shard) error {
		p = s.classicJoin(joinRequest{req: req, clientID: clientID, clientHost: clientHost})
		return nil
	})
	if err != nil {
		return fail(err)
	}
	select {
	case r := <-p.ch:
		r.Version = req.Version
		if r.ErrorCode != 0 && r.Generation == 0 {
			r.Generation = -1
		}
		return r
	case <-ctx.Done():
		return fail(kerr.RebalanceInProgress)
	}
}

// SyncGroup serves SyncGroup v0-5; followers park until the leader's
// assignment is stored.
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	fail := func(err error) *kmsg.SyncGroupResponse {
		r := req.ResponseKind().(*kmsg.SyncGroupResponse)
		r.ErrorCode, r.MemberAssignment = code(err), []byte{}
		return r
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID)
	}
	var p *parked[*kmsg.SyncGroupResponse]
	err := c.with(req.Group, func(s *shard) error {
		p = s.classicSync(req)
		return nil
	})
	if err != nil {
		return fail(err)
	}
	select {
	case r := <-p.ch:
		r.Version = req.Version
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		return r
	case <-ctx.Done():
		return fail(kerr.RebalanceInProgress)
	}
}

// Heartbeat serves Heartbeat v0-4.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	r := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if req.Group == "" {
		r.ErrorCode = kerr.InvalidGroupID.Code
		return r
	}
	r.ErrorCode = code(c.with(req.Group, func(s *shard) error {
		if cg := s.cgs[req.Group]; cg != nil {
			return s.classicHeartbeatToConsumerGroup(cg, req)
		}
		return s.classicHeartbeat(req)
	}))
	return r
}

// LeaveGroup serves LeaveGroup v0-5 (v3+ batched members).
func (c *Coordinator) LeaveGroup(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	r := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := make([]leaveMember, 0, len(req.Members)+1)
	if req.Version < 3 {
		members = append(members, leaveMember{memberID: req.MemberID})
	} else {
		for _, m := range req.Members {
			members = append(members, leaveMember{memberID: m.MemberID, instanceID: m.InstanceID})
		}
	}
	if req.Group == "" {
		r.ErrorCode = kerr.InvalidGroupID.Code
		return r
	}
	var errs []error
	err := c.with(req.Group, func(s *shard) error {
		var top error
		if cg := s.cgs[req.Group]; cg != nil {
			top, errs = s.classicLeaveConsumerGroup(cg, members)
		} else {
			top, errs = s.classicLeave(req.Group, members)
		}
		return top
	})
	if err != nil {
		r.ErrorCode = code(err)
		return r
	}
	if req.Version < 3 {
		if len(errs) > 0 {
			r.ErrorCode = code(errs[0])
		}
		return r
	}
	for i, m := range req.Members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID, rm.ErrorCode = m.MemberID, m.InstanceID, code(errs[i])
		r.Members = append(r.Members, rm)
	}
	return r
}

// OffsetCommit serves OffsetCommit v2-10. v10 names topics by id (KIP-848):
// each id is resolved to its name first, and every partition of an id the
// metadata does not know answers UNKNOWN_TOPIC_ID (KafkaApis.handleOffsetCommitRequest).
func (c *Coordinator) OffsetCommit(req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	r := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	known := c.topicKnown()
	var unknownID map[int]bool
	if req.Version >= 10 {
		req, unknownID = c.resolveCommitTopicIDs(req)
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case unknownID[i]:
				rp.ErrorCode = kerr.UnknownTopicID.Code
			case !known(t.Topic, p.Partition):
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	setAll := func(err error) {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if r.Topics[i].Partitions[j].ErrorCode == 0 {
					r.Topics[i].Partitions[j].ErrorCode = code(err)
				}
			}
		}
	}
	if req.Group == "" {
		setAll(kerr.InvalidGroupID)
		return r
	}
	if err := c.with(req.Group, func(s *shard) error {
		s.commitOffsets(req, known, r)
		return nil
	}); err != nil {
		setAll(err)
	}
	return r
}

// resolveCommitTopicIDs returns a copy of a v10+ OffsetCommit whose topics
// carry the names of their ids, and the indexes of the topics whose id the
// metadata does not know.
func (c *Coordinator) resolveCommitTopicIDs(req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitRequest, map[int]bool) {
	img := c.cfg.Image()
	out := *req
	out.Topics = slices.Clone(req.Topics)
	unknown := map[int]bool{}
	for i := range out.Topics {
		if ti := img.TopicByID(out.Topics[i].TopicID); ti != nil {
			out.Topics[i].Topic = ti.Name
		} else {
			out.Topics[i].Topic = ""
			unknown[i] = true
		}
	}
	return &out, unknown
}

// TxnOffsetCommit serves TxnOffsetCommit v0-6: offsets a transactional
// producer commits for a group, written as part of its transaction and
// kept pending (not visible to OffsetFetch) until the transaction's end
// marker (GroupCoordinatorService.commitTransactionalOffsets). The
// transaction coordinator verifies the producer's transaction first
// (KIP-890): from v5 on (transaction.version 2) the verification also adds
// the partition to the transaction, replacing AddOffsetsToTxn.
func (c *Coordinator) TxnOffsetCommit(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	r := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	img := c.cfg.Image()
	anyValid := false
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		// v6 names topics by id (KIP-1319); an unknown id fails the topic.
		topicErr := kerr.UnknownTopicOrPartition
		ti := img.TopicByName(t.Topic)
		if req.Version >= 6 {
			topicErr, ti = kerr.UnknownTopicID, img.TopicByID(t.TopicID)
			if ti != nil {
				rt.Topic = ti.Name
			}
		}
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case ti == nil:
				rp.ErrorCode = topicErr.Code
			case ti.Partition(p.Partition) == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				anyValid = true
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	fillAll := func(err error) {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if p := &r.Topics[i].Partitions[j]; p.ErrorCode == 0 {
					p.ErrorCode = code(err)
				}
			}
		}
	}
	if !anyValid {
		return r
	}
	if req.Group == "" {
		fillAll(kerr.InvalidGroupID)
		return r
	}
	partition := c.PartitionFor(req.Group)
	vctx, cancel := context.WithTimeout(ctx, c.cfg.CommitTimeout)
	guard, err := c.cfg.Writer.VerifyTransaction(vctx, coordinator.TopicPartition{Topic: OffsetsTopic, Partition: partition},
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Version >= 5)
	cancel()
	if err != nil {
		fillAll(verifyErr(err, req.Version))
		return r
	}
	if err := c.run(partition, func(s *shard) error {
		s.commitTxnOffsets(req, guard, r)
		return nil
	}); err != nil {
		fillAll(err)
	}
	return r
}

// verifyErr is how a failed KIP-890 verification is reported to a
// TxnOffsetCommit of the given version: as AddPartitionsToTxnManager
// translates the transaction coordinator's answer (PRODUCER_FENCED is
// INVALID_PRODUCER_EPOCH; TRANSACTION_ABORTABLE, new in v4, is
// INVALID_TXN_STATE before), then as the coordinator runtime reports
// operation errors (handleOperationException: a network failure is
// COORDINATOR_LOAD_IN_PROGRESS, which clients retry without a coordinator
// lookup).
func verifyErr(err error, version int16) error {
	var ke *kerr.Error
	if !errors.As(err, &ke) {
		return kerr.CoordinatorLoadInProgress
	}
	switch {
	case ke == kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case ke == kerr.TransactionAbortable && version < 4:
		return kerr.InvalidTxnState
	case ke == kerr.NetworkException:
		return kerr.CoordinatorLoadInProgress
	}
	return appendErr(ke)
}

// OffsetFetch serves OffsetFetch v1-10 (v8+ several groups; v7+
// require_stable; v10 topics by id).
func (c *Coordinator) OffsetFetch(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	r := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	stable := req.Version >= 7 && req.RequireStable
	if req.Version >= 10 {
		for _, g := range req.Groups {
			r.Groups = append(r.Groups, c.fetchGroupByTopicID(g, stable))
		}
		return r
	}
	if req.Version >= 8 {
		for _, g := range req.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group = g.Group
			topics := make([]kmsg.OffsetFetchRequestTopic, len(g.Topics))
			for i, t := range g.Topics {
				topics[i] = kmsg.OffsetFetchRequestTopic{Topic: t.Topic, Partitions: t.Partitions}
			}
			ts, err := c.fetchGroup(g.Group, g.MemberID, g.MemberEpoch, topics, g.Topics == nil, stable)
			rg.Topics, rg.ErrorCode = ts, code(err)
			r.Groups = append(r.Groups, rg)
		}
		return r
	}
	ts, err := c.fetchGroup(req.Group, nil, -1, req.Topics, req.Topics == nil && req.Version >= 2, stable)
	if err != nil {
		r.ErrorCode = code(err)
		if req.Version < 2 {
			for _, t := range req.Topics {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code(err)
					md := ""
					rp.Metadata = &md
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
		return r
	}
	for _, t := range ts {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.Metadata, rp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	return r
}

// fetchGroupByTopicID serves one group of an OffsetFetch v10+, whose
// topics are named by id (KIP-848), as KafkaApis.fetchOffsetsForGroup and
// fetchAllOffsetsForGroup do: requested ids the metadata does not know
// answer UNKNOWN_TOPIC_ID on each partition (offset -1); for all topics,
// each committed topic gets its current id, and topics that no longer
// exist are left out.
func (c *Coordinator) fetchGroupByTopicID(g kmsg.OffsetFetchRequestGroup, stable bool) kmsg.OffsetFetchResponseGroup {
	img := c.cfg.Image()
	rg := kmsg.NewOffsetFetchResponseGroup()
	rg.Group = g.Group
	var topics []kmsg.OffsetFetchRequestTopic
	for _, t := range g.Topics {
		if ti := img.TopicByID(t.TopicID); ti != nil {
			topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: ti.Name, Partitions: t.Partitions})
		}
	}
	ts, err := c.fetchGroup(g.Group, g.MemberID, g.MemberEpoch, topics, g.Topics == nil, stable)
	if err != nil {
		rg.ErrorCode = code(err)
		return rg
	}
	byName := map[string]kmsg.OffsetFetchResponseGroupTopic{}
	for _, t := range ts {
		byName[t.Topic] = t
	}
	if g.Topics == nil {
		for _, t := range ts {
			if ti := img.TopicByName(t.Topic); ti != nil {
				t.TopicID = ti.ID
				rg.Topics = append(rg.Topics, t)
			}
		}
		return rg
	}
	for _, t := range g.Topics {
		ti := img.TopicByID(t.TopicID)
		if ti == nil {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.Partitions {
				rp := fetched(p, offsetEntry{}, false)
				rp.ErrorCode = kerr.UnknownTopicID.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
			continue
		}
		rt := byName[ti.Name]
		rt.TopicID = t.TopicID
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}

func (c *Coordinator) fetchGroup(group string, memberID *string, epoch int32, topics []kmsg.OffsetFetchRequestTopic, all, stable bool) ([]kmsg.OffsetFetchResponseGroupTopic, error) {
	if group == "" {
		return nil, kerr.InvalidGroupID
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	err := c.with(group, func(s *shard) error {
		var err error
		out, err = s.fetchOffsets(group, memberID, epoch, topics, all, stable)
		return err
	})
	return out, err
}

// OffsetDelete serves OffsetDelete v0.
func (c *Coordinator) OffsetDelete(req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	r := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	known := c.topicKnown()
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if !known(t.Topic, p.Partition) {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	if req.Group == "" {
		r.ErrorCode = kerr.InvalidGroupID.Code
		r.Topics = nil
		return r
	}
	if err := c.with(req.Group, func(s *shard) error { return s.deleteOffsets(req, r, known) }); err != nil {
		r.ErrorCode = code(err)
		r.Topics = nil
	}
	return r
}

// groupSummary is one group as ListGroups shows it.
type groupSummary struct {
	id, protocolType, state, typ string
}

// ListGroups serves ListGroups v0-5: the groups of every loaded shard,
// filtered by state (v4+) and type (v5+), case-insensitively.
func (c *Coordinator) ListGroups(req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	r := req.ResponseKind().(*kmsg.ListGroupsResponse)
	states := lowerSet(req.StatesFilter)
	types := lowerSet(req.TypesFilter)
	if c.rt.Loading() {
		r.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	var all []groupSummary
	for _, p := range c.rt.Partitions() {
		var part []groupSummary
		err := c.run(p, func(s *shard) error {
			for id, g := range s.groups {
				pt := ""
				if g.protocolType != nil {
					pt = *g.protocolType
				}
				part = append(part, groupSummary{id, pt, g.state.String(), "classic"})
			}
			for id, g := range s.cgs {
				part = append(part, groupSummary{id, "consumer", g.stateString(), "consumer"})
			}
			for id, g := range s.sgs {
				part = append(part, groupSummary{id, "share", g.stateString(), "share"})
			}
			for id, g := range s.stgs {
				part = append(part, groupSummary{id, "streams", g.stateString(), "streams"})
			}
			return nil
		})
		switch {
		case err == nil:
			all = append(all, part...)
		case errors.Is(err, kerr.NotCoordinator):
			// Unloaded meanwhile: its groups are no longer ours to list.
		default:
			r.ErrorCode = code(err)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].id < all[j].id })
	for _, g := range all {
		if len(states) > 0 && !states[strings.ToLower(g.state)] || len(types) > 0 && !types[g.typ] {
			continue
		}
		rg := kmsg.NewListGroupsResponseGroup()
		rg.Group, rg.ProtocolType, rg.GroupState, rg.GroupType = g.id, g.protocolType, g.state, g.typ
		r.Groups = append(r.Groups, rg)
	}
	return r
}

func lowerSet(in []string) map[string]bool {
	out := map[string]bool{}
	for _, s := range in {
		out[strings.ToLower(s)] = true
	}
	return out
}

// DescribeGroups serves DescribeGroups v0-6 for classic groups.
func (c *Coordinator) DescribeGroups(req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	r := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = -2147483648
		if id == "" {
			rg.ErrorCode = kerr.InvalidGroupID.Code
			r.Groups = append(r.Groups, rg)
			continue
		}
		err := c.with(id, func(s *shard) error {
			g := s.groups[id]
			if g == nil {
				rg.State = "Dead"
				msg := fmt.Sprintf("Group %s not found.", id)
				if s.cgs[id] != nil || s.sgs[id] != nil || s.stgs[id] != nil {
					msg = fmt.Sprintf("Group %s is not a classic group.", id)
				}
				if req.Version >= 6 {
					rg.ErrorCode, rg.ErrorMessage = kerr.GroupIDNotFound.Code, &msg
				}
				return nil
			}
			rg.State = g.state.String()
			if g.protocolType != nil {
				rg.ProtocolType = *g.protocolType
			}
			stable := g.state == stStable && g.protocolName != nil
			if stable {
				rg.Protocol = *g.protocolName
			}
			for _, m := range g.allMembers() {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.InstanceID, rm.ClientID, rm.ClientHost = m.id, m.instanceID, m.clientID, m.clientHost
				rm.ProtocolMetadata, rm.MemberAssignment = []byte{}, []byte{}
				if stable {
					if md := m.metadata(*g.protocolName); md != nil {
						rm.ProtocolMetadata = md
					}
					if m.assignment != nil {
						rm.MemberAssignment = m.assignment
					}
				}
				rg.Members = append(rg.Members, rm)
			}
			return nil
		})
		if err != nil {
			rg.ErrorCode = code(err)
		}
		r.Groups = append(r.Groups, rg)
	}
	return r
}

// DeleteGroups serves DeleteGroups v0-3. A share group's share state is
// deleted through the persister first (deleteShareGroupState), as Kafka's
// GroupCoordinatorService.deleteGroups does; a failure there fails the
// group's deletion.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	r := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		if id == "" {
			rg.ErrorCode = kerr.InvalidGroupID.Code
		} else if err := c.deleteShareGroupState(ctx, id); err != nil {
			rg.ErrorCode = code(err)
		} else {
			rg.ErrorCode = code(c.with(id, func(s *shard) error { return s.deleteGroup(id) }))
		}
		r.Groups = append(r.Groups, rg)
	}
	return r
}

// deleteGroup removes an empty group and its offsets, committed and
// pending transactional ones (GroupCoordinatorShard.deleteGroups,
// OffsetMetadataManager.deleteAllOffsets).
func (s *shard) deleteGroup(id string) error {
	var recs []record
	for _, topic := range slices.Sorted(maps.Keys(s.offsets[id])) {
		for _, p := range slices.Sorted(maps.Keys(s.offsets[id][topic])) {
			recs = append(recs, record{Key: offsetCommitKey(id, topic, p)})
		}
	}
	// Partitions only an ongoing transaction has an offset for need their
	// own tombstone, or its COMMIT marker would bring them back.
	for _, topic := range slices.Sorted(maps.Keys(s.openTxns[id])) {
		for _, p := range slices.Sorted(maps.Keys(s.openTxns[id][topic])) {
			if !s.hasOffset(id, topic, p) {
				recs = append(recs, record{Key: offsetCommitKey(id, topic, p)})
			}
		}
	}
	switch {
	case s.groups[id] != nil:
		g := s.groups[id]
		switch g.state {
		case stDead:
			return kerr.GroupIDNotFound
		case stStable, stPreparingRebalance, stCompletingRebalance:
			return kerr.NonEmptyGroup
		}
		recs = append(recs, record{Key: groupMetadataKey(id)})
	case s.cgs[id] != nil:
		cg := s.cgs[id]
		if !cg.isEmpty() {
			return kerr.NonEmptyGroup
		}
		recs = append(recs, s.consumerGroupTombstones(cg)...)
	case s.sgs[id] != nil:
		sg := s.sgs[id]
		if len(sg.members) > 0 {
			return kerr.NonEmptyGroup
		}
		recs = append(recs, s.shareGroupTombstones(sg)...)
	case s.stgs[id] != nil:
		stg := s.stgs[id]
		if len(stg.members) > 0 {
			return kerr.NonEmptyGroup
		}
		recs = append(recs, streamsGroupTombstones(stg)...)
	default:
		return kerr.GroupIDNotFound
	}
	g, cg := s.groups[id], s.cgs[id]
	if err := s.apply(recs); err != nil {
		return err
	}
	if g != nil {
		g.transition(stDead, s.nowMs())
	}
	delete(s.groups, id)
	if cg != nil {
		s.cancelConsumerGroupTimers(cg)
	}
	delete(s.cgs, id)
	delete(s.sgs, id)
	if s.stgs[id] != nil {
		// createGroupTombstoneRecordsAndCancelTimers: the initial
		// rebalance delay of a deleted group stops.
		s.cancel(streamsInitialKey(id))
	}
	delete(s.stgs, id)
	delete(s.shareMeta, id)
	return nil
}

// ConsumerGroupHeartbeat serves ConsumerGroupHeartbeat v0-1 (KIP-848).
func (c *Coordinator) ConsumerGroupHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest, clientID, clientHost string) *kmsg.ConsumerGroupHeartbeatResponse {
	fail := func(err error) *kmsg.ConsumerGroupHeartbeatResponse {
		r := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		r.ErrorCode = code(err)
		var me *msgError
		if errors.As(err, &me) {
			r.ErrorMessage = &me.msg
		}
		return r
	}
	if err := c.validateConsumerHeartbeat(req); err != nil {
		return fail(err)
	}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	err := c.with(req.Group, func(s *shard) error {
		var err error
		resp, err = s.consumerHeartbeat(req, clientID, clientHost)
		return err
	})
	if err != nil {
		return fail(err)
	}
	resp.Version = req.Version
	return resp
}

// validateConsumerHeartbeat is throwIfConsumerGroupHeartbeatRequestIsInvalid.
func (c *Coordinator) validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) error {
	inv := func(msg string) error { return &msgError{err: kerr.InvalidRequest, msg: msg} }
	switch {
	case req.Group == "":
		return inv("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return inv("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return inv("RackId can't be empty.")
	}
	switch e := req.MemberEpoch; {
	case e > 0 || e == leaveGroupEpoch:
		if req.MemberID == "" {
			return inv("MemberId can't be empty.")
		}
	case e == 0:
		if req.RebalanceTimeoutMillis == -1 {
			return inv("RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) != 0 {
			return inv("TopicPartitions must be empty when (re-)joining.")
		}
		if len(req.SubscribedTopicNames) == 0 && (req.SubscribedTopicRegex == nil || *req.SubscribedTopicRegex == "") {
			return inv("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		}
	case e == leaveGroupStaticEpoch:
		if req.MemberID == "" {
			return inv("MemberId can't be empty.")
		}
		if req.InstanceID == nil {
			return inv("InstanceId can't be null.")
		}
	default:
		return inv("MemberEpoch is invalid.")
	}
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		if _, err := regexp.Compile(*req.SubscribedTopicRegex); err != nil {
			return &msgError{err: kerr.InvalidRegularExpression, msg: err.Error()}
		}
	}
	if req.ServerAssignor != nil && !slices.Contains(c.cfg.ConsumerAssignors, *req.ServerAssignor) {
		return &msgError{err: kerr.UnsupportedAssignor, msg: fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s.",
			*req.ServerAssignor, strings.Join(c.cfg.ConsumerAssignors, ", "))}
	}
	return nil
}

// ConsumerGroupDescribe serves ConsumerGroupDescribe v0-1.
func (c *Coordinator) ConsumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	r := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewConsumerGroupDescribeResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = -2147483648
		if id == "" {
			rg.ErrorCode = kerr.InvalidGroupID.Code
		} else if err := c.with(id, func(s *shard) error { s.describeConsumerGroup(id, &rg); return nil }); err != nil {
			rg.ErrorCode = code(err)
		}
		r.Groups = append(r.Groups, rg)
	}
	return r
}
