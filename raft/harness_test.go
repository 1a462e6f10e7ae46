package raft

import (
	"errors"
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
	t         testing.TB
	rng       *rand.Rand
	now       int64
	voters    []int32
	nodes     map[int32]*hnode
	queue     []hmsg
	seq       int64 // delivery tie-breaker
	cut       map[[2]int32]bool
	trace     func(string)
	maxRead   int // max batches per fetch response
	snapChunk int32
	snapLoads int // snapshots downloaded and loaded

	// faults (simulation)
	dropP, dupP float64
	maxDelay    int64
	// asyncDisk: log work is carried out later, as the Node's log writer
	// does (node_persist.go): written after up to diskDelay ms, durable up
	// to diskDelay ms after that, each acknowledged with LogWritten and
	// LogFlushed; a crash loses what was not written, and (at random) what
	// was written but not flushed. The quorum state stays synchronous: the
	// Node holds messages back until it is durable.
	asyncDisk bool
	diskDelay int64

	// dynamic: kraft.version 1, the initial voters from a bootstrap
	// checkpoint (format --initial-controllers), every node with an
	// endpoint, the bootstrap servers the initial voters. endpoints (static
	// quorums): nodes have endpoints, so kraft.version 0 followers send
	// UpdateRaftVoter.
	dynamic   bool
	endpoints bool
	autoJoin  bool
	adminResp []Message // answers to admin requests (AddRaftVoter, ...)

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
	inc  int    // incarnation
	disk int    // replaced disks: part of the directory id
	port uint16 // its CONTROLLER port (0: 9093)
	// durable
	hs       HardState
	log      []Entry // from logStart
	logStart int64
	base     []Entry // the batches below logStart, as the snapshot at logStart holds them
	snaps    map[OffsetAndEpoch][]byte
	part     []byte // snapshot being downloaded
	partID   OffsetAndEpoch
	// observed
	lastHW int64
	// asyncDisk: Readys whose log work waits, the batch being written and
	// when its write and its flush complete, and the durable state
	pending   []Ready
	writing   []Ready
	writtenAt int64 // -1: no batch in flight
	flushAt   int64
	durable   *hdurable
}

// hdurable is what a node's log holds durably (asyncDisk).
type hdurable struct {
	log      []Entry
	logStart int64
	base     []Entry
}

type hmsg struct {
	m      Message
	at     int64
	seq    int64
	toInc  int // incarnation of the receiver a response is meant for
	fromUp int
}

func newHarness(t testing.TB, seed int64, voters []int32, observers ...int32) *harness {
	return newHarnessOpts(t, seed, harnessOpts{}, voters, observers...)
}

type harnessOpts struct{ dynamic, endpoints, autoJoin bool }

const adminID int32 = -100 // the sender of admin requests (AddRaftVoter, ...)

func newHarnessOpts(t testing.TB, seed int64, o harnessOpts, voters []int32, observers ...int32) *harness {
	h := &harness{t: t, rng: rand.New(rand.NewSource(seed)), voters: voters, nodes: map[int32]*hnode{},
		cut: map[[2]int32]bool{}, leaders: map[int32]int32{}, maxRead: 1 << 30, snapChunk: 1 << 20,
		dynamic: o.dynamic, endpoints: o.endpoints || o.dynamic, autoJoin: o.autoJoin}
	for _, id := range append(slices.Clone(voters), observers...) {
		n := &hnode{id: id, hs: HardState{LeaderID: NoLeader, VotedID: NoLeader}, up: true, snaps: map[OffsetAndEpoch][]byte{}}
		h.nodes[id] = n
		if h.dynamic {
			// format --initial-controllers on every node: the bootstrap
			// checkpoint holds the initial voters (observers get the same
			// checkpoint, as --no-initial-controllers nodes have none but
			// learn the voters from the log; both work).
			var vs []Voter
			for _, v := range voters {
				vs = append(vs, h.voterOf(v, 0))
			}
			set, err := NewVoterSet(vs...)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(voters, id) {
				n.snaps[bootstrapSnapshotID] = EncodeSnapshotControl(bootstrapSnapshotID, 0, 0, SnapshotControl{KRaftVersion: 1, Voters: &set}, nil)
			}
		}
		h.start(n)
	}
	return h
}

