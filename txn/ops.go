package txn

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"
)

// The operations below run on a shard's event loop. Each checks the request
// against the transaction's state exactly as Kafka's TransactionCoordinator
// does, prepares the transition (which marks the transaction pending),
// appends its record and applies it when the record is committed.
//
// spare is a producer id fetched off the loop for operations that need a
// new one; an operation that needs one and has none returns
// errNeedProducerID before changing anything, and is run again with one.

type initResult struct {
	producerID    int64
	producerEpoch int16
}

type endResult struct {
	producerID    int64
	producerEpoch int16
}

// initProducerID is handleInitProducerId and prepareInitProducerIdTransit.
func (s *shard) initProducerID(txnID string, timeoutMs int32, expected *ProducerIDAndEpoch, spare *int64, res *initResult) error {
	now := s.ctx.NowMs()
	m := s.txns[txnID]
	if m == nil {
		if *spare < 0 {
			return errNeedProducerID
		}
		// Kafka puts the new metadata in its cache before writing it: if the
		// write fails the id stays, Empty at epoch -1, and the retry bumps it.
		m = newMetadata(txnID, *spare, timeoutMs, now)
		*spare = noProducerID
		s.txns[txnID] = m
	}
	if m.pendingInProgress() {
		return kerr.ConcurrentTransactions
	}
	if expected != nil && !validExpectedProducerID(m, *expected) {
		return kerr.ProducerFenced
	}
	switch m.state {
	case PrepareAbort, PrepareCommit:
		return kerr.ConcurrentTransactions

	case CompleteAbort, CompleteCommit, Empty:
		var (
			t   transit
			err error
		)
		if m.isProducerEpochExhausted() && (expected == nil || expected.Epoch == m.producerEpoch) {
			if *spare < 0 {
				return errNeedProducerID
			}
			t, err = m.prepareProducerIdRotation(*spare, timeoutMs, now, expected != nil)
			*spare = noProducerID
		} else {
			var e *int16
			if expected != nil {
				e = &expected.Epoch
			}
			t, err = m.prepareIncrementProducerEpoch(timeoutMs, e, now)
		}
		if err != nil {
			return err
		}
		if err := s.write(m, t, func() {
			s.log.Info("initialized transactional id", zap.String("transactional_id", txnID),
				zap.Int64("producer_id", t.producerID), zap.Int16("producer_epoch", t.producerEpoch))
		}); err != nil {
			return err
		}
		res.producerID, res.producerEpoch = t.producerID, t.producerEpoch
		return nil

	case Ongoing:
		// A new producer instance: abort the ongoing transaction with a
		// bumped epoch that fences the old one, and let the client retry
		// (CONCURRENT_TRANSACTIONS once the abort is written). The retry
		// bumps again, moving to a new producer id if that exhausts the
		// epoch. Aborts the coordinator starts follow the cluster's
		// transaction.version.
		tv := s.c.transactionVersion()
		if supportsEpochBump(tv) && m.isProducerEpochExhausted() && *spare < 0 {
			return errNeedProducerID
		}
		f, err := m.prepareFenceProducerEpoch()
		if err != nil {
			return err
		}
		var er endResult
		err = s.endTransaction(txnID, f.producerID, f.producerEpoch, false, false, tv, spare, &er)
		if m.pending == PrepareEpochFence {
			m.pending = noState
		}
		if err != nil {
			return err
		}
		return kerr.ConcurrentTransactions
	}
	s.log.Error("transactional id in a state it can never be in", zap.String("transactional_id", txnID), zap.String("state", m.state.String()))
	return errIllegalTransition
}

// validExpectedProducerID (KIP-360): a producer naming its id and epoch
// is fenced unless the metadata was just created (epoch -1), the id is the
// current one (the epoch is checked by the bump), or it is the previous id
// and its epoch was exhausted (a retry of the bump that moved it to a new
// id).
func validExpectedProducerID(m *metadata, e ProducerIDAndEpoch) bool {
	return m.producerEpoch == noProducerEpoch || e.ID == m.producerID ||
		(e.ID == m.prevProducerID && isEpochExhausted(e.Epoch))
}

// addPartitions is handleAddPartitionsToTransaction.
func (s *shard) addPartitions(txnID string, producerID int64, epoch int16, parts []TopicPartition, clientTV int16) error {
	m := s.txns[txnID]
	switch {
	case m == nil:
		return kerr.InvalidProducerIDMapping
	case m.pendingInProgress():
		// First, so that a pending TV2 move to a new producer id completes
		// before the id is compared.
		return kerr.ConcurrentTransactions
	case m.producerID != producerID:
		return kerr.InvalidProducerIDMapping
	case m.producerEpoch != epoch:
		return kerr.ProducerFenced
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return kerr.ConcurrentTransactions
	case m.state == Ongoing && m.partitions.containsAll(parts):
		return nil // already in the transaction
	}
	t, err := m.prepareAddPartitions(parts, s.ctx.NowMs(), clientTV)
	if err != nil {
		return err
	}
	return s.write(m, t, nil)
}

