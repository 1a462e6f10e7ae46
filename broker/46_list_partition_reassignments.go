package broker

// ListPartitionReassignments: v0 (client listeners forward it; the
// CONTROLLER listener serves it)
//
// Behavior (KafkaApis forwards it to the controller; ControllerApis
// authorizes DESCRIBE on the cluster,
// ReplicationControlManager.listPartitionReassignments answers it:
// controller/reassign.go, KIP-455):
//   - Null topics: every partition with a reassignment in progress
//     (kafka-reassign-partitions.sh --list, --verify), else the named
//     partitions that have one; unknown topics and partitions are left out.
//     Each lists its replicas (the target first, then those leaving),
//     adding and removing replicas.
//   - CLUSTER_AUTHORIZATION_FAILED without DESCRIBE on the cluster;
//     REQUEST_TIMED_OUT when no controller answers within the request's
//     timeout.
//
// Version notes: v0 only (flexible).

func init() {
	regKey(46, 0, 0, onBroker, handleForwarded)
	regKey(46, 0, 0, onController, handleControllerAPI)
}
