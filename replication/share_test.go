package replication

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage"
)

// ReadShare reads up to the high watermark, or the last stable offset with
// the aborted transactions for read_committed; ShareOffsets gives what a
// share partition is loaded with; a partition not led here is
// NOT_LEADER_OR_FOLLOWER.
func TestReadShare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newTxnHarness(t)
		h.createTopic("t", 1, []int32{1}, 1, nil, nil)
		h.createTopic("other", 1, []int32{1, 2}, 2, nil, nil)
		ctx := context.Background()
		if p := h.produce("t", 0, batch(2, "a")); p.ErrorCode != 0 {
			t.Fatalf("produce %+v", p)
		}
		if p := h.rm.Produce(ctx, txnProduce(11, "tx", "t", 0, txnBatch(2, 5, 0, 0)), "cli").Topics[0].Partitions[0]; p.ErrorCode != 0 {
			t.Fatalf("txn produce %+v", p)
		}
		batches := func(b []byte) (out [][2]int64) {
			storage.WalkBatches(b, true, func(hd storage.BatchHeader, _ []byte) error {
				out = append(out, [2]int64{hd.BaseOffset, hd.LastOffset()})
				return nil
			})
			return out
		}
		r, err := h.rm.ReadShare("t", 0, 0, 1<<20, true, false)
		if err != nil || len(batches(r.Records)) != 2 || r.LogStart != 0 {
			t.Fatalf("read_uncommitted: %v %v", batches(r.Records), err)
		}
		r, err = h.rm.ReadShare("t", 0, 0, 1<<20, true, true)
		if got := batches(r.Records); err != nil || len(got) != 1 || got[0] != [2]int64{0, 1} {
			t.Fatalf("read_committed with an open transaction: %v %v", got, err)
		}
		if code := h.marker("t", 0, 5, 0, false, 0, 0); code != 0 {
			t.Fatalf("marker %v", kerr.ErrorForCode(code))
		}
		r, err = h.rm.ReadShare("t", 0, 2, 1<<20, true, true)
		if got := batches(r.Records); err != nil || len(got) != 2 || len(r.Aborted) != 1 || r.Aborted[0].ProducerID != 5 {
			t.Fatalf("read_committed after the abort: %v %+v %v", got, r.Aborted, err)
		}
		if r, err := h.rm.ReadShare("t", 0, 5, 1<<20, true, false); err != nil || len(r.Records) != 0 {
			t.Fatalf("at the end: %v %v", r.Records, err)
		}
		start, hw, epoch, err := h.rm.ShareOffsets("t", 0)
		if err != nil || start != 0 || hw != 5 || epoch < 0 {
			t.Fatalf("offsets %d %d %d %v", start, hw, epoch, err)
		}
		if _, err := h.rm.ReadShare("other", 0, 0, 1<<20, true, false); err != kerr.NotLeaderForPartition {
			t.Fatalf("not the leader: %v", err)
		}
		if _, _, _, err := h.rm.ShareOffsets("nope", 0); err != kerr.UnknownTopicOrPartition {
			t.Fatalf("unknown topic: %v", err)
		}
	})
}
