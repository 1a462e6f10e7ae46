//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// killCycles is how many kill -9 / restart cycles TestStorageKillLoop runs
// (KGO_KILL_CYCLES overrides).
func killCycles() int {
	if n, err := strconv.Atoi(os.Getenv("KGO_KILL_CYCLES")); err == nil && n > 0 {
		return n
	}
	return 50
}

// TestStorageKillLoop runs a broker under an idempotent acks=all produce load and
// kills it with SIGKILL again and again, restarting it each time on the same data
// dir. At the end every acknowledged record must be readable, in the order it was
// produced (per partition), exactly once; and kafka-dump-log.sh must find the
// segments and their indexes sound.
func TestStorageKillLoop(t *testing.T) {
	// A killed broker's registration lives until its session times out (as in
	// Kafka: DUPLICATE_BROKER_REGISTRATION until then); short sessions keep each
	// cycle short.
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{
		"broker.session.timeout.ms": "1500", "broker.heartbeat.interval.ms": "300"}})
	const topic = "it-kill"
	const partitions = 2
	// small segments so that the loop rolls some, small index interval so that the
	// indexes have entries to verify
	createTopic(t, b, topic, partitions, map[string]string{"segment.bytes": "1048576", "index.interval.bytes": "1024"})

	type ack struct {
		partition int32
		offset    int64
		seq       int
	}
	var (
		mu      sync.Mutex
		acked   = map[int]ack{}
		failed  = map[int]error{}
		sent    int
		stopGen = make(chan struct{})
		genDone = make(chan struct{})
	)
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(2*time.Millisecond), kgo.ProducerBatchMaxBytes(16<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.RecordDeliveryTimeout(0), kgo.RecordRetries(1<<30), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MaxBufferedRecords(5000), kgo.MetadataMinAge(100*time.Millisecond))
	defer cl.Close()
	value := strings.Repeat("v", 200)
	go func() {
		defer close(genDone)
		for i := 0; ; i++ {
			select {
			case <-stopGen:
				return
			default:
			}
			if i%100 == 99 {
				time.Sleep(50 * time.Millisecond) // about 2000 records a second
			}
			rec := &kgo.Record{Key: []byte(fmt.Sprintf("k%08d", i)), Value: []byte(fmt.Sprintf("%08d:%s", i, value))}
			seq := i
			mu.Lock()
			sent++
			mu.Unlock()
			cl.Produce(context.Background(), rec, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed[seq] = err
					return
				}
				acked[seq] = ack{r.Partition, r.Offset, seq}
			})
		}
	}()

	cycles := killCycles()
	start := time.Now()
	rng := rand.New(rand.NewPCG(1, 2))
	ackedNow := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	for c := 0; c < cycles; c++ {
		// kill under load: once acknowledgements flow again, at a random moment
		base := ackedNow()
		waitFor(t, 60*time.Second, fmt.Sprintf("acknowledgements after restart %d", c), func() error {
			if n := ackedNow(); n < base+200 {
				return fmt.Errorf("%d acknowledged since the restart", n-base)
			}
			return nil
		})
		time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
		b.Kill()
		t0 := time.Now()
		b.Start()
		b.WaitReady()
		if c < 3 {
			t.Logf("cycle %d: ready %v after the restart", c+1, time.Since(t0).Round(time.Millisecond))
		}
		if c%10 == 9 {
			mu.Lock()
			t.Logf("cycle %d/%d after %v: %d sent, %d acknowledged, %d failed", c+1, cycles, time.Since(start).Round(time.Millisecond), sent, len(acked), len(failed))
			mu.Unlock()
		}
	}
	close(stopGen)
	<-genDone
	if err := cl.Flush(ctxT(t, 2*time.Minute)); err != nil {
		t.Fatalf("flushing the producer: %v", err)
	}
	loop := time.Since(start)
	mu.Lock()
	nAcked, nFailed := len(acked), len(failed)
	for seq, err := range failed {
		t.Errorf("record %d failed: %v", seq, err)
		if len(failed) > 5 {
			break
		}
	}
	mu.Unlock()
	t.Logf("%d kill -9 cycles in %v: %d records acknowledged, %d failed", cycles, loop.Round(time.Millisecond), nAcked, nFailed)
	if nAcked == 0 {
		t.Fatal("nothing was acknowledged")
	}

	// Read everything back.
	ends := endOffsets(t, b, topic)
	total := sumOffsets(ends)
	recs := consumeAll(t, b, topic, int(total), 2*time.Minute)
	seen := map[int]int64{}
	lastSeq := map[int32]int{}
	lastOff := map[int32]int64{}
	for _, r := range recs {
		seq, err := strconv.Atoi(string(r.Value[:8]))
		if err != nil {
			t.Fatalf("record %d/%d: bad value %q", r.Partition, r.Offset, r.Value[:8])
		}
		if prev, dup := seen[seq]; dup {
			t.Errorf("record %d appears twice: offsets %d and %d/%d", seq, prev, r.Partition, r.Offset)
		}
		seen[seq] = r.Offset
		if l, ok := lastOff[r.Partition]; ok && r.Offset <= l {
			t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, l)
		}
		if l, ok := lastSeq[r.Partition]; ok && seq < l {
			t.Errorf("partition %d: record %d at offset %d after record %d: out of order", r.Partition, seq, r.Offset, l)
		}
		lastSeq[r.Partition], lastOff[r.Partition] = seq, r.Offset
	}
	mu.Lock()
	missing := 0
	for seq, a := range acked {
		off, ok := seen[seq]
		switch {
		case !ok:
			missing++
			if missing <= 10 {
				t.Errorf("acknowledged record %d (partition %d offset %d) is missing", seq, a.partition, a.offset)
			}
		case off != a.offset:
			t.Errorf("record %d acknowledged at offset %d, read at %d", seq, a.offset, off)
		}
	}
	mu.Unlock()
	if missing > 0 {
		t.Fatalf("%d acknowledged records missing", missing)
	}
	t.Logf("read back %d records (%d acknowledged), end offsets %v", len(recs), nAcked, ends)

	// One more kill, so that the files checked are those a crash leaves, then a
	// restart (recovery) and a clean stop.
	b.Kill()
	b.Start()
	b.WaitReady()
	if got := sumOffsets(endOffsets(t, b, topic)); got != total {
		t.Errorf("end offsets after a last kill: %d, want %d", got, total)
	}
	b.Stop(0)
	if testing.Short() {
		return
	}
	requireKafkaTools(t)
	for p := 0; p < partitions; p++ {
		dumpLogCheck(t, filepath.Join(b.DataDir, fmt.Sprintf("%s-%d", topic, p)), true)
	}
}

