package txn

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// shard is the transaction state of one __transaction_state partition
// (Kafka's TxnMetadataCacheEntry plus the parts of TransactionStateManager
// and the marker channel that concern it). The runtime calls it on the
// partition's event loop only: no lock.
type shard struct {
	c   *Coordinator
	ctx *coordinator.Context
	log *zap.Logger

	txns map[string]*metadata
	// markers are the transactions whose markers are being written
	// (Kafka's transactionsWithPendingMarkers).
	markers map[string]*pendingComplete
	// fetchingPID are timed-out transactions waiting for a producer id to
	// abort with (TV2 with an exhausted epoch).
	fetchingPID map[string]bool
}

func newShard(c *Coordinator, ctx *coordinator.Context) *shard {
	return &shard{c: c, ctx: ctx, log: ctx.Logger(), txns: map[string]*metadata{},
		markers: map[string]*pendingComplete{}, fetchingPID: map[string]bool{}}
}

const (
	timerAbortTimedOut = "abort-timed-out"
	timerExpireIDs     = "expire-transactional-ids"
)

// Replay applies one record read back while loading
// (loadTransactionMetadata). Control markers are not expected here;
// records of unknown versions are skipped as Kafka does. A corrupt record
// is skipped with a warning (Kafka stops loading the partition there and
// serves what it read so far).
func (s *shard) Replay(r coordinator.Loaded) error {
	if r.Marker != nil {
		return nil
	}
	if r.Key == nil {
		s.log.Warn("skipping a __transaction_state record without a key", zap.Int64("offset", r.Offset))
		return nil
	}
	d, err := decodeRecord(r.Key, r.Value)
	switch {
	case errors.Is(err, errUnknownKeyVersion), errors.Is(err, errUnknownValueVersion):
		s.log.Warn("skipping a __transaction_state record of an unknown version; it could be a leftover from an aborted upgrade",
			zap.Int64("offset", r.Offset), zap.Error(err))
		return nil
	case err != nil:
		s.log.Warn("skipping a corrupt __transaction_state record", zap.Int64("offset", r.Offset), zap.Error(err))
		return nil
	}
	if d.meta == nil {
		delete(s.txns, d.txnID)
	} else {
		s.txns[d.txnID] = d.meta
	}
	return nil
}

// Loaded resumes what the log left half done: transactions in
// PrepareCommit or PrepareAbort get their markers written and complete
// (this is what finishes a commit after the coordinator failed over), and
// starts the periodic timeout and expiration passes.
func (s *shard) Loaded() {
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		if m.state == PrepareCommit || m.state == PrepareAbort {
			s.log.Info("resuming transaction markers after loading", zap.String("transactional_id", id),
				zap.String("state", m.state.String()), zap.Int64("producer_id", m.producerID), zap.Int16("producer_epoch", m.producerEpoch))
			s.startMarkers(m)
		}
	}
	s.ctx.Schedule(timerAbortTimedOut, s.c.cfg.AbortTimedOutInterval, s.abortTimedOut)
	s.ctx.Schedule(timerExpireIDs, s.c.cfg.RemoveExpiredInterval, s.expireTransactionalIDs)
}

// Unloaded drops the markers still queued for this partition
// (removeMarkersForTxnTopicPartition); answers to those in flight are
// ignored, as they name an older coordinator epoch.
func (s *shard) Unloaded() {
	s.c.markers.dropShard(s.ctx.Partition(), s.ctx.LeaderEpoch())
}

func (s *shard) sortedIDs() []string {
	ids := slices.Collect(maps.Keys(s.txns))
	slices.Sort(ids)
	return ids
}

// appendTransit writes the record of a transit. The value version follows
// the cluster's transaction.version at the time of writing.
func (s *shard) appendTransit(txnID string, t transit) error {
	rec := coordinator.Record{Key: encodeKey(txnID), Value: encodeValue(t, s.c.transactionVersion())}
	if err := s.ctx.Append(coordinator.Batch{ProducerID: coordinator.NoProducer, Records: []coordinator.Record{rec}}); err != nil {
		return appendErr(err)
	}
	return nil
}

