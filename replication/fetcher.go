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
	"github.com/kgo-broker/kgo-broker/storage"
)

// The follower side of replication (Kafka's AbstractFetcherThread and
// ReplicaFetcherThread): one replicaFetcher goroutine per (leader broker,
// fetcher id) fetches every partition this node follows from that leader.
// See doc.go for the follower state machine.

// LeaderConn is a connection to a partition leader: a *protocol.Client, or
// an in-memory transport in tests.
type LeaderConn interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	Close() error
}

// DialLeader opens a connection to broker id (its inter-broker listener).
type DialLeader func(ctx context.Context, broker int32) (LeaderConn, error)

// fetchPhase is where a partition is in the follower state machine.
type fetchPhase uint8

const (
	phaseFetching fetchPhase = iota // fetching at fetchOffset
	phaseFenced                     // FENCED_LEADER_EPOCH: waits for new metadata
	// phaseFailed: the partition's log dir failed (KIP-112); it is not
	// fetched again (AbstractFetcherThread.markPartitionFailed).
	phaseFailed
)

// fetchState is one followed partition in a fetcher (PartitionFetchState).
type fetchState struct {
	tp               storage.TopicPartition
	topicID          [16]byte
	p                *Partition
	gen              uint64 // bumped whenever the state is replaced from outside
	leaderEpoch      int32  // current leader epoch (KIP-320 fencing)
	fetchOffset      int64
	lastFetchedEpoch int32 // -1: unknown
	phase            fetchPhase
	delayUntil       time.Time // backoff after an error
	// epochChecked: the log's end was checked against the leader with
	// OffsetForLeaderEpoch, only done for leaders without KIP-320.
	epochChecked bool
	// lag is the leader's high watermark less our next fetch offset after
	// the last fetch that brought records (-1: none yet); a follower with
	// lag 0 is in sync and not throttled (PartitionFetchState.isReplicaInSync).
	lag int64
}

// inSync is PartitionFetchState.isReplicaInSync.
func (s *fetchState) inSync() bool { return s.lag == 0 }

// fetchKey is what a response is matched against.
type fetchKey struct {
	gen         uint64
	fetchOffset int64
	leaderEpoch int32
}

// replicaFetcher fetches the partitions this node follows from one leader.
type replicaFetcher struct {
	rm     *ReplicaManager
	cfg    *ReplicationConfig
	leader int32
	id     int
	logger *zap.Logger
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{} // one slot: partitions added or changed
	// noDiverging: the leader's Fetch is older than v12 (no KIP-320), so
	// truncation goes through OffsetForLeaderEpoch. Run goroutine only.
	noDiverging bool
	sessions    followerSession // only the run goroutine touches it

	mu lockrank.Mutex // a leaf
	// Guarded by mu.
	parts map[storage.TopicPartition]*fetchState
	gen   uint64
}

func newReplicaFetcher(rm *ReplicaManager, cfg *ReplicationConfig, leader int32, id int) *replicaFetcher {
	f := &replicaFetcher{rm: rm, cfg: cfg, leader: leader, id: id, done: make(chan struct{}), wake: make(chan struct{}, 1),
		logger: rm.logger.With(zap.Int32("leader", leader), zap.Int("fetcherId", id)),
		parts:  map[storage.TopicPartition]*fetchState{}}
	f.mu.SetRank(lockrank.FetcherParts)
	return f
}

func (f *replicaFetcher) start() {
	ctx, cancel := context.WithCancel(context.Background())
	f.cancel = cancel
	go func() {
		defer close(f.done)
		f.run(ctx)
	}()
}

func (f *replicaFetcher) stop() {
	if f.cancel != nil {
		f.cancel()
		<-f.done
	}
}

func (f *replicaFetcher) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// add starts following a partition from the given state (replacing any).
func (f *replicaFetcher) add(s *fetchState) {
	f.mu.Lock()
	f.gen++
	s.gen = f.gen
	f.parts[s.tp] = s
	f.mu.Unlock()
	f.signal()
}

// remove stops following tp; it reports whether the fetcher is now idle.
func (f *replicaFetcher) remove(tp storage.TopicPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.parts, tp)
	return len(f.parts) == 0
}

func (f *replicaFetcher) size() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.parts)
}

