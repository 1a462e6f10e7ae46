package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Producer state for transactions, as ProducerAppendInfo and
// UnifiedLog.analyzeAndValidateProducerState keep it: markers, KIP-890
// verification, the first unstable offset, recovery.

func txnData(ts int64, n int, pid int64, epoch int16, seq int32) []byte {
	return BuildBatch(BatchOptions{Transactional: true, Producer: &BatchProducer{ID: pid, Epoch: epoch, BaseSequence: seq}},
		recs(ts, n, fmt.Sprintf("t%d", pid))...)
}

// produce appends as a client does, verification required, with guard.
func produce(l *Log, b []byte, guard *VerificationGuard) (AppendInfo, error) {
	info, d, err := l.AppendAsLeaderWith(b, 0, AppendOptions{Origin: OriginClient, RequireVerification: true, Guard: guard})
	if err != nil {
		return info, err
	}
	return info, d.Wait()
}

// writeMarker appends an end-transaction marker as WriteTxnMarkers does.
func writeMarker(l *Log, ts, pid int64, epoch int16, commit bool, coordEpoch int32, tv int16) error {
	_, d, err := l.AppendAsLeaderWith(BuildEndTxnMarker(pid, epoch, commit, coordEpoch, ts), 0,
		AppendOptions{Origin: OriginCoordinator, TransactionVersion: tv})
	if err != nil {
		return err
	}
	return d.Wait()
}

// verified starts verification and produces with the guard.
func verified(t *testing.T, l *Log, b []byte) AppendInfo {
	t.Helper()
	h, _ := ParseBatchHeader(b)
	g, err := l.MaybeStartTransactionVerification(h.ProducerID, h.BaseSequence, h.ProducerEpoch, false)
	if err != nil {
		t.Fatalf("verification: %v", err)
	}
	info, err := produce(l, b, g)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return info
}

func producerOf(l *Log, pid int64) (ProducerInfo, bool) {
	for _, p := range l.ActiveProducers() {
		if p.ProducerID == pid {
			return p, true
		}
	}
	return ProducerInfo{}, false
}

func TestMarkerEpochAndCoordinatorFencing(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, DefaultConfig())
	defer l.Close()
	ts := clk.Ms()
	verified(t, l.Log, txnData(ts, 2, 7, 3, 0)) // 0-1
	if p, _ := producerOf(l.Log, 7); p.CurrentTxnStartOffset != 0 || p.CoordinatorEpoch != -1 || p.ProducerEpoch != 3 {
		t.Fatalf("open transaction %+v", p)
	}
	// an older epoch is refused; so is a marker of an older coordinator
	// once a newer one wrote
	if err := writeMarker(l.Log, ts, 7, 2, false, 5, 0); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
	if err := writeMarker(l.Log, ts, 7, 3, true, 5, 0); err != nil { // 2
		t.Fatal(err)
	}
	p, _ := producerOf(l.Log, 7)
	if p.CurrentTxnStartOffset != -1 || p.CoordinatorEpoch != 5 || p.LastTimestamp != ts {
		t.Fatalf("after commit %+v", p)
	}
	verified(t, l.Log, txnData(ts, 1, 7, 3, 2)) // 3
	if err := writeMarker(l.Log, ts, 7, 3, false, 4, 0); !errors.Is(err, kerr.TransactionCoordinatorFenced) {
		t.Fatalf("zombie coordinator: %v", err)
	}
	// transaction.version 2: the coordinator bumps the epoch before the
	// marker; the transaction's own epoch is refused while it is open
	if err := writeMarker(l.Log, ts, 7, 3, false, 5, 2); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("TV2 marker at the transaction's epoch: %v", err)
	}
	if err := writeMarker(l.Log, ts, 7, 4, false, 5, 2); err != nil { // 4
		t.Fatalf("TV2 marker at the bumped epoch: %v", err)
	}
	// a retry of that marker (same epoch, no open transaction) is written again (KAFKA-19999)
	if err := writeMarker(l.Log, ts, 7, 4, false, 5, 2); err != nil { // 5
		t.Fatalf("TV2 marker retry: %v", err)
	}
	p, _ = producerOf(l.Log, 7)
	if p.ProducerEpoch != 4 || p.CurrentTxnStartOffset != -1 || p.LastSequence != NoSequence {
		// the new epoch forgets the old epoch's batches
		t.Fatalf("after TV2 abort %+v", p)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	if got := l.AbortedTransactions(0, 100); len(got) != 1 || got[0] != (AbortedTxn{ProducerID: 7, FirstOffset: 3, LastOffset: 4, LastStableOffset: 5}) {
		t.Fatalf("aborted %+v", got)
	}
	// a marker of a producer with nothing open is written and indexes nothing
	if err := writeMarker(l.Log, ts, 9, 0, false, 1, 0); err != nil {
		t.Fatal(err)
	}
	if got := l.AbortedTransactions(0, 100); len(got) != 1 {
		t.Fatalf("an empty abort was indexed: %+v", got)
	}
	// a follower takes what the leader wrote, regressions included
	f := openTest(t, vfs.NewMem(), clk, DefaultConfig(), func(o *LogOptions) { o.Dir = "/data/f-0" })
	defer f.Close()
	raw, _ := l.ReadBatches(0, 1<<20, l.LogEndOffset(), true)
	if _, err := f.AppendAsFollower(raw); err != nil {
		t.Fatal(err)
	}
	stale := BuildEndTxnMarker(7, 1, true, 0, ts)
	SetBaseOffset(stale, f.LogEndOffset())
	if _, err := f.AppendAsFollower(stale); err != nil {
		t.Fatalf("a follower refuses the leader's marker: %v", err)
	}
}

