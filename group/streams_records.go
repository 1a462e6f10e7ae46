package group

// Streams group records of __consumer_offsets (KIP-1071), in Kafka 4.4's
// formats (group-coordinator/src/main/resources/common/message/StreamsGroup*.json,
// written by StreamsCoordinatorRecordHelpers; the key's leading int16 is
// the record type of CoordinatorRecordType):
//
//	key v17  StreamsGroupMetadataKey                  value v0: epoch, metadata hash, tags 0-3 (validated topology epoch, last assignment configs, topology description epochs)
//	key v18  StreamsGroupPartitionMetadataKey         (removed in 4.1; ignored on replay)
//	key v19  StreamsGroupMemberMetadataKey            value v0: instance id, rack, client id/host, rebalance timeout, topology epoch, process id, endpoint, client tags
//	key v20  StreamsGroupTargetAssignmentMetadataKey  value v0: assignment epoch, tag 0 assignment timestamp (KIP-1263)
//	key v21  StreamsGroupTargetAssignmentMemberKey    value v0: target active, standby and warm-up tasks
//	key v22  StreamsGroupCurrentMemberAssignmentKey   value v0: member epoch, previous epoch, state, tasks and tasks pending revocation (active tasks with tag 0 assignment epochs)
//	key v23  StreamsGroupTopologyKey                  value v0: topology epoch and subtopologies
//
// Task lists are sorted by subtopology id, partitions ascending (as the
// record helpers sort them); tagged fields are written only when they
// differ from their default, in tag order.

import (
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
)

// Record types of the streams group keys.
const (
	keyStreamsGroupMetadata        = 17
	keyStreamsGroupPartitionMeta   = 18
	keyStreamsGroupMemberMetadata  = 19
	keyStreamsGroupTargetMetadata  = 20
	keyStreamsGroupTargetMember    = 21
	keyStreamsGroupCurrentMember   = 22
	keyStreamsGroupTopology        = 23
	streamsDefaultTopologyEpochTag = -1
)

func isStreamsKey(ver int16) bool {
	return ver >= keyStreamsGroupMetadata && ver <= keyStreamsGroupTopology
}

// tasks is a set of task ids: subtopology id -> partitions.
type tasks map[string]map[int32]struct{}

func (t tasks) clone() tasks {
	c := tasks{}
	for s, ps := range t {
		c[s] = maps.Clone(ps)
	}
	return c
}

func (t tasks) has(sub string, p int32) bool { _, ok := t[sub][p]; return ok }

func (t tasks) add(sub string, p int32) {
	if t[sub] == nil {
		t[sub] = map[int32]struct{}{}
	}
	t[sub][p] = struct{}{}
}

func (t tasks) del(sub string, p int32) {
	delete(t[sub], p)
	if len(t[sub]) == 0 {
		delete(t, sub)
	}
}

func (t tasks) size() int {
	n := 0
	for _, ps := range t {
		n += len(ps)
	}
	return n
}

func (t tasks) equal(o tasks) bool {
	if t.size() != o.size() {
		return false
	}
	for s, ps := range t {
		for p := range ps {
			if !o.has(s, p) {
				return false
			}
		}
	}
	return true
}

// minus is t without the tasks of o.
func (t tasks) minus(o tasks) tasks {
	c := tasks{}
	for s, ps := range t {
		for p := range ps {
			if !o.has(s, p) {
				c.add(s, p)
			}
		}
	}
	return c
}

// intersect is the tasks of t also in o.
func (t tasks) intersect(o tasks) tasks {
	c := tasks{}
	for s, ps := range t {
		for p := range ps {
			if o.has(s, p) {
				c.add(s, p)
			}
		}
	}
	return c
}

func (t tasks) union(o tasks) tasks {
	c := t.clone()
	for s, ps := range o {
		for p := range ps {
			c.add(s, p)
		}
	}
	return c
}

func (t tasks) subs() []string { return slices.Sorted(maps.Keys(t)) }

func (t tasks) parts(sub string) []int32 { return slices.Sorted(maps.Keys(t[sub])) }

// tasksTuple is Kafka's TasksTuple: active, standby and warm-up tasks.
type tasksTuple struct{ active, standby, warmup tasks }

func newTasksTuple() tasksTuple { return tasksTuple{tasks{}, tasks{}, tasks{}} }

func (t tasksTuple) clone() tasksTuple {
	return tasksTuple{t.active.clone(), t.standby.clone(), t.warmup.clone()}
}

func (t tasksTuple) equal(o tasksTuple) bool {
	return t.active.equal(o.active) && t.standby.equal(o.standby) && t.warmup.equal(o.warmup)
}

func (t tasksTuple) empty() bool {
	return t.active.size()+t.standby.size()+t.warmup.size() == 0
}

// ---- writers ----