// state returns a copy of tp's fetch state (tests, diagnostics).
func (f *replicaFetcher) state(tp storage.TopicPartition) (fetchState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.parts[tp]
	if !ok {
		return fetchState{}, false
	}
	return *s, true
}

// update applies fn to tp's state if it is still the one a request was
// built from.
func (f *replicaFetcher) update(tp storage.TopicPartition, k fetchKey, fn func(s *fetchState)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.parts[tp]; ok && s.gen == k.gen && s.fetchOffset == k.fetchOffset && s.leaderEpoch == k.leaderEpoch {
		fn(s)
	}
}

// delay backs a partition off for replica.fetch.backoff.ms.
func (f *replicaFetcher) delay(tp storage.TopicPartition, k fetchKey) {
	until := f.rm.now().Add(f.cfg.FetchBackoff)
	f.update(tp, k, func(s *fetchState) { s.delayUntil = until })
}

// run is the fetcher loop (AbstractFetcherThread.doWork): build a fetch
// from the partitions ready now, send it, process the answer; back off
// after errors; sleep while nothing is ready.
func (f *replicaFetcher) run(ctx context.Context) {
	var conn LeaderConn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for ctx.Err() == nil {
		ready, next := f.readyParts()
		if len(ready) == 0 {
			f.sleep(ctx, next)
			continue
		}
		if conn == nil {
			c, err := f.cfg.Dial(ctx, f.leader)
			if err != nil {
				if ctx.Err() == nil {
					f.logger.Info("cannot reach the leader", zap.Error(err))
				}
				f.sleep(ctx, f.rm.now().Add(f.cfg.FetchBackoff))
				continue
			}
			conn = c
			f.sessions = followerSession{}
			f.noDiverging = lacksDivergingEpoch(conn)
		}
		if f.noDiverging {
			changed, broken := f.truncateByOffsetForLeaderEpoch(ctx, conn, ready)
			if broken {
				conn = f.dropConn(ctx, conn)
				continue
			}
			if changed {
				continue // fetch states moved: take the ready set again
			}
		}
		fetchable := f.unthrottled(ready)
		if len(fetchable) == 0 {
			// every ready partition is throttled: wait as Kafka's
			// doWork does when buildFetch has nothing to send
			f.sleep(ctx, f.rm.now().Add(f.cfg.FetchBackoff))
			continue
		}
		req, keys := f.buildFetch(fetchable)
		// replica.socket.timeout.ms (30 s) past the long poll bounds a
		// leader that stopped answering without closing the connection.
		rctx, cancel := context.WithTimeout(ctx, f.cfg.FetchWaitMax+30*time.Second)
		rawResp, err := conn.Request(rctx, req)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			f.logger.Info("fetch from the leader failed", zap.Error(err))
			conn.Close()
			conn = nil
			f.sessions = followerSession{}
			f.sleep(ctx, f.rm.now().Add(f.cfg.FetchBackoff))
			continue
		}
		resp := rawResp.(*kmsg.FetchResponse)
		if !f.sessions.handleResponse(resp) {
			if resp.ErrorCode != kerr.FetchSessionIDNotFound.Code && resp.ErrorCode != kerr.InvalidFetchSessionEpoch.Code {
				f.logger.Info("fetch answered with an error", zap.Int16("errorCode", resp.ErrorCode))
				f.sleep(ctx, f.rm.now().Add(f.cfg.FetchBackoff))
			}
			continue
		}
		if f.processResponse(ctx, conn, resp, keys) {
			conn = f.dropConn(ctx, conn)
		}
	}
}

// errLeaderConn marks a request to the leader that failed in transport
// (not an error code): the connection is dropped and dialed again, as
// after a failed Fetch.
var errLeaderConn = errors.New("replication: request to the leader failed")

// dropConn closes a connection a request failed on, starts the next fetch
// session over and backs off; it returns the nil connection to use.
func (f *replicaFetcher) dropConn(ctx context.Context, conn LeaderConn) LeaderConn {
	conn.Close()
	f.sessions = followerSession{}
	f.sleep(ctx, f.rm.now().Add(f.cfg.FetchBackoff))
	return nil
}

