package raft

import (
	"fmt"
	"os"
	"slices"
	"testing"
)

// voterSimOptions: which voter changes the randomized run makes.
type voterSimOptions struct {
	faults      bool
	snapshots   bool
	replaceDisk bool // nodes lose their disk (new directory id) now and then
	move        bool // nodes restart on another port (UpdateRaftVoter)
	autoJoin    bool // observers add themselves; the admin only removes
}

// simulateVoters runs a dynamic (kraft.version 1) cluster with voter
// changes under faults: an admin adds observers and removes voters through
// the leader, nodes lose their disks or move, with message loss,
// duplication and delay, crashes, partitions and snapshots. The harness
// checks after every step that no epoch has two leaders, that the high
// watermark never goes back and that nothing committed is lost or changed
// (committed voter sets included, as they are log entries). After healing,
// a leader must commit a record on every node.
func simulateVoters(t *testing.T, seed int64, o voterSimOptions, durationMs int64) (*harness, map[string]int) {
	h := newHarnessOpts(t, seed, harnessOpts{dynamic: true, autoJoin: o.autoJoin}, []int32{1, 2, 3}, 4, 5)
	h.maxDelay = 30
	if os.Getenv("SIMVOTERS") == fmt.Sprintf("%s/%d", t.Name(), seed) {
		h.trace = func(s string) { fmt.Printf("t=%d %s\n", h.now, s) }
	}
	if o.snapshots {
		h.snapChunk = 64
	}
	if o.faults {
		h.dropP, h.dupP = *simDrop, *simDrop
		h.maxRead = 2
	}
	stats := map[string]int{}
	proposed := 0
	const step = 10
	for h.now = 0; h.now < durationMs; h.now += step {
		h.deliverDue()
		for _, id := range h.ids() {
			h.tick(id)
		}
		l := h.leader()
		r := h.rng.Float64()
		switch {
		case r < 0.1:
			if l != nil {
				proposed++
				if _, _, err := l.core.Propose([][]byte{[]byte(fmt.Sprintf("r%d", proposed))}); err != nil {
					t.Fatal(err)
				}
				h.process(l)
			}
		case r < 0.105:
			// admin: add a node that is not a voter
			if l == nil || o.autoJoin {
				break
			}
			vs := l.core.Voters()
			var cands []int32
			for _, id := range h.ids() {
				if n := h.nodes[id]; !vs.HasID(id) && n.up {
					cands = append(cands, id)
				}
			}
			if len(cands) > 0 {
				v := h.nodes[cands[h.rng.Intn(len(cands))]].voter()
				h.admin(l.id, Message{Type: MsgAddVoter, Voter: &v, AckWhenCommitted: h.rng.Intn(2) == 0, TimeoutMs: 30000})
				stats["add sent"]++
			}
		case r < 0.108:
			// admin: remove a voter (a dead key first: a replaced disk)
			if l == nil {
				break
			}
			vs := l.core.Voters()
			if vs.Len() <= 1 {
				break
			}
			voters := vs.Voters()
			k := voters[h.rng.Intn(len(voters))].Key
			for _, v := range voters {
				if n := h.nodes[v.Key.ID]; n.key() != v.Key {
					k = v.Key // a dead key goes first: removing a live voter then could lose the quorum
				}
			}
			if vs.Len() <= 2 && h.rng.Intn(4) != 0 {
				break // rarely shrink below 3
			}
			h.admin(l.id, Message{Type: MsgRemoveVoter, Voter: &Voter{Key: k}})
			stats["remove sent"]++
		case o.replaceDisk && r < 0.1085:
			if id := h.ids()[h.rng.Intn(len(h.nodes))]; h.safeToReplace(id) {
				h.replaceDisk(id)
				stats["disk replaced"]++
			}
		case o.move && r < 0.109:
			id := h.ids()[h.rng.Intn(len(h.nodes))]
			if n := h.nodes[id]; n.up {
				h.crash(id)
				n.port = uint16(9100 + h.rng.Intn(50))
				h.restart(id)
				stats["moved"]++
			}
		case o.snapshots && r < 0.12:
			h.takeSnapshot(h.ids()[h.rng.Intn(len(h.nodes))])
		case !o.faults:
		case r < 0.125:
			id := h.ids()[h.rng.Intn(len(h.nodes))]
			if h.nodes[id].up {
				h.crash(id)
			}
		case r < 0.15:
			for _, id := range h.ids() {
				if !h.nodes[id].up {
					h.restart(id)
				}
			}
		case r < 0.155:
			h.isolate(h.ids()[h.rng.Intn(len(h.nodes))])
		case r < 0.16:
			a, b := h.ids()[h.rng.Intn(len(h.nodes))], h.ids()[h.rng.Intn(len(h.nodes))]
			h.cut[[2]int32{a, b}], h.cut[[2]int32{b, a}] = true, true
		case r < 0.18:
			h.heal()
		case r < 0.185:
			if l != nil {
				h.check(l.core.Resign(), l)
				h.process(l)
			}
		}
		for _, m := range h.adminResp {
			switch m.Type {
			case MsgAddVoterResp:
				stats[fmt.Sprintf("add %d", m.Error)]++
			case MsgRemoveVoterResp:
				stats[fmt.Sprintf("remove %d", m.Error)]++
			}
			switch m.Error {
			case errNone, errRequestTimedOut, errNotLeaderOrFollower, errDuplicateVoter, errVoterNotFound:
			default:
				t.Fatalf("t=%d admin answer %v", h.now, m)
			}
		}
		h.adminResp = nil
	}
	// Heal and settle. A voter whose disk was replaced is dead for the quorum
	// until it is removed and added again; the admin repairs the voter set so
	// that every node is a voter with its current key, one change at a time.
	h.heal()
	h.dropP, h.dupP = 0, 0
	for _, id := range h.ids() {
		if !h.nodes[id].up {
			h.restart(id)
		}
	}
	deadline := h.now + 60000
	var want int64 = -1
	var wantEpoch int32
	nextAdmin := h.now
	for ; h.now < deadline; h.now += step {
		h.deliverDue()
		for _, id := range h.ids() {
			h.tick(id)
		}
		l := h.leader()
		h.adminResp = nil
		if l == nil {
			continue
		}
		vs := l.core.Voters()
		if h.now >= nextAdmin {
			nextAdmin = h.now + 500
			for _, v := range vs.Voters() {
				if n := h.nodes[v.Key.ID]; n.key() != v.Key && vs.Len() > 1 {
					h.admin(l.id, Message{Type: MsgRemoveVoter, Voter: &Voter{Key: v.Key}})
					break
				}
			}
			if vs.Len() < 3 {
				for _, id := range h.ids() {
					if !vs.HasID(id) {
						v := h.nodes[id].voter()
						h.admin(l.id, Message{Type: MsgAddVoter, Voter: &v, AckWhenCommitted: true, TimeoutMs: 30000})
						break
					}
				}
			}
		}
		healthy := vs.Len() >= 3
		for _, v := range vs.Voters() {
			if h.nodes[v.Key.ID].key() != v.Key {
				healthy = false
			}
		}
		if !healthy {
			continue
		}
		if want < 0 || l.core.Epoch() != wantEpoch {
			if _, last, err := l.core.Propose([][]byte{[]byte("final")}); err == nil {
				want, wantEpoch = last+1, l.core.Epoch()
				h.process(l)
			}
			continue
		}
		done := true
		for _, id := range h.ids() {
			if h.nodes[id].core.HighWatermark() < want {
				done = false
			}
		}
		if done {
			return h, stats
		}
	}
	for _, id := range h.ids() {
		t.Log(h.statusLine(id))
	}
	t.Fatalf("seed %d: no progress after healing (want hw %d)", seed, want)
	return h, stats
}

