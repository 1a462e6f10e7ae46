package broker

// OffsetForLeaderEpoch: v2-4
//
// Behavior (replication.ReplicaManager.OffsetForLeaderEpoch), on the leader:
//   - For each partition the largest leader epoch <= the requested one and
//     its end offset (the log end offset for the current epoch), from the
//     leader-epoch-checkpoint; epoch -1 and offset -1 when the log knows no
//     such epoch.
//   - Current leader epoch checks: FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH;
//     NOT_LEADER_OR_FOLLOWER on a follower; UNKNOWN_TOPIC_OR_PARTITION.
//   - replica_id (v3+) -1 is a consumer (KIP-320 truncation detection),
//     >= 0 a follower; both are answered the same way.
//
// Version notes:
//   - v2: current leader epoch in the request, throttle in the response
//   - v3: replica id
//   - v4: flexible

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(23, 2, 4, onBroker, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.OffsetForLeaderEpochRequest)
	return protocol.Response{Msg: b.replicas.OffsetForLeaderEpoch(r)}, nil
}
