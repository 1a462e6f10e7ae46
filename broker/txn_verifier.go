package broker

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/replication"
	"github.com/kgo-broker/kgo-broker/storage"
)

// txnVerifier is Kafka's AddPartitionsToTxnManager (KIP-890): a partition
// leader asks the transaction coordinator of a transactional id whether
// partitions are in the producer's ongoing transaction (VerifyOnly), or,
// for transaction.version 2 clients (produce v12+), adds them.
//
//	AddOrVerify(txn id, producer, partitions, op)
//	  coordinator = leader of __transaction_state partition
//	                PartitionFor(txn id, its partition count), an alive
//	                broker with an inter-broker endpoint, else
//	                COORDINATOR_NOT_AVAILABLE at once
//	  pending[coordinator] += one Transactions[] entry per transactional id
//	    same id pending: the older epoch loses (INVALID_PRODUCER_EPOCH),
//	    equal epochs answer the pending one NETWORK_EXCEPTION (a retry)
//	  one AddPartitionsToTxn v4+ in flight per coordinator; what queued
//	  meanwhile goes in the next request
//
// Errors, as the manager maps them: a transport failure or timeout
// (request.timeout.ms) is NETWORK_EXCEPTION for every partition of the
// request; a top-level error is every partition's (CLUSTER_AUTHORIZATION_FAILED
// as INVALID_TXN_STATE); per partition PRODUCER_FENCED is INVALID_PRODUCER_EPOCH
// and TRANSACTION_ABORTABLE is INVALID_TXN_STATE when the request's first
// transaction came from a client older than produce v11 (Kafka keeps one
// operation per node batch). A coordinator that does not serve
// AddPartitionsToTxn v4 skips verification (Kafka's version mismatch).
// Coordinator moves are not retried here: NOT_COORDINATOR goes back to the
// produce, which answers NOT_ENOUGH_REPLICAS so that the client retries.
//
// Locks: mu (pending and in-flight state) is a leaf, never held while
// sending; each call waits on its own channel.
type txnVerifier struct {
	send     func(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error)
	image    func() *metadatacache.Image
	listener string
	// numPartitions is transaction.state.log.num.partitions, used while
	// __transaction_state does not exist yet.
	numPartitions int32
	timeout       time.Duration // request.timeout.ms
	base          context.Context
	logger        *zap.Logger
	// served is the coordinators' AddPartitionsToTxn maximum version (every
	// node runs this binary: this node's registry).
	served func() (int16, bool)

	mu       lockrank.Mutex          // a leaf
	pending  map[int32]*txnNodeBatch // guarded by mu
	inflight map[int32]bool          // guarded by mu
}

// txnNodeBatch is TransactionDataAndCallbacks: what waits for a coordinator.
type txnNodeBatch struct {
	op    replication.TxnOperation // of the batch's first transaction
	order []string
	calls map[string]*txnCall
}

type txnCall struct {
	data kmsg.AddPartitionsToTxnRequestTransaction
	done chan map[storage.TopicPartition]int16 // cap 1
}

// addPartitionsToTxnVersion is what the manager sends: v5 (Kafka 4.4's
// latest), or the highest the coordinator serves (v4 at least).
const addPartitionsToTxnVersion = 5

func newTxnVerifier(base context.Context, send func(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error),
	image func() *metadatacache.Image, listener string, numPartitions int32, timeout time.Duration, logger *zap.Logger) *txnVerifier {
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	if numPartitions <= 0 {
		numPartitions = 50
	}
	served := func() (int16, bool) {
		_, max, ok := versionTable(onBroker).Versions(24)
		return max, ok
	}
	v := &txnVerifier{send: send, image: image, listener: listener, numPartitions: numPartitions, timeout: timeout,
		base: base, logger: logger, served: served, pending: map[int32]*txnNodeBatch{}, inflight: map[int32]bool{}}
	v.mu.SetRank(lockrank.TxnVerifier)
	return v
}

var _ replication.TxnVerifier = (*txnVerifier)(nil)

