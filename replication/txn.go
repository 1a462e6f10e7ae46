package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
)

// The partition leader's side of transactions (Kafka's
// ReplicaManager.handleProduceAppend, maybeSendPartitionsToTransactionCoordinator,
// KafkaApis.handleWriteTxnMarkersRequest's appends, activeProducerState):
//
//	produce with transactional batches ──► maybeStartTransactionVerification
//	   per partition (storage: verification entry + guard; none needed when
//	   the producer's transaction is already open here)
//	     ──► TxnVerifier.AddOrVerify (the broker's AddPartitionsToTxnManager:
//	         AddPartitionsToTxn v4+ to the transaction coordinator)
//	     ──► append with the guard (storage refuses it if a marker came in
//	         between: no hanging transaction)
//	WriteTxnMarkers ──► AppendTxnMarkers: a control batch per partition,
//	   origin coordinator, acks=all

// TxnOperation is how a client's request version lets the leader treat its
// transaction (AddPartitionsToTxnManager.TransactionSupportedOperation).
type TxnOperation int8

const (
	// TxnDefaultError: produce v3-10 (TxnOffsetCommit v0-3): verify only;
	// TRANSACTION_ABORTABLE is answered as INVALID_TXN_STATE, which these
	// clients know.
	TxnDefaultError TxnOperation = iota
	// TxnGenericErrorSupported: produce v11 (TxnOffsetCommit v4): verify
	// only; the client handles TRANSACTION_ABORTABLE.
	TxnGenericErrorSupported
	// TxnAddPartition: produce v12+ (TxnOffsetCommit v5+), transaction.version
	// 2 (KIP-890 part 2): the leader adds the partition to the transaction
	// itself, and the producer's epoch is bumped by every commit or abort.
	TxnAddPartition
)

// SupportsEpochBump reports a transaction.version 2 client.
func (o TxnOperation) SupportsEpochBump() bool { return o == TxnAddPartition }

// ProduceTxnOperation is produceRequestVersionToTransactionSupportedOperation.
func ProduceTxnOperation(version int16) TxnOperation {
	switch {
	case version > 11:
		return TxnAddPartition
	case version > 10:
		return TxnGenericErrorSupported
	}
	return TxnDefaultError
}

// TxnVerifier asks the transaction coordinator of a transactional id whether
// partitions are part of the producer's ongoing transaction, or adds them
// (op TxnAddPartition): the broker's AddPartitionsToTxnManager. It returns
// the error code of every partition that was not verified (none: all were),
// already mapped as the manager maps them (PRODUCER_FENCED as
// INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE as INVALID_TXN_STATE for
// TxnDefaultError, a failed request as NETWORK_EXCEPTION,
// COORDINATOR_NOT_AVAILABLE when the coordinator is unknown). It waits on
// the network; replication calls it holding no lock.
type TxnVerifier interface {
	AddOrVerify(ctx context.Context, txnID string, producerID int64, producerEpoch int16,
		partitions []storage.TopicPartition, op TxnOperation) map[storage.TopicPartition]int16
}

// TxnSettings configure the leader's side of KIP-890.
type TxnSettings struct {
	// Verifier reaches the transaction coordinators; nil skips verification
	// (Kafka without an AddPartitionsToTxnManager).
	Verifier TxnVerifier
	// Enabled is transaction.partition.verification.enable (default true in
	// Kafka): the log refuses transactional writes that were not verified.
	// Transaction.version 2 clients have their partitions added whatever it
	// says.
	Enabled bool
	// RetryBackoff and RetryBackoffMax are
	// add.partitions.to.txn.retry.backoff.ms and ...backoff.max.ms: a
	// transaction.version 2 produce whose add answers CONCURRENT_TRANSACTIONS
	// (the previous transaction is still completing) is retried after
	// RetryBackoff for up to min(RetryBackoffMax, RequestTimeout).
	RetryBackoff, RetryBackoffMax time.Duration
	// RequestTimeout is request.timeout.ms.
	RequestTimeout time.Duration
}

// SetTxnSettings installs the transaction settings (before the listeners
// open; safe to call at any time).
func (rm *ReplicaManager) SetTxnSettings(s TxnSettings) { rm.txn.Store(&s) }

func (rm *ReplicaManager) txnSettings() TxnSettings {
	if s := rm.txn.Load(); s != nil {
		return *s
	}
	return TxnSettings{}
}

// maybeStartTransactionVerification is Partition.maybeStartTransactionVerification.
func (p *Partition) maybeStartTransactionVerification(pid int64, seq int32, epoch int16, supportsEpochBump bool) (*storage.VerificationGuard, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return nil, kerr.NotLeaderForPartition
	}
	return p.log.MaybeStartTransactionVerification(pid, seq, epoch, supportsEpochBump)
}

