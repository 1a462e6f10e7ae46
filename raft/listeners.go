package raft

import (
	"go.uber.org/zap"
)

// listenerState is one registered listener's cursor; its goroutine reads
// committed batches from the log and delivers them in order.
type listenerState struct {
	l         Listener
	next      int64          // next offset to deliver
	delivered LeaderAndEpoch // last leader change delivered
	done      chan struct{}
}

// Register adds a listener. It receives every committed batch from offset 0
// (so the whole committed log is re-delivered after a restart), then new
// commits as they happen, and leader changes. A change that makes this node
// the leader is delivered only after every batch before the leader's epoch
// start, as KafkaRaftClient does, so a listener that sees itself become leader
// has replayed the whole committed log.
func (n *Node) Register(l Listener) {
	n.mu.Lock()
	defer n.mu.Unlock()
	ls := &listenerState{l: l, delivered: LeaderAndEpoch{LeaderID: NoLeader, Epoch: -1}, done: make(chan struct{})}
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
		var raw []byte
		var err error
		if n.hw > ls.next {
			raw, err = n.store.Read(ls.next, n.hw, 1<<20)
		}
		hw := n.hw
		var change *LeaderAndEpoch
		if n.leaderChangeDeliverable(ls) {
			le := n.le
			change = &le
		}
		n.mu.Unlock()
		if err != nil {
			n.log.Error("raft listener read failed", zap.Int64("offset", ls.next), zap.Error(err))
			n.mu.Lock()
			n.fail(err)
			n.mu.Unlock()
			return
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
