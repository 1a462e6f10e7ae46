package broker

// AddOffsetsToTxn: v0-4 (txn.Coordinator.HandleAddOffsetsToTxn)
//
// Behavior (KafkaApis.handleAddOffsetsToTxnRequest):
//   - The group's __consumer_offsets partition (abs(hashCode(group)) % the
//     topic's partition count in the image, offsets.topic.num.partitions
//     before it exists) joins the producer's transaction, so that its
//     TxnOffsetCommit offsets get the transaction's marker. Always with
//     transaction version 0 rules: only producers before TV2 send it.
//   - Errors as AddPartitionsToTxn v0-3.
//
// Version notes: v1 no change; v2 PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before); v3 flexible; v4 TRANSACTION_ABORTABLE (KIP-890).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(25, 0, 4, onBroker, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AddOffsetsToTxnRequest)
	if b.txn == nil {
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.txn.HandleAddOffsetsToTxn(ctx, r, b.offsetsPartition(r.Group))}, nil
}
