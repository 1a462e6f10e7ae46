package raft

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
)

// harness runs Cores over an in-memory network and in-memory durable state.
// It is shared by the randomized simulation and the transcript tests.
type harness struct {
	t       testing.TB
	rng     *rand.Rand
	now     int64
	voters  []int32
	nodes   map[int32]*hnode
	queue   []hmsg
	seq     int64 // delivery tie-breaker
	cut     map[[2]int32]bool
	trace   func(string)
	maxRead int // max batches per fetch response

	// faults (simulation)
	dropP, dupP float64
	maxDelay    int64

	// global checks
	leaders   map[int32]int32 // epoch -> leader
	committed []Entry         // the committed prefix, as batches
	commitEp  []int32         // the epoch in which each committed batch was seen committed
	commitEnd int64
}

type hnode struct {
	id   int32
	core *Core
	up   bool
	inc  int // incarnation
	// durable
	hs  HardState
	log []Entry
	// observed
	lastHW int64
}

type hmsg struct {
	m      Message
	at     int64
	seq    int64
	toInc  int // incarnation of the receiver a response is meant for
	fromUp int
}

func newHarness(t testing.TB, seed int64, voters []int32, observers ...int32) *harness {
	h := &harness{t: t, rng: rand.New(rand.NewSource(seed)), voters: voters, nodes: map[int32]*hnode{},
		cut: map[[2]int32]bool{}, leaders: map[int32]int32{}, maxRead: 1 << 30}
	for _, id := range append(slices.Clone(voters), observers...) {
		n := &hnode{id: id, hs: HardState{LeaderID: NoLeader, VotedID: NoLeader}, up: true}
		h.nodes[id] = n
		h.start(n)
	}
	return h
}

