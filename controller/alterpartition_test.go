package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestAlterPartition(t *testing.T) {
	e := newTestEnv(t, nil)
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2)}
	rt := e.createTopic("t", 1, 2)
	p := e.c.Image().TopicByName("t").Partition(0)
	leader, follower := p.Leader, p.Replicas[1]

	alter := func(version int16, from int32, leaderEpoch, partEpoch int32, isr ...int32) (int16, kmsg.AlterPartitionResponseTopicPartition) {
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version = version
		req.BrokerID, req.BrokerEpoch = from, epochs[from]
		tp := kmsg.NewAlterPartitionRequestTopicPartition()
		tp.Partition, tp.LeaderEpoch, tp.PartitionEpoch = 0, leaderEpoch, partEpoch
		for _, id := range isr {
			if version >= 3 {
				tp.NewEpochISR = append(tp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: epochs[id]})
			} else {
				tp.NewISR = append(tp.NewISR, id)
			}
		}
		topic := kmsg.NewAlterPartitionRequestTopic()
		topic.TopicID = rt.TopicID
		topic.Partitions = []kmsg.AlterPartitionRequestTopicPartition{tp}
		req.Topics = []kmsg.AlterPartitionRequestTopic{topic}
		resp := e.do(req).(*kmsg.AlterPartitionResponse)
		if resp.ErrorCode != 0 {
			return resp.ErrorCode, kmsg.AlterPartitionResponseTopicPartition{}
		}
		return 0, resp.Topics[0].Partitions[0]
	}

	// Shrink to the leader alone.
	code, rp := alter(3, leader, 0, 0, leader)
	if code != 0 || rp.ErrorCode != 0 || len(rp.ISR) != 1 || rp.PartitionEpoch != 1 || rp.LeaderEpoch != 0 || rp.LeaderID != leader {
		t.Fatalf("shrink: %d %+v", code, rp)
	}
	if p := e.c.Image().TopicByName("t").Partition(0); len(p.Isr) != 1 || p.PartitionEpoch != 1 {
		t.Fatalf("image after shrink %+v", p)
	}
	// Stale partition epoch, fenced leader epoch, not the leader, bad ISR.
	for _, tc := range []struct {
		from        int32
		le, pe      int32
		isr         []int32
		want        int16
		wantTopLvl  bool
		description string
	}{
		{leader, 0, 0, []int32{leader, follower}, kerr.InvalidUpdateVersion.Code, false, "stale partition epoch"},
		{leader, 1, 1, []int32{leader, follower}, kerr.NotController.Code, false, "newer leader epoch"},
		{follower, 0, 1, []int32{leader, follower}, kerr.InvalidRequest.Code, false, "not the leader"},
		{leader, 0, 1, []int32{follower}, kerr.InvalidRequest.Code, false, "ISR without the leader"},
		{leader, 0, 1, []int32{leader, 9}, kerr.InvalidRequest.Code, false, "ISR beyond the replicas"},
	} {
		code, rp := alter(3, tc.from, tc.le, tc.pe, tc.isr...)
		if code != 0 || rp.ErrorCode != tc.want {
			t.Errorf("%s: top %d partition %d, want %d", tc.description, code, rp.ErrorCode, tc.want)
		}
	}
	// Expand back (v2, no epochs).
	code, rp = alter(2, leader, 0, 1, leader, follower)
	if code != 0 || rp.ErrorCode != 0 || len(rp.ISR) != 2 || rp.PartitionEpoch != 2 {
		t.Fatalf("expand: %d %+v", code, rp)
	}
	// A stale broker epoch fails the whole request.
	epochs[leader]++
	if code, _ := alter(3, leader, 0, 2, leader); code != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale broker epoch: %d", code)
	}
}

func TestUncleanLeaderElectionOnFence(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		e := newTestEnv(t, nil)
		epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2)}
		var configs []string
		if unclean {
			configs = []string{"unclean.leader.election.enable", "true"}
		}
		rt := e.createTopic("t", 1, 2, configs...)
		p := e.c.Image().TopicByName("t").Partition(0)
		leader, follower := p.Leader, p.Replicas[1]
		req := kmsg.NewPtrAlterPartitionRequest()
		req.Version, req.BrokerID, req.BrokerEpoch = 3, leader, epochs[leader]
		req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: rt.TopicID, Partitions: []kmsg.AlterPartitionRequestTopicPartition{{
			Partition: 0, NewEpochISR: []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{{BrokerID: leader, BrokerEpoch: -1}},
		}}}}
		if resp := e.do(req).(*kmsg.AlterPartitionResponse); resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("shrink %+v", resp)
		}
		// The leader asks to be fenced.
		if hb := e.heartbeat(leader, epochs[leader], e.c.Image().Offset, true, false); !hb.IsFenced {
			t.Fatalf("%+v", hb)
		}
		p = e.c.Image().TopicByName("t").Partition(0)
		if unclean {
			if p.Leader != follower || len(p.Isr) != 1 || p.Isr[0] != follower || p.LeaderRecoveryState != 1 {
				t.Fatalf("unclean: %+v", p)
			}
		} else if p.Leader != -1 || len(p.Isr) != 0 || !slices.Equal(p.Elr, []int32{leader}) || !slices.Equal(p.LastKnownElr, []int32{leader}) {
			// ELR (KIP-966): the ISR empties into the ELR.
			t.Fatalf("clean: %+v", p)
		}
		e.stop()
	}
}
