package group

// Transcript commands for share groups (KIP-932), and the fake Persister
// they run against. Member ids are made up by the client (KIP-1082), so a
// member alias is its member id.
//
//	sg-heartbeat g member=A epoch=0|cur|n [topics=t,u] [rack=r]   (cur: the epoch of its last answer)
//	sg-leave g member=A
//	sg-describe g
//	sg-offsets g [topics=t]            DescribeShareGroupOffsets (all initialized partitions without topics)
//	sg-alter g t-0=5 ...               AlterShareGroupOffsets
//	sg-delete-offsets g topics=t,u     DeleteShareGroupOffsets
//	persister fail=ERROR|none [op=init|delete|summary]
//	persister hold|release             InitializeState waits until released
//	create-topic u parts=2             a topic in the metadata image
//	add-partitions u parts=4
//	share-left                         members the share partitions were told about
//	group-config g share.session.timeout.ms=10000 ...   GROUP resource configs

import (
	"context"
	"fmt"
	"github.com/kgo-broker/kgo-broker/config"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// fakePersister is a share coordinator in memory: the state epoch and
// start offset of each share partition, and the calls it got.
type fakePersister struct {
	mu            sync.Mutex
	name          func([16]byte) string
	failInit      error
	failDelete    error
	failSummary   error
	calls         []string
	state         map[string]map[tp][2]int64 // group -> partition -> {state epoch, start offset}
	deliveredDone int32
	hold          chan struct{} // non-nil: InitializeState waits for it to close
}

var _ sharestate.Persister = (*fakePersister)(nil)

func newFakePersister(name func([16]byte) string) *fakePersister {
	return &fakePersister{name: name, state: map[string]map[tp][2]int64{}}
}

func (f *fakePersister) log(s string) {
	f.mu.Lock()
	f.calls = append(f.calls, s)
	f.mu.Unlock()
}

func (f *fakePersister) takeCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls
	f.calls = nil
	return c
}

