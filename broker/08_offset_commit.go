package broker

// OffsetCommit: v2-10 (group.Coordinator.OffsetCommit)
//
// Behavior:
//   - Per partition UNKNOWN_TOPIC_OR_PARTITION for topics or partitions the
//     metadata does not know (UNKNOWN_TOPIC_ID for a v10 topic id it does
//     not know); OFFSET_METADATA_TOO_LARGE above
//     offset.metadata.max.bytes.
//   - Generation -1 with no member id: a simple commit, accepted while the
//     group is Empty (creates a simple group if there is none). Otherwise
//     UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION (GROUP_ID_NOT_FOUND
//     on v9 for an unknown group), REBALANCE_IN_PROGRESS while
//     CompletingRebalance; KIP-848 members: STALE_MEMBER_EPOCH, and
//     UNSUPPORTED_VERSION below v9.
//   - Offsets are written to __consumer_offsets (OffsetCommitKey v1 /
//     OffsetCommitValue v3, or v1 with an expire timestamp when v2-4 carry a
//     retention time) and visible to OffsetFetch once committed (HW).
//   - INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//     COORDINATOR_NOT_AVAILABLE on every partition.
//
// Version notes:
//   - v2-4: retention time; v3: throttle; v5: no retention time
//   - v6: leader epoch; v7: group instance id; v8: flexible
//   - v9: KIP-848 member epochs, GROUP_ID_NOT_FOUND
//   - v10: topics named by id instead of name (KIP-848)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(8, 2, 10, onBroker, handleOffsetCommit) }

func handleOffsetCommit(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.OffsetCommitRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.NotCoordinator.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.OffsetCommit(r)}, nil
}
