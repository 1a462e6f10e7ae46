package broker

// ElectLeaders: v0-2 (client listeners forward it; the CONTROLLER listener
// serves it in controller_apis.go)
//
// Behavior (KafkaApis forwards it to the controller with
// maybeForwardToController; ControllerApis authorizes ALTER on the cluster,
// ReplicationControlManager.electLeaders decides it: controller/electleaders.go):
//   - Forwarded in an Envelope to the active controller, which runs a
//     PREFERRED or UNCLEAN election per partition (kafka-leader-election.sh
//     --election-type PREFERRED|UNCLEAN) and writes the leader changes.
//   - Per requested partition: UNKNOWN_TOPIC_OR_PARTITION, ELECTION_NOT_NEEDED,
//     PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE or
//     success. Null topics: every partition of every topic, listing only
//     those whose election was needed.
//   - CLUSTER_AUTHORIZATION_FAILED (top level and every partition) without
//     ALTER on the cluster; REQUEST_TIMED_OUT when no controller answers in
//     the request's timeout.
//
// Version notes: v1: election type (KIP-460) and the top-level error code;
// v2: flexible.

func init() { regKey(43, 0, 2, onBroker, handleForwarded) }
