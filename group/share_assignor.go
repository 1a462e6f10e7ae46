package group

// The share group assignor "simple" (KIP-932; Kafka's SimpleAssignor with
// SimpleHomogeneousAssignmentBuilder and SimpleHeterogeneousAssignmentBuilder).
// Unlike a consumer group's, a share group's partitions may be assigned to
// several members at once: records of a partition are shared out by the
// share partition, so members beyond the partition count still get work.
// The principles, balance first and then stickiness, are Kafka's:
//
//   - every assignable partition is assigned to desiredSharing =
//     ceil(members / partitions) members;
//   - every member gets its share of the desiredSharing * partitions slots,
//     the counts of two members differing by at most one;
//   - a member keeps what it had as far as these allow.
//
// Only partitions whose share state is initialized are assignable (Kafka
// 4.1+: ShareTargetAssignmentBuilder.withTopicAssignablePartitionsMap).
// When all members subscribe to the same topics the partitions of all of
// them are balanced together (homogeneous); otherwise each topic is
// balanced among its own subscribers, least loaded members first
// (heterogeneous). Kafka iterates hash maps where this code sorts, so the
// exact choice among equally good assignments can differ from Kafka's;
// every member id and partition order here is deterministic.

import (
	"slices"
	"sort"
)

// shareAssignMember is one member as the assignor sees it.
type shareAssignMember struct {
	id     string
	topics [][16]byte // subscribed topics that exist, sorted
}

// assignShare computes the target assignment. assignable holds the
// assignable partitions of each topic (sorted); current is the previous
// target assignment by member.
func assignShare(members []shareAssignMember, assignable map[[16]byte][]int32, current map[string]partSet) map[string]partSet {
	out := make(map[string]partSet, len(members))
	if len(members) == 0 {
		return out
	}
	sort.Slice(members, func(i, j int) bool { return members[i].id < members[j].id })
	for _, m := range members {
		out[m.id] = partSet{}
	}
	homogeneous := true
	for _, m := range members[1:] {
		if !slices.Equal(m.topics, members[0].topics) {
			homogeneous = false
			break
		}
	}
	if homogeneous {
		var parts []tp
		for _, t := range members[0].topics {
			for _, p := range assignable[t] {
				parts = append(parts, tp{t, p})
			}
		}
		ids := make([]string, len(members))
		for i, m := range members {
			ids[i] = m.id
		}
		balanceShare(ids, parts, current, out)
		return out
	}
	// Heterogeneous: topic by topic, among its subscribers.
	topicSet := map[[16]byte][]string{}
	for _, m := range members {
		for _, t := range m.topics {
			topicSet[t] = append(topicSet[t], m.id)
		}
	}
	for _, t := range sortedIDs(topicSet) {
		subs := slices.Clone(topicSet[t])
		// The least loaded first, so topics spread over the members.
		sort.SliceStable(subs, func(i, j int) bool { return len(out[subs[i]]) < len(out[subs[j]]) })
		var parts []tp
		for _, p := range assignable[t] {
			parts = append(parts, tp{t, p})
		}
		balanceShare(subs, parts, current, out)
	}
	return out
}

// balanceShare assigns parts to ids (in their order), adding to out.
func balanceShare(ids []string, parts []tp, current map[string]partSet, out map[string]partSet) {
	if len(parts) == 0 || len(ids) == 0 {
		return
	}
	nm, np := len(ids), len(parts)
	sharing := (nm + np - 1) / np
	slots := sharing * np
	inParts := make(map[tp]bool, np)
	for _, x := range parts {
		inParts[x] = true
	}
	// Quotas: slots/nm each, one more for slots%nm members: those that
	// hold the most of these partitions already, so stickiness loses the
	// least (Kafka's desiredAssignmentCount spreads the same counts).
	held := make([]int, nm)
	for i, id := range ids {
		for x := range current[id] {
			if inParts[x] {
				held[i]++
			}
		}
	}
	order := make([]int, nm)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return held[order[a]] > held[order[b]] })
	quota := make([]int, nm)
	for rank, i := range order {
		quota[i] = slots / nm
		if rank < slots%nm {
			quota[i]++
		}
	}
	count := map[tp]int{}
	got := make([]int, nm)
	// Stickiness: keep previous partitions within the quotas.
	for i, id := range ids {
		prev := current[id]
		if len(prev) == 0 {
			continue
		}
		for _, x := range parts {
			if got[i] >= quota[i] {
				break
			}
			if _, ok := prev[x]; ok && count[x] < sharing {
				out[id][x] = struct{}{}
				count[x]++
				got[i]++
			}
		}
	}
	// Balance: fill every partition to its sharing, from the members with
	// the most room left (and, past the quotas, the least loaded).
	for _, x := range parts {
		for count[x] < sharing {
			best := -1
			for i, id := range ids {
				if _, has := out[id][x]; has {
					continue
				}
				if best < 0 {
					best = i
					continue
				}
				ri, rb := quota[i]-got[i], quota[best]-got[best]
				if ri > rb || (ri == rb && got[i] < got[best]) {
					best = i
				}
			}
			if best < 0 {
				break // fewer members than the sharing (cannot happen)
			}
			out[ids[best]][x] = struct{}{}
			count[x]++
			got[best]++
		}
	}
}
