package group

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

type harness struct {
	t     *testing.T
	clock *ManualClock
	log   *coordinator.MemLog
	cache *metadatacache.Cache
	c     *Coordinator
	// groupConfig, when set, is the coordinator's Config.GroupConfig.
	groupConfig func(string) config.GroupConfig
}

var topicT = [16]byte{1, 2, 3}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, clock: NewManualClock(time.Unix(1_700_000_000, 0)), log: coordinator.NewMemLog(true),
		cache: metadatacache.NewCache(metadatacache.Config{})}
	offsetsID := [16]byte{9}
	recs := []metadatacache.Record{
		&metadatacache.TopicRecord{Name: OffsetsTopic, TopicID: offsetsID},
		part(offsetsID, 0),
		&metadatacache.TopicRecord{Name: "t", TopicID: topicT},
	}
	for p := int32(0); p < 4; p++ {
		recs = append(recs, part(topicT, p))
	}
	if err := h.cache.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs) - 1), Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	h.start()
	return h
}

func part(topic [16]byte, id int32) *metadatacache.PartitionRecord {
	r := metadatacache.NewPartitionRecord()
	r.TopicID, r.PartitionID = topic, id
	r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = []int32{1}, []int32{1}, []int32{}, []int32{}
	r.Leader, r.LeaderEpoch, r.PartitionEpoch = 1, 0, 0
	return r
}

// start (re)creates the coordinator on the same log and loads it. Tests
// run in a synctest bubble, so synctest.Wait returns once the partition's
// loop loaded and waits for work.
func (h *harness) start() {
	if h.c != nil {
		h.c.Close()
	}
	h.c = New(Config{NodeID: 1, Writer: h.log, Clock: h.clock, Image: h.cache.Image, OffsetsTopicPartitions: 1, GroupConfig: h.groupConfig})
	h.c.OnImage(nil, h.cache.Image())
	synctest.Wait()
	h.t.Cleanup(h.c.Close)
}

// advance moves the clock by d one timer deadline at a time, waiting
// after each for the loops to run what the timers queued (and to schedule
// what follows), so timer chains fire at their own deadlines.
func (h *harness) advance(d time.Duration) { advanceClock(h.clock, d) }

func advanceClock(clock *ManualClock, d time.Duration) {
	end := clock.Now().Add(d)
	for {
		synctest.Wait()
		next, ok := clock.Next()
		if !ok || next.After(end) {
			break
		}
		clock.Advance(max(next.Sub(clock.Now()), 0))
	}
	clock.Advance(end.Sub(clock.Now()))
	synctest.Wait()
}

func joinReq(group, member string, version int16) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = version
	r.Group, r.MemberID, r.ProtocolType = group, member, "consumer"
	r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 20000
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{"t"}
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = "range", meta.AppendTo(nil)
	r.Protocols = append(r.Protocols, p)
	return r
}

func (h *harness) join(r *kmsg.JoinGroupRequest) chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- h.c.JoinGroup(context.Background(), r, "client", "/127.0.0.1") }()
	return ch
}

func recv[T any](t *testing.T, ch chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no response")
		panic("unreachable")
	}
}

// isParked reports that nothing arrived on ch once every goroutine of the
// test's bubble is blocked: the request is parked.
func isParked[T any](t *testing.T, ch chan T) {
	t.Helper()
	synctest.Wait()
	select {
	case v := <-ch:
		t.Fatalf("expected the request to park, got %+v", v)
	default:
	}
}

func wantErr(t *testing.T, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Fatalf("error %v, want %v", kerr.ErrorForCode(got), want)
	}
}

// joinNew joins a new member (v4+ two-step join) and returns its id and
// the channel of its parked join.
func (h *harness) joinNew(group string) (string, chan *kmsg.JoinGroupResponse) {
	r := recv(h.t, h.join(joinReq(group, "", 5)))
	wantErr(h.t, r.ErrorCode, kerr.MemberIDRequired)
	return r.MemberID, h.join(joinReq(group, r.MemberID, 5))
}