func (f *fakePersister) InitializeState(ctx context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	var ps []string
	f.mu.Lock()
	hold := f.hold
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	fail := f.failInit
	if f.state[req.GroupID] == nil {
		f.state[req.GroupID] = map[tp][2]int64{}
	}
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			ps = append(ps, fmt.Sprintf("%s-%d@%d/e%d", f.name(t.TopicID), p.Partition, p.StartOffset, p.StateEpoch))
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if fail != nil {
				rp.ErrorCode = fail.(*kerr.Error).Code
			} else {
				f.state[req.GroupID][tp{t.TopicID, p.Partition}] = [2]int64{int64(p.StateEpoch), p.StartOffset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	f.mu.Unlock()
	res := "OK"
	if fail != nil {
		res = fail.(*kerr.Error).Message
	}
	f.log(fmt.Sprintf("persister initialize %s %s: %s", req.GroupID, strings.Join(ps, ","), res))
	return resp, nil
}

func (f *fakePersister) ReadState(context.Context, *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return kmsg.NewPtrReadShareGroupStateResponse(), nil
}

func (f *fakePersister) WriteState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return kmsg.NewPtrWriteShareGroupStateResponse(), nil
}

func (f *fakePersister) DeleteState(_ context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	var ps []string
	f.mu.Lock()
	fail := f.failDelete
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			ps = append(ps, fmt.Sprintf("%s-%d", f.name(t.TopicID), p.Partition))
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			if fail != nil {
				rp.ErrorCode = fail.(*kerr.Error).Code
			} else {
				delete(f.state[req.GroupID], tp{t.TopicID, p.Partition})
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	f.mu.Unlock()
	res := "OK"
	if fail != nil {
		res = fail.(*kerr.Error).Message
	}
	f.log(fmt.Sprintf("persister delete %s %s: %s", req.GroupID, strings.Join(ps, ","), res))
	return resp, nil
}

func (f *fakePersister) ReadStateSummary(_ context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition = p.Partition
			st, ok := f.state[req.GroupID][tp{t.TopicID, p.Partition}]
			switch {
			case f.failSummary != nil:
				rp.ErrorCode = f.failSummary.(*kerr.Error).Code
			case !ok:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				rp.StateEpoch, rp.StartOffset, rp.LeaderEpoch, rp.DeliveryCompleteCount = int32(st[0]), st[1], 0, f.deliveredDone
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// groupConfig is Config.GroupConfig: called on the coordinator's loop.
// The overrides resolve over Kafka's defaults (a nil broker config).
func (r *runner) groupConfig(id string) config.GroupConfig {
	r.cfgMu.Lock()
	defer r.cfgMu.Unlock()
	var bc *config.Config
	return bc.ResolveGroupConfig(maps.Clone(r.groupCfgs[id]))
}

// topicName names a topic id from the current image ("?" if unknown).
func (r *runner) topicName(id [16]byte) string {
	if ti := r.cache.Image().TopicByID(id); ti != nil {
		return ti.Name
	}
	return "?"
}

// shareExec runs the share group commands; false if cmd is not one.
func (r *runner) shareExec(cmd string, a args) bool {
	switch cmd {
	case "sg-heartbeat":
		r.sgHeartbeat(a)
	case "sg-leave":
		r.sgLeave(a)
	case "sg-describe":
		r.sgDescribe(a)
	case "sg-offsets":
		r.sgOffsets(a)
	case "sg-alter":
		r.sgAlter(a)
	case "sg-delete-offsets":
		r.sgDeleteOffsets(a)
	case "persister":
		if a.has("hold") || a.has("release") {
			r.persister.mu.Lock()
			if a.has("hold") {
				r.persister.hold = make(chan struct{})
			} else if r.persister.hold != nil {
				close(r.persister.hold)
				r.persister.hold = nil
			}
			r.persister.mu.Unlock()
			return true
		}
		var err error
		if v := a.str("fail", "none"); v != "none" {
			err = errArg(r.t, []string{v})
		}
		r.persister.mu.Lock()
		switch a.str("op", "init") {
		case "init":
			r.persister.failInit = err
		case "delete":
			r.persister.failDelete = err
		case "summary":
			r.persister.failSummary = err
		}
		r.persister.mu.Unlock()
	case "create-topic", "add-partitions":
		r.topicChange(cmd, a)
	case "group-config":
		// group-config g key=value ...: the GROUP resource's dynamic configs.
		r.cfgMu.Lock()
		if r.groupCfgs == nil {
			r.groupCfgs = map[string]map[string]string{}
		}
		r.groupCfgs[a.pos[0]] = maps.Clone(a.kv)
		r.cfgMu.Unlock()
	case "share-left":
		r.leftMu.Lock()
		r.shareNotes = append(r.shareNotes, "share members left: "+orDash(strings.Join(r.left, ",")))
		r.left = nil
		r.leftMu.Unlock()
	default:
		return false
	}
	return true
}

// shareOutput is what the persister was asked, after the records.
func (r *runner) shareOutput() []string {
	out := r.persister.takeCalls()
	out = append(out, r.shareNotes...)
	r.shareNotes = nil
	return out
}

func (r *runner) topicChange(cmd string, a args) {
	name := a.pos[0]
	n := int32(a.int(r.t, "parts", 1))
	old := r.cache.Image()
	var recs []metadatacache.Record
	var id [16]byte
	from := int32(0)
	if cmd == "create-topic" {
		id = [16]byte{7, byte(len(name)), name[0]}
		recs = append(recs, &metadatacache.TopicRecord{Name: name, TopicID: id})
	} else {
		ti := old.TopicByName(name)
		id, from = ti.ID, int32(len(ti.Partitions))
	}
	for p := from; p < n; p++ {
		recs = append(recs, part(id, p))
	}
	if err := r.cache.Apply(metadatacache.Batch{BaseOffset: old.Offset + 1, LastOffset: old.Offset + int64(len(recs)), Epoch: 1, Records: recs}); err != nil {
		r.t.Fatal(err)
	}
	r.c.OnImage(old, r.cache.Image())
}

func (r *runner) sgHeartbeat(a args) {
	g, mid := a.pos[0], a.str("member", "")
	if mid == `""` {
		mid = ""
	}
	r.bind(mid, mid)
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	if a.kv["epoch"] == "cur" { // the epoch of the member's last answer
		a.kv["epoch"] = strconv.Itoa(int(r.sgEpoch[mid]))
	}
	req.GroupID, req.MemberID, req.MemberEpoch = g, mid, int32(a.int(r.t, "epoch", 0))
	req.RackID = a.nstr("rack")
	switch v := a.kv["topics"]; {
	case v == `""`:
		req.SubscribedTopicNames = []string{}
	case req.MemberEpoch == 0 || v != "":
		req.SubscribedTopicNames = strings.Split(a.str("topics", "t"), ",")
	}
	r.start("sg-heartbeat "+g+" "+mid, func() func() string {
		resp := r.c.ShareGroupHeartbeat(context.Background(), req, "client", "/127.0.0.1")
		return func() string {
			if resp.ErrorCode != 0 {
				if resp.ErrorMessage != nil {
					return errName(resp.ErrorCode) + " " + strconv.Quote(*resp.ErrorMessage)
				}
				return errName(resp.ErrorCode)
			}
			r.sgEpoch[mid] = resp.MemberEpoch
			s := fmt.Sprintf("OK epoch=%d interval=%d", resp.MemberEpoch, resp.HeartbeatIntervalMillis)
			if resp.Assignment != nil {
				var ps []string
				for _, t := range resp.Assignment.TopicPartitions {
					for _, p := range t.Partitions {
						ps = append(ps, fmt.Sprintf("%s-%d", r.topicName(t.TopicID), p))
					}
				}
				s += " assigned=" + orDash(strings.Join(ps, ","))
			}
			return s
		}
	})
}

func (r *runner) sgLeave(a args) {
	g, mid := a.pos[0], a.str("member", "")
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.Version = 1
	req.GroupID, req.MemberID, req.MemberEpoch = g, mid, -1
	r.start("sg-leave "+g+" "+mid, func() func() string {
		resp := r.c.ShareGroupHeartbeat(context.Background(), req, "client", "/127.0.0.1")
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			return fmt.Sprintf("OK epoch=%d", resp.MemberEpoch)
		}
	})
}

func (r *runner) sgDescribe(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrShareGroupDescribeRequest()
	req.Version = 1
	req.GroupIDs = []string{g}
	r.start("sg-describe "+g, func() func() string {
		resp := r.c.ShareGroupDescribe(req)
		return func() string {
			rg := resp.Groups[0]
			if rg.ErrorCode != 0 {
				return errName(rg.ErrorCode) + " " + strconv.Quote(deref(rg.ErrorMessage))
			}
			s := fmt.Sprintf("%s epoch=%d assignment-epoch=%d assignor=%s", rg.GroupState, rg.GroupEpoch, rg.AssignmentEpoch, rg.Assignor)
			for _, m := range rg.Members {
				var ps []string
				for _, t := range m.Assignment.TopicPartitions {
					for _, p := range t.Partitions {
						ps = append(ps, fmt.Sprintf("%s-%d", t.Topic, p))
					}
				}
				s += fmt.Sprintf(" %s(epoch=%d rack=%s topics=%s assigned=%s)", m.MemberID, m.MemberEpoch, deref(m.RackID),
					strings.Join(m.SubscribedTopicNames, ","), orDash(strings.Join(ps, ",")))
			}
			return s
		}
	})
}

func (r *runner) sgOffsets(a args) {
	g := a.pos[0]
	rg := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	rg.GroupID = g
	if v := a.str("topics", ""); v != "" {
		for _, t := range strings.Split(v, ",") {
			rt := kmsg.NewDescribeShareGroupOffsetsRequestGroupTopic()
			rt.Topic = t
			if ti := r.cache.Image().TopicByName(t); ti != nil {
				for p := range ti.Partitions {
					rt.Partitions = append(rt.Partitions, p)
				}
			} else {
				rt.Partitions = []int32{0}
			}
			slices.Sort(rt.Partitions)
			rg.Topics = append(rg.Topics, rt)
		}
	}
	r.start("sg-offsets "+g, func() func() string {
		resp := r.c.DescribeShareGroupOffsets(context.Background(), rg)
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			var ps []string
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					e := fmt.Sprintf("%s-%d=%d", t.Topic, p.Partition, p.StartOffset)
					if p.Lag != -1 {
						e += fmt.Sprintf("/lag%d", p.Lag)
					}
					if p.ErrorCode != 0 {
						e += ":" + errName(p.ErrorCode)
					}
					ps = append(ps, e)
				}
			}
			return "OK " + orDash(strings.Join(ps, " "))
		}
	})
}

