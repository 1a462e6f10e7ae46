package txn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// The test harness: a coordinator on a MemLog, a ManualClock, a metadata
// cache fed with records, and fakes for the producer id allocator, the
// controller and the marker sender whose answers the test controls.

var clockStart = time.Unix(1_700_000_000, 0)

type fakePIDs struct {
	mu   sync.Mutex
	next int64
	fail error
}

func (f *fakePIDs) GenerateProducerID(context.Context) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return 0, f.fail
	}
	id := f.next
	f.next++
	return id, nil
}

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

// markerRule answers markers to a broker (and partition) with an error, a
// number of times (0: always).
type markerRule struct {
	broker    int32 // -1: any
	tp        *TopicPartition
	code      int16
	transport bool
	left      int
}

type sentMarkers struct {
	seq    int
	broker int32
	lines  []string
}

// fakeMarkers is the MarkerSender: it logs every request, holds those to
// held brokers until released, and answers by the rules (NONE otherwise).
type fakeMarkers struct {
	mu    sync.Mutex
	rules []*markerRule
	held  map[int32]chan struct{}
	// parked counts the requests waiting on a held broker; release takes
	// them off at once, before their goroutines wake, so that the harness
	// never mistakes a released request for a parked one.
	parked   int
	parkedBy map[int32]int
	seq      int
	sent     []sentMarkers
}

func (f *fakeMarkers) WriteTxnMarkers(ctx context.Context, broker int32, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	f.mu.Lock()
	f.seq++
	s := sentMarkers{seq: f.seq, broker: broker}
	for _, m := range req.Markers {
		res := "ABORT"
		if m.Committed {
			res = "COMMIT"
		}
		var parts []string
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
			}
		}
		s.lines = append(s.lines, fmt.Sprintf("broker=%d v%d pid=%d epoch=%d %s coordinator_epoch=%d tv=%d %s",
			broker, req.Version, m.ProducerID, m.ProducerEpoch, res, m.CoordinatorEpoch, m.TransactionVersion, strings.Join(parts, ",")))
	}
	f.sent = append(f.sent, s)
	if ch := f.held[broker]; ch != nil {
		f.parked++
		f.parkedBy[broker]++
		f.mu.Unlock()
		select {
		case <-ch:
			f.mu.Lock()
		case <-ctx.Done():
			f.mu.Lock()
			if f.held[broker] == ch {
				f.parked--
				f.parkedBy[broker]--
			}
		}
	}
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	// left: -1 answers forever, otherwise the answers still to give.
	live := func(r *markerRule) bool { return r.left != 0 }
	take := func(r *markerRule) {
		if r.left > 0 {
			r.left--
		}
	}
	for _, r := range f.rules {
		if live(r) && r.transport && (r.broker < 0 || r.broker == broker) {
			take(r)
			return nil, errors.New("connection refused")
		}
	}
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				for _, r := range f.rules {
					if live(r) && !r.transport && (r.broker < 0 || r.broker == broker) &&
						(r.tp == nil || (r.tp.Topic == t.Topic && r.tp.Partition == p)) {
						take(r)
						rp.ErrorCode = r.code
						break
					}
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

type harness struct {
	t     *testing.T
	log   *coordinator.MemLog
	clock *coordinator.ManualClock
	cache *metadatacache.Cache
	pids  *fakePIDs
	mk    *fakeMarkers
	ctrl  *fakeController
	c     *Coordinator
	cfg   Config

	nparts    int32
	topicIDs  map[string][16]byte
	nextTopic byte
	offset    int64 // next metadata offset
}

func newHarness(t *testing.T, nparts int32, tv int16, cfg Config) *harness {
	h := &harness{t: t, log: coordinator.NewMemLog(true), clock: coordinator.NewManualClock(clockStart),
		cache: metadatacache.NewCache(metadatacache.Config{}), pids: &fakePIDs{next: 1000},
		mk: &fakeMarkers{held: map[int32]chan struct{}{}, parkedBy: map[int32]int{}}, ctrl: &fakeController{}, nparts: nparts,
		topicIDs: map[string][16]byte{}, nextTopic: 1}
	var recs []metadatacache.Record
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = "metadata.version", 27
	recs = append(recs, fl)
	if tv > 0 {
		fl := metadatacache.NewFeatureLevelRecord()
		fl.Name, fl.FeatureLevel = "transaction.version", tv
		recs = append(recs, fl)
	}
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
	h.createTopic("bar", 2)
	cfg.NodeID = 1
	cfg.Writer, cfg.Clock, cfg.Image = h.log, h.clock, h.cache.Image
	cfg.Controller, cfg.ProducerIDs, cfg.Markers = h.ctrl, h.pids, h.mk
	cfg.InterBrokerListener = "PLAINTEXT"
	h.cfg = cfg
	h.start()
	t.Cleanup(func() {
		h.mk.releaseAll()
		h.c.Close()
	})
	return h
}

func (f *fakeMarkers) releaseAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for b := range f.held {
		f.releaseLocked(b)
	}
}

