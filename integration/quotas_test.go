//go:build integration

package integration

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttleCounter is a kgo.HookBrokerThrottle counting throttled responses.
type throttleCounter struct {
	n   atomic.Int64
	max atomic.Int64 // ms
}

func (h *throttleCounter) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	if d > 0 {
		h.n.Add(1)
		if ms := d.Milliseconds(); ms > h.max.Load() {
			h.max.Store(ms)
		}
	}
}

const quotaRate = 1 << 20 // 1 MiB/s

// TestClientQuotas sets producer and consumer byte rates of 1 MiB/s with
// kafka-configs.sh and measures them: the limited producer and consumer run
// at ~1 MiB/s (over 12 s: Kafka's rate averages over 11 windows of 1 s, so
// a fresh client's first ~10 MiB go at once and later ones at the quota)
// and see throttle_time_ms, while an unlimited client on the same broker is
// not slowed.
func TestClientQuotas(t *testing.T) {
	requireKafkaTools(t)
	metricsAddr := "127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0])
	b := StartBroker(t, BrokerOptions{Env: []string{"KGO_METRICS_ADDR=" + metricsAddr}})
	for _, c := range []struct{ entity, cfg string }{
		{"limited", "producer_byte_rate=1048576"},
		{"limited-consumer", "consumer_byte_rate=1048576"},
	} {
		MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--alter",
			"--add-config", c.cfg, "--entity-type", "clients", "--entity-name", c.entity)
	}
	r := MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--describe", "--entity-type", "clients")
	if !strings.Contains(r.Stdout, "producer_byte_rate=1048576.0") || !strings.Contains(r.Stdout, "consumer_byte_rate=1048576.0") {
		t.Fatalf("kafka-configs --describe clients:\n%s", r)
	}
	createTopic(t, b, "quota-in", 1, nil)
	createTopic(t, b, "quota-out", 1, nil)

	// The consumer's topic: 48 MiB from an unlimited producer, which
	// must not be slowed (it also shows the broker is fast here).
	// Random, uncompressed values: the quotas count bytes on the wire.
	value := make([]byte, 10<<10)
	rand.Read(value)
	fast := &throttleCounter{}
	fp := b.Client(kgo.ClientID("unlimited"), kgo.WithHooks(fast), kgo.DefaultProduceTopic("quota-out"),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	start := time.Now()
	const fill = 48 << 20
	var wg sync.WaitGroup
	for i := 0; i < fill/len(value); i++ {
		wg.Add(1)
		fp.Produce(context.Background(), &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	fastRate := float64(fill) / time.Since(start).Seconds()
	t.Logf("unlimited producer: %.1f MiB/s, %d throttled responses", fastRate/(1<<20), fast.n.Load())
	if fast.n.Load() != 0 || fastRate < 4*quotaRate {
		t.Errorf("the unlimited producer was slowed: %.1f MiB/s, %d throttles", fastRate/(1<<20), fast.n.Load())
	}

	// Steady state: Kafka's rate is the sum over the last 11 windows of
	// 1 s divided by at least 10 s, so a fresh client's first ~10 MiB go
	// at once; from then on it gets the quota. The rates are measured from
	// 11 s to 23 s.
	const warm, run = 11 * time.Second, 12 * time.Second
	var produced, consumed atomic.Int64
	prodHook, consHook := &throttleCounter{}, &throttleCounter{}
	ctx, cancel := context.WithTimeout(context.Background(), warm+run)
	defer cancel()
	wg.Add(2)
	go func() { // the limited producer, as fast as it can
		defer wg.Done()
		p := b.Client(kgo.ClientID("limited"), kgo.WithHooks(prodHook), kgo.DefaultProduceTopic("quota-in"),
			kgo.MaxBufferedRecords(256), kgo.ProducerBatchCompression(kgo.NoCompression()))
		defer p.Close()
		for ctx.Err() == nil {
			p.Produce(ctx, &kgo.Record{Value: value}, func(r *kgo.Record, err error) {
				if err == nil {
					produced.Add(int64(len(r.Value)))
				}
			})
		}
	}()
	go func() { // the limited consumer
		defer wg.Done()
		c := b.Client(kgo.ClientID("limited-consumer"), kgo.WithHooks(consHook), kgo.ConsumeTopics("quota-out"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		defer c.Close()
		for ctx.Err() == nil {
			c.PollFetches(ctx).EachRecord(func(r *kgo.Record) { consumed.Add(int64(len(r.Value))) })
		}
	}()
	var series []string
	var p0, c0 int64
	for i := 1; i <= int((warm+run)/time.Second); i++ {
		time.Sleep(time.Second)
		series = append(series, fmt.Sprintf("%ds %.1f/%.1f", i, float64(produced.Load())/(1<<20), float64(consumed.Load())/(1<<20)))
		if time.Duration(i)*time.Second == warm {
			p0, c0 = produced.Load(), consumed.Load()
		}
	}
	p1, c1 := produced.Load(), consumed.Load()
	wg.Wait()
	t.Logf("MiB produced/consumed so far: %s", strings.Join(series, ", "))
	for _, m := range []struct {
		what  string
		bytes int64
		hook  *throttleCounter
	}{{"producer", p1 - p0, prodHook}, {"consumer", c1 - c0, consHook}} {
		rate := float64(m.bytes) / run.Seconds()
		t.Logf("limited %s: %.2f MiB/s from %v to %v, %d throttled responses (max %d ms)", m.what, rate/(1<<20), warm, warm+run, m.hook.n.Load(), m.hook.max.Load())
		if rate < 0.75*quotaRate || rate > 1.25*quotaRate {
			t.Errorf("limited %s ran at %.2f MiB/s, want ~1 MiB/s", m.what, rate/(1<<20))
		}
		if m.hook.n.Load() == 0 {
			t.Errorf("limited %s saw no throttle_time_ms", m.what)
		}
	}
	// The throttle-time metrics Kafka has (kafka.server:type=Produce|Fetch).
	if !strings.Contains(brokerBin, "kafka-reference-broker") {
		body := scrape(t, "http://"+metricsAddr+"/metrics")
		for _, m := range []string{`kafka_server_produce_throttle_time{client_id="limited",user=""}`, `kafka_server_fetch_throttle_time{client_id="limited-consumer",user=""}`} {
			if !strings.Contains(body, m) {
				t.Errorf("metrics lack %s", m)
			}
		}
	}
}

// TestConnectionLimits: max.connections.per.ip(.overrides) closes the extra
// connection at once; an ip's connection_creation_rate closes connections
// beyond the rate.
func TestConnectionLimits(t *testing.T) {
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{
		"max.connections.per.ip.overrides": "127.0.0.2:2",
	}})
	dialFrom := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 5 * time.Second}
		c, err := d.Dial("tcp", b.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// answered sends ApiVersions and reports whether a response came back
	// (false: the broker closed the connection).
	answered := func(c net.Conn) bool {
		// ApiVersions v0: size, key 18, version 0, correlation id 1, null client id.
		frame := []byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write(frame); err != nil {
			return false
		}
		var size [4]byte
		_, err := io.ReadFull(c, size[:])
		return err == nil
	}
	for i := range 2 {
		if !answered(dialFrom("127.0.0.2")) {
			t.Fatalf("connection %d from 127.0.0.2 refused under its limit of 2", i)
		}
	}
	if answered(dialFrom("127.0.0.2")) {
		t.Fatal("third connection from 127.0.0.2 served over max.connections.per.ip.overrides 127.0.0.2:2")
	}
	if !answered(dialFrom("127.0.0.1")) {
		t.Fatal("127.0.0.1 refused")
	}

	MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--alter",
		"--add-config", "connection_creation_rate=1", "--entity-type", "ips", "--entity-name", "127.0.0.3")
	r := MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--describe", "--entity-type", "ips", "--entity-name", "127.0.0.3")
	if !strings.Contains(r.Stdout, "connection_creation_rate=1") {
		t.Fatalf("describe ips:\n%s", r)
	}
	// The quota reaches the broker with the image: wait for a refusal.
	// 1/s averaged over the 10 s window admits ~10 at once, then closes.
	refused := 0
	waitFor(t, 30*time.Second, "a connection from 127.0.0.3 closed by connection_creation_rate=1", func() error {
		c := dialFrom("127.0.0.3")
		if !answered(c) {
			refused++
			return nil
		}
		c.Close()
		return errors.New("still accepted")
	})
}

// TestControllerMutationRate: with controller_mutation_rate=1 a client's
// CreateTopics (v7, strict) spends the bucket (11 tokens) and the next
// answers THROTTLING_QUOTA_EXCEEDED with a throttle time.
func TestControllerMutationRate(t *testing.T) {
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--alter",
		"--add-config", "controller_mutation_rate=1", "--entity-type", "clients", "--entity-name", "mutator")
	cl := b.Client(kgo.ClientID("mutator"))
	defer cl.Close()
	create := func(name string, partitions int32) *kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctxT(t, 60*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 {
			t.Fatalf("%+v", resp)
		}
		if resp.Topics[0].ErrorCode == kerr.ThrottlingQuotaExceeded.Code && resp.ThrottleMillis <= 0 {
			t.Errorf("THROTTLING_QUOTA_EXCEEDED without a throttle time")
		}
		return &resp.Topics[0]
	}
	// Wait for the quota to reach the controller: a topic of 20 partitions
	// takes the bucket negative, the next creation is refused.
	var refused *kmsg.CreateTopicsResponseTopic
	waitFor(t, 30*time.Second, "THROTTLING_QUOTA_EXCEEDED", func() error {
		for i := 0; i < 3; i++ {
			name := "mut-" + time.Now().Format("150405.000000")
			if rt := create(name, 20); rt.ErrorCode == kerr.ThrottlingQuotaExceeded.Code {
				refused = rt
				return nil
			} else if rt.ErrorCode != 0 {
				return kerr.ErrorForCode(rt.ErrorCode)
			}
		}
		return errors.New("not throttled yet")
	})
	if refused.ErrorMessage != nil { // ApiError.fromThrowable drops the generic message
		t.Errorf("message %q", *refused.ErrorMessage)
	}
	// Another client id is not limited.
	other := b.Client(kgo.ClientID("free"))
	defer other.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "free-topic", 20, 1
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 30000
	resp, err := req.RequestWith(ctxT(t, 60*time.Second), other)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("unlimited client: %v %+v", err, resp)
	}
}

