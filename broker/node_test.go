package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/kgo-broker/kgo-broker/config"
)

// freePort reserves a loopback port for a listener.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

const testClusterID = "kgo-test-cluster-id-0"

// formatDir writes meta.properties into dir on first use, as `kgo-broker
// format` does, and returns its directory id.
func formatDir(t *testing.T, dir string) [16]byte {
	t.Helper()
	if m, err := config.ReadMetaProperties(dir); err == nil {
		return m.DirectoryID
	}
	m := config.MetaProperties{Version: 1, ClusterID: testClusterID, NodeID: 1, DirectoryID: config.NewDirectoryID()}
	if err := config.WriteMetaProperties(dir, m); err != nil {
		t.Fatal(err)
	}
	return m.DirectoryID
}

type testNode struct {
	*Node
	addr string
	dir  string
}

// startNode starts a single combined node in dir (a new temp dir when "").
func startNode(t *testing.T, dir string, overrides map[string]string) *testNode {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	pp, cp := freePort(t), freePort(t)
	props := map[string]string{
		"listeners":                    "PLAINTEXT://127.0.0.1:" + strconv.Itoa(pp) + ",CONTROLLER://127.0.0.1:" + strconv.Itoa(cp),
		"advertised.listeners":         "PLAINTEXT://127.0.0.1:" + strconv.Itoa(pp),
		"controller.quorum.voters":     "1@127.0.0.1:" + strconv.Itoa(cp),
		"log.dirs":                     dir,
		"broker.heartbeat.interval.ms": "100",
	}
	for k, v := range overrides {
		props[k] = v
	}
	cfg, err := config.SingleNode(props)
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewNode(NodeConfig{Config: cfg, ClusterID: testClusterID, DirectoryIDs: map[string][16]byte{dir: formatDir(t, dir)}, Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	tn := &testNode{Node: n, addr: "127.0.0.1:" + strconv.Itoa(pp), dir: dir}
	t.Cleanup(func() { tn.stop(t) })
	return tn
}

func (tn *testNode) stop(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := tn.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// awaitLeader waits until this node leads every listed partition of topic:
// CreateTopics answers once the topic is in the metadata log, before the
// node's replica manager has applied it (Kafka's own tests wait likewise,
// TestUtils.waitUntilLeaderIsKnown).
func (tn *testNode) awaitLeader(t *testing.T, topic string, partitions ...int32) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range partitions {
		for {
			if part, ok := tn.replicas.Partition(topic, p); ok && part.Snapshot().IsLeader {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s-%d: node 1 is not its leader after 30s", topic, p)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (tn *testNode) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(tn.addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestNodeCreateProduceConsume(t *testing.T) {
	n := startNode(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	adm := kadm.NewClient(n.client(t))
	resp, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"retention.ms": kadm.StringPtr("100000")}, "orders")
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v / %v", err, resp.Err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "orders"); err == nil {
		// kadm reports the per-topic error in the response
	}

	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		p := n.client(t, kgo.ProducerBatchCompression(codec), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for i := 0; i < 10; i++ {
			r := &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte("v" + fmt.Sprint(i)), Partition: 0,
				Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}

	c := n.client(t, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"orders": {0: kgo.NewOffset().AtStart()}}))
	got := 0
	for got < 50 {
		fs := c.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatalf("fetch: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(got) {
				t.Fatalf("offset %d, want %d", r.Offset, got)
			}
			if string(r.Value) != "v"+fmt.Sprint(got%10) || len(r.Headers) != 1 {
				t.Fatalf("record %d: %q %v", got, r.Value, r.Headers)
			}
			got++
		})
	}

	// Metadata and DescribeQuorum through the broker.
	md, err := adm.Metadata(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Topics["orders"].Partitions) != 3 {
		t.Fatalf("partitions: %+v", md.Topics["orders"])
	}
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = "__cluster_metadata"
	dt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	dq.Topics = append(dq.Topics, dt)
	dqr, err := dq.RequestWith(ctx, n.client(t))
	if err != nil {
		t.Fatal(err)
	}
	if dqr.ErrorCode != 0 || len(dqr.Topics) != 1 || dqr.Topics[0].Partitions[0].LeaderID != 1 {
		t.Fatalf("describe quorum: %+v", dqr)
	}
}

func TestNodeRestartKeepsTopicsAndRecords(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(n.client(t))
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "keep"); err != nil {
		t.Fatal(err)
	}
	p := n.client(t, kgo.DefaultProduceTopic("keep"))
	for i := 0; i < 5; i++ {
		if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	n.stop(t)

	n2 := startNode(t, dir, nil)
	adm2 := kadm.NewClient(n2.client(t))
	offs, err := adm2.ListEndOffsets(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("keep", 0); o.Offset != 5 {
		t.Fatalf("end offset after restart = %+v, want 5", o)
	}
}
