package group

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
)

// OffsetsTopic is Kafka's internal topic of group metadata and offsets.
const OffsetsTopic = "__consumer_offsets"

// Store is where a coordinator shard's records go: one partition of
// __consumer_offsets.
type Store interface {
	// Append writes records as one batch to partition as its leader and
	// waits until they are committed (high watermark). Errors are kerr
	// errors (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT, ...).
	Append(ctx context.Context, partition int32, recs []record, timestampMs int64) error
	// Replay calls fn for every record of partition from the log start
	// to the log end, in offset order.
	Replay(partition int32, fn func(key, value []byte)) error
}

// Producer is what ReplicaStore needs of replication.ReplicaManager.
type Producer interface {
	Produce(ctx context.Context, req *kmsg.ProduceRequest, clientID string) *kmsg.ProduceResponse
}

// LogSource is what ReplicaStore needs of storage.Manager.
type LogSource interface {
	Log(tp storage.TopicPartition) (*storage.Log, bool)
}

// adminClientID is the client id Kafka's internal writers use; only it may
// produce to internal topics.
const adminClientID = "__admin_client"

// ReplicaStore writes through the replica manager, as Kafka's coordinator
// runtime does (acks=all, as the internal admin client), and replays the
// partition log from storage.
type ReplicaStore struct {
	Replicas Producer
	Logs     LogSource
	// TimeoutMs bounds the wait for the high watermark
	// (offsets.commit.timeout.ms, default 5000).
	TimeoutMs int32
}

func (s *ReplicaStore) Append(ctx context.Context, partition int32, recs []record, ts int64) error {
	rs := make([]storage.Record, len(recs))
	for i, r := range recs {
		rs[i] = storage.Record{Key: r.Key, Value: r.Value, Timestamp: ts}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = -1
	req.TimeoutMillis = s.TimeoutMs
	if req.TimeoutMillis <= 0 {
		req.TimeoutMillis = 5000
	}
	t := kmsg.NewProduceRequestTopic()
	t.Topic = OffsetsTopic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = storage.BuildBatch(storage.BatchOptions{}, rs...)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp := s.Replicas.Produce(ctx, req, adminClientID)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError
	}
	return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
}

func (s *ReplicaStore) Replay(partition int32, fn func(key, value []byte)) error {
	l, ok := s.Logs.Log(storage.TopicPartition{Topic: OffsetsTopic, Partition: partition})
	if !ok {
		return kerr.NotLeaderForPartition
	}
	off := l.LogStartOffset()
	end := l.LogEndOffset()
	for off < end {
		b, err := l.ReadBatches(off, 1<<20, end, true)
		if err != nil {
			return fmt.Errorf("reading %s-%d at %d: %w", OffsetsTopic, partition, off, err)
		}
		if len(b) == 0 {
			break
		}
		next := off
		err = storage.WalkBatches(b, false, func(h storage.BatchHeader, raw []byte) error {
			next = h.NextOffset()
			if h.IsControl() {
				return nil
			}
			recs, err := storage.DecodeRecords(raw)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if r.Offset < off {
					continue
				}
				fn(r.Key, r.Value)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if next <= off {
			return errors.New("replay made no progress")
		}
		off = next
	}
	return nil
}

// MemStore is an in-memory Store for tests: every partition is a slice of
// records, and Fail makes the next appends fail.
type MemStore struct {
	mu    sync.Mutex
	parts map[int32][]record
	Fail  error
}

func NewMemStore() *MemStore { return &MemStore{parts: map[int32][]record{}} }

func (m *MemStore) Append(_ context.Context, partition int32, recs []record, _ int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.Fail != nil {
		return m.Fail
	}
	m.parts[partition] = append(m.parts[partition], recs...)
	return nil
}

func (m *MemStore) Replay(partition int32, fn func(key, value []byte)) error {
	m.mu.Lock()
	recs := append([]record(nil), m.parts[partition]...)
	m.mu.Unlock()
	for _, r := range recs {
		fn(r.Key, r.Value)
	}
	return nil
}

// Len is the number of records written to partition.
func (m *MemStore) Len(partition int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.parts[partition])
}
