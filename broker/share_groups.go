package broker

// Share groups (KIP-932) in the broker: what the group coordinator is
// given (the persister, GROUP configs, the member-left hook, partitions'
// latest offsets for the lag) and the gate every share group API passes.
//
// The share group APIs answer as Kafka 4.4 does with share groups off
// (UNSUPPORTED_VERSION) until share.version 1 is finalized in the
// metadata image (KafkaApis.isShareGroupProtocolEnabled: share.version
// >= 1); this node never finalizes it itself.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/group"
)

// wireShareGroups fills the share group part of the group coordinator's
// config.
func (b *Broker) wireShareGroups(gc *group.Config) {
	if b.sharePersister != nil {
		gc.SharePersister = b.sharePersister
	}
	gc.OnShareMemberLeft = func(groupID, memberID string) {
		if f := b.shareMemberLeft; f != nil {
			f(groupID, memberID)
		}
	}
	gc.LatestOffset = b.latestOffset
}

// latestOffset is a partition's latest offset (its high watermark, what
// ListOffsets LATEST answers a read_uncommitted client), from the local
// replica when this node leads it, else from its leader (Kafka's
// PartitionMetadataClient.listLatestOffsets). Errors are kerr errors.
func (b *Broker) latestOffset(ctx context.Context, topicID [16]byte, partition int32) (int64, error) {
	img := b.meta.Image()
	ti := img.TopicByID(topicID)
	if ti == nil || ti.Partition(partition) == nil {
		return -1, kerr.UnknownTopicOrPartition
	}
	p := ti.Partition(partition)
	if p.Leader < 0 {
		return -1, kerr.LeaderNotAvailable
	}
	if p.Leader == b.nodeID && b.replicas != nil {
		hw, err := b.replicas.HighWatermarkOf(ti.Name, partition)
		if err != nil {
			return -1, kerr.NotLeaderForPartition
		}
		return hw, nil
	}
	if b.peers == nil {
		return -1, kerr.NotLeaderForPartition
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID = 7, -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = ti.Name
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = partition, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	m, err := b.peers.Request(ctx, p.Leader, req)
	if err != nil {
		return -1, kerr.NetworkException
	}
	resp, ok := m.(*kmsg.ListOffsetsResponse)
	if !ok || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, kerr.UnknownServerError
	}
	got := resp.Topics[0].Partitions[0]
	if e := kerr.ErrorForCode(got.ErrorCode); e != nil {
		return -1, e
	}
	return got.Offset, nil
}