// safeToReplace: losing id's disk leaves every node's latest voter set able
// to elect a leader: at most one dead voter key (a voter whose node has
// another directory id now), and then in a set of at least three. Losing
// more is losing the quorum, which no consensus survives.
func (h *harness) safeToReplace(id int32) bool {
	for _, nid := range h.ids() {
		n := h.nodes[nid]
		if !n.up {
			return false
		}
		vs := n.core.Voters()
		dead := 0
		for _, v := range vs.Voters() {
			if v.Key.ID == id || h.nodes[v.Key.ID].key() != v.Key {
				dead++
			}
		}
		if dead > 1 || dead == 1 && vs.Len() < 3 {
			return false
		}
	}
	return true
}

// TestSimulationVoterChanges: voters added and removed (through the leader,
// one at a time) under message loss, crashes and partitions, with
// snapshots, disk replacements and moves; the invariants hold across voter
// set changes and the cluster recovers.
func TestSimulationVoterChanges(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    voterSimOptions
	}{
		{"no-faults", voterSimOptions{}},
		{"faults", voterSimOptions{faults: true}},
		{"faults-snapshots", voterSimOptions{faults: true, snapshots: true}},
		{"faults-disks-moves", voterSimOptions{faults: true, replaceDisk: true, move: true}},
		{"faults-autojoin", voterSimOptions{faults: true, autoJoin: true, replaceDisk: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seeds := *simSeeds
			if seeds == 0 {
				seeds = 20
				if raceEnabled {
					// 8, not 4: under faults most voter changes time
					// out (about 3 in 4 adds, with or without KIP-1166's
					// extra fetch answers), and 4 seeds left the
					// "some remove succeeded" check to luck.
					seeds = 8
				}
			}
			total := map[string]int{}
			for seed := int64(1); seed <= int64(seeds); seed++ {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					_, st := simulateVoters(t, seed, tc.o, *simDuration)
					for k, v := range st {
						total[k] += v
					}
				})
			}
			var keys []string
			for k := range total {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				t.Logf("%s: %d", k, total[k])
			}
			if !tc.o.autoJoin && total["add 0"] == 0 || total["remove 0"] == 0 {
				t.Errorf("no voter change succeeded in %d runs: %v", seeds, total)
			}
		})
	}
}
