package broker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/sharecoord"
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
	// The padded form is a Uuid too, as java.util.Base64's URL decoder
	// reads it (kadm's TopicID.String pads).
	if _, tid, _, ok := parseShareKey("g:" + sharestate.UUIDString(id) + "==:1"); !ok || tid != id {
		t.Errorf("padded topic id: %v %v", tid, ok)
	}
	for _, bad := range []string{"", "g", "g:x", "g:" + sharestate.UUIDString(id) + "=:1", "g:" + sharestate.UUIDString(id) + "===:1", " :" + sharestate.UUIDString(id) + ":1", "g:notauuid:1", "g:" + sharestate.UUIDString(id) + ":x",
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

// TestShareStateAuthorization: the share state RPCs and FindCoordinator
// key type 2 need CLUSTER_ACTION (KafkaApis.authorizeClusterOperation).
func TestShareStateAuthorization(t *testing.T) {
	b := authzTestBroker(t, allowACL(resTopic, "t", "User:alice", opRead))
	id := [16]byte{9}
	w := kmsg.NewPtrWriteShareGroupStateRequest()
	w.GroupID = "sg"
	w.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: id, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	if r := callAs[*kmsg.WriteShareGroupStateResponse](t, b, "alice", w, 1); len(r.Topics[0].Partitions) != 2 ||
		r.Topics[0].Partitions[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice WriteShareGroupState: %+v", r.Topics)
	}
	rs := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	rs.GroupID = "sg"
	rs.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: id, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
	if r := callAs[*kmsg.ReadShareGroupStateSummaryResponse](t, b, "alice", rs, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice ReadShareGroupStateSummary: %+v", r.Topics)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKeys = 2, []string{sharestate.Key("sg", id, 0)}
	if r := callAs[*kmsg.FindCoordinatorResponse](t, b, "alice", fc, 6); r.Coordinators[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice FindCoordinator share: %+v", r.Coordinators)
	}
}

// TestSharePersisterRouting: partitions go to the leaders of their
// __share_group_state partitions, one request per leader; a coordinator
// error is retried after the backoff (found again: the leader moved), a
// broker that cannot be reached answers COORDINATOR_NOT_AVAILABLE once the
// attempts are spent, and the answers come back in the request's order.
func TestSharePersisterRouting(t *testing.T) {
	cache := metadatacache.NewCache(metadatacache.Config{})
	offset := int64(0)
	apply := func(recs ...metadatacache.Record) {
		t.Helper()
		if err := cache.Apply(metadatacache.Batch{BaseOffset: offset, LastOffset: offset + int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
			t.Fatal(err)
		}
		offset += int64(len(recs))
	}
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = "metadata.version", 27
	recs := []metadatacache.Record{fl}
	for id := int32(1); id <= 3; id++ {
		b := metadatacache.NewRegisterBrokerRecord()
		b.BrokerID, b.BrokerEpoch, b.Fenced = id, 10, false
		b.EndPoints = []metadatacache.BrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost", Port: uint16(9090 + id)}}
		recs = append(recs, b)
	}
	stateID := [16]byte{0x5}
	recs = append(recs, &metadatacache.TopicRecord{Name: sharecoord.TopicName, TopicID: stateID})
	for p := int32(0); p < 3; p++ {
		r := metadatacache.NewPartitionRecord()
		r.TopicID, r.PartitionID, r.Leader = stateID, p, p+1
		r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = []int32{p + 1}, []int32{p + 1}, []int32{}, []int32{}
		recs = append(recs, r)
	}
	apply(recs...)

	// Keys of group "sg" on topic id {7}: which leader each partition gets.
	topic := [16]byte{7}
	leaderOf := func(part int32) int32 { return sharecoord.PartitionFor(sharestate.Key("sg", topic, part), 3) + 1 }
	var parts []int32
	seen := map[int32]bool{}
	for part := int32(0); len(seen) < 3 && part < 100; part++ {
		if !seen[leaderOf(part)] {
			seen[leaderOf(part)] = true
			parts = append(parts, part)
		}
	}
	if len(parts) != 3 {
		t.Fatal("no partitions for every leader")
	}

	var mu sync.Mutex
	calls := map[int32]int{}
	p := &sharePersister{nodeID: 1, image: cache.Image, listener: "PLAINTEXT", logger: zap.NewNop(),
		backoff: time.Millisecond, maxBackoff: 4 * time.Millisecond, attempts: 3,
		versions: func(int16) int16 { return 1 }}
	p.send = func(_ context.Context, node int32, req kmsg.Request) (kmsg.Response, error) {
		mu.Lock()
		calls[node]++
		n := calls[node]
		mu.Unlock()
		r := req.(*kmsg.WriteShareGroupStateRequest)
		if node == 3 {
			return nil, errors.New("connection refused")
		}
		resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewWriteShareGroupStateResponseTopic()
			rt.TopicID = t.TopicID
			for _, pt := range t.Partitions {
				rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
				rp.Partition = pt.Partition
				if node == 2 && n == 1 {
					rp.ErrorCode = kerr.NotCoordinator.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.GroupID = "sg"
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = topic
	for i := len(parts) - 1; i >= 0; i-- { // not sorted by leader
		rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
		rp.Partition = parts[i]
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := p.WriteState(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for i, rp := range resp.Topics[0].Partitions {
		want := int16(0)
		if leaderOf(rp.Partition) == 3 {
			want = kerr.CoordinatorNotAvailable.Code
		}
		if rp.Partition != req.Topics[0].Partitions[i].Partition || rp.ErrorCode != want {
			t.Errorf("partition %d (leader %d): %+v, want code %d", rp.Partition, leaderOf(rp.Partition), rp, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if calls[1] != 1 || calls[2] != 2 || calls[3] != 3 {
		t.Fatalf("calls per node: %v", calls)
	}
}
