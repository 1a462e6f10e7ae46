package storage

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Crash-point tests: a workload runs on an injecting FS over a MemFS that
// takes a crash image (vfs.MemFS.CrashClone) before every operation that
// changes the file system, and once at the end. Every image is opened again
// as after a power loss and checked against what the workload had been told
// was durable when the image was taken. Each image is taken twice: keeping
// nothing that was not synced, and keeping a seeded random part of it
// (vfs.CrashKeepSome: torn tails, some directory changes).

// crashModel is what a workload was promised: with flush.messages=1 every
// append that returned is on disk.
type crashModel struct {
	mu sync.Mutex
	// acked maps partition -> offset -> value of every acknowledged record
	// not truncated since.
	acked map[TopicPartition]map[int64]string
	// deleted: the topic ids of deleted partitions, which must not come
	// back (a new incarnation may).
	deleted map[TopicPartition][16]byte
	// seq is the last acknowledged sequence of the idempotent producer
	// crashPID, while no truncation made it unknown, and seqAt the offset
	// of its batch: once the log start offset passes it, a crash may lose
	// the producer (its batches are no longer replayed; as in Kafka, only
	// a producer snapshot keeps it).
	seq   map[TopicPartition]int32
	seqAt map[TopicPartition]int64
	// created: the topic id of every partition whose GetOrCreateLog
	// returned (and that was not deleted since): the log is there after a
	// crash, under that id (a new log syncs its directory before it is
	// returned).
	created map[TopicPartition][16]byte
}

// crashPID is the workload's idempotent producer.
const crashPID = 42

func newCrashModel() *crashModel {
	return &crashModel{acked: map[TopicPartition]map[int64]string{}, deleted: map[TopicPartition][16]byte{},
		seq: map[TopicPartition]int32{}, seqAt: map[TopicPartition]int64{}, created: map[TopicPartition][16]byte{}}
}

func (m *crashModel) snapshot() *crashModel {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := newCrashModel()
	for tp, recs := range m.acked {
		c.acked[tp] = make(map[int64]string, len(recs))
		for o, v := range recs {
			c.acked[tp][o] = v
		}
	}
	for tp, id := range m.deleted {
		c.deleted[tp] = id
	}
	for tp, id := range m.created {
		c.created[tp] = id
	}
	for tp, s := range m.seq {
		c.seq[tp], c.seqAt[tp] = s, m.seqAt[tp]
	}
	return c
}

func (m *crashModel) create(tp TopicPartition, id [16]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.created[tp] = id
}

func (m *crashModel) ack(tp TopicPartition, off int64, v string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.acked[tp] == nil {
		m.acked[tp] = map[int64]string{}
	}
	m.acked[tp][off] = v
}

// deleteBelow forgets the records below off (DeleteRecords): a crash may
// find them or not, and any part of them.
func (m *crashModel) deleteBelow(tp TopicPartition, off int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for o := range m.acked[tp] {
		if o < off {
			delete(m.acked[tp], o)
		}
	}
	if at, ok := m.seqAt[tp]; ok && at < off {
		delete(m.seq, tp)
	}
}

// truncate forgets the records at and above off: from now on a crash may
// find them or not.
func (m *crashModel) truncate(tp TopicPartition, off int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for o := range m.acked[tp] {
		if o >= off {
			delete(m.acked[tp], o)
		}
	}
	delete(m.seq, tp)
}

func (m *crashModel) ackSeq(tp TopicPartition, seq int32, off int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq[tp], m.seqAt[tp] = seq, off
}

func (m *crashModel) drop(tp TopicPartition) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.acked, tp)
	delete(m.seq, tp)
	delete(m.created, tp) // a crash during the deletion may keep it or not
}

func (m *crashModel) markDeleted(tp TopicPartition, id [16]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deleted[tp] = id
}

// crashImage is one crash point.
type crashImage struct {
	step   int
	op     string
	fs     *vfs.MemFS
	before *vfs.MemFS // what the files held, synced or not (for failure messages)
	model  *crashModel
}

