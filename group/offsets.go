package group

// Committed offsets (Kafka's OffsetMetadataManager): OffsetCommit,
// TxnOffsetCommit and the end-transaction markers, OffsetFetch,
// OffsetDelete, retention and deleted topics.

import (
	"errors"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// commitRequest is what validating an OffsetCommit or a TxnOffsetCommit
// needs of it.
type commitRequest struct {
	group, memberID string
	instanceID      *string
	generation      int32 // generation id, or KIP-848 member epoch
	version         int16
	txn             bool // TxnOffsetCommit
}

// validateCommit validates a commit against the group
// (OffsetMetadataManager.validateOffsetCommit and
// validateTransactionalOffsetCommit, and the groups' validateOffsetCommit).
// It may create a simple classic group. The returned check is per
// partition (nil: none).
func (s *shard) validateCommit(cr commitRequest) (func(topic string, p int32) error, error) {
	if s.sgs[cr.group] != nil {
		// Share groups keep no offsets here (ShareGroup.validateOffsetCommit).
		return nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a consumer group.", cr.group)
	}
	if sg := s.stgs[cr.group]; sg != nil {
		return sg.validateOffsetCommit(cr.memberID, cr.instanceID, cr.generation, cr.version, cr.txn)
	}
	if cg := s.cgs[cr.group]; cg != nil {
		check, err := cg.validateOffsetCommit(cr.memberID, cr.instanceID, cr.generation, cr.version, cr.txn)
		if check == nil || err != nil {
			return nil, err
		}
		img := s.c.cfg.Image()
		return func(topic string, p int32) error {
			t := img.TopicByName(topic)
			if t == nil {
				return kerr.StaleMemberEpoch
			}
			return check(t.ID, p)
		}, nil
	}
	return nil, s.validateClassicOffsetCommit(cr)
}

func (s *shard) validateClassicOffsetCommit(cr commitRequest) error {
	g := s.groups[cr.group]
	if g == nil {
		if cr.generation >= 0 {
			// OffsetCommit v9+ and TxnOffsetCommit v6+ say so; older
			// versions keep ILLEGAL_GENERATION.
			if !cr.txn && cr.version >= 9 || cr.txn && cr.version >= 6 {
				return kerr.GroupIDNotFound
			}
			return kerr.IllegalGeneration
		}
		// A simple group: offsets committed without group management.
		g = newClassicGroup(cr.group, s.nowMs())
		s.groups[cr.group] = g
	}
	if g.state == stDead {
		return kerr.CoordinatorNotAvailable
	}
	if cr.generation < 0 && g.state == stEmpty {
		return nil
	}
	if cr.generation >= 0 || cr.memberID != "" || cr.instanceID != nil {
		if err := g.validateMember(cr.memberID, cr.instanceID); err != nil {
			return err
		}
		if cr.generation != g.generation {
			return kerr.IllegalGeneration
		}
	} else if !cr.txn && g.state != stEmpty {
		// Commits without member and generation are accepted only while
		// the group is empty; TxnOffsetCommit before v3 has neither.
		return kerr.UnknownMemberID
	}
	if cr.txn {
		// The group state is not enforced for transactional commits.
		return nil
	}
	if g.state == stCompletingRebalance {
		return kerr.RebalanceInProgress
	}
	// Commits keep a classic member's session alive.
	if g.state == stStable || g.state == stPreparingRebalance {
		if m := g.members[cr.memberID]; m != nil {
			s.scheduleHeartbeat(g, m, m.sessionTimeout)
		}
	}
	return nil
}

// commitOffsets handles the partitions of an OffsetCommit that passed the
// topic checks; resp partitions are filled in place (codes only).
func (s *shard) commitOffsets(req *kmsg.OffsetCommitRequest, valid func(topic string, partition int32) bool, resp *kmsg.OffsetCommitResponse) {
	fillAll := func(err error) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				p := &resp.Topics[i].Partitions[j]
				if p.ErrorCode == 0 {
					p.ErrorCode = code(err)
				}
			}
		}
	}
	check, err := s.validateCommit(commitRequest{group: req.Group, memberID: req.MemberID, instanceID: req.InstanceID,
		generation: req.Generation, version: req.Version})
	if err != nil {
		fillAll(err)
		return
	}
	now := s.nowMs()
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = now + req.RetentionTimeMillis
	}
	var recs []record
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if rp.ErrorCode != 0 || !valid(t.Topic, p.Partition) {
				continue
			}
			if check != nil {
				if err := check(t.Topic, p.Partition); err != nil {
					rp.ErrorCode = code(err)
					continue
				}
			}
			if p.Metadata != nil && len(*p.Metadata) > s.c.cfg.OffsetMetadataMaxBytes {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			o := offsetEntry{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTs: now, expireTs: expire}
			if req.Version < 6 {
				o.leaderEpoch = -1
			}
			if p.Metadata != nil {
				o.metadata = *p.Metadata
			}
			recs = append(recs, offsetCommitRecord(req.Group, t.Topic, p.Partition, o))
		}
	}
	if err := s.apply(recs); err != nil {
		fillAll(err)
	}
}

