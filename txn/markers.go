package txn

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// Transaction markers (Kafka's TransactionMarkerChannelManager and
// TransactionMarkerRequestCompletionHandler).
//
// Once PrepareCommit or PrepareAbort is committed the transaction's pending
// state becomes CompleteCommit/CompleteAbort and its partitions are grouped
// by their current leader. The marker channel keeps one queue per
// destination broker and one request in flight per broker: a WriteTxnMarkers
// carrying the markers of every transaction queued for that broker, sent
// from its own goroutine (never from an event loop). Answers go back to
// each transaction's event loop (Runtime.Post), which drops the partitions
// that are written, sends the retriable ones again after re-resolving their
// leader, and, once none is left, writes the Complete state. Partitions
// whose topic is gone are dropped; partitions with no leader (or a leader
// with no inter-broker endpoint) wait for a metadata change. A fenced
// coordinator or producer epoch stops the markers of that transaction.

// markerVersion is the WriteTxnMarkers version Kafka 4.4 sends to a 4.4
// broker: v2 carries the transaction version of each marker (KIP-1228).
// The broker sends it at the highest version its peer serves.
const markerVersion = 2

// unknownLeaderRetry: markers waiting for a partition leader are tried
// again on every metadata change, and at least this often.
const unknownLeaderRetry = time.Second

// pendingComplete is a transaction whose markers are being written (Kafka's
// PendingCompleteTxn); its fields do not change once created, so marker
// goroutines may hold it (they only compare it).
type pendingComplete struct {
	txnID         string
	commit        bool
	complete      transit // the Complete state written when every marker is
	producerID    int64
	producerEpoch int16
	tv            int16
}

// markerEntry is one transaction's markers for one broker (Kafka's
// PendingCompleteTxnAndMarkerEntry).
type markerEntry struct {
	shard            int32 // the __transaction_state partition
	coordinatorEpoch int32
	pc               *pendingComplete
	partitions       []TopicPartition
}

// startMarkers starts writing the markers of a transaction whose
// PrepareCommit/PrepareAbort is committed (addTxnMarkersToSend).
func (s *shard) startMarkers(m *metadata) {
	commit := m.state == PrepareCommit
	t, err := m.prepareComplete(s.ctx.NowMs())
	if err != nil {
		s.log.Error("preparing to complete a transaction failed", zap.String("transactional_id", m.txnID), zap.Error(err))
		return
	}
	pc := &pendingComplete{txnID: m.txnID, commit: commit, complete: t, producerID: m.producerID,
		producerEpoch: m.producerEpoch, tv: m.clientTV}
	if prev := s.markers[m.txnID]; prev != nil {
		s.log.Info("replaced pending markers of a transaction", zap.String("transactional_id", m.txnID))
	}
	s.markers[m.txnID] = pc
	s.sendMarkers(pc, m.partitions.sorted())
}

// leaderState says where a partition's marker goes.
type leaderState uint8

const (
	leaderKnown   leaderState = iota
	leaderUnknown             // no leader, or no endpoint: wait
	leaderDeleted             // the topic or partition is gone: skip
)

func (c *Coordinator) leaderOf(img *metadatacache.Image, tp TopicPartition) (int32, leaderState) {
	t := img.TopicByName(tp.Topic)
	if t == nil {
		return -1, leaderDeleted
	}
	p := t.Partition(tp.Partition)
	if p == nil {
		return -1, leaderDeleted
	}
	if p.Leader < 0 {
		return -1, leaderUnknown
	}
	b := img.Broker(p.Leader)
	if b == nil {
		return -1, leaderUnknown
	}
	if c.cfg.InterBrokerListener != "" {
		if _, ok := b.Listener(c.cfg.InterBrokerListener); !ok {
			return -1, leaderUnknown
		}
	}
	return p.Leader, leaderKnown
}

