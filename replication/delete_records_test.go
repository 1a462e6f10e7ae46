package replication

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func deleteReq(timeoutMs int32, topic string, partition int32, offset int64) *kmsg.DeleteRecordsRequest {
	r := kmsg.NewPtrDeleteRecordsRequest()
	r.TimeoutMillis = timeoutMs
	t := kmsg.NewDeleteRecordsRequestTopic()
	t.Topic = topic
	p := kmsg.NewDeleteRecordsRequestTopicPartition()
	p.Partition, p.Offset = partition, offset
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func TestDeleteRecords(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.createTopic("other", 1, []int32{2}, 2, nil, nil)
		h.createTopic("compacted", 1, []int32{1}, 1, nil, map[string]string{"cleanup.policy": "compact"})
		h.createTopic("__consumer_offsets", 1, []int32{1}, 1, nil, nil)
		h.createTopic("isr2", 1, []int32{1, 2}, 1, []int32{1, 2}, nil)
		for range 5 {
			h.produce("t", 0, batch(2, "x"))
		}
		ctx := context.Background()
		del := func(topic string, off int64) kmsg.DeleteRecordsResponseTopicPartition {
			return h.rm.DeleteRecords(ctx, deleteReq(1000, topic, 0, off)).Topics[0].Partitions[0]
		}
		for _, c := range []struct {
			topic string
			off   int64
			want  *kerr.Error
		}{
			{"nope", 1, kerr.UnknownTopicOrPartition},
			{"other", 1, kerr.NotLeaderForPartition},
			{"compacted", 0, kerr.PolicyViolation},
			{"__consumer_offsets", 0, kerr.InvalidTopicException},
			{"t", 11, kerr.OffsetOutOfRange},
			{"t", -2, kerr.OffsetOutOfRange},
		} {
			if got := del(c.topic, c.off); got.ErrorCode != c.want.Code || got.LowWatermark != -1 {
				t.Errorf("%s %d: %+v, want %v", c.topic, c.off, got, c.want)
			}
		}
		if got := del("t", 4); got.ErrorCode != 0 || got.LowWatermark != 4 {
			t.Fatalf("delete to 4: %+v", got)
		}
		if got := del("t", 2); got.ErrorCode != 0 || got.LowWatermark != 4 {
			t.Fatalf("delete below the log start: %+v", got)
		}
		if got := del("t", -1); got.ErrorCode != 0 || got.LowWatermark != 10 {
			t.Fatalf("delete to the high watermark: %+v", got)
		}
		p, _ := h.rm.Partition("t", 0)
		if lso := p.log.LogStartOffset(); lso != 10 {
			t.Fatalf("log start %d", lso)
		}
		// a follower behind holds the low watermark down: the answer waits, then times out
		h.produce("isr2", 0, batch(3, "y"))
		ip, _ := h.rm.Partition("isr2", 0)
		ip.updateFollowerFetchState(2, 3, 0)
		start := time.Now()
		got := h.rm.DeleteRecords(ctx, deleteReq(500, "isr2", 0, 2)).Topics[0].Partitions[0]
		if got.ErrorCode != kerr.RequestTimedOut.Code || got.LowWatermark != 0 || time.Since(start) < 500*time.Millisecond {
			t.Fatalf("waiting for a follower: %+v after %v", got, time.Since(start))
		}
		go func() {
			time.Sleep(200 * time.Millisecond)
			ip.updateFollowerFetchState(2, 3, 2)
		}()
		got = h.rm.DeleteRecords(ctx, deleteReq(5000, "isr2", 0, 2)).Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.LowWatermark != 2 {
			t.Fatalf("after the follower caught up: %+v", got)
		}
	})
}