// commitTxnOffsets handles the partitions of a TxnOffsetCommit that passed
// the topic checks (OffsetMetadataManager.commitTransactionalOffset): the
// offsets are written as one transactional batch of the producer, with
// the verification guard the transaction coordinator gave, and stay
// pending until the transaction's end marker.
func (s *shard) commitTxnOffsets(req *kmsg.TxnOffsetCommitRequest, guard any, resp *kmsg.TxnOffsetCommitResponse) {
	// Before v6 a stale member epoch is reported as ILLEGAL_GENERATION,
	// which older clients handle.
	stale := func(err error) error {
		if req.Version < 6 && errors.Is(err, kerr.StaleMemberEpoch) {
			return kerr.IllegalGeneration
		}
		return err
	}
	fillAll := func(err error) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if p := &resp.Topics[i].Partitions[j]; p.ErrorCode == 0 {
					p.ErrorCode = code(err)
				}
			}
		}
	}
	check, err := s.validateCommit(commitRequest{group: req.Group, memberID: req.MemberID, instanceID: req.InstanceID,
		generation: req.Generation, version: req.Version, txn: true})
	if err != nil {
		fillAll(stale(err))
		return
	}
	now := s.nowMs()
	var recs []record
	for i, t := range req.Topics {
		topic := resp.Topics[i].Topic // resolved from the topic id on v6+
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			if rp.ErrorCode != 0 {
				continue
			}
			if p.Metadata != nil && len(*p.Metadata) > s.c.cfg.OffsetMetadataMaxBytes {
				rp.ErrorCode = kerr.OffsetMetadataTooLarge.Code
				continue
			}
			if check != nil {
				if err := check(topic, p.Partition); err != nil {
					rp.ErrorCode = code(stale(err))
					continue
				}
			}
			o := offsetEntry{offset: p.Offset, leaderEpoch: p.LeaderEpoch, commitTs: now, expireTs: -1}
			if req.Version < 2 {
				o.leaderEpoch = -1
			}
			if p.Metadata != nil {
				o.metadata = *p.Metadata
			}
			recs = append(recs, offsetCommitRecord(req.Group, topic, p.Partition, o))
		}
	}
	if len(recs) == 0 {
		return
	}
	if err := s.append(coordinator.Batch{Records: recs, ProducerID: req.ProducerID, ProducerEpoch: req.ProducerEpoch,
		Transactional: true, Guard: guard}); err != nil {
		fillAll(err)
		return
	}
	base := s.firstOffset(len(recs))
	for i, r := range recs {
		s.replay(base+int64(i), req.ProducerID, r.Key, r.Value)
	}
}

// completeTxn writes a producer's end-transaction marker and then commits
// or drops its pending offsets (the runtime's transaction completion and
// replayEndTransactionMarker). Write errors are returned as they are: the
// WriteTxnMarkers handler maps them.
func (s *shard) completeTxn(producerID int64, producerEpoch int16, coordinatorEpoch int32, commit bool) error {
	if err := s.ctx.Append(coordinator.Batch{Marker: &coordinator.Marker{Commit: commit, CoordinatorEpoch: coordinatorEpoch},
		ProducerID: producerID, ProducerEpoch: producerEpoch}); err != nil {
		return err
	}
	s.replayEndTxn(producerID, commit)
	return nil
}

