//go:build integration

package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// perfTotalRE matches ProducerPerformance's final summary line, e.g.
// "100000 records sent, 51234.5 records/sec (50.03 MB/sec), 310.12 ms avg latency, 812.00 ms max latency, ..."
var perfTotalRE = regexp.MustCompile(`(?m)^(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, ([\d.]+) ms max latency(.*)$`)

// TestProducerPerf runs kafka-producer-perf-test.sh with 100000 records of 1 KiB,
// unthrottled, with acks=all (idempotent, the default) and with acks=1 (not
// idempotent). It checks that every record was sent and landed in the log, and
// logs the throughput figures (no timing assertions).
func TestProducerPerf(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-perf"
	const n = 100000
	createTopic(t, b, topic, 3, nil)

	var total int64
	for _, acks := range []string{"all", "1"} {
		r := MustKafkaTool(t, RunOpts{Timeout: 6 * time.Minute}, "kafka-producer-perf-test.sh",
			"--topic", topic, "--num-records", "100000", "--record-size", "1024", "--throughput", "-1",
			"--bootstrap-server", b.Addr,
			"--command-property", "acks="+acks,
		)
		ms := perfTotalRE.FindAllStringSubmatch(r.Stdout, -1)
		if len(ms) == 0 {
			t.Fatalf("acks=%s: no summary line in the output:\n%s", acks, r)
		}
		m := ms[len(ms)-1]
		if m[1] != "100000" {
			t.Errorf("acks=%s: %s records sent, want 100000:\n%s", acks, m[1], r)
		}
		for _, bad := range []string{"ERROR", "Exception", "error code"} {
			if strings.Contains(r.Stdout+r.Stderr, bad) {
				t.Errorf("acks=%s: output mentions %q:\n%s", acks, bad, r)
			}
		}
		t.Logf("MEASURE producer-perf acks=%s: %s records/sec, %s MB/sec, avg latency %s ms, max latency %s ms (%s); wall %v",
			acks, m[2], m[3], m[4], m[5], strings.TrimPrefix(m[6], ", "), r.Duration.Round(time.Millisecond))

		total += n
		if got := sumOffsets(endOffsets(t, b, topic)); got != total {
			t.Errorf("acks=%s: log end offsets sum to %d, want %d", acks, got, total)
		}
	}
}
