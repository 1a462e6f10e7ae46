package replication

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

// The leader side of replication (Kafka's Partition.updateFollowerFetchState,
// maybeExpandIsr, maybeShrinkIsr and AlterPartitionManager): followers'
// fetches move their log end offsets, which move the high watermark over
// the maximal ISR; a follower that caught up joins the ISR and one that
// lagged longer than replica.lag.time.max.ms leaves it. Either change is
// proposed to the controller with AlterPartition and takes effect when the
// controller's PartitionChangeRecord arrives in the image.

// isrView is what the ISR and high watermark rules of every partition a
// ReplicaManager leads read besides the partition: the broker registrations
// of the latest image and replica.lag.time.max.ms. Lock-free, so that it can
// be read with Partition.mu held (rm.mu comes before Partition.mu).
type isrView struct {
	image atomic.Pointer[metadatacache.Image]
	lag   atomic.Int64 // replica.lag.time.max.ms in ns; 0 before StartReplication
	nowFn func() time.Time
}

func (v *isrView) now() time.Time {
	if v.nowFn == nil {
		return time.Now()
	}
	return v.nowFn()
}

func (v *isrView) lagTime() time.Duration { return time.Duration(v.lag.Load()) }

// caughtUp is ReplicaState.isCaughtUp: at the leader's log end offset, or
// caught up with it within lag.
func (f *followerState) caughtUp(leaderEnd int64, now time.Time, lag time.Duration) bool {
	return f.logEndOffset == leaderEnd || lag > 0 && !f.lastCaughtUp.IsZero() && now.Sub(f.lastCaughtUp) <= lag
}

// isrEligible is Partition.isReplicaIsrEligible (KIP-841, KIP-903): the
// follower's broker is registered, not fenced, not in controlled shutdown,
// and fetched with the broker epoch of its registration (or with none, a
// Fetch before v15).
func isrEligible(id int32, f *followerState, img *metadatacache.Image) bool {
	if img == nil {
		return false
	}
	b := img.Broker(id)
	if b == nil || b.Fenced || b.InControlledShutdown {
		return false
	}
	return f.brokerEpoch < 0 || f.brokerEpoch == b.Epoch
}

// isrChange is a partition's ISR change state, guarded by Partition.stateMu.
type isrChange struct {
	// leaderSince is when this node last became leader: followers in the
	// ISR count as caught up at that time (resetReplicaState).
	leaderSince time.Time
	// pending is the AlterPartition in flight or accepted but not yet in
	// the image (PendingExpandIsr / PendingShrinkIsr); nil when the ISR is
	// the committed one.
	pending *alterItem
}

// alterItem is one partition's proposed ISR.
type alterItem struct {
	p              *Partition
	topicID        [16]byte
	leaderEpoch    int32
	partitionEpoch int32
	newIsr         []int32
	brokerEpochs   []int64 // per newIsr member, -1 unknown (KIP-903)
}

// maximalISRLocked is PartitionState.maximalIsr: the committed ISR plus the
// members of a pending expansion, so the high watermark never counts on a
// replica the controller may not have admitted yet (nor, during a shrink,
// drops one it has not yet removed). stateMu must be held.
func (p *Partition) maximalISRLocked() []int32 {
	a := p.isrChg.pending
	if a == nil {
		return p.isr
	}
	out := slices.Clone(p.isr)
	for _, r := range a.newIsr {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// resetIsrChange is applyPartition's hook (p.mu held for writing): a new
// leadership starts the followers' lag clocks; any new leader or partition
// epoch ends a pending change (the image now says what the ISR is).
func (p *Partition) resetIsrChange(now time.Time, becameLeader, epochsChanged bool) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if becameLeader {
		p.isrChg.leaderSince = now
	}
	if epochsChanged || !p.isLeader {
		p.isrChg.pending = nil
	}
}

// resetFollowers is Replica.resetReplicaState for every follower when this
// node starts a leader epoch (p.mu held for writing, the new ISR in place).
// A new leader knows nothing of its followers yet: each one's state starts
// at its first fetch, an ISR member's as caught up now (leaderSince). A
// leader starting another epoch keeps what it knows of their logs; their
// clocks restart as caught up now if in the ISR, never otherwise, and the
// leader's log end offset to catch up with is where the epoch starts.
func (p *Partition) resetFollowers(now time.Time, leaderEnd int64, isNewLeader bool) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if isNewLeader {
		p.followers = map[int32]*followerState{}
		return
	}
	for id, f := range p.followers {
		if !slices.Contains(p.replicas, id) {
			delete(p.followers, id)
			continue
		}
		inIsr := slices.Contains(p.isr, id)
		f.lastFetchLeaderLEO = leaderEnd
		f.lastFetchTime, f.lastCaughtUp = time.Time{}, time.Time{}
		if inIsr {
			f.lastFetchTime, f.lastCaughtUp = now, now
		}
	}
}