// crashRecorder takes the images.
type crashRecorder struct {
	mem    *vfs.MemFS
	model  *crashModel
	seed   uint64
	mu     sync.Mutex
	images []crashImage
	on     bool
}

func (r *crashRecorder) inject(op vfs.Op) vfs.Fault {
	switch op.Kind {
	case vfs.OpRead, vfs.OpStat, vfs.OpReadDir, vfs.OpClose:
		return vfs.Fault{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.takeLocked(fmt.Sprintf("%v %s", op.Kind, op.Path))
	}
	return vfs.Fault{}
}

func (r *crashRecorder) takeLocked(what string) {
	step := len(r.images) / 2
	m := r.model.snapshot()
	before := r.mem.CrashClone(vfs.CrashKeepSome(rand.New(rand.NewPCG(0, 0)), 100))
	r.images = append(r.images,
		crashImage{step: step, op: what, fs: r.mem.CrashClone(), model: m, before: before},
		crashImage{step: step, op: what + " (keeping some)", model: m, before: before,
			fs: r.mem.CrashClone(vfs.CrashKeepSome(rand.New(rand.NewPCG(r.seed, uint64(step))), 50))})
}

func (r *crashRecorder) take(what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.takeLocked(what)
}

// crashCfg: every append synced before it returns (flush.messages=1),
// small segments so that the workload rolls, and retention off.
func crashCfg() Config {
	c := DefaultConfig()
	c.SegmentBytes = 700
	c.IndexIntervalBytes = 100
	c.SegmentIndexBytes = 1024
	c.FlushMessages = 1
	c.FileDeleteDelayMs = 0
	return c
}

// checkCrashImage opens a crash image as a broker restarting after a power
// loss and checks it against the model.
func checkCrashImage(t *testing.T, img crashImage, clk *clock, dirs []string) {
	t.Helper()
	where := fmt.Sprintf("crash %d before %s", img.step, img.op)
	m, err := OpenManager(ManagerOptions{FS: img.fs, LogDirs: dirs, Now: clk.Now, Config: crashCfg()})
	if err != nil {
		t.Fatalf("%s: OpenManager: %v", where, err)
	}
	defer m.Close()
	if len(m.OfflineDirs()) > 0 {
		t.Fatalf("%s: offline dirs %v", where, m.OfflineDirs())
	}
	logs := m.Logs()
	for tp, id := range img.model.created {
		if l, ok := logs[tp]; !ok || l.TopicID() != id {
			t.Fatalf("%s: created partition %s (topic id %x) is gone (present %v)\n%s", where, tp, id, ok, listFiles(img.fs, "/kafka"))
		}
	}
	for tp, id := range img.model.deleted {
		if l, ok := logs[tp]; ok && l.TopicID() == id {
			t.Fatalf("%s: deleted partition %s is back", where, tp)
		}
	}
	for tp, acked := range img.model.acked {
		if len(acked) == 0 {
			continue
		}
		l, ok := logs[tp]
		if !ok {
			t.Fatalf("%s: partition %s with %d acknowledged records is gone", where, tp, len(acked))
		}
		got := map[int64]string{}
		prev := int64(-1)
		for _, r := range readAll(t, l, l.LogStartOffset()) {
			if r.Offset <= prev {
				t.Fatalf("%s: %s: offset %d after %d", where, tp, r.Offset, prev)
			}
			prev = r.Offset
			got[r.Offset] = string(r.Value)
		}
		var offs []int64
		for o := range acked {
			offs = append(offs, o)
		}
		sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
		for _, o := range offs {
			if o < l.LogStartOffset() {
				continue // below a log start offset the checkpoint recorded
			}
			if got[o] != acked[o] {
				t.Fatalf("%s: %s: acknowledged offset %d holds %q, want %q (log [%d, %d), %d segments)\nfiles: %s\nbefore the crash: %s",
					where, tp, o, got[o], acked[o], l.LogStartOffset(), l.LogEndOffset(), l.NumSegments(),
					listFiles(img.fs, "/kafka"), listFiles(img.before, "/kafka"))
			}
		}
		checkEpochsMatchBatches(t, where+" ("+listFiles(img.fs, "/kafka")+")", l)
		// the idempotent producer goes on where it was acknowledged
		next := int32(0)
		if _, last, ok := l.ProducerEpoch(crashPID); ok {
			next = last + 1
		}
		if want, ok := img.model.seq[tp]; ok && next <= want {
			t.Fatalf("%s: %s: producer %d recovered at sequence %d, acknowledged %d (log [%d, %d))\nfiles %s\nbefore %s", where, tp, crashPID, next-1, want,
				l.LogStartOffset(), l.LogEndOffset(), listFiles(img.fs, "/kafka"), listFiles(img.before, "/kafka"))
		}
		b := BuildBatch(BatchOptions{Producer: &BatchProducer{ID: crashPID, BaseSequence: next}}, Record{Value: []byte("after")})
		if _, err := l.AppendAsLeader(b, 100); err != nil {
			t.Fatalf("%s: %s: append after recovery: %v", where, tp, err)
		}
	}
}

// checkEpochsMatchBatches: the leader epoch cache says of every batch the
// epoch the batch carries. Below its first entry it may know nothing (and
// with no entry, nothing at all): DeleteRecords and retention move the first
// entry up at once (truncateFromStart), the log start offset checkpoint
// follows later, and a crash in between brings back the records below it,
// as in Kafka, whose LogLoader only moves the first entry up to the
// checkpointed log start offset. A cache that knows nothing of an epoch
// makes a follower asking for it fall back to its high watermark.
func checkEpochsMatchBatches(t *testing.T, where string, l *Log) {
	t.Helper()
	e := l.EpochEntries()
	if len(e) == 0 {
		return
	}
	from := max(l.LogStartOffset(), e[0][1])
	for off := from; off < l.LogEndOffset(); {
		b, err := l.ReadBatches(off, 1<<20, 1<<62, true)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: read at %d: %v", where, off, err)
		}
		WalkBatches(b, false, func(h BatchHeader, _ []byte) error {
			if e, ok := l.EpochForOffset(h.BaseOffset); !ok || e != h.PartitionLeaderEpoch {
				t.Fatalf("%s: batch at %d has leader epoch %d, the cache says %d (%v): %v", where, h.BaseOffset,
					h.PartitionLeaderEpoch, e, ok, l.EpochEntries())
			}
			off = h.NextOffset()
			return nil
		})
	}
}