// dumpLogCheck runs kafka-dump-log.sh --deep-iteration, --verify-index-only and
// --index-sanity-check over a partition directory. consecutive: the offsets must
// follow each other (not a compacted log).
func dumpLogCheck(t *testing.T, partDir string, consecutive bool) string {
	t.Helper()
	segs := globSorted(t, filepath.Join(partDir, "*.log"))
	if len(segs) == 0 {
		t.Fatalf("no segments in %s", partDir)
	}
	noTrouble := func(what string, r ToolResult, extra ...string) {
		t.Helper()
		out := r.Stdout + r.Stderr
		for _, bad := range append([]string{"Exception", "corrupt", "Corrupt"}, extra...) {
			if strings.Contains(out, bad) {
				t.Errorf("%s: output contains %q:\n%s", what, bad, tail(r.String(), 60))
			}
		}
	}
	r := MustKafkaTool(t, RunOpts{Timeout: 3 * time.Minute}, "kafka-dump-log.sh", "--deep-iteration", "--files", strings.Join(segs, ","))
	noTrouble("--deep-iteration", r)
	if consecutive {
		for _, p := range nonConsecutive(r.Stdout) {
			t.Errorf("--deep-iteration: %s", p)
		}
	}
	deep := r.Stdout
	idx := append(globSorted(t, filepath.Join(partDir, "*.index")), globSorted(t, filepath.Join(partDir, "*.timeindex"))...)
	r = MustKafkaTool(t, RunOpts{Timeout: 3 * time.Minute}, "kafka-dump-log.sh", "--verify-index-only", "--files", strings.Join(idx, ","))
	noTrouble("--verify-index-only", r,
		"Mismatches in", "mismatch", "out of order", "not found in the log", "Index offset", "Non-consecutive")
	r = MustKafkaTool(t, RunOpts{}, "kafka-dump-log.sh", "--index-sanity-check", "--files", strings.Join(idx, ","))
	noTrouble("--index-sanity-check", r, "failed sanity check")
	if got := strings.Count(r.Stdout, " passed sanity check.") + strings.Count(r.Stdout, " is empty."); got != len(idx) {
		t.Errorf("--index-sanity-check: %d of %d files passed or are empty:\n%s", got, len(idx), r)
	}
	t.Logf("%s: %d segments, %d indexes checked by kafka-dump-log.sh", filepath.Base(partDir), len(segs), len(idx))
	return deep
}