func (w *fw) i64(v int64)  { w.b = kbin.AppendInt64(w.b, v) }
func (w *fw) i16(v int16)  { w.b = kbin.AppendInt16(w.b, v) }
func (w *fw) u16(v uint16) { w.b = kbin.AppendUint16(w.b, v) }

// taskIDs writes []TaskIds; epochs, when non-nil, is each active task's
// assignment epoch (tag 0 of the current assignment's TaskIds).
func (w *fw) taskIDs(t tasks, epochs map[string]map[int32]int32) {
	subs := t.subs()
	w.arr(len(subs))
	for _, s := range subs {
		w.str(s)
		ps := t.parts(s)
		w.arr(len(ps))
		for _, p := range ps {
			w.i32(p)
		}
		if epochs == nil {
			w.tags()
			continue
		}
		inner := &fw{}
		inner.arr(len(ps))
		for _, p := range ps {
			inner.i32(epochs[s][p])
		}
		w.uvarint(1)
		w.uvarint(0)
		w.uvarint(uint32(len(inner.b)))
		w.raw(inner.b)
	}
}

// tagged writes a tagged-field section of (tag, bytes) pairs given in tag
// order; an empty list is the empty section.
func (w *fw) tagged(fields [][2]any) {
	w.uvarint(uint32(len(fields)))
	for _, f := range fields {
		b := f[1].([]byte)
		w.uvarint(uint32(f[0].(int)))
		w.uvarint(uint32(len(b)))
		w.raw(b)
	}
}

func streamsGroupMetadataRecord(g *streamsGroup) record {
	w := newValue()
	w.i32(g.epoch)
	w.i64(g.metadataHash)
	var tags [][2]any
	if g.validatedTopologyEpoch != -1 {
		tags = append(tags, [2]any{0, kbin.AppendInt32(nil, g.validatedTopologyEpoch)})
	}
	if g.lastAssignmentConfigs != nil {
		t := &fw{}
		keys := slices.Sorted(maps.Keys(g.lastAssignmentConfigs))
		t.arr(len(keys))
		for _, k := range keys {
			t.str(k)
			t.str(g.lastAssignmentConfigs[k])
			t.tags()
		}
		tags = append(tags, [2]any{1, t.b})
	}
	if g.storedDescEpoch != -1 {
		tags = append(tags, [2]any{2, kbin.AppendInt32(nil, g.storedDescEpoch)})
	}
	if g.failedDescEpoch != -1 {
		tags = append(tags, [2]any{3, kbin.AppendInt32(nil, g.failedDescEpoch)})
	}
	w.tagged(tags)
	return record{Key: groupKey(keyStreamsGroupMetadata, g.id), Value: w.b}
}

func streamsMemberMetadataRecord(group string, m *streamsMember) record {
	w := newValue()
	w.nstr(m.instanceID)
	w.nstr(m.rackID)
	w.str(m.clientID)
	w.str(m.clientHost)
	w.i32(m.rebalanceTimeoutMs)
	w.i32(m.topologyEpoch)
	w.str(m.processID)
	if m.endpoint == nil {
		w.i8(-1)
	} else {
		w.i8(1)
		w.str(m.endpoint.host)
		w.u16(m.endpoint.port)
		w.tags()
	}
	w.arr(len(m.clientTags))
	for _, kv := range m.clientTags {
		w.str(kv[0])
		w.str(kv[1])
		w.tags()
	}
	return record{Key: memberKey(keyStreamsGroupMemberMetadata, group, m.id), Value: w.done()}
}

func streamsTargetMetadataRecord(group string, epoch int32, tsMs int64) record {
	w := newValue()
	w.i32(epoch)
	if tsMs == 0 {
		return record{Key: groupKey(keyStreamsGroupTargetMetadata, group), Value: w.done()}
	}
	w.tagged([][2]any{{0, kbin.AppendInt64(nil, tsMs)}})
	return record{Key: groupKey(keyStreamsGroupTargetMetadata, group), Value: w.b}
}

func streamsTargetMemberRecord(group, member string, t tasksTuple) record {
	w := newValue()
	w.taskIDs(t.active, nil)
	w.taskIDs(t.standby, nil)
	w.taskIDs(t.warmup, nil)
	return record{Key: memberKey(keyStreamsGroupTargetMember, group, member), Value: w.done()}
}

func streamsCurrentAssignmentRecord(group string, m *streamsMember) record {
	w := newValue()
	w.i32(m.epoch)
	w.i32(m.prevEpoch)
	w.i8(m.state)
	w.taskIDs(m.assigned.active, m.activeEpochs)
	w.taskIDs(m.assigned.standby, nil)
	w.taskIDs(m.assigned.warmup, nil)
	w.taskIDs(m.revoking.active, nil)
	w.taskIDs(m.revoking.standby, nil)
	w.taskIDs(m.revoking.warmup, nil)
	return record{Key: memberKey(keyStreamsGroupCurrentMember, group, m.id), Value: w.done()}
}

