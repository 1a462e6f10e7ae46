package sharecoord

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/sharestate"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata transcripts with the actual output")

// Transcript tests: testdata/*.txt hold scenarios in the style of
// etcd-io/raft's datadriven files: a command, "----", its output, a blank
// line. Lines starting with # are comments.
//
//	setup [partitions=1] [per-snapshot=N] [write-timeout=MS]
//	                          brokers 1-3; topic foo (3 partitions); __share_group_state
//	                          partitions led by node 1 (partitions=0: no topic yet)
//	init group=G tp=foo-0[,foo-1] state-epoch=E start=S       InitializeShareGroupState
//	read group=G tp=foo-0 leader-epoch=E                      ReadShareGroupState
//	write group=G tp=foo-0 leader-epoch=E state-epoch=E start=S [dcc=N] [batches=F-L:STATE:COUNT,...]
//	                          WriteShareGroupState (STATE: AVAILABLE, ACKNOWLEDGED, ARCHIVED or a number)
//	summary group=G tp=foo-0[,...]                            ReadShareGroupStateSummary
//	delete group=G tp=foo-0[,...]                             DeleteShareGroupState
//	state                     every share partition's state, per coordinator partition
//	log [partition=N]         __share_group_state, decoded
//	crash                     fail over at a new leader epoch; the new shard replays the log,
//	                          and the state must be what it was
//	find group=G tp=foo-0     FindCoordinator's leader for the key
//	created                   the topics asked of the controller
//	leader partition=N leader=B    move a __share_group_state partition (-1: no leader)
//	fail-appends err=E|off    appends to __share_group_state fail
//	advance DURATION          move the clock
//	delete-topic T            (its share partitions' state is tombstoned)
//	feature share.version=N   finalize a feature level
//	pruned                    the DeleteRecords pruning asked for
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runTranscript(t, f) })
	}
}

func runTranscript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	r := &runner{t: t}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		cmd := line
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: command without ----", path, i)
		}
		i++
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := r.run(cmd)
		out.WriteString(cmd + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\nwant:\n%s\ngot:\n%s", path, cmd, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		if i < len(lines) {
			out.WriteString("\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type runner struct {
	t *testing.T
	h *harness
}

var errCodes = func() map[string]int16 {
	m := map[string]int16{}
	for code := int16(-1); code < 200; code++ {
		if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok && ke.Code == code {
			m[ke.Message] = code
		}
	}
	m["NOT_LEADER_OR_FOLLOWER"] = kerr.NotLeaderForPartition.Code
	return m
}()

type args struct {
	t  *testing.T
	kv map[string]string
}

func (a args) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a args) int(k string, def int64) int64 {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		a.t.Fatalf("%s=%q: %v", k, v, err)
	}
	return n
}

type tp struct {
	name      string
	topic     string
	partition int32
}

func (r *runner) tps(a args) []tp {
	var out []tp
	for _, s := range strings.Split(a.str("tp", "foo-0"), ",") {
		i := strings.IndexByte(s, '-') // topics here have no dash; foo--1 is partition -1
		p, err := strconv.Atoi(s[i+1:])
		if i < 0 || err != nil {
			r.t.Fatalf("bad tp %q", s)
		}
		out = append(out, tp{name: s, topic: s[:i], partition: int32(p)})
	}
	return out
}

func (r *runner) topicID(topic string) [16]byte {
	if id, ok := r.h.topicIDs[topic]; ok {
		return id
	}
	return [16]byte{0xEE} // a topic the image never had
}

var stateIDs = map[string]int8{"AVAILABLE": 0, "ACQUIRED": 1, "ACKNOWLEDGED": 2, "ARCHIVED": 4}