func TestTransactionalWritesNeedVerification(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, DefaultConfig())
	defer l.Close()
	ts := clk.Ms()
	const pid = 11
	// no guard, or a guard nobody handed out: the partition was not added
	for _, g := range []*VerificationGuard{nil, {id: 1 << 60}} {
		if _, err := produce(l.Log, txnData(ts, 1, pid, 0, 0), g); !errors.Is(err, kerr.InvalidTxnState) {
			t.Fatalf("guard %v: %v", g, err)
		}
	}
	g, err := l.MaybeStartTransactionVerification(pid, 0, 0, false)
	if err != nil || g == nil || l.VerificationGuardOf(pid) != g {
		t.Fatalf("guard %v %v", g, err)
	}
	// starting again keeps the guard (the produce retried meanwhile)
	if g2, _ := l.MaybeStartTransactionVerification(pid, 0, 0, false); g2 != g {
		t.Fatalf("a second verification got another guard")
	}
	if _, err := produce(l.Log, txnData(ts, 2, pid, 0, 0), g); err != nil { // 0-1
		t.Fatal(err)
	}
	// the first write cleared the guard; the open transaction needs none
	if l.VerificationGuardOf(pid) != nil || !l.HasOngoingTransaction(pid, 0) {
		t.Fatalf("after the first write: guard %v ongoing %v", l.VerificationGuardOf(pid), l.HasOngoingTransaction(pid, 0))
	}
	if g, _ := l.MaybeStartTransactionVerification(pid, 2, 0, false); g != nil {
		t.Fatalf("an open transaction got a guard")
	}
	if _, err := produce(l.Log, txnData(ts, 1, pid, 0, 2), nil); err != nil { // 2
		t.Fatal(err)
	}
	// a non-transactional write in the middle of the transaction
	if _, err := produce(l.Log, idemBatch(ts, 1, pid, 0, 3), nil); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("idempotent write during the transaction: %v", err)
	}
	// verification answered, then an abort marker, then the stale guard: the
	// write would start a transaction the coordinator knows nothing about
	g, _ = l.MaybeStartTransactionVerification(pid, 3, 0, false)
	if g != nil {
		t.Fatalf("guard while open")
	}
	if err := writeMarker(l.Log, ts, pid, 0, false, 0, 0); err != nil { // 3
		t.Fatal(err)
	}
	g, _ = l.MaybeStartTransactionVerification(pid, 3, 0, false)
	if err := writeMarker(l.Log, ts, pid, 0, false, 0, 0); err != nil { // 4: a late marker clears it
		t.Fatal(err)
	}
	if _, err := produce(l.Log, txnData(ts, 1, pid, 0, 3), g); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("guard from before the marker: %v", err)
	}
	// the lowest sequence seen while verifying caps the sequence
	g, _ = l.MaybeStartTransactionVerification(pid, 3, 0, false)
	if _, err := produce(l.Log, txnData(ts, 1, pid, 0, 4), g); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("sequence above the lowest seen: %v", err)
	}
	if _, err := produce(l.Log, txnData(ts, 1, pid, 0, 3), g); err != nil {
		t.Fatal(err)
	}
	// an older epoch is refused before anyone is asked
	if _, err := l.MaybeStartTransactionVerification(pid, 0, -1+0, false); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("older epoch: %v", err)
	}
	// transaction.version 2: a producer without state starts at sequence 0
	g, _ = l.MaybeStartTransactionVerification(99, 5, 0, true)
	if _, err := produce(l.Log, txnData(ts, 1, 99, 0, 5), g); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("TV2 producer starting at 5: %v", err)
	}
	// verification off: nothing is asked of transactional writes
	if _, d, err := l.AppendAsLeaderWith(txnData(ts, 1, 100, 0, 0), 0, AppendOptions{Origin: OriginClient}); err != nil {
		t.Fatal(err)
	} else if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	// a coordinator's transactional write (TxnOffsetCommit) carries no sequence
	// and is checked against its guard too
	coord := BuildBatch(BatchOptions{Transactional: true, Producer: &BatchProducer{ID: 200, Epoch: 0, BaseSequence: NoSequence}},
		Record{Key: []byte("k"), Value: []byte("v"), Timestamp: ts})
	if _, _, err := l.AppendAsLeaderWith(coord, 0, AppendOptions{Origin: OriginCoordinator, RequireVerification: true}); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("coordinator write without guard: %v", err)
	}
	g, _ = l.MaybeStartTransactionVerification(200, NoSequence, 0, false)
	for i := 0; i < 2; i++ {
		b := BuildBatch(BatchOptions{Transactional: true, Producer: &BatchProducer{ID: 200, Epoch: 0, BaseSequence: NoSequence}},
			Record{Key: []byte("k"), Value: []byte("v"), Timestamp: ts})
		info, _, err := l.AppendAsLeaderWith(b, 0, AppendOptions{Origin: OriginCoordinator, RequireVerification: true, Guard: g})
		if err != nil || info.Duplicate {
			t.Fatalf("coordinator write %d: %+v %v", i, info, err)
		}
	}
}

