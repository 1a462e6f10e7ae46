package controller

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// ElectLeaders (43) v0-2, as ReplicationControlManager.electLeaders decides
// it (kafka-leader-election.sh; a broker forwards it in an Envelope, the
// CONTROLLER listener authorizes ALTER on the cluster).
//
// Per partition: UNKNOWN_TOPIC_OR_PARTITION for a topic or partition that
// does not exist; ELECTION_NOT_NEEDED when a PREFERRED election finds the
// first replica leading, or an UNCLEAN one finds a leader; otherwise the
// partition change builder runs with that election (PREFERRED: the first
// replica if it is a valid leader, else keep the leader or take another
// ISR (or, with the ISR empty, ELR) member; UNCLEAN: any valid leader, else
// the last known leader (ELR), else any active replica, which empties the
// ISR to the new leader and marks it RECOVERING). No change is
// PREFERRED_LEADER_NOT_AVAILABLE or ELIGIBLE_LEADERS_NOT_AVAILABLE. Null
// topics elect every partition of every topic and list only those whose
// election was needed; an empty list is answered at once. v0 has no
// election type (PREFERRED) and no top-level error.

// ElectLeaders election types (ElectionType.java).
const (
	electionTypePreferred int8 = 0
	electionTypeUnclean   int8 = 1
)

func (c *Controller) electLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	typ := req.ElectionType
	if req.Version < 1 {
		typ = electionTypePreferred
	}
	if typ != electionTypePreferred && typ != electionTypeUnclean {
		// electionType(): InvalidRequestException fails the whole request.
		return electLeadersError(req, newAPIError(kerr.InvalidRequest, "Unknown election type %d", typ))
	}
	if req.Topics != nil && len(req.Topics) == 0 {
		return resp
	}
	var recs []metadatacache.Record
	c.view(func(s *state) {
		mv := s.metadataVersion()
		if req.Topics == nil {
			names := make([]string, 0, len(s.topicsByName))
			for name := range s.topicsByName {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = name
				for pid := range s.topics[s.topicsByName[name]].parts {
					rec, e := electLeader(s, mv, name, int32(pid), typ)
					if e != nil && e.err == kerr.ElectionNotNeeded {
						continue
					}
					if rec != nil {
						recs = append(recs, rec)
					}
					rt.Partitions = append(rt.Partitions, electResult(int32(pid), e))
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return
		}
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, pid := range t.Partitions {
				rec, e := electLeader(s, mv, t.Topic, pid, typ)
				if rec != nil {
					recs = append(recs, rec)
				}
				rt.Partitions = append(rt.Partitions, electResult(pid, e))
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
	if len(recs) > maxRecordsPerUserOp {
		return electLeadersError(req, errBatchTooLarge)
	}
	if len(recs) > 0 {
		if _, err := c.write(ctx, recs); err != nil {
			return electLeadersError(req, defaultAPIError(kerr.NotController))
		}
		c.log.Info("elected leaders on request", zap.Int8("election_type", typ), zap.Int("partitions", len(recs)))
	}
	return resp
}

func electResult(pid int32, e *apiError) kmsg.ElectLeadersResponseTopicPartition {
	rp := kmsg.NewElectLeadersResponseTopicPartition()
	rp.Partition, rp.ErrorCode, rp.ErrorMessage = pid, e.code(), e.message()
	return rp
}

// electLeadersError is ElectLeadersRequest.getErrorResponse: the error at
// the top level (v1+) and on every partition asked for.
func electLeadersError(req *kmsg.ElectLeadersRequest, e *apiError) *kmsg.ElectLeadersResponse {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	resp.ErrorCode = e.code()
	for _, t := range req.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, pid := range t.Partitions {
			rt.Partitions = append(rt.Partitions, electResult(pid, e))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// electLeader is ReplicationControlManager.electLeader: the change record
// of one partition's election, or why there is none.
func electLeader(s *state, mv int16, topic string, pid int32, typ int8) (*metadatacache.PartitionChangeRecord, *apiError) {
	id, ok := s.topicsByName[topic]
	if !ok {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "No such topic as %s", topic)
	}
	t := s.topics[id]
	if t == nil {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "No such topic id as %s", uuidString(id))
	}
	if pid < 0 || int(pid) >= len(t.parts) {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "%s", fmt.Sprintf("No such partition as %s-%d", topic, pid))
	}
	p := t.parts[pid]
	if typ == electionTypePreferred && len(p.replicas) > 0 && p.leader == p.replicas[0] ||
		typ == electionTypeUnclean && p.leader != -1 {
		return nil, newAPIError(kerr.ElectionNotNeeded, "Leader election not needed for topic partition.")
	}
	b := s.newChangeBuilder(mv, t, pid, p, s.active)
	b.election = electPreferred
	if typ == electionTypeUnclean {
		b.election = electUnclean
	}
	rec := b.build()
	if rec == nil {
		if typ == electionTypePreferred {
			return nil, newAPIError(kerr.PreferredLeaderNotAvailable, "The preferred leader was not available.")
		}
		return nil, newAPIError(kerr.EligibleLeadersNotAvailable, "Eligible topic partition leaders are not available.")
	}
	return rec, nil
}
