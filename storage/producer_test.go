package storage

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func TestIdempotentProducer(t *testing.T) {
	clk := newClock()
	fs := vfs.NewMem()
	l := openTest(t, fs, clk, DefaultConfig())
	ts := clk.Ms()
	const pid = 42
	a := mustAppend(t, l.Log, idemBatch(ts, 3, pid, 0, 0), 1)
	b := mustAppend(t, l.Log, idemBatch(ts, 2, pid, 0, 3), 1)
	if a.FirstOffset != 0 || b.FirstOffset != 3 {
		t.Fatalf("offsets %d %d", a.FirstOffset, b.FirstOffset)
	}
	// retry of the first batch: the original offsets, nothing appended
	dup := mustAppend(t, l.Log, idemBatch(ts, 3, pid, 0, 0), 1)
	if !dup.Duplicate || dup.FirstOffset != 0 || dup.LastOffset != 2 || l.LogEndOffset() != 5 {
		t.Fatalf("duplicate: %+v leo %d", dup, l.LogEndOffset())
	}
	// a gap in sequences
	if _, err := l.AppendAsLeaderOrigin(idemBatch(ts, 1, pid, 0, 9), 1, OriginClient); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("gap: %v", err)
	}
	// an overlapping but not identical range
	if _, err := l.AppendAsLeaderOrigin(idemBatch(ts, 1, pid, 0, 4), 1, OriginClient); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("overlap: %v", err)
	}
	// a newer epoch must start at sequence 0
	if _, err := l.AppendAsLeaderOrigin(idemBatch(ts, 1, pid, 1, 5), 1, OriginClient); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("new epoch seq 5: %v", err)
	}
	mustAppend(t, l.Log, idemBatch(ts, 1, pid, 1, 0), 1)
	// the old epoch is fenced
	if _, err := l.AppendAsLeaderOrigin(idemBatch(ts, 1, pid, 0, 5), 1, OriginClient); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("stale epoch: %v", err)
	}
	// an unknown producer may start at any sequence (Kafka 4: no UnknownProducerId)
	mustAppend(t, l.Log, idemBatch(ts, 1, 77, 0, 1000), 1)
	// wrap-around: MaxInt32 then 0
	mustAppend(t, l.Log, idemBatch(ts, 1, 88, 0, 1<<31-1), 1)
	mustAppend(t, l.Log, idemBatch(ts, 1, 88, 0, 0), 1)

	// only the last five batches are remembered for duplicates
	for i := int32(1); i <= 6; i++ {
		mustAppend(t, l.Log, idemBatch(ts, 1, pid, 1, i), 1)
	}
	if d := mustAppend(t, l.Log, idemBatch(ts, 1, pid, 1, 2), 1); !d.Duplicate {
		// seq 2 is the 5th from last: remembered
		t.Fatalf("seq 2 should be a duplicate: %+v", d)
	}
	if _, err := l.AppendAsLeaderOrigin(idemBatch(ts, 1, pid, 1, 1), 1, OriginClient); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("seq 1 is forgotten, must be out of order: %v", err)
	}

	// state survives close/open through the .snapshot file
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.Stat(segmentName(l.dir, leo, snapshotSuffix)); err != nil {
		t.Fatalf("no snapshot at %d: %v", leo, err)
	}
	l2 := openTest(t, fs, clk, DefaultConfig())
	defer l2.Close()
	if e, s, ok := l2.ProducerEpoch(pid); !ok || e != 1 || s != 6 {
		t.Fatalf("after reopen: epoch %d seq %d ok %v", e, s, ok)
	}
	// the last batch is still a duplicate after a reload
	if d := mustAppend(t, l2.Log, idemBatch(ts, 1, pid, 1, 6), 1); !d.Duplicate {
		t.Fatalf("reloaded duplicate: %+v", d)
	}
	mustAppend(t, l2.Log, idemBatch(ts, 1, pid, 1, 7), 1)
}

func TestProducerStateRebuiltWithoutSnapshot(t *testing.T) {
	clk := newClock()
	fs := vfs.NewMemFS()
	l := openTest(t, fs, clk, DefaultConfig())
	ts := clk.Ms()
	mustAppend(t, l.Log, idemBatch(ts, 2, 5, 3, 0), 1)
	mustAppend(t, l.Log, idemBatch(ts, 2, 5, 3, 2), 1)
	l.Flush()
	// crash: no snapshot, unclean
	crashed := fs.CrashClone()
	l.Close()
	l2 := openTest(t, crashed, clk, DefaultConfig(), func(o *LogOptions) { o.HadCleanShutdown = false })
	defer l2.Close()
	if e, s, ok := l2.ProducerEpoch(5); !ok || e != 3 || s != 3 {
		t.Fatalf("replayed: %d %d %v", e, s, ok)
	}
	if _, err := l2.AppendAsLeaderOrigin(idemBatch(ts, 1, 5, 3, 7), 1, OriginClient); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("%v", err)
	}
}

func TestSnapshotCodec(t *testing.T) {
	ps := newProducerState()
	u := ps.begin(OriginClient, 0)
	u.append(BatchHeader{BaseOffset: 10, LastOffsetDelta: 4, NumRecords: 5, ProducerID: 9, ProducerEpoch: 2, BaseSequence: 20, MaxTimestamp: 1234}, nil)
	u.append(BatchHeader{BaseOffset: 15, LastOffsetDelta: 0, NumRecords: 1, ProducerID: 10, ProducerEpoch: 0, BaseSequence: 0, MaxTimestamp: 99, Attributes: attrTransactional}, nil)
	u.commit()
	b := ps.encodeSnapshot()
	if len(b) != 10+2*snapshotEntrySize {
		t.Fatalf("size %d", len(b))
	}
	got, err := decodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	e := got[9]
	if e.epoch != 2 || e.lastSeq() != 24 || e.batches[0].lastOffset != 14 || e.batches[0].offsetDelta != 4 || e.batches[0].timestamp != 1234 || e.currentTxnFirstOffset != -1 {
		t.Fatalf("%+v", e)
	}
	if got[10].currentTxnFirstOffset != 15 {
		t.Fatalf("txn first offset %d", got[10].currentTxnFirstOffset)
	}
	b[20] ^= 1
	if _, err := decodeSnapshot(b); err == nil {
		t.Fatal("corrupt snapshot accepted")
	}
}
