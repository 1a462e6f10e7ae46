package controller

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// AlterPartition (56) v2-3: a partition leader changes its ISR (and leader
// recovery state), as ReplicationControlManager.alterPartition decides it.
// v2 names topics by id and sends NewIsr; v3 sends NewIsrWithEpochs, whose
// broker epochs (-1: unchecked) must match the registrations.

func (c *Controller) alterPartition(ctx context.Context, req *kmsg.AlterPartitionRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.AlterPartitionResponse)
	var (
		apiErr *apiError
		recs   []metadatacache.Record
	)
	c.view(func(s *state) {
		if apiErr = checkBrokerEpoch(s, req.BrokerID, req.BrokerEpoch); apiErr != nil {
			return
		}
		mv := s.metadataVersion()
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionResponseTopic()
			rt.Topic, rt.TopidID = t.Topic, t.TopicID
			id := t.TopicID
			if req.Version < 2 {
				id = s.topicsByName[t.Topic]
			}
			topic := s.topics[id]
			if topic == nil || id == ([16]byte{}) {
				code := kerr.UnknownTopicID.Code
				if req.Version < 2 {
					code = kerr.UnknownTopicOrPartition.Code
				}
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterPartitionResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
				continue
			}
			for _, pd := range t.Partitions {
				rp := kmsg.NewAlterPartitionResponseTopicPartition()
				rp.Partition = pd.Partition
				newIsr := pd.NewISR
				epochs := make([]int64, len(newIsr))
				for i := range epochs {
					epochs[i] = -1
				}
				if req.Version >= 3 {
					newIsr, epochs = nil, nil
					for _, b := range pd.NewEpochISR {
						newIsr = append(newIsr, b.BrokerID)
						epochs = append(epochs, b.BrokerEpoch)
					}
				}
				var p *partitionState
				if pd.Partition >= 0 && int(pd.Partition) < len(topic.parts) {
					p = topic.parts[pd.Partition]
				}
				if e := validateAlterPartition(s, req, p, pd, newIsr, epochs); e != nil {
					rp.ErrorCode = e.Code
					c.log.Info("AlterPartition rejected", zap.String("topic", topic.name), zap.Int32("partition", pd.Partition),
						zap.Int32("broker", req.BrokerID), zap.String("error", e.Message))
					rt.Partitions = append(rt.Partitions, rp)
					continue
				}
				b := s.newChangeBuilder(mv, topic, pd.Partition, p, s.active)
				if s.uncleanElection(topic.name) {
					b.election = electUnclean
				}
				b.targetIsr, b.targetLRS = newIsr, pd.LeaderRecoveryState
				rec := b.build()
				after := *p
				if rec != nil {
					recs = append(recs, rec)
					after.partitionEpoch++
					if rec.Isr != nil {
						after.isr = rec.Isr
					}
					if rec.EligibleLeaderReplicas != nil {
						after.elr = rec.EligibleLeaderReplicas
					}
					if rec.Leader != metadatacache.NoLeaderChange {
						after.leader = rec.Leader
						after.leaderEpoch++
					}
					if rec.LeaderRecoveryState != -1 {
						after.leaderRecoveryState = rec.LeaderRecoveryState
					}
					if rec.Leader != metadatacache.NoLeaderChange && rec.Leader != req.BrokerID {
						rp.ErrorCode = kerr.NewLeaderElected.Code
						rt.Partitions = append(rt.Partitions, rp)
						continue
					}
				}
				rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch = after.leader, after.leaderEpoch, after.partitionEpoch
				rp.ISR = append([]int32{}, after.isr...)
				rp.LeaderRecoveryState = after.leaderRecoveryState
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
	})
	if apiErr != nil {
		resp.ErrorCode = apiErr.code()
		resp.Topics = nil
		return resp
	}
	if _, err := c.write(ctx, recs); err != nil {
		resp.ErrorCode = kerr.NotController.Code
		resp.Topics = nil
	}
	return resp
}

// validateAlterPartition is validateAlterPartitionData; nil when valid.
func validateAlterPartition(s *state, req *kmsg.AlterPartitionRequest, p *partitionState, pd kmsg.AlterPartitionRequestTopicPartition, newIsr []int32, epochs []int64) *kerr.Error {
	switch {
	case p == nil:
		return kerr.UnknownTopicOrPartition
	case pd.LeaderEpoch > p.leaderEpoch, pd.PartitionEpoch > p.partitionEpoch:
		// The leader knows newer state: this controller is likely stale.
		return kerr.NotController
	case pd.LeaderEpoch < p.leaderEpoch:
		return kerr.FencedLeaderEpoch
	case req.BrokerID != p.leader:
		return kerr.InvalidRequest
	case pd.PartitionEpoch < p.partitionEpoch:
		return kerr.InvalidUpdateVersion
	case !validIsr(p.replicas, newIsr), !contains(newIsr, p.leader):
		return kerr.InvalidRequest
	case pd.LeaderRecoveryState == 1 && len(newIsr) > 1:
		return kerr.InvalidRequest
	case p.leaderRecoveryState == 0 && pd.LeaderRecoveryState == 1:
		return kerr.InvalidRequest
	}
	for i, id := range newIsr {
		b := s.brokers[id]
		if b == nil || b.inControlledShutdown || b.fenced || (epochs[i] != -1 && epochs[i] != b.epoch) {
			if req.Version > 1 {
				return kerr.IneligibleReplica
			}
			return kerr.OperationNotAttempted
		}
	}
	return nil
}

// validIsr is Replicas.validateIsr: the ISR is a duplicate-free subset of
// the replicas (an empty ISR passes here).
func validIsr(replicas, isr []int32) bool {
	if len(isr) == 0 {
		return true
	}
	sorted := append([]int32(nil), isr...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	for i, r := range sorted {
		if r < 0 || (i > 0 && sorted[i-1] == r) || !contains(replicas, r) {
			return false
		}
	}
	return true
}