// verifyPartitions is handleVerifyPartitionsInTransaction. The pending state
// is not checked: partitions join the metadata when their record is
// committed, and the partition leader's write is checked again.
func (s *shard) verifyPartitions(txnID string, producerID int64, epoch int16, parts []TopicPartition) (map[TopicPartition]error, error) {
	m := s.txns[txnID]
	switch {
	case m == nil:
		return nil, kerr.InvalidProducerIDMapping
	case m.producerID != producerID:
		return nil, kerr.InvalidProducerIDMapping
	case m.producerEpoch != epoch:
		return nil, kerr.ProducerFenced
	case m.state == PrepareCommit || m.state == PrepareAbort:
		return nil, kerr.ConcurrentTransactions
	}
	out := make(map[TopicPartition]error, len(parts))
	for _, tp := range parts {
		if _, ok := m.partitions[tp]; ok {
			out[tp] = nil
		} else {
			out[tp] = kerr.TransactionAbortable
		}
	}
	return out, nil
}

// endTransaction is TransactionCoordinator.endTransaction: EndTxn from
// clients (isFromClient), and the aborts the coordinator starts itself to
// fence a producer (the transaction's pending state is PrepareEpochFence).
// res gets the producer id and epoch a TV2 client continues with.
func (s *shard) endTransaction(txnID string, producerID int64, epoch int16, commit, isFromClient bool, clientTV int16, spare *int64, res *endResult) error {
	if !supportsEpochBump(clientTV) {
		return s.endTransactionV1(txnID, producerID, epoch, commit, isFromClient)
	}
	return s.endTransactionV2(txnID, producerID, epoch, commit, isFromClient, clientTV, spare, res)
}

func resultName(commit bool) string {
	if commit {
		return "COMMIT"
	}
	return "ABORT"
}

func (s *shard) invalidTxnState(m *metadata, commit bool) error {
	s.log.Warn("transaction state does not accept the end transaction result", zap.String("transactional_id", m.txnID),
		zap.String("state", m.state.String()), zap.String("result", resultName(commit)))
	return kerr.InvalidTxnState
}

// endTransactionV1 is endTransactionWithTV1: the epoch stays the same, and
// the request's epoch must be the current one.
func (s *shard) endTransactionV1(txnID string, producerID int64, epoch int16, commit, isFromClient bool) error {
	m := s.txns[txnID]
	switch {
	case m == nil:
		return kerr.InvalidProducerIDMapping
	case m.producerID != producerID:
		return kerr.InvalidProducerIDMapping
	case (isFromClient && epoch != m.producerEpoch) || epoch < m.producerEpoch:
		// Clients must not bump; the coordinator's own fencing abort does.
		return kerr.ProducerFenced
	case m.pendingInProgress() && m.pending != PrepareEpochFence:
		return kerr.ConcurrentTransactions
	}
	switch m.state {
	case Ongoing:
		next := PrepareAbort
		if commit {
			next = PrepareCommit
		}
		isEpochFence := false
		if next == PrepareAbort && m.pending == PrepareEpochFence {
			// Kafka bumps the epoch in memory before writing the fencing
			// abort, and keeps it if the write fails (hasFailedEpochFence):
			// the old producer is fenced either way, and the next fence
			// does not bump twice.
			isEpochFence = true
			m.pending = noState
			m.producerEpoch = epoch
			m.lastProducerEpoch = noProducerEpoch
		}
		t, err := m.prepareAbortOrCommit(next, TV0, noProducerID, s.ctx.NowMs(), false)
		if err != nil {
			return err
		}
		if err := s.write(m, t, func() { s.startMarkers(m) }); err != nil {
			if isEpochFence {
				m.hasFailedEpochFence = true
				s.log.Warn("writing an epoch fence failed; the epoch was bumped but not returned to the client",
					zap.String("transactional_id", txnID), zap.Int16("producer_epoch", m.producerEpoch), zap.Error(err))
			}
			return err
		}
		return nil
	case CompleteCommit:
		if commit {
			return nil
		}
		return s.invalidTxnState(m, commit)
	case CompleteAbort:
		if !commit {
			return nil
		}
		return s.invalidTxnState(m, commit)
	case PrepareCommit:
		if commit {
			return kerr.ConcurrentTransactions
		}
		return s.invalidTxnState(m, commit)
	case PrepareAbort:
		if !commit {
			return kerr.ConcurrentTransactions
		}
		return s.invalidTxnState(m, commit)
	case Empty:
		return s.invalidTxnState(m, commit)
	}
	s.log.Error("transactional id in a state it can never be in", zap.String("transactional_id", txnID), zap.String("state", m.state.String()))
	return errIllegalTransition
}