func streamsTopologyRecord(group string, t *streamsTopology) record {
	w := newValue()
	w.i32(t.epoch)
	w.arr(len(t.subs))
	info := func(a []topicInfo) {
		w.arr(len(a))
		for _, ti := range a {
			w.str(ti.name)
			w.i32(ti.partitions)
			w.i16(ti.rf)
			w.arr(len(ti.configs))
			for _, kv := range ti.configs {
				w.str(kv[0])
				w.str(kv[1])
				w.tags()
			}
			w.tags()
		}
	}
	strs := func(a []string) {
		w.arr(len(a))
		for _, s := range a {
			w.str(s)
		}
	}
	i16s := func(a []int16) {
		w.arr(len(a))
		for _, v := range a {
			w.i16(v)
		}
	}
	for _, s := range t.subs {
		w.str(s.id)
		strs(s.sources)
		strs(s.sourceRegex)
		info(s.changelogs)
		strs(s.repartitionSinks)
		info(s.repartitionSources)
		w.arr(len(s.copartition))
		for _, c := range s.copartition {
			i16s(c.sources)
			i16s(c.regex)
			i16s(c.repartition)
			w.tags()
		}
		w.tags()
	}
	return record{Key: groupKey(keyStreamsGroupTopology, group), Value: w.done()}
}

// ---- readers ----

func (r *fr) i64() int64 { return r.r.Int64() }
func (r *fr) i16() int16 { return r.r.Int16() }

// taggedFields reads a tagged-field section into tag -> bytes.
func (r *fr) taggedFields() map[uint32][]byte {
	n := r.r.Uvarint()
	if int64(n) > int64(len(r.r.Src)) {
		r.r.Span(len(r.r.Src) + 1)
		return nil
	}
	var out map[uint32][]byte
	for i := uint32(0); i < n && r.r.Ok(); i++ {
		tag := r.r.Uvarint()
		size := r.r.Uvarint()
		b := r.r.Span(int(size))
		if out == nil {
			out = map[uint32][]byte{}
		}
		out[tag] = b
	}
	return out
}

func (r *fr) strs() []string {
	n := r.arr()
	var out []string
	for i := int32(0); i < n && r.r.Ok(); i++ {
		out = append(out, r.str())
	}
	return out
}

func (r *fr) i16s() []int16 {
	n := r.arr()
	var out []int16
	for i := int32(0); i < n && r.r.Ok(); i++ {
		out = append(out, r.i16())
	}
	return out
}

// taskIDs reads []TaskIds, with the assignment epochs of tag 0 when
// present (epochs nil: not wanted).
func (r *fr) taskIDs(epochs map[string]map[int32]int32) tasks {
	t := tasks{}
	n := r.arr()
	for i := int32(0); i < n && r.r.Ok(); i++ {
		sub := r.str()
		np := r.arr()
		var ps []int32
		for j := int32(0); j < np && r.r.Ok(); j++ {
			p := r.i32()
			ps = append(ps, p)
			t.add(sub, p)
		}
		tags := r.taggedFields()
		if b, ok := tags[0]; ok && epochs != nil {
			er := &fr{r: kbin.Reader{Src: b}}
			ne := er.arr()
			for j := int32(0); j < ne && er.r.Ok() && int(j) < len(ps); j++ {
				if epochs[sub] == nil {
					epochs[sub] = map[int32]int32{}
				}
				epochs[sub][ps[j]] = er.i32()
			}
		}
	}
	return t
}

func readTopicInfos(r *fr) []topicInfo {
	n := r.arr()
	var out []topicInfo
	for i := int32(0); i < n && r.r.Ok(); i++ {
		ti := topicInfo{name: r.str(), partitions: r.i32(), rf: r.i16()}
		nc := r.arr()
		for j := int32(0); j < nc && r.r.Ok(); j++ {
			ti.configs = append(ti.configs, [2]string{r.str(), r.str()})
			r.skipTags()
		}
		r.skipTags()
		out = append(out, ti)
	}
	return out
}

func readStreamsTopology(v []byte) (*streamsTopology, bool) {
	r := newReader(v)
	t := &streamsTopology{epoch: r.i32()}
	n := r.arr()
	for i := int32(0); i < n && r.r.Ok(); i++ {
		s := subtopology{id: r.str()}
		s.sources = r.strs()
		s.sourceRegex = r.strs()
		s.changelogs = readTopicInfos(r)
		s.repartitionSinks = r.strs()
		s.repartitionSources = readTopicInfos(r)
		nc := r.arr()
		for j := int32(0); j < nc && r.r.Ok(); j++ {
			c := copartitionGroup{sources: r.i16s(), regex: r.i16s(), repartition: r.i16s()}
			r.skipTags()
			s.copartition = append(s.copartition, c)
		}
		r.skipTags()
		t.subs = append(t.subs, s)
	}
	r.skipTags()
	return t, r.r.Ok()
}
