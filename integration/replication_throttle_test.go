//go:build integration

package integration

// Replication throttles (KIP-73; replication/fetch.go, replication/fetcher.go,
// broker/replication_quotas.go), set with Kafka's kafka-configs.sh: a
// follower that fell 2 MB behind catches up no faster than
// leader.replication.throttled.rate or follower.replication.throttled.rate
// allow for its throttled replica, and still catches up.

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestReplicationThrottle: node 1 (combined) leads a partition on [1, 2];
// node 2 (a broker) is stopped, 2 MB are produced, node 2 is started again
// and the time until it is back in the ISR is measured: unthrottled; with
// leader.replication.throttled.rate=100000 on broker 1 and the topic's
// leader.replication.throttled.replicas=0:1; with the cluster default
// follower.replication.throttled.rate=200000 and
// follower.replication.throttled.replicas=0:2. The follower fetches at most
// replica.fetch.max.bytes (64 KiB here) per partition, and the rate is
// Kafka's SimpleRate: the bytes of replication.quota.window.num (11)
// windows of 1 s over the time since the oldest one started, at least one
// window. The restarted follower's rate starts empty, so 2 MB at 200 KB/s
// take ~10 s; the leader has recorded every follower fetch for the last
// 11 s, so it lets ~1.1 MB (11 s at 100 KB/s) go at once and the rest once
// that has left the window, ~11 s, as Kafka's leader does. Only a lower
// bound (5 s from node 2's start) is asserted: the throttle caps the rate,
// a loaded machine only slows the catch-up down.
func TestReplicationThrottle(t *testing.T) {
	requireKafkaTools(t)
	metricsAddr := map[int32]string{}
	for _, id := range []int32{1, 2} {
		metricsAddr[id] = "127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0])
	}
	c := StartCluster(t, ClusterOptions{Combined: 1, Brokers: 1,
		Overrides: map[string]string{
			"replica.fetch.max.bytes":  "65536",
			"replica.fetch.backoff.ms": "200",
			"replica.lag.time.max.ms":  "5000",
		},
		NodeEnv: func(id int32) []string { return []string{"KGO_METRICS_ADDR=" + metricsAddr[id]} },
	})
	n1, n2 := c.Node(1), c.Node(2)
	// Apache Kafka behind the same command line has no KGO_METRICS_ADDR.
	reference := strings.Contains(brokerBin, "kafka-reference-broker")
	byteRate := func(id int32, metric string) float64 {
		if reference {
			return 1 // not checked
		}
		return metricValue(t, scrape(t, "http://"+metricsAddr[id]+"/metrics"), metric)
	}
	configs := func(args ...string) ToolResult {
		t.Helper()
		return MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh",
			append([]string{"--bootstrap-server", n1.Addr}, args...)...)
	}
	cl := c.Client(nil, kgo.ProducerBatchMaxBytes(16384), kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite())

	// logSize is the size of topic-0 on node 2 (DescribeLogDirs), -1 when
	// node 2 does not answer.
	cl2 := c.Client([]string{n2.Addr})
	logSize := func(topic string) int64 {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		raw, err := cl2.SeedBrokers()[0].Request(ctxT(t, 5*time.Second), req)
		if err != nil {
			return -1
		}
		for _, d := range raw.(*kmsg.DescribeLogDirsResponse).Dirs {
			for _, dt := range d.Topics {
				for _, p := range dt.Partitions {
					return p.Size
				}
			}
		}
		return -1
	}

	// lagBehind creates topic on [1, 2] with configs, lets node 2 fall 2 MB
	// behind and returns how long node 2 took to be back in the ISR from
	// its start (asserted: a quota's window starts no earlier than the
	// process) and from its first fetched bytes (reported: Kafka's JVM
	// takes seconds to start).
	type catchUp struct{ fromStart, fromFirstBytes time.Duration }
	lagBehind := func(topic string, topicConfigs ...string) catchUp {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
		rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2}}}
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 30000
		resp, err := req.RequestWith(ctxT(t, 60*time.Second), cl)
		if err != nil || resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s: %v %+v", topic, err, resp)
		}
		for _, tc := range topicConfigs {
			configs("--alter", "--entity-type", "topics", "--entity-name", topic, "--add-config", tc)
		}
		isr := func(want []int32) func() error {
			return func() error {
				l, isr, err := leaderAndIsr(n1.Addr, topic)
				if err != nil || l != 1 || !slices.Equal(isr, want) {
					return fmt.Errorf("leader %d ISR %v (%v)", l, isr, err)
				}
				return nil
			}
		}
		waitFor(t, 60*time.Second, topic+" led by 1 with ISR 1,2", isr([]int32{1, 2}))
		n2.Stop(30 * time.Second)
		waitFor(t, 60*time.Second, topic+" ISR 1", isr([]int32{1}))
		var recs []*kgo.Record
		for i := range 2000 {
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(strconv.Itoa(i)), Value: randomBytes(1000)})
		}
		if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
		started := time.Now()
		n2.Start()
		var first time.Time
		for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if first.IsZero() && logSize(topic) > 0 {
				first = time.Now()
			}
			if isr([]int32{1, 2})() == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: node 2 not back in the ISR 3 minutes after its start", topic)
			}
		}
		if first.IsZero() {
			first = started // caught up before the first look
		}
		took := catchUp{time.Since(started), time.Since(first)}
		c.WaitNodeReady(n2, readyTimeout())
		return took
	}

	base := lagBehind("it-throttle-none")
	t.Logf("MEASURE unthrottled: 2 MB caught up %v after the first bytes (%v after the start)", base.fromFirstBytes.Round(time.Millisecond), base.fromStart.Round(time.Millisecond))

	configs("--alter", "--entity-type", "brokers", "--entity-name", "1", "--add-config", "leader.replication.throttled.rate=100000")
	if r := configs("--describe", "--entity-type", "brokers", "--entity-name", "1"); !strings.Contains(r.Stdout, "leader.replication.throttled.rate=100000") {
		t.Fatalf("kafka-configs --describe broker 1:\n%s", r)
	}
	leader := lagBehind("it-throttle-leader", "leader.replication.throttled.replicas=0:1")
	t.Logf("MEASURE leader.replication.throttled.rate=100000: 2 MB caught up %v after the first bytes (%v after the start)", leader.fromFirstBytes.Round(time.Millisecond), leader.fromStart.Round(time.Millisecond))
	if leader.fromStart < 5*time.Second {
		t.Errorf("leader-throttled catch-up of 2 MB at 100 KB/s took %v, under 5 s (unthrottled: %v)", leader.fromStart, base.fromStart)
	}
	if v := byteRate(1, "kafka_server_leaderreplication_byte_rate"); v <= 0 {
		t.Errorf("kafka_server_leaderreplication_byte_rate %v after a throttled catch-up", v)
	}
	configs("--alter", "--entity-type", "brokers", "--entity-name", "1", "--delete-config", "leader.replication.throttled.rate")

	configs("--alter", "--entity-type", "brokers", "--entity-default", "--add-config", "follower.replication.throttled.rate=200000")
	if r := configs("--describe", "--entity-type", "brokers", "--entity-default"); !strings.Contains(r.Stdout, "follower.replication.throttled.rate=200000") {
		t.Fatalf("kafka-configs --describe --entity-default:\n%s", r)
	}
	follower := lagBehind("it-throttle-follower", "follower.replication.throttled.replicas=0:2")
	t.Logf("MEASURE follower.replication.throttled.rate=200000 (cluster default): 2 MB caught up %v after the first bytes (%v after the start)", follower.fromFirstBytes.Round(time.Millisecond), follower.fromStart.Round(time.Millisecond))
	if follower.fromStart < 5*time.Second {
		t.Errorf("follower-throttled catch-up of 2 MB at 200 KB/s took %v, under 5 s (unthrottled: %v)", follower.fromStart, base.fromStart)
	}
	if v := byteRate(2, "kafka_server_followerreplication_byte_rate"); v <= 0 {
		t.Errorf("kafka_server_followerreplication_byte_rate %v after a throttled catch-up", v)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