func TestVerificationAndProducerExpiry(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.ProducerIDExpirationMs = 1000
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	ts := clk.Ms()
	verified(t, l.Log, txnData(ts, 1, 1, 0, 0))        // open: never expires
	mustAppend(t, l.Log, idemBatch(ts, 1, 2, 0, 0), 0) // idle idempotent producer
	g, _ := l.MaybeStartTransactionVerification(3, 0, 0, false)
	clk.Advance(999 * time.Millisecond)
	l.Maintain()
	if len(l.ActiveProducers()) != 2 || l.VerificationGuardOf(3) != g {
		t.Fatalf("expired too early: %+v", l.ActiveProducers())
	}
	clk.Advance(time.Millisecond)
	l.Maintain()
	ps := l.ActiveProducers()
	if len(ps) != 1 || ps[0].ProducerID != 1 || l.VerificationGuardOf(3) != nil {
		t.Fatalf("after expiry %+v guard %v", ps, l.VerificationGuardOf(3))
	}
}

// The Manager expires producers every producer.id.expiration.check.interval.ms.
func TestManagerExpiresProducersOnItsInterval(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.ProducerIDExpirationMs = 10
	m, err := OpenManager(ManagerOptions{FS: vfs.NewMem(), LogDirs: []string{"/d"}, Config: cfg, Now: clk.Now,
		ProducerExpirationCheckIntervalMs: 5000})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := m.GetOrCreateLog(TopicPartition{Topic: "t", Partition: 0}, [16]byte{1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l, idemBatch(clk.Ms(), 1, 5, 0, 0), 0)
	clk.Advance(time.Second)
	m.Maintain()
	if len(l.ActiveProducers()) != 1 {
		t.Fatalf("expired before the check interval")
	}
	clk.Advance(4 * time.Second)
	m.Maintain()
	if len(l.ActiveProducers()) != 0 {
		t.Fatalf("not expired at the check interval: %+v", l.ActiveProducers())
	}
}

// The last stable offset follows open transactions and those whose markers
// are not replicated yet, with several producers interleaved.
func TestFirstUnstableOffsetInterleaved(t *testing.T) {
	clk := newClock()
	l := openTest(t, vfs.NewMem(), clk, DefaultConfig())
	defer l.Close()
	ts := clk.Ms()
	verified(t, l.Log, txnData(ts, 1, 1, 0, 0))                       // 0 p1
	verified(t, l.Log, txnData(ts, 1, 2, 0, 0))                       // 1 p2
	mustAppend(t, l.Log, batch(ts, 1), 0)                             // 2 plain
	verified(t, l.Log, txnData(ts, 1, 3, 0, 0))                       // 3 p3
	if err := writeMarker(l.Log, ts, 2, 0, false, 0, 0); err != nil { // 4 abort p2
		t.Fatal(err)
	}
	if err := writeMarker(l.Log, ts, 1, 0, true, 0, 0); err != nil { // 5 commit p1
		t.Fatal(err)
	}
	l.UpdateHighWatermark(5) // p2's abort replicated, p1's commit not
	if fuo := l.FirstUnstableOffset(); fuo != 0 {
		t.Fatalf("fuo %d", fuo)
	}
	l.UpdateHighWatermark(6)
	if fuo := l.FirstUnstableOffset(); fuo != 3 {
		t.Fatalf("fuo %d", fuo)
	}
	// p2's abort was indexed with the first open transaction of another
	// producer (p1 at 0) as its last stable offset
	if got := l.AbortedTransactions(0, 100); len(got) != 1 || got[0] != (AbortedTxn{ProducerID: 2, FirstOffset: 1, LastOffset: 4, LastStableOffset: 0}) {
		t.Fatalf("aborted %+v", got)
	}
	if err := writeMarker(l.Log, ts, 3, 0, true, 0, 0); err != nil { // 6
		t.Fatal(err)
	}
	l.UpdateHighWatermark(7)
	if fuo := l.FirstUnstableOffset(); fuo != -1 {
		t.Fatalf("fuo %d", fuo)
	}
	// DeleteRecords past an open transaction's start: the first unstable
	// offset is never below the log start
	verified(t, l.Log, txnData(ts, 3, 4, 0, 0)) // 7-9
	mustAppend(t, l.Log, batch(ts, 1), 0)       // 10
	l.UpdateHighWatermark(11)
	if err := l.IncrementLogStartOffset(8); err != nil {
		t.Fatal(err)
	}
	if fuo := l.FirstUnstableOffset(); fuo != 8 {
		t.Fatalf("fuo below the log start: %d", fuo)
	}
}

// read_committed reads: the aborted transactions overlapping the data read,
// an abort spanning segments, a commit after an abort, and Kafka's upper
// bound (the first index entry after the data, else the next segment).
func TestReadCommittedAbortedTransactions(t *testing.T) {
	clk := newClock()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 1 << 20
	cfg.IndexIntervalBytes = 1 // an index entry per batch
	l := openTest(t, vfs.NewMem(), clk, cfg)
	defer l.Close()
	ts := clk.Ms()
	verified(t, l.Log, txnData(ts, 2, 1, 0, 0)) // 0-1 p1 (aborted)
	verified(t, l.Log, txnData(ts, 2, 2, 0, 0)) // 2-3 p2 (committed)
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	verified(t, l.Log, txnData(ts, 2, 1, 0, 2))                       // 4-5 p1, second segment
	if err := writeMarker(l.Log, ts, 1, 0, false, 0, 0); err != nil { // 6 abort p1
		t.Fatal(err)
	}
	if err := writeMarker(l.Log, ts, 2, 0, true, 0, 0); err != nil { // 7 commit p2
		t.Fatal(err)
	}
	verified(t, l.Log, txnData(ts, 1, 1, 0, 4))                      // 8 p1 again
	if err := writeMarker(l.Log, ts, 1, 0, true, 0, 0); err != nil { // 9 commit p1
		t.Fatal(err)
	}
	l.UpdateHighWatermark(l.LogEndOffset())
	abort := AbortedTxn{ProducerID: 1, FirstOffset: 0, LastOffset: 6, LastStableOffset: 2}
	// the whole first segment: the abort whose marker is in the next segment
	ri, ab, err := l.ReadCommitted(0, 1<<20, 10, true)
	if err != nil || ri.Region.Len == 0 || len(ab) != 1 || ab[0] != abort {
		t.Fatalf("first segment: %+v %+v %v", ri, ab, err)
	}
	// one batch: the bound is the next index entry (offset 3), so still found
	ri, ab, _ = l.ReadCommitted(2, 1, 10, true)
	if ri.FirstBatchOffset != 2 || len(ab) != 1 {
		t.Fatalf("one batch: %+v %+v", ri, ab)
	}
	// from the second segment on
	_, ab, _ = l.ReadCommitted(4, 1<<20, 10, true)
	if len(ab) != 1 || ab[0] != abort {
		t.Fatalf("second segment: %+v", ab)
	}
	// after the abort marker: the commit after the abort is not aborted
	_, ab, _ = l.ReadCommitted(7, 1<<20, 10, true)
	if ab == nil || len(ab) != 0 {
		t.Fatalf("after the abort: %#v", ab)
	}
	// nothing to read: an empty list, not nil
	_, ab, _ = l.ReadCommitted(10, 1<<20, 10, true)
	if ab == nil || len(ab) != 0 {
		t.Fatalf("at the end: %#v", ab)
	}
	// bounded by the last stable offset
	ri, ab, _ = l.ReadCommitted(0, 1<<20, 2, true)
	if got, _ := ri.Region.ReadAll(); len(got) == 0 || len(ab) != 1 {
		t.Fatalf("bounded: %d bytes %+v", len(got), ab)
	}
}

// kill -9 with transactions open across segments and snapshots: recovery
// rebuilds the open transactions, the first unstable offset and the
// transaction index of the recovered segments.
func TestTransactionsSurviveCrash(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := smallCfg()
	l := openTest(t, mem, clk, cfg)
	ts := clk.Ms()
	seq := map[int64]int32{}
	data := func(pid int64) {
		verified(t, l.Log, txnData(ts, 3, pid, 0, seq[pid]))
		seq[pid] += 3
	}
	data(1)
	data(2)
	for i := 0; i < 20; i++ { // rolls segments: snapshots are written
		mustAppend(t, l.Log, batch(ts, 3), 0)
	}
	data(2)
	if err := writeMarker(l.Log, ts, 2, 0, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	data(3)
	for i := 0; i < 20; i++ {
		mustAppend(t, l.Log, batch(ts, 3), 0)
	}
	if l.NumSegments() < 3 {
		t.Fatalf("%d segments", l.NumSegments())
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	leo := l.LogEndOffset()
	l.UpdateHighWatermark(leo)
	wantFUO := l.FirstUnstableOffset()
	wantAborted := l.AbortedTransactions(0, leo)
	wantProducers := l.ActiveProducers()
	if wantFUO != 0 || len(wantAborted) != 1 {
		t.Fatalf("before the crash: fuo %d aborted %+v", wantFUO, wantAborted)
	}
	crashed := mem.CrashClone()
	l.Close()
	for _, rp := range []int64{0, leo / 2} {
		l2 := openTest(t, crashed.CrashClone(), clk, cfg, func(o *LogOptions) {
			o.HadCleanShutdown = false
			o.RecoveryPoint = rp
		})
		l2.UpdateHighWatermark(l2.LogEndOffset())
		if l2.LogEndOffset() != leo {
			t.Fatalf("recovery point %d: leo %d", rp, l2.LogEndOffset())
		}
		if fuo := l2.FirstUnstableOffset(); fuo != wantFUO {
			t.Fatalf("recovery point %d: fuo %d, want %d", rp, fuo, wantFUO)
		}
		if got := l2.AbortedTransactions(0, leo); len(got) != 1 || got[0] != wantAborted[0] {
			t.Fatalf("recovery point %d: aborted %+v, want %+v", rp, got, wantAborted)
		}
		got := l2.ActiveProducers()
		if fmt.Sprint(got) != fmt.Sprint(wantProducers) {
			t.Fatalf("recovery point %d: producers\n%+v\nwant\n%+v", rp, got, wantProducers)
		}
		// the open transactions go on without a new verification, and end
		for _, pid := range []int64{1, 3} {
			if _, err := produce(l2.Log, txnData(ts, 1, pid, 0, seq[pid]), nil); err != nil {
				t.Fatalf("recovery point %d: producer %d: %v", rp, pid, err)
			}
			if err := writeMarker(l2.Log, ts, pid, 0, true, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		l2.UpdateHighWatermark(l2.LogEndOffset())
		if fuo := l2.FirstUnstableOffset(); fuo != -1 {
			t.Fatalf("recovery point %d: fuo after the commits %d", rp, fuo)
		}
		l2.Close()
	}
}
