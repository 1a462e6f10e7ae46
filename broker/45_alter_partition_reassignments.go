package broker

// AlterPartitionReassignments: v0-1 (client listeners forward it; the
// CONTROLLER listener serves it)
//
// Behavior (KafkaApis forwards it to the controller with
// maybeForwardToController; ControllerApis authorizes ALTER on the cluster,
// ReplicationControlManager.alterPartitionReassignments decides it:
// controller/reassign.go, KIP-455):
//   - Forwarded in an Envelope to the active controller
//     (kafka-reassign-partitions.sh --execute / --cancel), which writes a
//     PartitionChangeRecord per partition: the target replicas followed by
//     those leaving, AddingReplicas and RemovingReplicas. The adding
//     replicas' brokers create the log and fetch as followers (not in the
//     ISR); the leader's AlterPartition that brings the last one into the
//     ISR completes it (replicas become the target, the removed ones stop
//     and delete their log; a removed leader hands over leadership).
//     Null replicas cancel a reassignment in progress.
//   - Per partition: UNKNOWN_TOPIC_OR_PARTITION "Unable to find a topic
//     named <t>." / "Unable to find partition <t>:<p>.";
//     NO_REASSIGNMENT_IN_PROGRESS (no message) cancelling nothing;
//     INVALID_REPLICA_ASSIGNMENT for an empty list, a broker that is not
//     registered, one named twice, or a cancel that would need an unclean
//     election; a fenced target broker is accepted and the reassignment
//     waits for it.
//   - CLUSTER_AUTHORIZATION_FAILED (top level and every partition) without
//     ALTER on the cluster (checked on the broker and again by the
//     controller as the forwarded principal); REQUEST_TIMED_OUT when no
//     controller answers within the request's timeout; NOT_CONTROLLER from
//     a controller that lost leadership makes the broker retry on the next.
//
// Version notes: v1: allow_replication_factor_change (KIP-860): false
// refuses a target whose size differs from the replicas the partition is
// heading for (INVALID_REPLICATION_FACTOR "The replication factor is
// changed from <n> to <m>"); echoed in the response. v0 always allows it.

func init() {
	regKey(45, 0, 1, onBroker, handleForwarded)
	regKey(45, 0, 1, onController, handleControllerAPI)
}
