package group

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroup is a KIP-848 group (group.protocol=consumer).
type consumerGroup struct {
	id      string
	members map[string]*consumerMember
}

type consumerMember struct {
	id    string
	epoch int32
}

func (g *consumerGroup) isEmpty() bool       { return len(g.members) == 0 }
func (g *consumerGroup) stateString() string { return "Empty" }

func (g *consumerGroup) isSubscribedToTopic(string) bool { return false }

func (g *consumerGroup) validateOffsetCommit(memberID string, instanceID *string, epoch int32, version int16) error {
	if epoch < 0 && len(g.members) == 0 {
		return nil
	}
	m := g.members[memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if version < 9 {
		return kerr.UnsupportedVersion
	}
	if epoch != m.epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}

func (g *consumerGroup) validateOffsetFetch(memberID *string, epoch int32) error {
	if memberID == nil && epoch < 0 {
		return nil
	}
	if memberID == nil {
		return kerr.UnknownMemberID
	}
	m := g.members[*memberID]
	if m == nil {
		return kerr.UnknownMemberID
	}
	if epoch != m.epoch {
		return kerr.StaleMemberEpoch
	}
	return nil
}

func (s *shard) deleteConsumerGroupRecords(cg *consumerGroup) {
	_ = s.write(s.consumerGroupTombstones(cg))
	s.cancelConsumerGroupTimers(cg)
}

func (s *shard) replayConsumer(ver int16, k, v []byte)             {}
func (s *shard) onConsumerGroupLoaded(g *consumerGroup)            {}
func (s *shard) consumerGroupTombstones(g *consumerGroup) []record { return nil }
func (s *shard) cancelConsumerGroupTimers(g *consumerGroup)        {}

func (s *shard) classicHeartbeatToConsumerGroup(g *consumerGroup, req *kmsg.HeartbeatRequest) error {
	return kerr.UnknownMemberID
}

func (s *shard) classicLeaveConsumerGroup(g *consumerGroup, members []leaveMember) (error, []error) {
	return kerr.UnknownMemberID, nil
}