// txnSettingsFrom is the replica manager's KIP-890 settings from the broker
// config, with a verifier sending through peers; base ends the verifier's
// requests at shutdown.
func txnSettingsFrom(base context.Context, cfg *config.Config, peers *brokerClients, image func() *metadatacache.Image, logger *zap.Logger) replication.TxnSettings {
	timeout := time.Duration(cfg.Int("request.timeout.ms")) * time.Millisecond
	v := newTxnVerifier(base, peers.Request, image, cfg.InterBrokerListenerName,
		cfg.Int("transaction.state.log.num.partitions"), timeout, logger)
	return replication.TxnSettings{
		Verifier:        v,
		Enabled:         cfg.Bool("transaction.partition.verification.enable"),
		RetryBackoff:    time.Duration(cfg.Int("add.partitions.to.txn.retry.backoff.ms")) * time.Millisecond,
		RetryBackoffMax: time.Duration(cfg.Int("add.partitions.to.txn.retry.backoff.max.ms")) * time.Millisecond,
		RequestTimeout:  timeout,
	}
}

// AddOrVerify implements replication.TxnVerifier.
func (v *txnVerifier) AddOrVerify(ctx context.Context, txnID string, producerID int64, producerEpoch int16,
	partitions []storage.TopicPartition, op replication.TxnOperation) map[storage.TopicPartition]int16 {
	node, ok := v.coordinatorFor(txnID)
	if !ok {
		return allCodes(partitions, kerr.CoordinatorNotAvailable.Code)
	}
	data := kmsg.NewAddPartitionsToTxnRequestTransaction()
	data.TransactionalID, data.ProducerID, data.ProducerEpoch = txnID, producerID, producerEpoch
	data.VerifyOnly = !op.SupportsEpochBump()
	for _, tp := range partitions {
		i := 0
		for i < len(data.Topics) && data.Topics[i].Topic != tp.Topic {
			i++
		}
		if i == len(data.Topics) {
			t := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
			t.Topic = tp.Topic
			data.Topics = append(data.Topics, t)
		}
		data.Topics[i].Partitions = append(data.Topics[i].Partitions, tp.Partition)
	}
	call := &txnCall{data: data, done: make(chan map[storage.TopicPartition]int16, 1)}
	if early := v.add(node, call, op); early != nil {
		return early
	}
	select {
	case errs := <-call.done:
		return errs
	case <-ctx.Done():
		return allCodes(partitions, kerr.NetworkException.Code)
	}
}

// coordinatorFor is getTransactionCoordinator(partitionFor(txnID)).
func (v *txnVerifier) coordinatorFor(txnID string) (int32, bool) {
	img := v.image()
	t := img.TopicByName("__transaction_state")
	if t == nil {
		return -1, false
	}
	n := int32(len(t.Partitions))
	if n == 0 {
		n = v.numPartitions
	}
	p := t.Partition(coordinator.PartitionFor(txnID, n))
	if p == nil || p.Leader < 0 {
		return -1, false
	}
	b := img.Broker(p.Leader)
	if b == nil || b.Fenced {
		return -1, false
	}
	if _, ok := b.Listener(v.listener); !ok {
		return -1, false
	}
	return p.Leader, true
}

// add is addTxnData: it queues call for node and starts the node's sender
// when nothing is in flight. It returns the call's answer when it is refused
// at once.
func (v *txnVerifier) add(node int32, call *txnCall, op replication.TxnOperation) map[storage.TopicPartition]int16 {
	v.mu.Lock()
	defer v.mu.Unlock()
	b := v.pending[node]
	if b == nil {
		b = &txnNodeBatch{op: op, calls: map[string]*txnCall{}}
		v.pending[node] = b
	}
	id := call.data.TransactionalID
	if old := b.calls[id]; old != nil {
		// at most one entry per transactional id: the newer epoch wins; the
		// same epoch is the client retrying, so the pending one gets a
		// retriable error
		if old.data.ProducerEpoch > call.data.ProducerEpoch {
			return txnCodes(call.data, kerr.InvalidProducerEpoch.Code)
		}
		code := kerr.NetworkException.Code
		if old.data.ProducerEpoch < call.data.ProducerEpoch {
			code = kerr.InvalidProducerEpoch.Code
		}
		old.done <- txnCodes(old.data, code)
		delete(b.calls, id)
		for i, o := range b.order {
			if o == id {
				b.order = append(b.order[:i], b.order[i+1:]...)
				break
			}
		}
	}
	b.calls[id] = call
	b.order = append(b.order, id)
	if !v.inflight[node] {
		v.inflight[node] = true
		go v.run(node)
	}
	return nil
}

