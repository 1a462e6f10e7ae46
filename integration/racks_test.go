//go:build integration

package integration

// Racks: rack-aware replica placement (controller/placer.go, Kafka's
// StripedReplicaPlacer) and fetch from follower (KIP-392,
// replication/preferred.go) with replica.selector.class=RackAwareReplicaSelector.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRackAwareFetchFromFollower: three nodes, 1 and 3 in rack r1, 2 in r2
// (broker.rack). kafka-topics.sh --create places
// every replica pair of an RF=2 topic across both racks; a consumer in r2
// (franz-go kgo.Rack) is told by leader 1 to read from follower 2
// (preferred_read_replica), and node 2 serves its records
// (kafka_server_brokertopicmetrics_bytesout_total).
func TestRackAwareFetchFromFollower(t *testing.T) {
	requireKafkaTools(t)
	racks := map[int32]string{1: "r1", 2: "r2", 3: "r1"}
	metricsAddr := map[int32]string{}
	for id := range racks {
		metricsAddr[id] = "127.0.0.1:" + strconv.Itoa(freePorts(t, 1)[0])
	}
	c := StartCluster(t, ClusterOptions{Combined: 1, Brokers: 2,
		Overrides:     map[string]string{"replica.selector.class": "org.apache.kafka.common.replica.RackAwareReplicaSelector"},
		NodeOverrides: func(id int32) map[string]string { return map[string]string{"broker.rack": racks[id]} },
		NodeEnv:       func(id int32) []string { return []string{"KGO_METRICS_ADDR=" + metricsAddr[id]} },
	})
	n1 := c.Node(1)

	// Placement: each partition has one replica per rack.
	const placed = "it-racks-placement"
	MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-topics.sh", "--bootstrap-server", n1.Addr,
		"--create", "--topic", placed, "--partitions", "6", "--replication-factor", "2")
	r := MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-topics.sh", "--bootstrap-server", n1.Addr,
		"--describe", "--topic", placed)
	rows := regexp.MustCompile(`Partition: (\d+)\s+Leader: \S+\s+Replicas: (\d+),(\d+)`).FindAllStringSubmatch(r.Stdout, -1)
	if len(rows) != 6 {
		t.Fatalf("kafka-topics.sh --describe: %d partitions, want 6:\n%s", len(rows), r.Stdout)
	}
	for _, row := range rows {
		a, _ := strconv.Atoi(row[2])
		b, _ := strconv.Atoi(row[3])
		if racks[int32(a)] == racks[int32(b)] {
			t.Errorf("partition %s: replicas %d,%d both in rack %s:\n%s", row[1], a, b, racks[int32(a)], r.Stdout)
		}
	}

	// Fetch from follower.
	const topic = "it-racks-ff"
	cl := c.Client(nil, kgo.RequiredAcks(kgo.AllISRAcks()))
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1, 2, 3}}}
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 30000
	if resp, err := req.RequestWith(ctxT(t, 60*time.Second), cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	waitFor(t, 60*time.Second, topic+" led by 1 with ISR 1,2,3", func() error {
		l, isr, err := leaderAndIsr(n1.Addr, topic)
		if err != nil || l != 1 || !slices.Equal(isr, []int32{1, 2, 3}) {
			return fmt.Errorf("leader %d ISR %v (%v)", l, isr, err)
		}
		return nil
	})
	const n = 200
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recordsFor(topic, n)...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}

	// The leader's answer to a consumer in r2: read from 2.
	fetch := kmsg.NewPtrFetchRequest()
	fetch.ReplicaID, fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = -1, 0, 1, 1<<20
	fetch.SessionEpoch, fetch.Rack = -1, "r2"
	md, err := metadataFrom(n1.Addr, topic)
	if err != nil || len(md.Topics) != 1 {
		t.Fatalf("metadata of %s: %v", topic, err)
	}
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = topic, md.Topics[0].TopicID // franz-go sends the newest version both know
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	// Once the followers' fetch positions are past the records.
	waitFor(t, 30*time.Second, "preferred read replica 2", func() error {
		raw, err := cl.Broker(1).Request(ctxT(t, 10*time.Second), fetch)
		if err != nil {
			return err
		}
		p := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.PreferredReadReplica != 2 || len(p.RecordBatches) != 0 {
			return fmt.Errorf("error %d preferred %d, %d record bytes", p.ErrorCode, p.PreferredReadReplica, len(p.RecordBatches))
		}
		return nil
	})
	fetch.Rack = "r1"
	raw, err := cl.Broker(1).Request(ctxT(t, 10*time.Second), fetch)
	if err != nil {
		t.Fatal(err)
	}
	if p := raw.(*kmsg.FetchResponse).Topics[0].Partitions[0]; p.PreferredReadReplica != -1 || len(p.RecordBatches) == 0 {
		t.Fatalf("a consumer in the leader's rack: preferred %d, %d record bytes", p.PreferredReadReplica, len(p.RecordBatches))
	}

	// Apache Kafka behind the same command line has no KGO_METRICS_ADDR.
	reference := strings.Contains(brokerBin, "kafka-reference-broker")
	bytesOut := func(id int32) float64 {
		if reference {
			return 0
		}
		return metricValue(t, scrape(t, "http://"+metricsAddr[id]+"/metrics"), "kafka_server_brokertopicmetrics_bytesout_total")
	}
	before := map[int32]float64{1: bytesOut(1), 2: bytesOut(2), 3: bytesOut(3)}
	consumer := c.Client(nil, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.Rack("r2"))
	ctx := ctxT(t, 60*time.Second)
	got := 0
	for got < n {
		fs := consumer.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records", got, n)
		}
		got += len(fs.Records())
	}
	consumer.Close()
	d := map[int32]float64{}
	for id := range before {
		d[id] = bytesOut(id) - before[id]
	}
	if reference {
		return
	}
	t.Logf("MEASURE consumer in r2: record bytes served by node 1 %.0f, node 2 %.0f, node 3 %.0f", d[1], d[2], d[3])
	if d[2] <= 0 || d[1] != 0 || d[3] != 0 {
		t.Errorf("the r2 consumer's records came from nodes 1/2/3: %.0f/%.0f/%.0f bytes, want all from 2", d[1], d[2], d[3])
	}
}
