package group

import "testing"

func TestStickyAssign(t *testing.T) {
	num := map[string]int32{"0": 3, "1": 3}
	bothStateful := map[string]bool{"0": true, "1": true}
	// Fresh: by partition then subtopology, to the least loaded process.
	got := stickyAssign([]stAssignMember{{id: "a", process: "p1"}, {id: "b", process: "p2"}, {id: "c", process: "p3"}}, num, bothStateful, 0)
	want := map[string]string{"a": "0-0,1-1", "b": "0-2,1-0", "c": "0-1,1-2"}
	for id, w := range want {
		if s := tasksString(got[id].active); s != w {
			t.Errorf("fresh: %s active %s, want %s", id, s, w)
		}
	}
	// Sticky: a keeps what it had up to its quota (2 of 6 over 3), the
	// standby holder b gets the task a gives up.
	prev := tasks{}
	for _, x := range []string{"0", "1"} {
		for p := int32(0); p < 3; p++ {
			prev.add(x, p)
		}
	}
	sb := tasks{}
	sb.add("0", 2)
	got = stickyAssign([]stAssignMember{{id: "a", process: "p1", prevActive: prev}, {id: "b", process: "p2", prevStand: sb}, {id: "c", process: "p3"}}, num, bothStateful, 1)
	if s := tasksString(got["a"].active); s != "0-0,0-1" {
		t.Errorf("sticky: a active %s", s)
	}
	if !got["b"].active.has("0", 2) {
		t.Errorf("sticky: b active %s, want 0-2 (its standby)", tasksString(got["b"].active))
	}
	total := 0
	for id, a := range got {
		total += a.active.size()
		if a.active.size() != 2 {
			t.Errorf("sticky: %s has %d active tasks", id, a.active.size())
		}
		if a.active.intersect(a.standby).size() > 0 {
			t.Errorf("sticky: %s has a task as active and standby", id)
		}
		if a.standby.size() != 2 {
			t.Errorf("sticky: %s has %d standby tasks (%s)", id, a.standby.size(), tasksString(a.standby))
		}
	}
	if total != 6 {
		t.Errorf("%d active tasks assigned, want 6", total)
	}
	// Only stateful subtopologies' tasks get standbys (TopologyMetadata.isStateful).
	got = stickyAssign([]stAssignMember{{id: "a", process: "p1"}, {id: "b", process: "p2"}}, num, map[string]bool{"1": true}, 1)
	standbys := 0
	for id, a := range got {
		for _, p := range []int32{0, 1, 2} {
			if a.standby.has("0", p) {
				t.Errorf("stateless task 0-%d has a standby on %s", p, id)
			}
		}
		standbys += a.standby.size()
	}
	if standbys != 3 {
		t.Errorf("%d standbys, want 3 (one per task of subtopology 1)", standbys)
	}
}
