package replication

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// With flush.messages=1 a produce request's partitions are synced at once (their
// fdatasyncs overlap), nothing is visible below the high watermark before its
// sync, and a partition whose sync fails answers KAFKA_STORAGE_ERROR while the
// others succeed.
func TestProduceFlushMessagesSyncsPartitionsTogether(t *testing.T) {
	const parts = 4
	var syncing atomic.Int32
	release := make(chan struct{})
	var failPartition atomic.Value // dir name suffix whose .log sync fails
	failPartition.Store("")
	var sw vfs.Switch
	logs := newMemLogs()
	logs.fs = vfs.NewInjecting(logs.fs, sw.Inject)
	h := newHarnessLogs(t, logs)
	h.createTopic("d", parts, []int32{1}, 1, nil, map[string]string{"flush.messages": "1"})

	sw.Set(func(op vfs.Op) vfs.Fault {
		if op.Kind != vfs.OpSync || !strings.HasSuffix(op.Path, ".log") {
			return vfs.Fault{}
		}
		if f := failPartition.Load().(string); f != "" && strings.Contains(op.Path, f) {
			return vfs.Fault{Err: vfs.ErrInjected}
		}
		syncing.Add(1)
		<-release // every partition's sync must be in flight before any ends
		return vfs.Fault{}
	})
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 12, 1, 5000
	tp := kmsg.NewProduceRequestTopic()
	tp.Topic = "d"
	for p := range int32(parts) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch(2, "x")
		tp.Partitions = append(tp.Partitions, rp)
	}
	req.Topics = append(req.Topics, tp)

	done := make(chan *kmsg.ProduceResponse)
	go func() { done <- h.rm.Produce(context.Background(), req, "test") }()
	deadline := time.After(10 * time.Second)
	for syncing.Load() < parts {
		select {
		case <-deadline:
			t.Fatalf("%d of %d partitions' syncs in flight together", syncing.Load(), parts)
		case <-time.After(time.Millisecond):
		}
	}
	// appended, not yet durable: not visible
	for p := range int32(parts) {
		part, _ := h.rm.Partition("d", p)
		if hw := part.HighWatermark(); hw != 0 {
			t.Fatalf("partition %d: high watermark %d before its sync", p, hw)
		}
	}
	close(release)
	resp := <-done
	for _, sp := range resp.Topics[0].Partitions {
		if sp.ErrorCode != 0 || sp.BaseOffset != 0 {
			t.Fatalf("partition %d: %v base %d", sp.Partition, kerr.ErrorForCode(sp.ErrorCode), sp.BaseOffset)
		}
		part, _ := h.rm.Partition("d", sp.Partition)
		if hw := part.HighWatermark(); hw != 2 {
			t.Fatalf("partition %d: high watermark %d after its sync", sp.Partition, hw)
		}
	}

	// a failed sync: that partition answers KAFKA_STORAGE_ERROR, the others succeed
	failPartition.Store("d-2/")
	for i := range req.Topics[0].Partitions {
		req.Topics[0].Partitions[i].Records = batch(2, "y")
	}
	resp = h.rm.Produce(context.Background(), req, "test")
	for _, sp := range resp.Topics[0].Partitions {
		want := int16(0)
		if sp.Partition == 2 {
			want = kerr.KafkaStorageError.Code
		}
		if sp.ErrorCode != want {
			t.Fatalf("partition %d: %v, want %v", sp.Partition, kerr.ErrorForCode(sp.ErrorCode), kerr.ErrorForCode(want))
		}
	}
}
