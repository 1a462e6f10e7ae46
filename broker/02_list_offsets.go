package broker

// ListOffsets: v1-11
//
// Behavior (replication.ReplicaManager.ListOffsets):
//   - -2 earliest and -4 earliest-local: the log start offset; -1 latest: the
//     high watermark (last stable offset under READ_COMMITTED; the log end for
//     replica ids >= 0) with the current leader epoch; -3 max timestamp and
//     timestamps >= 0: the time index, -1/-1 when nothing is found below the
//     bound; -5 latest-tiered and -6 earliest-pending-upload: offset -1,
//     epoch -1 (no tiered storage).
//   - Current leader epoch checks: FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH;
//     NOT_LEADER_OR_FOLLOWER unless replica id -2 (debugging);
//     UNKNOWN_TOPIC_OR_PARTITION; INVALID_REQUEST for a partition named twice;
//     UNSUPPORTED_VERSION for a special timestamp newer than the version.
//   - OFFSET_NOT_AVAILABLE (v5+, LEADER_NOT_AVAILABLE before) while a new
//     leader's high watermark is below its epoch start (KIP-207).
//
// Version notes:
//   - v1: single offset + timestamp (v0 with old-style offsets is gone in 4.x)
//   - v2: isolation level
//   - v4: current leader epoch in the request, leader epoch in the answer
//   - v5: OFFSET_NOT_AVAILABLE
//   - v6: flexible
//   - v7: -3 max timestamp (KIP-734)
//   - v8: -4 earliest local (KIP-405)
//   - v9: -5 latest tiered (KIP-1005)
//   - v10: timeout_ms (KIP-1075), no effect without tiered storage
//   - v11: -6 earliest pending upload (KIP-1023)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(2, 1, 11, onBroker, handleListOffsets) }

func handleListOffsets(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ListOffsetsRequest)
	return protocol.Response{Msg: b.replicas.ListOffsets(r)}, nil
}
