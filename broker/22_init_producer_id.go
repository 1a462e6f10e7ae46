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
//   - Transactional ids: COORDINATOR_NOT_AVAILABLE (INVALID_REQUEST for "")
//     until the transaction coordinator exists.
//
// Version notes:
//   - v1: no change; v2: flexible; v3: producer id and epoch in the request
//     (KIP-360); v4: PRODUCER_FENCED; v5: KIP-890 (epoch bumps on each
//     transaction), no body change.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(22, 0, 5, onBroker, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.InitProducerIDRequest)
	return protocol.Response{Msg: b.replicas.InitProducerID(ctx, r)}, nil
}
