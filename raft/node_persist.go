package raft

import (
	"fmt"

	"go.uber.org/zap"
)

// Persistence without Node.mu. The core hands out Readys under n.mu; their
// disk work runs on two writer goroutines that hold no raft lock across a
// write or sync, so Fetch, Vote and every other request, the timers and the
// listeners go on while the metadata disk is slow (issue 14, the slow-disk
// fault):
//
//   - the log writer: truncations, appends and the flush of the metadata log,
//     Ready after Ready in order, several Readys per append and fsync when
//     they queue up. It tells the core LogWritten (the leader serves the
//     entries to followers from then) and LogFlushed (the leader counts its
//     own log for the high watermark, a follower fetches again: Kafka's
//     follower flushes before its next Fetch, KafkaRaftClient.appendAsFollower).
//     A fetched snapshot's chunks and its load (rare: a follower far behind)
//     still run under n.mu: they change the snapshot files n.mu guards.
//   - the quorum-state writer: the latest HardState (.tmp, fsync, rename).
//     Messages of a Ready wait until its HardState and every earlier one are
//     durable (a granted vote, a candidacy, a leadership claim must survive
//     a crash before anyone hears of it); with no quorum-state write pending
//     they go at once. The log's durability never holds a message back.
//
// Retention (deleting snapshots and old segments) runs on the log writer too,
// between writes, so that nothing under n.mu waits for the log's own lock
// behind an append.

type heldMsg struct {
	seq uint64 // the quorum-state write it waits for
	m   Message
}

// queueReadyLocked hands rd's disk work to the writers and sends (or holds)
// its messages. n.mu must be held.
func (n *Node) queueReadyLocked(rd Ready) error {
	if rd.HardState != nil {
		hs := *rd.HardState
		n.qsNext = &hs
		n.qsSeq++
		n.wcond.Broadcast()
	}
	msgs := rd.Messages
	if rd.HasLogWork() {
		rd.Messages = nil
		n.logq = append(n.logq, rd)
		n.wcond.Broadcast()
	}
	for _, m := range msgs {
		if n.qsDone < n.qsSeq {
			n.held = append(n.held, heldMsg{seq: n.qsSeq, m: m})
			continue
		}
		if err := n.dispatchLocked(m); err != nil {
			return err
		}
	}
	return nil
}

// runQuorumStateWriter writes HardStates as they come, the latest one when
// several queued up meanwhile, then releases the messages waiting for them.
func (n *Node) runQuorumStateWriter() {
	defer n.writers.Done()
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		for n.qsNext == nil && !n.closed && !n.stopWritersLocked() {
			n.wcond.Wait()
		}
		if n.stopWritersLocked() || n.qsNext == nil {
			return
		}
		hs, seq := *n.qsNext, n.qsSeq
		n.qsNext = nil
		n.mu.Unlock()
		err := n.qs.write(hs)
		n.mu.Lock()
		if n.stopWritersLocked() {
			return
		}
		if err != nil {
			n.fail(fmt.Errorf("raft: writing quorum-state: %w", err))
			return
		}
		n.qsDone = seq
		if n.closed {
			n.held = nil // Close dropped the waiters; the rest is best effort
			continue
		}
		kept := n.held[:0]
		for i, h := range n.held {
			if h.seq > n.qsDone {
				kept = append(kept, n.held[i:]...)
				break
			}
			if err := n.dispatchLocked(h.m); err != nil {
				n.fail(err)
				return
			}
		}
		n.held = kept
	}
}

// stopWritersLocked: a fatal error ends the writers at once, pending writes
// dropped (as a crash would). Close lets them finish what is queued.
func (n *Node) stopWritersLocked() bool { return n.failed != nil }

