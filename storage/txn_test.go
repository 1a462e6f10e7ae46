package storage

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func txnBatch(ts int64, n int, pid int64, seq int32) []byte {
	return BuildBatch(BatchOptions{Transactional: true, Producer: &BatchProducer{ID: pid, Epoch: 0, BaseSequence: seq}}, recs(ts, n, "t")...)
}

func marker(ts int64, pid int64, typ int16) []byte {
	// EndTxnMarker value: int16 version 0, int32 coordinator epoch
	return BuildBatch(BatchOptions{Control: true, Transactional: true, Producer: &BatchProducer{ID: pid, Epoch: 0, BaseSequence: -1}},
		Record{Key: ControlRecordKey(typ), Value: []byte{0, 0, 0, 0, 0, 1}, Timestamp: ts})
}

func TestTransactionsIndex(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	l := openTest(t, mem, clk, smallCfg())
	ts := clk.Ms()
	mustAppend(t, l.Log, batch(ts, 2), 0)          // 0-1
	mustAppend(t, l.Log, txnBatch(ts, 3, 7, 0), 0) // 2-4 pid 7
	mustAppend(t, l.Log, txnBatch(ts, 2, 8, 0), 0) // 5-6 pid 8
	if fuo := l.FirstUnstableOffset(); fuo != 2 {
		t.Fatalf("first unstable %d", fuo)
	}
	mustAppend(t, l.Log, marker(ts, 7, ControlAbort), 0) // 7
	// until the high watermark passes the marker the aborted transaction
	// still holds the last stable offset back (unreplicatedTxns)
	if fuo := l.FirstUnstableOffset(); fuo != 2 {
		t.Fatalf("first unstable before the marker is replicated %d", fuo)
	}
	l.UpdateHighWatermark(7)
	if fuo := l.FirstUnstableOffset(); fuo != 2 {
		t.Fatalf("first unstable with the marker at the high watermark %d", fuo)
	}
	l.UpdateHighWatermark(8)
	if fuo := l.FirstUnstableOffset(); fuo != 5 {
		t.Fatalf("first unstable after abort %d", fuo)
	}
	mustAppend(t, l.Log, marker(ts, 8, ControlCommit), 0) // 8
	l.UpdateHighWatermark(9)
	if fuo := l.FirstUnstableOffset(); fuo != -1 {
		t.Fatalf("first unstable after commit %d", fuo)
	}
	got := l.AbortedTransactions(0, 100)
	want := AbortedTxn{ProducerID: 7, FirstOffset: 2, LastOffset: 7, LastStableOffset: 5}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("aborted %+v", got)
	}
	if got := l.AbortedTransactions(8, 100); len(got) != 0 {
		t.Fatalf("after the abort: %+v", got)
	}
	l.Close()
	data, err := vfs.ReadFile(mem, segmentName(l.dir, 0, txnIndexSuffix))
	if err != nil || len(data) != abortedTxnSize {
		t.Fatalf("txnindex %d bytes %v", len(data), err)
	}
	// rebuilt by recovery
	l2 := openTest(t, mem, clk, smallCfg(), func(o *LogOptions) { o.HadCleanShutdown = false })
	if got := l2.AbortedTransactions(0, 100); len(got) != 1 || got[0] != want {
		t.Fatalf("after recovery %+v", got)
	}
	// truncation drops the entry
	if err := l2.Truncate(7); err != nil {
		t.Fatal(err)
	}
	if got := l2.AbortedTransactions(0, 100); len(got) != 0 {
		t.Fatalf("after truncate %+v", got)
	}
	if fuo := l2.FirstUnstableOffset(); fuo != 2 {
		t.Fatalf("first unstable after truncate %d", fuo)
	}
	l2.Close()
}

func TestEndTxnMarkerRoundTrip(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := BuildEndTxnMarker(42, 7, commit, 3, 1_700_000_000_000)
		h, err := ParseBatchHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		if !h.IsControl() || !h.IsTransactional() || h.ProducerID != 42 || h.ProducerEpoch != 7 || h.NumRecords != 1 {
			t.Fatalf("header %+v", h)
		}
		gotCommit, epoch, ok := ParseEndTxnMarker(h, b)
		if !ok || gotCommit != commit || epoch != 3 {
			t.Fatalf("commit=%v: parsed %v %d %v", commit, gotCommit, epoch, ok)
		}
		if typ, ok := controlType(h, b); !ok || (typ == ControlCommit) != commit {
			t.Fatalf("controlType %d", typ)
		}
	}
}

// TestCoordinatorTransactionalBatchesWithoutSequence: a coordinator writes
// transactional batches of a producer with RecordBatch.NO_SEQUENCE (the
// group coordinator's TxnOffsetCommit records), one after another in the
// same epoch: none is refused, none is taken for a retry of another, and
// the markers close the transactions. Client batches still need one.
func TestCoordinatorTransactionalBatchesWithoutSequence(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMemFS(), clk, smallCfg())
	ts := clk.Ms()
	for i := range 3 {
		info, err := l.AppendAsLeader(txnBatch(ts, 1, 7, NoSequence), 0) // origin coordinator
		if err != nil || info.Duplicate || info.FirstOffset != int64(2*i) {
			t.Fatalf("batch %d: %+v %v", i, info, err)
		}
		if _, err := l.AppendAsLeader(marker(ts, 7, ControlCommit), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Completed transactions hold the last stable offset back until the
	// high watermark passes their markers.
	l.UpdateHighWatermark(l.LogEndOffset())
	if fuo := l.FirstUnstableOffset(); fuo != -1 {
		t.Fatalf("first unstable %d", fuo)
	}
	if _, err := l.AppendAsLeaderOrigin(txnBatch(ts, 1, 8, NoSequence), 0, OriginClient); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("client batch without a sequence: %v", err)
	}
}
