package controller

import (
	"encoding/base64"
	"slices"
	"sort"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// leaderAndIsrUpdates is generateLeaderAndIsrUpdates over the partitions
// match selects, in topic id and partition order. brokerToRemove (or -1)
// leaves the ISR and is never leader; brokerToAdd (or -1) is an acceptable
// leader even while the state still shows it fenced; uncleanShutdown (or
// -1) is a broker that restarted without a clean shutdown (KIP-966): it
// leaves the ISR and the ELR and is never leader. The election is unclean
// when the topic's unclean.leader.election.enable is true.
func leaderAndIsrUpdates(s *state, mv int16, brokerToRemove, brokerToAdd, uncleanShutdown int32, match func(*partitionState) bool) []metadatacache.Record {
	var recs []metadatacache.Record
	for _, t := range s.sortedTopics() {
		for pid, p := range t.parts {
			if !match(p) {
				continue
			}
			if r := s.leaderAndIsrUpdate(mv, t, int32(pid), p, brokerToRemove, brokerToAdd, uncleanShutdown); r != nil {
				recs = append(recs, r)
			}
		}
	}
	return recs
}

// leaderAndIsrUpdate is leaderAndIsrUpdates for one partition; nil when it
// does not change.
func (s *state) leaderAndIsrUpdate(mv int16, t *topicState, pid int32, p *partitionState, brokerToRemove, brokerToAdd, uncleanShutdown int32) *metadatacache.PartitionChangeRecord {
	b := s.newChangeBuilder(mv, t, pid, p, func(r int32) bool {
		return r != brokerToRemove && r != uncleanShutdown && (r == brokerToAdd || s.active(r))
	})
	if s.uncleanElection(t.name) {
		b.election = electUnclean
	}
	b.uncleanShutdown = uncleanShutdown
	b.targetIsr = without(without(p.isr, brokerToRemove), uncleanShutdown)
	return b.build()
}

// sortedTopics lists the topics in topic id order (the order every
// decision over many partitions visits them in).
func (s *state) sortedTopics() []*topicState {
	out := make([]*topicState, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return string(out[i].id[:]) < string(out[j].id[:]) })
	return out
}

// election is PartitionChangeBuilder.Election.
type election int8

const (
	// electOnline keeps the partition online from the ISR (or, with ISR
	// empty, the ELR).
	electOnline election = iota
	// electPreferred elects the first replica when it is a valid leader.
	electPreferred
	// electUnclean falls back to any acceptable replica, ISR or not.
	electUnclean
)

// changeBuilder is PartitionChangeBuilder: from a partition's state and the
// targets a decision sets, the PartitionChangeRecord that moves it there,
// with the completion of a reassignment (KIP-455; reassign.go), the leader
// election and, when eligible.leader.replicas.version is 1, the ELR rules
// of KIP-966.
type changeBuilder struct {
	mv      int16
	topicID [16]byte
	pid     int32
	p       *partitionState
	// acceptable is the LeaderAcceptor: may replica r lead?
	acceptable func(r int32) bool
	// minISR is the topic's effective min.insync.replicas (at most its
	// replication factor).
	minISR int
	// elr is ELR enabled (FeatureControlManager.isElrFeatureEnabled).
	elr      bool
	election election
	// uncleanShutdown is a replica leaving the ELR too (-1: none).
	uncleanShutdown int32

	targetIsr, targetElr, targetLastKnownElr []int32
	targetLRS                                int8

	// targetReplicas, targetAdding and targetRemoving are the replica set
	// and the reassignment in progress (PartitionReassignmentReplicas)
	// the record moves the partition to; nil keeps the partition's.
	targetReplicas, targetAdding, targetRemoving []int32
	// dirs is the log dir of each current replica
	// (DirectoryId.createAssignmentMap); a replica not in it gets
	// defaultDir's (ClusterDescriber.defaultDir).
	dirs       map[int32][16]byte
	defaultDir func(broker int32) [16]byte
}

// newChangeBuilder starts a change of partition pid of t with every target
// at the partition's current value.
func (s *state) newChangeBuilder(mv int16, t *topicState, pid int32, p *partitionState, acceptable func(int32) bool) *changeBuilder {
	return &changeBuilder{
		// Every election also asks that the replica's log dir be online
		// (LeaderAcceptor, logdirs.go).
		mv: mv, topicID: t.id, pid: pid, p: p, acceptable: s.leaderAcceptor(p, acceptable),
		minISR: s.effectiveMinISR(t), elr: s.elrEnabled(), uncleanShutdown: -1,
		targetIsr: p.isr, targetElr: p.elr, targetLastKnownElr: p.lastKnownElr,
		targetLRS: p.leaderRecoveryState,
		// the replicas and the reassignment stay the partition's (nil)
		dirs: assignmentMap(p), defaultDir: s.defaultDir,
	}
}

