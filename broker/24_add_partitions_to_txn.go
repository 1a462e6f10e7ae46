package broker

// AddPartitionsToTxn: v0-5 (txn.Coordinator.HandleAddPartitionsToTxn)
//
// Behavior (KafkaApis.handleAddPartitionsToTxnRequest):
//   - v0-3 come from producers: the partitions join the producer's
//     transaction (Ongoing), written to __transaction_state; partitions
//     already in an ongoing transaction answer at once. A partition that
//     does not exist (UNKNOWN_TOPIC_OR_PARTITION) or of an internal topic
//     (TOPIC_AUTHORIZATION_FAILED) fails the whole request, the others
//     answer OPERATION_NOT_ATTEMPTED.
//   - v4+ come from partition leaders (KIP-890): a batch of transactions,
//     each VerifyOnly (is the partition in the ongoing transaction? NONE,
//     else TRANSACTION_ABORTABLE) or, for transaction version 2 producers,
//     added.
//   - Errors: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
//     CONCURRENT_TRANSACTIONS (a write in flight, or PrepareCommit /
//     PrepareAbort), NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
//     COORDINATOR_NOT_AVAILABLE, INVALID_REQUEST for an empty id.
//
// Version notes:
//   - v1: no change; v2: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before);
//     v3: flexible
//   - v4: batched Transactions with VerifyOnly, for brokers only (KIP-890)
//   - v5: TRANSACTION_ABORTABLE (KIP-890)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(24, 0, 5, onBroker, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AddPartitionsToTxnRequest)
	if b.txn == nil {
		resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.txn.HandleAddPartitionsToTxn(ctx, r)}, nil
}