// sleep waits until t, a wake-up or the end of ctx.
func (f *replicaFetcher) sleep(ctx context.Context, t time.Time) {
	d := t.Sub(f.rm.now())
	if t.IsZero() {
		d = time.Hour
	}
	if d <= 0 {
		return
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-f.wake:
	case <-tm.C:
	}
}

// readyParts returns the partitions to fetch now and, if none, when the
// earliest backoff ends (zero: never).
func (f *replicaFetcher) readyParts() ([]fetchState, time.Time) {
	now := f.rm.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fetchState
	var next time.Time
	for _, s := range f.parts {
		switch {
		case s.phase != phaseFetching:
		case s.delayUntil.After(now):
			if next.IsZero() || s.delayUntil.Before(next) {
				next = s.delayUntil
			}
		default:
			out = append(out, *s)
		}
	}
	return out, next
}

// unthrottled leaves out the partitions follower.replication.throttled.rate
// holds back (ReplicaFetcherThread.shouldFollowerThrottle): those not in
// sync, in follower.replication.throttled.replicas, while the rate is
// exceeded. The fetch session then forgets them until they are fetched
// again.
func (f *replicaFetcher) unthrottled(ready []fetchState) []fetchState {
	q := f.rm.cfg.FollowerQuota
	out := ready[:0:0]
	for i := range ready {
		s := &ready[i]
		if !s.inSync() && q.IsThrottled(s.tp.Topic, s.tp.Partition) && q.IsQuotaExceeded() {
			continue
		}
		out = append(out, *s)
	}
	return out
}

// buildFetch builds the Fetch request (ReplicaFetcherThread.buildFetch)
// through the session handler: a full request lists every ready partition,
// an incremental one only those whose fetch state changed, and forgets
// those no longer ready.
func (f *replicaFetcher) buildFetch(ready []fetchState) (*kmsg.FetchRequest, map[storage.TopicPartition]fetchKey) {
	keys := make(map[storage.TopicPartition]fetchKey, len(ready))
	next := make(map[storage.TopicPartition]sessionPart, len(ready))
	for _, s := range ready {
		keys[s.tp] = fetchKey{gen: s.gen, fetchOffset: s.fetchOffset, leaderEpoch: s.leaderEpoch}
		logStart := int64(-1)
		s.p.mu.RLock()
		if s.p.log != nil {
			logStart = s.p.log.LogStartOffset()
		}
		s.p.mu.RUnlock()
		next[s.tp] = sessionPart{topicID: s.topicID, fetchOffset: s.fetchOffset, logStartOffset: logStart,
			maxBytes: f.cfg.FetchMaxBytes, leaderEpoch: s.leaderEpoch, lastFetchedEpoch: s.lastFetchedEpoch}
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = f.rm.cfg.NodeID
	req.ReplicaState.ID = f.rm.cfg.NodeID
	req.ReplicaState.Epoch = -1
	if f.rm.cfg.BrokerEpoch != nil {
		req.ReplicaState.Epoch = f.rm.cfg.BrokerEpoch()
	}
	req.MaxWaitMillis = int32(f.cfg.FetchWaitMax / time.Millisecond)
	req.MinBytes = f.cfg.FetchMinBytes
	req.MaxBytes = f.cfg.FetchResponseMaxBytes
	f.sessions.build(req, next)
	return req, keys
}

// processResponse handles each partition of a fetch response
// (AbstractFetcherThread.processFetchRequest). It reports whether a request
// it sent meanwhile (ListOffsets) failed in transport.
func (f *replicaFetcher) processResponse(ctx context.Context, conn LeaderConn, resp *kmsg.FetchResponse, keys map[storage.TopicPartition]fetchKey) (broken bool) {
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		name := rt.Topic
		if rt.TopicID != ([16]byte{}) {
			name = f.sessions.topicName(rt.TopicID, name)
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			tp := storage.TopicPartition{Topic: name, Partition: rp.Partition}
			k, ok := keys[tp]
			if !ok {
				continue
			}
			s, ok := f.state(tp)
			if !ok || s.gen != k.gen || s.fetchOffset != k.fetchOffset || s.leaderEpoch != k.leaderEpoch {
				continue // changed while the fetch was in flight
			}
			if f.processPartition(ctx, conn, &s, k, rp) {
				return true
			}
		}
	}
	return false
}

