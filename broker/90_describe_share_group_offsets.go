package broker

// DescribeShareGroupOffsets: v0-1 (client listeners; KIP-932,
// group.Coordinator.DescribeShareGroupOffsets)
//
// Behavior:
//   - Per group, per partition: the share-partition start offset and its
//     leader epoch as the share coordinator holds them
//     (ReadShareGroupStateSummary through the persister). Partitions
//     without share state, and topics the metadata does not know, answer
//     start offset -1 without an error, as Kafka. Topics null: every
//     partition with share state (kafka-share-groups.sh --describe).
//   - GROUP_AUTHORIZATION_FAILED without DESCRIBE on the group; requested
//     topics without DESCRIBE answer TOPIC_AUTHORIZATION_FAILED per
//     partition, and are left out of an all-topics answer;
//     INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//     COORDINATOR_NOT_AVAILABLE (the share coordinator cannot be asked).
//   - UNSUPPORTED_VERSION for every group, no topics, while share.version
//     is 0 (share groups off).
//
// Version notes: v1: lag in the response (KIP-1226): the partition's
// latest offset minus the start offset minus the records already
// delivered past it (-1 when unknown; v0 leaves it out).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(90, 0, 1, onBroker, handleDescribeShareGroupOffsets) }

func handleDescribeShareGroupOffsets(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range r.Groups {
		var rg kmsg.DescribeShareGroupOffsetsResponseGroup
		switch {
		case !b.shareGroupsEnabled():
			rg = kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, kerr.UnsupportedVersion.Code
		case b.groups == nil:
			rg = kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, kerr.NotCoordinator.Code
		case !b.authorize(req, opDescribe, resGroup, g.GroupID):
			rg = kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			rg.GroupID, rg.ErrorCode = g.GroupID, kerr.GroupAuthorizationFailed.Code
		default:
			rg = b.describeShareGroupOffsets(ctx, req, g)
			// The coordinator's errors carry Kafka's message
			// (Errors.message()), as GroupCoordinatorService answers them.
			if rg.ErrorCode != 0 && rg.ErrorMessage == nil {
				if e, ok := kerr.ErrorForCode(rg.ErrorCode).(*kerr.Error); ok {
					rg.ErrorMessage = strPtr(e.Description)
				}
			}
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return protocol.Response{Msg: resp}, nil
}

// describeShareGroupOffsets asks the coordinator about the topics the
// client may describe and answers the others TOPIC_AUTHORIZATION_FAILED.
func (b *Broker) describeShareGroupOffsets(ctx context.Context, req *protocol.Request, g kmsg.DescribeShareGroupOffsetsRequestGroup) kmsg.DescribeShareGroupOffsetsResponseGroup {
	if g.Topics == nil {
		rg := b.groups.DescribeShareGroupOffsets(ctx, g)
		kept := rg.Topics[:0]
		for _, t := range rg.Topics {
			if b.authorize(req, opDescribe, resTopic, t.Topic) {
				kept = append(kept, t)
			}
		}
		rg.Topics = kept
		return rg
	}
	allowed := g
	allowed.Topics = []kmsg.DescribeShareGroupOffsetsRequestGroupTopic{}
	denied := map[int]bool{}
	for i, t := range g.Topics {
		if b.authorize(req, opDescribe, resTopic, t.Topic) {
			allowed.Topics = append(allowed.Topics, t)
		} else {
			denied[i] = true
		}
	}
	rg := b.groups.DescribeShareGroupOffsets(ctx, allowed)
	if rg.ErrorCode != 0 || len(denied) == 0 {
		return rg
	}
	// Answer in the request's order.
	got := rg.Topics
	rg.Topics = nil
	for i, t := range g.Topics {
		if !denied[i] {
			if len(got) > 0 {
				rg.Topics = append(rg.Topics, got[0])
				got = got[1:]
			}
			continue
		}
		rt := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
			rp.Partition, rp.StartOffset, rp.LeaderEpoch, rp.Lag = p, -1, -1, -1
			rp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		rg.Topics = append(rg.Topics, rt)
	}
	return rg
}
