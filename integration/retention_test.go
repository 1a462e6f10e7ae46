//go:build integration

package integration

// Retention and deletion as Kafka's (issue 15): retention.ms applies to the
// active segment too, so an idle topic's data expires (UnifiedLog rolls the
// active segment when every segment is deletable, bounded by the high
// watermark), on the log.retention.check.interval.ms cadence; and
// DeleteRecords on a replicated topic moves every replica's log start
// offset, not only the leader's (followers take it from their fetch
// responses and delete the segments below it).

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRetentionIdleTopic(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{"log.retention.check.interval.ms": "300"}})
	const topic = "it-retention-idle"
	createTopic(t, b, topic, 1, map[string]string{"retention.ms": "2000"})
	cl := b.Client(kgo.DefaultProduceTopic(topic))
	const n = 50
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic, n)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	adm := b.Admin()
	start := time.Now()
	// Everything sits in the active segment; nothing is produced again.
	waitFor(t, 30*time.Second, "the idle topic's records to expire", func() error {
		starts, err := adm.ListStartOffsets(ctxT(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		o, _ := starts.Lookup(topic, 0)
		if o.Err != nil || o.Offset != n {
			return fmt.Errorf("log start offset %d (%v), want %d", o.Offset, o.Err, n)
		}
		return nil
	})
	if took := time.Since(start); took < 2*time.Second-200*time.Millisecond {
		t.Errorf("records expired after %v, before retention.ms", took)
	}
	// The new active segment starts at the log end; the old one is gone.
	// (Kafka renames the old one's files .deleted just after it moved the
	// log start offset.)
	partDir := filepath.Join(b.DataDir, topic+"-0")
	waitFor(t, 10*time.Second, "one segment at the log end", func() error {
		var bases []int64
		for _, p := range globSorted(t, filepath.Join(partDir, "*.log")) {
			bases = append(bases, mustAtoi64(t, p, strings.TrimSuffix(filepath.Base(p), ".log")))
		}
		if len(bases) != 1 || bases[0] != n {
			return fmt.Errorf("segments %v, want one at %d", bases, n)
		}
		return nil
	})
	ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup(topic, 0); o.Offset != n {
		t.Fatalf("log end offset %d, want %d", o.Offset, n)
	}
	// The partition goes on from there.
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic, 5)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	got := consumeAll(t, b, topic, 5, 30*time.Second)
	if len(got) != 5 || got[0].Offset != n {
		t.Fatalf("consumed %d records from offset %d, want 5 from %d", len(got), got[0].Offset, n)
	}
}

func TestDeleteRecordsReplicated(t *testing.T) {
	c := StartCluster(t, ClusterOptions{Combined: 3, Overrides: map[string]string{
		"replica.fetch.backoff.ms": "200",
	}})
	const topic = "it-delete-records-rf3"
	adm := kadm.NewClient(c.Client(nil))
	cr, err := adm.CreateTopic(ctxT(t, 30*time.Second), 1, 3, map[string]*string{
		"segment.bytes":        kadm.StringPtr("1048576"),
		"file.delete.delay.ms": kadm.StringPtr("1000"),
		"min.insync.replicas":  kadm.StringPtr("3"),
	}, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLeaders(t, c, topic, 1)
	cl := c.Client(nil, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(64<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	const n = 3500 // ~1 KiB records: four segments on every replica
	value := bytes.Repeat([]byte("v"), 1000)
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: value}
	}
	if err := cl.ProduceSync(ctxT(t, 90*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	segBases := func(n *ClusterNode) []int64 {
		var out []int64
		for _, p := range globSorted(t, filepath.Join(n.Broker.DataDir, topic+"-0", "*.log")) {
			out = append(out, mustAtoi64(t, p, strings.TrimSuffix(filepath.Base(p), ".log")))
		}
		return out
	}
	leaderSegs := segBases(c.Node(1))
	if len(leaderSegs) < 3 {
		t.Fatalf("node 1 has segments %v, want at least 3", leaderSegs)
	}
	to := leaderSegs[2] + 10 // past two whole segments, inside the third
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: to})
	res, err := adm.DeleteRecords(ctxT(t, 30*time.Second), offs)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := res.Lookup(topic, 0); r.Err != nil || r.LowWatermark != to {
		t.Fatalf("delete records to %d: %+v", to, r)
	}
	// Every replica deletes the segments wholly below the new log start
	// offset (Kafka's follower: maybeIncrementLogStartOffset on each fetch
	// response, then deleteOldSegments).
	for _, node := range c.Nodes {
		waitFor(t, 30*time.Second, fmt.Sprintf("node %d to delete the segments below %d", node.ID, to), func() error {
			segs := segBases(node)
			if len(segs) == 0 || segs[0] > to || (len(segs) > 1 && segs[1] <= to) {
				return fmt.Errorf("segments %v", segs)
			}
			return nil
		})
	}
	// A follower's log start offset is its own: after the leader stops, the
	// new leader answers from the same one.
	old := waitLeaders(t, c, topic, 1)[0]
	if code := c.Node(old).Stop(60 * time.Second); code != 0 {
		t.Fatalf("node %d exited with %d", old, code)
	}
	waitFor(t, 30*time.Second, "a new leader's log start offset", func() error {
		for _, node := range c.Nodes {
			if node.ID == old {
				continue
			}
			st, err := topicState(node.Addr, topic)
			if err != nil {
				return err
			}
			if l := st[0].leader; l < 0 || l == old {
				return fmt.Errorf("leader %d", l)
			}
			starts, err := kadm.NewClient(c.Client([]string{node.Addr})).ListStartOffsets(ctxT(t, 10*time.Second), topic)
			if err != nil {
				return err
			}
			if o, _ := starts.Lookup(topic, 0); o.Err != nil || o.Offset != to {
				return fmt.Errorf("log start offset %d (%v), want %d", o.Offset, o.Err, to)
			}
			return nil
		}
		return fmt.Errorf("no node")
	})
	c.Node(old).Start()
}
