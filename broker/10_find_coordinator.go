package broker

// FindCoordinator: v0-6
//
// Behavior (KafkaApis.getCoordinator):
//   - Key type 0 (group): the leader of the group's __consumer_offsets
//     partition, abs(javaStringHashCode(groupId)) % partitions, on the
//     listener the request came in on. If the topic does not exist yet it is
//     created through the controller (offsets.topic.num.partitions,
//     offsets.topic.replication.factor, cleanup.policy=compact) and the
//     answer is COORDINATOR_NOT_AVAILABLE until it has a leader.
//   - Key type 1 (transaction, txn.Coordinator.FindCoordinator): the leader
//     of the transactional id's __transaction_state partition (same hash),
//     if it is alive, on the listener the request came in on. A missing
//     topic is created through the controller
//     (transaction.state.log.num.partitions, .replication.factor, .min.isr,
//     .segment.bytes, cleanup.policy=compact, compression.type=uncompressed,
//     unclean.leader.election.enable=false); COORDINATOR_NOT_AVAILABLE
//     until it has a leader.
//   - Key type 2 (share, share_coordinator.go): v6+ only (INVALID_REQUEST
//     before), CLUSTER_ACTION on the cluster (it is an inter-broker
//     lookup), the key "groupId:topicId:partition" parsed as
//     SharePartitionKey.getInstance does (INVALID_REQUEST "Share coordinator
//     key is invalid" otherwise); the leader of its __share_group_state
//     partition (created through the controller on first use with
//     share.coordinator.state.topic.*, cleanup.policy=delete,
//     retention.ms=-1), COORDINATOR_NOT_AVAILABLE until it has one.
//   - Unknown types: INVALID_REQUEST.
//   - Loading is not visible here: group APIs answer
//     COORDINATOR_LOAD_IN_PROGRESS until the partition is replayed.
//
// Version notes:
//   - v1: key type, error message, throttle time; v3: flexible
//   - v4: batched CoordinatorKeys with per-key results (KIP-699)
//   - v5: no change (KIP-890); v6: share key type (KIP-932)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(10, 0, 6, onBroker, handleFindCoordinator) }

func handleFindCoordinator(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.FindCoordinatorRequest)
	resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := r.CoordinatorKeys
	if r.Version < 4 {
		keys = []string{r.CoordinatorKey}
	}
	for _, key := range keys {
		c := kmsg.NewFindCoordinatorResponseCoordinator()
		c.Key, c.NodeID, c.Port = key, -1, -1
		if r.CoordinatorType == 2 {
			if err := b.findShareCoordinator(req, key, &c); err != nil {
				c.ErrorCode, c.ErrorMessage = err.code, &err.msg
			}
			resp.Coordinators = append(resp.Coordinators, c)
			continue
		}
		if err := b.findCoordinator(r.CoordinatorType, key, req.Listener, &c); err != nil {
			c.ErrorCode = err.(*kerr.Error).Code
			msg := err.(*kerr.Error).Description
			c.ErrorMessage = &msg
		}
		resp.Coordinators = append(resp.Coordinators, c)
	}
	if r.Version < 4 && len(resp.Coordinators) == 1 {
		c := resp.Coordinators[0]
		resp.Coordinators = nil
		resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = c.ErrorCode, c.NodeID, c.Host, c.Port
		if r.Version >= 1 {
			resp.ErrorMessage = c.ErrorMessage
		}
	}
	return protocol.Response{Msg: resp}, nil
}

func (b *Broker) findCoordinator(keyType int8, key, listener string, c *kmsg.FindCoordinatorResponseCoordinator) error {
	switch keyType {
	case 0:
	case 1:
		return b.findTxnCoordinator(key, listener, c)
	default:
		return kerr.InvalidRequest
	}
	if b.groups == nil {
		return kerr.CoordinatorNotAvailable
	}
	id, err := b.groups.FindCoordinator(key)
	if err != nil {
		return err.(*kerr.Error)
	}
	eps := b.leaderEndpoints(listener, []int32{id})
	if len(eps) == 0 {
		return kerr.CoordinatorNotAvailable
	}
	c.NodeID, c.Host, c.Port = eps[0].id, eps[0].host, eps[0].port
	return nil
}
