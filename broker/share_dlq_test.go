package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/share"
	"github.com/kgo-broker/kgo-broker/storage"
)

// DLQ records: one per offset, the original key and value when read (null
// for an offset not read), the __dlq.errors.* headers in Kafka's order, and
// a run split into batches of at most max.message.bytes (at least one
// record each).
func TestDLQBatch(t *testing.T) {
	r := share.DLQRecords{Group: "g", Topic: "t", Partition: 3, DLQBatch: share.DLQBatch{First: 10, Last: 14, Deliveries: 5, Cause: share.CauseDeliveryCount}}
	originals := map[int64]storage.Record{10: {Key: []byte("k10"), Value: []byte("v10")}, 12: {Value: []byte("v12")}}
	b, last := dlqBatch(r, 10, 1<<20, originals, 1234)
	if last != 14 {
		t.Fatalf("last %d, want 14", last)
	}
	recs, err := storage.DecodeRecords(b)
	if err != nil || len(recs) != 5 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	for i, rec := range recs {
		off := int64(10 + i)
		var hs []string
		for _, h := range rec.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		want := fmt.Sprintf("__dlq.errors.topic=t|__dlq.errors.partition=3|__dlq.errors.offset=%d|__dlq.errors.group=g|__dlq.errors.delivery.count=5|__dlq.errors.message=Offset delivery count exceeded the threshold.", off)
		if got := strings.Join(hs, "|"); got != want {
			t.Errorf("offset %d headers %s", off, got)
		}
		o := originals[off]
		if string(rec.Key) != string(o.Key) || (rec.Key == nil) != (o.Key == nil) || string(rec.Value) != string(o.Value) || (rec.Value == nil) != (o.Value == nil) {
			t.Errorf("offset %d key %q value %q, want %q %q", off, rec.Key, rec.Value, o.Key, o.Value)
		}
		if rec.Timestamp != 1234 {
			t.Errorf("offset %d timestamp %d", off, rec.Timestamp)
		}
	}
	// a small max.message.bytes: one record a batch, then the rest
	b, last = dlqBatch(r, 10, 100, originals, 1234)
	if recs, _ := storage.DecodeRecords(b); len(recs) != 1 || last != 10 {
		t.Fatalf("small batches: %d records to %d", len(recs), last)
	}
	b, last = dlqBatch(r, 11, 600, nil, 1234)
	if recs, _ := storage.DecodeRecords(b); len(recs) != 2 || len(b) > 600 || last != 12 {
		t.Fatalf("a 600-byte batch: %d records (%d bytes) to %d", len(recs), len(b), last)
	}
}

// The backoff: 1 s doubling to 30 s (ShareGroupDLQStateManager's
// REQUEST_BACKOFF_MS and REQUEST_BACKOFF_MAX_MS, jitter aside).
func TestDLQBackoff(t *testing.T) {
	d := newShareDLQ(nil)
	var got []string
	for n := 1; n <= 6; n++ {
		got = append(got, d.wait(n).String())
	}
	if s := strings.Join(got, " "); s != "1s 2s 4s 8s 16s 30s" {
		t.Fatalf("backoff %s", s)
	}
}