func (h *harness) sync(group, member string, gen int32, assign map[string][]byte) chan *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group, r.MemberID, r.Generation = group, member, gen
	pt, pn := "consumer", "range"
	r.ProtocolType, r.Protocol = &pt, &pn
	for id, a := range assign {
		ga := kmsg.NewSyncGroupRequestGroupAssignment()
		ga.MemberID, ga.MemberAssignment = id, a
		r.GroupAssignment = append(r.GroupAssignment, ga)
	}
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- h.c.SyncGroup(context.Background(), r) }()
	return ch
}

func (h *harness) heartbeat(group, member string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID, r.Generation = group, member, gen
	return h.c.Heartbeat(r).ErrorCode
}

func TestPartitionForMatchesJava(t *testing.T) {
	if h := JavaStringHash("hello"); h != 99162322 {
		t.Fatalf("hash(hello) = %d", h)
	}
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE; Utils.abs -> 0.
	if h := JavaStringHash("polygenelubricants"); h != -1<<31 {
		t.Fatalf("hash = %d", h)
	}
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Fatalf("partition = %d", p)
	}
	// Negative hash: Math.abs, not masking.
	h := JavaStringHash("console-consumer-12345")
	want := h
	if want < 0 {
		want = -want
	}
	if p := PartitionFor("console-consumer-12345", 50); p != want%50 {
		t.Fatalf("partition = %d, want %d", p, want%50)
	}
}

func TestClassicJoinSyncHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		id1, j1 := h.joinNew("g")
		// Initial rebalance: parked for group.initial.rebalance.delay.ms.
		isParked(t, j1)
		h.advance(3 * time.Second)
		r1 := recv(t, j1)
		wantErr(t, r1.ErrorCode, nil)
		if r1.Generation != 1 || r1.LeaderID != id1 || len(r1.Members) != 1 || *r1.Protocol != "range" {
			t.Fatalf("join: %+v", r1)
		}
		s1 := recv(t, h.sync("g", id1, 1, map[string][]byte{id1: []byte("a1")}))
		wantErr(t, s1.ErrorCode, nil)
		if string(s1.MemberAssignment) != "a1" {
			t.Fatalf("assignment %q", s1.MemberAssignment)
		}
		wantErr(t, h.heartbeat("g", id1, 1), nil)
		wantErr(t, h.heartbeat("g", id1, 0), kerr.IllegalGeneration)
		wantErr(t, h.heartbeat("g", "nobody", 1), kerr.UnknownMemberID)
		wantErr(t, h.heartbeat("nogroup", id1, 1), kerr.UnknownMemberID)

		// A second member: the group rebalances; the first learns through its
		// heartbeat and rejoins; the join completes without the initial delay.
		id2, j2 := h.joinNew("g")
		isParked(t, j2)
		wantErr(t, h.heartbeat("g", id1, 1), kerr.RebalanceInProgress)
		j1 = h.join(joinReq("g", id1, 5))
		r1, r2 := recv(t, j1), recv(t, j2)
		if r1.Generation != 2 || r2.Generation != 2 || r1.LeaderID != id1 || len(r1.Members) != 2 || len(r2.Members) != 0 {
			t.Fatalf("joins: %+v / %+v", r1, r2)
		}
		// The follower parks until the leader syncs.
		sc2 := h.sync("g", id2, 2, nil)
		isParked(t, sc2)
		s1 = recv(t, h.sync("g", id1, 2, map[string][]byte{id1: []byte("x"), id2: []byte("y")}))
		s2 := recv(t, sc2)
		if string(s1.MemberAssignment) != "x" || string(s2.MemberAssignment) != "y" {
			t.Fatalf("syncs: %q %q", s1.MemberAssignment, s2.MemberAssignment)
		}

		// Member 2 stops heartbeating: after its session timeout it is removed
		// and member 1 rebalances alone.
		h.advance(5 * time.Second)
		wantErr(t, h.heartbeat("g", id1, 2), nil)
		h.advance(6 * time.Second)
		wantErr(t, h.heartbeat("g", id1, 2), kerr.RebalanceInProgress)
		r1 = recv(t, h.join(joinReq("g", id1, 5)))
		if r1.Generation != 3 || len(r1.Members) != 1 {
			t.Fatalf("after expiry: %+v", r1)
		}

		// DescribeGroups while CompletingRebalance: no protocol, no metadata.
		dg := h.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 5, Groups: []string{"g", "missing"}})
		if g := dg.Groups[0]; g.State != "CompletingRebalance" || g.Protocol != "" || len(g.Members) != 1 {
			t.Fatalf("describe: %+v", g)
		}
		if g := dg.Groups[1]; g.State != "Dead" || g.ErrorCode != 0 {
			t.Fatalf("describe missing: %+v", g)
		}
		dg = h.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"missing"}})
		wantErr(t, dg.Groups[0].ErrorCode, kerr.GroupIDNotFound)

		// Leaving empties the group; DeleteGroups then works.
		del := h.c.DeleteGroups(context.Background(), &kmsg.DeleteGroupsRequest{Groups: []string{"g"}})
		wantErr(t, del.Groups[0].ErrorCode, kerr.NonEmptyGroup)
		lr := h.c.LeaveGroup(&kmsg.LeaveGroupRequest{Version: 3, Group: "g", Members: []kmsg.LeaveGroupRequestMember{{MemberID: id1}, {MemberID: "ghost"}}})
		wantErr(t, lr.ErrorCode, nil)
		wantErr(t, lr.Members[0].ErrorCode, nil)
		wantErr(t, lr.Members[1].ErrorCode, kerr.UnknownMemberID)
		lg := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
		if len(lg.Groups) != 1 || lg.Groups[0].GroupState != "Empty" || lg.Groups[0].GroupType != "classic" || lg.Groups[0].ProtocolType != "consumer" {
			t.Fatalf("list: %+v", lg.Groups)
		}
		lg = h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5, StatesFilter: []string{"stable"}})
		if len(lg.Groups) != 0 {
			t.Fatalf("filtered list: %+v", lg.Groups)
		}
		del = h.c.DeleteGroups(context.Background(), &kmsg.DeleteGroupsRequest{Groups: []string{"g", "g"}})
		wantErr(t, del.Groups[0].ErrorCode, nil)
		wantErr(t, del.Groups[1].ErrorCode, kerr.GroupIDNotFound)
	})
}

func TestClassicJoinErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		r := recv(t, h.join(joinReq("", "", 5)))
		wantErr(t, r.ErrorCode, kerr.InvalidGroupID)
		bad := joinReq("g", "", 5)
		bad.SessionTimeoutMillis = 10
		wantErr(t, recv(t, h.join(bad)).ErrorCode, kerr.InvalidSessionTimeout)
		wantErr(t, recv(t, h.join(joinReq("g", "unknown", 5))).ErrorCode, kerr.UnknownMemberID)
		// v3 joins directly, without MEMBER_ID_REQUIRED.
		j := h.join(joinReq("g", "", 3))
		isParked(t, j)
		h.advance(3 * time.Second)
		r = recv(t, j)
		wantErr(t, r.ErrorCode, nil)
		// A different protocol type does not fit the group.
		other := joinReq("g", "", 5)
		other.ProtocolType = "connect"
		wantErr(t, recv(t, h.join(other)).ErrorCode, kerr.InconsistentGroupProtocol)
	})
}

func TestStaticMemberReplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		inst := "instance-1"
		req := joinReq("g", "", 5)
		req.InstanceID = &inst
		j := h.join(req)
		isParked(t, j)
		h.advance(3 * time.Second)
		r := recv(t, j)
		wantErr(t, r.ErrorCode, nil)
		old := r.MemberID
		recv(t, h.sync("g", old, r.Generation, map[string][]byte{old: []byte("a")}))
		// The same instance comes back with no member id: it replaces the old
		// member without a rebalance and keeps the assignment.
		r2 := recv(t, h.join(req))
		wantErr(t, r2.ErrorCode, nil)
		if r2.MemberID == old || r2.Generation != r.Generation {
			t.Fatalf("rejoin: %+v", r2)
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", old, r.Generation, &inst
		wantErr(t, h.c.Heartbeat(hb).ErrorCode, kerr.FencedInstanceID)
		hb.MemberID = r2.MemberID
		wantErr(t, h.c.Heartbeat(hb).ErrorCode, nil)
		s := recv(t, h.sync("g", r2.MemberID, r2.Generation, nil))
		if string(s.MemberAssignment) != "a" {
			t.Fatalf("assignment after replacement: %q", s.MemberAssignment)
		}
	})
}