// sendMarkers queues the markers of parts with their current leaders
// (addTxnMarkersToBrokerQueue).
func (s *shard) sendMarkers(pc *pendingComplete, parts []TopicPartition) {
	m := s.txns[pc.txnID]
	if m == nil {
		return
	}
	img := s.c.cfg.Image()
	byLeader := map[int32][]TopicPartition{}
	var unknown, deleted []TopicPartition
	for _, tp := range parts {
		switch leader, st := s.c.leaderOf(img, tp); st {
		case leaderKnown:
			byLeader[leader] = append(byLeader[leader], tp)
		case leaderUnknown:
			unknown = append(unknown, tp)
		case leaderDeleted:
			deleted = append(deleted, tp)
		}
	}
	if len(deleted) > 0 {
		s.log.Info("skipping transaction markers of partitions that no longer exist", zap.String("transactional_id", pc.txnID),
			zap.Stringers("partitions", deleted))
		for _, tp := range deleted {
			_ = m.removePartition(tp)
		}
	}
	entry := func(tps []TopicPartition) *markerEntry {
		return &markerEntry{shard: s.ctx.Partition(), coordinatorEpoch: s.ctx.LeaderEpoch(), pc: pc, partitions: tps}
	}
	leaders := make([]int32, 0, len(byLeader))
	for id := range byLeader {
		leaders = append(leaders, id)
	}
	slices.Sort(leaders)
	for _, id := range leaders {
		s.c.markers.add(id, entry(byLeader[id]))
	}
	if len(unknown) > 0 {
		s.log.Debug("transaction markers wait for partition leaders", zap.String("transactional_id", pc.txnID),
			zap.Stringers("partitions", unknown))
		s.c.markers.addUnknown(entry(unknown))
	}
	s.maybeWriteCompletion(pc.txnID)
}

// current reports whether e is still the shard's work: the same coordinator
// epoch and the same pending markers (Kafka cancels markers when either
// changed).
func (s *shard) current(e *markerEntry) bool {
	return e.coordinatorEpoch == s.ctx.LeaderEpoch() && s.markers[e.pc.txnID] == e.pc
}

// resendMarkers re-resolves the leaders of e's partitions and queues them
// again (retries, and markers that waited for a leader).
func (s *shard) resendMarkers(e *markerEntry) {
	if s.current(e) {
		s.sendMarkers(e.pc, e.partitions)
	}
}

// removeMarkers stops writing a transaction's markers (removeMarkersForTxn):
// its pending state stays, as in Kafka, until the partition is loaded again.
func (s *shard) removeMarkers(pc *pendingComplete) {
	if s.markers[pc.txnID] == pc {
		delete(s.markers, pc.txnID)
	}
}

// onMarkerResponse handles the answer to a WriteTxnMarkers for e (Kafka's
// TransactionMarkerRequestCompletionHandler). errs holds the partitions'
// error codes; sendErr is a transport error (the request is sent again).
func (s *shard) onMarkerResponse(e *markerEntry, errs map[TopicPartition]int16, sendErr error) {
	if !s.current(e) {
		return
	}
	pc := e.pc
	m := s.txns[pc.txnID]
	if m == nil {
		s.log.Error("transaction with pending markers is not in the cache", zap.String("transactional_id", pc.txnID))
		return
	}
	if sendErr != nil {
		s.log.Debug("sending transaction markers failed; sending them again", zap.String("transactional_id", pc.txnID), zap.Error(sendErr))
		s.c.markers.retry(e)
		return
	}
	var retry []TopicPartition
	abort := false
	for _, tp := range e.partitions {
		code, ok := errs[tp]
		if !ok {
			// Kafka would wait forever for a partition missing from the
			// answer; send it again.
			retry = append(retry, tp)
			continue
		}
		switch err := kerr.ErrorForCode(code); err {
		case nil, kerr.UnsupportedForMessageFormat, kerr.UnsupportedVersion:
			// Written; or the producer could never have written to a
			// partition that cannot take a marker.
			_ = m.removePartition(tp)
		case kerr.UnknownTopicOrPartition, kerr.NotLeaderForPartition, kerr.NotEnoughReplicas,
			kerr.NotEnoughReplicasAfterAppend, kerr.RequestTimedOut, kerr.KafkaStorageError:
			retry = append(retry, tp)
		case kerr.InvalidProducerEpoch, kerr.TransactionCoordinatorFenced:
			s.log.Info("writing a transaction marker failed for good; no more markers are sent for the transaction",
				zap.String("transactional_id", pc.txnID), zap.Stringer("partition", tp), zap.Error(err))
			s.removeMarkers(pc)
			abort = true
		default:
			// Kafka throws IllegalStateException (CORRUPT_MESSAGE,
			// MESSAGE_TOO_LARGE, ... or anything unexpected) and the
			// transaction's markers stop.
			s.log.Error("unexpected error writing a transaction marker", zap.String("transactional_id", pc.txnID),
				zap.Stringer("partition", tp), zap.Error(err))
			s.removeMarkers(pc)
			abort = true
		}
	}
	if abort {
		return
	}
	if len(retry) > 0 {
		s.c.markers.retry(&markerEntry{shard: e.shard, coordinatorEpoch: e.coordinatorEpoch, pc: pc, partitions: retry})
		return
	}
	s.maybeWriteCompletion(pc.txnID)
}

