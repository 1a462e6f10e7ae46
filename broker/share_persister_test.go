package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/kgo-broker/kgo-broker/sharestate"
)

var shareNodeOverrides = map[string]string{
	"share.coordinator.state.topic.replication.factor": "1",
	"share.coordinator.state.topic.min.isr":            "1",
	"share.coordinator.state.topic.num.partitions":     "3",
}

func TestParseShareKey(t *testing.T) {
	id := [16]byte{1, 2, 3}
	key := sharestate.Key("a:b", id, 7)
	if g, tid, p, ok := parseShareKey(key); !ok || g != "a:b" || tid != id || p != 7 {
		t.Fatalf("%q: %q %v %d %v", key, g, tid, p, ok)
	}
	for _, bad := range []string{"", "g", "g:x", " :" + sharestate.UUIDString(id) + ":1", "g:notauuid:1", "g:" + sharestate.UUIDString(id) + ":x",
		"g:" + sharestate.UUIDString(id) + ":"} {
		if _, _, _, ok := parseShareKey(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestNodeShareCoordinator: FindCoordinator key type 2 creates
// __share_group_state and names this node; the persister initializes,
// reads, writes, summarizes and deletes a share partition's state through
// the node's own handlers, retrying while the topic is created and loads.
func TestNodeShareCoordinator(t *testing.T) {
	n := startNode(t, "", shareNodeOverrides)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := n.client(t)
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "orders"); err != nil || r.Err != nil {
		t.Fatalf("create topic: %v %v", err, r.Err)
	}
	n.awaitLeader(t, "orders", 0, 1)
	topicID := n.cache.Image().TopicByName("orders").ID

	find := func(version int16, key string) kmsg.FindCoordinatorResponseCoordinator {
		t.Helper()
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = version, 2, []string{key}
		// franz-go sends the highest version both sides serve: pin it
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(10, version)
		resp, err := n.client(t, kgo.MaxVersions(vs)).Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
	}
	if c := find(6, "nonsense"); c.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("bad key: %+v", c)
	}
	key := sharestate.Key("sg", topicID, 0)
	if c := find(5, key); c.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("v5: %+v", c)
	}

	p := n.broker.sharePersister.(*sharePersister)
	p.backoff = 50 * time.Millisecond // the topic is being created: retry soon
	ireq := kmsg.NewPtrInitializeShareGroupStateRequest()
	ireq.GroupID = "sg"
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = topicID
	for part := int32(0); part < 2; part++ {
		ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
		ip.Partition, ip.StateEpoch, ip.StartOffset = part, 1, 5
		it.Partitions = append(it.Partitions, ip)
	}
	ireq.Topics = append(ireq.Topics, it)
	var iresp *kmsg.InitializeShareGroupStateResponse
	for deadline := time.Now().Add(30 * time.Second); ; {
		var err error
		if iresp, err = p.InitializeState(ctx, ireq); err != nil {
			t.Fatal(err)
		}
		if code := iresp.Topics[0].Partitions[0].ErrorCode; code == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, rp := range iresp.Topics[0].Partitions {
		if rp.ErrorCode != 0 {
			t.Fatalf("initialize: %+v", iresp.Topics[0].Partitions)
		}
	}
	if c := find(6, key); c.ErrorCode != 0 || c.NodeID != 1 {
		t.Fatalf("find: %+v", c)
	}

	rreq := kmsg.NewPtrReadShareGroupStateRequest()
	rreq.GroupID = "sg"
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = topicID
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = 1, 3
	rt.Partitions = append(rt.Partitions, rp)
	rreq.Topics = append(rreq.Topics, rt)
	rresp, err := p.ReadState(ctx, rreq)
	if err != nil || rresp.Topics[0].Partitions[0].ErrorCode != 0 || rresp.Topics[0].Partitions[0].StartOffset != 5 {
		t.Fatalf("read: %v %+v", err, rresp)
	}

	wreq := kmsg.NewPtrWriteShareGroupStateRequest()
	wreq.GroupID = "sg"
	wt := kmsg.NewWriteShareGroupStateRequestTopic()
	wt.TopicID = topicID
	wp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	wp.Partition, wp.LeaderEpoch, wp.StateEpoch, wp.StartOffset, wp.DeliveryCompleteCount = 1, 3, 1, 8, 0
	sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
	sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = 8, 12, 2, 1
	wp.StateBatches = append(wp.StateBatches, sb)
	wt.Partitions = append(wt.Partitions, wp)
	wreq.Topics = append(wreq.Topics, wt)
	wresp, err := p.WriteState(ctx, wreq)
	if err != nil || wresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("write: %v %+v", err, wresp)
	}
	// A stale leader is fenced; no retry for it.
	wp.LeaderEpoch = 2
	wreq.Topics[0].Partitions[0] = wp
	if wresp, err = p.WriteState(ctx, wreq); err != nil || wresp.Topics[0].Partitions[0].ErrorCode != kerr.FencedLeaderEpoch.Code {
		t.Fatalf("stale write: %v %+v", err, wresp)
	}

	sreq := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	sreq.GroupID = "sg"
	st := kmsg.NewReadShareGroupStateSummaryRequestTopic()
	st.TopicID = topicID
	for _, part := range []int32{1, 0} {
		sp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
		sp.Partition = part
		st.Partitions = append(st.Partitions, sp)
	}
	sreq.Topics = append(sreq.Topics, st)
	sresp, err := p.ReadStateSummary(ctx, sreq)
	if err != nil {
		t.Fatal(err)
	}
	got := sresp.Topics[0].Partitions
	if len(got) != 2 || got[0].Partition != 1 || got[0].StartOffset != 8 || got[0].LeaderEpoch != 3 || got[0].StateEpoch != 1 ||
		got[1].Partition != 0 || got[1].StartOffset != 5 || got[1].ErrorCode != 0 {
		t.Fatalf("summary: %+v", got)
	}

	dreq := kmsg.NewPtrDeleteShareGroupStateRequest()
	dreq.GroupID = "sg"
	dt := kmsg.NewDeleteShareGroupStateRequestTopic()
	dt.TopicID = topicID
	dp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
	dp.Partition = 1
	dt.Partitions = append(dt.Partitions, dp)
	dreq.Topics = append(dreq.Topics, dt)
	if dresp, err := p.DeleteState(ctx, dreq); err != nil || dresp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("delete: %v %+v", err, dresp)
	}
	if sresp, err = p.ReadStateSummary(ctx, sreq); err != nil || sresp.Topics[0].Partitions[0].StartOffset != -1 {
		t.Fatalf("summary after delete: %v %+v", err, sresp)
	}

	// Over the wire, as another broker sends it.
	raw, err := cl.Broker(1).Request(ctx, sreq)
	if err != nil || raw.(*kmsg.ReadShareGroupStateSummaryResponse).Topics[0].Partitions[1].StartOffset != 5 {
		t.Fatalf("wire summary: %v %+v", err, raw)
	}

	// A cancelled context is the only error.
	cctx, ccancel := context.WithCancel(ctx)
	ccancel()
	if _, err := p.ReadStateSummary(cctx, sreq); err == nil {
		t.Fatal("cancelled context: no error")
	}
}