// runCrashWorkload runs work with crash images taken at every step and
// checks each.
func runCrashWorkload(t *testing.T, seed uint64, work func(m *Manager, model *crashModel, clk *clock, rng *rand.Rand)) int {
	t.Helper()
	clk := newClock()
	mem := vfs.NewMemFS()
	model := newCrashModel()
	rec := &crashRecorder{mem: mem, model: model, seed: seed}
	fs := vfs.NewInjecting(mem, rec.inject)
	dirs := []string{"/kafka/d1", "/kafka/d2"}
	rec.on = true
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: dirs, Now: clk.Now, Config: crashCfg()})
	if err != nil {
		t.Fatal(err)
	}
	work(m, model, clk, rand.New(rand.NewPCG(seed, 1)))
	rec.take("the end, no Close")
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	rec.take("the end, after Close")
	rec.mu.Lock()
	rec.on = false
	images := rec.images
	rec.mu.Unlock()
	for _, img := range images {
		checkCrashImage(t, img, clk, dirs)
	}
	return len(images)
}

// appendOne appends one record with value v as leader in epoch and acks
// it; idem appends it as the next sequence of the idempotent producer.
func appendOne(t *testing.T, l *Log, tp TopicPartition, model *crashModel, epoch int32, v string, idem bool, ts int64) {
	t.Helper()
	opts := BatchOptions{}
	seq := int32(0)
	if idem {
		if _, last, ok := l.ProducerEpoch(crashPID); ok {
			seq = last + 1
		}
		opts.Producer = &BatchProducer{ID: crashPID, BaseSequence: seq}
	}
	info, err := l.AppendAsLeader(BuildBatch(opts, Record{Key: []byte("k"), Value: []byte(v), Timestamp: ts}), epoch)
	if err != nil {
		t.Fatalf("append %s: %v", v, err)
	}
	model.ack(tp, info.FirstOffset, v)
	if idem {
		model.ackSeq(tp, seq, info.FirstOffset)
	}
}

