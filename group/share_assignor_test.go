package group

import (
	"fmt"
	"math/rand"
	"testing"
)

// TestShareAssignorBalance checks the simple assignor's principles on
// homogeneous groups: every partition has ceil(M/P) members, two members'
// counts differ by at most one, and a member keeps its partitions when the
// balance allows (adding a member to a balanced group moves as little as
// possible).
func TestShareAssignorBalance(t *testing.T) {
	topic := [16]byte{1}
	rng := rand.New(rand.NewSource(1))
	for _, mc := range []int{1, 2, 3, 4, 5, 7, 10} {
		for _, pc := range []int{1, 2, 3, 4, 6, 9} {
			var members []shareAssignMember
			for i := 0; i < mc; i++ {
				members = append(members, shareAssignMember{id: fmt.Sprintf("m%02d", i), topics: [][16]byte{topic}})
			}
			var ps []int32
			for p := 0; p < pc; p++ {
				ps = append(ps, int32(p))
			}
			assignable := map[[16]byte][]int32{topic: ps}
			// A random previous assignment, so stickiness meets imbalance.
			prev := map[string]partSet{}
			for _, m := range members {
				prev[m.id] = partSet{}
				for _, p := range ps {
					if rng.Intn(3) == 0 {
						prev[m.id][tp{topic, p}] = struct{}{}
					}
				}
			}
			out := assignShare(members, assignable, prev)
			sharing := (mc + pc - 1) / pc
			count := map[int32]int{}
			lo, hi := 1<<30, 0
			for _, m := range members {
				n := len(out[m.id])
				lo, hi = min(lo, n), max(hi, n)
				for x := range out[m.id] {
					count[x.p]++
				}
			}
			for _, p := range ps {
				if count[p] != sharing {
					t.Errorf("%d members, %d partitions: partition %d has %d members, want %d", mc, pc, p, count[p], sharing)
				}
			}
			if hi-lo > 1 {
				t.Errorf("%d members, %d partitions: counts from %d to %d", mc, pc, lo, hi)
			}
			// Stickiness: one more member moves at most what it takes.
			extra := append(members, shareAssignMember{id: "zz", topics: [][16]byte{topic}})
			next := assignShare(extra, assignable, out)
			moved := 0
			for _, m := range members {
				for x := range out[m.id] {
					if _, ok := next[m.id][x]; !ok {
						moved++
					}
				}
			}
			if want := len(next["zz"]); moved > want {
				t.Errorf("%d members, %d partitions: adding one moved %d partitions away, the new member got %d", mc, pc, moved, want)
			}
		}
	}
}

// TestShareAssignorHeterogeneous: each topic is balanced among its own
// subscribers only.
func TestShareAssignorHeterogeneous(t *testing.T) {
	a, b := [16]byte{1}, [16]byte{2}
	members := []shareAssignMember{
		{id: "x", topics: [][16]byte{a}},
		{id: "y", topics: [][16]byte{a, b}},
		{id: "z", topics: [][16]byte{b}},
	}
	out := assignShare(members, map[[16]byte][]int32{a: {0, 1}, b: {0, 1, 2, 3}}, nil)
	for x := range out["x"] {
		if x.id != a {
			t.Errorf("x got %v of a topic it does not subscribe to", x)
		}
	}
	for x := range out["z"] {
		if x.id != b {
			t.Errorf("z got %v of a topic it does not subscribe to", x)
		}
	}
	total := 0
	for _, s := range out {
		total += len(s)
	}
	if total != 6 || len(out["x"]) != 1 || len(out["z"]) != 2 {
		t.Errorf("assignment %v", out)
	}
}
