//go:build integration

package integration

// StreamsGroupHeartbeat (KIP-1071) with bad input, sent raw with franz-go's
// kmsg: a stale or future member epoch, an unknown member id (and one that
// left), requests missing what a join needs, an invalid topology, topology
// changes (Kafka 4.4 has no topology updates), and a join of a consumer
// group. The error codes and messages asserted are Apache Kafka 4.4's,
// recorded in reference mode. Not asserted, because Kafka 4.4 answers
// UNKNOWN_SERVER_ERROR (an exception in its validation, not a designed
// answer): a copartition group with a source topic index out of range, and a
// topology epoch of -1.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsHeartbeat sends one StreamsGroupHeartbeat and returns the answer;
// a transport error fails the test. It goes to the seed broker, the
// coordinator of a single node (franz-go 1.22 does not route this request).
func streamsHeartbeat(t *testing.T, cl *kgo.Client, req *kmsg.StreamsGroupHeartbeatRequest) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	resp, err := cl.SeedBrokers()[0].Request(ctxT(t, 30*time.Second), req)
	if err != nil {
		t.Fatalf("StreamsGroupHeartbeat (group %s, member %s, epoch %d): %v", req.Group, req.MemberID, req.MemberEpoch, err)
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse)
}

// streamsJoin is the heartbeat of a member (re-)joining group with a
// topology of one subtopology reading source.
func streamsJoin(group, member, process, source string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis = 30000
	req.ProcessID = kmsg.StringPtr(process)
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{
		SubtopologyID: "0", SourceTopics: []string{source},
	}}}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

// streamsBeat is a steady-state heartbeat of member at epoch (no topology,
// every other field unchanged).
func streamsBeat(group, member string, epoch int32) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	req.RebalanceTimeoutMillis = -1
	return req
}

func hbAnswer(r *kmsg.StreamsGroupHeartbeatResponse) string {
	msg := "<null>"
	if r.ErrorMessage != nil {
		msg = fmt.Sprintf("%q", *r.ErrorMessage)
	}
	return fmt.Sprintf("error %d (%v) message %s member epoch %d", r.ErrorCode, kerr.ErrorForCode(r.ErrorCode), msg, r.MemberEpoch)
}