// harness node identities: directory id from the id and the disk, one
// CONTROLLER endpoint node<id>:9093.
func dirOf(id int32, disk int) [16]byte {
	return [16]byte{0: 0xd1, 1: byte(disk), 14: byte(id >> 8), 15: byte(id)}
}

func endpointOf(id int32) Endpoint {
	return Endpoint{Name: "CONTROLLER", Host: fmt.Sprintf("node%d", id), Port: 9093}
}

// endpoint is the node's current endpoint (a moved node has another port).
func (n *hnode) endpoint() Endpoint {
	e := endpointOf(n.id)
	if n.port != 0 {
		e.Port = n.port
	}
	return e
}

// key is the node's current replica key.
func (n *hnode) key() ReplicaKey { return ReplicaKey{ID: n.id, DirectoryID: dirOf(n.id, n.disk)} }

// voter is the node as a voter entry (what AddRaftVoter names).
func (n *hnode) voter() Voter {
	return Voter{Key: n.key(), Endpoints: []Endpoint{n.endpoint()}, KRaftMin: 0, KRaftMax: 1}
}

// replaceDisk loses the node's whole state: it comes back with a new
// directory id and an empty log, as an observer until it is added again.
func (h *harness) replaceDisk(id int32) {
	n := h.nodes[id]
	h.crash(id)
	n.disk++
	n.hs = HardState{LeaderID: NoLeader, VotedID: NoLeader}
	n.log, n.logStart, n.base, n.part = nil, 0, nil, nil
	n.snaps = map[OffsetAndEpoch][]byte{}
	h.start(n)
}

func (h *harness) voterOf(id int32, disk int) Voter {
	return Voter{Key: ReplicaKey{ID: id, DirectoryID: dirOf(id, disk)}, Endpoints: []Endpoint{endpointOf(id)}, KRaftMin: 0, KRaftMax: 1}
}

// controlOf is what a node restores at start: the latest snapshot's control
// records, then the log's.
func (h *harness) controlOf(n *hnode) ControlRecords {
	var out ControlRecords
	infos := n.snapshotInfos()
	if len(infos) > 0 {
		latest := infos[len(infos)-1].ID
		ctl, err := decodeSnapshotControl(n.snaps[latest])
		if err != nil {
			h.t.Fatalf("node %d snapshot %v: %v", n.id, latest, err)
		}
		if ctl.KRaftVersion > 0 {
			out.KRaftVersions = append(out.KRaftVersions, KRaftVersionAt{latest.Offset - 1, ctl.KRaftVersion})
			if ctl.Voters != nil {
				out.Voters = append(out.Voters, VotersAt{latest.Offset - 1, *ctl.Voters})
			}
		}
	}
	hist := controlHistory{kraft: out.KRaftVersions, voters: out.Voters}
	for _, e := range n.log {
		recs, err := entryControlRecords(e)
		if err == nil {
			err = hist.apply(recs)
		}
		if err != nil {
			h.t.Fatalf("node %d control records: %v", n.id, err)
		}
	}
	return hist.records()
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
	end := n.logStart
	for _, e := range n.log {
		ep.assign(e.Epoch, e.Offset)
		end = e.LastOffset + 1
	}
	cc := CoreConfig{ID: n.id, DirectoryID: n.key().DirectoryID, Voters: h.voters, Rand: rand.New(rand.NewSource(h.rng.Int63())),
		State: n.hs, LogStart: n.logStart, LogEnd: end, Epochs: ep, Snapshots: n.snapshotInfos(), NowMs: h.now,
		FetchSnapshotMaxBytes: h.snapChunk, ListenerName: "CONTROLLER", KRaftMax: 1, CanBecomeVoter: n.id >= 0,
		AutoJoin: h.autoJoin, Control: h.controlOf(n)}
	if h.endpoints {
		cc.LocalEndpoints = []Endpoint{n.endpoint()}
		var st []Voter
		for _, v := range h.voters {
			st = append(st, Voter{Key: ReplicaKey{ID: v}, Endpoints: []Endpoint{endpointOf(v)}})
		}
		// controller.quorum.bootstrap.servers: every controller, as configured at first
		for _, id := range h.ids() {
			if id >= 0 && id != n.id {
				cc.Bootstrap = append(cc.Bootstrap, h.nodes[id].endpoint())
			}
		}
		cc.StaticVoters, _ = NewVoterSet(st...)
	}
	if h.dynamic {
		cc.Voters, cc.StaticVoters = nil, VoterSet{}
	}
	c, err := NewCore(cc)
	if err != nil {
		h.t.Fatalf("node %d: %v", n.id, err)
	}
	n.core, n.up, n.lastHW = c, true, -1
	n.inc++
	n.writtenAt = -1
	n.markDurable()
	h.process(n)
}

