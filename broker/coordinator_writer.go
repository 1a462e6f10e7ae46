package broker

import (
	"context"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/replication"
	"github.com/kgo-broker/kgo-broker/storage"
)

// coordinatorWriter is the coordinator runtime's Writer on this node's
// replica manager (Kafka's CoordinatorPartitionWriter): coordinator batches
// are appended as leader, origin coordinator, acks=1; the runtime completes
// operations when the high watermark passes them.
type coordinatorWriter struct {
	replicas *replication.ReplicaManager
	// minISR refuses appends while the ISR is below min.insync.replicas
	// (NOT_ENOUGH_REPLICAS): set for the transaction coordinator, which
	// Kafka writes with acks=all, not for the group coordinator (acks=1).
	minISR bool
	// compression is the coordinator's record batch codec
	// (offsets.topic.compression.codec, share.coordinator.state.topic.compression.codec;
	// Kafka's transaction log is written uncompressed)
	compression storage.Compression
}

var _ coordinator.Writer = coordinatorWriter{}

func (w coordinatorWriter) Append(tp coordinator.TopicPartition, leaderEpoch int32, b coordinator.Batch) (int64, error) {
	var batch []byte
	if b.Marker != nil {
		batch = storage.BuildEndTxnMarker(b.ProducerID, b.ProducerEpoch, b.Marker.Commit, b.Marker.CoordinatorEpoch, b.TimestampMs)
	} else {
		recs := make([]storage.Record, len(b.Records))
		for i, r := range b.Records {
			recs[i] = storage.Record{Key: r.Key, Value: r.Value, Timestamp: b.TimestampMs}
		}
		o := storage.BatchOptions{Transactional: b.Transactional, Compression: w.compression}
		if b.ProducerID >= 0 {
			// Coordinator-origin batches carry no sequence (Kafka's
			// RecordBatch.NO_SEQUENCE): the log does not check it.
			o.Producer = &storage.BatchProducer{ID: b.ProducerID, Epoch: b.ProducerEpoch, BaseSequence: storage.NoSequence}
		}
		batch = storage.BuildBatch(o, recs...)
	}
	guard, _ := b.Guard.(*storage.VerificationGuard)
	info, err := w.replicas.AppendCoordinator(tp.Topic, tp.Partition, leaderEpoch, batch, guard, w.minISR)
	if err != nil {
		return 0, err
	}
	return info.LastOffset + 1, nil
}

// DeleteRecords lets the share coordinator prune __share_group_state
// (sharecoord.RecordsDeleter).
func (w coordinatorWriter) DeleteRecords(tp coordinator.TopicPartition, beforeOffset int64) error {
	return w.replicas.DeleteCoordinatorRecords(tp.Topic, tp.Partition, beforeOffset)
}

func (w coordinatorWriter) HighWatermark(tp coordinator.TopicPartition) (int64, error) {
	return w.replicas.HighWatermarkOf(tp.Topic, tp.Partition)
}

func (w coordinatorWriter) Watch(tp coordinator.TopicPartition, wake func()) (func(), error) {
	return w.replicas.WatchPartition(tp.Topic, tp.Partition, wake)
}

func (w coordinatorWriter) Read(tp coordinator.TopicPartition, fn func(coordinator.Loaded) error) (int64, error) {
	return w.replicas.ReadLog(tp.Topic, tp.Partition, func(h storage.BatchHeader, raw []byte) error {
		if h.IsControl() {
			commit, epoch, ok := storage.ParseEndTxnMarker(h, raw)
			if !ok {
				return nil
			}
			return fn(coordinator.Loaded{Offset: h.BaseOffset, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
				Transactional: true, Marker: &coordinator.Marker{Commit: commit, CoordinatorEpoch: epoch}})
		}
		recs, err := storage.DecodeRecords(raw)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(coordinator.Loaded{Offset: r.Offset, ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch,
				Transactional: h.IsTransactional(), Key: r.Key, Value: r.Value}); err != nil {
				return err
			}
		}
		return nil
	})
}

// VerifyTransaction is maybeSendPartitionToTransactionCoordinator on this
// node's replica manager (CoordinatorPartitionWriter.maybeStartTransactionVerification):
// a verification entry on the partition's leader log, then AddPartitionsToTxn
// to the coordinator of txnID (txn_verifier.go), verify-only or, with add
// (transaction.version 2), adding the partition. The guard is a
// *storage.VerificationGuard for Batch.Guard; nil (and no request) when the
// producer's transaction is already open on the partition, or when
// verification is off and add is not set. Errors are the coordinator's
// (kerr), unmapped, as Kafka hands them to the group coordinator;
// TRANSACTION_ABORTABLE stays as it is (the TxnOffsetCommit v4 rules: the
// group coordinator answers older versions INVALID_TXN_STATE).
func (w coordinatorWriter) VerifyTransaction(ctx context.Context, tp coordinator.TopicPartition, txnID string, producerID int64, producerEpoch int16, add bool) (any, error) {
	op := replication.TxnGenericErrorSupported
	if add {
		op = replication.TxnAddPartition
	}
	g, err := w.replicas.VerifyTransaction(ctx, tp.Topic, tp.Partition, txnID, producerID, producerEpoch, op)
	if err != nil || g == nil {
		return nil, err
	}
	return g, nil
}
