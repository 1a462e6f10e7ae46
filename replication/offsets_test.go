package replication

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

type listed struct {
	err       int16
	ts, off   int64
	epoch     int32
	partition int32
}

func listOffsets(h *harness, version int16, replica int32, iso int8, topic string, parts ...[2]int64) []listed {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version, req.ReplicaID, req.IsolationLevel = version, replica, iso
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = topic
	for _, p := range parts {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = int32(p[0]), p[1]
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	var out []listed
	for _, p := range h.rm.ListOffsets(req).Topics[0].Partitions {
		out = append(out, listed{p.ErrorCode, p.Timestamp, p.Offset, p.LeaderEpoch, p.Partition})
	}
	return out
}

func TestListOffsets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 2, []int32{1}, 1, nil, nil)
		t0 := time.Now().UnixMilli()
		b1 := storage.BuildBatch(storage.BatchOptions{}, storage.Record{Value: []byte("a"), Timestamp: t0 + 10}, storage.Record{Value: []byte("b"), Timestamp: t0 + 30})
		b2 := storage.BuildBatch(storage.BatchOptions{}, storage.Record{Value: []byte("c"), Timestamp: t0 + 20})
		h.produce("t", 0, b1)
		h.changeLeader("t", 0, 1) // epoch 1
		h.produce("t", 0, b2)

		cases := []struct {
			name string
			ts   int64
			want listed
		}{
			{"latest", -1, listed{0, -1, 3, 1, 0}},
			{"earliest", -2, listed{0, -1, 0, 0, 0}},
			{"earliest local", -4, listed{0, -1, 0, 0, 0}},
			{"max timestamp", -3, listed{0, t0 + 30, 1, 0, 0}},
			{"latest tiered", -5, listed{0, -1, -1, -1, 0}},
			{"by timestamp", t0 + 15, listed{0, t0 + 30, 1, 0, 0}},
			{"by timestamp in a later batch", t0 + 31, listed{0, -1, -1, -1, 0}},
			{"first", t0, listed{0, t0 + 10, 0, 0, 0}},
			{"unknown special", -7, listed{kerr.UnsupportedVersion.Code, -1, -1, -1, 0}},
		}
		for _, c := range cases {
			got := listOffsets(h, 9, -1, 0, "t", [2]int64{0, c.ts})[0]
			if got != c.want {
				t.Errorf("%s: got %+v want %+v", c.name, got, c.want)
			}
		}
		// Max timestamp needs v7; earliest pending upload (KIP-1023) v11,
		// and without tiered storage is -1 / -1, as Kafka answers.
		if got := listOffsets(h, 6, -1, 0, "t", [2]int64{0, -3})[0]; got.err != kerr.UnsupportedVersion.Code {
			t.Errorf("max timestamp at v6: %+v", got)
		}
		if got := listOffsets(h, 10, -1, 0, "t", [2]int64{0, -6})[0]; got.err != kerr.UnsupportedVersion.Code {
			t.Errorf("earliest pending upload at v10: %+v", got)
		}
		if got := listOffsets(h, 11, -1, 0, "t", [2]int64{0, -6})[0]; got != (listed{0, -1, -1, -1, 0}) {
			t.Errorf("earliest pending upload at v11: %+v", got)
		}
		// A partition named twice.
		for _, got := range listOffsets(h, 9, -1, 0, "t", [2]int64{0, -1}, [2]int64{0, -2}) {
			if got.err != kerr.InvalidRequest.Code {
				t.Errorf("duplicate: %+v", got)
			}
		}
		if got := listOffsets(h, 9, -1, 0, "nope", [2]int64{0, -1})[0]; got.err != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("unknown topic: %+v", got)
		}
		// Epoch checks.
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version = 9
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "t"
		for _, e := range []int32{0, 1, 2} {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, e
			lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{rp}
			req.Topics = []kmsg.ListOffsetsRequestTopic{lt}
			got := h.rm.ListOffsets(req).Topics[0].Partitions[0].ErrorCode
			want := map[int32]int16{0: kerr.FencedLeaderEpoch.Code, 1: 0, 2: kerr.UnknownLeaderEpoch.Code}[e]
			if got != want {
				t.Errorf("current epoch %d: %v", e, kerr.ErrorForCode(got))
			}
		}
	})
}

func TestListOffsetsBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1, 2}, 1, nil, nil)
		h.createTopic("f", 1, []int32{1, 2}, 2, nil, nil)
		h.produce("t", 0, batch(4, "x"))
		// Consumers see the high watermark (0: the follower has not fetched),
		// replicas the log end.
		if got := listOffsets(h, 9, -1, 0, "t", [2]int64{0, -1})[0]; got.off != 0 {
			t.Errorf("consumer latest %+v", got)
		}
		if got := listOffsets(h, 9, 2, 0, "t", [2]int64{0, -1})[0]; got.off != 4 {
			t.Errorf("replica latest %+v", got)
		}
		// Timestamp lookups stop at the bound.
		if got := listOffsets(h, 9, -1, 0, "t", [2]int64{0, 0})[0]; got.off != -1 {
			t.Errorf("timestamp beyond the high watermark %+v", got)
		}
		// Only the debugging replica id may ask a follower.
		if got := listOffsets(h, 9, -1, 0, "f", [2]int64{0, -1})[0]; got.err != kerr.NotLeaderForPartition.Code {
			t.Errorf("follower answered a consumer: %+v", got)
		}
		if got := listOffsets(h, 9, -2, 0, "f", [2]int64{0, -2})[0]; got.err != 0 {
			t.Errorf("debugging replica: %+v", got)
		}
	})
}

func TestOffsetForLeaderEpoch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.createTopic("f", 1, []int32{1, 2}, 2, nil, nil)
		h.produce("t", 0, batch(3, "a"))
		h.changeLeader("t", 0, 1) // epoch 1 starts at 3
		h.produce("t", 0, batch(2, "b"))
		h.changeLeader("t", 0, 1) // epoch 2 starts at 5
		h.produce("t", 0, batch(1, "c"))

		ask := func(topic string, current, epoch int32) kmsg.OffsetForLeaderEpochResponseTopicPartition {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.Version, req.ReplicaID = 4, -1
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, current, epoch
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return h.rm.OffsetForLeaderEpoch(req).Topics[0].Partitions[0]
		}
		for _, c := range []struct {
			current, epoch, wantEpoch int32
			wantOff                   int64
			err                       *kerr.Error
		}{
			{-1, 0, 0, 3, nil},
			{2, 1, 1, 5, nil},
			{2, 2, 2, 6, nil},
			{2, 7, -1, -1, nil}, // beyond the latest epoch: undefined, as in Kafka
			{1, 1, -1, -1, kerr.FencedLeaderEpoch},
			{3, 1, -1, -1, kerr.UnknownLeaderEpoch},
		} {
			got := ask("t", c.current, c.epoch)
			code := int16(0)
			if c.err != nil {
				code = c.err.Code
			}
			if got.ErrorCode != code || got.LeaderEpoch != c.wantEpoch || got.EndOffset != c.wantOff {
				t.Errorf("current %d epoch %d: %+v", c.current, c.epoch, got)
			}
		}
		if got := ask("f", -1, 0); got.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Errorf("follower: %+v", got)
		}
		if got := ask("nope", -1, 0); got.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("unknown: %+v", got)
		}
	})
}

// fakeController answers AllocateProducerIDs with consecutive blocks.
type fakeController struct {
	mu    sync.Mutex
	next  int64
	calls int
	fail  error
	gate  chan struct{} // when set, requests wait for it
}

func (c *fakeController) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.fail != nil {
		return nil, c.fail
	}
	r := req.(*kmsg.AllocateProducerIDsRequest)
	resp := r.ResponseKind().(*kmsg.AllocateProducerIDsResponse)
	resp.ProducerIDStart, resp.ProducerIDLen = c.next, 10
	c.next += 10
	return resp, nil
}

func TestInitProducerID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctl := &fakeController{next: 1000}
		h := newHarness(t, func(c *Config) { c.Controller = ctl })
		ctx := context.Background()
		init := func(txn *string, pid int64, epoch int16) *kmsg.InitProducerIDResponse {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 4, txn, pid, epoch
			return h.rm.InitProducerID(ctx, req)
		}
		seen := map[int64]bool{}
		for i := 0; i < 25; i++ {
			r := init(nil, -1, -1)
			if r.ErrorCode != 0 || r.ProducerEpoch != 0 || r.ProducerID < 1000 || seen[r.ProducerID] {
				t.Fatalf("call %d: %+v", i, r)
			}
			seen[r.ProducerID] = true
		}
		synctest.Wait()
		ctl.mu.Lock()
		calls := ctl.calls
		ctl.mu.Unlock()
		if calls != 3 {
			t.Fatalf("%d AllocateProducerIDs calls for 25 ids in blocks of 10 (with prefetch), want 3", calls)
		}
		// An existing producer id and epoch gets a new id, as in Kafka.
		if r := init(nil, 1000, 0); r.ErrorCode != 0 || seen[r.ProducerID] || r.ProducerEpoch != 0 {
			t.Fatalf("re-init: %+v", r)
		}
		if r := init(nil, 1000, -1); r.ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("half pair: %+v", r)
		}
		txn := "tx"
		if r := init(&txn, -1, -1); r.ErrorCode != kerr.CoordinatorNotAvailable.Code || r.ProducerID != -1 {
			t.Fatalf("transactional: %+v", r)
		}
	})
}

func TestInitProducerIDControllerDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctl := &fakeController{fail: errors.New("no controller")}
		h := newHarness(t, func(c *Config) { c.Controller = ctl })
		req := kmsg.NewPtrInitProducerIDRequest()
		if r := h.rm.InitProducerID(context.Background(), req); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("answer %+v", r)
		}
		// A slow controller: the request waits at most producerIDWait.
		ctl2 := &fakeController{gate: make(chan struct{})}
		h2 := newHarness(t, func(c *Config) { c.Controller = ctl2 })
		start := time.Now()
		if r := h2.rm.InitProducerID(context.Background(), req); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("slow answer %+v", r)
		}
		if d := time.Since(start); d != producerIDWait {
			t.Fatalf("waited %v", d)
		}
		close(ctl2.gate)
		synctest.Wait()
		if r := h2.rm.InitProducerID(context.Background(), req); r.ErrorCode != 0 {
			t.Fatalf("after the block arrived: %+v", r)
		}
	})
}

func TestDescribeLogDirs(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	m, err := storage.OpenManager(storage.ManagerOptions{FS: vfs.Default, LogDirs: dirs, Config: storage.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := newHarness(t, func(c *Config) { c.Logs = m })
	h.createTopic("t", 3, []int32{1}, 1, nil, nil)
	h.produce("t", 1, batch(5, "x"))

	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 4
	resp := h.rm.DescribeLogDirs(req)
	if len(resp.Dirs) != 2 {
		t.Fatalf("%d dirs", len(resp.Dirs))
	}
	parts := 0
	var size int64
	for _, d := range resp.Dirs {
		if d.ErrorCode != 0 || d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes {
			t.Fatalf("dir %+v", d)
		}
		for _, tp := range d.Topics {
			for _, p := range tp.Partitions {
				parts++
				size += p.Size
				if p.OffsetLag != 0 || p.IsFuture {
					t.Fatalf("partition %+v", p)
				}
			}
		}
	}
	if parts != 3 || size != int64(len(batch(5, "x"))) {
		t.Fatalf("%d partitions, %d bytes", parts, size)
	}
	// Only partition 1 asked for.
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{1}
	req.Topics = []kmsg.DescribeLogDirsRequestTopic{rt}
	parts = 0
	for _, d := range h.rm.DescribeLogDirs(req).Dirs {
		for _, tp := range d.Topics {
			parts += len(tp.Partitions)
		}
	}
	if parts != 1 {
		t.Fatalf("%d partitions for one asked", parts)
	}
	// KIP-112: an offline dir answers KAFKA_STORAGE_ERROR and no topics; the
	// other one is still described
	m.FailDir(dirs[0], errors.New("injected"))
	req.Topics = nil
	resp = h.rm.DescribeLogDirs(req)
	if len(resp.Dirs) != 2 {
		t.Fatalf("%d dirs", len(resp.Dirs))
	}
	for _, d := range resp.Dirs {
		offline := d.Dir == mustAbs(t, dirs[0])
		switch {
		case offline && (d.ErrorCode != kerr.KafkaStorageError.Code || len(d.Topics) != 0):
			t.Fatalf("offline dir: %+v", d)
		case !offline && (d.ErrorCode != 0 || d.TotalBytes <= 0):
			t.Fatalf("online dir: %+v", d)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestConfigChangeApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		c := newConfigRecord("t", "max.message.bytes", "100")
		h.apply(c)
		if p := h.produce("t", 0, batch(10, "a-long-value")); p.ErrorCode != kerr.MessageTooLarge.Code {
			t.Fatalf("after lowering max.message.bytes: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		part, _ := h.rm.Partition("t", 0)
		part.mu.RLock()
		got := part.log.Config().MaxMessageBytes
		part.mu.RUnlock()
		if got != 100 {
			t.Fatalf("log config max.message.bytes %d", got)
		}
	})
}

func TestDynamicBrokerDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, func(c *Config) {
			c.TopicDefaults = func() map[string]string {
				return map[string]string{"retention.ms": "1000", "max.message.bytes": "5000"}
			}
		})
		h.createTopic("t", 1, []int32{1}, 1, nil, map[string]string{"retention.ms": "3000"})
		def := metadatacache.NewConfigRecord()
		def.ResourceType, def.Name = metadatacache.ConfigResourceBroker, "message.max.bytes"
		v := "200"
		def.Value = &v
		h.apply(def)
		part, _ := h.rm.Partition("t", 0)
		part.mu.RLock()
		cfg := part.log.Config()
		part.mu.RUnlock()
		if cfg.RetentionMs != 3000 || cfg.MaxMessageBytes != 200 {
			t.Fatalf("retention.ms %d (want the topic's 3000), max.message.bytes %d (want the dynamic default 200)", cfg.RetentionMs, cfg.MaxMessageBytes)
		}
	})
}
