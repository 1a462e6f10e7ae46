package replication

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// memLogs is a LogManager over storage.OpenLog on an in-memory (or given)
// file system.
type memLogs struct {
	fs   vfs.FS
	root string
	now  func() time.Time

	// crashed: the logs are opened after a crash (kill -9), so they are
	// recovered from the start as after an unclean shutdown.
	crashed bool

	mu      sync.Mutex
	logs    map[storage.TopicPartition]*storage.Log
	deleted []storage.TopicPartition
}

func (m *memLogs) GetOrCreateLog(tp storage.TopicPartition, id [16]byte, cfg storage.Config) (*storage.Log, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.logs[tp]; ok {
		if id != ([16]byte{}) && l.TopicID() != id {
			return nil, fmt.Errorf("log %s belongs to another topic id", tp)
		}
		return l, nil
	}
	l, err := storage.OpenLog(storage.LogOptions{FS: m.fs, Dir: m.root + "/" + tp.DirName(), Config: cfg, Now: m.now,
		TopicID: id, HadCleanShutdown: !m.crashed})
	if err != nil {
		return nil, err
	}
	m.logs[tp] = l
	return l, nil
}

func (m *memLogs) DeleteLog(tp storage.TopicPartition) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.logs[tp]
	if !ok {
		return nil
	}
	delete(m.logs, tp)
	m.deleted = append(m.deleted, tp)
	return l.Delete()
}

func (m *memLogs) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range m.logs {
		l.Close()
	}
}

// harness is a ReplicaManager for node 1 fed by a metadata cache.
type harness struct {
	t     *testing.T
	cache *metadatacache.Cache
	rm    *ReplicaManager
	logs  *memLogs
	next  int64
}

type harnessOpt func(*Config)

func newMemLogs() *memLogs {
	return &memLogs{fs: vfs.NewMemFS(), root: "/data", now: time.Now, logs: map[storage.TopicPartition]*storage.Log{}}
}

func newHarness(t *testing.T, opts ...harnessOpt) *harness {
	t.Helper()
	return newHarnessLogs(t, newMemLogs(), opts...)
}

// newHarnessLogs is newHarness over existing logs (a restarted broker).
func newHarnessLogs(t *testing.T, logs *memLogs, opts ...harnessOpt) *harness {
	t.Helper()
	cfg := Config{NodeID: 1, Logs: logs, Now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	h := &harness{t: t, cache: metadatacache.NewCache(metadatacache.Config{ClusterID: "test"}), rm: New(cfg), logs: logs}
	h.cache.Subscribe(h.rm.OnImage)
	t.Cleanup(func() {
		h.rm.Close()
		logs.close()
	})
	return h
}

func (h *harness) apply(recs ...metadatacache.Record) {
	h.t.Helper()
	b := metadatacache.Batch{BaseOffset: h.next, LastOffset: h.next + int64(len(recs)) - 1, Epoch: 1, Records: recs}
	h.next += int64(len(recs))
	if err := h.cache.Apply(b); err != nil {
		h.t.Fatalf("apply: %v", err)
	}
}

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], fmt.Sprintf("id-%s-................", name))
	return id
}

// createTopic registers a topic whose partitions have the given replicas,
// leader and ISR (nil ISR = replicas), leader epoch 0, plus topic configs.
func (h *harness) createTopic(name string, partitions int, replicas []int32, leader int32, isr []int32, configs map[string]string) [16]byte {
	h.t.Helper()
	return h.createTopicID(name, topicID(name), partitions, replicas, leader, isr, configs)
}

func (h *harness) createTopicID(name string, id [16]byte, partitions int, replicas []int32, leader int32, isr []int32, configs map[string]string) [16]byte {
	h.t.Helper()
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = name, id
	recs := []metadatacache.Record{tr}
	for k, v := range configs {
		c := metadatacache.NewConfigRecord()
		c.ResourceType, c.ResourceName, c.Name = metadatacache.ConfigResourceTopic, name, k
		c.Value = &v
		recs = append(recs, c)
	}
	if isr == nil {
		isr = replicas
	}
	for p := 0; p < partitions; p++ {
		pr := metadatacache.NewPartitionRecord()
		pr.PartitionID, pr.TopicID = int32(p), id
		pr.Replicas, pr.Isr, pr.Leader = replicas, isr, leader
		pr.LeaderEpoch, pr.PartitionEpoch = 0, 0
		recs = append(recs, pr)
	}
	h.apply(recs...)
	return id
}

