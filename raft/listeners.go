package raft

import (
	"fmt"

	"go.uber.org/zap"
)

// listenerState is one registered listener's cursor; its goroutine reads
// committed batches from the log and delivers them in order.
type listenerState struct {
	l         Listener
	next      int64          // next offset to deliver
	fresh     bool           // nothing delivered yet (Kafka's STARTING_NEXT_OFFSET)
	delivered LeaderAndEpoch // last leader change delivered
	done      chan struct{}
}

// SnapshotListener is a Listener that can load snapshots. A new one gets the
// latest snapshot first (when there is one) and then the committed batches
// after it, so a restart replays only the log's tail; any listener whose
// next offset falls below the log start (the log before a snapshot was
// deleted, or a snapshot was fetched from the leader) gets the latest
// snapshot again (KafkaRaftClient.updateListenersProgress).
type SnapshotListener interface {
	Listener
	// HandleSnapshot replaces the listener's state by the snapshot's; batches
	// from s.ID.Offset follow.
	HandleSnapshot(s *SnapshotReader)
}

// Register adds a listener. It receives every committed batch from offset 0
// (from the latest snapshot for a SnapshotListener), then new commits as
// they happen, and leader changes. A change that makes this node
// the leader is delivered only after every batch before the leader's epoch
// start, as KafkaRaftClient does, so a listener that sees itself become leader
// has replayed the whole committed log.
func (n *Node) Register(l Listener) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ls := &listenerState{l: l, fresh: true, delivered: LeaderAndEpoch{LeaderID: NoLeader, Epoch: -1}, done: make(chan struct{})}
	n.lsn = append(n.lsn, ls)
	if n.closed {
		close(ls.done)
		return
	}
	go n.runListener(ls)
}

func (n *Node) listeners() []*listenerState {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*listenerState(nil), n.lsn...)
}

// leaderChangeDeliverable: a change to another leader is delivered at once;
// our own leadership once the listener passed the epoch start offset.
func (n *Node) leaderChangeDeliverable(ls *listenerState) bool {
	if n.le == ls.delivered || !n.started {
		return false
	}
	if n.le.LeaderID == n.cfg.NodeID && n.le.LeaderID >= 0 {
		return n.epochSt >= 0 && ls.next > n.epochSt
	}
	return true
}

func (n *Node) runListener(ls *listenerState) {
	defer close(ls.done)
	for {
		n.mu.Lock()
		for !n.closed && n.failed == nil && !(n.started && n.hw > ls.next) && !n.leaderChangeDeliverable(ls) {
			n.cond.Wait()
		}
		if n.closed || n.failed != nil {
			n.mu.Unlock()
			return
		}
		var raw, snap []byte
		var snapID OffsetAndEpoch
		var err error
		sl, canSnap := ls.l.(SnapshotListener)
		if n.hw > ls.next && (ls.fresh || ls.next < n.core.LogStartOffset()) {
			if latest, ok := n.snaps.latest(); ok && canSnap && latest.ID.Offset <= n.hw {
				snapID, snap, _, err = n.readLatestSnapshotLocked()
			} else if ls.next < n.core.LogStartOffset() {
				n.log.Error("raft listener cannot load snapshots; skipping to the log start",
					zap.Int64("offset", ls.next), zap.Int64("logStartOffset", n.core.LogStartOffset()))
				ls.next = n.core.LogStartOffset()
			}
		}
		if n.hw > ls.next {
			ls.fresh = false
		}
		read := snap == nil && err == nil && n.hw > ls.next
		hw := n.hw
		var change *LeaderAndEpoch
		if n.leaderChangeDeliverable(ls) {
			le := n.le
			change = &le
		}
		n.mu.Unlock()
		if read {
			// Without n.mu: the log writer may hold the log's lock across
			// an append. Committed batches below hw stay, unless retention
			// or a fetched snapshot moved the log start past them meanwhile.
			raw, err = n.store.Read(ls.next, hw, 1<<20)
			if err != nil {
				n.mu.Lock()
				gone := ls.next < n.core.LogStartOffset()
				n.mu.Unlock()
				if gone {
					continue
				}
			}
		}
		if err != nil {
			n.log.Error("raft listener read failed", zap.Int64("offset", ls.next), zap.Error(err))
			n.mu.Lock()
			n.fail(err)
			n.mu.Unlock()
			return
		}
		if snap != nil {
			sr, err := DecodeSnapshot(snapID, snap)
			if err != nil {
				n.mu.Lock()
				n.fail(fmt.Errorf("raft: reading snapshot %s: %w", SnapshotFileName(snapID), err))
				n.mu.Unlock()
				return
			}
			sl.HandleSnapshot(sr)
			ls.next = snapID.Offset
			continue
		}
		if len(raw) > 0 {
			err = decodeBatches(raw, func(b Batch, control bool) error {
				if b.BaseOffset >= hw {
					return errStopDecode
				}
				if !control && b.LastOffset >= ls.next {
					ls.l.HandleCommit(b)
				}
				ls.next = b.LastOffset + 1
				return nil
			})
			if err != nil && err != errStopDecode {
				n.mu.Lock()
				n.fail(err)
				n.mu.Unlock()
				return
			}
			continue // re-evaluate leader change against the new cursor
		}
		if change != nil {
			ls.delivered = *change
			ls.l.HandleLeaderChange(*change)
		}
	}
}