func (f *replicaFetcher) processPartition(ctx context.Context, conn LeaderConn, s *fetchState, k fetchKey, rp *kmsg.FetchResponseTopicPartition) (broken bool) {
	log := []zap.Field{zap.String("topic", s.tp.Topic), zap.Int32("partition", s.tp.Partition)}
	switch err := kerr.ErrorForCode(rp.ErrorCode); {
	case err == nil:
		var (
			next int64
			last int32
			err  error
		)
		if rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0 {
			next, last, err = f.rm.truncateOnDivergenceHW(s, rp.DivergingEpoch.Epoch, rp.DivergingEpoch.EndOffset, rp.HighWatermark)
			if err == nil && next == s.fetchOffset && last == s.lastFetchedEpoch {
				// The same fetch would get the same answer: rather than
				// spin, back off and say so (a bug, never expected).
				f.logger.Warn("diverging epoch left the fetch state unchanged", append(log,
					zap.Int64("fetchOffset", next), zap.Int32("lastFetchedEpoch", last),
					zap.Int32("divergingEpoch", rp.DivergingEpoch.Epoch), zap.Int64("divergingEndOffset", rp.DivergingEpoch.EndOffset))...)
				f.delay(s.tp, k)
				return
			}
		} else {
			next, last, err = f.rm.appendFetched(s, rp.RecordBatches, rp.HighWatermark, rp.LogStartOffset)
			if err == nil {
				// ReplicaFetcherThread.processPartitionData: the bytes of
				// throttled replicas count, in sync or not
				if q := f.rm.cfg.FollowerQuota; q.IsThrottled(s.tp.Topic, s.tp.Partition) {
					q.Record(int64(len(rp.RecordBatches)))
				}
			}
		}
		if err != nil {
			if errors.Is(err, kerr.KafkaStorageError) {
				// The log dir is offline: stop fetching the partition
				// (the controller takes it off this broker, KIP-858).
				f.logger.Error("the partition's log dir failed; no longer fetching it", append(log, zap.Error(err))...)
				f.update(s.tp, k, func(st *fetchState) { st.phase = phaseFailed })
				return
			}
			if !errors.Is(err, errStaleFetch) {
				f.logger.Warn("processing fetched data failed", append(log, zap.Error(err))...)
			}
			f.delay(s.tp, k)
			return
		}
		diverged := rp.DivergingEpoch.Epoch >= 0 || rp.DivergingEpoch.EndOffset >= 0
		records := len(rp.RecordBatches) > 0
		f.update(s.tp, k, func(st *fetchState) {
			st.fetchOffset, st.lastFetchedEpoch, st.delayUntil = next, last, time.Time{}
			if !diverged && (records || st.lag < 0) {
				// AbstractFetcherThread.processFetchRequest: the lag is
				// taken after a fetch that brought records, or the first
				st.lag = max(0, rp.HighWatermark-next)
			}
		})
	case errors.Is(err, kerr.OffsetOutOfRange):
		next, err := f.handleOutOfRange(ctx, conn, s)
		if err != nil {
			f.logger.Info("resolving OFFSET_OUT_OF_RANGE failed", append(log, zap.Error(err))...)
			f.delay(s.tp, k)
			return errors.Is(err, errLeaderConn)
		}
		// read before f.update: replicaFetcher.mu is a leaf, taken after
		// Partition.mu, never before
		last := s.p.latestEpoch()
		f.update(s.tp, k, func(st *fetchState) {
			st.fetchOffset, st.lastFetchedEpoch, st.delayUntil = next, last, time.Time{}
		})
	case errors.Is(err, kerr.FencedLeaderEpoch):
		// Our leader epoch is older than the leader's: wait for the
		// metadata that brings the new one (onPartitionFenced).
		f.logger.Info("fenced leader epoch; waiting for new metadata", append(log, zap.Int32("leaderEpoch", s.leaderEpoch))...)
		f.update(s.tp, k, func(st *fetchState) { st.phase = phaseFenced })
	default:
		// NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH (the leader has not
		// seen our epoch yet), UNKNOWN_TOPIC_*: retry after the backoff or
		// when new metadata re-adds the partition.
		f.logger.Debug("fetch partition error", append(log, zap.Error(err))...)
		f.delay(s.tp, k)
	}
	return false
}