// fetchOffsets answers one group of an OffsetFetch. all means every
// partition the group has committed offsets for. With requireStable
// (v7+), partitions an ongoing transaction holds an offset for answer
// UNSTABLE_OFFSET_COMMIT; otherwise pending transactional offsets are not
// visible, the committed ones are.
func (s *shard) fetchOffsets(group string, memberID *string, memberEpoch int32, topics []kmsg.OffsetFetchRequestTopic, all, requireStable bool) ([]kmsg.OffsetFetchResponseGroupTopic, error) {
	if s.sgs[group] != nil {
		return nil, errMsg(kerr.GroupIDNotFound, "Group %s is not a consumer group.", group)
	}
	if cg := s.cgs[group]; cg != nil {
		if err := cg.validateOffsetFetch(memberID, memberEpoch); err != nil {
			return nil, err
		}
	}
	if sg := s.stgs[group]; sg != nil {
		if err := sg.validateOffsetFetch(memberID, memberEpoch); err != nil {
			return nil, err
		}
	}
	offs := s.offsets[group]
	part := func(topic string, p int32) kmsg.OffsetFetchResponseGroupTopicPartition {
		if requireStable && s.hasPendingOffset(group, topic, p) {
			rp := fetched(p, offsetEntry{}, false)
			rp.ErrorCode = kerr.UnstableOffsetCommit.Code
			return rp
		}
		o, ok := offs[topic][p]
		return fetched(p, o, ok)
	}
	var out []kmsg.OffsetFetchResponseGroupTopic
	if all {
		for _, name := range slices.Sorted(maps.Keys(offs)) {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = name
			for _, p := range slices.Sorted(maps.Keys(offs[name])) {
				rt.Partitions = append(rt.Partitions, part(name, p))
			}
			out = append(out, rt)
		}
		return out, nil
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, part(t.Topic, p))
		}
		out = append(out, rt)
	}
	return out, nil
}

func fetched(p int32, o offsetEntry, ok bool) kmsg.OffsetFetchResponseGroupTopicPartition {
	rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
	rp.Partition = p
	rp.Offset, rp.LeaderEpoch = -1, -1
	md := ""
	rp.Metadata = &md
	if ok {
		rp.Offset, rp.LeaderEpoch = o.offset, o.leaderEpoch
		m := o.metadata
		rp.Metadata = &m
	}
	return rp
}

// deleteOffsets handles OffsetDelete for topics that exist. A partition
// gets a tombstone if it has a committed offset or a pending
// transactional one (the tombstone drops both).
func (s *shard) deleteOffsets(req *kmsg.OffsetDeleteRequest, resp *kmsg.OffsetDeleteResponse, valid func(string, int32) bool) error {
	var subscribed func(string) bool
	if s.sgs[req.Group] != nil {
		return errMsg(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
	}
	switch {
	case s.stgs[req.Group] != nil:
		subscribed = s.stgs[req.Group].isSubscribedToTopic
	case s.cgs[req.Group] != nil:
		cg := s.cgs[req.Group]
		subscribed = cg.isSubscribedToTopic
	case s.groups[req.Group] != nil:
		g := s.groups[req.Group]
		switch g.state {
		case stDead:
			return kerr.GroupIDNotFound
		case stStable, stPreparingRebalance, stCompletingRebalance:
			if g.protocolType == nil || *g.protocolType != "consumer" {
				return kerr.NonEmptyGroup
			}
		}
		subscribed = g.isSubscribedToTopic
	default:
		return kerr.GroupIDNotFound
	}
	var recs []record
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		isSub := subscribed(t.Topic)
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != 0 || !valid(t.Topic, p.Partition) {
				continue
			}
			if isSub {
				rp.ErrorCode = kerr.GroupSubscribedToTopic.Code
				continue
			}
			if s.hasOffset(req.Group, t.Topic, p.Partition) || s.hasPendingOffset(req.Group, t.Topic, p.Partition) {
				recs = append(recs, record{Key: offsetCommitKey(req.Group, t.Topic, p.Partition)})
			}
		}
	}
	return s.apply(recs)
}

