package broker

// DescribeProducers: v0 (KIP-664; kafka-transactions.sh describe-producers
// and Admin.describeProducers send it to the partition leader, or to the
// broker named with --broker-id).
//
// Behavior (KafkaApis.handleDescribeProducersRequest,
// Partition.activeProducerState):
//   - a topic name Kafka's Topic.validate refuses: INVALID_TOPIC_EXCEPTION
//     with its message on every partition; a topic the metadata does not
//     know: UNKNOWN_TOPIC_OR_PARTITION with the error's default message;
//   - per partition (replication.ActiveProducers): the producers the local
//     replica's producer state holds, leader or follower, idempotent and
//     transactional alike: producer id, epoch, last sequence (-1 for a
//     producer that only wrote markers), last timestamp, coordinator epoch
//     (-1 before any marker) and the first offset of the open transaction
//     (-1 none); UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata
//     does not know, NOT_LEADER_OR_FOLLOWER when this node holds no replica,
//     KAFKA_STORAGE_ERROR when its log dir is offline (no message).

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(61, 0, 0, onBroker, handleDescribeProducers) }

func handleDescribeProducers(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeProducersRequest)
	resp := r.ResponseKind().(*kmsg.DescribeProducersResponse)
	img := b.meta.Image()
	for _, rt := range r.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		var topicCode int16
		var topicMsg *string
		if err := validateTopicName(rt.Topic); err != nil {
			msg := err.Error()
			topicCode, topicMsg = kerr.InvalidTopicException.Code, &msg
		} else if img.TopicByName(rt.Topic) == nil {
			msg := kerr.UnknownTopicOrPartition.Description
			topicCode, topicMsg = kerr.UnknownTopicOrPartition.Code, &msg
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			if topicCode != 0 {
				sp.ErrorCode, sp.ErrorMessage = topicCode, topicMsg
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			producers, err := b.replicas.ActiveProducers(rt.Topic, p)
			if err != nil {
				sp.ErrorCode = kerrCode(err)
				st.Partitions = append(st.Partitions, sp)
				continue
			}
			sp.ActiveProducers = make([]kmsg.DescribeProducersResponseTopicPartitionActiveProducer, 0, len(producers))
			for _, pi := range producers {
				ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
				ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = pi.ProducerID, int32(pi.ProducerEpoch), pi.LastSequence
				ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = pi.LastTimestamp, pi.CoordinatorEpoch, pi.CurrentTxnStartOffset
				sp.ActiveProducers = append(sp.ActiveProducers, ap)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return protocol.Response{Msg: resp}, nil
}

// kerrCode is the Kafka error code of err: its kerr code, else
// UNKNOWN_SERVER_ERROR (Errors.forException of an unexpected exception).
func kerrCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}
