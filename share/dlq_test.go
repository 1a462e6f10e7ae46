package share

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/sharestate"
)

type fakeDLQ struct {
	mu  sync.Mutex
	got []DLQRecords
	// seen is signalled once per write
	seen chan struct{}
}

func (f *fakeDLQ) WriteDLQ(_ context.Context, r DLQRecords) error {
	f.mu.Lock()
	f.got = append(f.got, r)
	f.mu.Unlock()
	f.seen <- struct{}{}
	return nil
}

// Rejected records and records released at the delivery limit go to the
// DLQ (Archiving) once the acknowledgement is persisted, then Archived;
// with share.version below 2 or no DLQ topic they are Archived at once.
func TestDLQ(t *testing.T) {
	for _, tc := range []struct {
		name    string
		feature bool
		topic   string
		want    int
	}{
		{"enabled", true, "dlq.t", 2},
		{"share.version 1", false, "dlq.t", 0},
		{"no topic", true, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := newFakeLog()
			log.produce(0, 10, -1, false)
			dlq := &fakeDLQ{seen: make(chan struct{}, 10)}
			m := NewManager(Config{Log: log, Defaults: Defaults{Limits: Limits{LockMs: 60000, DeliveryLimit: 2, MaxLocks: 200}, AutoOffsetReset: "earliest"},
				DLQ: dlq, DLQFeature: func() bool { return tc.feature },
				GroupConfig: func(string) map[string]string {
					return map[string]string{"errors.deadletterqueue.topic.name": tc.topic}
				}})
			ctx := context.Background()
			fetch := func() []Acquired {
				res := m.Fetch(ctx, FetchParams{Group: "g", Member: "a", Parts: []FetchPart{foo0}, MaxBytes: 1 << 20, MinBytes: 1, MaxRecords: 100})
				if res[0].Err != nil {
					t.Fatalf("fetch: %v", res[0].Err)
				}
				return res[0].Acquired
			}
			ack := func(first, last int64, typ sharestate.AcknowledgeType) {
				if err := m.Acknowledge(ctx, "g", "a", []AckPart{{FetchPart: foo0, Batches: []AckBatch{{First: first, Last: last, Types: []int8{int8(typ)}}}}}, false)[0]; err != nil {
					t.Fatalf("ack %d-%d: %v", first, last, err)
				}
			}
			fetch()
			ack(0, 1, sharestate.AckReject)
			ack(2, 9, sharestate.AckRelease)
			fetch()
			ack(2, 2, sharestate.AckRelease) // 2 deliveries: the limit
			ack(3, 9, sharestate.AckAccept)
			for range tc.want {
				select {
				case <-dlq.seen:
				case <-time.After(5 * time.Second):
					t.Fatal("no DLQ write")
				}
			}
			p := m.Partition("g", foo0.TopicPartition)
			deadline := time.Now().Add(5 * time.Second)
			for {
				if start, _ := p.Offsets(); start == 10 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("records not archived: %s", p.Dump())
				}
				time.Sleep(10 * time.Millisecond)
			}
			dlq.mu.Lock()
			defer dlq.mu.Unlock()
			if len(dlq.got) != tc.want {
				t.Fatalf("DLQ writes %+v, want %d", dlq.got, tc.want)
			}
			if tc.want == 0 {
				return
			}
			want := map[int64]DLQBatch{0: {0, 1, 1, CauseRejected}, 2: {2, 2, 2, CauseDeliveryCount}}
			for _, r := range dlq.got {
				if r.Group != "g" || r.Topic != "foo" || r.Partition != 0 || r.DLQBatch != want[r.First] {
					t.Errorf("DLQ write %+v", r)
				}
			}
		})
	}
}

// An expired lock at the delivery limit names the delivery count as the
// cause; Archiving records read back by Load are written again.
func TestDLQExpiryAndResume(t *testing.T) {
	p := loadedPartition(t, Limits{LockMs: 10, DeliveryLimit: 1, MaxLocks: 100, DLQ: true})
	p.Acquire("a", 0, []Batch{{First: 0, Last: 4}}, 10, BatchOptimized, 0)
	w := p.ExpireLocks(100)
	if w == nil || len(w.DLQ) != 1 || w.DLQ[0] != (DLQBatch{0, 4, 1, CauseDeliveryCount}) {
		t.Fatalf("expiry write %+v", w)
	}
	if got := p.Dump(); got != "spso=0 speo=4 0-4:ARCHIVING/1" {
		t.Fatalf("after expiry: %s", got)
	}
	if b := w.Data.StateBatches; len(b) != 1 || b[0].DeliveryState != int8(sharestate.Archiving) {
		t.Fatalf("persisted %+v", b)
	}
	if got := p.Resume(); len(got) != 1 || got[0] != (DLQBatch{0, 4, 1, CauseDeliveryCount}) {
		t.Fatalf("resume %+v", got)
	}
	aw := p.Archive(DLQBatch{First: 0, Last: 4})
	if aw == nil || p.Dump() != "spso=5 speo=4" {
		t.Fatalf("after archive: %s", p.Dump())
	}
	// the start offset as it stood is persisted, with the archived state
	if aw.Data.StartOffset != 0 || aw.Data.DeliveryCompleteCount != 5 || len(aw.Data.StateBatches) != 1 ||
		aw.Data.StateBatches[0].DeliveryState != int8(sharestate.Archived) {
		t.Fatalf("archive write %+v", aw.Data)
	}
}
