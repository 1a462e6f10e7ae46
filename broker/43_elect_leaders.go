package broker

// ElectLeaders: v0-2 (client and controller listeners)
//
// Behavior (a Kafka broker forwards it to the controller;
// ReplicationControlManager.electLeaders), from the metadata image:
//   - Per requested partition: UNKNOWN_TOPIC_OR_PARTITION "No such topic as
//     <t>" / "No such partition as <t>-<p>"; ELECTION_NOT_NEEDED "Leader
//     election not needed for topic partition." when a preferred election
//     finds the preferred replica (the first one) leading, or an unclean one
//     finds a leader; PREFERRED_LEADER_NOT_AVAILABLE when the preferred
//     replica is not in the ISR or not an active broker;
//     ELIGIBLE_LEADERS_NOT_AVAILABLE when an unclean election finds no
//     active replica.
//   - Null topics: every partition of every topic, listing only those whose
//     election is needed (each topic appears, possibly with no partitions).
//   - A partition that would really change leader answers UNSUPPORTED_VERSION
//     "Leader elections on request are not implemented by kgo-broker": the
//     controller elects leaders only when a leader is lost, it has no
//     ElectLeaders (kafka-leader-election.sh) path yet.
//
// Version notes: v1: election type (KIP-460) and the top-level error code;
// v2: flexible.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(43, 0, 2, onBoth, handleElectLeaders) }

// ElectLeaders election types (ElectionType.java).
const (
	electionPreferred = 0
	electionUnclean   = 1
)

func handleElectLeaders(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ElectLeadersRequest)
	resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
	img := b.meta.Image()
	electionType := r.ElectionType
	if r.Version < 1 {
		electionType = electionPreferred
	}
	result := func(p int32, err *kerr.Error, msg string) kmsg.ElectLeadersResponseTopicPartition {
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = p
		if err != nil {
			rp.ErrorCode, rp.ErrorMessage = err.Code, strPtr(msg)
		}
		return rp
	}
	if r.Topics == nil {
		for _, name := range img.TopicNames() {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = name
			for _, p := range img.TopicByName(name).SortedPartitions() {
				if err, msg := electLeader(img, name, p.ID, electionType); err != kerr.ElectionNotNeeded {
					rt.Partitions = append(rt.Partitions, result(p.ID, err, msg))
				}
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return protocol.Response{Msg: resp}, nil
	}
	for _, t := range r.Topics {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			err, msg := electLeader(img, t.Topic, p, electionType)
			rt.Partitions = append(rt.Partitions, result(p, err, msg))
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return protocol.Response{Msg: resp}, nil
}

// electLeader is ReplicationControlManager.electLeader up to the point
// where a partition change would be written.
func electLeader(img *metadatacache.Image, topic string, partition int32, electionType int8) (*kerr.Error, string) {
	t := img.TopicByName(topic)
	if t == nil {
		return kerr.UnknownTopicOrPartition, "No such topic as " + topic
	}
	p := t.Partition(partition)
	if p == nil {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("No such partition as %s-%d", topic, partition)
	}
	active := func(id int32) bool {
		br := img.Broker(id)
		return br != nil && !br.Fenced && !br.InControlledShutdown
	}
	preferred := int32(-1)
	if len(p.Replicas) > 0 {
		preferred = p.Replicas[0]
	}
	switch {
	case electionType == electionPreferred && p.Leader == preferred,
		electionType == electionUnclean && p.Leader >= 0:
		return kerr.ElectionNotNeeded, "Leader election not needed for topic partition."
	case electionType == electionPreferred && (!p.InIsr(preferred) || !active(preferred)):
		return kerr.PreferredLeaderNotAvailable, "The preferred leader was not available."
	case electionType == electionUnclean && !slices.ContainsFunc(p.Replicas, active):
		return kerr.EligibleLeadersNotAvailable, "Eligible topic partition leaders are not available."
	case electionType != electionPreferred && electionType != electionUnclean:
		return kerr.InvalidRequest, fmt.Sprintf("Unknown election type %d", electionType)
	}
	return kerr.UnsupportedVersion, "Leader elections on request are not implemented by kgo-broker"
}
