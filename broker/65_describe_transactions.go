package broker

// DescribeTransactions: v0 (txn.Coordinator.HandleDescribeTransactions)
//
// Behavior (KafkaApis.handleDescribeTransactionsRequest,
// TransactionCoordinator.handleDescribeTransactions):
//   - Each transactional id of a __transaction_state partition this node
//     leads: its state, producer id and epoch, timeout, start time (-1 with
//     no transaction) and partitions (while markers are written, those not
//     yet written).
//   - TRANSACTIONAL_ID_NOT_FOUND for an unknown id or one being expired;
//     INVALID_REQUEST for ""; NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS
//     for ids of partitions not led / still loading.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(65, 0, 0, onBroker, handleDescribeTransactions) }

func handleDescribeTransactions(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeTransactionsRequest)
	if b.txn == nil {
		resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
		for _, id := range r.TransactionalIDs {
			st := kmsg.NewDescribeTransactionsResponseTransactionState()
			st.TransactionalID, st.ErrorCode = id, kerr.CoordinatorNotAvailable.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
		}
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.txn.HandleDescribeTransactions(ctx, r)}, nil
}