// run sends node's pending batches one request at a time until none is left
// (InterBrokerSendThread with generateRequests' one-in-flight rule).
func (v *txnVerifier) run(node int32) {
	for {
		v.mu.Lock()
		b := v.pending[node]
		delete(v.pending, node)
		if b == nil {
			delete(v.inflight, node)
			v.mu.Unlock()
			return
		}
		v.mu.Unlock()
		v.sendBatch(node, b)
	}
}

// sendBatch sends one AddPartitionsToTxn and answers its calls
// (AddPartitionsToTxnHandler.onComplete).
func (v *txnVerifier) sendBatch(node int32, b *txnNodeBatch) {
	max, ok := v.served()
	if !ok || max < 4 {
		// the coordinator cannot verify (a version mismatch): Kafka goes on
		// with the produce
		for _, c := range b.calls {
			c.done <- nil
		}
		return
	}
	version := min(int16(addPartitionsToTxnVersion), max)
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.Version = version
	for _, id := range b.order {
		req.Transactions = append(req.Transactions, b.calls[id].data)
	}
	ctx, cancel := context.WithTimeout(v.base, v.timeout)
	defer cancel()
	raw, err := v.send(ctx, node, req)
	resp, _ := raw.(*kmsg.AddPartitionsToTxnResponse)
	if err != nil || resp == nil {
		v.logger.Warn("AddPartitionsToTxn failed with a network exception", zap.Int32("node", node), zap.Error(err))
		for _, c := range b.calls {
			c.done <- txnCodes(c.data, kerr.NetworkException.Code)
		}
		return
	}
	if resp.ErrorCode != 0 {
		code := resp.ErrorCode
		// the client must not see CLUSTER_AUTHORIZATION_FAILED: the
		// verification did not complete
		if code == kerr.ClusterAuthorizationFailed.Code {
			code = kerr.InvalidTxnState.Code
		}
		v.logger.Error("AddPartitionsToTxn returned an error", zap.Int32("node", node), zap.Int16("error", resp.ErrorCode))
		for _, c := range b.calls {
			c.done <- txnCodes(c.data, code)
		}
		return
	}
	answered := map[string]bool{}
	for _, tr := range resp.Transactions {
		c := b.calls[tr.TransactionalID]
		if c == nil || answered[tr.TransactionalID] {
			continue
		}
		answered[tr.TransactionalID] = true
		unverified := map[storage.TopicPartition]int16{}
		for _, t := range tr.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == 0 {
					continue
				}
				code := p.ErrorCode
				switch {
				case code == kerr.ProducerFenced.Code:
					// producers expect INVALID_PRODUCER_EPOCH here
					code = kerr.InvalidProducerEpoch.Code
				case code == kerr.TransactionAbortable.Code && b.op == replication.TxnDefaultError:
					code = kerr.InvalidTxnState.Code
				}
				unverified[storage.TopicPartition{Topic: t.Topic, Partition: p.Partition}] = code
			}
		}
		c.done <- unverified
	}
	// a transaction the answer left out is not known to be verified
	for id, c := range b.calls {
		if !answered[id] {
			c.done <- txnCodes(c.data, kerr.NetworkException.Code)
		}
	}
}

func txnCodes(d kmsg.AddPartitionsToTxnRequestTransaction, code int16) map[storage.TopicPartition]int16 {
	out := map[storage.TopicPartition]int16{}
	for _, t := range d.Topics {
		for _, p := range t.Partitions {
			out[storage.TopicPartition{Topic: t.Topic, Partition: p}] = code
		}
	}
	return out
}

func allCodes(tps []storage.TopicPartition, code int16) map[storage.TopicPartition]int16 {
	out := make(map[storage.TopicPartition]int16, len(tps))
	for _, tp := range tps {
		out[tp] = code
	}
	return out
}