// TestStorageCompaction produces many values for few keys and tombstones to a
// compacted topic; the broker's log cleaner must leave the latest value of each
// key, drop deleted keys after delete.retention.ms, write cleaner-offset-checkpoint,
// and leave segments kafka-dump-log.sh reads and verifies.
func TestStorageCompaction(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-compact"
	createTopic(t, b, topic, 1, map[string]string{
		"cleanup.policy": "compact", "segment.bytes": "1048576", "min.cleanable.dirty.ratio": "0.01",
		"delete.retention.ms": "1000", "index.interval.bytes": "1024",
	})
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	defer cl.Close()
	const keys = 50
	value := strings.Repeat("x", 500)
	var recs []*kgo.Record
	for i := 0; i < 8000; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%03d", i%keys)), Value: []byte(fmt.Sprintf("%06d:%s", i, value))})
	}
	// tombstones for the first ten keys, then more data so that they are not in the
	// active segment
	for k := 0; k < 10; k++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%03d", k))})
	}
	for i := 8000; i < 12000; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("key-%03d", 10+i%(keys-10))), Value: []byte(fmt.Sprintf("%06d:%s", i, value))})
	}
	if err := cl.ProduceSync(ctxT(t, 2*time.Minute), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	ends := endOffsets(t, b, topic)
	end := ends[0]
	ckpt := filepath.Join(b.DataDir, "cleaner-offset-checkpoint")
	// the cleaner threads back off log.cleaner.backoff.ms (15 s) when idle;
	// restarting starts a cleaning pass at once
	b.Restart()
	var cleaned int64
	waitFor(t, 90*time.Second, "a cleaning", func() error {
		data, err := os.ReadFile(ckpt)
		if cleaned = cleanerCheckpoint(data, topic); err != nil || cleaned < 0 {
			return fmt.Errorf("cleaner-offset-checkpoint %q: %v", data, err)
		}
		return nil
	})
	// a second pass after delete.retention.ms removes the tombstones: produce a
	// little more so that the log is dirty again, and restart to clean at once
	time.Sleep(1100 * time.Millisecond)
	more := make([]*kgo.Record, 0, 2500)
	for i := 12000; i < 14500; i++ {
		more = append(more, &kgo.Record{Key: []byte(fmt.Sprintf("key-%03d", 10+i%(keys-10))), Value: []byte(fmt.Sprintf("%06d:%s", i, value))})
	}
	cl2 := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	if err := cl2.ProduceSync(ctxT(t, 2*time.Minute), more...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl2.Close()
	// The second pass may already have run while the records above were produced
	// (the cleaner wakes every log.cleaner.backoff.ms): wait for the cleaned offset
	// to pass the first pass's, not for the file to change after the restart.
	b.Restart()
	waitFor(t, 90*time.Second, "a second cleaning", func() error {
		data, err := os.ReadFile(ckpt)
		if err != nil || cleanerCheckpoint(data, topic) <= cleaned {
			return fmt.Errorf("cleaner-offset-checkpoint still %q (first pass cleaned to %d): %v", data, cleaned, err)
		}
		return nil
	})
	end = sumOffsets(endOffsets(t, b, topic))
	// read everything: the latest value of each live key exactly once below the
	// active segment, never a deleted key's old value
	cons := b.Client(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cons.Close()
	latest := map[string]string{}
	count := 0
	ctx := ctxT(t, time.Minute)
	for {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume: %v", err)
		}
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			count++
			if r.Value == nil {
				delete(latest, string(r.Key))
			} else {
				latest[string(r.Key)] = string(r.Value[:6])
			}
			if r.Offset == end-1 {
				done = true
			}
		})
		if done {
			break
		}
	}
	if len(latest) != keys-10 {
		t.Errorf("%d live keys, want %d", len(latest), keys-10)
	}
	for k := 0; k < 10; k++ {
		if v, ok := latest[fmt.Sprintf("key-%03d", k)]; ok {
			t.Errorf("deleted key-%03d has value %s", k, v)
		}
	}
	total := 14500 + 10
	if count >= total/2 {
		t.Errorf("read %d records of %d produced: the log was not compacted", count, total)
	}
	t.Logf("compacted: %d records read of %d produced, end offset %d", count, total, end)
	adm := kadm.NewClient(cons)
	if lo, err := adm.ListStartOffsets(ctx, topic); err == nil {
		t.Logf("start offsets %v", lo)
	}
	b.Stop(0)
	requireKafkaTools(t)
	dumpLogCheck(t, filepath.Join(b.DataDir, topic+"-0"), false)
}

