package group

// The coordinator's streams group APIs (KIP-1071), as
// GroupCoordinatorService.streamsGroupHeartbeat / streamsGroupDescribe.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StreamsTopic is an internal topic a heartbeat found missing: the broker
// creates it (KafkaApis' AutoTopicCreationManager.createStreamsInternalTopics).
type StreamsTopic struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // 0: the broker's default
	Configs           map[string]string
}

// StreamsGroupHeartbeat serves StreamsGroupHeartbeat v0-1 and returns the
// internal topics to create.
func (c *Coordinator) StreamsGroupHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest, clientID, clientHost string) (*kmsg.StreamsGroupHeartbeatResponse, []StreamsTopic) {
	fail := func(err error) *kmsg.StreamsGroupHeartbeatResponse {
		r := req.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
		r.ErrorCode = code(err)
		var me *msgError
		if errors.As(err, &me) {
			r.ErrorMessage = &me.msg
		}
		r.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
		return r
	}
	if err := validateStreamsHeartbeat(req); err != nil {
		return fail(err), nil
	}
	var res *streamsResult
	if err := c.with(req.Group, func(s *shard) error {
		var err error
		res, err = s.streamsHeartbeat(req, clientID, clientHost)
		return err
	}); err != nil {
		return fail(err), nil
	}
	var create []StreamsTopic
	for _, t := range res.create {
		st := StreamsTopic{Name: t.name, Partitions: t.partitions, ReplicationFactor: t.rf, Configs: map[string]string{}}
		for _, kv := range t.configs {
			st.Configs[kv[0]] = kv[1]
		}
		create = append(create, st)
	}
	res.resp.Version = req.Version
	return res.resp, create
}

// validateStreamsHeartbeat is GroupCoordinatorService.throwIfStreamsGroupHeartbeatRequestIsInvalid.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) error {
	inv := func(msg string) error { return &msgError{err: kerr.InvalidRequest, msg: msg} }
	switch {
	case req.MemberID == "":
		return inv("MemberId can't be empty.")
	case req.Group == "":
		return inv("GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return inv("InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return inv("RackId can't be empty.")
	}
	if req.MemberEpoch == 0 {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return inv("RebalanceTimeoutMs must be provided in first request.")
		// Utils.throwIfNotEmptyCollection: null is not empty.
		case req.ActiveTasks == nil || len(req.ActiveTasks) > 0:
			return inv("ActiveTasks must be empty when (re-)joining.")
		case req.StandbyTasks == nil || len(req.StandbyTasks) > 0:
			return inv("StandbyTasks must be empty when (re-)joining.")
		case req.WarmupTasks == nil || len(req.WarmupTasks) > 0:
			return inv("WarmupTasks must be empty when (re-)joining.")
		case req.Topology == nil:
			return inv("Topology must be non-null when (re-)joining.")
		}
		if err := validateTopology(req.Topology); err != nil {
			return err
		}
	} else if req.MemberEpoch == streamsLeaveGroupStaticEpoch {
		if req.InstanceID == nil {
			return inv("InstanceId can't be null.")
		}
	} else if req.MemberEpoch < streamsLeaveGroupStaticEpoch {
		return inv(fmt.Sprintf("MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch))
	}
	if req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil {
		if req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil {
			return inv("If one task-type is non-null, all must be non-null.")
		}
	}
	if req.MemberEpoch != 0 && req.Topology != nil {
		return inv("Topology can only be provided when (re-)joining.")
	}
	return nil
}

// validateTopology is throwIfInvalidTopology: changelog topics have no
// partition count; STREAMS_INVALID_TOPOLOGY otherwise (StreamsTopology
// checks done by the coordinator).
func validateTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) error {
	for _, s := range t.Subtopologies {
		for _, cl := range s.StateChangelogTopics {
			if cl.NumPartitions != 0 {
				return &msgError{err: kerr.StreamsInvalidTopology, msg: fmt.Sprintf("Changelog topic %s must have an undefined partition count, but it is set to %d.", cl.Topic, cl.NumPartitions)}
			}
		}
		if len(s.SourceTopics) == 0 && len(s.SourceTopicRegex) == 0 && len(s.RepartitionSourceTopics) == 0 {
			return &msgError{err: kerr.StreamsInvalidTopology, msg: "No source topics found for subtopology " + s.SubtopologyID}
		}
	}
	return nil
}

// StreamsGroupDescribe serves StreamsGroupDescribe v0-1.
func (c *Coordinator) StreamsGroupDescribe(req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	r := req.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewStreamsGroupDescribeResponseGroup()
		rg.Group = id
		rg.AuthorizedOperations = -2147483648
		rg.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
		if id == "" {
			rg.ErrorCode = kerr.InvalidGroupID.Code
		} else if err := c.with(id, func(s *shard) error { s.describeStreamsGroup(id, &rg); return nil }); err != nil {
			rg.ErrorCode = code(err)
		}
		r.Groups = append(r.Groups, rg)
	}
	return r
}

// validateOffsetCommit is StreamsGroup.validateOffsetCommit: members
// commit with their member epoch; a partition of a task assigned at a
// later epoch than the request's is STALE_MEMBER_EPOCH (the assignment
// epochs of the current assignment).
func (g *streamsGroup) validateOffsetCommit(memberID string, instanceID *string, epoch int32, version int16, txn bool) (func(topic string, p int32) error, error) {
	m := g.members[memberID]
	var memberEpoch *int32
	if m != nil {
		memberEpoch = &m.epoch
	}
	if done, err := checkMemberCommit(len(g.members), memberEpoch, memberID, instanceID, epoch, version, txn); done || err != nil {
		return nil, err
	}
	subsOf := g.topicSubtopologies()
	return func(topic string, p int32) error {
		for _, sub := range subsOf[topic] {
			if e, ok := m.activeEpochs[sub][p]; ok && e <= epoch {
				return nil
			}
		}
		return kerr.StaleMemberEpoch
	}, nil
}

// topicSubtopologies maps each source and repartition source topic to the
// subtopologies reading it.
func (g *streamsGroup) topicSubtopologies() map[string][]string {
	out := map[string][]string{}
	if g.topology == nil {
		return out
	}
	for _, s := range g.topology.subs {
		for _, t := range s.sources {
			out[t] = append(out[t], s.id)
		}
		for _, t := range s.repartitionSources {
			out[t.name] = append(out[t.name], s.id)
		}
	}
	return out
}

func (g *streamsGroup) validateOffsetFetch(memberID *string, epoch int32) error {
	return checkMemberFetch(memberID, epoch, func(id string) (int32, bool) {
		if m := g.members[id]; m != nil {
			return m.epoch, true
		}
		return 0, false
	})
}

// isSubscribedToTopic is StreamsGroup.isSubscribedToTopic: a topic of its
// topology while it has members.
func (g *streamsGroup) isSubscribedToTopic(topic string) bool {
	if len(g.members) == 0 || g.topology == nil {
		return false
	}
	_, ok := g.topicSubtopologies()[topic]
	return ok
}