// Appends, rolls, leader epochs, truncations (a follower's), DeleteRecords,
// checkpoints, retention and a deleted and recreated partition: a crash at
// any point loses no acknowledged record, brings back no deleted partition,
// and leaves logs that open, read and take appends.
func TestCrashAtEveryStep(t *testing.T) {
	first, seeds, steps := uint64(0), uint64(2), 120
	if testing.Short() || invariantsEnabled { // -race: a fifth of the time
		seeds, steps = 1, 60
	}
	if v := os.Getenv("KGO_CRASH_SEEDS"); v != "" { // e.g. 100, or 17-18 to replay seed 17
		if _, err := fmt.Sscanf(v, "%d-%d", &first, &seeds); err != nil {
			first = 0
			if _, err := fmt.Sscanf(v, "%d", &seeds); err != nil {
				t.Fatalf("KGO_CRASH_SEEDS=%q", v)
			}
		}
	}
	for seed := first; seed < seeds; seed++ {
		n := runCrashWorkload(t, seed, func(m *Manager, model *crashModel, clk *clock, rng *rand.Rand) {
			tps := []TopicPartition{{"a", 0}, {"b", 0}}
			logs := map[TopicPartition]*Log{}
			epochs := map[TopicPartition]int32{}
			for i, tp := range tps {
				l, err := m.GetOrCreateLog(tp, [16]byte{byte(i + 1)}, crashCfg())
				if err != nil {
					t.Fatal(err)
				}
				model.create(tp, [16]byte{byte(i + 1)})
				logs[tp] = l
				if err := l.AssignEpochStartOffset(0, 0); err != nil {
					t.Fatal(err)
				}
			}
			n := 0
			for step := range steps {
				tp := tps[rng.IntN(len(tps))]
				l := logs[tp]
				r := rng.IntN(100)
				if os.Getenv("KGO_CRASH_TRACE") != "" {
					t.Logf("step %d %s op %d leo %d epochs %v", step, tp, r, l.LogEndOffset(), l.EpochEntries())
				}
				switch {
				case r < 60:
					n++
					appendOne(t, l, tp, model, epochs[tp], fmt.Sprintf("%s-v%d", tp.Topic, n), r%2 == 0, clk.Ms())
				case r < 66:
					// a new leader epoch at the log end
					epochs[tp]++
					if err := l.AssignEpochStartOffset(epochs[tp], l.LogEndOffset()); err != nil {
						t.Fatal(err)
					}
				case r < 74:
					// a follower truncating to a diverging point
					to := max(l.LogStartOffset(), l.LogEndOffset()-int64(rng.IntN(6)))
					model.truncate(tp, to)
					if err := l.Truncate(to); err != nil {
						t.Fatal(err)
					}
				case r < 78:
					if err := l.Roll(); err != nil {
						t.Fatal(err)
					}
				case r < 82:
					to := l.LogStartOffset() + int64(rng.IntN(int(l.LogEndOffset()-l.LogStartOffset())+1))
					model.deleteBelow(tp, to)
					if err := l.IncrementLogStartOffset(to); err != nil {
						t.Fatal(err)
					}
				case r < 90:
					clk.Advance(time.Duration(rng.IntN(90)) * time.Second)
					if err := m.Maintain(); err != nil {
						t.Fatal(err)
					}
				case r < 92:
					// retention deletes every inactive segment
					l.mu.RLock()
					active := l.mu.segments[len(l.mu.segments)-1].base
					l.mu.RUnlock()
					model.deleteBelow(tp, active)
					cfg := crashCfg()
					cfg.RetentionMs = 1
					l.SetConfig(cfg)
					// the high watermark at the active segment: retention
					// stops there (Kafka deletes only below it)
					l.UpdateHighWatermark(active)
					clk.Advance(time.Second)
					if _, err := l.DeleteOldSegments(); err != nil {
						t.Fatal(err)
					}
					l.SetConfig(crashCfg())
				case r < 94 && step > steps/3:
					// the partition is deleted and created again
					model.drop(tp)
					id := l.TopicID()
					if err := m.DeleteLog(tp); err != nil {
						t.Fatal(err)
					}
					model.markDeleted(tp, id)
					clk.Advance(2 * time.Minute)
					if err := m.Maintain(); err != nil {
						t.Fatal(err)
					}
					nl, err := m.GetOrCreateLog(tp, [16]byte{byte(step), 0xff}, crashCfg())
					if err != nil {
						t.Fatal(err)
					}
					model.create(tp, [16]byte{byte(step), 0xff})
					logs[tp], epochs[tp] = nl, 0
					if err := nl.AssignEpochStartOffset(0, 0); err != nil {
						t.Fatal(err)
					}
				default:
					if err := l.Flush(); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
		t.Logf("seed %d: %d crash images checked", seed, n)
	}
}

// The files a crash image holds, for failure messages.
func listFiles(fs vfs.FS, dir string) string {
	var out []string
	var walk func(d string)
	walk = func(d string) {
		ents, _ := fs.ReadDir(d)
		for _, e := range ents {
			p := d + "/" + e.Name()
			if e.IsDir() {
				walk(p)
				continue
			}
			st, _ := fs.Stat(p)
			desc := fmt.Sprint(st.Size())
			if strings.Contains(e.Name(), "checkpoint") {
				b, _ := vfs.ReadFile(fs, p)
				desc = strings.ReplaceAll(string(b), "\n", "|")
			}
			out = append(out, fmt.Sprintf("%s(%s)", strings.TrimPrefix(p, dir+"/"), desc))
		}
	}
	walk(dir)
	return strings.Join(out, " ")
}

// A crash before any file operation of a cleaning (the cleaned segment
// written, fsynced, renamed .swap, the old segments renamed .deleted, the
// swap renamed into place) reopens to the log before or after the
// cleaning, with no .cleaned or .swap file left, whatever part of the
// unsynced changes the crash kept.
func TestCleanSwapCrashBeforeEveryStep(t *testing.T) {
	clk := newClock()
	cfg := compactCfg()
	mem := vfs.NewMemFS()
	rec := &crashRecorder{mem: mem, model: newCrashModel(), seed: 7}
	l := openTest(t, vfs.NewInjecting(mem, rec.inject), clk, cfg)
	ts := clk.Ms()
	for i := range 30 {
		b := kv(ts, fmt.Sprintf("k%d", i%7), fmt.Sprint(i))
		if i%9 == 0 {
			b = kv(ts, fmt.Sprintf("k%d", i%7), "")
		}
		mustAppend(t, l.Log, b, 0)
		if i%10 == 9 {
			l.Roll()
		}
	}
	mustAppend(t, l.Log, kv(ts, "last", "1"), 0)
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	l.bg.Wait()
	before := dump(t, l.Log)
	rec.mu.Lock()
	rec.on = true
	rec.mu.Unlock()
	cleanLog(t, l.Log)
	rec.take("the end")
	rec.mu.Lock()
	rec.on = false
	images := rec.images
	rec.mu.Unlock()
	after := dump(t, l.Log)
	if before == after {
		t.Fatal("the cleaning changed nothing")
	}
	l.Close()
	sawBefore, sawAfter := false, false
	for _, img := range images {
		l2 := openTest(t, img.fs, clk, cfg, func(o *LogOptions) {
			o.HadCleanShutdown = false
			o.RecoveryPoint = 31
		})
		switch got := dump(t, l2.Log); got {
		case before:
			sawBefore = true
		case after:
			sawAfter = true
		default:
			t.Fatalf("crash %d before %s: reopened to\n%s\nneither before\n%s\nnor after\n%s\nfiles %s", img.step, img.op,
				got, before, after, listFiles(img.fs, "/data"))
		}
		ents, _ := img.fs.ReadDir(l2.dir)
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), swapSuffix) || strings.HasSuffix(e.Name(), cleanedSuffix) {
				t.Fatalf("crash %d before %s: %s left behind", img.step, img.op, e.Name())
			}
		}
		mustAppend(t, l2.Log, kv(ts, "x", "1"), 0)
		l2.Close()
	}
	if !sawBefore || !sawAfter {
		t.Fatalf("crash points covered before=%v after=%v", sawBefore, sawAfter)
	}
	t.Logf("%d crash images of a cleaning reopened to the log before or after it", len(images))
}

// The fixes the crash-point tests found, one scenario each.

// A new partition directory (and the log dir above it) survives a crash
// with the records synced in it: its entry in its parent is fsynced when it
// is created (MkdirAllSync).
func TestCrashNewPartitionDirSurvives(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := crashCfg()
	l := openTest(t, mem, clk, cfg)
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 0) // flush.messages=1: synced
	l2 := openTest(t, mem.CrashClone(), clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false })
	defer l2.Close()
	if l2.LogEndOffset() != 2 {
		t.Fatalf("log end offset %d after the crash, want 2", l2.LogEndOffset())
	}
}