func TestStreamsGroupHeartbeatErrors(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{Overrides: streamsOverrides(nil)})
	const topic, group = "it-sg-hb-in", "it-sg-hb"
	createTopic(t, b, topic, 2, nil)
	requireStreamsAPIs(t, b.Addr)
	cl := b.Client()
	awaitCoordinator(t, cl, group)

	// A member joins: an epoch >= 1 (Kafka 4.4 answers 2) and, in that
	// answer or a later one, both tasks of subtopology 0.
	const member = "itSgHbMember1aaaaaaaaa"
	resp := streamsHeartbeat(t, cl, streamsJoin(group, member, "it-sg-hb-process-1", topic))
	t.Logf("join: %s, status %+v, active tasks %+v", hbAnswer(resp), resp.Status, resp.ActiveTasks)
	if resp.ErrorCode != 0 || resp.MemberEpoch < 1 || resp.MemberID != member {
		t.Fatalf("join: %s, member id %q; want no error, epoch >= 1, member id %s", hbAnswer(resp), resp.MemberID, member)
	}
	// The assignment comes in the answer that changes it (null: unchanged).
	epoch, active := resp.MemberEpoch, resp.ActiveTasks
	previous := int32(0) // the member's epoch before the current one
	waitFor(t, 30*time.Second, "the member to be assigned both tasks", func() error {
		if len(active) == 1 && active[0].SubtopologyID == "0" && len(active[0].Partitions) == 2 {
			return nil
		}
		req := streamsBeat(group, member, epoch)
		if active != nil {
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = active, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
		r := streamsHeartbeat(t, cl, req)
		if r.ErrorCode != 0 {
			t.Fatalf("heartbeat at epoch %d: %s", epoch, hbAnswer(r))
		}
		if r.MemberEpoch != epoch {
			previous, epoch = epoch, r.MemberEpoch
		}
		if r.ActiveTasks != nil {
			active = r.ActiveTasks
		}
		return fmt.Errorf("epoch %d, active tasks %+v, status %+v", r.MemberEpoch, active, r.Status)
	})

	// A consumer group with a live member (franz-go's classic protocol).
	const classic = "it-sg-hb-classic"
	consumer := b.Client(kgo.ConsumerGroup(classic), kgo.ConsumeTopics(topic))
	waitFor(t, 60*time.Second, "the consumer of "+classic+" to be Stable", func() error {
		pctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		consumer.PollFetches(pctx)
		cancel()
		ds, err := b.Admin().DescribeGroups(ctxT(t, 10*time.Second), classic)
		if err != nil {
			return err
		}
		if g := ds[classic]; g.State != "Stable" || len(g.Members) != 1 {
			return fmt.Errorf("state %q with %d members", g.State, len(g.Members))
		}
		return nil
	})

	type hbCase struct {
		name string
		req  *kmsg.StreamsGroupHeartbeatRequest
		code int16
		msg  string
	}
	bad := func(id string, mod func(r *kmsg.StreamsGroupHeartbeatRequest)) *kmsg.StreamsGroupHeartbeatRequest {
		r := streamsJoin(group+"-"+id, "itSgHb"+id+"aaaaaaaaaaaaaaaa"[:16-len(id)], "p-"+id, topic)
		mod(r)
		return r
	}
	cases := []hbCase{
		{"a future member epoch", streamsBeat(group, member, epoch+1), kerr.FencedMemberEpoch.Code,
			fmt.Sprintf("The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch+1, epoch)},
		{"an unknown member id", streamsBeat(group, "itSgHbNobodyaaaaaaaaaa", 1), kerr.UnknownMemberID.Code,
			"Member itSgHbNobodyaaaaaaaaaa is not a member of group " + group + "."},
		{"a subtopology without source topics", bad("nosrc", func(r *kmsg.StreamsGroupHeartbeatRequest) {
			r.Topology.Subtopologies[0].SourceTopics = nil
		}), kerr.StreamsInvalidTopology.Code, "No source topics found for subtopology 0"},
		{"a join without a topology", bad("notopo", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.Topology = nil }),
			kerr.InvalidRequest.Code, "Topology must be non-null when (re-)joining."},
		{"a join without a rebalance timeout", bad("norebal", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }),
			kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."},
		{"a join with a null task list", bad("owned", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.ActiveTasks = nil }),
			kerr.InvalidRequest.Code, "ActiveTasks must be empty when (re-)joining."},
		{"an empty member id", bad("noid", func(r *kmsg.StreamsGroupHeartbeatRequest) { r.MemberID = "" }),
			kerr.InvalidRequest.Code, "MemberId can't be empty."},
		// Kafka 4.4 has no topology updates: a changed topology or a new
		// topology epoch is refused with INVALID_REQUEST (not
		// STREAMS_INVALID_TOPOLOGY_EPOCH), a topology outside a join too.
		{"a topology in a steady heartbeat", func() *kmsg.StreamsGroupHeartbeatRequest {
			r := streamsBeat(group, member, epoch)
			r.Topology = streamsJoin(group, member, "x", topic).Topology
			r.Topology.Epoch = 1
			return r
		}(), kerr.InvalidRequest.Code, "Topology can only be provided when (re-)joining."},
		{"a second member with a changed topology at the same topology epoch", func() *kmsg.StreamsGroupHeartbeatRequest {
			r := streamsJoin(group, "itSgHbMember3aaaaaaaaa", "p3", topic)
			r.Topology.Subtopologies[0].SourceTopics = []string{topic, "it-sg-hb-other"}
			return r
		}(), kerr.InvalidRequest.Code, "Topology updates are not supported yet."},
		{"a second member with topology epoch 1", func() *kmsg.StreamsGroupHeartbeatRequest {
			r := streamsJoin(group, "itSgHbMember4aaaaaaaaa", "p4", topic)
			r.Topology.Epoch = 1
			return r
		}(), kerr.InvalidRequest.Code, "Topology updates are not supported yet."},
		{"a join of a consumer group with a member", streamsJoin(classic, "itSgHbMember6aaaaaaaaa", "p6", topic),
			kerr.GroupIDNotFound.Code, "Group " + classic + " is not a streams group."},
	}
	// A smaller epoch is accepted only if it is the member's previous one
	// (Kafka 4.4: the join answered 2, the previous epoch is 0, 1 is stale).
	stale := epoch - 1
	if stale == previous {
		stale--
	}
	if stale >= 1 {
		req := streamsBeat(group, member, stale)
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = active, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		cases = append(cases, hbCase{"a stale member epoch", req, kerr.FencedMemberEpoch.Code,
			fmt.Sprintf("The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", stale, epoch)})
	} else {
		t.Logf("no stale epoch to send: the member is at epoch %d, its previous one %d", epoch, previous)
	}
	for _, c := range cases {
		r := streamsHeartbeat(t, cl, c.req)
		t.Logf("%s: %s", c.name, hbAnswer(r))
		got := ""
		if r.ErrorMessage != nil {
			got = *r.ErrorMessage
		}
		if r.ErrorCode != c.code || (c.msg != "" && got != c.msg) {
			t.Errorf("%s: %s; want error %d (%v) message %q", c.name, hbAnswer(r), c.code, kerr.ErrorForCode(c.code), c.msg)
		}
	}

	// The member leaves (epoch -1); its next heartbeat is UNKNOWN_MEMBER_ID.
	r := streamsHeartbeat(t, cl, streamsBeat(group, member, -1))
	t.Logf("leave: %s", hbAnswer(r))
	if r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Errorf("leave: %s; want no error and epoch -1", hbAnswer(r))
	}
	r = streamsHeartbeat(t, cl, streamsBeat(group, member, epoch))
	t.Logf("after leaving: %s", hbAnswer(r))
	if want := "Member " + member + " is not a member of group " + group + "."; r.ErrorCode != kerr.UnknownMemberID.Code || r.ErrorMessage == nil || *r.ErrorMessage != want {
		t.Errorf("a heartbeat after leaving: %s; want UNKNOWN_MEMBER_ID %q", hbAnswer(r), want)
	}
}
