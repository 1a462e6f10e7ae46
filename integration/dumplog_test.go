//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDumpLog reads the broker's files with kafka-dump-log.sh
// (org.apache.kafka.tools.DumpLogSegments): data segments with --deep-iteration,
// their indexes with --verify-index-only and --index-sanity-check, and the
// metadata log with --cluster-metadata-decoder.
func TestDumpLog(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-dump"
	const n = 3000
	// 1 MiB segments (the minimum segment.bytes) so that ~3 MiB of records roll
	// a few segments and the closed ones have trimmed indexes.
	createTopic(t, b, topic, 1, map[string]string{"segment.bytes": "1048576"})

	// Uncompressed (franz-go compresses with snappy by default), so that the
	// bytes on disk add up to several segments.
	// Batches of at most 16 KiB, so that the sparse offset index (an entry per
	// index.interval.bytes=4096) has entries to verify.
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(16<<10))
	value := bytes.Repeat([]byte("x"), 1000)
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%05d", i)), Value: value,
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}})
	}
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	cl.Close()

	// Stop the broker so that every file is final (indexes trimmed, all flushed).
	b.Stop(0)

	partDir := filepath.Join(b.DataDir, topic+"-0")
	segs := globSorted(t, filepath.Join(partDir, "*.log"))
	if len(segs) < 2 {
		t.Errorf("want >= 2 segments after producing ~3 MiB with segment.bytes=1 MiB, got %v", segs)
	}
	indexes := globSorted(t, filepath.Join(partDir, "*.index"))
	timeIndexes := globSorted(t, filepath.Join(partDir, "*.timeindex"))
	if len(indexes) != len(segs) || len(timeIndexes) != len(segs) {
		t.Errorf("segments %v, offset indexes %v, time indexes %v: want one of each per segment", segs, indexes, timeIndexes)
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

	// Data segments, deep iteration: every record, consecutive offsets.
	r := MustKafkaTool(t, RunOpts{Timeout: 3 * time.Minute}, "kafka-dump-log.sh", "--deep-iteration", "--files", strings.Join(segs, ","))
	noTrouble("--deep-iteration", r)
	for _, p := range nonConsecutive(r.Stdout) {
		t.Errorf("--deep-iteration: %s", p)
	}
	if got := strings.Count(r.Stdout, "\n| offset: "); got != n {
		t.Errorf("--deep-iteration printed %d record lines ('| offset: '), want %d", got, n)
	}

	// Offset and time indexes checked against the log.
	idx := append(append([]string(nil), indexes...), timeIndexes...)
	r = MustKafkaTool(t, RunOpts{Timeout: 3 * time.Minute}, "kafka-dump-log.sh", "--verify-index-only", "--files", strings.Join(idx, ","))
	noTrouble("--verify-index-only", r,
		"Mismatches in", "mismatch", "out of order", "not found in the log", "Index offset", "Non-consecutive")

	r = MustKafkaTool(t, RunOpts{}, "kafka-dump-log.sh", "--index-sanity-check", "--files", strings.Join(idx, ","))
	noTrouble("--index-sanity-check", r, "failed sanity check")
	// Each index either passes or is empty (a segment of few large batches has no
	// offset index entry); the first segment's offset index must have entries.
	if got := strings.Count(r.Stdout, " passed sanity check.") + strings.Count(r.Stdout, " is empty."); got != len(idx) {
		t.Errorf("--index-sanity-check: %d of %d files passed or are empty:\n%s", got, len(idx), r)
	}
	if len(indexes) > 0 && !strings.Contains(r.Stdout, indexes[0]+" passed sanity check.") {
		t.Errorf("--index-sanity-check: %s did not pass (or is empty):\n%s", indexes[0], r)
	}

	// The metadata log, decoded as KRaft metadata records.
	mdLogs := globSorted(t, filepath.Join(b.DataDir, "__cluster_metadata-0", "*.log"))
	if len(mdLogs) == 0 {
		t.Fatalf("no __cluster_metadata-0/*.log in %s", b.DataDir)
	}
	r = MustKafkaTool(t, RunOpts{}, "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", strings.Join(mdLogs, ","))
	noTrouble("--cluster-metadata-decoder", r)
	for _, p := range nonConsecutive(r.Stdout) {
		t.Errorf("--cluster-metadata-decoder: %s", p)
	}
	for _, want := range []string{`"type":"TOPIC_RECORD"`, `"name":"` + topic + `"`, `"type":"PARTITION_RECORD"`, `"type":"REGISTER_BROKER_RECORD"`} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("--cluster-metadata-decoder output lacks %s:\n%s", want, tail(r.String(), 60))
		}
	}
}

// nonConsecutive returns DumpLogSegments' "Non-consecutive offsets" reports,
// except the one Kafka 4.4's tool itself prints for every segment whose base
// offset is not 0 ("-1 is followed by <base offset>": it starts each file's
// check from -1).
func nonConsecutive(out string) []string {
	var problems []string
	file := ""
	for _, l := range strings.Split(out, "\n") {
		if f, ok := strings.CutPrefix(l, "Non-consecutive offsets in "); ok {
			file = f
			continue
		}
		if file == "" || !strings.HasPrefix(l, "  ") || !strings.Contains(l, " is followed by ") {
			file = ""
			continue
		}
		var prev, next int64
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "%d is followed by %d", &prev, &next); err == nil && prev == -1 {
			var base int64
			if _, err := fmt.Sscanf(filepath.Base(file), "%020d.log", &base); err == nil && base == next {
				continue
			}
		}
		problems = append(problems, fmt.Sprintf("non-consecutive offsets in %s: %s", file, strings.TrimSpace(l)))
	}
	return problems
}

func globSorted(t testing.TB, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(m)
	return m
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	ls := strings.Split(s, "\n")
	if len(ls) <= n {
		return s
	}
	return fmt.Sprintf("... (%d lines cut)\n%s", len(ls)-n, strings.Join(ls[len(ls)-n:], "\n"))
}
