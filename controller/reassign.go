package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// AlterPartitionReassignments (45) v0-1 and ListPartitionReassignments (46)
// v0: partition reassignment (KIP-455), as ReplicationControlManager
// decides it (kafka-reassign-partitions.sh; a broker forwards both in an
// Envelope, the CONTROLLER listener authorizes ALTER / DESCRIBE on the
// cluster).
//
// A reassignment goes through the partition change builder
// (partitions.go) in up to three steps:
//
//  1. AlterPartitionReassignments writes a PartitionChangeRecord whose
//     Replicas are the target replicas followed by the current ones not in
//     the target (PartitionReassignmentReplicas), AddingReplicas and
//     RemovingReplicas the differences (ascending), and Directories for
//     the new replicas (their broker's default dir, from 3.7-IV2).
//  2. The adding replicas create their logs and fetch from the leader as
//     followers (not in the ISR); the leader adds each to the ISR with
//     AlterPartition once it caught up.
//  3. The change that leaves every target replica in the ISR (and at
//     least one member not being removed) completes it in the same record
//     (completeReassignment): the replicas become the target, the removing
//     ones leave the ISR, AddingReplicas and RemovingReplicas empty, and
//     the leader is re-elected if it was removed. A record that takes a
//     replica out of the replica set also bumps the leader epoch.
//
// A reassignment that needs no new replica (a reorder, or only removals
// with an ISR member left) completes in its first record. A target broker
// that is fenced is accepted and the reassignment waits for it to join the
// ISR; one that is not registered is refused (INVALID_REPLICA_ASSIGNMENT).
// Null replicas cancel a reassignment (PartitionReassignmentRevert): the
// replicas and ISR lose the adding replicas; if that empties the ISR the
// first remaining replica is the ISR alone, an unclean election refused
// unless unclean.leader.election.enable is on for the topic. Everything is
// in the metadata log, so a new active controller continues it.
//
// Per partition: UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named
// <t>." / "Unable to find partition <t>:<p>."; NO_REASSIGNMENT_IN_PROGRESS
// (no message) cancelling nothing; INVALID_REPLICA_ASSIGNMENT (an empty
// list, an unregistered broker, a broker twice, an unclean revert); with
// v1's allow_replication_factor_change false (KIP-860),
// INVALID_REPLICATION_FACTOR "The replication factor is changed from <n>
// to <m>" where n counts the replicas the partition is heading for.
// Successful changes of one request are one atomic batch.

