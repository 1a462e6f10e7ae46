package group

// Transcript commands for streams groups (KIP-1071). Member ids are made
// up by the client, so a member alias is its member id.
//
//	st-heartbeat g member=A epoch=0|cur|n [process=p] [topology=simple|repart|stateful] [owned=0-0,1-2|-] [instance=i] [shutdown]
//	    owned: the member's active tasks (subtopology-partition); absent: unchanged (null)
//	st-leave g member=A [epoch=-1|-2] [instance=i]
//	st-describe g

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (r *runner) stEpoch() map[string]int32 {
	if r.stEpochs == nil {
		r.stEpochs = map[string]int32{}
	}
	return r.stEpochs
}

func (r *runner) streamsExec(cmd string, a args) bool {
	switch cmd {
	case "st-heartbeat":
		r.stHeartbeat(a)
	case "st-leave":
		r.stLeave(a)
	case "st-describe":
		r.stDescribe(a)
	default:
		return false
	}
	return true
}

func transcriptTopology(name string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := &kmsg.StreamsGroupHeartbeatRequestTopology{}
	switch name {
	case "repart":
		t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"t"}, RepartitionSinkTopics: []string{"app-rep"}},
			{SubtopologyID: "1", RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-rep"}},
				StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-cl", Configs: []kmsg.TopicInfoConfig{{Key: "cleanup.policy", Value: "compact"}}}}},
		}
	case "stateful":
		t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{SubtopologyID: "0", SourceTopics: []string{"t"},
			StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-cl"}}}}
	case "missing":
		t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{SubtopologyID: "0", SourceTopics: []string{"nope"}}}
	default:
		t.Subtopologies = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{SubtopologyID: "0", SourceTopics: []string{"t"}}}
	}
	return t
}

func parseTaskList(s string) []kmsg.TaskIDs {
	t := tasks{}
	if s != "-" {
		for _, x := range strings.Split(s, ",") {
			sub, p, _ := strings.Cut(x, "-")
			n, _ := strconv.Atoi(p)
			t.add(sub, int32(n))
		}
	}
	return taskIDsOf(t)
}

