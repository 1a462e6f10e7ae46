package broker

import (
	"context"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap/zaptest"

	"github.com/kgo-broker/kgo-broker/config"
)

// A node built with Metrics counts requests, produced records and bytes, and
// reports its replica, log dir, controller and raft state when scraped.
func TestNodeMetrics(t *testing.T) {
	dir := t.TempDir()
	pp, cp := freePort(t), freePort(t)
	cfg, err := config.SingleNode(map[string]string{
		"listeners":                    "PLAINTEXT://127.0.0.1:" + strconv.Itoa(pp) + ",CONTROLLER://127.0.0.1:" + strconv.Itoa(cp),
		"advertised.listeners":         "PLAINTEXT://127.0.0.1:" + strconv.Itoa(pp),
		"controller.quorum.voters":     "1@127.0.0.1:" + strconv.Itoa(cp),
		"log.dirs":                     dir,
		"broker.heartbeat.interval.ms": "100",
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(NodeConfig{Config: cfg, ClusterID: testClusterID, DirectoryIDs: map[string][16]byte{dir: formatDir(t, dir)},
		Logger: zaptest.NewLogger(t), Metrics: true})
	if err != nil {
		t.Fatal(err)
	}
	// Before Start the node collector reports nothing (and reads nothing).
	if c := testutil.CollectAndCount(nodeCollector{n}); c != 0 {
		t.Fatalf("%d node metrics before Start", c)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	tn := &testNode{Node: n, addr: "127.0.0.1:" + strconv.Itoa(pp), dir: dir}
	t.Cleanup(func() { tn.stop(t) })

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(tn.client(t))
	// flush.messages=1: every append is synced, so flush times are observed
	one := "1"
	if resp, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"flush.messages": &one}, "metrics"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v / %v", err, resp.Err)
	}
	const records = 7
	p := tn.client(t, kgo.DefaultProduceTopic("metrics"))
	var bytesIn int
	for i := range records {
		r := &kgo.Record{Value: []byte("value-" + strconv.Itoa(i))}
		if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		bytesIn += 61 + len(r.Value) // one batch each: its header and the value, at least
	}
	c := tn.client(t, kgo.ConsumeTopics("metrics"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	for got := 0; got < records; {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		got += fs.NumRecords()
	}

	reg := n.MetricsRegistry()
	gauge := func(name string) float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			var sum float64
			for _, m := range mf.GetMetric() {
				switch {
				case m.Gauge != nil:
					sum += m.GetGauge().GetValue()
				case m.Counter != nil:
					sum += m.GetCounter().GetValue()
				}
			}
			return sum
		}
		t.Fatalf("no metric %s", name)
		return 0
	}
	for name, want := range map[string]float64{
		"kafka_server_brokertopicmetrics_messagesin_total":       records,
		"kafka_server_replicamanager_partitioncount":             3,
		"kafka_server_replicamanager_leadercount":                3,
		"kafka_server_replicamanager_underreplicatedpartitions":  0,
		"kafka_server_replicamanager_offlinereplicacount":        0,
		"kafka_log_logmanager_offlinelogdirectorycount":          0,
		"kafka_controller_kafkacontroller_activecontrollercount": 1,
		"kafka_server_raftmetrics_current_leader":                1,
	} {
		if got := gauge(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := testutil.CollectAndCount(n.flushTime); got != 1 {
		t.Errorf("flush time histogram: %d series", got)
	}
	if mfs, err := reg.Gather(); err == nil {
		var flushes uint64
		for _, mf := range mfs {
			if mf.GetName() == "kafka_log_logflushstats_logflushrateandtimems" {
				flushes = mf.GetMetric()[0].GetHistogram().GetSampleCount()
			}
		}
		if flushes < records {
			t.Errorf("%d log flushes observed for %d records produced with flush.messages=1", flushes, records)
		}
	}
	if got := gauge("kafka_server_brokertopicmetrics_bytesin_total"); got < float64(bytesIn) {
		t.Errorf("bytesin_total = %v, want >= %d", got, bytesIn)
	}
	if got := gauge("kafka_server_brokertopicmetrics_bytesout_total"); got < records*8 {
		t.Errorf("bytesout_total = %v, want > 0", got)
	}
	if got := gauge("kafka_server_raftmetrics_high_watermark"); got <= 0 {
		t.Errorf("raft high watermark %v", got)
	}
	if got := testutil.ToFloat64(n.requestMetrics.requests.WithLabelValues("Produce", strconv.Itoa(int(produceVersion(t, n))))); got < records {
		t.Errorf("Produce requests_total = %v, want >= %d", got, records)
	}

	// The handler serves the text format, with request times and Go runtime
	// metrics.
	srv := httptest.NewServer(n.MetricsHandler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`kafka_network_requestmetrics_requests_total{request="Produce",version=`,
		`kafka_network_requestmetrics_totaltimems_count{request="Fetch"}`,
		`kafka_server_replicamanager_leadercount 3`,
		`go_goroutines `,
		`process_start_time_seconds `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}

// produceVersion is the Produce version the test's client used: the one
// series of Produce in requests_total.
func produceVersion(t *testing.T, n *Node) int16 {
	t.Helper()
	for v := int16(maxMetricVersion - 1); v >= 0; v-- {
		if n.requestMetrics.counters[0][v].Load() != nil {
			return v
		}
	}
	t.Fatal("no Produce requests counted")
	return -1
}

// Observing a request allocates nothing once its series exist.
func TestRequestMetricsObserveAllocs(t *testing.T) {
	m := newRequestMetrics()
	m.observe(0, 11, time.Millisecond)
	if a := testing.AllocsPerRun(100, func() { m.observe(0, 11, time.Millisecond) }); a != 0 {
		t.Fatalf("%v allocs per observe", a)
	}
	m.observe(-1, 0, 0)   // out of range: ignored
	m.observe(0, 1000, 0) // a version past the array: the last slot
	if got := testutil.ToFloat64(m.requests.WithLabelValues("Produce", "11")); got != 102 {
		t.Fatalf("Produce v11 = %v", got)
	}
}
