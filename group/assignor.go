package group

import (
	"sort"
)

// Server-side assignors of KIP-848 (group.consumer.assignors): "uniform"
// (Kafka's UniformAssignor: balanced, sticky to the previous target) and
// "range" (RangeAssignor: per topic, contiguous ranges over the members
// subscribed to it, in member id order).

type assignTopic struct {
	id    [16]byte
	parts int32
}

type assignMember struct {
	id     string
	topics []string // resolved subscribed topic names that exist
}

// assign computes the target assignment.
func assign(name string, members []assignMember, topics map[string]assignTopic, prev map[string]partSet) map[string]partSet {
	sort.Slice(members, func(i, j int) bool { return members[i].id < members[j].id })
	if name == "range" {
		return rangeAssign(members, topics)
	}
	return uniformAssign(members, topics, prev)
}

func rangeAssign(members []assignMember, topics map[string]assignTopic) map[string]partSet {
	out := map[string]partSet{}
	byTopic := map[string][]string{}
	for _, m := range members {
		out[m.id] = partSet{}
		for _, t := range m.topics {
			byTopic[t] = append(byTopic[t], m.id)
		}
	}
	for name, ms := range byTopic {
		t := topics[name]
		n, k := t.parts, int32(len(ms))
		per, extra := n/k, n%k
		for i, id := range ms {
			i := int32(i)
			start := i*per + min(i, extra)
			l := per
			if i < extra {
				l++
			}
			for p := start; p < start+l; p++ {
				out[id][tp{t.id, p}] = struct{}{}
			}
		}
	}
	return out
}

func uniformAssign(members []assignMember, topics map[string]assignTopic, prev map[string]partSet) map[string]partSet {
	out := map[string]partSet{}
	eligible := map[[16]byte]map[string]bool{} // topic id -> members subscribed
	var all []tp
	names := map[[16]byte]string{}
	for _, m := range members {
		out[m.id] = partSet{}
		for _, name := range m.topics {
			t := topics[name]
			if eligible[t.id] == nil {
				eligible[t.id] = map[string]bool{}
				names[t.id] = name
				for p := int32(0); p < t.parts; p++ {
					all = append(all, tp{t.id, p})
				}
			}
			eligible[t.id][m.id] = true
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if names[all[i].id] != names[all[j].id] {
			return names[all[i].id] < names[all[j].id]
		}
		return all[i].p < all[j].p
	})
	valid := map[tp]bool{}
	for _, x := range all {
		valid[x] = true
	}
	// Stickiness: keep the previous target where still valid, up to the
	// balanced quota of a homogeneous group.
	quota := len(all)
	if len(members) > 0 {
		quota = (len(all) + len(members) - 1) / len(members)
	}
	taken := map[tp]string{}
	for _, m := range members {
		var kept []tp
		for x := range prev[m.id] {
			if valid[x] && eligible[x.id][m.id] && taken[x] == "" {
				kept = append(kept, x)
			}
		}
		sort.Slice(kept, func(i, j int) bool {
			if names[kept[i].id] != names[kept[j].id] {
				return names[kept[i].id] < names[kept[j].id]
			}
			return kept[i].p < kept[j].p
		})
		for i, x := range kept {
			if i >= quota {
				break
			}
			out[m.id][x] = struct{}{}
			taken[x] = m.id
		}
	}
	// Unassigned partitions go to the least loaded eligible member.
	for _, x := range all {
		if taken[x] != "" {
			continue
		}
		best := ""
		for _, m := range members {
			if !eligible[x.id][m.id] {
				continue
			}
			if best == "" || len(out[m.id]) < len(out[best]) {
				best = m.id
			}
		}
		if best != "" {
			out[best][x] = struct{}{}
			taken[x] = best
		}
	}
	// Balance: move partitions from the most to the least loaded members
	// that may take them until no move narrows a gap of more than one.
	for moved := true; moved; {
		moved = false
		order := make([]string, 0, len(members))
		for _, m := range members {
			order = append(order, m.id)
		}
		sort.SliceStable(order, func(i, j int) bool { return len(out[order[i]]) > len(out[order[j]]) })
		for i := 0; i < len(order) && !moved; i++ {
			from := order[i]
			for j := len(order) - 1; j > i && !moved; j-- {
				to := order[j]
				if len(out[from])-len(out[to]) <= 1 {
					continue
				}
				var cands []tp
				for x := range out[from] {
					if eligible[x.id][to] {
						cands = append(cands, x)
					}
				}
				if len(cands) == 0 {
					continue
				}
				sort.Slice(cands, func(a, b int) bool {
					if names[cands[a].id] != names[cands[b].id] {
						return names[cands[a].id] > names[cands[b].id]
					}
					return cands[a].p > cands[b].p
				})
				x := cands[0]
				delete(out[from], x)
				out[to][x] = struct{}{}
				moved = true
			}
		}
	}
	return out
}
