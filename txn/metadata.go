package txn

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TopicPartition names a partition that takes part in a transaction.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

func compareTP(a, b TopicPartition) int {
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

type tpSet map[TopicPartition]struct{}

func (s tpSet) sorted() []TopicPartition {
	out := slices.Collect(maps.Keys(s))
	slices.SortFunc(out, compareTP)
	return out
}

func (s tpSet) containsAll(tps []TopicPartition) bool {
	for _, tp := range tps {
		if _, ok := s[tp]; !ok {
			return false
		}
	}
	return true
}

func (s tpSet) supersetOf(o tpSet) bool {
	for tp := range o {
		if _, ok := s[tp]; !ok {
			return false
		}
	}
	return true
}

const (
	noProducerID    int64 = -1
	noProducerEpoch int16 = -1
	maxEpoch        int16 = 1<<15 - 1 // Short.MAX_VALUE
)

// Transaction versions (the transaction.version feature, Kafka's
// TransactionVersion): 1 writes flexible TransactionLogValue v1 records, 2
// bumps the producer epoch on every commit and abort (KIP-890 part 2).
const (
	TV0 int16 = 0
	TV1 int16 = 1
	TV2 int16 = 2
)

// supportsEpochBump is TransactionVersion.supportsEpochBump.
func supportsEpochBump(tv int16) bool { return tv >= TV2 }

// logValueVersion is TransactionVersion.transactionLogValueVersion: the
// TransactionLogValue version written at a transaction.version level.
func logValueVersion(tv int16) int16 {
	if tv >= TV1 {
		return 1
	}
	return 0
}

// isEpochExhausted: the coordinator keeps the last epoch for itself so that
// it can always fence a producer (TransactionMetadata.isEpochExhausted).
func isEpochExhausted(epoch int16) bool { return epoch >= maxEpoch-1 }

// metadata is one transactional id's state (Kafka's TransactionMetadata). It
// belongs to its shard's event loop: no lock.
//
// A change is made in two steps, as Kafka does: a prepare method checks the
// transition, sets pending and returns the transit (the state to write);
// once the record is committed completeTransition applies it. While pending
// is set every other change answers CONCURRENT_TRANSACTIONS.
type metadata struct {
	txnID          string
	producerID     int64
	prevProducerID int64 // the producer id before the last transition
	nextProducerID int64 // TV2: the id a commit or abort that exhausted the epoch moves to
	producerEpoch  int16
	// lastProducerEpoch is the epoch before the last bump (KIP-360 retries,
	// TV2 EndTxn retries); it is not written to the log, so a loaded
	// transaction has -1.
	lastProducerEpoch int16
	timeoutMs         int32
	state             State
	partitions        tpSet
	startMs           int64 // txnStartTimestamp, -1 with no transaction
	lastUpdateMs      int64 // txnLastUpdateTimestamp (expiration)
	clientTV          int16 // the transaction version the client used

	pending State // noState, or the state a written (uncommitted) or prepared transition moves to
	// hasFailedEpochFence: a fencing write failed after the epoch was bumped
	// in memory (TV1), so the next fence does not bump again.
	hasFailedEpochFence bool
}

func newMetadata(txnID string, producerID int64, timeoutMs int32, nowMs int64) *metadata {
	return &metadata{
		txnID: txnID, producerID: producerID, prevProducerID: noProducerID, nextProducerID: noProducerID,
		producerEpoch: noProducerEpoch, lastProducerEpoch: noProducerEpoch, timeoutMs: timeoutMs,
		state: Empty, partitions: tpSet{}, startMs: -1, lastUpdateMs: nowMs, clientTV: TV0, pending: noState,
	}
}

// transit is the state a transition writes and then applies (Kafka's
// TxnTransitMetadata).
type transit struct {
	producerID        int64
	prevProducerID    int64
	nextProducerID    int64
	producerEpoch     int16
	lastProducerEpoch int16
	timeoutMs         int32
	state             State
	partitions        tpSet
	startMs           int64
	lastUpdateMs      int64
	clientTV          int16
}

// next starts a transit to state from the current values (Kafka's
// TransitionData).
func (m *metadata) next(state State) transit {
	return transit{
		producerID: m.producerID, nextProducerID: m.nextProducerID, producerEpoch: m.producerEpoch,
		lastProducerEpoch: m.lastProducerEpoch, timeoutMs: m.timeoutMs, state: state,
		partitions: maps.Clone(m.partitions), startMs: m.startMs, lastUpdateMs: m.lastUpdateMs, clientTV: m.clientTV,
	}
}

func (m *metadata) pendingInProgress() bool { return m.pending != noState }

func (m *metadata) isProducerEpochExhausted() bool { return isEpochExhausted(m.producerEpoch) }

// errIllegalTransition is a transition Kafka's state machine refuses: a bug
// (Kafka throws IllegalStateException), answered UNKNOWN_SERVER_ERROR.
var errIllegalTransition = fmt.Errorf("%w: illegal transaction state transition", kerr.UnknownServerError)

// prepareTransitionTo checks t and marks it pending
// (TransactionMetadata.prepareTransitionTo).
func (m *metadata) prepareTransitionTo(t transit) (transit, error) {
	if m.pendingInProgress() {
		return transit{}, fmt.Errorf("%w: %s to %s while %s is pending", errIllegalTransition, m.txnID, t.state, m.pending)
	}
	if t.producerID < 0 {
		return transit{}, fmt.Errorf("%w: %s: producer id %d", errIllegalTransition, m.txnID, t.producerID)
	}
	// A new transactional id has epoch -1 until its first InitProducerId
	// is written; it may expire (Dead) that way.
	if t.state != Dead && t.producerEpoch < 0 {
		return transit{}, fmt.Errorf("%w: %s: producer epoch %d", errIllegalTransition, m.txnID, t.producerEpoch)
	}
	if !t.state.validPrevious(m.state) {
		return transit{}, fmt.Errorf("%w: %s from %s to %s", errIllegalTransition, m.txnID, m.state, t.state)
	}
	t.prevProducerID = m.producerID
	m.pending = t.state
	return t, nil
}

// prepareFenceProducerEpoch bumps the epoch to fence the producer of an
// ongoing transaction that is about to be aborted (InitProducerId of a new
// producer instance, or a timeout). PrepareEpochFence is only ever a pending
// state: the abort that follows replaces it with PrepareAbort.
func (m *metadata) prepareFenceProducerEpoch() (transit, error) {
	bumped := m.producerEpoch
	if !m.hasFailedEpochFence && m.producerEpoch != maxEpoch {
		bumped++
	}
	t := m.next(PrepareEpochFence)
	t.producerEpoch = bumped
	return m.prepareTransitionTo(t)
}

// prepareIncrementProducerEpoch is InitProducerId's epoch bump. expected is
// the epoch the producer sent (KIP-360), or nil.
func (m *metadata) prepareIncrementProducerEpoch(timeoutMs int32, expected *int16, nowMs int64) (transit, error) {
	if m.isProducerEpochExhausted() {
		// Kafka throws IllegalStateException here, answered as
		// UNKNOWN_SERVER_ERROR.
		return transit{}, fmt.Errorf("%w: cannot allocate any more producer epochs for producer id %d", kerr.UnknownServerError, m.producerID)
	}
	t := m.next(Empty)
	bumped := m.producerEpoch + 1
	switch {
	case expected == nil:
		// A new producer instance: bump and forget the last epoch. A new
		// transactional id goes from -1 to 0.
		t.producerEpoch, t.lastProducerEpoch = bumped, noProducerEpoch
	case m.producerEpoch == noProducerEpoch || *expected == m.producerEpoch:
		// The producer resumes after an error and nobody else initialized
		// since: bump and remember the epoch it had.
		t.producerEpoch, t.lastProducerEpoch = bumped, m.producerEpoch
	case *expected == m.lastProducerEpoch:
		// A retry of a bump that succeeded: answer the current epoch. A new
		// producer would have reset the last epoch to -1, so this cannot
		// resurrect a fenced producer.
		t.producerEpoch, t.lastProducerEpoch = m.producerEpoch, m.lastProducerEpoch
	default:
		return transit{}, kerr.ProducerFenced
	}
	t.timeoutMs = timeoutMs
	t.partitions = tpSet{}
	t.startMs = -1
	t.lastUpdateMs = nowMs
	return m.prepareTransitionTo(t)
}

// prepareProducerIdRotation moves an exhausted producer to a new producer id
// at epoch 0. recordLastEpoch keeps the old epoch for a KIP-360 retry.
func (m *metadata) prepareProducerIdRotation(newProducerID int64, timeoutMs int32, nowMs int64, recordLastEpoch bool) (transit, error) {
	if m.state == Ongoing || m.state == PrepareAbort || m.state == PrepareCommit {
		return transit{}, fmt.Errorf("%w: cannot rotate producer ids while a transaction is still pending", errIllegalTransition)
	}
	t := m.next(Empty)
	t.producerID = newProducerID
	t.producerEpoch = 0
	t.lastProducerEpoch = noProducerEpoch
	if recordLastEpoch {
		t.lastProducerEpoch = m.producerEpoch
	}
	t.timeoutMs = timeoutMs
	t.partitions = tpSet{}
	t.startMs = -1
	t.lastUpdateMs = nowMs
	return m.prepareTransitionTo(t)
}

// prepareAddPartitions adds partitions; the first ones start the
// transaction's clock.
func (m *metadata) prepareAddPartitions(add []TopicPartition, nowMs int64, clientTV int16) (transit, error) {
	t := m.next(Ongoing)
	if m.state == Empty || m.state == CompleteAbort || m.state == CompleteCommit {
		t.startMs = nowMs
	}
	for _, tp := range add {
		t.partitions[tp] = struct{}{}
	}
	t.lastUpdateMs = nowMs
	t.clientTV = clientTV
	return m.prepareTransitionTo(t)
}

// prepareAbortOrCommit moves to PrepareCommit or PrepareAbort. With TV2 the
// epoch is bumped (KIP-890 part 2); nextProducerID is the id an exhausted
// producer moves to once the transaction completes, or -1.
func (m *metadata) prepareAbortOrCommit(state State, clientTV int16, nextProducerID int64, nowMs int64, noPartitionAdded bool) (transit, error) {
	t := m.next(state)
	if supportsEpochBump(clientTV) {
		// An abort at the maximal epoch is let through without overflowing
		// so that a broken producer can still recover.
		if !(m.producerEpoch == maxEpoch && state == PrepareAbort) {
			t.producerEpoch = m.producerEpoch + 1
		}
		t.lastProducerEpoch = m.producerEpoch
	} else {
		t.producerEpoch, t.lastProducerEpoch = m.producerEpoch, m.lastProducerEpoch
	}
	// TV2 may abort with no partition added: the transaction starts now.
	if noPartitionAdded {
		t.startMs = nowMs
	}
	t.nextProducerID = nextProducerID
	t.lastUpdateMs = nowMs
	t.clientTV = clientTV
	return m.prepareTransitionTo(t)
}

// prepareComplete moves PrepareCommit/PrepareAbort to its Complete state
// once every marker is written. TV2 moves an exhausted producer to its
// next producer id at epoch 0 here; lastProducerEpoch stays what the client
// last saw.
func (m *metadata) prepareComplete(nowMs int64) (transit, error) {
	m.hasFailedEpochFence = false
	state := CompleteAbort
	if m.state == PrepareCommit {
		state = CompleteCommit
	}
	t := m.next(state)
	if supportsEpochBump(m.clientTV) && m.nextProducerID != noProducerID {
		t.producerID, t.producerEpoch = m.nextProducerID, 0
	}
	t.nextProducerID = noProducerID
	t.partitions = tpSet{}
	t.lastUpdateMs = nowMs
	return m.prepareTransitionTo(t)
}

// prepareDead marks an expired transactional id for removal (a tombstone).
func (m *metadata) prepareDead() (transit, error) {
	t := m.next(Dead)
	t.partitions = tpSet{}
	return m.prepareTransitionTo(t)
}

// removePartition drops a partition whose marker is written.
func (m *metadata) removePartition(tp TopicPartition) error {
	if m.state != PrepareCommit && m.state != PrepareAbort {
		return invariant(false, "%s: removing partition %s in state %s (pending %s)", m.txnID, tp, m.state, m.pending)
	}
	delete(m.partitions, tp)
	return nil
}

// completeTransition applies a committed transit (Kafka's
// completeTransitionTo), checking it is the pending one and a legal
// change. A failed check is a bug: the transit is not applied.
func (m *metadata) completeTransition(t transit) error {
	if m.pending == noState {
		return invariant(false, "%s: completing a transition to %s with no pending state", m.txnID, t.state)
	}
	if m.pending != t.state {
		return invariant(false, "%s: completing a transition to %s while %s is pending", m.txnID, t.state, m.pending)
	}
	ok := true
	switch t.state {
	case Empty: // InitProducerId
		ok = (m.producerEpoch == t.producerEpoch || m.validProducerEpochBump(t)) && len(t.partitions) == 0 && t.startMs == -1
	case Ongoing: // AddPartitions
		ok = m.validProducerEpoch(t) && t.partitions.supersetOf(m.partitions) && m.timeoutMs == t.timeoutMs
	case PrepareAbort, PrepareCommit: // EndTxn
		allowedEmptyAbort := t.state == PrepareAbort && supportsEpochBump(t.clientTV) &&
			(m.state == Empty || m.state == CompleteCommit || m.state == CompleteAbort)
		ok = m.validProducerEpoch(t) && maps.Equal(m.partitions, t.partitions) && m.timeoutMs == t.timeoutMs &&
			(m.startMs == t.startMs || allowedEmptyAbort)
	case CompleteAbort, CompleteCommit: // markers written
		ok = m.validProducerEpoch(t) && m.timeoutMs == t.timeoutMs && t.startMs != -1
	case PrepareEpochFence, Dead:
		ok = false
	}
	if !ok {
		return invariant(false, "%s: illegal transition from %s to %+v", m.txnID, m.state, t)
	}
	m.producerID, m.prevProducerID, m.nextProducerID = t.producerID, t.prevProducerID, t.nextProducerID
	m.producerEpoch, m.lastProducerEpoch = t.producerEpoch, t.lastProducerEpoch
	m.timeoutMs, m.partitions = t.timeoutMs, t.partitions
	m.startMs, m.lastUpdateMs, m.clientTV = t.startMs, t.lastUpdateMs, t.clientTV
	m.pending = noState
	m.state = t.state
	return nil
}

// validProducerEpoch (TransactionMetadata.validProducerEpoch): TV2's epoch
// bumps and producer id rotation are legal changes of the epoch.
func (m *metadata) validProducerEpoch(t transit) bool {
	v2 := supportsEpochBump(t.clientTV)
	if v2 && (t.state == CompleteCommit || t.state == CompleteAbort) && t.producerEpoch == 0 {
		return t.lastProducerEpoch == m.lastProducerEpoch && t.prevProducerID == m.producerID
	}
	if v2 && (t.state == PrepareCommit || t.state == PrepareAbort) {
		return t.lastProducerEpoch == m.producerEpoch && t.producerID == m.producerID
	}
	return t.producerEpoch == m.producerEpoch && t.producerID == m.producerID
}

func (m *metadata) validProducerEpochBump(t transit) bool {
	return t.producerEpoch == m.producerEpoch+1 || (t.producerEpoch == 0 && t.producerID != m.producerID)
}
