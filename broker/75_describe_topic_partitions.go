package broker

// DescribeTopicPartitions: v0 (client listeners, KIP-966)
//
// Behavior:
//   - Describes the requested topics (all topics when the list is empty) in
//     name order, with leader, epoch, replicas, ISR, ELR and last known ELR.
//     ELR arrays are always sent as [] (never null): the Java client reads
//     them without a null check.
//   - Paging: at most ResponsePartitionLimit partitions (capped at 2000, as
//     Kafka's max.request.partition.size.limit) per answer; Cursor starts at a
//     topic/partition and NextCursor says where the next page starts.
//   - Authorization (DescribeTopicPartitionsRequestHandler): topics without
//     DESCRIBE are left out of an all-topics answer and answer
//     TOPIC_AUTHORIZATION_FAILED when asked for; every other topic carries
//     its authorized operations (KIP-430).
//   - Unknown topics get UNKNOWN_TOPIC_OR_PARTITION, invalid names
//     INVALID_TOPIC_EXCEPTION.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(75, 0, 0, onBroker, handleDescribeTopicPartitions) }

const maxDescribePartitions = 2000

func handleDescribeTopicPartitions(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeTopicPartitionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := b.meta.Image()

	var names []string
	if len(r.Topics) == 0 {
		names = img.TopicNames()
	} else {
		seen := make(map[string]bool, len(r.Topics))
		for _, t := range r.Topics {
			if !seen[t.Topic] {
				seen[t.Topic] = true
				names = append(names, t.Topic)
			}
		}
		sort.Strings(names)
	}

	limit := int(r.ResponsePartitionLimit)
	if limit <= 0 || limit > maxDescribePartitions {
		limit = maxDescribePartitions
	}
	startTopic, startPartition := "", int32(0)
	if r.Cursor != nil {
		startTopic, startPartition = r.Cursor.Topic, r.Cursor.Partition
	}

	remaining := limit
	for _, name := range names {
		if name < startTopic {
			continue
		}
		rt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		n := name
		rt.Topic = &n
		if !b.authorize(req, opDescribe, resTopic, name) {
			if len(r.Topics) == 0 {
				continue // not disclosed
			}
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		t := img.TopicByName(name)
		rt.AuthorizedOperations = b.authorizedOperations(req, resTopic, name)
		if t == nil {
			if validateTopicName(name) != nil {
				rt.ErrorCode = kerr.InvalidTopicException.Code
			} else {
				rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			resp.Topics = append(resp.Topics, rt)
			continue
		}
		if remaining == 0 {
			cur := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
			cur.Topic, cur.Partition = name, 0
			resp.NextCursor = &cur
			break
		}
		rt.TopicID = t.ID
		rt.IsInternal = isInternalTopic(name)
		parts := t.SortedPartitions()
		first := int32(0)
		if name == startTopic {
			first = startPartition
		}
		for _, p := range parts {
			if p.ID < first {
				continue
			}
			if remaining == 0 {
				cur := kmsg.NewDescribeTopicPartitionsResponseNextCursor()
				cur.Topic, cur.Partition = name, p.ID
				resp.NextCursor = &cur
				break
			}
			remaining--
			rp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			rp.Partition = p.ID
			rp.LeaderID = p.Leader
			rp.LeaderEpoch = p.LeaderEpoch
			rp.Replicas = nonNil(p.Replicas)
			rp.ISR = nonNil(p.Isr)
			rp.EligibleLeaderReplicas = nonNil(p.Elr)
			rp.LastKnownELR = nonNil(p.LastKnownElr)
			rp.OfflineReplicas = []int32{}
			for _, id := range p.Replicas {
				if br := img.Broker(id); br == nil || br.Fenced {
					rp.OfflineReplicas = append(rp.OfflineReplicas, id)
				}
			}
			if br := img.Broker(p.Leader); p.Leader < 0 || br == nil || br.Fenced {
				rp.ErrorCode = kerr.LeaderNotAvailable.Code
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		if resp.NextCursor != nil {
			break
		}
	}
	return protocol.Response{Msg: resp}, nil
}

func nonNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