// write appends a prepared transit (m.pending is set) and applies it once
// it is committed, then runs onCommit (Kafka's appendTransactionToLog and
// its callback). A failed append resets the pending state and returns the
// coordinator error. Between the append and the commit the transaction
// stays pending, so other requests for it answer CONCURRENT_TRANSACTIONS.
func (s *shard) write(m *metadata, t transit, onCommit func()) error {
	if err := s.appendTransit(m.txnID, t); err != nil {
		s.log.Info("appending to the transaction log failed; aborting the transition",
			zap.String("transactional_id", m.txnID), zap.String("to", t.state.String()), zap.Error(err))
		m.pending = noState
		return err
	}
	s.ctx.Defer(func(err error) {
		if err != nil {
			return // unloaded before the commit: the shard is dropped
		}
		if err := m.completeTransition(t); err != nil {
			s.log.Error("completing a transaction state transition failed", zap.String("transactional_id", m.txnID), zap.Error(err))
			m.pending = noState
			return
		}
		if onCommit != nil {
			onCommit()
		}
	})
	return nil
}

// listFilter is a checked ListFilter.
type listFilter struct {
	states      map[State]bool
	anyState    bool
	producerIDs map[int64]bool
	durationMs  int64
	pattern     *regexp.Regexp
}

func newListFilter(f ListFilter) (listFilter, []string, error) {
	lf := listFilter{states: map[State]bool{}, anyState: len(f.States) == 0, producerIDs: map[int64]bool{}, durationMs: f.DurationMs}
	var unknown []string
	for _, name := range f.States {
		if st, ok := StateFromName(name); ok {
			lf.states[st] = true
		} else {
			unknown = append(unknown, name)
		}
	}
	for _, id := range f.ProducerIDs {
		lf.producerIDs[id] = true
	}
	if f.Pattern != nil && *f.Pattern != "" {
		// Kafka compiles the pattern with RE2/J and matches the whole id;
		// Go's regexp is RE2.
		re, err := regexp.Compile(`^(?:` + *f.Pattern + `)$`)
		if err != nil {
			return listFilter{}, nil, fmt.Errorf("%w: transaction ID pattern `%s` is not a valid regular expression: %v",
				kerr.InvalidRegularExpression, *f.Pattern, err)
		}
		lf.pattern = re
	}
	return lf, unknown, nil
}

func (s *shard) list(f listFilter) []ListedTransaction {
	now := s.ctx.NowMs()
	var out []ListedTransaction
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		switch {
		case m.state == Dead: // being expired
		case len(f.producerIDs) > 0 && !f.producerIDs[m.producerID]:
		case !f.anyState && !f.states[m.state]:
		case f.durationMs >= 0 && now-m.startMs <= f.durationMs:
		case f.pattern != nil && !f.pattern.MatchString(id):
		default:
			out = append(out, ListedTransaction{TransactionalID: id, ProducerID: m.producerID, State: m.state})
		}
	}
	return out
}

// abortTimedOut aborts the ongoing transactions that outlived their
// timeout, fencing their producers with an epoch bump
// (abortTimedOutTransactions), and runs again after
// transaction.abort.timed.out.transaction.cleanup.interval.ms.
func (s *shard) abortTimedOut() {
	now := s.ctx.NowMs()
	for _, id := range s.sortedIDs() {
		if m := s.txns[id]; s.timedOut(m, now) {
			s.abortTimedOutTxn(m, noProducerID)
		}
	}
	s.ctx.Schedule(timerAbortTimedOut, s.c.cfg.AbortTimedOutInterval, s.abortTimedOut)
}

// timedOut (timedOutTransactions): ongoing, nothing pending, and started
// longer than its timeout ago. A timeout of Int.MaxValue marks a KIP-939
// two-phase commit transaction, which never times out.
func (s *shard) timedOut(m *metadata, now int64) bool {
	return m != nil && !m.pendingInProgress() && m.state == Ongoing && m.timeoutMs != math.MaxInt32 &&
		m.startMs+int64(m.timeoutMs) < now
}

