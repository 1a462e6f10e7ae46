package broker

// AlterReplicaLogDirs: v1-2 (client listeners)
//
// Behavior (ReplicaManager.alterReplicaLogDirs), per partition:
//   - LOG_DIR_NOT_FOUND for a dir that is not one of log.dirs (by its
//     absolute path, as DescribeLogDirs names it); KAFKA_STORAGE_ERROR for
//     an offline one.
//   - UNKNOWN_TOPIC_OR_PARTITION for a partition the metadata does not
//     know; REPLICA_NOT_AVAILABLE for one with no replica on this broker
//     (Kafka also remembers the dir for a replica created later;
//     kgo-broker places new replicas itself).
//   - NONE when the replica already lives in that dir (Kafka's no-op).
//   - Moving a replica to another dir (KIP-113 future replicas) is not
//     implemented: UNSUPPORTED_VERSION, and a warning in the log (the
//     response has no message field).
//
// Version notes: v0 was removed in 4.0 (KIP-896); v2: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(34, 1, 2, onBroker, handleAlterReplicaLogDirs) }

func handleAlterReplicaLogDirs(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterReplicaLogDirsRequest)
	resp := r.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)

	// Where each requested partition lives, and which dirs are online,
	// as DescribeLogDirs sees them.
	dreq := kmsg.NewPtrDescribeLogDirsRequest()
	dreq.Version = 1
	for _, d := range r.Dirs {
		for _, t := range d.Topics {
			dt := kmsg.NewDescribeLogDirsRequestTopic()
			dt.Topic, dt.Partitions = t.Topic, t.Partitions
			dreq.Topics = append(dreq.Topics, dt)
		}
	}
	type tp struct {
		topic     string
		partition int32
	}
	dirs := map[string]int16{} // absolute path -> its error code
	location := map[tp]string{}
	if b.replicas != nil {
		for _, d := range b.replicas.DescribeLogDirs(dreq).Dirs {
			dirs[d.Dir] = d.ErrorCode
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					location[tp{t.Topic, p.Partition}] = d.Dir
				}
			}
		}
	}
	img := b.meta.Image()
	// One result per topic, its partitions from every dir entry, as Kafka
	// answers from its map of partitions (AlterReplicaLogDirsResponse).
	topicIndex := map[string]int{}
	for _, d := range r.Dirs {
		for _, t := range d.Topics {
			i, seen := topicIndex[t.Topic]
			if !seen {
				i = len(resp.Topics)
				topicIndex[t.Topic] = i
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				resp.Topics = append(resp.Topics, rt)
			}
			rt := &resp.Topics[i]
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
				rp.Partition = p
				dirErr, known := dirs[d.Dir]
				current, hosted := location[tp{t.Topic, p}]
				switch ti := img.TopicByName(t.Topic); {
				case !known:
					rp.ErrorCode = kerr.LogDirNotFound.Code
				case dirErr != 0:
					rp.ErrorCode = kerr.KafkaStorageError.Code
				case ti == nil || ti.Partition(p) == nil:
					rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				case !hosted:
					rp.ErrorCode = kerr.ReplicaNotAvailable.Code
				case current != d.Dir:
					b.logger.Warn("moving a replica between log dirs (AlterReplicaLogDirs, KIP-113) is not implemented",
						zap.String("topic", t.Topic), zap.Int32("partition", p), zap.String("from", current), zap.String("to", d.Dir))
					rp.ErrorCode = kerr.UnsupportedVersion.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
	}
	return protocol.Response{Msg: resp}, nil
}
