package replication

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/storage"
)

// adminClientID is AdminUtils.ADMIN_CLIENT_ID: the only client allowed to
// produce to internal topics.
const adminClientID = "__admin_client"

// isInternalTopic is Topic.isInternal.
func isInternalTopic(t string) bool {
	return t == "__consumer_offsets" || t == "__transaction_state" || t == "__share_group_state"
}

// errorCode turns an error into a Kafka error code: kerr errors keep their
// code, anything else is an I/O error (KAFKA_STORAGE_ERROR).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.KafkaStorageError.Code
}

// errorMessage is the message Kafka puts next to an error code: nil for a
// bare kerr error, the detail otherwise.
func errorMessage(err error) *string {
	var ke *kerr.Error
	if err == nil || errors.As(err, &ke) && err == error(ke) {
		return nil
	}
	s := err.Error()
	if ke != nil {
		s = strings.TrimPrefix(s, ke.Error()+": ")
	}
	return &s
}

// producePartition is one partition of a produce request in flight.
type producePartition struct {
	resp           *kmsg.ProduceResponseTopicPartition
	p              *Partition
	requiredOffset int64 // last offset + 1, for acks=all
	pending        bool
	durable        storage.Durable // the sync flush.messages asks for, if any
}

// produceEntry is a partition of a produce request that passed the request
// checks and goes on to verification (KIP-890) and the append.
type produceEntry struct {
	resp    *kmsg.ProduceResponseTopicPartition
	topic   string
	p       *Partition
	records []byte
	guard   *storage.VerificationGuard
	failed  bool
}

// Produce serves a produce request (KafkaApis.handleProduceRequest and
// ReplicaManager.handleProduceAppend / appendRecords): per partition it
// checks the topic and leadership, validates the records (one magic-2 batch
// per partition), has the transaction coordinator verify (or add, for
// transaction.version 2 clients) the partitions a transactional producer
// writes to for the first time in its transaction (KIP-890, txn.go),
// appends as leader and, for acks=all, waits until the high watermark
// passes the batch or the request's timeout ends (REQUEST_TIMED_OUT).
// clientID matters for internal topics (only __admin_client may write).
//
// The response is filled for every acks value; with acks=0 the caller
// sends nothing (and closes the connection if any partition failed, as
// Kafka does).
func (rm *ReplicaManager) Produce(ctx context.Context, req *kmsg.ProduceRequest, clientID string) *kmsg.ProduceResponse {
	return rm.ProduceAuthorized(ctx, req, clientID, nil)
}

// ProduceAuth is the authorizer's verdict on a produce request, which the
// broker decides (KafkaApis.handleProduceRequest): whether the request may
// write as its transactional id, and whether it may write a topic (called
// once per topic, with the topic's name).
type ProduceAuth struct {
	TransactionalID bool
	Topic           func(name string) bool
}