func (r *runner) run(cmd string) []string {
	fields := strings.Fields(cmd)
	a := args{t: r.t, kv: map[string]string{}}
	var pos []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	ctx := context.Background()
	group := a.str("group", "g")
	switch fields[0] {
	case "setup":
		cfg := Config{SnapshotUpdateRecordsPerSnapshot: int(a.int("per-snapshot", 500)),
			WriteTimeout: time.Duration(a.int("write-timeout", 5000)) * time.Millisecond}
		r.h = newHarness(r.t, int32(a.int("partitions", 1)), cfg)
		return []string{"ok"}
	case "init":
		req := kmsg.NewPtrInitializeShareGroupStateRequest()
		req.GroupID = group
		for _, p := range r.tps(a) {
			t := kmsg.NewInitializeShareGroupStateRequestTopic()
			t.TopicID = r.topicID(p.topic)
			pp := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
			pp.Partition, pp.StateEpoch, pp.StartOffset = p.partition, int32(a.int("state-epoch", 0)), a.int("start", -1)
			t.Partitions = append(t.Partitions, pp)
			req.Topics = append(req.Topics, t)
		}
		resp := r.h.c.InitializeState(ctx, req)
		var out []string
		for i, t := range resp.Topics {
			for _, p := range t.Partitions {
				out = append(out, partResult(r.tps(a)[i].name, p.ErrorCode, p.ErrorMessage))
			}
		}
		return orEmpty(out)
	case "read":
		req := kmsg.NewPtrReadShareGroupStateRequest()
		req.GroupID = group
		for _, p := range r.tps(a) {
			t := kmsg.NewReadShareGroupStateRequestTopic()
			t.TopicID = r.topicID(p.topic)
			pp := kmsg.NewReadShareGroupStateRequestTopicPartition()
			pp.Partition, pp.LeaderEpoch = p.partition, int32(a.int("leader-epoch", 0))
			t.Partitions = append(t.Partitions, pp)
			req.Topics = append(req.Topics, t)
		}
		resp := r.h.c.ReadState(ctx, req)
		var out []string
		for i, t := range resp.Topics {
			for _, p := range t.Partitions {
				s := partResult(r.tps(a)[i].name, p.ErrorCode, p.ErrorMessage)
				if p.ErrorCode == 0 {
					var bs []stateBatch
					for _, b := range p.StateBatches {
						bs = append(bs, stateBatch{first: b.FirstOffset, last: b.LastOffset, state: b.DeliveryState, count: b.DeliveryCount})
					}
					s += fmt.Sprintf(" state_epoch=%d start=%d batches=%s", p.StateEpoch, p.StartOffset, formatBatches(bs))
				}
				out = append(out, s)
			}
		}
		return orEmpty(out)
	case "write":
		req := kmsg.NewPtrWriteShareGroupStateRequest()
		req.Version = 1
		req.GroupID = group
		for _, p := range r.tps(a) {
			t := kmsg.NewWriteShareGroupStateRequestTopic()
			t.TopicID = r.topicID(p.topic)
			pp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
			pp.Partition, pp.LeaderEpoch, pp.StateEpoch = p.partition, int32(a.int("leader-epoch", 0)), int32(a.int("state-epoch", 0))
			pp.StartOffset, pp.DeliveryCompleteCount = a.int("start", -1), int32(a.int("dcc", -1))
			if bs := a.str("batches", ""); bs != "" {
				for _, b := range strings.Split(bs, ",") {
					parts := strings.Split(b, ":")
					rng := strings.SplitN(parts[0], "-", 2)
					if len(parts) != 3 || len(rng) != 2 {
						r.t.Fatalf("bad batch %q", b)
					}
					sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
					sb.FirstOffset, _ = strconv.ParseInt(rng[0], 10, 64)
					sb.LastOffset, _ = strconv.ParseInt(rng[1], 10, 64)
					if id, ok := stateIDs[parts[1]]; ok {
						sb.DeliveryState = id
					} else {
						n, _ := strconv.Atoi(parts[1])
						sb.DeliveryState = int8(n)
					}
					c, _ := strconv.Atoi(parts[2])
					sb.DeliveryCount = int16(c)
					pp.StateBatches = append(pp.StateBatches, sb)
				}
			}
			t.Partitions = append(t.Partitions, pp)
			req.Topics = append(req.Topics, t)
		}
		resp := r.h.c.WriteState(ctx, req)
		var out []string
		for i, t := range resp.Topics {
			for _, p := range t.Partitions {
				out = append(out, partResult(r.tps(a)[i].name, p.ErrorCode, p.ErrorMessage))
			}
		}
		return orEmpty(out)
	case "summary":
		req := kmsg.NewPtrReadShareGroupStateSummaryRequest()
		req.Version = 1
		req.GroupID = group
		for _, p := range r.tps(a) {
			t := kmsg.NewReadShareGroupStateSummaryRequestTopic()
			t.TopicID = r.topicID(p.topic)
			pp := kmsg.NewReadShareGroupStateSummaryRequestTopicPartition()
			pp.Partition = p.partition
			t.Partitions = append(t.Partitions, pp)
			req.Topics = append(req.Topics, t)
		}
		resp := r.h.c.ReadStateSummary(ctx, req)
		var out []string
		for i, t := range resp.Topics {
			for _, p := range t.Partitions {
				s := partResult(r.tps(a)[i].name, p.ErrorCode, p.ErrorMessage)
				if p.ErrorCode == 0 {
					s += fmt.Sprintf(" state_epoch=%d leader_epoch=%d start=%d dcc=%d", p.StateEpoch, p.LeaderEpoch, p.StartOffset, p.DeliveryCompleteCount)
				}
				out = append(out, s)
			}
		}
		return orEmpty(out)
	case "delete":
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.GroupID = group
		for _, p := range r.tps(a) {
			t := kmsg.NewDeleteShareGroupStateRequestTopic()
			t.TopicID = r.topicID(p.topic)
			pp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
			pp.Partition = p.partition
			t.Partitions = append(t.Partitions, pp)
			req.Topics = append(req.Topics, t)
		}
		resp := r.h.c.DeleteState(ctx, req)
		var out []string
		for i, t := range resp.Topics {
			for _, p := range t.Partitions {
				out = append(out, partResult(r.tps(a)[i].name, p.ErrorCode, p.ErrorMessage))
			}
		}
		return orEmpty(out)
	case "state":
		return r.h.dump()
	case "log":
		return r.h.logLines(int32(a.int("partition", 0)))
	case "crash":
		before := r.h.dump()
		r.h.crash()
		after := r.h.dump()
		if !reflect.DeepEqual(before, after) {
			return append(append([]string{"replayed state differs; before:"}, before...), append([]string{"after:"}, after...)...)
		}
		return []string{"replayed: same state"}
	case "find":
		p := r.tps(a)[0]
		key := sharestate.Key(group, r.topicID(p.topic), p.partition)
		id, err := r.h.c.FindCoordinator(key)
		r.h.c.wg.Wait() // a topic creation in flight
		if err != nil {
			return []string{errName(err.(*kerr.Error).Code)}
		}
		return []string{fmt.Sprintf("node %d (partition %d)", id, PartitionFor(key, r.h.c.NumPartitions()))}
	case "created":
		r.h.ctrl.mu.Lock()
		defer r.h.ctrl.mu.Unlock()
		return orEmpty(append([]string(nil), r.h.ctrl.created...))
	case "leader":
		r.h.setLeader(TopicName, int32(a.int("partition", 0)), int32(a.int("leader", 1)))
		return []string{"ok"}
	case "fail-appends":
		e := a.str("err", "off")
		if e == "off" {
			r.h.log.FailAppends(nil)
		} else {
			code, ok := errCodes[e]
			if !ok {
				r.t.Fatalf("unknown error %q", e)
			}
			r.h.log.FailAppends(kerr.ErrorForCode(code))
		}
		return []string{"ok"}
	case "advance":
		d, err := time.ParseDuration(pos[0])
		if err != nil {
			r.t.Fatal(err)
		}
		r.h.clock.Advance(d)
		r.h.drain()
		return []string{"ok"}
	case "feature":
		for k, v := range a.kv {
			n, _ := strconv.Atoi(v)
			r.h.setFeature(k, int16(n))
		}
		return []string{"ok"}
	case "pruned":
		r.h.drain()
		r.h.plog.mu.Lock()
		defer r.h.plog.mu.Unlock()
		out := orEmpty(append([]string(nil), r.h.plog.pruned...))
		r.h.plog.pruned = nil
		return out
	case "delete-topic":
		r.h.deleteTopic(pos[0])
		return []string{"ok"}
	}
	r.t.Fatalf("unknown command %q", cmd)
	return nil
}

func orEmpty(out []string) []string {
	if len(out) == 0 {
		return []string{"(empty response)"}
	}
	return out
}