// maybeWriteCompletion writes the Complete state once every marker of the
// transaction is written.
func (s *shard) maybeWriteCompletion(txnID string) {
	pc := s.markers[txnID]
	m := s.txns[txnID]
	if pc == nil || m == nil || len(m.partitions) > 0 {
		return
	}
	delete(s.markers, txnID)
	s.writeCompletion(m, pc)
}

// writeCompletion appends CompleteCommit/CompleteAbort (writeTxnCompletion
// and tryAppendToLog); COORDINATOR_NOT_AVAILABLE is retried, keeping the
// pending state.
func (s *shard) writeCompletion(m *metadata, pc *pendingComplete) {
	if m.pending != pc.complete.state || s.txns[m.txnID] != m {
		return
	}
	err := s.appendTransit(m.txnID, pc.complete)
	switch err {
	case nil:
		s.ctx.Defer(func(err error) {
			if err != nil {
				return
			}
			if err := m.completeTransition(pc.complete); err != nil {
				s.log.Error("completing a transaction failed", zap.String("transactional_id", m.txnID), zap.Error(err))
				m.pending = noState
				return
			}
			s.log.Debug("completed transaction", zap.String("transactional_id", m.txnID), zap.String("state", m.state.String()))
		})
	case kerr.CoordinatorNotAvailable:
		s.log.Info("appending a transaction's completion failed; retrying", zap.String("transactional_id", m.txnID), zap.Error(err))
		s.ctx.Schedule("complete/"+m.txnID, s.c.cfg.MarkerRetryBackoff, func() { s.writeCompletion(m, pc) })
	default:
		s.log.Info("appending a transaction's completion failed", zap.String("transactional_id", m.txnID), zap.Error(err))
		m.pending = noState
	}
}

// markerChannel queues markers per destination broker and sends them
// (Kafka's TransactionMarkerChannelManager with its InterBrokerSendThread).
// mu is never held while sending or posting; timers are scheduled and
// stopped under it (the clock's lock, a leaf).
type markerChannel struct {
	c       *Coordinator
	backoff time.Duration

	mu           lockrank.Mutex
	queues       map[int32][]*markerEntry // destination broker -> markers to send
	sending      map[int32]bool           // a goroutine is sending to the broker
	unknown      []*markerEntry           // markers waiting for a partition leader
	unknownTimer coordinator.Timer
	timers       map[coordinator.Timer]struct{} // retries waiting their backoff
	closed       bool

	// busy counts queued markers and running goroutines, so that tests can
	// wait until nothing moves.
	busy atomic.Int64
}

func newMarkerChannel(c *Coordinator) *markerChannel {
	mc := &markerChannel{c: c, backoff: c.cfg.MarkerRetryBackoff, queues: map[int32][]*markerEntry{},
		sending: map[int32]bool{}, timers: map[coordinator.Timer]struct{}{}}
	mc.mu.SetRank(lockrank.MarkerChannel)
	return mc
}

// add queues e for broker dest and starts a sender for it if none runs.
func (mc *markerChannel) add(dest int32, e *markerEntry) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.closed {
		return
	}
	mc.queues[dest] = append(mc.queues[dest], e)
	mc.busy.Add(1)
	if mc.sending[dest] {
		return
	}
	mc.sending[dest] = true
	mc.c.wg.Add(1)
	mc.busy.Add(1)
	go mc.sendLoop(dest)
}

// sendLoop sends what is queued for dest, one request at a time, until the
// queue is empty.
func (mc *markerChannel) sendLoop(dest int32) {
	defer mc.c.wg.Done()
	defer mc.busy.Add(-1)
	for {
		mc.mu.Lock()
		entries := mc.queues[dest]
		delete(mc.queues, dest)
		if len(entries) == 0 || mc.closed {
			mc.sending[dest] = false
			mc.busy.Add(-int64(len(entries)))
			mc.mu.Unlock()
			return
		}
		mc.busy.Add(-int64(len(entries)))
		mc.mu.Unlock()
		mc.send(dest, entries)
	}
}

// markerRequest builds one WriteTxnMarkers for entries.
func markerRequest(entries []*markerEntry) *kmsg.WriteTxnMarkersRequest {
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = markerVersion
	for _, e := range entries {
		mk := kmsg.NewWriteTxnMarkersRequestMarker()
		mk.ProducerID, mk.ProducerEpoch, mk.Committed = e.pc.producerID, e.pc.producerEpoch, e.pc.commit
		mk.CoordinatorEpoch = e.coordinatorEpoch
		mk.TransactionVersion = int8(e.pc.tv)
		for _, tp := range e.partitions {
			if n := len(mk.Topics); n > 0 && mk.Topics[n-1].Topic == tp.Topic {
				mk.Topics[n-1].Partitions = append(mk.Topics[n-1].Partitions, tp.Partition)
				continue
			}
			t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			t.Topic, t.Partitions = tp.Topic, []int32{tp.Partition}
			mk.Topics = append(mk.Topics, t)
		}
		req.Markers = append(req.Markers, mk)
	}
	return req
}

