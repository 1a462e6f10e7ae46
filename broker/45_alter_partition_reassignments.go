package broker

// AlterPartitionReassignments: v0-1 (client and controller listeners)
//
// Behavior (a Kafka broker forwards it to the controller;
// ReplicationControlManager.alterPartitionReassignment), from the metadata
// image:
//   - UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic named <t>." /
//     "Unable to find partition <t>:<p>.".
//   - Null replicas (a cancellation) with no reassignment in progress:
//     NO_REASSIGNMENT_IN_PROGRESS (no message: Kafka's is the generic one).
//   - Target replicas are validated as Kafka validates a manual assignment:
//     INVALID_REPLICA_ASSIGNMENT for an empty list, a broker that is not
//     registered or one named twice; with v1's
//     allow_replication_factor_change false, INVALID_REPLICATION_FACTOR "The
//     replication factor is changed from <n> to <m>".
//   - Target replicas equal to the current ones with nothing in progress: a
//     no-op, NONE.
//   - Anything else, a real reassignment or cancelling one a Kafka
//     controller started, answers UNSUPPORTED_VERSION "Partition
//     reassignment is not implemented by kgo-broker".
//
// Version notes: v1: allow_replication_factor_change, echoed in
// the response.

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(45, 0, 1, onBoth, handleAlterPartitionReassignments) }

func handleAlterPartitionReassignments(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterPartitionAssignmentsRequest)
	resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	allowRF := r.Version < 1 || r.AllowReplicationFactorChange
	resp.AllowReplicationFactorChange = allowRF
	img := b.meta.Image()
	for _, t := range r.Topics {
		rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			rp.Partition = p.Partition
			if err, msg := reassign(img, t.Topic, p, allowRF); err != nil {
				rp.ErrorCode = err.Code
				if msg != "" {
					rp.ErrorMessage = strPtr(msg)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return protocol.Response{Msg: resp}, nil
}

func reassign(img *metadatacache.Image, topic string, target kmsg.AlterPartitionAssignmentsRequestTopicPartition, allowRF bool) (*kerr.Error, string) {
	t := img.TopicByName(topic)
	if t == nil {
		return kerr.UnknownTopicOrPartition, "Unable to find a topic named " + topic + "."
	}
	p := t.Partition(target.Partition)
	if p == nil {
		return kerr.UnknownTopicOrPartition, fmt.Sprintf("Unable to find partition %s:%d.", topic, target.Partition)
	}
	inProgress := len(p.AddingReplicas) > 0 || len(p.RemovingReplicas) > 0
	notImplemented := "Partition reassignment is not implemented by kgo-broker"
	if target.Replicas == nil {
		if !inProgress {
			return kerr.NoReassignmentInProgress, ""
		}
		return kerr.UnsupportedVersion, notImplemented
	}
	if len(target.Replicas) == 0 {
		return kerr.InvalidReplicaAssignment, "The manual partition assignment includes an empty replica list."
	}
	sorted := slices.Sorted(slices.Values(target.Replicas))
	for i, id := range sorted {
		if img.Broker(id) == nil {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes broker %d, but no such broker is registered.", id)
		}
		if i > 0 && sorted[i-1] == id {
			return kerr.InvalidReplicaAssignment, fmt.Sprintf("The manual partition assignment includes the broker %d more than once.", id)
		}
	}
	if !allowRF {
		current := len(p.Replicas)
		if inProgress {
			current = len(p.Replicas) - len(p.AddingReplicas)
		}
		if current != len(target.Replicas) {
			return kerr.InvalidReplicationFactor, fmt.Sprintf("The replication factor is changed from %d to %d", current, len(target.Replicas))
		}
	}
	if !inProgress && slices.Equal(p.Replicas, target.Replicas) {
		return nil, ""
	}
	return kerr.UnsupportedVersion, notImplemented
}
