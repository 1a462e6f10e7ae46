package txn

import (
	"context"
	"errors"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The request handlers of the transaction APIs (KafkaApis'
// handleInitProducerIdRequest, handleAddPartitionsToTxnRequest,
// handleAddOffsetsToTxnRequest, handleEndTxnRequest,
// handleDescribeTransactionsRequest, handleListTransactionsRequest): the
// per-version error mapping and request checks live here, the broker files
// only route. Authorization (transactional id, group, topic and cluster
// ACLs) is the broker's, before a request reaches these handlers
// (broker/authz_client.go).

// fencedFor maps PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for the
// versions before a request could carry it.
func fencedFor(err error, version, firstFencedVersion int16) error {
	if version < firstFencedVersion && errors.Is(err, kerr.ProducerFenced) {
		return kerr.InvalidProducerEpoch
	}
	return err
}

// HandleInitProducerID serves InitProducerId with a transactional id (a null
// one is the idempotent path, served by the replica manager).
func (c *Coordinator) HandleInitProducerID(ctx context.Context, r *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = noProducerID, noProducerEpoch
	if (r.ProducerID == noProducerID) != (r.ProducerEpoch == noProducerEpoch) || r.TransactionalID == nil {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	var expected *ProducerIDAndEpoch
	if r.ProducerID != noProducerID {
		expected = &ProducerIDAndEpoch{ID: r.ProducerID, Epoch: r.ProducerEpoch}
	}
	pid, epoch, err := c.InitProducerID(ctx, *r.TransactionalID, r.TransactionTimeoutMillis, expected)
	// v4 added PRODUCER_FENCED; older clients understand only
	// INVALID_PRODUCER_EPOCH.
	resp.ErrorCode = ErrorCode(fencedFor(err, r.Version, 4))
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	return resp
}

// addTxnParallelism bounds the transactions of one AddPartitionsToTxn
// served at once.
const addTxnParallelism = 16

// addTxn is one transaction of an AddPartitionsToTxn, whatever its version.
type addTxn struct {
	txnID      string
	producerID int64
	epoch      int16
	verifyOnly bool
	parts      []TopicPartition // deduplicated, in request order
}

func dedupe(dst []TopicPartition, seen map[TopicPartition]bool, topic string, parts []int32) []TopicPartition {
	for _, p := range parts {
		tp := TopicPartition{topic, p}
		if !seen[tp] {
			seen[tp] = true
			dst = append(dst, tp)
		}
	}
	return dst
}

// HandleAddPartitionsToTxn serves AddPartitionsToTxn: v0-3 from producers
// (one transaction), v4+ from partition leaders (a batch of transactions,
// each verified or, for transaction version 2, added; KIP-890).
func (c *Coordinator) HandleAddPartitionsToTxn(ctx context.Context, r *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	var txns []addTxn
	if r.Version < 4 {
		seen := map[TopicPartition]bool{}
		t := addTxn{txnID: r.TransactionalID, producerID: r.ProducerID, epoch: r.ProducerEpoch}
		for _, rt := range r.Topics {
			t.parts = dedupe(t.parts, seen, rt.Topic, rt.Partitions)
		}
		txns = append(txns, t)
	} else {
		for _, rt := range r.Transactions {
			seen := map[TopicPartition]bool{}
			t := addTxn{txnID: rt.TransactionalID, producerID: rt.ProducerID, epoch: rt.ProducerEpoch, verifyOnly: rt.VerifyOnly}
			for _, tt := range rt.Topics {
				t.parts = dedupe(t.parts, seen, tt.Topic, tt.Partitions)
			}
			txns = append(txns, t)
		}
	}
	// Transactions are independent (each on its partition's loop): serve
	// them concurrently, at most addTxnParallelism at a time however many a
	// request carries, and answer when all are done, as KafkaApis does.
	results := make([]map[TopicPartition]error, len(txns))
	var wg sync.WaitGroup
	sem := make(chan struct{}, addTxnParallelism)
	for i := range txns {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			results[i] = c.addPartitionsToTxn(ctx, r.Version, txns[i])
		}()
	}
	wg.Wait()
	if r.Version < 4 {
		resp.Topics = v3Results(txns[0].parts, results[0])
		return resp
	}
	for i, t := range txns {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = t.txnID
		idx := map[string]int{}
		for _, tp := range t.parts {
			j, ok := idx[tp.Topic]
			if !ok {
				tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
				tt.Topic = tp.Topic
				rt.Topics = append(rt.Topics, tt)
				j = len(rt.Topics) - 1
				idx[tp.Topic] = j
			}
			p := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
			p.Partition, p.ErrorCode = tp.Partition, ErrorCode(results[i][tp])
			rt.Topics[j].Partitions = append(rt.Topics[j].Partitions, p)
		}
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp
}

func v3Results(parts []TopicPartition, errs map[TopicPartition]error) []kmsg.AddPartitionsToTxnResponseTopic {
	var out []kmsg.AddPartitionsToTxnResponseTopic
	idx := map[string]int{}
	for _, tp := range parts {
		i, ok := idx[tp.Topic]
		if !ok {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = tp.Topic
			out = append(out, t)
			i = len(out) - 1
			idx[tp.Topic] = i
		}
		p := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
		p.Partition, p.ErrorCode = tp.Partition, ErrorCode(errs[tp])
		out[i].Partitions = append(out[i].Partitions, p)
	}
	return out
}

// isInternalTopic: Kafka's Topic.isInternal.
func isInternalTopic(t string) bool {
	return t == "__consumer_offsets" || t == TopicName || t == "__share_group_state"
}

func (c *Coordinator) addPartitionsToTxn(ctx context.Context, version int16, t addTxn) map[TopicPartition]error {
	out := make(map[TopicPartition]error, len(t.parts))
	img := c.cfg.Image()
	failed := false
	for _, tp := range t.parts {
		switch {
		case version < 4 && isInternalTopic(tp.Topic):
			// Producers may not write to internal topics: Kafka's write
			// authorization leaves them out.
			out[tp], failed = kerr.TopicAuthorizationFailed, true
		case img.TopicByName(tp.Topic) == nil || img.TopicByName(tp.Topic).Partition(tp.Partition) == nil:
			out[tp], failed = kerr.UnknownTopicOrPartition, true
		}
	}
	if failed {
		// One bad partition fails the whole transaction; the others were
		// not attempted.
		for _, tp := range t.parts {
			if out[tp] == nil {
				out[tp] = kerr.OperationNotAttempted
			}
		}
		return out
	}
	if t.verifyOnly {
		return c.VerifyPartitions(ctx, t.txnID, t.producerID, t.epoch, t.parts)
	}
	// Versions 4+ come from partition leaders serving transaction version
	// 2 producers (TransactionVersion.transactionVersionForAddPartitionsToTxn).
	tv := TV0
	if version > 3 {
		tv = TV2
	}
	err := fencedFor(c.AddPartitions(ctx, t.txnID, t.producerID, t.epoch, t.parts, tv), version, 2)
	for _, tp := range t.parts {
		out[tp] = err
	}
	return out
}

// HandleAddOffsetsToTxn serves AddOffsetsToTxn: the group's
// __consumer_offsets partition (offsetsPartition, which the caller computes
// from the image) joins the transaction, always with transaction version 0
// rules (only pre-TV2 clients send it).
func (c *Coordinator) HandleAddOffsetsToTxn(ctx context.Context, r *kmsg.AddOffsetsToTxnRequest, offsetsPartition int32) *kmsg.AddOffsetsToTxnResponse {
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	err := c.AddPartitions(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch,
		[]TopicPartition{{"__consumer_offsets", offsetsPartition}}, TV0)
	resp.ErrorCode = ErrorCode(fencedFor(err, r.Version, 2))
	return resp
}

// HandleEndTxn serves EndTxn; v5+ follows transaction version 2 rules and
// answers the producer id and epoch to continue with.
func (c *Coordinator) HandleEndTxn(ctx context.Context, r *kmsg.EndTxnRequest) *kmsg.EndTxnResponse {
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	tv := TV0
	if r.Version > 4 { // TransactionVersion.transactionVersionForEndTxn
		tv = TV2
	}
	pid, epoch, err := c.EndTxn(ctx, r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit, tv)
	resp.ErrorCode = ErrorCode(fencedFor(err, r.Version, 2))
	resp.ProducerID, resp.ProducerEpoch = pid, epoch
	return resp
}

// HandleDescribeTransactions serves DescribeTransactions.
func (c *Coordinator) HandleDescribeTransactions(ctx context.Context, r *kmsg.DescribeTransactionsRequest) *kmsg.DescribeTransactionsResponse {
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range r.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		d, err := c.DescribeTransaction(ctx, id)
		if err != nil {
			st.ErrorCode = ErrorCode(err)
		} else {
			st.State, st.ProducerID, st.ProducerEpoch = d.State.String(), d.ProducerID, d.ProducerEpoch
			st.TimeoutMillis, st.StartTimestamp = d.TimeoutMs, d.StartMs
			for _, tp := range d.Partitions {
				if n := len(st.Topics); n == 0 || st.Topics[n-1].Topic != tp.Topic {
					t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
					t.Topic = tp.Topic
					st.Topics = append(st.Topics, t)
				}
				t := &st.Topics[len(st.Topics)-1]
				t.Partitions = append(t.Partitions, tp.Partition)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}

// HandleListTransactions serves ListTransactions (v1 DurationFilter,
// KIP-994; v2 TransactionalIdPattern, KIP-1152).
func (c *Coordinator) HandleListTransactions(ctx context.Context, r *kmsg.ListTransactionsRequest) *kmsg.ListTransactionsResponse {
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := ListFilter{States: r.StateFilters, ProducerIDs: r.ProducerIDFilters, DurationMs: -1}
	if r.Version >= 1 {
		f.DurationMs = r.DurationFilterMillis
	}
	if r.Version >= 2 {
		f.Pattern = r.TransactionalIDPattern
	}
	txns, unknown, err := c.ListTransactions(ctx, f)
	if err != nil {
		resp.ErrorCode = ErrorCode(err)
		return resp
	}
	resp.UnknownStateFilters = unknown
	for _, t := range txns {
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = t.TransactionalID, t.ProducerID, t.State.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp
}
