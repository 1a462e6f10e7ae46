package group

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
)

func (h *harness) cgHeartbeat(member string, epoch int32, owned []int32, join bool) *kmsg.ConsumerGroupHeartbeatResponse {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = "cg", member, epoch
	if join {
		r.RebalanceTimeoutMillis = 30000
		r.SubscribedTopicNames = []string{"t"}
	}
	if owned != nil || join {
		t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
		t.TopicID, t.Partitions = topicT, owned
		if len(owned) > 0 {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{t}
		} else {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
	}
	return h.c.ConsumerGroupHeartbeat(r, "client", "/127.0.0.1")
}

func parts(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
	if r.Assignment == nil {
		return nil
	}
	var out []int32
	for _, t := range r.Assignment.Topics {
		out = append(out, t.Partitions...)
	}
	if out == nil {
		out = []int32{}
	}
	return out
}

func TestConsumerGroupReconciliation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		a := h.cgHeartbeat("A", 0, nil, true)
		wantErr(t, a.ErrorCode, nil)
		if a.MemberEpoch != 1 || len(parts(a)) != 4 || a.HeartbeatIntervalMillis != 5000 {
			t.Fatalf("A joined: epoch %d parts %v", a.MemberEpoch, parts(a))
		}
		// B joins: the target splits 2/2, but A still owns everything, so B
		// gets nothing yet.
		b := h.cgHeartbeat("B", 0, nil, true)
		wantErr(t, b.ErrorCode, nil)
		if b.MemberEpoch != 2 || len(parts(b)) != 0 {
			t.Fatalf("B joined: epoch %d parts %v", b.MemberEpoch, parts(b))
		}
		// A must revoke two partitions first: its epoch stays 1.
		a = h.cgHeartbeat("A", 1, []int32{0, 1, 2, 3}, false)
		wantErr(t, a.ErrorCode, nil)
		if a.MemberEpoch != 1 || len(parts(a)) != 2 {
			t.Fatalf("A revoking: epoch %d parts %v %+v %v", a.MemberEpoch, parts(a), a, kerr.ErrorForCode(a.ErrorCode))
		}
		kept := parts(a)
		lg := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5})
		if lg.Groups[0].GroupState != "Reconciling" || lg.Groups[0].GroupType != "consumer" {
			t.Fatalf("list: %+v", lg.Groups)
		}
		// A reports the revocation done: it moves to epoch 2.
		a = h.cgHeartbeat("A", 1, kept, false)
		if a.MemberEpoch != 2 {
			t.Fatalf("A after revoking: epoch %d", a.MemberEpoch)
		}
		// B now gets the released partitions.
		b = h.cgHeartbeat("B", 2, []int32{}, false)
		if b.MemberEpoch != 2 || len(parts(b)) != 2 {
			t.Fatalf("B after release: epoch %d parts %v", b.MemberEpoch, parts(b))
		}
		d := h.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"cg", "nope"}})
		g := d.Groups[0]
		if g.State != "Stable" || g.Epoch != 2 || g.AssignmentEpoch != 2 || g.AssignorName != "uniform" || len(g.Members) != 2 {
			t.Fatalf("describe: %+v", g)
		}
		if g.Members[0].Assignment.TopicPartitions[0].Topic != "t" || g.Members[0].MemberType != 1 {
			t.Fatalf("describe member: %+v", g.Members[0])
		}
		wantErr(t, d.Groups[1].ErrorCode, kerr.GroupIDNotFound)

		// Errors.
		wantErr(t, h.cgHeartbeat("A", 7, kept, false).ErrorCode, kerr.FencedMemberEpoch)
		wantErr(t, h.cgHeartbeat("Z", 3, nil, false).ErrorCode, kerr.UnknownMemberID)
		bad := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		bad.Group, bad.MemberEpoch, bad.RebalanceTimeoutMillis = "cg", 0, 1000
		if r := h.c.ConsumerGroupHeartbeat(bad, "c", "h"); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil {
			t.Fatalf("invalid request: %+v", r)
		}

		// Offsets: the current epoch commits; an older one only for partitions
		// owned since then; a newer one is stale.
		commit := func(member string, epoch int32, p int32) int16 {
			r := commitReq("cg", member, epoch, "t", p, 10)
			r.Version = 9
			return h.c.OffsetCommit(r).Topics[0].Partitions[0].ErrorCode
		}
		wantErr(t, commit("A", 2, kept[0]), nil)
		wantErr(t, commit("A", 3, kept[0]), kerr.StaleMemberEpoch)
		wantErr(t, commit("A", 1, kept[0]), nil)
		wantErr(t, commit("B", 1, parts(b)[0]), kerr.StaleMemberEpoch)
		wantErr(t, commit("nobody", 2, 0), kerr.UnknownMemberID)

		// Reload keeps members and epochs.
		h.start()
		b = h.cgHeartbeat("B", 2, parts(b), false)
		wantErr(t, b.ErrorCode, nil)
		if b.MemberEpoch != 2 {
			t.Fatalf("B after reload: %+v", b)
		}

		// A leaves: B takes everything at the next epoch.
		a = h.cgHeartbeat("A", -1, nil, false)
		wantErr(t, a.ErrorCode, nil)
		if a.MemberEpoch != -1 {
			t.Fatalf("leave: %+v", a)
		}
		b = h.cgHeartbeat("B", 2, parts(b), false)
		if b.MemberEpoch != 3 || len(parts(b)) != 4 {
			t.Fatalf("B alone: epoch %d parts %v", b.MemberEpoch, parts(b))
		}
		// B stops heartbeating: fenced after the session timeout; the group
		// is empty and can be deleted.
		h.advance(46 * time.Second)
		d = h.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"cg"}})
		if d.Groups[0].State != "Empty" {
			t.Fatalf("after session timeout: %+v", d.Groups[0])
		}
		del := h.c.DeleteGroups(context.Background(), &kmsg.DeleteGroupsRequest{Groups: []string{"cg"}})
		wantErr(t, del.Groups[0].ErrorCode, nil)
		h.start()
		if lg := h.c.ListGroups(&kmsg.ListGroupsRequest{Version: 5}); len(lg.Groups) != 0 {
			t.Fatalf("deleted group came back: %+v", lg.Groups)
		}
	})
}

