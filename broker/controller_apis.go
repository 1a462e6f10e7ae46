package broker

// The CONTROLLER listener's APIs (ControllerApis in Kafka), served only on a
// node with the controller role:
//
//	raft:       Vote v0-2, BeginQuorumEpoch v0-1, EndQuorumEpoch v0-1,
//	            Fetch v4-18 (raft fetch of __cluster_metadata; v18: KIP-1166), FetchSnapshot v0-1,
//	            DescribeQuorum v0-2, AddRaftVoter v0-1, RemoveRaftVoter v0,
//	            UpdateRaftVoter v0 (KIP-853)
//	controller: AlterPartition v2-3, AssignReplicasToDirs v0 (KIP-858,
//	            controller/assigndirs.go), BrokerRegistration v0-4, BrokerHeartbeat v0-2, UnregisterBroker v0,
//	            AllocateProducerIds v0, CreateTopics v2-7, DeleteTopics v1-6,
//	            CreatePartitions v0-3, IncrementalAlterConfigs v0-1,
//	            AlterConfigs v0-2, AlterPartitionReassignments v0-1 and
//	            ListPartitionReassignments v0 (45_/46_ files), UpdateFeatures v0-2,
//	            UnregisterController v0 (KIP-1223), ElectLeaders v0-2,
//	            AlterClientQuotas v0-1 (controller/quotas.go),
//	            ControllerRegistration v0 (KIP-919; controller_registration.go
//	            is the sending side), AlterUserScramCredentials v0
//	            (controller/scram.go)
//	forwarding: Envelope v0 (58_envelope.go): a broker's forwarded client
//	            request, run with the client's principal and address
//	cluster:    DescribeCluster v0-2 (EndpointType 2: the voters, the raft
//	            leader as ControllerID; 60_describe_cluster.go)
//
// Each request is authorized as ControllerApis does (controller_authz.go)
// and goes to the node's controllerHandler, which hands raft RPCs to the
// raft node and the rest to the controller.

import (
	"context"
	"errors"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/raft"
)

func init() {
	// raft's RPCs at the versions the raft node serves.
	for key, v := range raft.ServedVersions {
		regKey(key, v[0], v[1], onController, handleControllerAPI)
	}
	for _, api := range []struct{ key, min, max int16 }{
		{56, 2, 3}, {62, 0, 4}, {63, 0, 2}, {64, 0, 0}, {67, 0, 0},
		{19, 2, 7}, {20, 1, 6}, {37, 0, 3}, {44, 0, 1}, {33, 0, 2}, {57, 0, 2},
		{70, 0, 0}, {51, 0, 0}, {94, 0, 0}, {73, 0, 0}, {43, 0, 2},
	} {
		regKey(api.key, api.min, api.max, onController, handleControllerAPI)
	}
}

var errNotController = errors.New("this node is not a controller")

func handleControllerAPI(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	if b.controllerHandler == nil {
		return protocol.Response{}, errNotController
	}
	return runAuthorizedControllerAPI(ctx, b, req)
}