func (f *fakeMarkers) releaseLocked(b int32) {
	if ch := f.held[b]; ch != nil {
		close(ch)
		delete(f.held, b)
		f.parked -= f.parkedBy[b]
		f.parkedBy[b] = 0
	}
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

// setLeader moves a partition's leadership (-1: none); the leader epoch
// goes up.
func (h *harness) setLeader(topic string, partition, leader int32) {
	old := h.cache.Image()
	r := metadatacache.NewPartitionChangeRecord()
	r.TopicID, r.PartitionID, r.Leader = h.topicIDs[topic], partition, leader
	h.apply(r)
	h.c.OnImage(old, h.cache.Image())
}

func (h *harness) deleteTopic(topic string) {
	old := h.cache.Image()
	h.apply(&metadatacache.RemoveTopicRecord{TopicID: h.topicIDs[topic]})
	h.c.OnImage(old, h.cache.Image())
}

// start builds a coordinator on the harness's log and loads its partitions.
func (h *harness) start() {
	h.c = New(h.cfg)
	h.c.OnImage(nil, h.cache.Image())
	h.waitLoaded()
	h.quiesce()
}

func (h *harness) waitLoaded() {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if t := h.cache.Image().TopicByName(TopicName); t == nil || len(h.c.rt.Partitions()) == countLed(t, 1) {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatal("partitions did not load")
		}
		time.Sleep(time.Millisecond)
	}
}

func countLed(t *metadatacache.Topic, node int32) int {
	n := 0
	for _, p := range t.Partitions {
		if p.Leader == node {
			n++
		}
	}
	return n
}

// crash drops the coordinator as a kill -9 would (no clean shutdown: the
// log keeps what was written), and starts a new one on the same log at a
// new leader epoch, as after a failover.
func (h *harness) crash() {
	// A kill -9 stops the old coordinator at once: fence its writes before
	// anything can answer it, so a marker response released below cannot
	// let it write CompleteCommit/CompleteAbort before it is gone (the next
	// leader's log never has that record).
	for p := int32(0); p < h.nparts; p++ {
		h.log.SetLeaderEpoch(coordinator.TopicPartition{Topic: TopicName, Partition: p}, math.MaxInt32)
	}
	h.mk.releaseAll()
	h.c.Close()
	var recs []metadatacache.Record
	for p := int32(0); p < h.nparts; p++ {
		r := metadatacache.NewPartitionChangeRecord()
		r.TopicID, r.PartitionID, r.Leader = h.topicIDs[TopicName], p, 1
		recs = append(recs, r)
	}
	h.apply(recs...)
	for p := int32(0); p < h.nparts; p++ {
		h.log.SetLeaderEpoch(coordinator.TopicPartition{Topic: TopicName, Partition: p}, -1)
	}
	h.start()
}

// quiesce waits until nothing moves: no marker queued or being sent except
// those the fake holds, no background goroutine, and every loop drained.
func (h *harness) quiesce() {
	h.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	stable := 0
	last := ""
	for stable < 2 {
		if time.Now().After(deadline) {
			h.t.Fatalf("coordinator did not quiesce: %s", h.progress())
		}
		if !h.idle() {
			time.Sleep(100 * time.Microsecond)
			stable = 0
			continue
		}
		h.barrier()
		p := h.progress()
		if p == last && h.idle() {
			stable++
		} else {
			stable = 0
		}
		last = p
	}
}

func (h *harness) idle() bool {
	h.mk.mu.Lock()
	parked := h.mk.parked
	held := map[int32]bool{}
	for b := range h.mk.held {
		held[b] = true
	}
	h.mk.mu.Unlock()
	mc := h.c.markers
	mc.mu.Lock()
	stuck := 0
	for dest, q := range mc.queues {
		if held[dest] {
			stuck += len(q)
		}
	}
	mc.mu.Unlock()
	return h.c.busy.Load() == 0 && mc.busy.Load() == int64(parked+stuck)
}