// runLogWriter carries out the log work of the queued Readys in order.
func (n *Node) runLogWriter() {
	defer n.writers.Done()
	n.mu.Lock()
	defer n.mu.Unlock()
	for {
		for len(n.logq) == 0 && !n.cleanDue && !n.closed && !n.stopWritersLocked() {
			n.wcond.Wait()
		}
		if n.stopWritersLocked() || n.closed && len(n.logq) == 0 {
			return
		}
		if len(n.logq) == 0 {
			// Retention, with no append in flight: store calls under n.mu
			// never wait for the log's lock behind a write.
			n.cleanDue = false
			n.fail(n.maybeCleanLocked())
			continue
		}
		batch := n.logq
		n.logq = nil
		if err := n.writeLogLocked(batch); err != nil {
			n.fail(err)
			return
		}
	}
}

// writeLogLocked writes batch's truncations, entries and snapshot pieces,
// tells the core, flushes, tells the core. n.mu is held on entry and exit
// and released around the log's I/O.
func (n *Node) writeLogLocked(batch []Ready) error {
	flush := false
	var buf []byte
	for _, rd := range batch {
		if rd.TruncateTo >= 0 || len(rd.SnapshotChunks) > 0 || rd.LoadSnapshot != nil {
			// keep the order: what is buffered goes first
			if err := n.appendUnlocked(buf); err != nil || n.stopWritersLocked() {
				return err
			}
			buf = buf[:0]
		}
		if rd.TruncateTo >= 0 {
			n.log.Info("truncating metadata log", zap.Int64("offset", rd.TruncateTo))
			n.mu.Unlock()
			err := n.store.Truncate(rd.TruncateTo)
			n.mu.Lock()
			if err != nil {
				return err
			}
			if n.stopWritersLocked() {
				return nil
			}
			flush = true
		}
		for _, e := range rd.Entries {
			if e.Raw != nil {
				buf = append(buf, e.Raw...)
			} else {
				buf = append(buf, EncodeEntry(e)...)
			}
			flush = true
		}
		// A fetched snapshot changes the snapshot files n.mu guards.
		for _, ch := range rd.SnapshotChunks {
			if err := n.snaps.appendPart(ch.ID, ch.Position, ch.Data); err != nil {
				return fmt.Errorf("raft: writing fetched snapshot: %w", err)
			}
		}
		if s := rd.LoadSnapshot; s != nil {
			if err := n.loadFetchedSnapshotLocked(*s); err != nil {
				return err
			}
		}
	}
	if err := n.appendUnlocked(buf); err != nil || n.stopWritersLocked() {
		return err
	}
	last := batch[len(batch)-1]
	if n.closed {
		// drain on Close: make it durable, tell nobody
		n.mu.Unlock()
		defer n.mu.Lock()
		if flush {
			return n.store.Flush()
		}
		return nil
	}
	if err := n.core.LogWritten(last); err != nil {
		return err
	}
	if err := n.processReadyLocked(); err != nil {
		return err
	}
	if flush {
		n.mu.Unlock()
		err := n.store.Flush()
		n.mu.Lock()
		if err != nil {
			return err
		}
		if n.stopWritersLocked() || n.closed {
			return nil
		}
	}
	if err := n.core.LogFlushed(last); err != nil {
		return err
	}
	return n.processReadyLocked()
}

// appendUnlocked appends buf to the log without n.mu (held on entry and exit).
func (n *Node) appendUnlocked(buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	n.mu.Unlock()
	err := n.store.Append(buf)
	n.mu.Lock()
	return err
}

// fillFetchRecords reads the records of a Fetch response from the log,
// holding no raft lock (the log has its own). A range that retention or a
// truncation removed meanwhile is answered without records: the follower
// fetches again.
func (n *Node) fillFetchRecords(m *Message) error {
	if m.Type != MsgFetchResp || m.ReadFrom < 0 || m.ReadTo <= m.ReadFrom || m.Entries != nil {
		return nil
	}
	b, err := n.store.Read(m.ReadFrom, m.ReadTo, maxFetchBytes)
	if err == nil {
		m.Entries = []Entry{{Raw: b}}
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	st := n.core.Status()
	if st.Role == RoleLeader && st.Epoch == m.Epoch && m.ReadFrom >= st.LogStartOffset {
		n.fail(err)
		return err
	}
	n.log.Info("raft fetch records gone meanwhile", zap.Int64("from", m.ReadFrom), zap.Int64("to", m.ReadTo), zap.Error(err))
	return nil
}
