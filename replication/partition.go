package replication

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/storage"
)

// Partition is one partition this node holds a replica of, as leader or
// follower (Kafka's cluster.Partition).
//
// Locks (see doc.go for the order): mu guards the leadership state and is
// held for reading across every append and read, so leadership cannot change
// under one (Kafka's leaderIsrUpdateLock); stateMu guards the high
// watermark's movement and the followers' fetch state. hw is also readable
// without a lock.
type Partition struct {
	tp      storage.TopicPartition
	topicID [16]byte
	nodeID  int32

	mu lockrank.RWMutex
	// Guarded by mu.
	log            *storage.Log
	cfg            storage.Config
	isLeader       bool
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32

	stateMu lockrank.Mutex
	// Guarded by stateMu.
	followers map[int32]*followerState
	isrChg    isrChange // pending AlterPartition (isr.go)

	hw highWatermark // written under stateMu (and p.mu held)
	// leaderEpochStartOffset is the log end offset when this node became
	// leader; while the high watermark is below it, ListOffsets answers
	// OFFSET_NOT_AVAILABLE (KIP-207). -1 once passed or as follower.
	leaderEpochStartOffset atomic.Int64

	watch watchers // parked produce and fetch requests

	view *isrView // the ReplicaManager's image and lag time, for the ISR rules
}

// followerState is the leader's view of a follower (Kafka's Replica).
type followerState struct {
	logEndOffset   int64
	logStartOffset int64
	// For ISR membership (isr.go): when the follower was last caught up
	// with the leader's log end, its previous fetch and the leader's log
	// end then, and the broker epoch it fetched with (KIP-903, -1 unknown).
	lastCaughtUp       time.Time
	lastFetchTime      time.Time
	lastFetchLeaderLEO int64
	brokerEpoch        int64
}

// highWatermark is a partition's high watermark. Every Store also tells the
// log (storage.Log.UpdateHighWatermark, Kafka's
// UnifiedLog.updateHighWatermarkMetadata): a completed transaction holds the
// last stable offset back until the high watermark passes its marker. Stores
// happen with p.mu held (read or write), which guards p.log.
type highWatermark struct {
	atomic.Int64
	p *Partition
}

func (h *highWatermark) Store(v int64) {
	h.Int64.Store(v)
	if l := h.p.log; l != nil {
		l.UpdateHighWatermark(v)
	}
}

func newPartition(tp storage.TopicPartition, topicID [16]byte, nodeID int32, view *isrView) *Partition {
	if view == nil {
		view = &isrView{}
	}
	p := &Partition{tp: tp, topicID: topicID, nodeID: nodeID, leader: -1, leaderEpoch: -1, partitionEpoch: -1,
		followers: map[int32]*followerState{}, view: view}
	p.mu.SetRank(lockrank.Partition)
	p.stateMu.SetRank(lockrank.PartitionState)
	p.watch.mu.SetRank(lockrank.Watchers)
	p.hw.p = p
	p.leaderEpochStartOffset.Store(-1)
	return p
}

// HighWatermark is the partition's high watermark.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// checkEpoch is Partition.checkCurrentLeaderEpoch + getLocalLog: -1 skips
// the epoch check. p.mu must be held.
func (p *Partition) checkEpoch(current int32, requireLeader bool) error {
	if current >= 0 {
		switch {
		case p.leaderEpoch > current:
			return kerr.FencedLeaderEpoch
		case p.leaderEpoch < current:
			return kerr.UnknownLeaderEpoch
		}
	}
	if requireLeader && !p.isLeader || p.log == nil {
		return kerr.NotLeaderForPartition
	}
	return nil
}

// lastStableOffset is the LSO (UnifiedLog.lastStableOffset): the first
// unstable offset (the oldest transaction open, or completed with its marker
// not yet below the high watermark) if it is below the high watermark, else
// the high watermark. p.mu must be held.
func (p *Partition) lastStableOffset() int64 {
	hw := p.hw.Load()
	if p.log != nil {
		if fuo := p.log.FirstUnstableOffset(); fuo >= 0 && fuo < hw {
			return fuo
		}
	}
	return hw
}

// maybeIncrementHW is Partition.maybeIncrementLeaderHW: the high watermark
// moves to the smallest log end offset over the followers it must wait
// for, those of the maximal ISR and those outside it that are caught up and
// eligible to join it (shouldWaitForReplicaToJoinIsr), never backwards,
// never past the leader's log end offset (nor an append still waiting for
// its flush.messages sync), and not at all while the ISR is below the
// effective min.insync.replicas (KAFKA-15583, Kafka 3.7: "strict min ISR").
// It reports whether it moved. p.mu must be held (read); takes stateMu.
func (p *Partition) maybeIncrementHW() bool {
	if !p.isLeader || p.log == nil {
		return false
	}
	if len(p.isr) < p.effectiveMinIsrLocked() {
		return false
	}
	leo := p.log.LogEndOffset()
	now, lag, img := p.view.now(), p.view.lagTime(), p.view.image.Load()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	newHW := p.log.VisibleEnd()
	maximal := p.maximalISRLocked()
	for _, r := range p.replicas {
		if r == p.nodeID {
			continue
		}
		inIsr := slices.Contains(maximal, r)
		f, ok := p.followers[r]
		if !ok {
			if inIsr {
				newHW = min(newHW, p.hw.Load()) // its log end is unknown yet
			}
			continue
		}
		if f.logEndOffset < newHW && (inIsr || f.caughtUp(leo, now, lag) && isrEligible(r, f, img)) {
			newHW = f.logEndOffset
		}
	}
	old := p.hw.Load()
	if newHW <= old {
		return false
	}
	if err := p.checkHighWatermarkLocked(old, newHW); err != nil {
		return false
	}
	p.hw.Store(newHW)
	if s := p.leaderEpochStartOffset.Load(); s >= 0 && newHW >= s {
		p.leaderEpochStartOffset.Store(-1)
	}
	return true
}

// effectiveMinIsrLocked is Partition.effectiveMinIsr: min.insync.replicas,
// but never more than the replicas there are. p.mu must be held.
func (p *Partition) effectiveMinIsrLocked() int {
	return int(min(max(p.cfg.MinInSyncReplicas, 1), int32(max(len(p.replicas), 1))))
}

// Snapshot is a partition's state at one moment, for callers outside the
// package (Metadata-like answers and tests).
type Snapshot struct {
	IsLeader       bool
	Leader         int32
	LeaderEpoch    int32
	ISR            []int32
	HighWatermark  int64
	LogStartOffset int64
	LogEndOffset   int64
}

// Snapshot returns the partition's state.
func (p *Partition) Snapshot() Snapshot {
	p.mu.RLock()
	defer p.mu.RUnlock()
	s := Snapshot{IsLeader: p.isLeader, Leader: p.leader, LeaderEpoch: p.leaderEpoch,
		ISR: slices.Clone(p.isr), HighWatermark: p.hw.Load(), LogStartOffset: -1, LogEndOffset: -1}
	if p.log != nil {
		s.LogStartOffset = p.log.LogStartOffset()
		s.LogEndOffset = p.log.LogEndOffset()
	}
	return s
}