// currentDirs is the partition's directories, one per replica: MIGRATING
// for each when it has none (PartitionRegistration's default).
func currentDirs(p *partitionState) [][16]byte {
	if len(p.directories) == len(p.replicas) {
		return p.directories
	}
	return make([][16]byte, len(p.replicas))
}

// assignmentMap is DirectoryId.createAssignmentMap: replica -> log dir.
func assignmentMap(p *partitionState) map[int32][16]byte {
	dirs := currentDirs(p)
	m := make(map[int32][16]byte, len(p.replicas))
	for i, r := range p.replicas {
		m[r] = dirs[i]
	}
	return m
}

// validLeader is isValidNewLeader: in the target ISR, or in the target ELR
// while the target ISR is empty, and acceptable.
func (b *changeBuilder) validLeader(r int32) bool {
	return (contains(b.targetIsr, r) || len(b.targetIsr) == 0 && contains(b.targetElr, r)) && b.acceptable(r)
}

// canElectLastKnownLeader: with ELR, a partition whose ISR and ELR are
// both empty may elect its last known leader (the only member of
// LastKnownElr) when it is acceptable; the election counts as unclean.
func (b *changeBuilder) canElectLastKnownLeader() bool {
	return b.elr && len(b.targetElr) == 0 && len(b.targetIsr) == 0 &&
		len(b.p.lastKnownElr) == 1 && b.acceptable(b.p.lastKnownElr[0])
}

// elect is electLeader: the new leader (-1: none) and whether the election
// is unclean.
func (b *changeBuilder) elect() (int32, bool) {
	replicas := b.targetReplicas
	if b.election == electPreferred && len(replicas) > 0 && b.validLeader(replicas[0]) {
		return replicas[0], false
	}
	if b.validLeader(b.p.leader) {
		return b.p.leader, false
	}
	for _, r := range replicas {
		if b.validLeader(r) {
			return r, false
		}
	}
	if b.canElectLastKnownLeader() {
		return b.p.lastKnownElr[0], true
	}
	if b.election == electUnclean {
		for _, r := range replicas {
			if b.acceptable(r) {
				return r, true
			}
		}
	}
	return -1, false
}

// populateTargetElr is maybePopulateTargetElr: with the target ISR at or
// above min ISR the ELR and LastKnownElr empty; below it, every member of
// the current ISR or ELR that is not in the target ISR (and did not shut
// down uncleanly) is eligible, and LastKnownElr keeps the rest.
func (b *changeBuilder) populateTargetElr() {
	if !b.elr {
		return
	}
	if len(b.targetIsr) >= b.minISR {
		b.targetElr, b.targetLastKnownElr = []int32{}, []int32{}
		return
	}
	candidates := union(b.targetElr, b.p.isr)
	elr := []int32{}
	for _, r := range candidates {
		if !contains(b.targetIsr, r) && r != b.uncleanShutdown {
			elr = append(elr, r)
		}
	}
	lke := []int32{}
	for _, r := range union(candidates, b.targetLastKnownElr) {
		if !contains(b.targetIsr, r) && !contains(elr, r) {
			lke = append(lke, r)
		}
	}
	b.targetElr, b.targetLastKnownElr = elr, lke
}

