package broker

// ListTransactions: v0-2 (txn.Coordinator.HandleListTransactions)
//
// Behavior (KafkaApis.handleListTransactionsRequest,
// TransactionStateManager.listTransactionStates):
//   - The transactions of every __transaction_state partition this node
//     leads (ids being expired left out), sorted by transactional id.
//   - StateFilters by Kafka's state names (case-sensitive); unknown names
//     are returned in UnknownStateFilters and match nothing.
//     ProducerIdFilters.
//   - COORDINATOR_LOAD_IN_PROGRESS while a partition loads.
//
// Version notes:
//   - v1: DurationFilter, only transactions running longer (KIP-994)
//   - v2: TransactionalIdPattern, an RE2 expression the whole id must match;
//     INVALID_REGULAR_EXPRESSION when it does not compile (KIP-1152)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(66, 0, 2, onBroker, handleListTransactions) }

func handleListTransactions(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ListTransactionsRequest)
	if b.txn == nil {
		resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return protocol.Response{Msg: resp}, nil
	}
	return protocol.Response{Msg: b.txn.HandleListTransactions(ctx, r)}, nil
}