// endTransactionV2 is endTransaction for transaction version 2 (KIP-890
// part 2): every commit and abort bumps the epoch, so a retried EndTxn is
// recognised by its epoch being one below the current one (or, after the
// epoch overflowed into a new producer id, by the previous id at the last
// epoch). Kafka's table for the states with no open transaction
// (PF = PRODUCER_FENCED, ITS = INVALID_TXN_STATE, EB = epoch bump):
//
//	               Abort           Commit
//	               retry  current  retry  current
//	Empty          PF     EB       PF     ITS
//	CompleteAbort  NONE   EB       ITS    ITS
//	CompleteCommit ITS    EB       NONE   ITS
func (s *shard) endTransactionV2(txnID string, producerID int64, epoch int16, commit, isFromClient bool, clientTV int16, spare *int64, res *endResult) error {
	m := s.txns[txnID]
	if m == nil {
		return kerr.InvalidProducerIDMapping
	}
	// A retry that needs no write answers the current id and epoch.
	res.producerID, res.producerEpoch = m.producerID, m.producerEpoch
	isEpochFence := m.pending == PrepareEpochFence
	cur, req := int32(m.producerEpoch), int32(epoch)
	retryOnOverflow := !isEpochFence && m.prevProducerID == producerID && epoch == maxEpoch-1 && m.producerEpoch == 0
	retryOnEpochBump := !isEpochFence && cur == req+1
	var isValidEpoch bool
	if !isEpochFence {
		// The same epoch is the next EndTxn, not a retry.
		switch m.state {
		case PrepareCommit, PrepareAbort:
			isValidEpoch = retryOnEpochBump
		case CompleteCommit, CompleteAbort:
			isValidEpoch = retryOnEpochBump || retryOnOverflow || req == cur
		default:
			isValidEpoch = req == cur
		}
	} else {
		isValidEpoch = (!isFromClient || req == cur) && req >= cur
	}
	isRetry := retryOnEpochBump || retryOnOverflow

	prepare := func(next State, noPartitionAdded bool) error {
		// Every TV2 completion bumps the epoch, so an exhausted producer
		// (fencing aborts included) moves to a new producer id.
		nextPID := noProducerID
		if m.isProducerEpochExhausted() {
			if *spare < 0 {
				return errNeedProducerID
			}
			nextPID, *spare = *spare, noProducerID
		}
		if next == PrepareAbort && isEpochFence {
			// The abort takes the fence's place; prepareAbortOrCommit
			// bumps the epoch itself.
			m.pending = noState
		}
		t, err := m.prepareAbortOrCommit(next, clientTV, nextPID, s.ctx.NowMs(), noPartitionAdded)
		if err != nil {
			return err
		}
		if err := s.write(m, t, func() { s.startMarkers(m) }); err != nil {
			if isEpochFence {
				// TV2 may bump again on the next attempt: the bump was
				// never applied.
				s.log.Warn("writing an epoch fence failed", zap.String("transactional_id", txnID), zap.Error(err))
			}
			return err
		}
		// What prepareComplete will move to: the next producer id at
		// epoch 0 after an overflow, else the bumped epoch.
		if nextPID != noProducerID {
			res.producerID, res.producerEpoch = nextPID, 0
		} else {
			res.producerID, res.producerEpoch = t.producerID, t.producerEpoch
		}
		return nil
	}

	switch {
	case m.pendingInProgress() && m.pending != PrepareEpochFence:
		// First: a pending move to a new producer id must complete before
		// the id is compared.
		return kerr.ConcurrentTransactions
	case m.producerID != producerID && !retryOnOverflow:
		return kerr.InvalidProducerIDMapping
	case !isValidEpoch:
		return kerr.ProducerFenced
	}
	switch m.state {
	case Ongoing:
		if commit {
			return prepare(PrepareCommit, false)
		}
		return prepare(PrepareAbort, false)
	case CompleteCommit:
		switch {
		case commit && isRetry:
			return nil
		case commit:
			return s.invalidTxnState(m, commit)
		case isRetry:
			return s.invalidTxnState(m, commit)
		}
		return prepare(PrepareAbort, true)
	case CompleteAbort:
		switch {
		case !commit && isRetry:
			return nil
		case !commit:
			return prepare(PrepareAbort, true)
		}
		return s.invalidTxnState(m, commit)
	case PrepareCommit:
		if commit {
			return kerr.ConcurrentTransactions
		}
		return s.invalidTxnState(m, commit)
	case PrepareAbort:
		if !commit {
			return kerr.ConcurrentTransactions
		}
		return s.invalidTxnState(m, commit)
	case Empty:
		if !commit {
			return prepare(PrepareAbort, true)
		}
		return s.invalidTxnState(m, commit)
	}
	s.log.Error("transactional id in a state it can never be in", zap.String("transactional_id", txnID), zap.String("state", m.state.String()))
	return errIllegalTransition
}
