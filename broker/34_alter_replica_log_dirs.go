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
//   - NONE when the replica already lives in that dir (Kafka's no-op; a
//     move to another dir in progress is cancelled).
//   - INVALID_REPLICA_ASSIGNMENT for a move into a cordoned dir (KIP-1066,
//     cordoned.log.dirs, from metadata.version 4.3-IV0).
//   - Another dir: KIP-113 future replica. A future log is created there and
//     the replica's log is copied into it and swapped in once caught up
//     (replication/alterlogdirs.go, storage/future.go); NONE. While any log
//     dir is offline, KAFKA_STORAGE_ERROR (LogManager.getOrCreateLog does
//     not create a future log then, so that no partition gets one in two
//     dirs).
//
// Version notes: v0 was removed in 4.0 (KIP-896); v2: flexible.

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/storage"
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
	cordoned := b.cordonedLogDirs() // KIP-1066: no replica moves into one
	anyOffline := false
	for _, code := range dirs {
		anyOffline = anyOffline || code != 0
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
				case current == d.Dir:
					if err := b.replicas.CancelLogDirMove(storage.TopicPartition{Topic: t.Topic, Partition: p}); err != nil {
						rp.ErrorCode = kerr.KafkaStorageError.Code
					}
				case cordoned[d.Dir]:
					rp.ErrorCode = kerr.InvalidReplicaAssignment.Code
				case anyOffline:
					rp.ErrorCode = kerr.KafkaStorageError.Code
				default:
					rp.ErrorCode = b.moveReplica(storage.TopicPartition{Topic: t.Topic, Partition: p}, current, d.Dir)
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
		}
	}
	return protocol.Response{Msg: resp}, nil
}

// moveReplica starts moving tp's replica from the log dir from to to (both
// absolute paths, as DescribeLogDirs names them) and answers its error code.
func (b *Broker) moveReplica(tp storage.TopicPartition, from, to string) int16 {
	dir, ok := b.configuredLogDir(to)
	if !ok {
		return kerr.LogDirNotFound.Code
	}
	if err := b.replicas.AlterLogDir(tp, dir); err != nil {
		b.logger.Warn("Unable to alter log dirs", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition),
			zap.String("from", from), zap.String("to", to), zap.Error(err))
		switch {
		case errors.Is(err, storage.ErrNoCurrentLog):
			return kerr.ReplicaNotAvailable.Code
		case errors.Is(err, storage.ErrTopicTooLongToMove):
			return kerr.InvalidTopicException.Code
		}
		return kerr.KafkaStorageError.Code
	}
	b.logger.Info("moving a replica to another log dir", zap.String("topic", tp.Topic), zap.Int32("partition", tp.Partition),
		zap.String("from", from), zap.String("to", to))
	return 0
}

// configuredLogDir returns the entry of log.dirs whose absolute path is abs.
func (b *Broker) configuredLogDir(abs string) (string, bool) {
	for _, d := range b.cfg.LogDirs {
		if a, err := filepath.Abs(d); err == nil && a == abs || d == abs {
			return d, true
		}
	}
	return "", false
}