func commitReq(group, member string, gen int32, topic string, part int32, off int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group, r.MemberID, r.Generation = group, member, gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = part, off, 3
	md := "meta"
	p.Metadata = &md
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func (h *harness) fetch(group string) map[int32]int64 {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = group
	g.Topics = nil
	r.Groups = append(r.Groups, g)
	resp := h.c.OffsetFetch(r)
	out := map[int32]int64{}
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

func TestOffsetsCommitFetchReloadExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		resp := h.c.OffsetCommit(commitReq("simple", "", -1, "t", 1, 42))
		wantErr(t, resp.Topics[0].Partitions[0].ErrorCode, nil)
		wantErr(t, h.c.OffsetCommit(commitReq("simple", "", -1, "nope", 0, 1)).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		wantErr(t, h.c.OffsetCommit(commitReq("simple", "", -1, "t", 9, 1)).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)
		wantErr(t, h.c.OffsetCommit(commitReq("", "", -1, "t", 0, 1)).Topics[0].Partitions[0].ErrorCode, kerr.InvalidGroupID)
		wantErr(t, h.c.OffsetCommit(commitReq("nogroup", "m", 3, "t", 0, 1)).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
		v9 := commitReq("nogroup", "m", 3, "t", 0, 1)
		v9.Version = 9
		wantErr(t, h.c.OffsetCommit(v9).Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound)

		if got := h.fetch("simple"); got[1] != 42 || len(got) != 1 {
			t.Fatalf("fetch: %v", got)
		}
		// OffsetFetch v1-7 with explicit partitions: unknown ones are -1.
		of := kmsg.NewPtrOffsetFetchRequest()
		of.Version = 5
		of.Group = "simple"
		of.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
		fr := h.c.OffsetFetch(of)
		if p := fr.Topics[0].Partitions; p[0].Offset != -1 || p[1].Offset != 42 || p[1].LeaderEpoch != 3 || *p[1].Metadata != "meta" {
			t.Fatalf("fetch v5: %+v", fr.Topics)
		}

		// A group member's commit needs the right generation.
		id, j := h.joinNew("g")
		isParked(t, j)
		h.advance(3 * time.Second)
		jr := recv(t, j)
		wantErr(t, h.c.OffsetCommit(commitReq("g", id, jr.Generation, "t", 0, 5)).Topics[0].Partitions[0].ErrorCode, kerr.RebalanceInProgress)
		recv(t, h.sync("g", id, jr.Generation, nil))
		wantErr(t, h.c.OffsetCommit(commitReq("g", id, jr.Generation, "t", 0, 5)).Topics[0].Partitions[0].ErrorCode, nil)
		wantErr(t, h.c.OffsetCommit(commitReq("g", id, jr.Generation+1, "t", 0, 5)).Topics[0].Partitions[0].ErrorCode, kerr.IllegalGeneration)
		wantErr(t, h.c.OffsetCommit(commitReq("g", "", -1, "t", 0, 5)).Topics[0].Partitions[0].ErrorCode, kerr.UnknownMemberID)

		// OffsetDelete refuses topics the group subscribes to.
		od := h.c.OffsetDelete(&kmsg.OffsetDeleteRequest{Group: "g", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}})
		wantErr(t, od.ErrorCode, nil)
		wantErr(t, od.Topics[0].Partitions[0].ErrorCode, kerr.GroupSubscribedToTopic)

		// Reload from the log: offsets and the group come back.
		h.start()
		if got := h.fetch("g"); got[0] != 5 {
			t.Fatalf("after reload: %v", got)
		}
		if got := h.fetch("simple"); got[1] != 42 {
			t.Fatalf("after reload: %v", got)
		}
		wantErr(t, h.heartbeat("g", id, jr.Generation), nil)

		// Retention: the simple group's offset expires 7 days after its commit.
		h.advance(7*24*time.Hour + time.Minute)
		h.c.ExpireOffsets()
		if got := h.fetch("simple"); len(got) != 0 {
			t.Fatalf("not expired: %v", got)
		}
		lg := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
		for _, g := range lg.Groups {
			if g.Group == "simple" {
				t.Fatalf("simple group not deleted: %+v", lg.Groups)
			}
		}
	})
}