// ProduceAuthorized is Produce with authorization: transactional records
// the request may not write as its transactional id fail every partition
// with TRANSACTIONAL_ID_AUTHORIZATION_FAILED; a topic it may not write
// answers TOPIC_AUTHORIZATION_FAILED, before its existence is checked (an
// unknown topic id is still UNKNOWN_TOPIC_ID). A nil auth allows all.
func (rm *ReplicaManager) ProduceAuthorized(ctx context.Context, req *kmsg.ProduceRequest, clientID string, auth *ProduceAuth) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	validAcks := req.Acks == -1 || req.Acks == 0 || req.Acks == 1

	// Transactional batches need a transactional id: without one Kafka
	// answers every partition of the request with
	// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (it cannot authorize the write).
	hasTxn := hasTransactionalRecords(req)
	txnIDMissing := hasTxn && (req.TransactionID == nil || auth != nil && !auth.TransactionalID)

	var entries []*produceEntry
	for i := range req.Topics {
		rt := &req.Topics[i]
		st := kmsg.NewProduceResponseTopic()
		st.Topic, st.TopicID = rt.Topic, rt.TopicID
		name, known := rt.Topic, true
		if req.Version >= 13 {
			name, known = rm.topicNameByID(rt.TopicID)
		}
		denied := known && !txnIDMissing && auth != nil && auth.Topic != nil && !auth.Topic(name)
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.BaseOffset = -1
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
		t := &resp.Topics[len(resp.Topics)-1]
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			sp := &t.Partitions[j]
			fail := func(err error) { failPartition(req.Version, sp, err) }
			switch {
			case txnIDMissing:
				requestError(req.Version, sp, kerr.TransactionalIDAuthorizationFailed)
				continue
			case !known:
				fail(kerr.UnknownTopicID)
				continue
			case denied:
				fail(kerr.TopicAuthorizationFailed)
				continue
			}
			p, err := rm.lookup(name, rp.Partition)
			if errors.Is(err, kerr.UnknownTopicOrPartition) {
				fail(err)
				continue
			}
			if err := validateProduceRecords(req.Version, rp.Records); err != nil {
				fail(err)
				continue
			}
			if !validAcks {
				fail(kerr.InvalidRequiredAcks)
				continue
			}
			if isInternalTopic(name) && clientID != adminClientID {
				fail(kerr.InvalidTopicException)
				continue
			}
			if err != nil {
				fail(err)
				rm.fillCurrentLeader(req.Version, name, sp)
				continue
			}
			entries = append(entries, &produceEntry{resp: sp, topic: name, p: p, records: rp.Records})
		}
	}

	if hasTxn && !txnIDMissing {
		if err := rm.verifyProduce(ctx, req, entries); err != nil {
			// more than one transactional producer in the request: Kafka's
			// handler fails and every partition gets the error
			for i := range resp.Topics {
				for j := range resp.Topics[i].Partitions {
					requestError(req.Version, &resp.Topics[i].Partitions[j], err)
				}
			}
			return resp
		}
	}

	opts := storage.AppendOptions{Origin: storage.OriginClient, RequireVerification: rm.txnSettings().Enabled}
	var parts []*producePartition
	for _, e := range entries {
		if e.failed {
			continue
		}
		sp := e.resp
		opts.Guard = e.guard
		info, durable, err := e.p.appendAsLeader(e.records, req.Acks, opts, rm.logger)
		if err != nil {
			failPartition(req.Version, sp, err)
			if req.Version >= 8 {
				if msg, recs := e.p.recordErrors(e.records, err, rm.now()); recs != nil {
					sp.ErrorRecords, sp.ErrorMessage = recs, &msg
				}
			}
			rm.fillCurrentLeader(req.Version, e.topic, sp)
			continue
		}
		if !info.Duplicate {
			// BrokerTopicMetrics MessagesInPerSec / BytesInPerSec
			rm.stats.messagesIn.Add(info.NumRecords)
			rm.stats.bytesIn.Add(int64(len(e.records)))
		}
		sp.BaseOffset = info.FirstOffset
		sp.LogAppendTime = info.LogAppendTime
		sp.LogStartOffset = info.LogStartOffset
		parts = append(parts, &producePartition{resp: sp, p: e.p, requiredOffset: info.LastOffset + 1, pending: true, durable: durable})
	}

	parts = rm.awaitDurable(req.Version, parts)
	if req.Acks == -1 && len(parts) > 0 {
		rm.awaitReplication(ctx, parts, time.Duration(req.TimeoutMillis)*time.Millisecond)
	}
	return resp
}

// failPartition sets a partition's error code and, from v8, the detail of err.
func failPartition(version int16, sp *kmsg.ProduceResponseTopicPartition, err error) {
	sp.ErrorCode = errorCode(err)
	if version >= 8 {
		sp.ErrorMessage = errorMessage(err)
	}
}

// requestError answers a partition with an error of the whole request
// (ProduceRequest.getErrorResponse): base and log start offsets -1 and,
// from v8, the error's message.
func requestError(version int16, sp *kmsg.ProduceResponseTopicPartition, err error) {
	sp.ErrorCode, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = errorCode(err), -1, -1, -1
	sp.ErrorRecords = nil
	if version >= 8 {
		msg := err.Error()
		var ke *kerr.Error
		if errors.As(err, &ke) && err == error(ke) {
			msg = ke.Description
		}
		sp.ErrorMessage = &msg
	}
}