// errStaleFetch: the partition's leadership changed since the fetch was
// built; the answer is dropped.
var errStaleFetch = errors.New("replication: stale fetch")

// followerLocked checks, with p.mu held, that p is still following with the
// fetch state's leader epoch.
func (p *Partition) followingLocked(s *fetchState) bool {
	return !p.isLeader && p.log != nil && p.leaderEpoch == s.leaderEpoch
}

// latestEpoch is the newest leader epoch of the log, -1 if none.
func (p *Partition) latestEpoch() int32 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.log == nil {
		return -1
	}
	if e, ok := p.log.LatestEpoch(); ok {
		return e
	}
	return -1
}

// appendFetched is ReplicaFetcherThread.processPartitionData: append the
// leader's batches as they are (offsets and leader epochs assigned by the
// leader; the epoch cache follows the batches), then take the leader's high
// watermark (capped at our log end) and log start offset. It returns the
// next fetch offset and the last fetched epoch.
func (rm *ReplicaManager) appendFetched(s *fetchState, records []byte, leaderHW, leaderLogStart int64) (int64, int32, error) {
	p := s.p
	p.mu.RLock()
	if !p.followingLocked(s) {
		p.mu.RUnlock()
		return 0, 0, errStaleFetch
	}
	l := p.log
	if leo := l.LogEndOffset(); leo != s.fetchOffset {
		p.mu.RUnlock()
		return 0, 0, fmt.Errorf("%w: fetch offset %d but log end offset %d", errStaleFetch, s.fetchOffset, leo)
	}
	appended := false
	if len(records) > 0 {
		if _, err := l.AppendAsFollower(records); err != nil {
			p.mu.RUnlock()
			return 0, 0, err
		}
		appended = true
	}
	leo := l.LogEndOffset()
	moved := false
	p.stateMu.Lock()
	if hw := min(leaderHW, leo); hw > p.hw.Load() {
		p.hw.Store(hw)
		moved = true
	}
	hw := p.hw.Load()
	p.stateMu.Unlock()
	if err := p.checkFollowerHighWatermarkLocked(hw, leo); err != nil {
		p.mu.RUnlock()
		return 0, 0, err
	}
	if leaderLogStart > l.LogStartOffset() && leaderLogStart <= hw {
		if err := l.IncrementLogStartOffset(leaderLogStart); err != nil {
			rm.logger.Warn("following the leader's log start offset failed", zap.String("topic", p.tp.Topic),
				zap.Int32("partition", p.tp.Partition), zap.Error(err))
		}
	}
	last := int32(-1)
	if e, ok := l.LatestEpoch(); ok {
		last = e
	}
	p.mu.RUnlock()
	if appended || moved {
		p.watch.wakeAll() // consumers reading from this follower (KIP-392)
	}
	return leo, last, nil
}

// truncateOnDivergenceHW is truncateOnDivergence for a Fetch answer, which
// also carries the leader's high watermark: once the truncation is done, the
// log agrees with the leader's up to its new end, and the high watermark
// (capped there) is taken. Kafka leaves it to the next fetch ("those will be
// updated by the next fetch"), but the leader's fetch session does not send
// a high watermark it already sent, so a follower with nothing left to
// fetch would keep its old one until the leader's moved again.
func (rm *ReplicaManager) truncateOnDivergenceHW(s *fetchState, epoch int32, endOffset, leaderHW int64) (int64, int32, error) {
	next, last, _, agreed, err := rm.truncateOnDivergence(s, epoch, endOffset)
	if err != nil || !agreed {
		return next, last, err
	}
	p := s.p
	p.mu.RLock()
	moved := false
	if p.followingLocked(s) {
		p.stateMu.Lock()
		if hw := min(leaderHW, p.log.LogEndOffset()); hw > p.hw.Load() {
			p.hw.Store(hw)
			moved = true
		}
		p.stateMu.Unlock()
	}
	p.mu.RUnlock()
	if moved {
		p.watch.wakeAll()
	}
	return next, last, nil
}

