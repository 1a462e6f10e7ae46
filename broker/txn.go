package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// The broker side of the transaction coordinator (txn/): its lookup for
// FindCoordinator, the WriteTxnMarkers it sends through the inter-broker
// clients, and the __consumer_offsets partition of AddOffsetsToTxn.

// findTxnCoordinator answers FindCoordinator key type 1: the leader of the
// transactional id's __transaction_state partition if it is alive (Kafka's
// getAliveBrokerNode), on the request's listener.
func (b *Broker) findTxnCoordinator(key, listener string, c *kmsg.FindCoordinatorResponseCoordinator) error {
	if b.txn == nil {
		return kerr.CoordinatorNotAvailable
	}
	id, err := b.txn.FindCoordinator(key)
	if err != nil {
		return kerr.CoordinatorNotAvailable
	}
	if br := b.meta.Image().Broker(id); br == nil || br.Fenced {
		return kerr.CoordinatorNotAvailable
	}
	eps := b.leaderEndpoints(listener, []int32{id})
	if len(eps) == 0 {
		return kerr.CoordinatorNotAvailable
	}
	c.NodeID, c.Host, c.Port = eps[0].id, eps[0].host, eps[0].port
	return nil
}

// WriteTxnMarkers sends the transaction coordinator's markers to a broker
// (txn.MarkerSender), this node's own handlers included. Kafka sends the
// highest version both ends serve; every node runs this build, so that is
// the highest one registered here.
func (b *Broker) WriteTxnMarkers(ctx context.Context, brokerID int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	if b.peers == nil {
		return nil, fmt.Errorf("broker %d: no inter-broker clients", b.nodeID)
	}
	if e, ok := registry(onBroker)[req.Key()]; ok {
		req.Version = min(max(req.Version, e.min), e.max)
	} else {
		req.Version = 1 // not served here (yet): Kafka 4.x's baseline
	}
	resp, err := b.peers.Request(ctx, brokerID, req)
	if err != nil {
		return nil, err
	}
	r, ok := resp.(*kmsg.WriteTxnMarkersResponse)
	if !ok {
		return nil, fmt.Errorf("unexpected response %T to WriteTxnMarkers", resp)
	}
	return r, nil
}

// offsetsPartition is the __consumer_offsets partition of a group (Kafka's
// GroupCoordinator.partitionFor): the topic's partition count from the
// image, or offsets.topic.num.partitions before it exists.
func (b *Broker) offsetsPartition(groupID string) int32 {
	n := b.cfg.Int("offsets.topic.num.partitions")
	if t := b.meta.Image().TopicByName("__consumer_offsets"); t != nil && len(t.Partitions) > 0 {
		n = int32(len(t.Partitions))
	}
	if n <= 0 {
		n = 50
	}
	return coordinator.PartitionFor(groupID, n)
}
