package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// Reassignment scenarios as transcripts: each step is a command and the
// partition's state after it, in one fixed-format line
// (ReplicationControlManagerTest's reassignment cases, KIP-455).
//
//	reassign 2 3     AlterPartitionReassignments to [2 3] (answer printed)
//	cancel           AlterPartitionReassignments with null replicas
//	isr 1 2          the leader's AlterPartition with that ISR (answer printed)
//	fence 1          broker 1 asks to be fenced
//	snapshot         a metadata snapshot, the log before it deleted
//	restart          the controller restarts over its metadata log
//	list             ListPartitionReassignments (null topics)
func TestReassignTranscripts(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas []int32
		configs  []string
		script   string
	}{{
		name: "move an RF=1 partition to another broker", replicas: []int32{1},
		script: `
reassign 2
> NONE
replicas=[2 1] isr=[1] adding=[2] removing=[1] leader=1 leaderEpoch=0 dirs=[b2 b1]
list
> t-0 replicas=[2 1] adding=[2] removing=[1]
isr 1 2
> NEW_LEADER_ELECTED
replicas=[2] isr=[2] adding=[] removing=[] leader=2 leaderEpoch=1 dirs=[b2]
list
> (none)
`,
	}, {
		name: "grow the replication factor from 1 to 3", replicas: []int32{1},
		script: `
reassign 1 2 3
> NONE
replicas=[1 2 3] isr=[1] adding=[2 3] removing=[] leader=1 leaderEpoch=0 dirs=[b1 b2 b3]
isr 1 2
> NONE
replicas=[1 2 3] isr=[1 2] adding=[2 3] removing=[] leader=1 leaderEpoch=0 dirs=[b1 b2 b3]
isr 1 2 3
> NONE
replicas=[1 2 3] isr=[1 2 3] adding=[] removing=[] leader=1 leaderEpoch=0 dirs=[b1 b2 b3]
`,
	}, {
		name: "shrink the replication factor from 3 to 1 completes at once", replicas: []int32{1, 2, 3},
		script: `
reassign 1
> NONE
replicas=[1] isr=[1] adding=[] removing=[] leader=1 leaderEpoch=1 dirs=[b1]
`,
	}, {
		name: "removing the leader moves leadership", replicas: []int32{1, 2},
		script: `
reassign 2 3
> NONE
replicas=[2 3 1] isr=[1 2] adding=[3] removing=[1] leader=1 leaderEpoch=0 dirs=[b2 b3 b1]
isr 1 2 3
> NEW_LEADER_ELECTED
replicas=[2 3] isr=[2 3] adding=[] removing=[] leader=2 leaderEpoch=1 dirs=[b2 b3]
`,
	}, {
		name: "a reorder completes at once without an epoch bump", replicas: []int32{1, 2, 3},
		script: `
reassign 3 2 1
> NONE
replicas=[3 2 1] isr=[1 2 3] adding=[] removing=[] leader=1 leaderEpoch=0 dirs=[b3 b2 b1]
`,
	}, {
		name: "cancel reverts to the original replicas", replicas: []int32{1},
		script: `
reassign 2 3
> NONE
replicas=[2 3 1] isr=[1] adding=[2 3] removing=[1] leader=1 leaderEpoch=0 dirs=[b2 b3 b1]
isr 1 2
> NONE
replicas=[2 3 1] isr=[1 2] adding=[2 3] removing=[1] leader=1 leaderEpoch=0 dirs=[b2 b3 b1]
cancel
> NONE
replicas=[1] isr=[1] adding=[] removing=[] leader=1 leaderEpoch=1 dirs=[b1]
cancel
> NO_REASSIGNMENT_IN_PROGRESS
replicas=[1] isr=[1] adding=[] removing=[] leader=1 leaderEpoch=1 dirs=[b1]
`,
	}, {
		name: "a cancel that needs an unclean election is refused", replicas: []int32{1, 2},
		script: `
reassign 1 2 3
> NONE
replicas=[1 2 3] isr=[1 2] adding=[3] removing=[] leader=1 leaderEpoch=0 dirs=[b1 b2 b3]
isr 1 3
> NONE
replicas=[1 2 3] isr=[1 3] adding=[3] removing=[] leader=1 leaderEpoch=0 dirs=[b1 b2 b3]
fence 1
replicas=[1 2 3] isr=[3] adding=[3] removing=[] leader=3 leaderEpoch=1 dirs=[b1 b2 b3]
cancel
> INVALID_REPLICA_ASSIGNMENT: Unable to revert partition assignment for t:0 because it would require an unclean leader election.
replicas=[1 2 3] isr=[3] adding=[3] removing=[] leader=3 leaderEpoch=1 dirs=[b1 b2 b3]
`,
	}, {
		name: "the same cancel with unclean elections on", replicas: []int32{1, 2},
		configs: []string{"unclean.leader.election.enable", "true"},
		script: `
reassign 1 2 3
> NONE
replicas=[1 2 3] isr=[1 2] adding=[3] removing=[] leader=1 leaderEpoch=0 dirs=[b1 b2 b3]
isr 1 3
> NONE
replicas=[1 2 3] isr=[1 3] adding=[3] removing=[] leader=1 leaderEpoch=0 dirs=[b1 b2 b3]
fence 1
replicas=[1 2 3] isr=[3] adding=[3] removing=[] leader=3 leaderEpoch=1 dirs=[b1 b2 b3]
cancel
> NONE
replicas=[1 2] isr=[2] adding=[] removing=[] leader=2 leaderEpoch=2 dirs=[b1 b2]
`,
	}, {
		name: "a fenced target waits; the reassignment survives a snapshot and a restart", replicas: []int32{1},
		script: `
fence 3
replicas=[1] isr=[1] adding=[] removing=[] leader=1 leaderEpoch=0 dirs=[b1]
reassign 3
> NONE
replicas=[3 1] isr=[1] adding=[3] removing=[1] leader=1 leaderEpoch=0 dirs=[b3 b1]
isr 1 3
> INELIGIBLE_REPLICA
replicas=[3 1] isr=[1] adding=[3] removing=[1] leader=1 leaderEpoch=0 dirs=[b3 b1]
snapshot
replicas=[3 1] isr=[1] adding=[3] removing=[1] leader=1 leaderEpoch=0 dirs=[b3 b1]
restart
replicas=[3 1] isr=[1] adding=[3] removing=[1] leader=1 leaderEpoch=0 dirs=[b3 b1]
list
> t-0 replicas=[3 1] adding=[3] removing=[1]
unfence 3
replicas=[3 1] isr=[1] adding=[3] removing=[1] leader=1 leaderEpoch=0 dirs=[b3 b1]
isr 1 3
> NEW_LEADER_ELECTED
replicas=[3] isr=[3] adding=[] removing=[] leader=3 leaderEpoch=1 dirs=[b3]
`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, nil)
			epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2), 3: e.addBroker(3)}
			id := e.createAssigned("t", tc.replicas, tc.configs...)
			var got strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(tc.script), "\n") {
				if strings.HasPrefix(line, ">") || strings.HasPrefix(line, "replicas=") {
					continue
				}
				got.WriteString(line + "\n")
				f := strings.Fields(line)
				args := func() []int32 {
					var out []int32
					for _, a := range f[1:] {
						var n int32
						fmt.Sscan(a, &n)
						out = append(out, n)
					}
					return out
				}
				switch f[0] {
				case "reassign":
					got.WriteString("> " + e.reassign("t", 0, args()) + "\n")
				case "cancel":
					got.WriteString("> " + e.reassign("t", 0, nil) + "\n")
				case "isr":
					got.WriteString("> " + e.alterIsrCode(id, epochs, args()) + "\n")
				case "fence", "unfence":
					b := args()[0]
					hb := e.heartbeat(b, epochs[b], e.c.Image().Offset, f[0] == "fence", false)
					if hb.ErrorCode != 0 {
						t.Fatalf("%s: %v", line, kerr.ErrorForCode(hb.ErrorCode))
					}
				case "snapshot":
					e.node.SetSnapshotConfig(raft.SnapshotConfig{MaxBytesBetweenSnapshots: 1 << 40, RetentionBytes: 1, RetentionMs: -1})
					e.snapshot()
					e.c.writeNoOp()
					if s2 := e.snapshot(); e.node.Status().LogStartOffset != s2.Offset {
						t.Fatalf("log start %d, want %d", e.node.Status().LogStartOffset, s2.Offset)
					}
				case "restart":
					e.stop()
					e.start(nil)
				case "list":
					got.WriteString("> " + e.listReassignments() + "\n")
					continue
				}
				got.WriteString(partitionLine(e.partition("t")) + "\n")
			}
			want := strings.TrimSpace(tc.script) + "\n"
			if got.String() != want {
				t.Fatalf("transcript differs\n--- got\n%s--- want\n%s", got.String(), want)
			}
		})
	}
}