func (h *harness) crash(id int32) {
	n := h.nodes[id]
	n.up = false
	n.core = nil
	if h.asyncDisk {
		n.pending, n.writing, n.writtenAt = nil, nil, -1
		if n.durable != nil && h.rng.Intn(2) == 0 {
			// the page cache is gone: only the flushed log survives
			h.logf("node %d loses its unflushed log", n.id)
			n.log, n.logStart, n.base = slices.Clone(n.durable.log), n.durable.logStart, slices.Clone(n.durable.base)
		}
		n.durable = nil
	}
}

// markDurable records n's log as durable (asyncDisk).
func (n *hnode) markDurable() {
	n.durable = &hdurable{log: slices.Clone(n.log), logStart: n.logStart, base: slices.Clone(n.base)}
}

// diskDue advances the nodes' asynchronous log writes (asyncDisk).
func (h *harness) diskDue() {
	if !h.asyncDisk {
		return
	}
	for _, id := range h.ids() {
		n := h.nodes[id]
		if !n.up {
			continue
		}
		if n.writtenAt < 0 && len(n.pending) > 0 {
			n.writing, n.pending = n.pending, nil
			n.writtenAt = h.now + h.rng.Int63n(h.diskDelay+1)
			n.flushAt = n.writtenAt + h.rng.Int63n(h.diskDelay+1)
		}
		if n.writing == nil {
			continue
		}
		last := n.writing[len(n.writing)-1]
		if n.writtenAt >= 0 && h.now >= n.writtenAt {
			for _, rd := range n.writing {
				h.applyLogWork(n, rd)
			}
			n.writtenAt = -2 // written, flush pending
			h.logf("node %d wrote its log to %d", n.id, h.logEnd(n))
			h.check(n.core.LogWritten(last), n)
			h.process(n)
			if !n.up {
				continue
			}
		}
		if n.writtenAt == -2 && h.now >= n.flushAt {
			n.writing, n.writtenAt = nil, -1
			n.markDurable()
			h.logf("node %d flushed its log to %d", n.id, h.logEnd(n))
			h.check(n.core.LogFlushed(last), n)
			h.process(n)
		}
	}
}

