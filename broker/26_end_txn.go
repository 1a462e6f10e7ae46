package broker

// EndTxn: v0-5 (txn.Coordinator.HandleEndTxn)
//
// Behavior (KafkaApis.handleEndTxnRequest, TransactionCoordinator.endTransaction):
//   - Commit or abort: PrepareCommit/PrepareAbort is written to
//     __transaction_state and answered once committed; the markers are
//     then written to every partition of the transaction (grouped per
//     leader) and CompleteCommit/CompleteAbort follows.
//   - v0-4 (transaction version 0/1 rules): the epoch must be the current
//     one; a commit of CompleteCommit or an abort of CompleteAbort is a
//     retry (NONE); Empty and the other mismatches are INVALID_TXN_STATE.
//   - v5 (transaction version 2, KIP-890 part 2): every commit and abort
//     bumps the epoch; a retry is recognised by the epoch one below (or
//     the previous producer id at epoch 32766 after an overflow); an abort
//     is allowed from Empty and the Complete states; an exhausted epoch
//     moves the producer to a new producer id at epoch 0. The answer
//     carries the producer id and epoch to continue with.
//   - Errors: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
//     CONCURRENT_TRANSACTIONS, INVALID_TXN_STATE, NOT_COORDINATOR,
//     COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
//
// Version notes: v1 no change; v2 PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
// before); v3 flexible; v4 TRANSACTION_ABORTABLE (KIP-890); v5 epoch bump
// per transaction, ProducerId/ProducerEpoch in the response (KIP-890).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(26, 0, 5, onBroker, handleEndTxn) }

func handleEndTxn(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.EndTxnRequest)
	if b.txn == nil {
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.txn.HandleEndTxn(ctx, r)}, nil
}