// awaitDurable waits for the syncs flush.messages asked for, all partitions'
// at once (one goroutine each), so that the fdatasyncs of different segment
// files overlap and share the file system's journal commits; Kafka flushes
// each partition's log in turn inside its append. A partition whose sync
// failed answers KAFKA_STORAGE_ERROR (its log dir went offline); the others
// become visible (high watermark) and go on to acks=all. It returns them.
func (rm *ReplicaManager) awaitDurable(version int16, parts []*producePartition) []*producePartition {
	n := 0
	for _, pp := range parts {
		if pp.durable.Pending() {
			n++
		}
	}
	if n == 0 {
		return parts
	}
	errs := make([]error, len(parts))
	if n == 1 {
		for i, pp := range parts {
			if pp.durable.Pending() {
				errs[i] = pp.durable.Wait()
			}
		}
	} else {
		var wg sync.WaitGroup
		for i, pp := range parts {
			if pp.durable.Pending() {
				wg.Go(func() { errs[i] = pp.durable.Wait() })
			}
		}
		wg.Wait()
	}
	ok := parts[:0]
	for i, pp := range parts {
		if !pp.durable.Pending() {
			ok = append(ok, pp)
			continue
		}
		if err := errs[i]; err != nil {
			pp.resp.ErrorCode, pp.resp.BaseOffset = errorCode(err), -1
			if version >= 8 {
				pp.resp.ErrorMessage = errorMessage(err)
			}
			continue
		}
		pp.p.appended() // now durable: the high watermark may pass it
		ok = append(ok, pp)
	}
	return ok
}

// fillCurrentLeader sets KIP-951's CurrentLeader (v10+) on a
// NOT_LEADER_OR_FOLLOWER answer.
func (rm *ReplicaManager) fillCurrentLeader(version int16, topic string, sp *kmsg.ProduceResponseTopicPartition) {
	if version >= 10 && sp.ErrorCode == kerr.NotLeaderForPartition.Code {
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = rm.CurrentLeader(topic, sp.Partition)
	}
}

// awaitReplication is DelayedProduce: it parks until every partition's high
// watermark reaches its required offset (or the partition fails), or the
// timeout ends; partitions still pending then get REQUEST_TIMED_OUT.
func (rm *ReplicaManager) awaitReplication(ctx context.Context, parts []*producePartition, timeout time.Duration) {
	w := newWaiter()
	for _, pp := range parts {
		pp.p.watch.add(w)
		defer pp.p.watch.remove(w)
	}
	done := func() bool {
		all := true
		for _, pp := range parts {
			if !pp.pending {
				continue
			}
			reached, err := pp.p.checkEnoughReplicasReachOffset(pp.requiredOffset)
			switch {
			case err != nil:
				pp.pending = false
				pp.resp.ErrorCode = errorCode(err)
				pp.resp.BaseOffset = -1
			case reached:
				pp.pending = false
			default:
				all = false
			}
		}
		return all
	}
	if await(ctx, w, timeout, rm.closed, done) {
		return
	}
	for _, pp := range parts {
		if pp.pending {
			pp.resp.ErrorCode = kerr.RequestTimedOut.Code
		}
	}
}

// checkEnoughReplicasReachOffset is Partition.checkEnoughReplicasReachOffset.
func (p *Partition) checkEnoughReplicasReachOffset(required int64) (bool, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return false, kerr.NotLeaderForPartition
	}
	if p.hw.Load() < required {
		return false, nil
	}
	// The maximal ISR (pending additions included) against the effective
	// min.insync.replicas, as Kafka's checkEnoughReplicasReachOffset.
	p.stateMu.Lock()
	maximal := len(p.maximalISRLocked())
	p.stateMu.Unlock()
	if maximal < p.effectiveMinIsrLocked() {
		return true, kerr.NotEnoughReplicasAfterAppend
	}
	return true, nil
}

// appendAsLeader is Partition.appendRecordsToLeader. When flush.messages asks
// for a sync the returned Durable is pending: the high watermark stays below
// the append (no consumer sees it, acks=all does not count it) until the
// caller waited for it and called appended.
func (p *Partition) appendAsLeader(records []byte, acks int16, opts storage.AppendOptions, logger *zap.Logger) (storage.AppendInfo, storage.Durable, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return storage.AppendInfo{}, storage.Durable{}, kerr.NotLeaderForPartition
	}
	// Kafka's appendRecordsToLeader: the effective min.insync.replicas is
	// at most the replica count (a topic with fewer replicas than the
	// setting still takes acks=all writes once every replica is in sync).
	if acks == -1 && len(p.isr) < p.effectiveMinIsrLocked() {
		return storage.AppendInfo{}, storage.Durable{}, kerr.NotEnoughReplicas
	}
	info, durable, err := p.log.AppendAsLeaderWith(records, p.leaderEpoch, opts)
	if err != nil {
		var ke *kerr.Error
		if !errors.As(err, &ke) {
			logger.Error("append failed", zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition),
				zap.Int32("leaderEpoch", p.leaderEpoch), zap.Error(err))
		}
		return info, storage.Durable{}, err
	}
	if !durable.Pending() {
		p.appendedLocked()
	}
	return info, durable, nil
}

