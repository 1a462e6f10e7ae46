package broker

// InitProducerId: v0-5
//
// Behavior (replication.ReplicaManager.InitProducerID):
//   - Idempotent producers (null transactional id): a new producer id with
//     epoch 0 from the broker's block of ids, which it gets from the active
//     controller with AllocateProducerIDs (blocks of 1000, the next block
//     fetched when 90% are used). Like Kafka, a request naming an existing
//     producer id and epoch (v3+) also gets a new id: Kafka bumps epochs only
//     for transactional producers. COORDINATOR_LOAD_IN_PROGRESS (retriable)
//     when no block could be had in time.
//   - Producer id -1 with an epoch, or the reverse: INVALID_REQUEST.
//   - Transactional ids go to the transaction coordinator
//     (txn.Coordinator.HandleInitProducerID): a new producer id for a new
//     transactional id, else an epoch bump fencing older producers; KIP-360
//     resumption with the given producer id and epoch; an ongoing
//     transaction is aborted first (CONCURRENT_TRANSACTIONS until it
//     completes); an exhausted epoch moves to a new producer id; a timeout
//     above transaction.max.timeout.ms is INVALID_TRANSACTION_TIMEOUT;
//     INVALID_REQUEST for "". NOT_COORDINATOR /
//     COORDINATOR_LOAD_IN_PROGRESS as the coordinator answers.
//
// Version notes:
//   - v1: no change; v2: flexible; v3: producer id and epoch in the request
//     (KIP-360); v4: PRODUCER_FENCED (INVALID_PRODUCER_EPOCH before); v5:
//     KIP-890 (epoch bumps on each transaction), no body change. v6 (KIP-939
//     two-phase commit) is unstable in Kafka 4.4 and not served.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(22, 0, 5, onBroker, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.InitProducerIDRequest)
	if r.TransactionalID != nil && b.txn != nil {
		return protocol.Response{Msg: b.txn.HandleInitProducerID(ctx, r)}, nil
	}
	return protocol.Response{Msg: b.replicas.InitProducerID(ctx, r)}, nil
}
