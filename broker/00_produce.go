package broker

// Produce: v3-13 served; ApiVersions advertises v0-13 as Kafka 4.x does
// (KAFKA-18659: librdkafka needs min 0 to be advertised) while v0-2 (message
// sets, magic 0/1) close the connection, as Kafka 4 does.
//
// Behavior:
//   - replication.ReplicaManager.Produce does the work: per partition
//     UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID on v13), INVALID_RECORD
//     unless exactly one magic-2 batch, INVALID_REQUIRED_ACKS,
//     INVALID_TOPIC_EXCEPTION for internal topics, NOT_LEADER_OR_FOLLOWER,
//     NOT_ENOUGH_REPLICAS, and the log's validation errors (CORRUPT_MESSAGE,
//     MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_TIMESTAMP with
//     per-record errors, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
//     UNKNOWN_PRODUCER_ID; a duplicate batch answers its original offset).
//   - Authorization (authz.go): WRITE on the transactional id when the
//     request has transactional records (TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//     on every partition), WRITE on each topic (TOPIC_AUTHORIZATION_FAILED,
//     whether the topic exists or not). Kafka 4 no longer asks
//     IDEMPOTENT_WRITE for idempotent batches (KIP-679: WRITE on the topic
//     implies it).
//   - acks=all waits for the high watermark up to timeout_ms
//     (REQUEST_TIMED_OUT).
//   - acks=0: no response; any partition error closes the connection, as
//     Kafka does so the producer notices.
//   - Transactional batches without a transactional id answer
//     TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition; batches of
//     more than one transactional producer, INVALID_PRODUCER_ID_MAPPING on
//     every partition. With a transactional id, the partitions where the
//     producer has no open transaction are verified with its transaction
//     coordinator first (KIP-890, transaction.partition.verification.enable;
//     replication/txn.go and txn_verifier.go): INVALID_TXN_STATE when the
//     partition is not in the transaction, NOT_ENOUGH_REPLICAS ("Unable to
//     verify ... Underlying error: X") for the coordinator's retriable
//     errors; a write the log finds unverified (a marker came in between)
//     is INVALID_TXN_STATE too.
//   - Quotas (quotas.go): the request's size counts against the client's
//     producer_byte_rate; a violation answers at once with throttle_time_ms
//     and mutes the connection (KIP-219), also for acks=0 (no answer, the
//     connection muted), which the request quota does not count.
//
// Version notes:
//   - v3: transactional id; magic 2 only
//   - v5: log start offset in the response
//   - v7: zstd allowed
//   - v8: per-record errors and error message (KIP-467)
//   - v9: flexible
//   - v10: CurrentLeader and NodeEndpoints on NOT_LEADER_OR_FOLLOWER (KIP-951)
//   - v11: transaction verification semantics (KIP-890), no body change:
//     the client handles TRANSACTION_ABORTABLE (older versions get
//     INVALID_TXN_STATE instead)
//   - v12: no body change (KIP-890 part 2, transaction.version 2): the
//     leader adds the partition to the transaction itself (also with
//     verification off) and retries CONCURRENT_TRANSACTIONS for up to
//     add.partitions.to.txn.retry.backoff.max.ms, answering it unmapped
//   - v13: topic ids instead of names (KIP-516)

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/replication"
)

func init() { regKey(0, 0, 13, onBroker, handleProduce) }

func handleProduce(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ProduceRequest)
	if r.Version < 3 {
		return protocol.Response{}, fmt.Errorf("produce v%d (message sets) is not supported", r.Version)
	}
	var auth *replication.ProduceAuth
	if b.authorizing(req) {
		// KafkaApis.handleProduceRequest: WRITE on the transactional id
		// (for transactional records), WRITE on each topic.
		auth = &replication.ProduceAuth{
			TransactionalID: r.TransactionID != nil && b.authorize(req, opWrite, resTxnID, *r.TransactionID),
			Topic:           func(name string) bool { return b.authorize(req, opWrite, resTopic, name) },
		}
	}
	resp := b.replicas.ProduceAuthorized(ctx, r, req.ClientID, auth)
	// KIP-13: the request's size against producer_byte_rate (quotas.go);
	// the request quota is not enforced for acks=0.
	var throttle int
	if b.quotas != nil {
		throttle = b.byteThrottle(b.quotas.produce, req, req.Size)
	}
	if r.Acks == 0 {
		skipRequestQuota(ctx)
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode != 0 {
					return protocol.Response{}, fmt.Errorf("acks=0 produce to %q partition %d failed with error %d: closing the connection", t.Topic, p.Partition, p.ErrorCode)
				}
			}
		}
		return protocol.Response{NoResponse: true, Throttle: time.Duration(throttle) * time.Millisecond}, nil
	}
	resp.ThrottleMillis = int32(throttle)
	if r.Version >= 10 {
		var leaders []int32
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if p.CurrentLeader.LeaderID >= 0 {
					leaders = append(leaders, p.CurrentLeader.LeaderID)
				}
			}
		}
		for _, ep := range b.leaderEndpoints(req.Listener, leaders) {
			nb := kmsg.NewProduceResponseBroker()
			nb.NodeID, nb.Host, nb.Port, nb.Rack = ep.id, ep.host, ep.port, ep.rack
			resp.Brokers = append(resp.Brokers, nb)
		}
	}
	return protocol.Response{Msg: resp}, nil
}

// nodeEndpoint is a broker's address on one listener (KIP-951 NodeEndpoints).
type nodeEndpoint struct {
	id   int32
	host string
	port int32
	rack *string
}

// leaderEndpoints returns the endpoints on listener of the brokers in ids
// (duplicates ignored, unknown brokers skipped), ordered by id.
func (b *Broker) leaderEndpoints(listener string, ids []int32) []nodeEndpoint {
	if len(ids) == 0 || b.meta == nil {
		return nil
	}
	want := map[int32]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var out []nodeEndpoint
	for _, br := range b.meta.Image().Brokers() {
		if !want[br.ID] {
			continue
		}
		ep, ok := br.Listener(listener)
		if !ok {
			continue
		}
		out = append(out, nodeEndpoint{id: br.ID, host: ep.Host, port: int32(ep.Port), rack: br.Rack})
	}
	return out
}