// appended moves the high watermark after an append became durable.
func (p *Partition) appended() {
	p.mu.RLock()
	defer p.mu.RUnlock()
	p.appendedLocked()
}

func (p *Partition) appendedLocked() {
	p.maybeIncrementHW()
	p.watch.wakeAll() // followers' and consumers' parked fetches, parked acks=all produces
}

// validateProduceRecords is ProduceRequest.validateRecords for v3+: exactly
// one magic-2 batch, and no zstd before v7.
func validateProduceRecords(version int16, records []byte) error {
	if len(records) == 0 {
		return kerr.InvalidRecord
	}
	n := 0
	err := storage.WalkBatches(records, false, func(h storage.BatchHeader, _ []byte) error {
		n++
		if n > 1 {
			return kerr.InvalidRecord
		}
		if version < 7 && h.Compression() == storage.CompressionZstd {
			return kerr.UnsupportedCompressionType
		}
		return nil
	})
	if err != nil {
		return err
	}
	return nil
}

// hasTransactionalRecords is RequestUtils.hasTransactionalRecords.
func hasTransactionalRecords(req *kmsg.ProduceRequest) bool {
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			r := req.Topics[i].Partitions[j].Records
			if len(r) < storage.BatchHeaderSize {
				continue
			}
			if h, err := storage.ParseBatchHeader(r); err == nil && h.Magic == 2 && h.IsTransactional() {
				return true
			}
		}
	}
	return false
}

// recordErrors rebuilds LogValidator's per-record errors (RecordValidationException)
// for a batch the log rejected with INVALID_TIMESTAMP or INVALID_RECORD: the index
// of every record with a timestamp outside message.timestamp.before/after.max.ms,
// or without a key on a compacted topic, and the partition-level message Kafka
// sends with them. nil when the error is not about individual records.
func (p *Partition) recordErrors(records []byte, err error, now time.Time) (string, []kmsg.ProduceResponseTopicPartitionErrorRecord) {
	tsErr := errors.Is(err, kerr.InvalidTimestamp)
	if !tsErr && !errors.Is(err, kerr.InvalidRecord) {
		return "", nil
	}
	p.mu.RLock()
	cfg := p.cfg
	p.mu.RUnlock()
	nowMs := now.UnixMilli()
	h, herr := storage.ParseBatchHeader(records)
	if herr != nil || h.IsControl() {
		return "", nil
	}
	recs, derr := storage.DecodeRecords(records)
	if derr != nil {
		return "", nil
	}
	var out []kmsg.ProduceResponseTopicPartitionErrorRecord
	var anyTs bool
	for i, r := range recs {
		var msg string
		switch {
		case cfg.Compact() && r.Key == nil:
			msg = fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %s", p.tp)
		case cfg.MessageTimestampType != storage.TimestampLogAppendTime && r.Timestamp != storage.NoTimestamp &&
			(nowMs-r.Timestamp > cfg.MessageTimestampBeforeMaxMs || r.Timestamp-nowMs > cfg.MessageTimestampAfterMaxMs):
			anyTs = true
			msg = fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				r.Timestamp, r.Offset, satSub(nowMs, cfg.MessageTimestampBeforeMaxMs), satAdd(nowMs, cfg.MessageTimestampAfterMaxMs))
		default:
			continue
		}
		e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
		e.RelativeOffset = int32(i)
		e.ErrorMessage = &msg
		out = append(out, e)
	}
	if len(out) == 0 {
		return "", nil
	}
	if anyTs {
		return "One or more records have been rejected due to invalid timestamp", out
	}
	return fmt.Sprintf("One or more records have been rejected due to %d record errors in total", len(out)), out
}

func satSub(a, b int64) int64 {
	if b > 0 && a < math.MinInt64+b {
		return math.MinInt64
	}
	return a - b
}

func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
