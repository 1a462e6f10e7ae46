package broker

// WriteTxnMarkers: v1-2 (Kafka 4.4 serves 1-2: v0 was removed in 4.0).
//
// Sent by a transaction coordinator once a transaction is decided, to the
// leaders of its partitions (KafkaApis.handleWriteTxnMarkersRequest):
//   - a partition this node holds no log of: UNKNOWN_TOPIC_OR_PARTITION
//     (Kafka's getMagic finding nothing);
//   - __consumer_offsets: the group coordinator writes the marker and makes
//     the producer's transactional offsets committed or drops them
//     (group.Coordinator.CompleteTransaction, the new group coordinator's
//     completeTransaction, bounded by request.timeout.ms);
//     COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and
//     NOT_COORDINATOR are answered NOT_LEADER_OR_FOLLOWER, which the
//     transaction coordinator expects and retries;
//   - any other partition: the end-transaction control batch is appended by
//     its leader (origin coordinator, internal topics allowed) and the
//     answer waits for acks=all up to request.timeout.ms
//     (replication.AppendTxnMarkers): NOT_LEADER_OR_FOLLOWER,
//     NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT,
//     INVALID_PRODUCER_EPOCH (an older epoch; with transaction.version 2
//     not a newer one), TRANSACTION_COORDINATOR_FENCED (a coordinator epoch
//     below the producer's), KAFKA_STORAGE_ERROR.
//
// Every marker and partition is written at once; the answer has one result
// per producer id (markers of the same producer are merged, as Kafka keys
// its answer by producer id), with the partitions grouped by topic.
//
// Version notes:
//   - v1: flexible (the baseline since Kafka 4.0)
//   - v2: TransactionVersion per marker (KIP-1228): 2 makes the leader
//     require the marker's epoch to be newer than the producer's

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/replication"
)

func init() { regKey(27, 1, 2, onBroker, handleWriteTxnMarkers) }

// markerSlot is one (marker, partition) of the request and its answer.
type markerSlot struct {
	pid       int64
	topic     string
	partition int32
	code      int16
}

func handleWriteTxnMarkers(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.WriteTxnMarkersRequest)
	resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	timeout := 30 * time.Second
	if b.cfg != nil {
		timeout = time.Duration(b.cfg.Int("request.timeout.ms")) * time.Millisecond
	}

	var slots []*markerSlot
	var appends []replication.TxnMarker
	var appendSlots []*markerSlot
	var wg sync.WaitGroup
	for i := range r.Markers {
		m := &r.Markers[i]
		tv := int16(0)
		if r.Version >= 2 {
			tv = int16(m.TransactionVersion)
		}
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				s := &markerSlot{pid: m.ProducerID, topic: t.Topic, partition: p}
				slots = append(slots, s)
				switch {
				case !b.replicas.HasLocalLog(t.Topic, p):
					s.code = kerr.UnknownTopicOrPartition.Code
				case t.Topic == "__consumer_offsets":
					wg.Go(func() { s.code = b.completeGroupTransaction(ctx, p, m, timeout) })
				default:
					appends = append(appends, replication.TxnMarker{Topic: t.Topic, Partition: p, ProducerID: m.ProducerID,
						ProducerEpoch: m.ProducerEpoch, Commit: m.Committed, CoordinatorEpoch: m.CoordinatorEpoch, TransactionVersion: tv})
					appendSlots = append(appendSlots, s)
				}
			}
		}
	}
	if len(appends) > 0 {
		for i, code := range b.replicas.AppendTxnMarkers(ctx, appends, timeout) {
			appendSlots[i].code = code
		}
	}
	wg.Wait()

	// one result per producer id, partitions by topic, first appearance
	// first; a partition named twice keeps the last answer (a map put)
	type key struct {
		pid       int64
		topic     string
		partition int32
	}
	codes := map[key]int16{}
	var order []key
	for _, s := range slots {
		k := key{s.pid, s.topic, s.partition}
		if _, seen := codes[k]; !seen {
			order = append(order, k)
		}
		codes[k] = s.code
	}
	for _, k := range order {
		mi := 0
		for mi < len(resp.Markers) && resp.Markers[mi].ProducerID != k.pid {
			mi++
		}
		if mi == len(resp.Markers) {
			rm := kmsg.NewWriteTxnMarkersResponseMarker()
			rm.ProducerID = k.pid
			resp.Markers = append(resp.Markers, rm)
		}
		rm := &resp.Markers[mi]
		ti := 0
		for ti < len(rm.Topics) && rm.Topics[ti].Topic != k.topic {
			ti++
		}
		if ti == len(rm.Topics) {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = k.topic
			rm.Topics = append(rm.Topics, rt)
		}
		sp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
		sp.Partition, sp.ErrorCode = k.partition, codes[k]
		rm.Topics[ti].Partitions = append(rm.Topics[ti].Partitions, sp)
	}
	return protocol.Response{Msg: resp}, nil
}

// completeGroupTransaction hands a __consumer_offsets marker to the group
// coordinator and maps its error as KafkaApis does.
func (b *Broker) completeGroupTransaction(ctx context.Context, partition int32, m *kmsg.WriteTxnMarkersRequestMarker, timeout time.Duration) int16 {
	if b.groups == nil {
		return kerr.NotLeaderForPartition.Code
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := b.groups.CompleteTransaction(cctx, partition, m.ProducerID, m.ProducerEpoch, m.CoordinatorEpoch, m.Committed)
	var ke *kerr.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ke):
		switch ke.Code {
		case kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code, kerr.NotCoordinator.Code:
			// the transaction coordinator does not expect these: the
			// partition is not ready yet
			return kerr.NotLeaderForPartition.Code
		}
		return ke.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	}
	return kerr.UnknownServerError.Code
}