// build is PartitionChangeBuilder.build; nil when nothing changes.
//
// Kafka 4.4 always runs with useLastKnownLeaderInBalancedRecovery: the
// record's LastKnownElr only ever holds the last leader, set when the
// partition loses its leader and cleared when it gets one again; the
// members populateTargetElr computes for it are not written.
func (b *changeBuilder) build() *metadatacache.PartitionChangeRecord {
	p := b.p
	rec := metadatacache.NewPartitionChangeRecord()
	rec.SetVersion(partitionChangeRecordVersion(b.mv))
	rec.TopicID, rec.PartitionID = b.topicID, b.pid

	if b.targetReplicas == nil {
		b.targetReplicas = p.replicas
	}
	if b.targetAdding == nil {
		b.targetAdding = p.adding
	}
	if b.targetRemoving == nil {
		b.targetRemoving = p.removing
	}
	if b.dirs == nil {
		b.dirs = assignmentMap(p)
	}
	b.completeReassignment()

	b.populateTargetElr()

	// tryElection
	if leader, unclean := b.elect(); leader != p.leader {
		if contains(b.targetElr, leader) {
			b.targetIsr = []int32{leader}
			b.targetElr = without(b.targetElr, leader)
		}
		rec.Leader = leader
		if unclean {
			// The ISR becomes the new leader alone: this may lose data.
			rec.Isr = []int32{leader}
			if p.leaderRecoveryState != leaderRecovering {
				rec.LeaderRecoveryState = leaderRecovering
			}
		}
	}

	// triggerLeaderEpochBumpForReplicaReassignmentIfNeeded: a replica
	// leaving the replica set must see a new leader epoch (it stops
	// fetching; the others stop counting it).
	if rec.Leader == metadatacache.NoLeaderChange && !containsAll(b.targetReplicas, p.replicas) {
		rec.Leader = p.leader
	}

	// maybeUpdateRecordElr
	if rec.Isr != nil || !b.elr {
		b.targetElr, b.targetLastKnownElr = []int32{}, []int32{}
	}
	if !equalInt32s(b.targetElr, p.elr) {
		rec.EligibleLeaderReplicas = append([]int32{}, b.targetElr...)
	}

	// With ELR the ISR may become empty; without it the last member stays.
	if rec.Isr == nil && (len(b.targetIsr) > 0 || b.elr) && !equalInt32s(b.targetIsr, p.isr) {
		rec.Isr = append([]int32{}, b.targetIsr...)
	}

	// Below 3.6-IV0 an ISR shrink also bumps the leader epoch
	// (triggerLeaderEpochBumpForIsrShrinkIfNeeded).
	if leaderEpochBumpOnIsrShrink(b.mv) && rec.Leader == metadatacache.NoLeaderChange && rec.Isr != nil && !containsAll(rec.Isr, p.isr) {
		rec.Leader = p.leader
	}

	// maybeUpdateLastKnownLeader
	if b.elr {
		switch {
		case rec.Leader == -1 && p.leader >= 0 && len(p.lastKnownElr) == 0:
			rec.LastKnownElr = []int32{p.leader}
		case rec.Leader >= 0 && len(p.lastKnownElr) > 0:
			rec.LastKnownElr = []int32{}
		}
	}

	b.setAssignmentChanges(rec)

	if b.targetLRS != p.leaderRecoveryState {
		rec.LeaderRecoveryState = b.targetLRS
	}
	if rec.Isr == nil && rec.EligibleLeaderReplicas == nil && rec.LastKnownElr == nil &&
		rec.Leader == metadatacache.NoLeaderChange && rec.LeaderRecoveryState == -1 &&
		rec.Replicas == nil && rec.AddingReplicas == nil && rec.RemovingReplicas == nil && rec.Directories == nil {
		return nil
	}
	return rec
}

// completeReassignment is completeReassignmentIfNeeded
// (PartitionReassignmentReplicas.maybeCompleteReassignment): once every
// replica of the target assignment (the replicas without the removing
// ones) is in the target ISR, and that ISR keeps at least one member that
// is not being removed, the replicas become the target assignment, the
// removing replicas leave the ISR and the reassignment ends.
func (b *changeBuilder) completeReassignment() {
	if len(b.targetAdding) == 0 && len(b.targetRemoving) == 0 {
		return
	}
	isr, replicas := b.targetIsr, b.targetReplicas
	if len(b.targetRemoving) > 0 {
		isr = withoutAll(isr, b.targetRemoving)
		replicas = withoutAll(replicas, b.targetRemoving)
		if len(isr) == 0 || len(replicas) == 0 {
			return
		}
	}
	if !containsAll(isr, replicas) {
		return
	}
	b.targetIsr, b.targetReplicas = isr, replicas
	b.targetAdding, b.targetRemoving = []int32{}, []int32{}
}

// setAssignmentChanges is PartitionChangeBuilder.setAssignmentChanges: the
// record's Replicas, Directories (from metadata.version 3.7-IV2: the
// current replicas keep theirs, a new one gets the broker's default dir),
// RemovingReplicas and AddingReplicas where they change.
func (b *changeBuilder) setAssignmentChanges(rec *metadatacache.PartitionChangeRecord) {
	p := b.p
	if len(b.targetReplicas) > 0 {
		if directoryAssignmentSupported(b.mv) {
			dirs := make([][16]byte, len(b.targetReplicas))
			for i, r := range b.targetReplicas {
				d, ok := b.dirs[r]
				if !ok && b.defaultDir != nil {
					d = b.defaultDir(r)
				}
				dirs[i] = d
			}
			if !slices.Equal(dirs, currentDirs(p)) {
				rec.Directories = dirs
			}
		}
		if !equalInt32s(b.targetReplicas, p.replicas) {
			rec.Replicas = append([]int32{}, b.targetReplicas...)
		}
	}
	if !equalInt32s(b.targetRemoving, p.removing) {
		rec.RemovingReplicas = append([]int32{}, b.targetRemoving...)
	}
	if !equalInt32s(b.targetAdding, p.adding) {
		rec.AddingReplicas = append([]int32{}, b.targetAdding...)
	}
}

// union is the members of a then those of b not in a, ascending (the order
// Kafka's HashSet of small broker ids iterates in).
func union(a, b []int32) []int32 {
	out := append([]int32{}, a...)
	for _, r := range b {
		if !contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
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

// withoutAll is xs without the members of drop, in order.
func withoutAll(xs, drop []int32) []int32 {
	out := make([]int32, 0, len(xs))
	for _, x := range xs {
		if !contains(drop, x) {
			out = append(out, x)
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
