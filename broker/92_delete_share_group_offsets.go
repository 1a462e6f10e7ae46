package broker

// DeleteShareGroupOffsets: v0 (client listeners; KIP-932,
// group.Coordinator.DeleteShareGroupOffsets)
//
// Behavior:
//   - Deletes an empty share group's share state of whole topics through
//     the persister (DeleteShareGroupState); the topics are recorded as
//     deleting first, so a failed deletion can be retried.
//   - Top-level GROUP_AUTHORIZATION_FAILED without DELETE on the group,
//     GROUP_ID_NOT_FOUND (no such share group), NON_EMPTY_GROUP,
//     INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS; per
//     topic TOPIC_AUTHORIZATION_FAILED without READ on the topic,
//     UNKNOWN_TOPIC_OR_PARTITION (unknown, or "There is no offset
//     information to delete."), and the persister's errors.
//   - While share.version is 0 (share groups off): a top-level
//     UNSUPPORTED_VERSION with Kafka's generic message "The version of API
//     is not supported." and no topics.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(92, 0, 0, onBroker, handleDeleteShareGroupOffsets) }

func handleDeleteShareGroupOffsets(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DeleteShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	switch {
	case !b.shareGroupsEnabled():
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = strPtr(unsupportedVersionMessage)
		return protocol.Response{Msg: resp}, nil
	case b.groups == nil:
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	case !b.authorize(req, opDelete, resGroup, r.GroupID):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return protocol.Response{Msg: resp}, nil
	}
	cp := *r
	cp.Topics = nil
	var denied []kmsg.DeleteShareGroupOffsetsResponseTopic
	for _, t := range r.Topics {
		if b.authorize(req, opRead, resTopic, t.Topic) {
			cp.Topics = append(cp.Topics, t)
			continue
		}
		rt := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		rt.Topic, rt.ErrorCode = t.Topic, kerr.TopicAuthorizationFailed.Code
		denied = append(denied, rt)
	}
	out := b.groups.DeleteShareGroupOffsets(ctx, &cp)
	if out.ErrorCode == 0 {
		out.Topics = append(out.Topics, denied...)
	}
	return protocol.Response{Msg: out}, nil
}