// changeLeader moves a partition's leadership (PartitionChangeRecord), which
// bumps the leader epoch.
func (h *harness) changeLeader(name string, partition, leader int32) {
	h.t.Helper()
	c := metadatacache.NewPartitionChangeRecord()
	c.TopicID, c.PartitionID, c.Leader = topicID(name), partition, leader
	h.apply(c)
}

func (h *harness) deleteTopic(name string) {
	h.t.Helper()
	r := metadatacache.NewRemoveTopicRecord()
	r.TopicID = topicID(name)
	h.apply(r)
}

// records builds one batch of n records with timestamps near now.
func records(n int, prefix string) []storage.Record {
	out := make([]storage.Record, n)
	now := time.Now().UnixMilli()
	for i := range out {
		out[i] = storage.Record{Key: []byte(fmt.Sprintf("%s-k%d", prefix, i)), Value: []byte(fmt.Sprintf("%s-v%d", prefix, i)), Timestamp: now}
	}
	return out
}

func batch(n int, prefix string) []byte {
	return storage.BuildBatch(storage.BatchOptions{}, records(n, prefix)...)
}

func idemBatch(n int, pid int64, epoch int16, seq int32) []byte {
	return storage.BuildBatch(storage.BatchOptions{Producer: &storage.BatchProducer{ID: pid, Epoch: epoch, BaseSequence: seq}}, records(n, "i")...)
}

func produceReq(version int16, acks int16, timeoutMs int32, topic string, partition int32, recs []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, timeoutMs
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = topic, topicID(topic)
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, recs
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// produce appends one batch with acks=1 and returns the partition answer.
func (h *harness) produce(topic string, partition int32, recs []byte) kmsg.ProduceResponseTopicPartition {
	h.t.Helper()
	resp := h.rm.Produce(context.Background(), produceReq(12, 1, 5000, topic, partition, recs), "test")
	return resp.Topics[0].Partitions[0]
}

type fetchPartSpec struct {
	topic     string
	partition int32
	offset    int64
	maxBytes  int32
	epoch     int32 // current leader epoch, -1 none
}

func fetchReq(version int16, maxWaitMs, minBytes, maxBytes int32, parts ...fetchPartSpec) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = version, maxWaitMs, minBytes, maxBytes
	req.ReplicaID = -1
	req.SessionEpoch = -1
	for _, p := range parts {
		if n := len(req.Topics); n == 0 || req.Topics[n-1].Topic != p.topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic, t.TopicID = p.topic, topicID(p.topic)
			req.Topics = append(req.Topics, t)
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p.partition, p.offset, p.maxBytes, p.epoch
		if p.maxBytes == 0 {
			rp.PartitionMaxBytes = 1 << 20
		}
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, rp)
	}
	return req
}

// fetch runs a fetch and materializes its records.
func (h *harness) fetch(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	h.t.Helper()
	res := h.rm.Fetch(context.Background(), req)
	if err := res.Materialize(); err != nil {
		h.t.Fatalf("materialize: %v", err)
	}
	return res.Resp
}

// values decodes the record values of a partition's record batches.
func values(t *testing.T, b []byte) []string {
	t.Helper()
	if len(b) == 0 {
		return nil
	}
	recs, err := storage.DecodeRecords(b)
	if err != nil {
		t.Fatalf("decode records: %v", err)
	}
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

// offsets returns the offsets of a partition's records.
func offsets(t *testing.T, b []byte) []int64 {
	t.Helper()
	recs, err := storage.DecodeRecords(b)
	if err != nil {
		t.Fatalf("decode records: %v", err)
	}
	var out []int64
	for _, r := range recs {
		out = append(out, r.Offset)
	}
	return out
}

func newConfigRecord(topic, key, value string) *metadatacache.ConfigRecord {
	c := metadatacache.NewConfigRecord()
	c.ResourceType, c.ResourceName, c.Name = metadatacache.ConfigResourceTopic, topic, key
	c.Value = &value
	return c
}
