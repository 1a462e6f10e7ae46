//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partitionsIn lists the partitions of topic whose directories are in dir.
func partitionsIn(t *testing.T, dir, topic string) []int32 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, e := range ents {
		if p, ok := strings.CutPrefix(e.Name(), topic+"-"); ok && e.IsDir() {
			if n, err := strconv.Atoi(p); err == nil {
				out = append(out, int32(n))
			}
		}
	}
	return out
}

// consumePartition reads want records of one partition from the start.
func consumePartition(t *testing.T, b *Broker, topic string, p int32, want int) []string {
	t.Helper()
	cl := b.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
	defer cl.Close()
	ctx := ctxT(t, 30*time.Second)
	var got []string
	for len(got) < want && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

// unreadableSegment replaces the first segment of a partition directory with a
// directory of the same name, so that opening it fails with EISDIR (an I/O error
// even for root), and returns a function that puts the segment back.
func unreadableSegment(t *testing.T, partDir, stash string) func() {
	t.Helper()
	seg := filepath.Join(partDir, "00000000000000000000.log")
	if err := os.Rename(seg, stash); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(seg, 0o755); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(seg); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(stash, seg); err != nil {
			t.Fatal(err)
		}
	}
}

// twoDirBrokerWithTopic starts a broker on two log.dirs (its DataDir and
// data2), creates topic with 4 partitions and produces perPartition records
// "p<partition>-<i>" to each.
func twoDirBrokerWithTopic(t *testing.T, topic string, perPartition int) (b *Broker, data2 string) {
	t.Helper()
	b = NewBroker(t, BrokerOptions{})
	data2 = filepath.Join(b.Dir, "data2")
	b.opts.Overrides = map[string]string{"log.dirs": b.DataDir + "," + data2}
	b.Start()
	b.WaitReady()
	createTopic(t, b, topic, 4, nil)
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	for p := int32(0); p < 4; p++ {
		for i := range perPartition {
			r := kgo.StringRecord(fmt.Sprintf("p%d-%d", p, i))
			r.Partition = p
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b, data2
}

// TestLogDirUnreadableAtStartup: a broker with two log.dirs, one of which cannot be
// loaded at startup (an I/O error opening a partition's segment), serves the
// other (Kafka's LogManager.loadLogs takes the failed dir offline through the
// LogDirFailureChannel and goes on): its partitions and new topics, created in the
// online dir only; the failed dir's partitions answer errors. Once the segment is
// back, the next start serves everything. When every log dir fails, the broker
// does not start ("all log dirs ... have failed").
func TestLogDirUnreadableAtStartup(t *testing.T) {
	t.Parallel()
	const topic, perPartition = "it-logdir", 10
	b, data2 := twoDirBrokerWithTopic(t, topic, perPartition)
	online, failing := partitionsIn(t, b.DataDir, topic), partitionsIn(t, data2, topic)
	if len(online) == 0 || len(failing) == 0 || len(online)+len(failing) != 4 {
		t.Fatalf("placement: %v in %s, %v in %s", online, b.DataDir, failing, data2)
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	restore := unreadableSegment(t, filepath.Join(data2, topic+"-"+strconv.Itoa(int(failing[0]))), filepath.Join(b.Dir, "stash.log"))
	b.Start()
	b.WaitReady()
	if log := b.Log(); !strings.Contains(log, "error while loading log dir; it is offline") || !strings.Contains(log, data2) {
		t.Fatalf("no log dir failure in the broker log:\n%s", b.LogTail(40))
	}
	for _, p := range online {
		if got := consumePartition(t, b, topic, p, perPartition); len(got) != perPartition || got[0] != fmt.Sprintf("p%d-0", p) {
			t.Fatalf("partition %d in the online dir: %v", p, got)
		}
	}
	// the partitions of the failed dir are not served
	pcl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(3*time.Second))
	for _, p := range failing {
		r := kgo.StringRecord("lost")
		r.Partition = p
		pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := pcl.ProduceSync(pctx, r).FirstErr()
		cancel()
		if err == nil {
			t.Fatalf("produce to partition %d of the offline dir succeeded", p)
		}
		t.Logf("produce to partition %d of the offline dir: %v", p, err)
	}
	pcl.Close()
	// a new topic lives in the online dir only
	createTopic(t, b, topic+"-new", 4, nil)
	if got := partitionsIn(t, data2, topic+"-new"); len(got) != 0 {
		t.Fatalf("new partitions %v created in the offline dir", got)
	}
	ncl := b.Client(kgo.DefaultProduceTopic(topic + "-new"))
	if err := ncl.ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic+"-new", 20)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ncl.Close()
	if got := consumeAll(t, b, topic+"-new", 20, 30*time.Second); len(got) != 20 {
		t.Fatalf("new topic: %d records", len(got))
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// the segment back: every partition is served again
	restore()
	b.Start()
	b.WaitReady()
	for p := int32(0); p < 4; p++ {
		if got := consumePartition(t, b, topic, p, perPartition); len(got) != perPartition || got[perPartition-1] != fmt.Sprintf("p%d-%d", p, perPartition-1) {
			t.Fatalf("partition %d after the dir is back: %v", p, got)
		}
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// both dirs failing: no start
	unreadableSegment(t, filepath.Join(b.DataDir, topic+"-"+strconv.Itoa(int(online[0]))), filepath.Join(b.Dir, "stash1.log"))
	unreadableSegment(t, filepath.Join(data2, topic+"-"+strconv.Itoa(int(failing[0]))), filepath.Join(b.Dir, "stash2.log"))
	b.Start()
	if code := b.WaitExit(60 * time.Second); code != 1 {
		t.Fatalf("exit code %d with every log dir failing", code)
	}
	if log := b.LogTail(20); !strings.Contains(log, "all log dirs in") {
		t.Fatalf("no all-log-dirs-failed error in the broker log:\n%s", log)
	}
}

// TestLogDirUnreadableMetaProperties: a log dir whose meta.properties cannot be
// read (a directory in its place: EISDIR, an I/O error even for root) starts
// offline, as in Kafka (MetaPropertiesEnsemble.Loader's errorLogDirs become
// LogManager's initialOfflineDirs): the broker starts and serves the other dir,
// DescribeLogDirs answers KAFKA_STORAGE_ERROR for it, and the auto-format leaves
// it alone. Once the file is back, the next start serves everything. The
// metadata log dir unreadable stops the startup.
func TestLogDirUnreadableMetaProperties(t *testing.T) {
	t.Parallel()
	const topic, perPartition = "it-metaprops", 5
	b, data2 := twoDirBrokerWithTopic(t, topic, perPartition)
	online, offline := partitionsIn(t, b.DataDir, topic), partitionsIn(t, data2, topic)
	if len(online) == 0 || len(offline) == 0 {
		t.Fatalf("placement: %v in %s, %v in %s", online, b.DataDir, offline, data2)
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	meta2, stash := filepath.Join(data2, "meta.properties"), filepath.Join(b.Dir, "meta2.properties")
	if err := os.Rename(meta2, stash); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(meta2, 0o755); err != nil {
		t.Fatal(err)
	}
	b.Start()
	b.WaitReady()
	if log := b.Log(); !strings.Contains(log, "Error while reading meta.properties file") || !strings.Contains(log, meta2) {
		t.Fatalf("no meta.properties error in the broker log:\n%s", b.LogTail(40))
	}
	for _, p := range online {
		if got := consumePartition(t, b, topic, p, perPartition); len(got) != perPartition {
			t.Fatalf("partition %d in the online dir: %v", p, got)
		}
	}
	dirs, err := b.Admin().DescribeAllLogDirs(ctxT(t, 10*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen int
	dirs.Each(func(d kadm.DescribedLogDir) {
		switch d.Dir {
		case data2:
			seen++
			if d.Err != kerr.KafkaStorageError {
				t.Errorf("DescribeLogDirs %s: %v, want KAFKA_STORAGE_ERROR", d.Dir, d.Err)
			}
		case b.DataDir:
			seen++
			if d.Err != nil {
				t.Errorf("DescribeLogDirs %s: %v", d.Dir, d.Err)
			}
		}
	})
	if seen != 2 {
		t.Fatalf("DescribeLogDirs: %d of the 2 dirs", seen)
	}
	if fi, err := os.Stat(meta2); err != nil || !fi.IsDir() {
		t.Fatalf("the unreadable meta.properties was replaced: %v", err)
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// the file back: every partition is served again
	if err := os.Remove(meta2); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(stash, meta2); err != nil {
		t.Fatal(err)
	}
	b.Start()
	b.WaitReady()
	for p := int32(0); p < 4; p++ {
		if got := consumePartition(t, b, topic, p, perPartition); len(got) != perPartition {
			t.Fatalf("partition %d after the file is back: %v", p, got)
		}
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d", code)
	}

	// the metadata log dir's meta.properties unreadable: no start
	meta1 := filepath.Join(b.DataDir, "meta.properties")
	if err := os.Remove(meta1); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(meta1, 0o755); err != nil {
		t.Fatal(err)
	}
	b.Start()
	if code := b.WaitExit(30 * time.Second); code != 1 {
		t.Fatalf("exit code %d with the metadata log dir unreadable", code)
	}
	if log := b.LogTail(20); !strings.Contains(log, "Encountered I/O error in metadata log directory "+b.DataDir+". Cannot continue.") {
		t.Fatalf("no metadata log dir error in the broker log:\n%s", log)
	}
}
