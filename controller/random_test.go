package controller

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRandomRequestsNeverPanic throws random (mostly invalid) requests at a
// controller with some brokers and topics; every request must get an answer.
func TestRandomRequestsNeverPanic(t *testing.T) {
	e := newFakeEnv(t, nil)
	epochs := map[int32]int64{}
	for id := int32(1); id <= 3; id++ {
		epochs[id] = e.addBroker(id)
	}
	r := rand.New(rand.NewPCG(42, 42))
	names := []string{"a", "b", "a.b", "a_b", "", "..", "__cluster_metadata", "x y"}
	pick := func() string { return names[r.IntN(len(names))] }
	i32 := func() int32 { return int32(r.IntN(9)) - 3 }
	ids := func() []int32 {
		out := make([]int32, r.IntN(4))
		for i := range out {
			out[i] = i32()
		}
		return out
	}
	created := 0
	for i := 0; i < 2000; i++ {
		var req kmsg.Request
		switch r.IntN(9) {
		case 0:
			q := kmsg.NewPtrCreateTopicsRequest()
			q.Version = int16(2 + r.IntN(6))
			q.ValidateOnly = r.IntN(3) == 0
			for j := r.IntN(3); j >= 0; j-- {
				ct := kmsg.NewCreateTopicsRequestTopic()
				ct.Topic, ct.NumPartitions, ct.ReplicationFactor = pick(), int32(r.IntN(6))-1, int16(r.IntN(4))-1
				if r.IntN(5) == 0 {
					for p := r.IntN(3); p >= 0; p-- {
						ct.ReplicaAssignment = append(ct.ReplicaAssignment, kmsg.CreateTopicsRequestTopicReplicaAssignment{Partition: i32(), Replicas: ids()})
					}
				}
				if r.IntN(6) == 0 {
					ct.Configs = append(ct.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "k", Value: nil})
				}
				q.Topics = append(q.Topics, ct)
			}
			req = q
		case 1:
			if r.IntN(4) != 0 {
				continue
			}
			q := kmsg.NewPtrDeleteTopicsRequest()
			q.Version = int16(1 + r.IntN(6))
			q.TopicNames = []string{pick()}
			q.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: nil, TopicID: [16]byte{byte(r.IntN(2))}}, {Topic: &names[r.IntN(len(names))]}}
			req = q
		case 2:
			q := kmsg.NewPtrCreatePartitionsRequest()
			q.Version = 3
			ct := kmsg.NewCreatePartitionsRequestTopic()
			ct.Topic, ct.Count = pick(), i32()
			if r.IntN(2) == 0 {
				for p := r.IntN(3); p > 0; p-- {
					ct.Assignment = append(ct.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: ids()})
				}
			}
			q.Topics = []kmsg.CreatePartitionsRequestTopic{ct}
			req = q
		case 3:
			q := kmsg.NewPtrIncrementalAlterConfigsRequest()
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType = kmsg.ConfigResourceType(r.IntN(6))
			res.ResourceName = []string{"a", "1", "", "-1", "x"}[r.IntN(5)]
			res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOp(r.IntN(6) - 1), Value: &names[r.IntN(len(names))]}}
			q.Resources = []kmsg.IncrementalAlterConfigsRequestResource{res}
			req = q
		case 4:
			q := kmsg.NewPtrAlterConfigsRequest()
			res := kmsg.NewAlterConfigsRequestResource()
			res.ResourceType = kmsg.ConfigResourceType(r.IntN(6))
			res.ResourceName = pick()
			res.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "k"}}
			q.Resources = []kmsg.AlterConfigsRequestResource{res}
			req = q
		case 5:
			id := int32(1 + r.IntN(4))
			q := kmsg.NewPtrBrokerHeartbeatRequest()
			q.BrokerID, q.BrokerEpoch, q.CurrentMetadataOffset = id, epochs[id], e.c.Image().Offset-int64(r.IntN(3))
			q.WantFence, q.WantShutdown = r.IntN(10) == 0, r.IntN(20) == 0
			req = q
		case 6:
			id := int32(1 + r.IntN(4))
			q := kmsg.NewPtrAllocateProducerIDsRequest()
			q.BrokerID, q.BrokerEpoch = id, epochs[id]
			req = q
		case 7:
			id := int32(1 + r.IntN(3))
			q := kmsg.NewPtrAlterPartitionRequest()
			q.Version, q.BrokerID, q.BrokerEpoch = int16(2+r.IntN(2)), id, epochs[id]
			var tid [16]byte
			if tp := e.c.Image().TopicByName(pick()); tp != nil {
				tid = tp.ID
			}
			q.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: tid, Partitions: []kmsg.AlterPartitionRequestTopicPartition{{
				Partition: i32(), LeaderEpoch: i32(), PartitionEpoch: i32(), NewISR: ids(), LeaderRecoveryState: int8(r.IntN(3)),
				NewEpochISR: []kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{{BrokerID: i32(), BrokerEpoch: -1}},
			}}}}
			req = q
		case 8:
			id := int32(1 + r.IntN(3))
			rr := e.register(id, byte(r.IntN(3)))
			if rr.ErrorCode == 0 {
				epochs[id] = rr.BrokerEpoch
			}
			continue
		}
		resp, err := e.c.Handle(context.Background(), req)
		if err != nil || resp == nil {
			t.Fatalf("request %d %T: %v", i, req, err)
		}
		if ct, ok := resp.(*kmsg.CreateTopicsResponse); ok {
			for _, rt := range ct.Topics {
				if rt.ErrorCode == 0 {
					created++
				}
			}
		}
		if i%100 == 0 {
			checkStateMatchesImage(t, e.c)
		}
		if r.IntN(200) == 0 {
			e.clock.Advance(5e9)
			e.c.fenceStaleBrokers()
		}
	}
	t.Logf("created %d, topics %v, brokers %d, offset %d", created, e.c.Image().TopicNames(), len(e.c.Image().Brokers()), e.c.Image().Offset)
	if created == 0 {
		t.Fatal("no topic was ever created")
	}
	checkStateMatchesImage(t, e.c)
}