func (s *shard) abortTimedOutTxn(m *metadata, spare int64) {
	tv := s.c.transactionVersion()
	if supportsEpochBump(tv) && m.isProducerEpochExhausted() && spare < 0 {
		s.fetchProducerIDForAbort(m)
		return
	}
	f, err := m.prepareFenceProducerEpoch()
	if err != nil {
		s.log.Error("fencing a timed out transaction failed", zap.String("transactional_id", m.txnID), zap.Error(err))
		return
	}
	s.log.Info("aborting a transaction that timed out", zap.String("transactional_id", m.txnID),
		zap.Int64("producer_id", m.producerID), zap.Int16("producer_epoch", m.producerEpoch), zap.Int32("timeout_ms", m.timeoutMs))
	var res endResult
	err = s.endTransaction(m.txnID, f.producerID, f.producerEpoch, false, false, tv, &spare, &res)
	if m.pending == PrepareEpochFence {
		m.pending = noState
	}
	switch {
	case err == nil:
	case errors.Is(err, kerr.InvalidProducerIDMapping), errors.Is(err, kerr.ProducerFenced), errors.Is(err, kerr.ConcurrentTransactions):
		s.log.Debug("rollback of a timed out transaction cancelled", zap.String("transactional_id", m.txnID), zap.Error(err))
	default:
		s.log.Warn("rollback of a timed out transaction failed", zap.String("transactional_id", m.txnID), zap.Error(err))
	}
}

// fetchProducerIDForAbort gets, off the loop, the producer id a TV2 abort
// of an exhausted producer moves to, then aborts if the transaction is
// still the same and still timed out.
func (s *shard) fetchProducerIDForAbort(m *metadata) {
	if s.fetchingPID[m.txnID] || s.c.cfg.ProducerIDs == nil {
		return
	}
	s.fetchingPID[m.txnID] = true
	id, pid, epoch, partition := m.txnID, m.producerID, m.producerEpoch, s.ctx.Partition()
	c := s.c
	c.goBackground(func() {
		next, err := c.cfg.ProducerIDs.GenerateProducerID(c.ctx)
		c.rt.Post(partition, "abort timed out transaction", func(s *shard) error {
			delete(s.fetchingPID, id)
			if err != nil {
				return fmt.Errorf("generating a producer id to abort %s: %w", id, err)
			}
			m := s.txns[id]
			if m == nil || m.producerID != pid || m.producerEpoch != epoch || !s.timedOut(m, s.ctx.NowMs()) {
				return nil
			}
			s.abortTimedOutTxn(m, next)
			return nil
		})
	})
}

// recordOverhead bounds what a tombstone adds to a batch besides its key
// (record header varints, attributes, deltas).
const recordOverhead = 32

// batchOverhead is the record batch header.
const batchOverhead = 61

// expireTransactionalIDs writes tombstones for the transactional ids that
// have been idle for transactional.id.expiration.ms with no open
// transaction, and forgets them once the tombstones are committed
// (removeExpiredTransactionalIds), in batches below message.max.bytes.
func (s *shard) expireTransactionalIDs() {
	now := s.ctx.NowMs()
	cutoff := now - s.c.cfg.IDExpiration.Milliseconds()
	var (
		recs  []coordinator.Record
		metas []*metadata
		size  = batchOverhead
	)
	flush := func() {
		if len(recs) == 0 {
			return
		}
		expired := metas
		err := s.ctx.Append(coordinator.Batch{ProducerID: coordinator.NoProducer, Records: recs})
		recs, metas, size = nil, nil, batchOverhead
		if err != nil {
			s.log.Warn("writing tombstones for expired transactional ids failed", zap.Int("count", len(expired)), zap.Error(appendErr(err)))
			for _, m := range expired {
				m.pending = noState
			}
			return
		}
		s.ctx.Defer(func(err error) {
			for _, m := range expired {
				if err == nil && s.txns[m.txnID] == m && m.pending == Dead {
					delete(s.txns, m.txnID)
					s.log.Debug("expired transactional id", zap.String("transactional_id", m.txnID))
				} else {
					m.pending = noState
				}
			}
		})
	}
	for _, id := range s.sortedIDs() {
		m := s.txns[id]
		if m.pendingInProgress() || !m.state.expirationAllowed() || m.lastUpdateMs > cutoff {
			continue
		}
		rec := coordinator.Record{Key: encodeKey(id)}
		if n := len(rec.Key) + recordOverhead; size+n > s.c.cfg.MaxBatchBytes && len(recs) > 0 {
			flush()
		}
		if _, err := m.prepareDead(); err != nil {
			s.log.Error("expiring a transactional id failed", zap.String("transactional_id", id), zap.Error(err))
			continue
		}
		recs = append(recs, rec)
		metas = append(metas, m)
		size += len(rec.Key) + recordOverhead
	}
	flush()
	s.ctx.Schedule(timerExpireIDs, s.c.cfg.RemoveExpiredInterval, s.expireTransactionalIDs)
}
