package controller

import (
	"encoding/base64"
	"sort"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// leaderAndIsrUpdates is generateLeaderAndIsrUpdates with a clean (ONLINE)
// election and ELR disabled, over the partitions match selects, in topic
// id and partition order. brokerToRemove (or -1) leaves the ISR and is
// never leader; brokerToAdd (or -1) is an acceptable leader even while the
// state still shows it fenced.
func leaderAndIsrUpdates(s *state, mv int16, brokerToRemove, brokerToAdd int32, match func(*partitionState) bool) []metadatacache.Record {
	ids := make([][16]byte, 0, len(s.topics))
	for id := range s.topics {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return string(ids[i][:]) < string(ids[j][:]) })
	var recs []metadatacache.Record
	for _, id := range ids {
		t := s.topics[id]
		for pid, p := range t.parts {
			if !match(p) {
				continue
			}
			if r := partitionChange(s, mv, t, int32(pid), p, brokerToRemove, brokerToAdd); r != nil {
				recs = append(recs, r)
			}
		}
	}
	return recs
}

// partitionChange is PartitionChangeBuilder.build for an ISR shrink and/or
// a leader election; nil when nothing changes. The election is unclean when
// the topic's unclean.leader.election.enable is true.
func partitionChange(s *state, mv int16, t *topicState, pid int32, p *partitionState, brokerToRemove, brokerToAdd int32) *metadatacache.PartitionChangeRecord {
	acceptable := func(r int32) bool {
		return r != brokerToRemove && (r == brokerToAdd || s.active(r))
	}
	return buildPartitionChange(mv, t.id, pid, p, without(p.isr, brokerToRemove), acceptable, p.leaderRecoveryState, s.uncleanElection(t.name))
}

// buildPartitionChange is PartitionChangeBuilder.build with a clean
// (ONLINE) election, no ELR and no reassignment: keep the leader if it is in
// the target ISR and acceptable, else the first such replica, else none.
// The ISR is changed only to a non-empty target (without ELR the last
// member stays). Since 3.6-IV0 an ISR shrink does not bump the leader epoch;
// below it, the record names the same leader, which bumps it.
//
// An unclean election, when no ISR member can lead, takes the first
// acceptable replica: the ISR becomes that replica alone and the leader
// recovery state RECOVERING.
func buildPartitionChange(mv int16, topicID [16]byte, pid int32, p *partitionState, targetIsr []int32, acceptable func(int32) bool, targetLRS int8, unclean bool) *metadatacache.PartitionChangeRecord {
	valid := func(r int32) bool { return contains(targetIsr, r) && acceptable(r) }
	leader := int32(-1)
	if valid(p.leader) {
		leader = p.leader
	} else {
		for _, r := range p.replicas {
			if valid(r) {
				leader = r
				break
			}
		}
	}
	if leader == -1 && unclean {
		for _, r := range p.replicas {
			if acceptable(r) {
				leader = r
				targetIsr = []int32{r}
				if p.leaderRecoveryState != leaderRecovering {
					targetLRS = leaderRecovering
				}
				break
			}
		}
	}
	rec := metadatacache.NewPartitionChangeRecord()
	rec.SetVersion(partitionChangeRecordVersion(mv))
	rec.TopicID, rec.PartitionID = topicID, pid
	changed := false
	if leader != p.leader {
		rec.Leader = leader
		changed = true
	}
	if len(targetIsr) > 0 && !equalInt32s(targetIsr, p.isr) {
		rec.Isr = append([]int32(nil), targetIsr...)
		changed = true
	}
	if targetLRS != p.leaderRecoveryState {
		rec.LeaderRecoveryState = targetLRS
		changed = true
	}
	// Below 3.6-IV0 an ISR shrink also bumps the leader epoch
	// (PartitionChangeBuilder.triggerLeaderEpochBumpForIsrShrinkIfNeeded).
	if leaderEpochBumpOnIsrShrink(mv) && rec.Leader == metadatacache.NoLeaderChange && rec.Isr != nil && !containsAll(rec.Isr, p.isr) {
		rec.Leader = p.leader
	}
	if !changed {
		return nil
	}
	return rec
}

const leaderRecovering int8 = 1

func contains(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func without(xs []int32, x int32) []int32 {
	out := make([]int32, 0, len(xs))
	for _, y := range xs {
		if y != x {
			out = append(out, y)
		}
	}
	return out
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// uuidString is Kafka's Uuid.toString: URL-safe base64 without padding.
func uuidString(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// containsAll reports whether every id of sub is in set (Replicas.contains).
func containsAll(set, sub []int32) bool {
	for _, id := range sub {
		if !contains(set, id) {
			return false
		}
	}
	return true
}