// sendPartitionsToCoordinator is maybeSendPartitionsToTransactionCoordinator:
// each partition (with its first batch's base sequence) gets a verification
// entry on its leader log, and those that need one (no transaction open
// there) are sent to the coordinator. It returns the error codes of the
// partitions that failed and the guards of those that were sent.
func (rm *ReplicaManager) sendPartitionsToCoordinator(ctx context.Context, txnID string, pid int64, epoch int16,
	partitions map[storage.TopicPartition]int32, op TxnOperation) (map[storage.TopicPartition]int16, map[storage.TopicPartition]*storage.VerificationGuard) {
	ts := rm.txnSettings()
	if ts.Verifier == nil || (!op.SupportsEpochBump() && !ts.Enabled) {
		return nil, nil
	}
	errs := map[storage.TopicPartition]int16{}
	guards := map[storage.TopicPartition]*storage.VerificationGuard{}
	var send []storage.TopicPartition
	for tp, seq := range partitions {
		p, err := rm.lookup(tp.Topic, tp.Partition)
		var g *storage.VerificationGuard
		if err == nil {
			g, err = p.maybeStartTransactionVerification(pid, seq, epoch, op.SupportsEpochBump())
		}
		switch {
		case err != nil:
			errs[tp] = errorCode(err)
		case g != nil:
			guards[tp] = g
			send = append(send, tp)
		}
	}
	if len(send) == 0 {
		return errs, nil
	}
	for tp, code := range ts.Verifier.AddOrVerify(ctx, txnID, pid, epoch, send, op) {
		if code != 0 {
			errs[tp] = code
		}
	}
	return errs, guards
}

// verifyProduce is handleProduceAppend's verification: the transactional
// partitions of the request are verified (or added) with the coordinator,
// those that fail are answered with the error the producer expects, the
// others get their guard for the append. More than one transactional
// producer in a request is INVALID_PRODUCER_ID_MAPPING for the whole request.
func (rm *ReplicaManager) verifyProduce(ctx context.Context, req *kmsg.ProduceRequest, entries []*produceEntry) error {
	type producer struct {
		id    int64
		epoch int16
	}
	var producers []producer
	batchInfo := map[storage.TopicPartition]int32{}
	byTP := map[storage.TopicPartition]*produceEntry{}
	for _, e := range entries {
		h, err := storage.ParseBatchHeader(e.records)
		if err != nil || !h.HasProducerID() || !h.IsTransactional() {
			continue
		}
		pr := producer{h.ProducerID, h.ProducerEpoch}
		known := false
		for _, q := range producers {
			known = known || q == pr
		}
		if !known {
			producers = append(producers, pr)
		}
		tp := storage.TopicPartition{Topic: e.topic, Partition: e.resp.Partition}
		batchInfo[tp] = h.BaseSequence
		byTP[tp] = e
	}
	if len(producers) > 1 {
		return fmt.Errorf("%w: transactional records contained more than one producer ID", kerr.InvalidProducerIDMapping)
	}
	if len(producers) == 0 {
		return nil
	}
	op := ProduceTxnOperation(req.Version)
	ts := rm.txnSettings()
	retryFor := min(ts.RetryBackoffMax, ts.RequestTimeout)
	start := rm.now()
	var errs map[storage.TopicPartition]int16
	var guards map[storage.TopicPartition]*storage.VerificationGuard
retry:
	for {
		errs, guards = rm.sendPartitionsToCoordinator(ctx, *req.TransactionID, producers[0].id, producers[0].epoch, batchInfo, op)
		// Transaction.version 2 adds the partition from the produce: the
		// previous transaction may still be completing (CONCURRENT_TRANSACTIONS,
		// common right after a commit), and a produce is expensive to retry, so
		// the leader retries itself (maybeRetryOnConcurrentTransactions).
		if !op.SupportsEpochBump() || !hasCode(errs, kerr.ConcurrentTransactions.Code) || rm.now().Sub(start) >= retryFor {
			break
		}
		t := time.NewTimer(max(ts.RetryBackoff, time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			break retry // answered with the last attempt's errors
		case <-rm.closed:
			t.Stop()
			break retry
		}
	}
	for tp, e := range byTP {
		if code := errs[tp]; code != 0 {
			e.failed = true
			verificationError(req.Version, e.resp, code, op)
			rm.fillCurrentLeader(req.Version, e.topic, e.resp)
			continue
		}
		e.guard = guards[tp]
	}
	return nil
}

func hasCode(errs map[storage.TopicPartition]int16, code int16) bool {
	for _, c := range errs {
		if c == code {
			return true
		}
	}
	return false
}

// verificationError answers a partition whose verification failed as
// handleProduceAppend's postVerificationCallback does: INVALID_TXN_STATE
// says the partition was not added; the coordinator's retriable errors
// become NOT_ENOUGH_REPLICAS, which older clients retry without a metadata
// refresh (CONCURRENT_TRANSACTIONS too, except for transaction.version 2
// clients, which handle it); the rest stays as it is, without a message.
func verificationError(version int16, sp *kmsg.ProduceResponseTopicPartition, code int16, op TxnOperation) {
	sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = -1, -1, -1
	var msg string
	switch code {
	case kerr.InvalidTxnState.Code:
		msg = "Partition was not added to the transaction"
	case kerr.NetworkException.Code, kerr.CoordinatorLoadInProgress.Code, kerr.CoordinatorNotAvailable.Code, kerr.NotCoordinator.Code:
		msg, code = underlying(code), kerr.NotEnoughReplicas.Code
	case kerr.ConcurrentTransactions.Code:
		if !op.SupportsEpochBump() {
			msg, code = underlying(code), kerr.NotEnoughReplicas.Code
		}
	}
	sp.ErrorCode = code
	if version >= 8 && msg != "" {
		sp.ErrorMessage = &msg
	}
}

func underlying(code int16) string {
	name := fmt.Sprint(code)
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			name = ke.Message
		}
	}
	return "Unable to verify the partition has been added to the transaction. Underlying error: " + name
}