// followerFetched is Partition.updateFollowerFetchState: a follower
// fetched at fetchOffset (its log end offset). It updates the follower's
// caught-up time (Replica.updateFetchStateOrThrow), moves the high
// watermark and, when the follower is in sync, proposes adding it to the
// ISR (maybeExpandIsr). A fetch with a broker epoch older than the
// follower's registration (a previous incarnation of the broker) changes
// nothing and fails with NOT_LEADER_OR_FOLLOWER (KIP-903).
func (rm *ReplicaManager) followerFetched(p *Partition, id int32, brokerEpoch, fetchOffset, logStart int64) error {
	img := rm.Image()
	r := rm.repl.Load()
	now := rm.now()
	if b := img.Broker(id); brokerEpoch >= 0 && b != nil && !b.Fenced && b.Epoch > brokerEpoch {
		return kerr.NotLeaderForPartition
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return nil
	}
	leo := p.log.LogEndOffset()
	p.stateMu.Lock()
	f, ok := p.followers[id]
	if !ok {
		f = &followerState{logEndOffset: -1, lastFetchLeaderLEO: -1, brokerEpoch: -1}
		if slices.Contains(p.isr, id) {
			f.lastCaughtUp = p.isrChg.leaderSince
		}
		p.followers[id] = f
	}
	switch {
	case fetchOffset >= leo:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, now)
	case f.lastFetchLeaderLEO >= 0 && fetchOffset >= f.lastFetchLeaderLEO:
		f.lastCaughtUp = maxTime(f.lastCaughtUp, f.lastFetchTime)
	}
	f.lastFetchLeaderLEO, f.lastFetchTime = max(leo, f.lastFetchLeaderLEO), now
	moved := f.logEndOffset != fetchOffset
	f.logEndOffset, f.logStartOffset = fetchOffset, logStart
	f.brokerEpoch = brokerEpoch
	var item *alterItem
	if r != nil && p.canAddToIsrLocked(id, f, img) {
		if item = p.proposeIsrLocked(append(slices.Clone(p.isr), id), rm.ownBrokerEpoch()); item != nil {
			rm.logger.Info("expanding ISR", zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition),
				zap.Int32s("isr", p.isr), zap.Int32s("newIsr", item.newIsr), zap.Int64("followerEndOffset", fetchOffset))
		}
	}
	p.stateMu.Unlock()
	// the high watermark may move (the follower's log end did) or may no
	// longer wait for it (its caught-up time did)
	if (moved || item != nil) && p.maybeIncrementHW() {
		p.watch.wakeAll()
	}
	if item != nil {
		r.alter.submit(item)
	}
	return nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (rm *ReplicaManager) ownBrokerEpoch() int64 {
	if rm.cfg.BrokerEpoch == nil {
		return -1
	}
	return rm.cfg.BrokerEpoch()
}