// partitionLine is a partition's reassignment state in one line; a
// directory prints as b<n> for broker n's log dir.
func partitionLine(p *metadatacache.Partition) string {
	dirs := make([]string, len(p.Directories))
	for i, d := range p.Directories {
		dirs[i] = fmt.Sprintf("b%d", d[1])
	}
	return fmt.Sprintf("replicas=%v isr=%v adding=%v removing=%v leader=%d leaderEpoch=%d dirs=[%s]",
		p.Replicas, p.Isr, orEmpty(p.AddingReplicas), orEmpty(p.RemovingReplicas), p.Leader, p.LeaderEpoch, strings.Join(dirs, " "))
}

func orEmpty(xs []int32) []int32 {
	if xs == nil {
		return []int32{}
	}
	return xs
}

// createAssigned creates a one-partition topic with a manual assignment.
func (e *testEnv) createAssigned(name string, replicas []int32, configs ...string) [16]byte {
	e.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, -1, -1
	a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	a.Partition, a.Replicas = 0, replicas
	t.ReplicaAssignment = append(t.ReplicaAssignment, a)
	for i := 0; i+1 < len(configs); i += 2 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = configs[i], strp(configs[i+1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	resp := e.do(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 {
		e.t.Fatalf("CreateTopics: %+v", resp)
	}
	return resp.Topics[0].TopicID
}

// reassign sends AlterPartitionReassignments v1 for one partition (nil
// replicas: cancel) and returns its answer as "CODE[: message]".
func (e *testEnv) reassign(topic string, pid int32, replicas []int32) string {
	return e.reassignRF(topic, pid, replicas, true)
}

func (e *testEnv) reassignRF(topic string, pid int32, replicas []int32, allowRF bool) string {
	e.t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = 1, allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
	rp.Partition, rp.Replicas = pid, replicas
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := e.do(req).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 || resp.AllowReplicationFactorChange != allowRF {
		e.t.Fatalf("AlterPartitionReassignments: %+v", resp)
	}
	p := resp.Topics[0].Partitions[0]
	s := "NONE"
	if p.ErrorCode != 0 {
		s = kerr.ErrorForCode(p.ErrorCode).(*kerr.Error).Message
	}
	if p.ErrorMessage != nil {
		s += ": " + *p.ErrorMessage
	}
	return s
}

// alterIsrCode sends the leader's AlterPartition v3 with isr and returns
// the partition's error name.
func (e *testEnv) alterIsrCode(topicID [16]byte, epochs map[int32]int64, isr []int32) string {
	e.t.Helper()
	p := e.c.Image().TopicByID(topicID).Partition(0)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 3, p.Leader, epochs[p.Leader]
	tp := kmsg.NewAlterPartitionRequestTopicPartition()
	tp.Partition, tp.LeaderEpoch, tp.PartitionEpoch = 0, p.LeaderEpoch, p.PartitionEpoch
	for _, id := range isr {
		tp.NewEpochISR = append(tp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: topicID, Partitions: []kmsg.AlterPartitionRequestTopicPartition{tp}}}
	resp := e.do(req).(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != 0 {
		e.t.Fatalf("AlterPartition: %+v", resp)
	}
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != 0 {
		return kerr.ErrorForCode(c).(*kerr.Error).Message
	}
	return "NONE"
}

func (e *testEnv) listReassignments() string {
	e.t.Helper()
	resp := e.do(kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
	var parts []string
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d replicas=%v adding=%v removing=%v", t.Topic, p.Partition, p.Replicas, p.AddingReplicas, p.RemovingReplicas))
		}
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, "; ")
}

// The answers Kafka's controller gives a request it refuses.
func TestReassignErrors(t *testing.T) {
	e := newTestEnv(t, nil)
	e.addBroker(1)
	e.addBroker(2)
	e.addBroker(3)
	e.createAssigned("t", []int32{1, 2})
	for _, c := range []struct {
		topic    string
		pid      int32
		replicas []int32
		allowRF  bool
		want     string
	}{
		{"nope", 0, []int32{1}, true, "UNKNOWN_TOPIC_OR_PARTITION: Unable to find a topic named nope."},
		{"t", 5, []int32{1}, true, "UNKNOWN_TOPIC_OR_PARTITION: Unable to find partition t:5."},
		{"t", -1, []int32{1}, true, "UNKNOWN_TOPIC_OR_PARTITION: Unable to find partition t:-1."},
		{"t", 0, nil, true, "NO_REASSIGNMENT_IN_PROGRESS"},
		{"t", 0, []int32{}, true, "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes an empty replica list."},
		{"t", 0, []int32{1, 9}, true, "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes broker 9, but no such broker is registered."},
		{"t", 0, []int32{2, 1, 2}, true, "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes the broker 2 more than once."},
		{"t", 0, []int32{1, 2, 3}, false, "INVALID_REPLICATION_FACTOR: The replication factor is changed from 2 to 3"},
		{"t", 0, []int32{2, 1}, false, "NONE"},
		{"t", 0, []int32{2, 1}, true, "NONE"},
	} {
		if got := e.reassignRF(c.topic, c.pid, c.replicas, c.allowRF); got != c.want {
			t.Errorf("%s-%d %v allowRF=%v: got %q, want %q", c.topic, c.pid, c.replicas, c.allowRF, got, c.want)
		}
	}
	// While [2 1] -> [3 1] is in progress the partition is heading for two
	// replicas: the replication factor check counts those.
	if got := e.reassign("t", 0, []int32{3, 1}); got != "NONE" {
		t.Fatal(got)
	}
	if p := e.partition("t"); !slices.Equal(p.AddingReplicas, []int32{3}) || !slices.Equal(p.RemovingReplicas, []int32{2}) {
		t.Fatalf("%s", partitionLine(p))
	}
	if got := e.reassignRF("t", 0, []int32{1}, false); got != "INVALID_REPLICATION_FACTOR: The replication factor is changed from 2 to 1" {
		t.Fatal(got)
	}
	// A new target replaces the one in progress: back to the original
	// replicas it completes at once.
	if got := e.reassignRF("t", 0, []int32{2, 1}, false); got != "NONE" {
		t.Fatal(got)
	}
	if got := partitionLine(e.partition("t")); got != "replicas=[2 1] isr=[1 2] adding=[] removing=[] leader=1 leaderEpoch=1 dirs=[b2 b1]" {
		t.Fatal(got)
	}
	// A non-active controller answers NOT_CONTROLLER on every partition and
	// at the top level.
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "t"
	rt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}
	req.Topics = append(req.Topics, rt)
	resp := notController(req).(*kmsg.AlterPartitionAssignmentsResponse)
	if resp.ErrorCode != kerr.NotController.Code || resp.Topics[0].Partitions[0].ErrorCode != kerr.NotController.Code {
		t.Fatalf("%+v", resp)
	}
}

// ListPartitionReassignments lists only partitions with a reassignment in
// progress: all of them with null topics, else the named ones (unknown
// topics and partitions left out).
func TestListPartitionReassignmentsFilters(t *testing.T) {
	e := newTestEnv(t, nil)
	e.addBroker(1)
	e.addBroker(2)
	e.createAssigned("a", []int32{1})
	e.createAssigned("b", []int32{1})
	if got := e.reassign("a", 0, []int32{2}); got != "NONE" {
		t.Fatal(got)
	}
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	for _, name := range []string{"a", "b", "nope"} {
		rt := kmsg.NewListPartitionReassignmentsRequestTopic()
		rt.Topic, rt.Partitions = name, []int32{0, 7}
		req.Topics = append(req.Topics, rt)
	}
	resp := e.do(req).(*kmsg.ListPartitionReassignmentsResponse)
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || resp.Topics[0].Topic != "a" || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("%+v", resp)
	}
	if got := e.listReassignments(); got != "a-0 replicas=[2 1] adding=[2] removing=[1]" {
		t.Fatal(got)
	}
}

// The builder alone (PartitionChangeBuilderTest's reassignment cases): a
// completed reassignment drops the removing replicas from replicas, ISR
// and leadership; an incomplete one changes nothing.
func TestChangeBuilderCompletesReassignment(t *testing.T) {
	active := func(int32) bool { return true }
	for _, c := range []struct {
		name string
		p    partitionState
		isr  []int32
		want string
	}{
		{"all adding replicas in the ISR", partitionState{replicas: []int32{2, 3, 1}, isr: []int32{1}, adding: []int32{2, 3}, removing: []int32{1}, leader: 1},
			[]int32{1, 2, 3}, "leader=2 isr=[2 3] replicas=[2 3] adding=[] removing=[]"},
		{"one adding replica missing", partitionState{replicas: []int32{2, 3, 1}, isr: []int32{1}, adding: []int32{2, 3}, removing: []int32{1}, leader: 1},
			[]int32{1, 2}, "leader=-2 isr=[1 2] replicas=nil adding=nil removing=nil"},
		{"only removals, ISR all removing", partitionState{replicas: []int32{2, 1}, isr: []int32{1}, removing: []int32{1}, leader: 1},
			[]int32{1}, "no change"},
		{"only removals, a kept member in the ISR", partitionState{replicas: []int32{2, 1}, isr: []int32{1}, removing: []int32{1}, leader: 1},
			[]int32{1, 2}, "leader=2 isr=[2] replicas=[2] adding=nil removing=[]"},
		{"nothing in progress", partitionState{replicas: []int32{1, 2}, isr: []int32{1, 2}, leader: 1},
			[]int32{1}, "leader=-2 isr=[1] replicas=nil adding=nil removing=nil"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			b := &changeBuilder{mv: metadatacache.LatestMetadataVersion, topicID: [16]byte{1}, p: &p, acceptable: active,
				minISR: 1, uncleanShutdown: -1, targetIsr: c.isr, targetElr: p.elr, targetLastKnownElr: p.lastKnownElr}
			rec := b.build()
			got := "no change"
			if rec != nil {
				show := func(xs []int32) string {
					if xs == nil {
						return "nil"
					}
					return fmt.Sprint(xs)
				}
				got = fmt.Sprintf("leader=%d isr=%s replicas=%s adding=%s removing=%s", rec.Leader, show(rec.Isr), show(rec.Replicas), show(rec.AddingReplicas), show(rec.RemovingReplicas))
			}
			if got != c.want {
				t.Fatalf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

// Directories are written from metadata.version 3.7-IV2 (KIP-858): a
// current replica keeps its dir, a new one gets its broker's default
// (ClusterDescriber.defaultDir); below it the record has none.
func TestReassignDirectoriesByMetadataVersion(t *testing.T) {
	p := partitionState{replicas: []int32{1}, isr: []int32{1}, leader: 1, directories: [][16]byte{{1: 1}}}
	for _, c := range []struct {
		mv   int16
		want [][16]byte
	}{
		{mv3_7_IV2 - 1, nil},
		{mv3_7_IV2, [][16]byte{{1: 2}, {1: 1}}},
	} {
		pc := p
		b := &changeBuilder{mv: c.mv, topicID: [16]byte{1}, p: &pc, acceptable: func(int32) bool { return true },
			minISR: 1, uncleanShutdown: -1, targetIsr: pc.isr, defaultDir: func(id int32) [16]byte { return [16]byte{1: byte(id)} },
			targetReplicas: []int32{2, 1}, targetAdding: []int32{2}, targetRemoving: []int32{1}}
		rec := b.build()
		if rec == nil || !slices.Equal(rec.Replicas, []int32{2, 1}) || !slices.Equal(rec.Directories, c.want) {
			t.Errorf("mv %d: %+v", c.mv, rec)
		}
	}
}