// applyLogWork carries out rd's truncation, appends and snapshot pieces.
func (h *harness) applyLogWork(n *hnode, rd Ready) {
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
	for _, ch := range rd.SnapshotChunks {
		if ch.Position == 0 || ch.ID != n.partID || int64(len(n.part)) != ch.Position {
			n.part, n.partID = nil, ch.ID
		}
		if int64(len(n.part)) != ch.Position {
			h.t.Fatalf("node %d: snapshot chunk at %d, have %d bytes", n.id, ch.Position, len(n.part))
		}
		n.part = append(n.part, ch.Data...)
	}
	if s := rd.LoadSnapshot; s != nil {
		if n.partID != s.ID || int64(len(n.part)) != s.Size {
			h.t.Fatalf("node %d: loading snapshot %v of %d bytes, downloaded %d of %v", n.id, s.ID, s.Size, len(n.part), n.partID)
		}
		h.logf("node %d loads snapshot %d@%d", n.id, s.ID.Offset, s.ID.Epoch)
		h.snapLoads++
		n.snaps = map[OffsetAndEpoch][]byte{s.ID: n.part}
		ctl, err := decodeSnapshotControl(n.part)
		if err != nil {
			h.t.Fatalf("node %d: snapshot %v: %v", n.id, s.ID, err)
		}
		n.part = nil
		n.log, n.logStart, n.base = nil, s.ID.Offset, h.snapshotEntries(n, s.ID)
		n.markDurable() // the load is durable (fsync, rename, truncation)
		h.check(n.core.SnapshotLoaded(s.ID, ctl), n)
	}
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
		if h.asyncDisk {
			if rd.HasLogWork() {
				n.pending = append(n.pending, rd)
			}
			for _, m := range rd.Messages {
				h.sendMsg(n, m)
			}
			if rd.LeaderChange != nil {
				h.logf("node %d sees leader %d epoch %d", n.id, rd.LeaderChange.LeaderID, rd.LeaderChange.Epoch)
			}
			h.invariants(n)
			continue
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
		for _, ch := range rd.SnapshotChunks {
			if ch.Position == 0 || ch.ID != n.partID || int64(len(n.part)) != ch.Position {
				n.part, n.partID = nil, ch.ID
			}
			if int64(len(n.part)) != ch.Position {
				h.t.Fatalf("node %d: snapshot chunk at %d, have %d bytes", n.id, ch.Position, len(n.part))
			}
			n.part = append(n.part, ch.Data...)
		}
		if s := rd.LoadSnapshot; s != nil {
			if n.partID != s.ID || int64(len(n.part)) != s.Size {
				h.t.Fatalf("node %d: loading snapshot %v of %d bytes, downloaded %d of %v", n.id, s.ID, s.Size, len(n.part), n.partID)
			}
			h.logf("node %d loads snapshot %d@%d", n.id, s.ID.Offset, s.ID.Epoch)
			h.snapLoads++
			n.snaps = map[OffsetAndEpoch][]byte{s.ID: n.part}
			ctl, err := decodeSnapshotControl(n.part)
			if err != nil {
				h.t.Fatalf("node %d: snapshot %v: %v", n.id, s.ID, err)
			}
			n.part = nil
			n.log, n.logStart, n.base = nil, s.ID.Offset, h.snapshotEntries(n, s.ID)
			h.check(n.core.SnapshotLoaded(s.ID, ctl), n)
		}
		if rd.HasLogWork() {
			n.markDurable()
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
		return n.logStart
	}
	return n.log[len(n.log)-1].LastOffset + 1
}

func (n *hnode) snapshotInfos() []SnapshotInfo {
	var out []SnapshotInfo
	for id, b := range n.snaps {
		out = append(out, SnapshotInfo{ID: id, Size: int64(len(b))})
	}
	slices.SortFunc(out, func(a, b SnapshotInfo) int { return compareOffsetAndEpoch(a.ID, b.ID) })
	return out
}

// view is the node's whole history as batches: the snapshot's, then the log.
func (n *hnode) view() []Entry { return append(slices.Clone(n.base), n.log...) }

func (n *hnode) viewLen() int { return len(n.base) + len(n.log) }

func (n *hnode) viewAt(i int) Entry {
	if i < len(n.base) {
		return n.base[i]
	}
	return n.log[i-len(n.base)]
}

// snapshotEntries decodes a harness snapshot: each record is one batch of the
// state (the simulated state machine is the log itself).
func (h *harness) snapshotEntries(n *hnode, id OffsetAndEpoch) []Entry {
	sr, err := DecodeSnapshot(id, n.snaps[id])
	if err != nil {
		h.t.Fatalf("node %d snapshot %v: %v", n.id, id, err)
	}
	var out []Entry
	for _, r := range sr.Records() {
		err := walkBatches(r, true, func(bh batchHeader, raw []byte) error {
			vals, err := recordValues(bh, raw)
			out = append(out, Entry{Offset: bh.baseOffset, LastOffset: bh.lastOffset(), Epoch: bh.epoch, Control: bh.control(),
				AppendTimeMs: bh.maxTs, Records: vals})
			return err
		})
		if err != nil {
			h.t.Fatal(err)
		}
	}
	return out
}

// takeSnapshot snapshots node id's state at its high watermark and, like
// retention with a tiny metadata.max.retention.bytes, deletes the log and
// the snapshots before it. It returns the snapshot id (ok=false: nothing to do).
func (h *harness) takeSnapshot(id int32) (OffsetAndEpoch, bool) { return h.snapshotAt(id, true) }

// snapshotAt snapshots node id at its high watermark; with truncate, the log
// before it is deleted.
func (h *harness) snapshotAt(id int32, truncate bool) (OffsetAndEpoch, bool) {
	n := h.nodes[id]
	if !n.up {
		return OffsetAndEpoch{}, false
	}
	hw := n.core.ReadableHighWatermark()
	var state []Entry
	for _, e := range n.view() {
		if e.LastOffset < hw {
			state = append(state, e)
		}
	}
	if len(state) == 0 || state[len(state)-1].LastOffset+1 != hw {
		return OffsetAndEpoch{}, false
	}
	sid := OffsetAndEpoch{Offset: hw, Epoch: state[len(state)-1].Epoch}
	if err := n.core.CheckSnapshotID(sid); err != nil {
		if errors.Is(err, ErrSnapshotExists) {
			return sid, false
		}
		h.t.Fatalf("t=%d node %d snapshot %v: %v", h.now, id, sid, err)
	}
	var recs [][]byte
	for _, e := range state {
		recs = append(recs, EncodeEntry(e))
	}
	n.snaps[sid] = EncodeSnapshotControl(sid, state[len(state)-1].AppendTimeMs, h.now, n.core.ControlAt(sid.Offset-1), recs)
	n.core.AddSnapshot(SnapshotInfo{ID: sid, Size: int64(len(n.snaps[sid]))})
	h.logf("node %d snapshots at %d@%d", id, sid.Offset, sid.Epoch)
	if truncate && n.core.DeleteBeforeSnapshot(sid) {
		n.logStart, n.base = sid.Offset, state
		i := sort.Search(len(n.log), func(i int) bool { return n.log[i].Offset >= sid.Offset })
		n.log = slices.Clone(n.log[i:])
		if d := n.durable; h.asyncDisk && d != nil {
			// retention deletes durably, below the unflushed tail
			j := sort.Search(len(d.log), func(i int) bool { return d.log[i].Offset >= sid.Offset })
			d.log, d.logStart, d.base = slices.Clone(d.log[j:]), sid.Offset, state
		}
		for old := range n.snaps {
			if compareOffsetAndEpoch(old, sid) < 0 {
				delete(n.snaps, old)
			}
		}
		h.logf("node %d log starts at %d", id, sid.Offset)
	}
	h.process(n)
	return sid, true
}

func (h *harness) sendMsg(n *hnode, m Message) {
	if m.Type == MsgFetchResp && m.ReadFrom >= 0 && m.ReadTo > m.ReadFrom {
		if m.ReadFrom < n.logStart {
			h.t.Fatalf("node %d reads from %d below its log start %d", n.id, m.ReadFrom, n.logStart)
		}
		for _, e := range n.log {
			if e.LastOffset >= m.ReadFrom && e.Offset < m.ReadTo && len(m.Entries) < h.maxRead {
				m.Entries = append(m.Entries, e)
			}
		}
	}
	if m.Type == MsgFetchSnapshotResp && m.ReadFrom >= 0 && m.ReadTo > m.ReadFrom {
		b, ok := n.snaps[*m.SnapshotID]
		if !ok || m.ReadTo > int64(len(b)) {
			h.t.Fatalf("node %d has no snapshot %v (or not %d bytes)", n.id, *m.SnapshotID, m.ReadTo)
		}
		m.Data = slices.Clone(b[m.ReadFrom:m.ReadTo])
	}
	if m.To < 0 && m.To != adminID && !m.Type.IsResponse() {
		// a bootstrap server: by address
		for id := range h.nodes {
			if h.nodes[id].endpoint().Addr() == m.ToAddr {
				m.To = id
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
	if m.To == adminID {
		h.logf("%v", m)
		h.adminResp = append(h.adminResp, m)
		return true
	}
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
	if m.Type == MsgApiVersions {
		// the broker layer answers ApiVersions with the supported kraft.version range
		from := h.nodes[m.From]
		resp := Message{Type: MsgApiVersionsResp, From: m.To, To: m.From, ID: m.ID,
			KRaftRange: &[2]int16{to.core.cfg.KRaftMin, to.core.cfg.KRaftMax}}
		hm := hmsg{m: resp, at: h.now, seq: h.seq, toInc: from.inc}
		h.seq++
		h.queue = append(h.queue, hm)
		return true
	}
	h.check(to.core.Step(m), to)
	h.process(to)
	return true
}

// admin sends an admin request (AddRaftVoter, RemoveRaftVoter) to node id.
func (h *harness) admin(id int32, m Message) {
	m.From, m.To = adminID, id
	h.seq++
	m.ID = uint64(1_000_000 + h.seq)
	h.queue = append(h.queue, hmsg{m: m, at: h.now, seq: h.seq, toInc: h.nodes[id].inc})
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
	// The committed prefix the node's log must hold: up to what it has
	// written (with asyncDisk a follower learns a high watermark before
	// its entries are written).
	st.HighWatermark = c.ReadableHighWatermark()
	if st.HighWatermark > h.commitEnd {
		// extend the global committed prefix from this node's log
		h.checkPrefix(n, h.commitEnd)
		for i := 0; i < n.viewLen(); i++ {
			if e := n.viewAt(i); e.Offset >= h.commitEnd && e.LastOffset < st.HighWatermark {
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
	// (with asyncDisk the environment catches up with the core only once
	// the log work handed out is done)
	if st := n.core.Status(); (len(n.pending) == 0 && n.writing == nil) && (st.LogStartOffset != n.logStart || st.LogEndOffset < h.logEnd(n)) {
		h.t.Fatalf("t=%d node %d: core log [%d, %d), environment [%d, %d)", h.now, n.id, st.LogStartOffset, st.LogEndOffset, n.logStart, h.logEnd(n))
	}
	for i, ce := range h.committed {
		if ce.Offset >= end {
			return
		}
		if i >= n.viewLen() || !sameEntry(n.viewAt(i), ce) {
			got := "missing"
			if i < n.viewLen() {
				got = entryString(n.viewAt(i))
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
		var parts []string
		for i, r := range e.Records {
			typ := e.ControlType
			if i < len(e.ControlTypes) {
				typ = e.ControlTypes[i]
			}
			switch typ {
			case ControlLeaderChange:
				parts = append(parts, "LeaderChange")
			case ControlKRaftVersion:
				v, _ := DecodeKRaftVersionRecord(r)
				parts = append(parts, fmt.Sprintf("KRaftVersion(%d)", v))
			case ControlKRaftVoters:
				vs, _ := DecodeVotersRecord(r)
				parts = append(parts, "Voters"+votersString(vs))
			default:
				parts = append(parts, fmt.Sprintf("Control(%d)", typ))
			}
		}
		if e.Offset == e.LastOffset {
			return fmt.Sprintf("[%d]@%d %s", e.Offset, e.Epoch, strings.Join(parts, " "))
		}
		return fmt.Sprintf("[%d-%d]@%d %s", e.Offset, e.LastOffset, e.Epoch, strings.Join(parts, " "))
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

// votersString renders a voter set as (1 2:d1 3): ids, with the disk of a
// directory id when it is not the first.
func votersString(vs VoterSet) string {
	var ids []string
	for _, v := range vs.Voters() {
		s := fmt.Sprint(v.Key.ID)
		switch {
		case !v.Key.hasDir():
			s += ":-"
		case v.Key.DirectoryID[1] != 0:
			s += fmt.Sprintf(":d%d", v.Key.DirectoryID[1])
		}
		if len(v.Endpoints) > 0 && v.Endpoints[0].Port != 9093 {
			s += fmt.Sprintf("@%d", v.Endpoints[0].Port)
		}
		ids = append(ids, s)
	}
	return "(" + strings.Join(ids, " ") + ")"
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
	line := fmt.Sprintf("%d: %s epoch=%d leader=%d voted=%d leo=%d hw=%d", id, st.Role, st.Epoch, st.LeaderID, st.VotedID, st.LogEndOffset, st.HighWatermark)
	if st.LogStartOffset > 0 {
		line += fmt.Sprintf(" start=%d", st.LogStartOffset)
	}
	if h.dynamic || h.endpoints {
		line += fmt.Sprintf(" kraft=%d voters=%s", st.KRaftVersion, votersString(st.VoterSet))
		if !n.core.isVoter {
			line += " observer"
		}
	}
	return line
}