// checkStateMatchesImage: the controller's replayed state and the metadata
// image agree.
func checkStateMatchesImage(t *testing.T, c *Controller) {
	c.view(func(s *state) {
		img := c.Image() // the listener updates both under stateMu
		if len(img.TopicNames()) != len(s.topicsByName) {
			t.Fatalf("image has %d topics, state %d", len(img.TopicNames()), len(s.topicsByName))
		}
		for id, st := range s.topics {
			it := img.TopicByID(id)
			if it == nil || it.Name != st.name || len(it.Partitions) != len(st.parts) {
				t.Fatalf("topic %s: image %+v", st.name, it)
			}
			for pid, sp := range st.parts {
				ip := it.Partition(int32(pid))
				if ip.Leader != sp.leader || ip.LeaderEpoch != sp.leaderEpoch || ip.PartitionEpoch != sp.partitionEpoch ||
					!equalInt32s(ip.Isr, sp.isr) || !equalInt32s(ip.Replicas, sp.replicas) || ip.LeaderRecoveryState != sp.leaderRecoveryState {
					t.Fatalf("%s-%d: image %+v state %+v", st.name, pid, ip, sp)
				}
			}
		}
		for id, sb := range s.brokers {
			ib := img.Broker(id)
			if ib == nil || ib.Fenced != sb.fenced || ib.Epoch != sb.epoch || ib.InControlledShutdown != sb.inControlledShutdown {
				t.Fatalf("broker %d: image %+v state %+v", id, ib, sb)
			}
		}
		if len(img.Brokers()) != len(s.brokers) {
			t.Fatalf("brokers: image %d state %d", len(img.Brokers()), len(s.brokers))
		}
	})
}
