package broker

// OffsetFetch: v1-10 (group.Coordinator.OffsetFetch)
//
// Behavior:
//   - Committed offset, leader epoch and metadata per partition; -1 / -1 /
//     "" where nothing is committed (not an error), including unknown groups.
//   - Topics null (v2+) means every partition the group has offsets for.
//   - v10 names topics by id: an id the metadata does not know answers
//     UNKNOWN_TOPIC_ID on each partition; for all topics, each gets its
//     current id and topics that no longer exist are left out.
//   - v8+: several groups, each with its own error. v9: KIP-848 member id
//     and epoch are checked (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH).
//   - Offsets a transaction commits (TxnOffsetCommit) are not visible until
//     its COMMIT marker. require_stable (v7+): partitions with such pending
//     offsets answer UNSTABLE_OFFSET_COMMIT (offset -1), and the client
//     retries; without it the committed offset is answered.
//   - Group errors: INVALID_GROUP_ID, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS (top level on v2-7, per partition on v1).
//
// Version notes: v2 all topics, top-level error; v3 throttle; v5 leader
// epoch; v6 flexible; v7 require_stable; v8 groups; v9 member epoch; v10
// topic ids instead of names (KIP-848).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(9, 1, 10, onBroker, handleOffsetFetch) }

func handleOffsetFetch(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.OffsetFetchRequest)
	if b.groups == nil {
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		for _, g := range r.Groups {
			rg := kmsg.NewOffsetFetchResponseGroup()
			rg.Group, rg.ErrorCode = g.Group, kerr.NotCoordinator.Code
			resp.Groups = append(resp.Groups, rg)
		}
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.groups.OffsetFetch(r)}, nil
}