// TestRequestPercentage: request_percentage counts the handler's own time:
// a consumer long-polling an empty topic (its fetches park for
// fetch.max.wait.ms, 500 ms of every 500 ms) stays within 10% of a thread,
// while a client hammering Metadata at 0.01% is throttled. (At 1% Apache
// Kafka throttles the consumer's first requests: a cold JVM spends more than
// 100 ms of handler time on them.)
func TestRequestPercentage(t *testing.T) {
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	for _, c := range []struct{ entity, cfg string }{{"poller", "request_percentage=10"}, {"hammer", "request_percentage=0.01"}} {
		MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--alter",
			"--add-config", c.cfg, "--entity-type", "clients", "--entity-name", c.entity)
	}
	createTopic(t, b, "quiet", 1, nil)
	hammer := &throttleCounter{}
	hc := b.Client(kgo.ClientID("hammer"), kgo.WithHooks(hammer))
	defer hc.Close()
	waitFor(t, 30*time.Second, "the hammer throttled", func() error {
		// Until the first throttle: franz-go waits out every later one.
		for i := 0; i < 200 && hammer.n.Load() == 0; i++ {
			req := kmsg.NewPtrMetadataRequest()
			if _, err := req.RequestWith(ctxT(t, 30*time.Second), hc); err != nil {
				return err
			}
		}
		if hammer.n.Load() == 0 {
			return errors.New("not throttled yet")
		}
		return nil
	})
	poller := &throttleCounter{}
	pc := b.Client(kgo.ClientID("poller"), kgo.WithHooks(poller), kgo.ConsumeTopics("quiet"), kgo.FetchMaxWait(500*time.Millisecond))
	defer pc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		pc.PollFetches(ctx)
	}
	if poller.n.Load() != 0 {
		t.Errorf("the long-polling consumer was throttled %d times (max %d ms): parked time counted as request time", poller.n.Load(), poller.max.Load())
	}
}
