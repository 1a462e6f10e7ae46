package sharecoord

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// The test harness: a coordinator on a MemLog, a ManualClock, a metadata
// cache fed with records, and a fake controller that records the topics
// asked of it.

var clockStart = time.Unix(1_700_000_000, 0)

type fakeController struct {
	mu      sync.Mutex
	created []string
}

func (f *fakeController) Request(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	r := req.(*kmsg.CreateTopicsRequest)
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := r.ResponseKind().(*kmsg.CreateTopicsResponse)
	for _, t := range r.Topics {
		var cfgs []string
		for _, c := range t.Configs {
			cfgs = append(cfgs, c.Name+"="+*c.Value)
		}
		f.created = append(f.created, fmt.Sprintf("create %s partitions=%d rf=%d %s", t.Topic, t.NumPartitions, t.ReplicationFactor, strings.Join(cfgs, " ")))
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic = t.Topic
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// prunableLog is the MemLog with DeleteRecords (a RecordsDeleter): it
// records the offsets pruning asked for; the records stay, so a replay
// still sees everything.
type prunableLog struct {
	*coordinator.MemLog
	mu     sync.Mutex
	pruned []string
}

func (l *prunableLog) DeleteRecords(tp coordinator.TopicPartition, before int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruned = append(l.pruned, fmt.Sprintf("%s-%d below %d", tp.Topic, tp.Partition, before))
	return nil
}

type harness struct {
	t     *testing.T
	plog  *prunableLog
	log   *coordinator.MemLog
	clock *coordinator.ManualClock
	cache *metadatacache.Cache
	ctrl  *fakeController
	c     *Coordinator
	cfg   Config

	nparts    int32
	topicIDs  map[string][16]byte
	nextTopic byte
	offset    int64
}

// newHarness: brokers 1-3, topic foo (3 partitions), __share_group_state
// with nparts partitions led by node 1 (none: the topic does not exist).
func newHarness(t *testing.T, nparts int32, cfg Config) *harness {
	h := &harness{t: t, log: coordinator.NewMemLog(true), clock: coordinator.NewManualClock(clockStart),
		cache: metadatacache.NewCache(metadatacache.Config{}), ctrl: &fakeController{}, nparts: nparts,
		topicIDs: map[string][16]byte{}, nextTopic: 1}
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = "metadata.version", 27
	recs := []metadatacache.Record{fl}
	for id := int32(1); id <= 3; id++ {
		b := metadatacache.NewRegisterBrokerRecord()
		b.BrokerID, b.BrokerEpoch, b.Fenced = id, 10, false
		b.EndPoints = []metadatacache.BrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost", Port: uint16(9091 + id)}}
		recs = append(recs, b)
	}
	h.apply(recs...)
	if nparts > 0 {
		leaders := make([]int32, nparts)
		for i := range leaders {
			leaders[i] = 1
		}
		h.createTopic(TopicName, leaders...)
	}
	h.createTopic("foo", 1, 2, 3)
	cfg.NodeID = 1
	h.plog = &prunableLog{MemLog: h.log}
	cfg.Writer, cfg.Clock, cfg.Image, cfg.Controller = h.plog, h.clock, h.cache.Image, h.ctrl
	h.cfg = cfg
	h.start()
	t.Cleanup(func() { h.c.Close() })
	return h
}

func (h *harness) apply(recs ...metadatacache.Record) {
	h.t.Helper()
	b := metadatacache.Batch{BaseOffset: h.offset, LastOffset: h.offset + int64(len(recs)) - 1, Epoch: 1, Records: recs}
	h.offset += int64(len(recs))
	if err := h.cache.Apply(b); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) createTopic(name string, leaders ...int32) {
	id := [16]byte{h.nextTopic}
	h.nextTopic++
	h.topicIDs[name] = id
	recs := []metadatacache.Record{&metadatacache.TopicRecord{Name: name, TopicID: id}}
	for p, l := range leaders {
		r := metadatacache.NewPartitionRecord()
		r.TopicID, r.PartitionID = id, int32(p)
		r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = []int32{l}, []int32{l}, []int32{}, []int32{}
		r.Leader, r.LeaderEpoch = l, 0
		recs = append(recs, r)
	}
	h.apply(recs...)
}

func (h *harness) setLeader(topic string, partition, leader int32) {
	old := h.cache.Image()
	r := metadatacache.NewPartitionChangeRecord()
	r.TopicID, r.PartitionID, r.Leader = h.topicIDs[topic], partition, leader
	h.apply(r)
	h.c.OnImage(old, h.cache.Image())
	h.waitLoaded()
}

func (h *harness) deleteTopic(topic string) {
	old := h.cache.Image()
	h.apply(&metadatacache.RemoveTopicRecord{TopicID: h.topicIDs[topic]})
	h.c.OnImage(old, h.cache.Image())
	h.drain()
}

// setFeature finalizes a feature level (share.version).
func (h *harness) setFeature(name string, level int16) {
	old := h.cache.Image()
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = name, level
	h.apply(fl)
	h.c.OnImage(old, h.cache.Image())
}

// drain waits until every loaded partition ran what was queued before
// (Posts, timers that fired): an operation queued now runs after them.
func (h *harness) drain() {
	for _, p := range h.c.rt.Partitions() {
		_ = h.c.rt.Run(context.Background(), p, func(*shard) error { return nil })
	}
}

func (h *harness) start() {
	h.c = New(h.cfg)
	h.c.OnImage(nil, h.cache.Image())
	h.waitLoaded()
}

func (h *harness) waitLoaded() {
	deadline := time.Now().Add(5 * time.Second)
	for {
		t := h.cache.Image().TopicByName(TopicName)
		led := 0
		if t != nil {
			for _, p := range t.Partitions {
				if p.Leader == 1 {
					led++
				}
			}
		}
		if len(h.c.rt.Partitions()) == led && !h.c.rt.Loading() {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal("partitions did not load")
		}
		time.Sleep(time.Millisecond)
	}
}

// crash drops the coordinator (the log keeps what was written) and starts
// a new one on the same log at a new leader epoch, as after a failover.
func (h *harness) crash() {
	h.c.Close()
	if t := h.cache.Image().TopicByName(TopicName); t != nil {
		var recs []metadatacache.Record
		for p := range t.Partitions {
			r := metadatacache.NewPartitionChangeRecord()
			r.TopicID, r.PartitionID, r.Leader = t.ID, p, 1
			recs = append(recs, r)
		}
		h.apply(recs...)
	}
	h.start()
}

// dump lists every share partition's state of every loaded shard.
func (h *harness) dump() []string {
	var out []string
	parts := h.c.rt.Partitions()
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		var lines []string
		err := h.c.rt.Run(context.Background(), p, func(s *shard) error {
			for k, e := range s.states {
				lines = append(lines, fmt.Sprintf("p%d %s %s", p, h.keyName(k), formatEntry(e)))
			}
			return nil
		})
		if err != nil {
			out = append(out, fmt.Sprintf("p%d: %v", p, err))
		}
		sort.Strings(lines)
		out = append(out, lines...)
	}
	if len(out) == 0 {
		out = []string{"(no state)"}
	}
	return out
}

func (h *harness) keyName(k recordKey) string {
	for name, id := range h.topicIDs {
		if id == k.topicID {
			return fmt.Sprintf("%s/%s-%d", k.group, name, k.partition)
		}
	}
	return fmt.Sprintf("%s/%s-%d", k.group, sharestate.UUIDString(k.topicID), k.partition)
}

func formatEntry(e *entry) string {
	updates := "-"
	if e.hasUpdates {
		updates = fmt.Sprint(e.updates)
	}
	return fmt.Sprintf("%s leader_epoch_seen=%d updates=%s", formatSnapshot(e.state), e.leaderEpoch, updates)
}

func formatSnapshot(v snapshotValue) string {
	return fmt.Sprintf("snapshot_epoch=%d state_epoch=%d leader_epoch=%d start=%d dcc=%d create=%s write=%s batches=%s",
		v.snapshotEpoch, v.stateEpoch, v.leaderEpoch, v.startOffset, v.deliveryCompleteCount, relMs(v.createMs), relMs(v.writeMs), formatBatches(v.batches))
}

func relMs(ms int64) string {
	if ms == 0 {
		return "0"
	}
	return fmt.Sprintf("+%dms", ms-clockStart.UnixMilli())
}

var stateNames = map[int8]string{0: "AVAILABLE", 1: "ACQUIRED", 2: "ACKNOWLEDGED", 4: "ARCHIVED"}

func formatBatches(bs []stateBatch) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		name := stateNames[b.state]
		if name == "" {
			name = fmt.Sprint(b.state)
		}
		parts[i] = fmt.Sprintf("%d-%d:%s:%d", b.first, b.last, name, b.count)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// logLines decodes __share_group_state partition p.
func (h *harness) logLines(p int32) []string {
	var out []string
	for _, r := range h.log.Records(coordinator.TopicPartition{Topic: TopicName, Partition: p}) {
		typ, k, err := decodeKey(r.Key)
		if err != nil {
			out = append(out, fmt.Sprintf("%d: bad key: %v", r.Offset, err))
			continue
		}
		name := h.keyName(k)
		switch {
		case r.Value == nil:
			out = append(out, fmt.Sprintf("%d: tombstone %s", r.Offset, name))
		case typ == recordTypeSnapshot:
			v, err := decodeSnapshotValue(r.Value)
			if err != nil {
				out = append(out, fmt.Sprintf("%d: bad snapshot: %v", r.Offset, err))
				continue
			}
			out = append(out, fmt.Sprintf("%d: ShareSnapshot %s %s", r.Offset, name, formatSnapshot(v)))
		default:
			v, err := decodeUpdateValue(r.Value)
			if err != nil {
				out = append(out, fmt.Sprintf("%d: bad update: %v", r.Offset, err))
				continue
			}
			out = append(out, fmt.Sprintf("%d: ShareUpdate %s snapshot_epoch=%d leader_epoch=%d start=%d dcc=%d batches=%s", r.Offset, name,
				v.snapshotEpoch, v.leaderEpoch, v.startOffset, v.deliveryCompleteCount, formatBatches(v.batches)))
		}
	}
	if len(out) == 0 {
		out = []string{"(empty)"}
	}
	return out
}

func errName(code int16) string {
	if code == 0 {
		return "NONE"
	}
	var ke *kerr.Error
	if e := kerr.ErrorForCode(code); e != nil {
		if k, ok := e.(*kerr.Error); ok {
			ke = k
		}
	}
	if ke == nil {
		return fmt.Sprint(code)
	}
	if ke == kerr.NotLeaderForPartition {
		return "NOT_LEADER_OR_FOLLOWER"
	}
	return ke.Message
}

func partResult(name string, code int16, msg *string) string {
	s := name + ": " + errName(code)
	if code != 0 && msg != nil {
		s += " (" + *msg + ")"
	}
	return s
}