func taskListString(l []kmsg.TaskIDs) string {
	var out []string
	for _, x := range l {
		for _, p := range x.Partitions {
			out = append(out, fmt.Sprintf("%s-%d", x.SubtopologyID, p))
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

func tasksString(t tasks) string { return taskListString(taskIDsOf(t)) }

func (r *runner) stHeartbeat(a args) {
	g, mid := a.pos[0], a.str("member", "")
	r.bind(mid, mid)
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	if a.kv["epoch"] == "cur" {
		a.kv["epoch"] = strconv.Itoa(int(r.stEpoch()[mid]))
	}
	req.Group, req.MemberID, req.MemberEpoch = g, mid, int32(a.int(r.t, "epoch", 0))
	req.InstanceID = a.nstr("instance")
	req.ShutdownApplication = a.has("shutdown")
	if req.MemberEpoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		req.Topology = transcriptTopology(a.str("topology", "simple"))
		p := a.str("process", mid)
		req.ProcessID = &p
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	if v, ok := a.kv["owned"]; ok {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = parseTaskList(v), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	r.start("st-heartbeat "+g+" "+mid, func() func() string {
		resp, create := r.c.StreamsGroupHeartbeat(req, "client", "/127.0.0.1")
		return func() string {
			if resp.ErrorCode != 0 {
				if resp.ErrorMessage != nil {
					return errName(resp.ErrorCode) + " " + strconv.Quote(*resp.ErrorMessage)
				}
				return errName(resp.ErrorCode)
			}
			r.stEpoch()[mid] = resp.MemberEpoch
			s := fmt.Sprintf("OK epoch=%d interval=%d", resp.MemberEpoch, resp.HeartbeatIntervalMillis)
			if resp.ActiveTasks != nil {
				s += " active=" + taskListString(resp.ActiveTasks) + " standby=" + taskListString(resp.StandbyTasks)
			}
			for _, st := range resp.Status {
				s += fmt.Sprintf(" status=%d:%q", st.StatusCode, st.StatusDetail)
			}
			for _, c := range create {
				s += fmt.Sprintf(" create=%s/%d", c.Name, c.Partitions)
			}
			return s
		}
	})
}

func (r *runner) stLeave(a args) {
	g, mid := a.pos[0], a.str("member", "")
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = g, mid, int32(a.int(r.t, "epoch", -1))
	req.InstanceID = a.nstr("instance")
	r.start("st-leave "+g+" "+mid, func() func() string {
		resp, _ := r.c.StreamsGroupHeartbeat(req, "client", "/127.0.0.1")
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			return fmt.Sprintf("OK epoch=%d", resp.MemberEpoch)
		}
	})
}

func (r *runner) stDescribe(a args) {
	g := a.pos[0]
	r.start("st-describe "+g, func() func() string {
		resp := r.c.StreamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Groups: []string{g}})
		return func() string {
			rg := resp.Groups[0]
			if rg.ErrorCode != 0 {
				return errName(rg.ErrorCode) + " " + strconv.Quote(deref(rg.ErrorMessage))
			}
			s := fmt.Sprintf("%s epoch=%d assignment-epoch=%d", rg.State, rg.Epoch, rg.AssignmentEpoch)
			if rg.Topology != nil {
				s += fmt.Sprintf(" topology-epoch=%d subtopologies=%d", rg.Topology.Epoch, len(rg.Topology.Subtopologies))
			}
			for _, m := range rg.Members {
				s += fmt.Sprintf(" [%s epoch=%d process=%s active=%s target=%s]", m.MemberID, m.MemberEpoch, m.ProcessID,
					taskListString(m.Assignment.ActiveTasks), taskListString(m.TargetAssignment.ActiveTasks))
			}
			return s
		}
	})
}

// describeStreamsKV is the one-line form of a streams group record.
func (r *runner) describeStreamsKV(ver int16, k, v []byte) string {
	withMember := ver == keyStreamsGroupMemberMetadata || ver == keyStreamsGroupTargetMember || ver == keyStreamsGroupCurrentMember
	gid, mid, _ := readKey(k, withMember)
	name := map[int16]string{keyStreamsGroupMetadata: "st-epoch", keyStreamsGroupMemberMetadata: "st-member",
		keyStreamsGroupTargetMetadata: "st-target-epoch", keyStreamsGroupTargetMember: "st-target",
		keyStreamsGroupCurrentMember: "st-current", keyStreamsGroupTopology: "st-topology"}[ver]
	s := name + " " + gid
	if withMember {
		s += " " + mid
	}
	if v == nil {
		return s + " tombstone"
	}
	rd := newReader(v)
	switch ver {
	case keyStreamsGroupMetadata:
		epoch, _ := rd.i32(), rd.i64()
		tags := rd.taggedFields()
		s += fmt.Sprintf(" = %d", epoch)
		if b, ok := tags[0]; ok {
			tr := &fr{}
			tr.r.Src = b
			s += fmt.Sprintf(" validated-topology=%d", tr.i32())
		}
	case keyStreamsGroupMemberMetadata:
		inst, _, _, _ := rd.nstr(), rd.nstr(), rd.str(), rd.str()
		_, te, proc := rd.i32(), rd.i32(), rd.str()
		s += fmt.Sprintf(" process=%s topology-epoch=%d", proc, te)
		if inst != nil {
			s += " instance=" + *inst
		}
	case keyStreamsGroupTargetMetadata:
		epoch, _, _ := readShareTargetMetadata(v)
		s += fmt.Sprintf(" = %d", epoch)
	case keyStreamsGroupTargetMember:
		a, sb := rd.taskIDs(nil), rd.taskIDs(nil)
		s += " active=" + tasksString(a) + " standby=" + tasksString(sb)
	case keyStreamsGroupCurrentMember:
		epoch, prev, state := rd.i32(), rd.i32(), rd.i8()
		a, sb, _ := rd.taskIDs(nil), rd.taskIDs(nil), rd.taskIDs(nil)
		ra := rd.taskIDs(nil)
		st := map[int8]string{smStable: "STABLE", smUnrevokedTasks: "UNREVOKED_TASKS", smUnreleasedTasks: "UNRELEASED_TASKS"}[state]
		s += fmt.Sprintf(" epoch=%d prev=%d %s active=%s standby=%s", epoch, prev, st, tasksString(a), tasksString(sb))
		if ra.size() > 0 {
			s += " revoking=" + tasksString(ra)
		}
	case keyStreamsGroupTopology:
		t, _ := readStreamsTopology(v)
		if t != nil {
			s += fmt.Sprintf(" epoch=%d subtopologies=%d", t.epoch, len(t.subs))
		}
	}
	return s
}
