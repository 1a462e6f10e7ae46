package broker

// TxnOffsetCommit: v0-6 (group.Coordinator.TxnOffsetCommit)
//
// Behavior:
//   - Sent by a transactional producer (sendOffsetsToTransaction) to the
//     group coordinator: the offsets are written to __consumer_offsets in a
//     transactional batch of the producer and stay pending, invisible to
//     OffsetFetch, until the transaction coordinator's COMMIT marker
//     (WriteTxnMarkers) makes them the committed offsets; ABORT drops them.
//     OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT for
//     partitions with pending offsets.
//   - Per partition UNKNOWN_TOPIC_OR_PARTITION for topics or partitions the
//     metadata does not know (v6: UNKNOWN_TOPIC_ID for unknown topic ids);
//     OFFSET_METADATA_TOO_LARGE above offset.metadata.max.bytes.
//   - The producer's transaction is verified with its transaction
//     coordinator first (KIP-890); v5+ (transaction.version 2) also adds
//     the partition to the transaction. Verification errors as Kafka:
//     INVALID_PRODUCER_EPOCH, INVALID_TXN_STATE (TRANSACTION_ABORTABLE from
//     v4), COORDINATOR_LOAD_IN_PROGRESS for network failures.
//   - Group checks (KIP-447, v3+): generation -1 with no member id commits
//     for any group (a simple group is created if there is none);
//     otherwise UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION
//     (GROUP_ID_NOT_FOUND from v6 for an unknown group); KIP-848 members:
//     member epoch checks as OffsetCommit, a stale epoch is
//     ILLEGAL_GENERATION before v6 and STALE_MEMBER_EPOCH from v6.
//   - INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//     COORDINATOR_NOT_AVAILABLE on every partition.
//
// Version notes:
//   - v1: same as v0; v2: committed leader epoch
//   - v3: flexible; member id, generation, group instance id (KIP-447)
//   - v4: TRANSACTION_ABORTABLE (KIP-890)
//   - v5: transaction.version 2: the commit adds the partition to the
//     transaction (no AddOffsetsToTxn, KIP-890 part 2)
//   - v6: topic ids instead of names (KIP-1319); GROUP_ID_NOT_FOUND and
//     STALE_MEMBER_EPOCH

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(28, 0, 6, onBroker, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.TxnOffsetCommitRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, kerr.NotCoordinator.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.TxnOffsetCommit(ctx, r)}, nil
}
