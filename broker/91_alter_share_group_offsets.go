package broker

// AlterShareGroupOffsets: v0 (client listeners; KIP-932,
// group.Coordinator.AlterShareGroupOffsets)
//
// Behavior:
//   - Sets the start offsets of an empty share group's partitions (the
//     group need not exist yet, kafka-share-groups.sh --reset-offsets):
//     the partitions are initialized again through the persister
//     (InitializeShareGroupState with the group epoch as state epoch),
//     which replaces their share state.
//   - Top-level GROUP_AUTHORIZATION_FAILED without READ on the group,
//     NON_EMPTY_GROUP (members), GROUP_ID_NOT_FOUND (a classic or
//     consumer group), INVALID_GROUP_ID, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS; per partition
//     TOPIC_AUTHORIZATION_FAILED without READ on the topic,
//     UNKNOWN_TOPIC_OR_PARTITION, and the persister's errors.
//   - While share.version is 0 (share groups off): a top-level
//     UNSUPPORTED_VERSION with Kafka's generic message "The version of API
//     is not supported." and no topics.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(91, 0, 0, onBroker, handleAlterShareGroupOffsets) }

// unsupportedVersionMessage is UnsupportedVersionException's default
// message, which Kafka puts in the share offsets APIs' ErrorMessage.
const unsupportedVersionMessage = "The version of API is not supported."

func handleAlterShareGroupOffsets(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	switch {
	case !b.shareGroupsEnabled():
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = strPtr(unsupportedVersionMessage)
		return protocol.Response{Msg: resp}, nil
	case b.groups == nil:
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	case !b.authorize(req, opRead, resGroup, r.GroupID):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return protocol.Response{Msg: resp}, nil
	}
	cp := *r
	cp.Topics = nil
	var denied []kmsg.AlterShareGroupOffsetsResponseTopic
	for _, t := range r.Topics {
		if b.authorize(req, opRead, resTopic, t.Topic) {
			cp.Topics = append(cp.Topics, t)
			continue
		}
		rt := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		denied = append(denied, rt)
	}
	out := b.groups.AlterShareGroupOffsets(ctx, &cp)
	if out.ErrorCode == 0 {
		out.Topics = append(out.Topics, denied...)
	}
	return protocol.Response{Msg: out}, nil
}