func (r *runner) sgAlter(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = g
	parts := a.partitions(r.t)
	for _, x := range sortedTopicParts(parts) {
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != x.topic {
			rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
			rt.Topic = x.topic
			req.Topics = append(req.Topics, rt)
		}
		p := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
		p.Partition, p.StartOffset = x.part, parts[x.topic][x.part]
		last := &req.Topics[len(req.Topics)-1]
		last.Partitions = append(last.Partitions, p)
	}
	r.start("sg-alter "+g, func() func() string {
		resp := r.c.AlterShareGroupOffsets(context.Background(), req)
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			var ps []string
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					ps = append(ps, fmt.Sprintf("%s-%d=%s", t.Topic, p.Partition, errName(p.ErrorCode)))
				}
			}
			return "OK " + strings.Join(ps, " ")
		}
	})
}

func (r *runner) sgDeleteOffsets(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
	req.GroupID = g
	for _, t := range strings.Split(a.str("topics", "t"), ",") {
		rt := kmsg.NewDeleteShareGroupOffsetsRequestTopic()
		rt.Topic = t
		req.Topics = append(req.Topics, rt)
	}
	r.start("sg-delete-offsets "+g, func() func() string {
		resp := r.c.DeleteShareGroupOffsets(context.Background(), req)
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			var ps []string
			for _, t := range resp.Topics {
				ps = append(ps, t.Topic+"="+errName(t.ErrorCode))
			}
			return "OK " + strings.Join(ps, " ")
		}
	})
}