// canAddToIsrLocked is Partition.isFollowerInSync plus canAddReplicaToIsr:
// no change pending, a replica not yet in the ISR, caught up to the high
// watermark and to the start of the current leader epoch, and a live,
// unfenced broker not shutting down whose epoch is the one it fetched with.
// p.mu and stateMu must be held.
func (p *Partition) canAddToIsrLocked(id int32, f *followerState, img *metadatacache.Image) bool {
	if p.isrChg.pending != nil || slices.Contains(p.isr, id) || !slices.Contains(p.replicas, id) {
		return false
	}
	if f.logEndOffset < p.hw.Load() {
		return false
	}
	if s := p.leaderEpochStartOffset.Load(); s >= 0 && f.logEndOffset < s {
		return false
	}
	return isrEligible(id, f, img)
}

// proposeIsrLocked records newIsr as the pending change and returns the
// AlterPartition item for it; nil when the proposal breaks an invariant.
// p.mu and stateMu must be held.
func (p *Partition) proposeIsrLocked(newIsr []int32, ownEpoch int64) *alterItem {
	slices.Sort(newIsr)
	if p.checkIsrProposalLocked(newIsr) != nil {
		return nil
	}
	item := &alterItem{p: p, topicID: p.topicID, leaderEpoch: p.leaderEpoch, partitionEpoch: p.partitionEpoch, newIsr: newIsr}
	for _, r := range newIsr {
		e := int64(-1)
		if r == p.nodeID {
			e = ownEpoch
		} else if f, ok := p.followers[r]; ok {
			e = f.brokerEpoch
		}
		item.brokerEpochs = append(item.brokerEpochs, e)
	}
	p.isrChg.pending = item
	return item
}

// isrExpirationLoop runs maybeShrinkIsr on every led partition each half
// replica.lag.time.max.ms (ReplicaManager's isr-expiration task).
func (rm *ReplicaManager) isrExpirationLoop(ctx context.Context, lag time.Duration) {
	t := time.NewTicker(lag / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			rm.maybeShrinkIsrs(lag)
		}
	}
}

// maybeShrinkIsrs proposes removing lagging followers from the ISR of
// every partition this node leads.
func (rm *ReplicaManager) maybeShrinkIsrs(lag time.Duration) {
	r := rm.repl.Load()
	if r == nil {
		return
	}
	rm.mu.RLock()
	parts := make([]*Partition, 0, len(rm.partitions))
	for _, p := range rm.partitions {
		parts = append(parts, p)
	}
	rm.mu.RUnlock()
	now, own := rm.now(), rm.ownBrokerEpoch()
	for _, p := range parts {
		if item := p.maybeShrinkIsr(now, lag, own, rm.logger); item != nil {
			r.alter.submit(item)
		}
		p.refreshHighWatermark()
	}
}

// refreshHighWatermark re-evaluates a led partition's high watermark on
// the ISR expiration tick: a follower outside the ISR stops holding it back
// once it has not been caught up for replica.lag.time.max.ms, with or
// without another fetch or append to notice.
func (p *Partition) refreshHighWatermark() {
	p.mu.RLock()
	moved := p.maybeIncrementHW()
	p.mu.RUnlock()
	if moved {
		p.watch.wakeAll()
	}
}

// maybeShrinkIsr is Partition.maybeShrinkIsr: ISR followers that are
// neither at the leader's log end nor caught up within lag are out of sync.
func (p *Partition) maybeShrinkIsr(now time.Time, lag time.Duration, ownEpoch int64, logger *zap.Logger) *alterItem {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return nil
	}
	leo := p.log.LogEndOffset()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if p.isrChg.pending != nil {
		return nil
	}
	var out []int32
	for _, r := range p.isr {
		if r == p.nodeID {
			continue
		}
		f, ok := p.followers[r]
		if ok && f.logEndOffset >= leo {
			continue
		}
		last := p.isrChg.leaderSince
		if ok {
			last = maxTime(last, f.lastCaughtUp)
		}
		if now.Sub(last) > lag {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil
	}
	newIsr := slices.DeleteFunc(slices.Clone(p.isr), func(r int32) bool { return slices.Contains(out, r) })
	item := p.proposeIsrLocked(newIsr, ownEpoch)
	if item == nil {
		return nil
	}
	logger.Info("shrinking ISR", zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition),
		zap.Int32s("isr", p.isr), zap.Int32s("outOfSync", out), zap.Int32s("newIsr", newIsr),
		zap.Int64("leaderEndOffset", leo), zap.Int64("highWatermark", p.hw.Load()))
	return item
}

