package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Producer ids for idempotent producers, Kafka's RPCProducerIdManager: the
// broker hands out ids from a block it got from the active controller with
// AllocateProducerIDs (the controller appends a ProducerIdsRecord; blocks of
// 1000). When 90% of the current block is used the next block is requested
// in the background, so InitProducerId rarely waits.
//
// Difference from Kafka: when no id is at hand (first use, or the next block
// has not arrived) Kafka answers COORDINATOR_LOAD_IN_PROGRESS at once and
// lets the client retry; here the request waits for the block in flight
// (bounded by producerIDWait and the request's context) and only then
// answers COORDINATOR_LOAD_IN_PROGRESS, which saves the client a retry.

// producerIDWait bounds how long InitProducerId waits for a block.
const producerIDWait = 10 * time.Second

// allocateTimeout bounds one AllocateProducerIDs round trip.
const allocateTimeout = 30 * time.Second

// errNoProducerIDs is returned while no producer id block is available.
var errNoProducerIDs = fmt.Errorf("%w: no producer id block available yet", kerr.CoordinatorLoadInProgress)

type pidBlock struct {
	next, end int64 // [next, end)
	size      int64
}

func (b pidBlock) remaining() int64 { return b.end - b.next }

type producerIDs struct {
	nodeID      int32
	controller  kmsg.Requestor
	brokerEpoch func() int64
	logger      *zap.Logger
	closed      <-chan struct{}

	mu       lockrank.Mutex // a leaf (New ranks it)
	cur      pidBlock
	next     pidBlock
	inflight chan struct{} // closed when the request in flight ends; nil if none
}

// generate returns a fresh producer id.
func (m *producerIDs) generate(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, producerIDWait)
	defer cancel()
	for {
		m.mu.Lock()
		if m.cur.remaining() <= 0 && m.next.remaining() > 0 {
			m.cur, m.next = m.next, pidBlock{}
		}
		if m.cur.remaining() > 0 {
			id := m.cur.next
			m.cur.next++
			// Prefetch when 90% of the block is used.
			if m.next.remaining() <= 0 && m.cur.remaining()*10 < m.cur.size {
				m.requestLocked()
			}
			m.mu.Unlock()
			return id, nil
		}
		ch := m.requestLocked()
		m.mu.Unlock()
		if ch == nil {
			return 0, errNoProducerIDs
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, errNoProducerIDs
		case <-m.closed:
			return 0, errNoProducerIDs
		}
		m.mu.Lock()
		ok := m.cur.remaining() > 0 || m.next.remaining() > 0
		m.mu.Unlock()
		if !ok {
			return 0, errNoProducerIDs
		}
	}
}

// requestLocked starts an AllocateProducerIDs request unless one is in
// flight, and returns the channel closed when it ends (nil without a
// controller channel). m.mu must be held.
func (m *producerIDs) requestLocked() chan struct{} {
	if m.controller == nil {
		return nil
	}
	if m.inflight != nil {
		return m.inflight
	}
	ch := make(chan struct{})
	m.inflight = ch
	go func() {
		blk, err := m.allocate()
		m.mu.Lock()
		if err == nil {
			m.next = blk
		}
		m.inflight = nil
		m.mu.Unlock()
		close(ch)
		if err != nil {
			m.logger.Warn("allocating a producer id block failed", zap.Error(err))
		}
	}()
	return ch
}

func (m *producerIDs) allocate() (pidBlock, error) {
	ctx, cancel := context.WithTimeout(context.Background(), allocateTimeout)
	defer cancel()
	go func() {
		select {
		case <-m.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID = m.nodeID
	if m.brokerEpoch != nil {
		req.BrokerEpoch = m.brokerEpoch()
	}
	kresp, err := m.controller.Request(ctx, req)
	if err != nil {
		return pidBlock{}, err
	}
	resp, ok := kresp.(*kmsg.AllocateProducerIDsResponse)
	if !ok {
		return pidBlock{}, fmt.Errorf("unexpected response %T to AllocateProducerIDs", kresp)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return pidBlock{}, err
	}
	if resp.ProducerIDStart < 0 || resp.ProducerIDLen <= 0 || resp.ProducerIDStart > (1<<63-1)-int64(resp.ProducerIDLen) {
		return pidBlock{}, errors.New("controller returned an invalid producer id block")
	}
	return pidBlock{next: resp.ProducerIDStart, end: resp.ProducerIDStart + int64(resp.ProducerIDLen), size: int64(resp.ProducerIDLen)}, nil
}

// GenerateProducerID returns a fresh producer id from the broker's block
// (Kafka's ProducerIdManager.generateProducerId), for the transaction
// coordinator. It may wait for the next block (bounded as InitProducerId
// waits); without one it fails with COORDINATOR_LOAD_IN_PROGRESS.
func (rm *ReplicaManager) GenerateProducerID(ctx context.Context) (int64, error) {
	return rm.pids.generate(ctx)
}

// InitProducerID serves InitProducerId for idempotent producers (a null
// transactional id), as TransactionCoordinator.handleInitProducerId does for
// them: every call gets a new producer id with epoch 0, whether or not the
// request names an existing producer id and epoch (v3+); Kafka bumps epochs
// only for transactional producers. A transactional id is answered with
// COORDINATOR_NOT_AVAILABLE: there is no transaction coordinator yet.
func (rm *ReplicaManager) InitProducerID(ctx context.Context, req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID = -1
	resp.ProducerEpoch = -1
	fail := func(err *kerr.Error) *kmsg.InitProducerIDResponse {
		resp.ErrorCode = err.Code
		return resp
	}
	// KafkaApis: (-1, e) and (p, -1) are malformed pairs.
	if (req.ProducerID == -1) != (req.ProducerEpoch == -1) {
		return fail(kerr.InvalidRequest)
	}
	if req.TransactionalID != nil {
		if *req.TransactionalID == "" {
			return fail(kerr.InvalidRequest)
		}
		return fail(kerr.CoordinatorNotAvailable)
	}
	id, err := rm.pids.generate(ctx)
	if err != nil {
		return fail(kerr.CoordinatorLoadInProgress)
	}
	resp.ProducerID = id
	resp.ProducerEpoch = 0
	return resp
}