// truncateOnDivergence is AbstractFetcherThread.truncateOnFetchResponse and
// getOffsetTruncationState (KIP-279/320): the leader says our last fetched
// epoch ends at (epoch, endOffset) in its log.
//
//   - epoch unknown to the leader (-1): truncate to our high watermark;
//   - we know no epoch <= the leader's: truncate to min(endOffset, LEO);
//   - our largest epoch <= the leader's differs from it: truncate to where
//     ours ends, and the next fetch (with the new last epoch) goes on;
//   - same epoch: truncate to min(endOffset, our end of it, LEO): done.
//
// It returns the next fetch offset, the last fetched epoch, whether the
// truncation is complete (false in the third case) and whether the log now
// agrees with the leader's up to its end (the fourth case).
func (rm *ReplicaManager) truncateOnDivergence(s *fetchState, epoch int32, endOffset int64) (next int64, last int32, done, agreed bool, err error) {
	p := s.p
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.followingLocked(s) {
		return 0, 0, false, false, errStaleFetch
	}
	l := p.log
	leo := l.LogEndOffset()
	var target int64
	done = true
	switch {
	case epoch < 0 || endOffset < 0:
		target = min(p.hw.Load(), leo)
	default:
		fe, fo := l.EndOffsetForEpoch(epoch)
		switch {
		case fe < 0 || fo < 0:
			target = min(endOffset, leo)
		case fe != epoch:
			target, done = min(fo, leo), false
		default:
			target, agreed = min(endOffset, fo, leo), true
		}
	}
	if err := rm.truncateFollower(p, target); err != nil {
		return 0, 0, false, false, err
	}
	last = -1
	if e, ok := l.LatestEpoch(); ok {
		last = e
	}
	return l.LogEndOffset(), last, done, agreed, nil
}

// lacksDivergingEpoch reports whether the leader serves Fetch below v12
// (no diverging epoch in answers), when the connection can tell.
func lacksDivergingEpoch(conn LeaderConn) bool {
	v, ok := conn.(interface {
		Versions(key int16) (min, max int16, ok bool)
	})
	if !ok {
		return false
	}
	_, maxV, ok := v.Versions(1)
	return ok && maxV < 12
}

// truncateByOffsetForLeaderEpoch is the pre-KIP-320 truncation phase
// (AbstractFetcherThread.maybeTruncate with OffsetsForLeaderEpoch): for each
// ready partition whose log end was not yet checked against this leader,
// ask the leader where our latest epoch ends and truncate with the same
// rules as a diverging epoch. Partitions without epochs were truncated to
// the high watermark when added. It reports whether any state changed and
// whether a request failed in transport (the connection is to be dropped).
func (f *replicaFetcher) truncateByOffsetForLeaderEpoch(ctx context.Context, conn LeaderConn, ready []fetchState) (changed, broken bool) {
	for i := range ready {
		s := &ready[i]
		if s.epochChecked {
			continue
		}
		k := fetchKey{gen: s.gen, fetchOffset: s.fetchOffset, leaderEpoch: s.leaderEpoch}
		changed = true
		if s.lastFetchedEpoch < 0 {
			f.update(s.tp, k, func(st *fetchState) { st.epochChecked = true })
			continue
		}
		epoch, end, err := f.offsetForLeaderEpoch(ctx, conn, s)
		switch {
		case errors.Is(err, kerr.FencedLeaderEpoch):
			f.update(s.tp, k, func(st *fetchState) { st.phase = phaseFenced })
			continue
		case err != nil:
			f.logger.Info("OffsetForLeaderEpoch failed", zap.String("topic", s.tp.Topic), zap.Int32("partition", s.tp.Partition), zap.Error(err))
			f.delay(s.tp, k)
			if errors.Is(err, errLeaderConn) {
				return changed, true
			}
			continue
		}
		next, last, done, _, err := f.rm.truncateOnDivergence(s, epoch, end)
		if err != nil {
			f.delay(s.tp, k)
			continue
		}
		f.update(s.tp, k, func(st *fetchState) {
			st.fetchOffset, st.lastFetchedEpoch, st.epochChecked = next, last, done
		})
	}
	return changed, false
}