// alterPartitionManager sends proposed ISR changes to the controller
// (Kafka's DefaultAlterPartitionManager): one AlterPartition (v2/3, topic
// ids, broker epochs) in flight at a time, carrying every partition queued
// meanwhile; retriable failures are retried after a backoff.
type alterPartitionManager struct {
	rm      *ReplicaManager
	backoff time.Duration
	wake    chan struct{}

	// mu is taken under Partition.mu (submit) and before Partition.stateMu
	// (re-queueing a change only while it is still pending).
	mu lockrank.Mutex
	// Guarded by mu.
	queue map[storage.TopicPartition]*alterItem
}

func newAlterPartitionManager(rm *ReplicaManager, backoff time.Duration) *alterPartitionManager {
	m := &alterPartitionManager{rm: rm, backoff: backoff, wake: make(chan struct{}, 1),
		queue: map[storage.TopicPartition]*alterItem{}}
	m.mu.SetRank(lockrank.AlterPartition)
	return m
}

func (m *alterPartitionManager) submit(item *alterItem) {
	m.mu.Lock()
	m.queue[item.p.tp] = item
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *alterPartitionManager) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.wake:
		}
		for ctx.Err() == nil {
			m.mu.Lock()
			items := make([]*alterItem, 0, len(m.queue))
			for _, it := range m.queue {
				items = append(items, it)
			}
			clear(m.queue)
			m.mu.Unlock()
			if len(items) == 0 {
				break
			}
			if retry := m.send(ctx, items); len(retry) > 0 {
				m.mu.Lock()
				for _, it := range retry {
					if _, newer := m.queue[it.p.tp]; !newer && it.p.pendingIs(it) {
						m.queue[it.p.tp] = it
					}
				}
				m.mu.Unlock()
				t := time.NewTimer(m.backoff)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
	}
}

// pendingIs reports whether item is still p's pending ISR change.
func (p *Partition) pendingIs(item *alterItem) bool {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return p.isrChg.pending == item
}

// send sends one AlterPartition and returns the items to retry.
func (m *alterPartitionManager) send(ctx context.Context, items []*alterItem) []*alterItem {
	rm := m.rm
	if rm.cfg.Controller == nil {
		return nil
	}
	req := kmsg.NewPtrAlterPartitionRequest()
	req.BrokerID = rm.cfg.NodeID
	req.BrokerEpoch = rm.ownBrokerEpoch()
	byKey := map[storage.TopicPartition]*alterItem{}
	for _, it := range items {
		byKey[storage.TopicPartition{Topic: string(it.topicID[:]), Partition: it.p.tp.Partition}] = it
		var t *kmsg.AlterPartitionRequestTopic
		for i := range req.Topics {
			if req.Topics[i].TopicID == it.topicID {
				t = &req.Topics[i]
			}
		}
		if t == nil {
			nt := kmsg.NewAlterPartitionRequestTopic()
			nt.Topic, nt.TopicID = it.p.tp.Topic, it.topicID
			req.Topics = append(req.Topics, nt)
			t = &req.Topics[len(req.Topics)-1]
		}
		rp := kmsg.NewAlterPartitionRequestTopicPartition()
		rp.Partition = it.p.tp.Partition
		rp.LeaderEpoch = it.leaderEpoch
		rp.PartitionEpoch = it.partitionEpoch
		rp.NewISR = slices.Clone(it.newIsr)
		for i, r := range it.newIsr {
			be := kmsg.NewAlterPartitionRequestTopicPartitionNewEpochISR()
			be.BrokerID, be.BrokerEpoch = r, it.brokerEpochs[i]
			rp.NewEpochISR = append(rp.NewEpochISR, be)
		}
		t.Partitions = append(t.Partitions, rp)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	raw, err := rm.cfg.Controller.Request(rctx, req)
	if err != nil {
		if ctx.Err() == nil {
			rm.logger.Info("AlterPartition failed; retrying", zap.Error(err))
		}
		return items
	}
	resp := raw.(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != 0 {
		rm.logger.Info("AlterPartition rejected; retrying", zap.Error(kerr.ErrorForCode(resp.ErrorCode)))
		return items
	}
	var retry []*alterItem
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := storage.TopicPartition{Topic: string(rt.TopidID[:]), Partition: rp.Partition}
			it, ok := byKey[k]
			if !ok {
				continue
			}
			delete(byKey, k)
			if rm.handleAlterResult(it, rp) {
				retry = append(retry, it)
			}
		}
	}
	for _, it := range byKey {
		retry = append(retry, it) // not answered
	}
	return retry
}