// cleanerCheckpoint is partition 0 of topic's offset in a cleaner-offset-checkpoint
// file (version, count, then "topic partition offset" lines), or -1.
func cleanerCheckpoint(data []byte, topic string) int64 {
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == topic && f[1] == "0" {
			if o, err := strconv.ParseInt(f[2], 10, 64); err == nil {
				return o
			}
		}
	}
	return -1
}

// TestStorageDeleteRecords deletes records with the admin client: the low
// watermark answers, the log start offset moves, and -1 means the high watermark.
func TestStorageDeleteRecords(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-delete-records"
	createTopic(t, b, topic, 1, nil)
	cl := b.Client(kgo.DefaultProduceTopic(topic))
	defer cl.Close()
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic, 100)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := b.Admin()
	ctx := ctxT(t, 30*time.Second)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 40})
	res, err := adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := res.Lookup(topic, 0)
	if r.Err != nil || r.LowWatermark != 40 {
		t.Fatalf("delete to 40: %+v", r)
	}
	offs = kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 101})
	res, err = adm.DeleteRecords(ctx, offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup(topic, 0); r.Err == nil {
		t.Fatalf("delete beyond the high watermark: %+v", r)
	}
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := starts.Lookup(topic, 0); o.Offset != 40 {
		t.Fatalf("start offset %d", o.Offset)
	}
	MustKafkaTool(t, RunOpts{}, "kafka-delete-records.sh", "--bootstrap-server", b.Addr, "--offset-json-file", writeTemp(t,
		fmt.Sprintf(`{"partitions":[{"topic":%q,"partition":0,"offset":-1}],"version":1}`, topic)))
	starts, _ = adm.ListStartOffsets(ctx, topic)
	if o, _ := starts.Lookup(topic, 0); o.Offset != 100 {
		t.Fatalf("start offset after deleting to the high watermark %d", o.Offset)
	}
}

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
