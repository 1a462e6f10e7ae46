//go:build integration

package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMetricsEndpoint starts the binary with KGO_METRICS_ADDR, produces with
// franz-go and scrapes /metrics over HTTP: Kafka-named metrics from every
// room, request counts, Go runtime and process metrics.
func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	addr := "127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0])
	b := StartBroker(t, BrokerOptions{Env: []string{"KGO_METRICS_ADDR=" + addr}})
	const topic, n = "it-metrics", 25
	createTopic(t, b, topic, 2, nil)
	p := b.Client(kgo.DefaultProduceTopic(topic))
	if err := p.ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic, n)...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	consumeAll(t, b, topic, n, 30*time.Second)

	body := scrape(t, "http://"+addr+"/metrics")
	for _, want := range []string{
		"kafka_server_brokertopicmetrics_messagesin_total " + strconv.Itoa(n),
		"kafka_server_replicamanager_partitioncount ",
		"kafka_server_replicamanager_leadercount ",
		"kafka_server_replicamanager_underreplicatedpartitions 0",
		"kafka_server_replicamanager_offlinereplicacount 0",
		"kafka_log_logmanager_offlinelogdirectorycount 0",
		"kafka_log_logcleanermanager_uncleanable_partitions_count{logdirectory=",
		"kafka_controller_kafkacontroller_activecontrollercount 1",
		"kafka_server_raftmetrics_current_leader 1",
		`kafka_network_requestmetrics_totaltimems_bucket{request="Produce",le=`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Produce requests were counted (franz-go may batch the records, so at
	// least one), and consumers' fetched bytes.
	if v := metricValue(t, body, `kafka_network_requestmetrics_requests_total\{request="Produce",version="\d+"\}`); v < 1 {
		t.Errorf("Produce requests_total %v", v)
	}
	if v := metricValue(t, body, `kafka_server_brokertopicmetrics_bytesout_total`); v <= 0 {
		t.Errorf("bytesout_total %v", v)
	}
	// The topic's 2 partitions, plus __consumer_offsets' if the consumer
	// created it: at least 2, all led here.
	pc := metricValue(t, body, `kafka_server_replicamanager_partitioncount`)
	if lc := metricValue(t, body, `kafka_server_replicamanager_leadercount`); pc < 2 || lc != pc {
		t.Errorf("partitioncount %v, leadercount %v", pc, lc)
	}
}

// TestMetricsBadAddress: an address that cannot be bound is reported on
// stderr, naming the variable, and the broker runs without metrics.
func TestMetricsBadAddress(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{Env: []string{"KGO_METRICS_ADDR=127.0.0.1:not-a-port"}})
	createTopic(t, b, "it-metrics-bad", 1, nil)
	log, err := os.ReadFile(b.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "KGO_METRICS_ADDR=127.0.0.1:not-a-port") {
		t.Errorf("the log does not name KGO_METRICS_ADDR:\n%s", log)
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s %v", url, resp.Status, err)
	}
	return string(body)
}

// metricValue is the value of the first sample whose name and labels match
// the regexp series.
func metricValue(t *testing.T, body, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + series + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no sample %s", series)
	}
	var v float64
	if _, err := fmt.Sscan(m[1], &v); err != nil {
		t.Fatal(err)
	}
	return v
}
