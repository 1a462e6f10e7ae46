//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStorageSegmentDeletion: DeleteRecords past whole segments renames their
// files <name>.deleted at once and removes them file.delete.delay.ms later, as
// Kafka does (LocalLog.deleteSegmentFiles); the partition reads on from the new
// log start offset and Kafka's kafka-dump-log.sh reads the segments left.
// Deleting a topic renames its partition directory <topic>-0.<uuid>-delete
// (LogManager.asyncDelete).
func TestStorageSegmentDeletion(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-segment-deletion"
	const delay = 4 * time.Second
	createTopic(t, b, topic, 1, map[string]string{
		"segment.bytes":        "1048576",
		"file.delete.delay.ms": strconv.FormatInt(delay.Milliseconds(), 10),
	})
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(64<<10),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	const n = 3500 // ~1 KiB records: four segments
	value := bytes.Repeat([]byte("v"), 1000)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: value}
	}
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	partDir := filepath.Join(b.DataDir, topic+"-0")
	segs := globSorted(t, filepath.Join(partDir, "*.log"))
	if len(segs) < 3 {
		t.Fatalf("%d segments, want at least 3: %v", len(segs), segs)
	}
	base := func(p string) int64 {
		return mustAtoi64(t, p, strings.TrimSuffix(filepath.Base(p), ".log"))
	}
	to := base(segs[2]) // the first two segments go
	adm := b.Admin()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: to})
	res, err := adm.DeleteRecords(ctxT(t, 30*time.Second), offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup(topic, 0); r.Err != nil || r.LowWatermark != to {
		t.Fatalf("delete records to %d: %+v", to, r)
	}
	deletedAt := time.Now()
	for _, s := range segs[:2] {
		if _, err := os.Stat(s); !os.IsNotExist(err) {
			t.Errorf("%s after DeleteRecords: %v", filepath.Base(s), err)
		}
		for _, suf := range []string{".log", ".index", ".timeindex"} {
			p := strings.TrimSuffix(s, ".log") + suf + ".deleted"
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s right after DeleteRecords: %v", filepath.Base(p), err)
			}
		}
	}
	waitFor(t, 30*time.Second, "the .deleted files to go", func() error {
		if left := globSorted(t, filepath.Join(partDir, "*.deleted")); len(left) > 0 {
			return fmt.Errorf("left: %v", left)
		}
		return nil
	})
	if took := time.Since(deletedAt); took < delay-time.Second {
		t.Errorf(".deleted files removed after %v, before file.delete.delay.ms %v", took, delay)
	}
	got := consumeAll(t, b, topic, int(n-to), 30*time.Second)
	if len(got) != int(n-to) || got[0].Offset != to {
		t.Fatalf("consumed %d records from offset %d, want %d from %d", len(got), got[0].Offset, n-to, to)
	}

	// topic deletion (another topic): the partition directory is renamed -delete,
	// and removed the broker's file.delete.delay.ms later
	const gone = "it-segment-deletion-topic"
	createTopic(t, b, gone, 1, nil)
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recordsFor(gone, 10)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.DeleteTopics(ctxT(t, 30*time.Second), gone); err != nil {
		t.Fatal(err)
	}
	deleteDir := regexp.MustCompile(`^` + regexp.QuoteMeta(gone) + `-0\.[0-9a-f]{32}-delete$`)
	waitFor(t, 30*time.Second, "the partition directory to be renamed -delete", func() error {
		if _, err := os.Stat(filepath.Join(b.DataDir, gone+"-0")); !os.IsNotExist(err) {
			return fmt.Errorf("%s-0: %v", gone, err)
		}
		ents, err := os.ReadDir(b.DataDir)
		if err != nil {
			return err
		}
		for _, e := range ents {
			if deleteDir.MatchString(e.Name()) {
				return nil
			}
		}
		return fmt.Errorf("no %s in %s", deleteDir, b.DataDir)
	})

	// Kafka's tools read what is left of the first topic
	b.Stop(0)
	requireKafkaTools(t)
	dumpLogCheck(t, partDir, true)
}