func (h *harness) progress() string {
	h.mk.mu.Lock()
	seq := h.mk.seq
	h.mk.mu.Unlock()
	var ends []string
	for p := int32(0); p < h.nparts; p++ {
		tp := coordinator.TopicPartition{Topic: TopicName, Partition: p}
		ends = append(ends, fmt.Sprint(h.log.LogEnd(tp)))
	}
	return fmt.Sprintf("sent=%d busy=%d/%d ends=%s", seq, h.c.busy.Load(), h.c.markers.busy.Load(), strings.Join(ends, ","))
}

// barrier waits until every loaded loop ran what was queued before it.
func (h *harness) barrier() {
	for _, p := range h.c.rt.Partitions() {
		ch := make(chan struct{})
		h.c.rt.Post(p, "barrier", func(*shard) error { close(ch); return nil })
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			h.t.Fatalf("partition %d did not run the barrier", p)
		}
	}
}

// onLoop runs fn on the loop of txnID's partition and waits for it (no
// commit wait: it works with commits held).
func (h *harness) onLoop(txnID string, fn func(s *shard)) {
	ch := make(chan struct{})
	h.c.rt.Post(h.c.PartitionFor(txnID), "inspect", func(s *shard) error { fn(s); close(ch); return nil })
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		h.t.Fatalf("loop of %s did not answer", txnID)
	}
}

func errName(code int16) string {
	switch code {
	case 0:
		return "NONE"
	case kerr.NotLeaderForPartition.Code:
		return "NOT_LEADER_OR_FOLLOWER"
	}
	if e := kerr.ErrorForCode(code); e != nil {
		var ke *kerr.Error
		if errors.As(e, &ke) {
			return ke.Message
		}
	}
	return fmt.Sprint(code)
}

// sentLines prints and forgets the marker requests sent so far, by broker
// then in the order each broker got them.
func (h *harness) sentLines() []string {
	h.mk.mu.Lock()
	sent := h.mk.sent
	h.mk.sent = nil
	h.mk.mu.Unlock()
	sort.SliceStable(sent, func(i, j int) bool {
		if sent[i].broker != sent[j].broker {
			return sent[i].broker < sent[j].broker
		}
		return sent[i].seq < sent[j].seq
	})
	var out []string
	for _, s := range sent {
		out = append(out, s.lines...)
	}
	if len(out) == 0 {
		out = []string{"(none)"}
	}
	return out
}

// logLines decodes __transaction_state as kafka-dump-log.sh's transaction
// log decoder would show it.
func (h *harness) logLines(partition int32) []string {
	var out []string
	for _, r := range h.log.Records(coordinator.TopicPartition{Topic: TopicName, Partition: partition}) {
		d, err := decodeRecord(r.Key, r.Value)
		if err != nil {
			out = append(out, fmt.Sprintf("%d: %v", r.Offset, err))
			continue
		}
		if d.meta == nil {
			out = append(out, fmt.Sprintf("%d: %s tombstone", r.Offset, d.txnID))
			continue
		}
		vv := int16(r.Value[0])<<8 | int16(r.Value[1])
		out = append(out, fmt.Sprintf("%d: %s v%d %s", r.Offset, d.txnID, vv, describeMeta(d.meta, true)))
	}
	if len(out) == 0 {
		out = []string{"(empty)"}
	}
	return out
}

func relMs(ms int64) string {
	if ms < 0 {
		return fmt.Sprint(ms)
	}
	return fmt.Sprintf("+%d", ms-clockStart.UnixMilli())
}

func describeMeta(m *metadata, logged bool) string {
	parts := make([]string, 0, len(m.partitions))
	for _, tp := range m.partitions.sorted() {
		parts = append(parts, tp.String())
	}
	s := fmt.Sprintf("%s pid=%d epoch=%d", m.state, m.producerID, m.producerEpoch)
	if m.prevProducerID != noProducerID {
		s += fmt.Sprintf(" prev=%d", m.prevProducerID)
	}
	if m.nextProducerID != noProducerID {
		s += fmt.Sprintf(" next=%d", m.nextProducerID)
	}
	if !logged {
		s += fmt.Sprintf(" last_epoch=%d", m.lastProducerEpoch)
	}
	s += fmt.Sprintf(" timeout=%d start=%s updated=%s tv=%d", m.timeoutMs, relMs(m.startMs), relMs(m.lastUpdateMs), m.clientTV)
	if len(parts) > 0 {
		s += " [" + strings.Join(parts, " ") + "]"
	}
	if !logged && m.pending != noState {
		s += " pending=" + m.pending.String()
	}
	if !logged && m.hasFailedEpochFence {
		s += " failed_fence"
	}
	return s
}