// A truncation is durable before the next record is acknowledged: a
// follower truncates, rolls a new segment and appends there (syncing only
// the new segment); a crash must not bring the truncated records back in
// front of the new ones, which recovery would then drop as an overlapping
// segment.
func TestCrashTruncationThenRollKeepsNewRecords(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := crashCfg()
	l := openTest(t, mem, clk, cfg)
	for range 4 {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	}
	if err := l.Truncate(4); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	b := BuildBatch(BatchOptions{}, Record{Value: []byte("new"), Timestamp: clk.Ms()})
	if _, err := l.AppendAsLeader(b, 1); err != nil {
		t.Fatal(err)
	}
	l2 := openTest(t, mem.CrashClone(), clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false; o.RecoveryPoint = 4 })
	defer l2.Close()
	got := readAll(t, l2.Log, 0)
	if len(got) != 5 || string(got[4].Value) != "new" || got[4].Offset != 4 {
		t.Fatalf("after the crash %d records, last %+v", len(got), got[len(got)-1])
	}
}

// Recovery makes the leader epoch cache agree with the batches it rescans:
// the checkpoint, synced as soon as epoch 1 started at offset 2, names an
// epoch for offsets that, after the crash, hold the older records a
// truncation had removed but not synced (with recovery rebuilding from
// there).
func TestCrashRecoveryRebuildsEpochsFromBatches(t *testing.T) {
	clk := newClock()
	mem := vfs.NewMemFS()
	cfg := DefaultConfig() // no flush.messages: nothing synced but by Flush
	l := openTest(t, mem, clk, cfg)
	for range 2 {
		mustAppend(t, l.Log, batch(clk.Ms(), 2), 0)
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	// the truncation is synced now; the epoch checkpoint too
	if err := l.Truncate(2); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, l.Log, batch(clk.Ms(), 2), 1) // epoch 1 at 2, checkpointed; the records unsynced
	crashed := mem.CrashClone()
	// hand the crash image the state a journal could leave: the records
	// at 2 back as they were before the truncation, in epoch 0
	f, err := crashed.OpenFile(segmentName(l.dir, 0, logSuffix), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	old := batch(clk.Ms(), 2)
	SetBaseOffset(old, 2)
	SetPartitionLeaderEpoch(old, 0)
	st, _ := f.Stat()
	f.WriteAt(old, st.Size())
	f.Sync()
	f.Close()
	l2 := openTest(t, crashed, clk, cfg, func(o *LogOptions) { o.HadCleanShutdown = false; o.RecoveryPoint = 0 })
	defer l2.Close()
	if got := l2.EpochEntries(); len(got) != 1 || got[0] != [2]int64{0, 0} {
		t.Fatalf("epochs %v for batches 0..3 all in epoch 0", got)
	}
	checkEpochsMatchBatches(t, "recovered", l2.Log)
}
