package broker

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/group"
)

// streamsGroupsEnabled is KafkaApis.isStreamsGroupProtocolEnabled: streams
// groups (KIP-1071) are served once the cluster finalized streams.version
// 1 or above. Until then StreamsGroupHeartbeat, StreamsGroupDescribe and
// StreamsGroupTopologyDescriptionUpdate answer UNSUPPORTED_VERSION.
func (b *Broker) streamsGroupsEnabled() bool {
	if b.meta == nil {
		return false
	}
	img := b.meta.Image()
	if img == nil {
		return false
	}
	level, _ := img.Feature("streams.version")
	return level >= 1
}

// createStreamsInternalTopics is AutoTopicCreationManager.createStreamsInternalTopics:
// the internal topics a streams group heartbeat found missing are created
// with the partition count, replication factor (0: the broker default)
// and configs of the topology, whatever auto.create.topics.enable says,
// without waiting for the controller's answer (the member's next heartbeat
// sees them).
func (b *Broker) createStreamsInternalTopics(topics []group.StreamsTopic) {
	names := make([]string, 0, len(topics))
	for _, t := range topics {
		names = append(names, t.Name)
	}
	names = b.autoCreating.claim(names)
	if len(names) == 0 {
		return
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(forwardTimeout.Milliseconds())
	for _, st := range topics {
		if !want[st.Name] {
			continue
		}
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = st.Name, st.Partitions, st.ReplicationFactor
		if t.NumPartitions <= 0 {
			t.NumPartitions = -1
		}
		if t.ReplicationFactor <= 0 {
			t.ReplicationFactor = -1
		}
		for k, v := range st.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			k, v := k, v
			c.Name, c.Value = k, &v
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	go func() {
		defer b.autoCreating.release(names)
		ctx, cancel := context.WithTimeout(context.Background(), forwardTimeout)
		defer cancel()
		resp, err := b.forward.Request(ctx, req)
		if err != nil {
			b.logger.Warn("streams internal topic creation failed", zap.Strings("topics", names), zap.Error(err))
			return
		}
		if r, ok := resp.(*kmsg.CreateTopicsResponse); ok {
			for _, t := range r.Topics {
				if t.ErrorCode != 0 && t.ErrorCode != 36 { // TOPIC_ALREADY_EXISTS
					b.logger.Warn("streams internal topic creation failed", zap.String("topic", t.Topic), zap.Int16("error_code", t.ErrorCode))
				}
			}
		}
		b.logger.Info("created streams internal topics", zap.String("topics", strings.Join(names, ",")))
	}()
}