// shareDump lists the share groups and their share state metadata.
func (r *runner) shareDump(s *shard) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(s.sgs)) {
		g := s.sgs[id]
		var ms []string
		for _, mid := range slices.Sorted(maps.Keys(g.members)) {
			m := g.members[mid]
			ms = append(ms, fmt.Sprintf("%s(epoch=%d assigned=%s)", mid, m.epoch, r.partsString(m.assigned)))
		}
		out = append(out, fmt.Sprintf("group %s share %s epoch=%d assignment-epoch=%d members=%s", id, g.stateString(), g.epoch,
			g.assignmentEpoch, orDash(strings.Join(ms, " "))))
	}
	for _, id := range slices.Sorted(maps.Keys(s.shareMeta)) {
		out = append(out, fmt.Sprintf("share-state %s %s", id, r.shareMetaString(s.shareMeta[id])))
	}
	return out
}

func (r *runner) shareMetaString(m *shareStateMeta) string {
	list := func(ts map[[16]byte]initTopic) string {
		var ps []string
		for _, id := range sortedIDs(ts) {
			for _, p := range ts[id].sorted() {
				ps = append(ps, fmt.Sprintf("%s-%d", ts[id].name, p))
			}
		}
		return orDash(strings.Join(ps, ","))
	}
	var del []string
	for _, id := range sortedIDs(m.deleting) {
		del = append(del, m.deleting[id])
	}
	return fmt.Sprintf("initializing=%s initialized=%s deleting=%s", list(m.initializing), list(m.initialized), orDash(strings.Join(del, ",")))
}

// describeShareKV is the one-line form of a share group record.
func (r *runner) describeShareKV(ver int16, k, v []byte) string {
	tomb := func(s string) string { return s + " tombstone" }
	switch ver {
	case keyShareGroupMetadata:
		gid, _, _ := readKey(k, false)
		if v == nil {
			return tomb("sg-epoch " + gid)
		}
		return fmt.Sprintf("sg-epoch %s = %d", gid, newReader(v).i32())
	case keyShareGroupTargetMetadata:
		gid, _, _ := readKey(k, false)
		if v == nil {
			return tomb("sg-target-epoch " + gid)
		}
		e, _, _ := readShareTargetMetadata(v)
		return fmt.Sprintf("sg-target-epoch %s = %d", gid, e)
	case keyShareGroupMemberMetadata:
		gid, mid, _ := readKey(k, true)
		s := fmt.Sprintf("sg-member %s %s", gid, mid)
		if v == nil {
			return tomb(s)
		}
		rd := newReader(v)
		rack := rd.nstr()
		rd.str()
		rd.str()
		n := rd.arr()
		var topics []string
		for i := int32(0); i < n && rd.r.Ok(); i++ {
			topics = append(topics, rd.str())
		}
		s += " topics=" + strings.Join(topics, ",")
		if rack != nil {
			s += " rack=" + *rack
		}
		return s
	case keyShareGroupTargetMember:
		gid, mid, _ := readKey(k, true)
		s := fmt.Sprintf("sg-target %s %s", gid, mid)
		if v == nil {
			return tomb(s)
		}
		return s + " = " + r.partsString(partSetOf(newReader(v).topicParts()))
	case keyShareGroupCurrentMember:
		gid, mid, _ := readKey(k, true)
		s := fmt.Sprintf("sg-current %s %s", gid, mid)
		if v == nil {
			return tomb(s)
		}
		rd := newReader(v)
		epoch, prev, _ := rd.i32(), rd.i32(), rd.i8()
		return s + fmt.Sprintf(" epoch=%d prev=%d assigned=%s", epoch, prev, r.partsString(partSetOf(rd.topicParts())))
	case keyShareGroupStatePartition:
		gid, _, _ := readKey(k, false)
		if v == nil {
			return tomb("share-state " + gid)
		}
		m, _ := readShareStateMeta(v, 0)
		return "share-state " + gid + " " + r.shareMetaString(m)
	}
	return fmt.Sprintf("key v%d", ver)
}