func (mc *markerChannel) send(dest int32, entries []*markerEntry) {
	req := markerRequest(entries)
	ctx, cancel := context.WithTimeout(mc.c.ctx, mc.c.cfg.RequestTimeout)
	resp, err := mc.c.cfg.Markers.WriteTxnMarkers(ctx, dest, req)
	cancel()
	// Errors by producer id, merged over the answer's markers.
	byProducer := map[int64]map[TopicPartition]int16{}
	if err == nil && resp != nil {
		for _, rm := range resp.Markers {
			errs := byProducer[rm.ProducerID]
			if errs == nil {
				errs = map[TopicPartition]int16{}
				byProducer[rm.ProducerID] = errs
			}
			for _, t := range rm.Topics {
				for _, p := range t.Partitions {
					errs[TopicPartition{t.Topic, p.Partition}] = p.ErrorCode
				}
			}
		}
	} else if err == nil {
		err = kerr.UnknownServerError
	}
	if err != nil {
		mc.c.log.Debug("sending transaction markers failed", zap.Int32("broker", dest), zap.Error(err))
	}
	// One event per __transaction_state partition.
	byShard := map[int32][]*markerEntry{}
	for _, e := range entries {
		byShard[e.shard] = append(byShard[e.shard], e)
	}
	for p, es := range byShard {
		mc.c.rt.Post(p, "transaction markers answer", func(s *shard) error {
			for _, e := range es {
				s.onMarkerResponse(e, byProducer[e.pc.producerID], err)
			}
			return nil
		})
	}
}

// retry sends e's partitions again after the backoff, re-resolving their
// leaders on the transaction's loop.
func (mc *markerChannel) retry(e *markerEntry) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.closed {
		return
	}
	var t coordinator.Timer
	t = mc.c.cfg.Clock.AfterFunc(mc.backoff, func() {
		mc.mu.Lock()
		delete(mc.timers, t)
		closed := mc.closed
		mc.mu.Unlock()
		if !closed {
			mc.c.rt.Post(e.shard, "retry transaction markers", func(s *shard) error { s.resendMarkers(e); return nil })
		}
	})
	mc.timers[t] = struct{}{}
}

// addUnknown parks e until its partitions have a leader.
func (mc *markerChannel) addUnknown(e *markerEntry) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if mc.closed {
		return
	}
	mc.unknown = append(mc.unknown, e)
	if mc.unknownTimer == nil {
		mc.unknownTimer = mc.c.cfg.Clock.AfterFunc(unknownLeaderRetry, func() {
			mc.mu.Lock()
			mc.unknownTimer = nil
			mc.mu.Unlock()
			mc.retryUnknown()
		})
	}
}

// retryUnknown hands the markers that wait for a leader back to their
// loops, which resolve their leaders again.
func (mc *markerChannel) retryUnknown() {
	mc.mu.Lock()
	entries := mc.unknown
	mc.unknown = nil
	if mc.unknownTimer != nil && len(entries) > 0 {
		mc.unknownTimer.Stop()
		mc.unknownTimer = nil
	}
	closed := mc.closed
	mc.mu.Unlock()
	if closed {
		return
	}
	for _, e := range entries {
		mc.c.rt.Post(e.shard, "transaction markers waiting for a leader", func(s *shard) error { s.resendMarkers(e); return nil })
	}
}

// dropShard removes the queued markers of an unloaded partition.
func (mc *markerChannel) dropShard(partition, epoch int32) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mine := func(e *markerEntry) bool { return e.shard == partition && e.coordinatorEpoch == epoch }
	for dest, q := range mc.queues {
		n := len(q)
		q = slices.DeleteFunc(q, mine)
		mc.busy.Add(-int64(n - len(q)))
		mc.queues[dest] = q
	}
	mc.unknown = slices.DeleteFunc(mc.unknown, mine)
}

func (mc *markerChannel) close() {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.closed = true
	for t := range mc.timers {
		t.Stop()
	}
	mc.timers = nil
	if mc.unknownTimer != nil {
		mc.unknownTimer.Stop()
		mc.unknownTimer = nil
	}
	for dest, q := range mc.queues {
		mc.busy.Add(-int64(len(q)))
		delete(mc.queues, dest)
	}
	mc.unknown = nil
}