// expireOffsets is one retention pass (cleanupGroupMetadata): expired
// offsets get tombstones, except for partitions an ongoing transaction
// holds an offset for, and empty groups left without offsets and without
// open transactions are deleted.
func (s *shard) expireOffsets() {
	now := s.nowMs()
	retention := s.c.cfg.OffsetsRetention.Milliseconds()
	groupIDs := map[string]bool{}
	for id := range s.offsets {
		groupIDs[id] = true
	}
	for id := range s.groups {
		groupIDs[id] = true
	}
	for id := range s.cgs {
		groupIDs[id] = true
	}
	for _, id := range slices.Sorted(maps.Keys(groupIDs)) {
		var recs []record
		allExpired := true
		base, subscribed, ok := s.expirationCondition(id)
		if !ok {
			continue
		}
		for _, topic := range slices.Sorted(maps.Keys(s.offsets[id])) {
			parts := s.offsets[id][topic]
			if subscribed(topic) {
				allExpired = false
				continue
			}
			for _, p := range slices.Sorted(maps.Keys(parts)) {
				o := parts[p]
				var isExpired bool
				if o.expireTs >= 0 {
					isExpired = now >= o.expireTs
				} else {
					b := o.commitTs
					if base >= 0 {
						b = base
					}
					isExpired = now-b >= retention
				}
				if isExpired && !s.hasPendingOffset(id, topic, p) {
					recs = append(recs, record{Key: offsetCommitKey(id, topic, p)})
				} else {
					allExpired = false
				}
			}
		}
		g, cg := s.groups[id], s.cgs[id]
		deleteGroup := false
		if allExpired && len(s.openTxns[id]) == 0 { // no group deletion while transactions are open
			if g != nil && g.state == stEmpty {
				deleteGroup = true
				recs = append(recs, record{Key: groupMetadataKey(id)})
			} else if cg != nil && cg.isEmpty() {
				deleteGroup = true
				recs = append(recs, s.consumerGroupTombstones(cg)...)
			}
		}
		if len(recs) == 0 {
			continue
		}
		if err := s.apply(recs); err != nil {
			return
		}
		if deleteGroup && g != nil {
			g.transition(stDead, now)
		}
	}
}

// expirationCondition is Group.offsetExpirationCondition: the base
// timestamp (-1: each offset's commit timestamp) and which topics are
// exempt because the group is subscribed to them.
func (s *shard) expirationCondition(id string) (base int64, subscribed func(string) bool, ok bool) {
	if cg := s.cgs[id]; cg != nil {
		return -1, cg.isSubscribedToTopic, true
	}
	g := s.groups[id]
	if g == nil {
		return -1, func(string) bool { return false }, true
	}
	if g.protocolType == nil {
		return -1, func(string) bool { return false }, true
	}
	if g.state == stEmpty {
		return g.stateTs, func(string) bool { return false }, true
	}
	if *g.protocolType == "consumer" && g.subscribed != nil && g.state == stStable {
		return -1, g.isSubscribedToTopic, true
	}
	return 0, nil, false
}

// deleteTopicOffsets writes tombstones for every committed or pending
// offset of the topics (onPartitionsDeleted).
func (s *shard) deleteTopicOffsets(topics []string) {
	type key struct {
		group, topic string
		part         int32
	}
	seen := map[key]bool{}
	var recs []record
	add := func(m offsetMap) {
		for _, g := range slices.Sorted(maps.Keys(m)) {
			for _, t := range topics {
				for _, p := range slices.Sorted(maps.Keys(m[g][t])) {
					if k := (key{g, t, p}); !seen[k] {
						seen[k] = true
						recs = append(recs, record{Key: offsetCommitKey(g, t, p)})
					}
				}
			}
		}
	}
	add(s.offsets)
	for _, pid := range slices.Sorted(maps.Keys(s.pending)) {
		add(s.pending[pid])
	}
	_ = s.apply(recs)
}