// handleAlterResult is Partition.handleAlterPartitionUpdate and
// handleAlterPartitionError; it reports whether to retry.
func (rm *ReplicaManager) handleAlterResult(it *alterItem, rp kmsg.AlterPartitionResponseTopicPartition) bool {
	p := it.p
	err := kerr.ErrorForCode(rp.ErrorCode)
	log := []zap.Field{zap.String("topic", p.tp.Topic), zap.Int32("partition", p.tp.Partition), zap.Int32s("newIsr", it.newIsr)}
	// Accepted, the answer commits the ISR at once, as the
	// PartitionChangeRecord will (the image then only confirms it):
	// p.mu is taken for writing, as Kafka takes leaderIsrUpdateLock.
	p.mu.Lock()
	p.stateMu.Lock()
	if p.isrChg.pending != it {
		p.stateMu.Unlock()
		p.mu.Unlock()
		return false
	}
	retry, committed := false, false
	switch err {
	case nil:
		switch {
		case rp.LeaderEpoch != p.leaderEpoch:
			rm.logger.Info("ignoring an ISR change answered for another leader epoch", append(log,
				zap.Int32("answeredLeaderEpoch", rp.LeaderEpoch), zap.Int32("leaderEpoch", p.leaderEpoch))...)
		case rp.PartitionEpoch < p.partitionEpoch:
			rm.logger.Info("ignoring an ISR change older than the partition state", append(log,
				zap.Int32("answeredPartitionEpoch", rp.PartitionEpoch), zap.Int32("partitionEpoch", p.partitionEpoch))...)
		default:
			// a newer partition epoch: the change was made; the same
			// one: nothing needed changing. Either way the ISR is the
			// controller's now.
			p.isr = slices.Clone(rp.ISR)
			p.partitionEpoch = rp.PartitionEpoch
			p.isrChg.pending = nil
			committed = true
			rm.logger.Info("ISR updated", append(log, zap.Int32s("isr", rp.ISR), zap.Int32("partitionEpoch", rp.PartitionEpoch))...)
		}
	case kerr.OperationNotAttempted, kerr.IneligibleReplica:
		p.isrChg.pending = nil
		committed = true
		rm.logger.Info("ISR change refused", append(log, zap.Error(err))...)
	case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.FencedLeaderEpoch, kerr.InvalidUpdateVersion, kerr.NewLeaderElected:
		// Our view is stale: wait for the image, which resets the state.
		rm.logger.Info("ISR change refused; waiting for new metadata", append(log, zap.Error(err))...)
	default:
		retry = true
		rm.logger.Info("ISR change failed; retrying", append(log, zap.Error(err))...)
	}
	p.stateMu.Unlock()
	moved := committed && p.maybeIncrementHW()
	p.mu.Unlock()
	if moved || committed {
		p.watch.wakeAll() // acks=all waiters re-check against the new ISR
	}
	return retry
}
