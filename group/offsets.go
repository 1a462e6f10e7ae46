package group

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// commitTarget validates an OffsetCommit against the group
// (OffsetMetadataManager.validateOffsetCommit and the groups'
// validateOffsetCommit). It may create a simple classic group.
func (s *shard) validateOffsetCommit(req *kmsg.OffsetCommitRequest) (func(topic string, p int32) error, error) {
	if cg := s.cgs[req.Group]; cg != nil {
		check, err := cg.validateOffsetCommit(req.MemberID, req.InstanceID, req.Generation, req.Version)
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
	err := s.validateClassicOffsetCommit(req)
	return nil, err
}

func (s *shard) validateClassicOffsetCommit(req *kmsg.OffsetCommitRequest) error {
	g := s.groups[req.Group]
	if g == nil {
		if req.Generation >= 0 {
			if req.Version >= 9 {
				return kerr.GroupIDNotFound
			}
			return kerr.IllegalGeneration
		}
		// A simple group: offsets committed without group management.
		g = newClassicGroup(req.Group, s.nowMs())
		s.groups[req.Group] = g
	}
	if g.state == stDead {
		return kerr.CoordinatorNotAvailable
	}
	if req.Generation < 0 && g.state == stEmpty {
		return nil
	}
	if req.Generation >= 0 || req.MemberID != "" || req.InstanceID != nil {
		if err := g.validateMember(req.MemberID, req.InstanceID); err != nil {
			return err
		}
		if req.Generation != g.generation {
			return kerr.IllegalGeneration
		}
	} else if g.state != stEmpty {
		return kerr.UnknownMemberID
	}
	if g.state == stCompletingRebalance {
		return kerr.RebalanceInProgress
	}
	// Commits keep a classic member's session alive.
	if g.state == stStable || g.state == stPreparingRebalance {
		if m := g.members[req.MemberID]; m != nil {
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
	check, err := s.validateOffsetCommit(req)
	if err != nil {
		fillAll(err)
		return
	}
	now := s.nowMs()
	expire := int64(-1)
	if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis != -1 {
		expire = now + req.RetentionTimeMillis
	}
	type pending struct {
		topic string
		part  int32
		o     offsetEntry
	}
	var recs []record
	var todo []pending
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
			todo = append(todo, pending{t.Topic, p.Partition, o})
		}
	}
	if err := s.write(recs); err != nil {
		fillAll(err)
		return
	}
	for _, p := range todo {
		s.setOffset(req.Group, p.topic, p.part, p.o)
	}
}

// fetchOffsets answers one group of an OffsetFetch. topics nil means all.
func (s *shard) fetchOffsets(group string, memberID *string, memberEpoch int32, topics []kmsg.OffsetFetchRequestTopic, all bool) ([]kmsg.OffsetFetchResponseGroupTopic, error) {
	if cg := s.cgs[group]; cg != nil {
		if err := cg.validateOffsetFetch(memberID, memberEpoch); err != nil {
			return nil, err
		}
	}
	offs := s.offsets[group]
	var out []kmsg.OffsetFetchResponseGroupTopic
	if all {
		names := make([]string, 0, len(offs))
		for t := range offs {
			names = append(names, t)
		}
		sort.Strings(names)
		for _, name := range names {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic = name
			parts := make([]int32, 0, len(offs[name]))
			for p := range offs[name] {
				parts = append(parts, p)
			}
			sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
			for _, p := range parts {
				rt.Partitions = append(rt.Partitions, fetched(p, offs[name][p], true))
			}
			out = append(out, rt)
		}
		return out, nil
	}
	for _, t := range topics {
		rt := kmsg.NewOffsetFetchResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			o, ok := offs[t.Topic][p]
			rt.Partitions = append(rt.Partitions, fetched(p, o, ok))
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

// deleteOffsets handles OffsetDelete for topics that exist.
func (s *shard) deleteOffsets(req *kmsg.OffsetDeleteRequest, resp *kmsg.OffsetDeleteResponse, valid func(string, int32) bool) error {
	var subscribed func(string) bool
	switch {
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
	type del struct {
		topic string
		part  int32
	}
	var recs []record
	var dels []del
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
			if s.hasOffset(req.Group, t.Topic, p.Partition) {
				recs = append(recs, record{Key: offsetCommitKey(req.Group, t.Topic, p.Partition)})
				dels = append(dels, del{t.Topic, p.Partition})
			}
		}
	}
	if err := s.write(recs); err != nil {
		return err
	}
	for _, d := range dels {
		s.deleteOffset(req.Group, d.topic, d.part)
	}
	return nil
}

// expireOffsets is one retention pass (cleanupGroupMetadata).
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
	for id := range groupIDs {
		var recs []record
		var expired [][2]any
		allExpired := true
		base, subscribed, ok := s.expirationCondition(id)
		if !ok {
			continue
		}
		for topic, parts := range s.offsets[id] {
			if subscribed(topic) {
				allExpired = false
				continue
			}
			for p, o := range parts {
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
				if isExpired {
					recs = append(recs, record{Key: offsetCommitKey(id, topic, p)})
					expired = append(expired, [2]any{topic, p})
				} else {
					allExpired = false
				}
			}
		}
		deleteGroup := false
		if allExpired {
			if g := s.groups[id]; g != nil && g.state == stEmpty {
				deleteGroup = true
				recs = append(recs, record{Key: groupMetadataKey(id)})
			} else if cg := s.cgs[id]; cg != nil && cg.isEmpty() {
				deleteGroup = true
				recs = append(recs, s.consumerGroupTombstones(cg)...)
			}
		}
		if len(recs) == 0 {
			continue
		}
		if err := s.write(recs); err != nil {
			return
		}
		for _, e := range expired {
			s.deleteOffset(id, e[0].(string), e[1].(int32))
		}
		if deleteGroup {
			if g := s.groups[id]; g != nil {
				g.transition(stDead, now)
			}
			delete(s.groups, id)
			delete(s.cgs, id)
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

// deleteTopicOffsets writes tombstones for every offset of the topics.
func (s *shard) deleteTopicOffsets(topics []string) {
	type del struct {
		group, topic string
		part         int32
	}
	var recs []record
	var dels []del
	for g, byTopic := range s.offsets {
		for _, t := range topics {
			for p := range byTopic[t] {
				recs = append(recs, record{Key: offsetCommitKey(g, t, p)})
				dels = append(dels, del{g, t, p})
			}
		}
	}
	if err := s.write(recs); err != nil {
		return
	}
	for _, d := range dels {
		s.deleteOffset(d.group, d.topic, d.part)
	}
}