func TestNotCoordinator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.c.OnImage(nil, metadatacache.EmptyImage(""))
		wantErr(t, h.heartbeat("g", "m", 1), kerr.NotCoordinator)
		wantErr(t, recv(t, h.join(joinReq("g", "", 5))).ErrorCode, kerr.NotCoordinator)
	})
}

func TestDeletedTopicOffsetsRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		wantErr(t, h.c.OffsetCommit(commitReq("simple", "", -1, "t", 1, 42)).Topics[0].Partitions[0].ErrorCode, nil)
		old := h.cache.Image()
		if err := h.cache.Apply(metadatacache.Batch{BaseOffset: old.Offset + 1, LastOffset: old.Offset + 1, Epoch: 1,
			Records: []metadatacache.Record{&metadatacache.RemoveTopicRecord{TopicID: topicT}}}); err != nil {
			t.Fatal(err)
		}
		h.c.OnImage(old, h.cache.Image())
		if got := h.fetch("simple"); len(got) != 0 {
			t.Fatalf("offsets of a deleted topic remain: %v", got)
		}
		h.start()
		if got := h.fetch("simple"); len(got) != 0 {
			t.Fatalf("offsets of a deleted topic came back: %v", got)
		}
	})
}

func TestGroupMaxSize(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.c.cfg.MaxSize = 1
		_, j := h.joinNew("g")
		isParked(t, j)
		h.advance(3 * time.Second)
		wantErr(t, recv(t, j).ErrorCode, nil)
		// A second member does not fit; the pending id is not even handed out
		// once the group is full.
		r := recv(t, h.join(joinReq("g", "", 3)))
		wantErr(t, r.ErrorCode, kerr.GroupMaxSizeReached)
	})
}

func TestPendingSyncExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		id1, j1 := h.joinNew("g")
		id2, j2 := h.joinNew("g")
		isParked(t, j1)
		h.advance(3 * time.Second)
		r1, r2 := recv(t, j1), recv(t, j2)
		if r1.Generation != 1 || r2.Generation != 1 {
			t.Fatalf("joins: %+v %+v", r1, r2)
		}
		leader, follower := id1, id2
		if r1.LeaderID != id1 {
			leader, follower = id2, id1
		}
		// Only the follower syncs; the leader never does. After the rebalance
		// timeout (20 s) the leader is removed and the group rebalances.
		sc := h.sync("g", follower, 1, nil)
		isParked(t, sc)
		h.advance(21 * time.Second)
		wantErr(t, recv(t, sc).ErrorCode, kerr.RebalanceInProgress)
		wantErr(t, h.heartbeat("g", leader, 1), kerr.UnknownMemberID)
	})
}

// blockingLog holds Read (the load) until release is closed.
type blockingLog struct {
	*coordinator.MemLog
	release chan struct{}
}

func (b *blockingLog) Read(tp coordinator.TopicPartition, fn func(coordinator.Loaded) error) (int64, error) {
	<-b.release
	return b.MemLog.Read(tp, fn)
}

func TestLoadInProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		wantErr(t, h.c.OffsetCommit(commitReq("simple", "", -1, "t", 0, 7)).Topics[0].Partitions[0].ErrorCode, nil)
		h.c.Close()
		bs := &blockingLog{MemLog: h.log, release: make(chan struct{})}
		c := New(Config{NodeID: 1, Writer: bs, Clock: h.clock, Image: h.cache.Image, OffsetsTopicPartitions: 1})
		defer c.Close()
		c.OnImage(nil, h.cache.Image())
		wantErr(t, c.Heartbeat(&kmsg.HeartbeatRequest{Group: "g", MemberID: "m"}).ErrorCode, kerr.CoordinatorLoadInProgress)
		wantErr(t, c.ListGroups(&kmsg.ListGroupsRequest{}).ErrorCode, kerr.CoordinatorLoadInProgress)
		if id, err := c.FindCoordinator("g"); err != nil || id != 1 {
			t.Fatalf("FindCoordinator while loading: %d %v", id, err)
		}
		close(bs.release)
		synctest.Wait()
		h.c = c
		if got := h.fetch("simple"); got[0] != 7 {
			t.Fatalf("after load: %v", got)
		}
	})
}

func TestEmptyClassicGroupOffsetsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		req := joinReq("g", "", 5)
		req.SessionTimeoutMillis = 1800000
		r := recv(t, h.join(req))
		req.MemberID = r.MemberID
		id, j := r.MemberID, h.join(req)
		isParked(t, j)
		h.advance(3 * time.Second)
		jr := recv(t, j)
		recv(t, h.sync("g", id, jr.Generation, nil))
		wantErr(t, h.c.OffsetCommit(commitReq("g", id, jr.Generation, "t", 0, 5)).Topics[0].Partitions[0].ErrorCode, nil)
		// While the member is there (Stable, subscribed to t) nothing expires.
		for i := 0; i < 8*24*3; i++ {
			h.advance(20 * time.Minute)
			wantErr(t, h.heartbeat("g", id, jr.Generation), nil)
		}
		h.c.ExpireOffsets()
		if got := h.fetch("g"); got[0] != 5 {
			t.Fatalf("expired while subscribed: %v", got)
		}
		// The group empties; retention counts from then.
		h.c.LeaveGroup(&kmsg.LeaveGroupRequest{Group: "g", MemberID: id})
		h.advance(6 * 24 * time.Hour)
		h.c.ExpireOffsets()
		if got := h.fetch("g"); got[0] != 5 {
			t.Fatalf("expired too early: %v", got)
		}
		h.advance(25 * time.Hour)
		h.c.ExpireOffsets()
		if got := h.fetch("g"); len(got) != 0 {
			t.Fatalf("not expired: %v", got)
		}
		if dg := h.c.DescribeGroups(&kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"g"}}); dg.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("empty group without offsets not deleted: %+v", dg.Groups[0])
		}
	})
}

// TestOffsetsByTopicID: OffsetCommit and OffsetFetch v10 name topics by id
// (KIP-848); unknown ids answer UNKNOWN_TOPIC_ID, and all-topics fetches
// carry each topic's id.
func TestOffsetsByTopicID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		c := commitReq("simple", "", -1, "", 1, 42)
		c.Version = 10
		c.Topics[0].TopicID = topicT
		resp := h.c.OffsetCommit(c)
		if rt := resp.Topics[0]; rt.TopicID != topicT || rt.Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit by id: %+v", rt)
		}
		unknown := commitReq("simple", "", -1, "t", 1, 43) // a name alone means nothing at v10
		unknown.Version = 10
		wantErr(t, h.c.OffsetCommit(unknown).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicID)
		wrongPart := commitReq("simple", "", -1, "", 9, 1)
		wrongPart.Version, wrongPart.Topics[0].TopicID = 10, topicT
		wantErr(t, h.c.OffsetCommit(wrongPart).Topics[0].Partitions[0].ErrorCode, kerr.UnknownTopicOrPartition)

		f := kmsg.NewPtrOffsetFetchRequest()
		f.Version = 10
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "simple"
		g.Topics = []kmsg.OffsetFetchRequestGroupTopic{{TopicID: topicT, Partitions: []int32{0, 1}}, {TopicID: [16]byte{42}, Partitions: []int32{0}}}
		f.Groups = append(f.Groups, g)
		fr := h.c.OffsetFetch(f).Groups[0]
		if len(fr.Topics) != 2 || fr.Topics[0].TopicID != topicT || fr.Topics[0].Partitions[1].Offset != 42 || fr.Topics[0].Partitions[0].Offset != -1 {
			t.Fatalf("fetch by id: %+v", fr.Topics)
		}
		if p := fr.Topics[1].Partitions[0]; fr.Topics[1].TopicID != ([16]byte{42}) || p.ErrorCode != kerr.UnknownTopicID.Code || p.Offset != -1 {
			t.Fatalf("unknown id: %+v", fr.Topics[1])
		}
		f.Groups[0].Topics = nil
		all := h.c.OffsetFetch(f).Groups[0]
		if len(all.Topics) != 1 || all.Topics[0].TopicID != topicT || all.Topics[0].Partitions[0].Offset != 42 {
			t.Fatalf("all topics by id: %+v", all.Topics)
		}
	})
}