func (h *harness) ids() []int32 {
	var ids []int32
	for id := range h.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (h *harness) logf(format string, args ...any) {
	if h.trace != nil {
		h.trace(fmt.Sprintf(format, args...))
	}
}

func (h *harness) start(n *hnode) {
	var ep epochCache
	end := int64(0)
	for _, e := range n.log {
		ep.assign(e.Epoch, e.Offset)
		end = e.LastOffset + 1
	}
	c, err := NewCore(CoreConfig{ID: n.id, Voters: h.voters, Rand: rand.New(rand.NewSource(h.rng.Int63())),
		State: n.hs, LogEnd: end, Epochs: ep, NowMs: h.now})
	if err != nil {
		h.t.Fatalf("node %d: %v", n.id, err)
	}
	n.core, n.up, n.lastHW = c, true, -1
	n.inc++
	h.process(n)
}

func (h *harness) crash(id int32) {
	n := h.nodes[id]
	n.up = false
	n.core = nil
}

func (h *harness) restart(id int32) { h.start(h.nodes[id]) }

func (h *harness) check(err error, n *hnode) {
	if err != nil {
		h.t.Fatalf("t=%d node %d: %v", h.now, n.id, err)
	}
}

// process drains a node's Ready: persist, truncate, append, send, advance.
func (h *harness) process(n *hnode) {
	for n.up && n.core.HasReady() {
		rd := n.core.Ready()
		if rd.HardState != nil {
			n.hs = *rd.HardState
		}
		if rd.TruncateTo >= 0 {
			i := sort.Search(len(n.log), func(i int) bool { return n.log[i].Offset >= rd.TruncateTo })
			h.logf("node %d truncates to %d", n.id, rd.TruncateTo)
			n.log = n.log[:i]
		}
		for _, e := range rd.Entries {
			if end := h.logEnd(n); e.Offset != end {
				h.t.Fatalf("node %d: append at %d, log end %d", n.id, e.Offset, end)
			}
			e.Raw = nil
			n.log = append(n.log, e)
		}
		for _, m := range rd.Messages {
			h.sendMsg(n, m)
		}
		h.check(n.core.Advance(rd), n)
		if rd.LeaderChange != nil {
			h.logf("node %d sees leader %d epoch %d", n.id, rd.LeaderChange.LeaderID, rd.LeaderChange.Epoch)
		}
		h.invariants(n)
	}
}

func (h *harness) logEnd(n *hnode) int64 {
	if len(n.log) == 0 {
		return 0
	}
	return n.log[len(n.log)-1].LastOffset + 1
}

func (h *harness) sendMsg(n *hnode, m Message) {
	if m.Type == MsgFetchResp && m.ReadFrom >= 0 && m.ReadTo > m.ReadFrom {
		for _, e := range n.log {
			if e.LastOffset >= m.ReadFrom && e.Offset < m.ReadTo && len(m.Entries) < h.maxRead {
				m.Entries = append(m.Entries, e)
			}
		}
	}
	hm := hmsg{m: m, at: h.now, seq: h.seq}
	h.seq++
	if to := h.nodes[m.To]; to != nil {
		hm.toInc = to.inc
	}
	hm.fromUp = n.inc
	if h.maxDelay > 0 {
		hm.at += 1 + h.rng.Int63n(h.maxDelay)
	}
	h.queue = append(h.queue, hm)
	if h.dupP > 0 && h.rng.Float64() < h.dupP {
		d := hm
		d.seq = h.seq
		h.seq++
		d.at += h.rng.Int63n(h.maxDelay + 1)
		h.queue = append(h.queue, d)
	}
}

func (h *harness) isCut(a, b int32) bool { return h.cut[[2]int32{a, b}] }

func (h *harness) isolate(id int32) {
	for _, o := range h.ids() {
		if o != id {
			h.cut[[2]int32{id, o}] = true
			h.cut[[2]int32{o, id}] = true
		}
	}
}

func (h *harness) heal() { h.cut = map[[2]int32]bool{} }

// deliver hands one queued message to its receiver. It returns false when the
// message was dropped.
func (h *harness) deliver(hm hmsg) bool {
	m := hm.m
	to := h.nodes[m.To]
	if to == nil || !to.up || h.isCut(m.From, m.To) {
		return false
	}
	if m.Type.IsResponse() && hm.toInc != to.inc {
		return false // the connection of the request died with the old incarnation
	}
	if h.dropP > 0 && h.rng.Float64() < h.dropP {
		return false
	}
	h.logf("%v", m)
	h.check(to.core.Step(m), to)
	h.process(to)
	return true
}

func (h *harness) tick(id int32) {
	n := h.nodes[id]
	if !n.up {
		return
	}
	h.check(n.core.Tick(h.now), n)
	h.process(n)
}

// invariants checks, after every step of node n: one leader per epoch, HW
// monotonic, the committed prefix never lost or changed, committed prefixes
// agree.
func (h *harness) invariants(n *hnode) {
	c := n.core
	st := c.Status()
	if st.Role == RoleLeader {
		if l, ok := h.leaders[st.Epoch]; ok && l != n.id {
			h.t.Fatalf("two leaders in epoch %d: %d and %d", st.Epoch, l, n.id)
		}
		h.leaders[st.Epoch] = n.id
		// Leader completeness: a leader of a later epoch holds every batch
		// committed before its epoch (a stale leader may lack newer ones).
		end := int64(0)
		for i, ce := range h.committed {
			if h.commitEp[i] < st.Epoch {
				end = ce.LastOffset + 1
			}
		}
		h.checkPrefix(n, end)
	}
	if st.HighWatermark < n.lastHW {
		h.t.Fatalf("node %d high watermark went back from %d to %d", n.id, n.lastHW, st.HighWatermark)
	}
	n.lastHW = st.HighWatermark
	if st.HighWatermark > h.commitEnd {
		// extend the global committed prefix from this node's log
		h.checkPrefix(n, h.commitEnd)
		for _, e := range n.log {
			if e.Offset >= h.commitEnd && e.LastOffset < st.HighWatermark {
				h.committed = append(h.committed, e)
				h.commitEp = append(h.commitEp, st.Epoch)
				h.commitEnd = e.LastOffset + 1
			}
		}
	}
	if st.HighWatermark > 0 {
		h.checkPrefix(n, min(st.HighWatermark, h.commitEnd))
	}
}

// checkPrefix verifies that n's log holds exactly the committed batches below end.
func (h *harness) checkPrefix(n *hnode, end int64) {
	for i, ce := range h.committed {
		if ce.Offset >= end {
			return
		}
		if i >= len(n.log) || !sameEntry(n.log[i], ce) {
			got := "missing"
			if i < len(n.log) {
				got = entryString(n.log[i])
			}
			h.t.Fatalf("t=%d node %d lost committed batch %s (has %s)", h.now, n.id, entryString(ce), got)
		}
	}
}

func sameEntry(a, b Entry) bool {
	if a.Offset != b.Offset || a.LastOffset != b.LastOffset || a.Epoch != b.Epoch || a.Control != b.Control || len(a.Records) != len(b.Records) {
		return false
	}
	for i := range a.Records {
		if string(a.Records[i]) != string(b.Records[i]) {
			return false
		}
	}
	return true
}

func entryString(e Entry) string {
	if e.Control {
		return fmt.Sprintf("[%d]@%d LeaderChange", e.Offset, e.Epoch)
	}
	var rs []string
	for _, r := range e.Records {
		rs = append(rs, string(r))
	}
	if e.Offset == e.LastOffset {
		return fmt.Sprintf("[%d]@%d %s", e.Offset, e.Epoch, strings.Join(rs, " "))
	}
	return fmt.Sprintf("[%d-%d]@%d %s", e.Offset, e.LastOffset, e.Epoch, strings.Join(rs, " "))
}

// deliverDue delivers every queued message due at or before now, oldest first.
func (h *harness) deliverDue() int {
	n := 0
	for {
		i := -1
		for j, hm := range h.queue {
			if hm.at <= h.now && (i < 0 || hm.at < h.queue[i].at || hm.at == h.queue[i].at && hm.seq < h.queue[i].seq) {
				i = j
			}
		}
		if i < 0 {
			return n
		}
		hm := h.queue[i]
		h.queue = append(h.queue[:i], h.queue[i+1:]...)
		h.deliver(hm)
		n++
	}
}

func (h *harness) leader() *hnode {
	var best *hnode
	for _, id := range h.ids() {
		n := h.nodes[id]
		if n.up && n.core.Role() == RoleLeader && (best == nil || n.core.Epoch() > best.core.Epoch()) {
			best = n
		}
	}
	return best
}

func (h *harness) statusLine(id int32) string {
	n := h.nodes[id]
	if !n.up {
		return fmt.Sprintf("%d: down", id)
	}
	st := n.core.Status()
	return fmt.Sprintf("%d: %s epoch=%d leader=%d voted=%d leo=%d hw=%d", id, st.Role, st.Epoch, st.LeaderID, st.VotedID, st.LogEndOffset, st.HighWatermark)
}
