package storage

import (
	"testing"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Leader-epoch-checkpoint may lag the cache only in entries that describe no
// record (epochCache.stale): opening a log truncates epochs past its end in
// memory only, as Kafka's LogLoader flushes that truncation asynchronously;
// an epoch led from the log end is written with its first append. Either
// way the file is written before a record lands where it is stale, so a
// crash never leaves an entry covering records of another epoch, nor loses
// the epoch of a record.
func TestEpochFileWrittenBeforeRecordsItDescribes(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	file := "/data/topic-0/" + leaderEpochCheckpointFile
	read := func(fs vfs.FS) string { b, _ := vfs.ReadFile(fs, file); return string(b) }
	cfg := DefaultConfig() // no fsync per append
	l := openTest(t, mem, clk, cfg)
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 3)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// epoch 5 from the log end: not written until a record is appended in it
	if err := l.AssignEpochStartOffset(5, 2); err != nil {
		t.Fatal(err)
	}
	if got := read(mem); got != "0\n1\n3 0\n" {
		t.Fatalf("file after leading epoch 5 with no record: %q, want only epoch 3", got)
	}
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 5)
	if got := read(mem); got != "0\n2\n3 0\n5 2\n" {
		t.Fatalf("file after the first epoch 5 append: %q", got)
	}
	// a crash loses the unsynced epoch 5 records but keeps the synced file:
	// the reopened log truncates epoch 5 in memory and leaves the file
	crashedFS := mem.CrashClone()
	l2 := openTest(t, crashedFS, clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false })
	if got := l2.EpochEntries(); len(got) != 1 || got[0] != [2]int64{3, 0} || l2.LogEndOffset() != 2 {
		t.Fatalf("after the crash: epochs %v, log end %d; want [[3 0]] and 2", got, l2.LogEndOffset())
	}
	if got := read(crashedFS); got != "0\n2\n3 0\n5 2\n" {
		t.Fatalf("opening rewrote the file: %q", got)
	}
	// a follower appends epoch 3 records at 2..3, where the file's stale
	// entry says epoch 5: the append writes the file first. Rolled, the
	// recovery point past the records, and a crash that keeps every write:
	// recovery rescans only the empty active segment, so only the file says
	// which epoch the records are in.
	if _, err := l2.AppendAsFollower(BuildBatch(BatchOptions{PartitionLeaderEpoch: 3, BaseOffset: 2}, recs(clk.Ms(), 2, "f")...)); err != nil {
		t.Fatal(err)
	}
	if err := l2.Roll(); err != nil {
		t.Fatal(err)
	}
	leo := l2.LogEndOffset()
	l3 := openTest(t, crashedFS.CrashClone(vfs.CrashKeepAll()), clk, cfg, func(o *LogOptions) { o.HadCleanShutdown, o.RecoveryPoint = false, leo })
	defer l3.Close()
	if got := l3.EpochEntries(); len(got) != 1 || got[0] != [2]int64{3, 0} {
		t.Fatalf("epochs after the second crash %v, want [[3 0]] (a stale epoch 5 entry would cover offsets 2-3)", got)
	}
	l2.Close()
	l.Close()
}