func (c *Controller) alterPartitionReassignments(ctx context.Context, req *kmsg.AlterPartitionAssignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRF := req.Version < 1 || req.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF
	var recs []metadatacache.Record
	ok, total := 0, 0
	c.view(func(s *state) {
		mv := s.metadataVersion()
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition = p.Partition
				rec, e := alterPartitionReassignment(s, mv, t.Topic, p, allowRF)
				total++
				if e != nil {
					c.log.Info("unable to alter partition reassignment", zap.String("topic", t.Topic),
						zap.Int32("partition", p.Partition), zap.String("error", e.Error()))
					rp.ErrorCode, rp.ErrorMessage = e.code(), e.message()
				} else {
					ok++
					if rec != nil {
						recs = append(recs, rec)
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
	if len(recs) > maxRecordsPerUserOp {
		return alterReassignmentsError(req, errBatchTooLarge)
	}
	if _, err := c.write(ctx, recs); err != nil {
		return alterReassignmentsError(req, bareAPIError(kerr.NotController))
	}
	c.log.Info("altered partition reassignments", zap.Int("succeeded", ok), zap.Int("requested", total))
	return resp
}

// alterReassignmentsError is AlterPartitionReassignmentsRequest.getErrorResponse:
// the error at the top level and on every partition.
func alterReassignmentsError(req *kmsg.AlterPartitionAssignmentsRequest, e *apiError) *kmsg.AlterPartitionAssignmentsResponse {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	resp.AllowReplicationFactorChange = req.Version < 1 || req.AllowReplicationFactorChange
	resp.ErrorCode, resp.ErrorMessage = e.code(), e.message()
	for _, t := range req.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition, rp.ErrorCode, rp.ErrorMessage = p.Partition, e.code(), e.message()
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// alterPartitionReassignment is ReplicationControlManager.alterPartitionReassignment:
// the change record of one partition (nil: nothing to change) or why not.
func alterPartitionReassignment(s *state, mv int16, topic string, target kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRF bool) (*metadatacache.PartitionChangeRecord, *apiError) {
	id, ok := s.topicsByName[topic]
	if !ok {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "Unable to find a topic named %s.", topic)
	}
	t := s.topics[id]
	if t == nil {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "Unable to find a topic with ID %s.", uuidString(id))
	}
	if target.Partition < 0 || int(target.Partition) >= len(t.parts) {
		return nil, newAPIError(kerr.UnknownTopicOrPartition, "Unable to find partition %s:%d.", topic, target.Partition)
	}
	p := t.parts[target.Partition]
	if target.Replicas == nil {
		return cancelPartitionReassignment(s, mv, t, target.Partition, p)
	}
	return changePartitionReassignment(s, mv, t, target.Partition, p, target.Replicas, allowRF)
}

// reassigning is PartitionReassignmentReplicas.isReassignmentInProgress.
func (p *partitionState) reassigning() bool { return len(p.adding) > 0 || len(p.removing) > 0 }

// cancelPartitionReassignment reverts a reassignment in progress
// (PartitionReassignmentRevert): the original replicas (without the adding
// ones), the ISR without the adding ones, nothing adding or removing.
func cancelPartitionReassignment(s *state, mv int16, t *topicState, pid int32, p *partitionState) (*metadatacache.PartitionChangeRecord, *apiError) {
	if !p.reassigning() {
		return nil, bareAPIError(kerr.NoReassignmentInProgress)
	}
	replicas := withoutAll(p.replicas, p.adding)
	isr := withoutAll(p.isr, p.adding)
	unclean := s.uncleanElection(t.name)
	if len(isr) == 0 {
		if len(replicas) == 0 {
			return nil, newAPIError(kerr.InvalidReplicaAssignment, "Invalid replica assignment: addingReplicas contains all replicas.")
		}
		// Only the adding replicas are in sync: reverting makes the first
		// original replica the ISR, an unclean election.
		if !unclean {
			return nil, newAPIError(kerr.InvalidReplicaAssignment,
				"Unable to revert partition assignment for %s:%d because it would require an unclean leader election.", t.name, pid)
		}
		isr = []int32{replicas[0]}
	}
	b := s.newChangeBuilder(mv, t, pid, p, s.active)
	if unclean {
		b.election = electUnclean
	}
	b.targetIsr, b.targetReplicas = isr, replicas
	b.targetAdding, b.targetRemoving = []int32{}, []int32{}
	return b.build(), nil
}

// changePartitionReassignment starts (or replaces) a reassignment to
// target (ReplicationControlManager.changePartitionReassignment).
func changePartitionReassignment(s *state, mv int16, t *topicState, pid int32, p *partitionState, target []int32, allowRF bool) (*metadatacache.PartitionChangeRecord, *apiError) {
	if e := validateManualAssignment(s, target, -1); e != nil {
		return nil, e
	}
	if !allowRF {
		// validatePartitionReplicationFactorUnchanged: the size of the set
		// the partition is heading for (replicas and adding, without the
		// removing ones).
		current := len(p.replicas)
		if p.reassigning() {
			current = len(withoutAll(union(p.replicas, p.adding), p.removing))
		}
		if current != len(target) {
			return nil, newAPIError(kerr.InvalidReplicationFactor, "The replication factor is changed from %d to %d", current, len(target))
		}
	}
	// PartitionReassignmentReplicas(current, target): the target followed
	// by the current replicas it drops; adding and removing ascending.
	removing := sortedDifference(p.replicas, target)
	adding := sortedDifference(target, p.replicas)
	replicas := append(append([]int32{}, target...), removing...)

	b := s.newChangeBuilder(mv, t, pid, p, s.active)
	if !equalInt32s(replicas, p.replicas) {
		b.targetReplicas = replicas
	}
	if len(removing) > 0 {
		b.targetRemoving = removing
	}
	if len(adding) > 0 {
		b.targetAdding = adding
	}
	return b.build(), nil
}

// sortedDifference is the members of a not in b, ascending (a TreeSet).
func sortedDifference(a, b []int32) []int32 {
	out := []int32{}
	for _, x := range a {
		if !contains(b, x) && !contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// listPartitionReassignments is ReplicationControlManager.listPartitionReassignments:
// with null topics every partition with a reassignment in progress (in
// topic id order), else the named partitions that have one; unknown topics
// and partitions are left out. Each lists its replicas, adding and
// removing replicas.
func (c *Controller) listPartitionReassignments(req *kmsg.ListPartitionReassignmentsRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	resp.Topics = []kmsg.ListPartitionReassignmentsResponseTopic{}
	c.view(func(s *state) {
		list := func(t *topicState, pids []int32) {
			rt := kmsg.NewListPartitionReassignmentsResponseTopic()
			rt.Topic = t.name
			for _, pid := range pids {
				if pid < 0 || int(pid) >= len(t.parts) || !t.parts[pid].reassigning() {
					continue
				}
				p := t.parts[pid]
				rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
				rp.Partition = pid
				rp.Replicas = append([]int32{}, p.replicas...)
				rp.AddingReplicas = append([]int32{}, p.adding...)
				rp.RemovingReplicas = append([]int32{}, p.removing...)
				rt.Partitions = append(rt.Partitions, rp)
			}
			if len(rt.Partitions) > 0 {
				resp.Topics = append(resp.Topics, rt)
			}
		}
		if req.Topics == nil {
			for _, t := range s.sortedTopics() {
				pids := make([]int32, len(t.parts))
				for i := range pids {
					pids[i] = int32(i)
				}
				list(t, pids)
			}
			return
		}
		for _, rt := range req.Topics {
			if id, ok := s.topicsByName[rt.Topic]; ok && s.topics[id] != nil {
				list(s.topics[id], rt.Partitions)
			}
		}
	})
	return resp
}