// offsetForLeaderEpoch asks the leader for the end of epoch
// s.lastFetchedEpoch in its log, as a replica.
func (f *replicaFetcher) offsetForLeaderEpoch(ctx context.Context, conn LeaderConn, s *fetchState) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = f.rm.cfg.NodeID
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = s.tp.Topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = s.tp.Partition, s.leaderEpoch, s.lastFetchedEpoch
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	raw, err := conn.Request(ctx, req)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %w", errLeaderConn, err)
	}
	for _, rt := range raw.(*kmsg.OffsetForLeaderEpochResponse).Topics {
		for _, sp := range rt.Partitions {
			if sp.Partition != s.tp.Partition {
				continue
			}
			if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
				return 0, 0, err
			}
			return sp.LeaderEpoch, sp.EndOffset, nil
		}
	}
	return 0, 0, fmt.Errorf("replication: OffsetForLeaderEpoch answer without %s", s.tp)
}

// truncateFollower truncates p's log to offset and caps the high watermark
// at the new log end (Partition.truncateTo). The log is truncated even when
// offset is at or past its end: that drops leader epochs starting at the
// log end offset that the leader does not have (UnifiedLog.truncateTo).
// p.mu must be held.
func (rm *ReplicaManager) truncateFollower(p *Partition, offset int64) error {
	if err := p.checkTruncationLocked(offset); err != nil {
		return err
	}
	l := p.log
	if offset < l.LogEndOffset() && offset < p.hw.Load() {
		rm.logger.Warn("truncating below the high watermark", zap.String("topic", p.tp.Topic),
			zap.Int32("partition", p.tp.Partition), zap.Int64("offset", offset), zap.Int64("highWatermark", p.hw.Load()))
	}
	if err := l.Truncate(offset); err != nil {
		return err
	}
	p.stateMu.Lock()
	if leo := l.LogEndOffset(); p.hw.Load() > leo {
		p.hw.Store(leo)
	}
	p.stateMu.Unlock()
	return nil
}

// handleOutOfRange is AbstractFetcherThread.fetchOffsetAndTruncate: ask
// the leader for its log end; if it is below ours (an unclean election)
// truncate to it, else start at the leader's log start offset, truncating
// fully when our log ends before it.
func (f *replicaFetcher) handleOutOfRange(ctx context.Context, conn LeaderConn, s *fetchState) (int64, error) {
	leaderEnd, err := f.listOffset(ctx, conn, s, -1)
	if err != nil {
		return 0, err
	}
	leaderStart, err := f.listOffset(ctx, conn, s, -2)
	if err != nil {
		return 0, err
	}
	p := s.p
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.followingLocked(s) {
		return 0, errStaleFetch
	}
	l := p.log
	if leo := l.LogEndOffset(); leaderEnd < leo {
		if err := f.rm.truncateFollower(p, leaderEnd); err != nil {
			return 0, err
		}
		return l.LogEndOffset(), nil
	}
	if leo := l.LogEndOffset(); leaderStart > leo || leaderStart < l.LogStartOffset() {
		f.logger.Info("truncating fully: the leader's log starts after ours ends",
			zap.String("topic", s.tp.Topic), zap.Int32("partition", s.tp.Partition), zap.Int64("leaderLogStart", leaderStart),
			zap.Int64("logEndOffset", leo))
		if err := l.TruncateFullyAndStartAt(leaderStart); err != nil {
			return 0, err
		}
		p.stateMu.Lock()
		p.hw.Store(leaderStart)
		p.stateMu.Unlock()
	}
	return l.LogEndOffset(), nil
}

// listOffset asks the leader for its earliest (-2) or latest (-1) offset
// as a replica sees it (the log end, not the high watermark).
func (f *replicaFetcher) listOffset(ctx context.Context, conn LeaderConn, s *fetchState, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = f.rm.cfg.NodeID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = s.tp.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = s.tp.Partition, s.leaderEpoch, ts
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	raw, err := conn.Request(ctx, req)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errLeaderConn, err)
	}
	resp := raw.(*kmsg.ListOffsetsResponse)
	for _, rt := range resp.Topics {
		for _, sp := range rt.Partitions {
			if sp.Partition != s.tp.Partition {
				continue
			}
			if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
				return 0, err
			}
			return sp.Offset, nil
		}
	}
	return 0, fmt.Errorf("replication: ListOffsets answer without %s", s.tp)
}