// VerifyTransaction is maybeSendPartitionToTransactionCoordinator for a
// coordinator's transactional write (TxnOffsetCommit on __consumer_offsets):
// it returns the guard the append must carry (nil when none is needed or
// verification is off) or the coordinator's error, unmapped.
func (rm *ReplicaManager) VerifyTransaction(ctx context.Context, topic string, partition int32, txnID string, producerID int64,
	producerEpoch int16, op TxnOperation) (*storage.VerificationGuard, error) {
	tp := storage.TopicPartition{Topic: topic, Partition: partition}
	errs, guards := rm.sendPartitionsToCoordinator(ctx, txnID, producerID, producerEpoch,
		map[storage.TopicPartition]int32{tp: storage.NoSequence}, op)
	if code := errs[tp]; code != 0 {
		return nil, kerr.ErrorForCode(code)
	}
	return guards[tp], nil
}

// TxnMarker is an end-transaction marker for one partition
// (WriteTxnMarkersRequest.WritableTxnMarker).
type TxnMarker struct {
	Topic            string
	Partition        int32
	ProducerID       int64
	ProducerEpoch    int16
	Commit           bool
	CoordinatorEpoch int32
	// TransactionVersion is the marker's transaction.version (WriteTxnMarkers
	// v2, KIP-1228; 0 before): from 2 the marker's epoch must be newer than
	// the producer's.
	TransactionVersion int16
}

// HasLocalLog reports whether this node holds a log of the partition
// (Kafka's ReplicaManager.getMagic being defined): WriteTxnMarkers answers
// UNKNOWN_TOPIC_OR_PARTITION for the others.
func (rm *ReplicaManager) HasLocalLog(topic string, partition int32) bool {
	p, ok := rm.Partition(topic, partition)
	if !ok {
		return false
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.log != nil
}

// AppendTxnMarkers writes each marker to its partition as leader, origin
// coordinator (internal topics allowed), and waits for acks=all up to
// timeout, as WriteTxnMarkers does through appendRecords; it returns each
// marker's error code: UNKNOWN_TOPIC_OR_PARTITION without a local log,
// NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS(_AFTER_APPEND),
// INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
// KAFKA_STORAGE_ERROR, REQUEST_TIMED_OUT.
func (rm *ReplicaManager) AppendTxnMarkers(ctx context.Context, markers []TxnMarker, timeout time.Duration) []int16 {
	resps := make([]kmsg.ProduceResponseTopicPartition, len(markers))
	var parts []*producePartition
	for i, m := range markers {
		sp := &resps[i]
		if !rm.HasLocalLog(m.Topic, m.Partition) {
			sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			continue
		}
		p, err := rm.lookup(m.Topic, m.Partition)
		if err != nil {
			sp.ErrorCode = errorCode(err)
			continue
		}
		batch := storage.BuildEndTxnMarker(m.ProducerID, m.ProducerEpoch, m.Commit, m.CoordinatorEpoch, rm.now().UnixMilli())
		info, durable, err := p.appendAsLeader(batch, -1, storage.AppendOptions{Origin: storage.OriginCoordinator,
			TransactionVersion: m.TransactionVersion}, rm.logger)
		if err != nil {
			sp.ErrorCode = errorCode(err)
			continue
		}
		parts = append(parts, &producePartition{resp: sp, p: p, requiredOffset: info.LastOffset + 1, pending: true, durable: durable})
	}
	parts = rm.awaitDurable(0, parts)
	if len(parts) > 0 {
		rm.awaitReplication(ctx, parts, timeout)
	}
	out := make([]int16, len(markers))
	for i := range resps {
		out[i] = resps[i].ErrorCode
	}
	return out
}

// ActiveProducers is Partition.activeProducerState (DescribeProducers): the
// producers of any local replica, leader or follower.
func (rm *ReplicaManager) ActiveProducers(topic string, partition int32) ([]storage.ProducerInfo, error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return nil, err
	}
	p.mu.RLock()
	l := p.log
	p.mu.RUnlock()
	switch {
	case l == nil:
		return nil, kerr.NotLeaderForPartition
	case l.Offline():
		return nil, kerr.KafkaStorageError
	}
	return l.ActiveProducers(), nil
}
