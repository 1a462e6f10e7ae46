package group

// The streams group's target assignment (streams/TargetAssignmentBuilder
// with the "sticky" task assignor, streams/assignor/StickyTaskAssignor)
// and each member's move towards it (streams/CurrentAssignmentBuilder).

import (
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type stAssignMember struct {
	id, process           string
	prevActive, prevStand tasks
}

type taskID struct {
	sub string
	p   int32
}

// stickyAssign follows StickyTaskAssignor.assign (which makes no warm-up
// tasks either): an active task stays with its previous member while that
// member is under its quota (ceil(tasks / members)), else goes to a member
// that held it as standby, else (ordered by partition, then subtopology)
// to the least loaded process and its least loaded member; then each task
// gets numStandby standby replicas on members of other processes, previous
// holders first. Not followed: Kafka ranks standby candidates by their
// reported changelog offsets and places standbys rack-aware by client
// tags.
func stickyAssign(members []stAssignMember, numTasks map[string]int32, stateful map[string]bool, numStandby int) map[string]tasksTuple {
	out := map[string]tasksTuple{}
	if len(members) == 0 {
		return out
	}
	sort.Slice(members, func(i, j int) bool { return members[i].id < members[j].id })
	for _, m := range members {
		out[m.id] = newTasksTuple()
	}
	var all []taskID
	for _, sub := range slices.Sorted(maps.Keys(numTasks)) {
		for p := int32(0); p < numTasks[sub]; p++ {
			all = append(all, taskID{sub, p})
		}
	}
	capacity := (len(all) + len(members) - 1) / len(members)
	load := map[string]int{}
	assigned := map[taskID]string{}
	// Sticky pass.
	for _, t := range all {
		for _, m := range members {
			if m.prevActive.has(t.sub, t.p) && load[m.id] < capacity {
				assigned[t] = m.id
				out[m.id].active.add(t.sub, t.p)
				load[m.id]++
				break
			}
		}
	}
	leastLoaded := func(ok func(stAssignMember) bool) string {
		best, bestLoad := "", -1
		for _, m := range members {
			if ok != nil && !ok(m) {
				continue
			}
			if bestLoad < 0 || load[m.id] < bestLoad {
				best, bestLoad = m.id, load[m.id]
			}
		}
		return best
	}
	// Then the members that held the task as standby, least loaded
	// first, within their quota (findPrevMemberWithLeastLoad).
	for _, t := range all {
		if _, ok := assigned[t]; ok {
			continue
		}
		id := leastLoaded(func(m stAssignMember) bool { return m.prevStand.has(t.sub, t.p) && load[m.id] < capacity })
		if id != "" {
			assigned[t] = id
			out[id].active.add(t.sub, t.p)
			load[id]++
		}
	}
	// The rest by partition, then subtopology, each to the least loaded
	// process (tasks per member) and its least loaded member.
	var rest []taskID
	for _, t := range all {
		if _, ok := assigned[t]; !ok {
			rest = append(rest, t)
		}
	}
	sort.SliceStable(rest, func(i, j int) bool {
		if rest[i].p != rest[j].p {
			return rest[i].p < rest[j].p
		}
		return rest[i].sub < rest[j].sub
	})
	procMembers := map[string][]string{}
	for _, m := range members {
		procMembers[m.process] = append(procMembers[m.process], m.id)
	}
	procs := slices.Sorted(maps.Keys(procMembers))
	for _, t := range rest {
		bestProc, bestLoad := "", 0.0
		for _, pr := range procs {
			n := 0
			for _, id := range procMembers[pr] {
				n += load[id]
			}
			l := float64(n) / float64(len(procMembers[pr]))
			if bestProc == "" || l < bestLoad {
				bestProc, bestLoad = pr, l
			}
		}
		id := leastLoaded(func(m stAssignMember) bool { return m.process == bestProc })
		assigned[t] = id
		out[id].active.add(t.sub, t.p)
		load[id]++
	}
	if numStandby <= 0 {
		return out
	}
	procOf := map[string]string{}
	for _, m := range members {
		procOf[m.id] = m.process
	}
	for _, t := range all {
		if !stateful[t.sub] {
			continue // a stateless task has no state to stand by for
		}
		used := map[string]bool{procOf[assigned[t]]: true}
		for range numStandby {
			pick := ""
			for _, m := range members {
				if !used[m.process] && m.prevStand.has(t.sub, t.p) {
					pick = m.id
					break
				}
			}
			if pick == "" {
				pick = leastLoaded(func(m stAssignMember) bool { return !used[m.process] })
			}
			if pick == "" {
				break
			}
			used[procOf[pick]] = true
			out[pick].standby.add(t.sub, t.p)
			load[pick]++
		}
	}
	return out
}

// streamsTargetRecords computes the target assignment with upd in place
// of its member (and without replaced, a static member's old member id),
// and returns the records of the targets that changed and all targets.
func (s *shard) streamsTargetRecords(g *streamsGroup, c *configuredTopology, upd, replaced *streamsMember) ([]record, map[string]tasksTuple) {
	var members []stAssignMember
	add := func(m *streamsMember) {
		members = append(members, stAssignMember{id: m.id, process: m.processID,
			prevActive: m.assigned.active.union(m.revoking.active), prevStand: m.assigned.standby})
	}
	for id, m := range g.members {
		if id == upd.id || (replaced != nil && id == replaced.id) {
			continue
		}
		add(m)
	}
	add(upd)
	target := stickyAssign(members, c.numTasks, c.stateful, s.streamsNumStandby(g.id))
	var recs []record
	for _, id := range slices.Sorted(maps.Keys(target)) {
		old, ok := g.target[id]
		if !ok || !old.equal(target[id]) {
			recs = append(recs, streamsTargetMemberRecord(g.id, id, target[id]))
		}
	}
	return recs, target
}

// reconcileStreams is CurrentAssignmentBuilder.build: the member's next
// state given its target. Tasks it must give up are revoked first (the
// member keeps its epoch until it reports them gone); tasks another
// member still owns are withheld until released.
func (s *shard) reconcileStreams(g *streamsGroup, m *streamsMember, targetEpoch int32, target tasksTuple, req *kmsg.StreamsGroupHeartbeatRequest) *streamsMember {
	switch m.state {
	case smStable:
		if m.epoch == targetEpoch {
			return m
		}
	case smUnrevokedTasks:
		// Still owning a task being revoked: wait.
		if req.ActiveTasks == nil && req.StandbyTasks == nil && req.WarmupTasks == nil {
			return m
		}
		if tasksOf(req.ActiveTasks).intersect(m.revoking.active).size() > 0 ||
			tasksOf(req.StandbyTasks).intersect(m.revoking.standby).size() > 0 ||
			tasksOf(req.WarmupTasks).intersect(m.revoking.warmup).size() > 0 {
			return m
		}
	case smUnreleasedTasks:
	}
	return s.nextStreamsAssignment(g, m, targetEpoch, target)
}

// nextStreamsAssignment is CurrentAssignmentBuilder.computeNextAssignment.
func (s *shard) nextStreamsAssignment(g *streamsGroup, m *streamsMember, targetEpoch int32, target tasksTuple) *streamsMember {
	// Who else holds each task: active by process, standby/warm-up by
	// process (currentActiveTaskProcessId, currentStandbyTaskProcessIds).
	activeOwner := map[taskID]string{}
	otherProcTasks := map[taskID]map[string]bool{}
	for id, o := range g.members {
		if id == m.id {
			continue
		}
		for sub, ps := range o.assigned.active.union(o.revoking.active) {
			for p := range ps {
				activeOwner[taskID{sub, p}] = o.processID
			}
		}
		for _, t := range []tasks{o.assigned.standby, o.assigned.warmup, o.revoking.standby, o.revoking.warmup} {
			for sub, ps := range t {
				for p := range ps {
					k := taskID{sub, p}
					if otherProcTasks[k] == nil {
						otherProcTasks[k] = map[string]bool{}
					}
					otherProcTasks[k][o.processID] = true
				}
			}
		}
	}
	n := m.clone()
	retained := tasksTuple{m.assigned.active.intersect(target.active), m.assigned.standby.intersect(target.standby), m.assigned.warmup.intersect(target.warmup)}
	revoke := tasksTuple{m.assigned.active.minus(target.active), m.assigned.standby.minus(target.standby), m.assigned.warmup.minus(target.warmup)}
	if !revoke.empty() {
		n.assigned, n.revoking, n.state = retained, revoke, smUnrevokedTasks
		n.activeEpochs = keepEpochs(m.activeEpochs, retained.active)
		return n
	}
	next := retained.clone()
	unreleased := false
	for sub, ps := range target.active.minus(retained.active) {
		for p := range ps {
			if _, busy := activeOwner[taskID{sub, p}]; busy {
				unreleased = true
				continue
			}
			next.active.add(sub, p)
		}
	}
	// A standby or warm-up task cannot go to a process that still runs it
	// as active elsewhere, nor to one holding it as standby through another
	// member.
	for i, t := range []tasks{target.standby.minus(retained.standby), target.warmup.minus(retained.warmup)} {
		for sub, ps := range t {
			for p := range ps {
				k := taskID{sub, p}
				if activeOwner[k] == m.processID || otherProcTasks[k][m.processID] {
					unreleased = true
					continue
				}
				if i == 0 {
					next.standby.add(sub, p)
				} else {
					next.warmup.add(sub, p)
				}
			}
		}
	}
	if n.epoch != targetEpoch {
		n.prevEpoch = n.epoch
	}
	n.epoch = targetEpoch
	n.assigned, n.revoking = next, newTasksTuple()
	n.activeEpochs = keepEpochs(m.activeEpochs, next.active)
	for sub, ps := range next.active {
		for p := range ps {
			if _, ok := n.activeEpochs[sub][p]; !ok {
				if n.activeEpochs[sub] == nil {
					n.activeEpochs[sub] = map[int32]int32{}
				}
				n.activeEpochs[sub][p] = targetEpoch
			}
		}
	}
	n.state = smStable
	if unreleased {
		n.state = smUnreleasedTasks
	}
	return n
}

func keepEpochs(e map[string]map[int32]int32, keep tasks) map[string]map[int32]int32 {
	out := map[string]map[int32]int32{}
	for sub, ps := range keep {
		for p := range ps {
			if v, ok := e[sub][p]; ok {
				if out[sub] == nil {
					out[sub] = map[int32]int32{}
				}
				out[sub][p] = v
			}
		}
	}
	return out
}
