package broker

// DeleteRecords: v0-2
//
// Behavior (replication.ReplicaManager.DeleteRecords):
//   - On the leader only (NOT_LEADER_OR_FOLLOWER elsewhere,
//     UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not know):
//     the log start offset moves up to the requested offset; -1 means the high
//     watermark. An offset below 0 or beyond the high watermark is
//     OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy has no delete is
//     POLICY_VIOLATION; __consumer_offsets and __transaction_state are
//     INVALID_TOPIC_EXCEPTION. Segments wholly below the new log start offset
//     are deleted right away.
//   - The answer carries the low watermark: the smallest log start offset of
//     the leader and its followers. It waits up to timeout_ms for the
//     followers to catch up (DelayedDeleteRecords), REQUEST_TIMED_OUT after.
//   - An I/O error (the log dir went offline) is KAFKA_STORAGE_ERROR.
//
// Version notes:
//   - v1: same as v0 (throttle time behaviour, KIP-219)
//   - v2: flexible

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(21, 0, 2, onBroker, handleDeleteRecords) }

func handleDeleteRecords(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DeleteRecordsRequest)
	return protocol.Response{Msg: b.replicas.DeleteRecords(ctx, r)}, nil
}
