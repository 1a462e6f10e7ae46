package share

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/sharestate"
)

func loadedPartition(t *testing.T, lim Limits) *Partition {
	t.Helper()
	p := NewPartition("g", "foo", topicID, 0, lim)
	rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
	rp.StartOffset = 0
	if err := p.Load(&rp, 0, nil); err != nil {
		t.Fatal(err)
	}
	return p
}

// Two acknowledgements written at once, the first failing: the second's
// start offset must not have passed the first's records, and the first's
// records are acquired again after the rollback.
func TestConcurrentWritesRollback(t *testing.T) {
	p := loadedPartition(t, Limits{LockMs: 1000, DeliveryLimit: 5, MaxLocks: 100})
	acq, _ := p.Acquire("a", 0, []Batch{{First: 0, Last: 4}, {First: 5, Last: 9}}, 100, BatchOptimized, 0)
	if len(acq) != 1 || acq[0] != (Acquired{0, 9, 1}) {
		t.Fatalf("acquired %+v", acq)
	}
	accept := []int8{int8(sharestate.AckAccept)}
	w1, err := p.Acknowledge("a", []AckBatch{{First: 0, Last: 4, Types: accept}}, false, 0)
	if err != nil || w1.Data.StartOffset != 5 {
		t.Fatalf("first write %+v %v", w1, err)
	}
	w2, err := p.Acknowledge("a", []AckBatch{{First: 5, Last: 9, Types: accept}}, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if w2.Data.StartOffset != 0 {
		t.Fatalf("the second write's start offset %d passes the first's records", w2.Data.StartOffset)
	}
	p.Complete(w2, nil)
	if start, _ := p.Offsets(); start != 0 {
		t.Fatalf("start moved to %d before the first write completed", start)
	}
	p.Complete(w1, kerr.CoordinatorNotAvailable)
	if got := p.Dump(); got != "spso=0 speo=9 0-4:ACQUIRED/1@a<1000 5-9:ACKNOWLEDGED/1" {
		t.Fatalf("after the rollback: %s", got)
	}
	w3, err := p.Acknowledge("a", []AckBatch{{First: 0, Last: 4, Types: accept}}, false, 0)
	if err != nil || w3.Data.StartOffset != 10 {
		t.Fatalf("retried write %+v %v", w3, err)
	}
	p.Complete(w3, nil)
	if got := p.Dump(); got != "spso=10 speo=9" {
		t.Fatalf("after the retry: %s", got)
	}
}

// A change made while a write is in flight survives that write's
// rollback.
func TestRollbackKeepsLaterChange(t *testing.T) {
	p := loadedPartition(t, Limits{LockMs: 1000, DeliveryLimit: 5, MaxLocks: 100})
	p.Acquire("a", 0, []Batch{{First: 0, Last: 4}}, 100, BatchOptimized, 0)
	w, err := p.Acknowledge("a", []AckBatch{{First: 0, Last: 4, Types: []int8{int8(sharestate.AckRelease)}}}, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	// released: b acquires them while the release is being written
	if acq, _ := p.Acquire("b", 0, []Batch{{First: 0, Last: 4}}, 100, BatchOptimized, 0); len(acq) != 1 || acq[0].Deliveries != 2 {
		t.Fatalf("b acquired %+v", acq)
	}
	p.Complete(w, kerr.CoordinatorNotAvailable)
	if got := p.Dump(); got != "spso=0 speo=4 0-4:ACQUIRED/2@b<1000" {
		t.Fatalf("after the rollback: %s", got)
	}
}