func TestAssignors(t *testing.T) {
	t1, t2 := [16]byte{1}, [16]byte{2}
	topics := map[string]assignTopic{"a": {t1, 6}, "b": {t2, 3}}
	ms := []assignMember{{id: "m1", topics: []string{"a", "b"}}, {id: "m2", topics: []string{"a", "b"}}, {id: "m3", topics: []string{"a"}}}
	u := assign("uniform", ms, topics, nil)
	total := 0
	for id, s := range u {
		total += len(s)
		if len(s) != 3 {
			t.Errorf("uniform: %s has %d partitions, want 3", id, len(s))
		}
	}
	if total != 9 {
		t.Fatalf("uniform assigned %d of 9", total)
	}
	for x := range u["m3"] {
		if x.id != t1 {
			t.Fatalf("m3 got a partition of a topic it does not subscribe to")
		}
	}
	// Sticky: with m3 gone, m1 and m2 keep what they had.
	u2 := assign("uniform", ms[:2], topics, u)
	for _, id := range []string{"m1", "m2"} {
		for x := range u[id] {
			if _, ok := u2[id][x]; !ok {
				t.Errorf("uniform moved %v away from %s", x, id)
			}
		}
	}
	r := assign("range", []assignMember{{id: "x", topics: []string{"a"}}, {id: "y", topics: []string{"a"}}, {id: "z", topics: []string{"a"}}}, topics, nil)
	for _, id := range []string{"x", "y", "z"} {
		if len(r[id]) != 2 {
			t.Fatalf("range: %v", r)
		}
	}
	if _, ok := r["x"][tp{t1, 0}]; !ok {
		t.Fatalf("range: x should own a-0: %v", r)
	}
}

// TestConsumerGroupConfigOverrides: a group's consumer.session.timeout.ms
// and consumer.heartbeat.interval.ms GROUP configs replace the broker's
// for its members (GroupMetadataManager reads GroupConfigManager on each
// heartbeat); other groups keep the broker's.
func TestConsumerGroupConfigOverrides(t *testing.T) {
	bc, err := config.SingleNode(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	synctest.Test(t, func(t *testing.T) {
		h := &harness{t: t, clock: NewManualClock(time.Unix(1_700_000_000, 0))}
		h.groupConfig = func(id string) config.GroupConfig {
			if id != "cg" {
				return bc.ResolveGroupConfig(nil)
			}
			return bc.ResolveGroupConfig(map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"})
		}
		base := newHarness(t)
		base.c.Close()
		h.log, h.cache = base.log, base.cache
		h.start()
		a := h.cgHeartbeat("A", 0, nil, true)
		wantErr(t, a.ErrorCode, nil)
		if a.HeartbeatIntervalMillis != 6000 {
			t.Fatalf("heartbeat interval %d, want the group's 6000", a.HeartbeatIntervalMillis)
		}
		// Still a member after the broker's 45 s, fenced after the group's 50 s.
		h.advance(46 * time.Second)
		if d := h.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"cg"}}); len(d.Groups[0].Members) != 1 {
			t.Fatalf("after 46 s: %+v", d.Groups[0])
		}
		h.advance(5 * time.Second)
		if d := h.c.ConsumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"cg"}}); d.Groups[0].State != "Empty" {
			t.Fatalf("after 51 s: %+v", d.Groups[0])
		}
	})
}
