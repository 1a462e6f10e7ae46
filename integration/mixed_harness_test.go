//go:build integration

package integration

// Mixed clusters: Apache Kafka 4.4 nodes (kafka.Kafka from the cached jars,
// through testdata/kafka-reference-broker) and kgo-broker nodes in one
// cluster, each node a real process with its own role: controller or broker.
// Kafka's controllers are formatted at Kafka 4.4's defaults (eligible
// leader replicas on, share.version 2, streams.version 1), which kgo-broker
// nodes support.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type nodeKind string

const (
	kindKafka nodeKind = "kafka"
	kindKgo   nodeKind = "kgo"
)

// mixedSpec describes one node: its id, kind and role.
type mixedSpec struct {
	ID         int32
	Kind       nodeKind
	Controller bool // process.roles=controller, else broker
}

type mixedNode struct {
	mixedSpec
	t        testing.TB
	c        *mixedCluster
	dir      string
	props    string
	logPath  string
	port     int // PLAINTEXT (brokers) or CONTROLLER (controllers)
	Addr     string
	runs     int
	env      []string // extra environment of the node's process
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	startErr error
}

type mixedCluster struct {
	t         testing.TB
	clusterID string
	voters    string
	nodes     []*mixedNode
}

func (k nodeKind) String() string { return string(k) }

// mixedCommon are the settings every node gets: short broker sessions so
// fencing is quick, and internal topics that fit the cluster.
func mixedCommon(brokers int) string {
	rf := min(brokers, 3)
	return fmt.Sprintf(`controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=1000
offsets.topic.replication.factor=%d
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=%d
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
replica.lag.time.max.ms=5000
replica.fetch.backoff.ms=200
num.partitions=1
log.cleaner.dedupe.buffer.size=16777216
`, rf, rf)
}

// startMixed formats and starts every node and waits until every broker is
// registered and unfenced (in a broker's Metadata).
func startMixed(t *testing.T, specs ...mixedSpec) *mixedCluster {
	t.Helper()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("mixed clusters need kgo-broker as KGO_BROKER_BIN")
	}
	c := &mixedCluster{t: t, clusterID: newClusterID()}
	ports := freePorts(t, len(specs))
	brokers := 0
	var voters []string
	for i, s := range specs {
		root, err := os.MkdirTemp("", fmt.Sprintf("kgo-it-mixed-%s-%d-", s.Kind, s.ID))
		if err != nil {
			t.Fatal(err)
		}
		n := &mixedNode{mixedSpec: s, t: t, c: c, dir: root, port: ports[i]}
		n.props = filepath.Join(root, "server.properties")
		n.logPath = filepath.Join(root, "node.log")
		n.Addr = fmt.Sprintf("127.0.0.1:%d", n.port)
		c.nodes = append(c.nodes, n)
		if s.Controller {
			voters = append(voters, fmt.Sprintf("%d@%s", s.ID, n.Addr))
		} else {
			brokers++
		}
	}
	c.voters = strings.Join(voters, ",")
	for _, n := range c.nodes {
		role, listeners := "broker", "PLAINTEXT://"+n.Addr
		extra := "advertised.listeners=PLAINTEXT://" + n.Addr + "\ninter.broker.listener.name=PLAINTEXT\n"
		if n.Controller {
			role, listeners, extra = "controller", "CONTROLLER://"+n.Addr, ""
		}
		props := fmt.Sprintf("process.roles=%s\nnode.id=%d\ncontroller.quorum.voters=%s\nlisteners=%s\n%slog.dirs=%s\n%s",
			role, n.ID, c.voters, listeners, extra, filepath.Join(n.dir, "data"), mixedCommon(brokers))
		if err := os.WriteFile(n.props, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		if n.Kind == kindKafka {
			args := []string{"format", "-t", c.clusterID, "-c", n.props}
			if r := RunCommand(t, RunOpts{Hermetic: true}, kafkaReference(), args...); r.ExitCode != 0 {
				t.Fatalf("kafka-storage.sh format node %d:\n%s", n.ID, r)
			}
		}
		t.Cleanup(n.cleanup)
	}
	for _, n := range c.nodes {
		n.Start()
	}
	c.waitBrokers(3 * readyTimeout())
	return c
}

func kafkaReference() string {
	return filepath.Join(repoRoot, "integration", "testdata", "kafka-reference-broker")
}

// Start starts the node's process (again) on its directory and port.
func (n *mixedNode) Start() {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	n.runs++
	logf, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	fmt.Fprintf(logf, "\n===== harness: start #%d of %s node %d at %s\n", n.runs, n.Kind, n.ID, time.Now().Format(time.RFC3339Nano))
	bin := brokerBin
	env := append(hermeticEnv(), "CLUSTER_ID="+n.c.clusterID)
	if n.Kind == kindKafka {
		bin = kafkaReference()
		env = append(env, "KAFKA_HEAP_OPTS=-Xmx384M -Xms128M")
	}
	env = append(env, n.env...)
	cmd := exec.Command(bin, n.props)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = n.dir, env, logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		n.t.Fatalf("start node %d: %v", n.ID, err)
	}
	done := make(chan struct{})
	n.cmd, n.done = cmd, done
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "===== harness: pid %d exited: %v\n", cmd.Process.Pid, exitDesc(err))
		logf.Close()
		close(done)
	}()
}

// Kill is kill -9 of the node's process group.
func (n *mixedNode) Kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	<-done
}

func (n *mixedNode) cleanup() {
	n.Kill()
	if n.t.Failed() {
		b, _ := os.ReadFile(n.logPath)
		s := string(b)
		if len(s) > 30000 {
			s = "...\n" + s[len(s)-30000:]
		}
		n.t.Logf("===== %s node %d log (%s):\n%s", n.Kind, n.ID, n.dir, s)
		return
	}
	os.RemoveAll(n.dir)
}

func (c *mixedCluster) node(id int32) *mixedNode {
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	c.t.Fatalf("no node %d", id)
	return nil
}

func (c *mixedCluster) brokers() []*mixedNode {
	return slices.DeleteFunc(slices.Clone(c.nodes), func(n *mixedNode) bool { return n.Controller })
}

func (c *mixedCluster) brokerIDs() []int32 {
	var ids []int32
	for _, n := range c.brokers() {
		ids = append(ids, n.ID)
	}
	return ids
}

// client is a franz-go client seeded with the brokers given (all when none).
func (c *mixedCluster) client(t testing.TB, seeds []*mixedNode, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	if len(seeds) == 0 {
		seeds = c.brokers()
	}
	var addrs []string
	for _, n := range seeds {
		addrs = append(addrs, n.Addr)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.RetryTimeout(60 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// liveBrokers is the broker list of n's Metadata (unfenced brokers).
func liveBrokers(n *mixedNode) ([]int32, error) {
	md, err := metadataFrom(n.Addr)
	if err != nil {
		return nil, err
	}
	var ids []int32
	for _, b := range md.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// waitBrokers waits until every running broker's Metadata lists exactly the
// running brokers.
func (c *mixedCluster) waitBrokers(timeout time.Duration, down ...int32) {
	c.t.Helper()
	want := slices.DeleteFunc(c.brokerIDs(), func(id int32) bool { return slices.Contains(down, id) })
	slices.Sort(want)
	waitFor(c.t, timeout, fmt.Sprintf("brokers %v unfenced", want), func() error {
		for _, n := range c.brokers() {
			if slices.Contains(down, n.ID) {
				continue
			}
			got, err := liveBrokers(n)
			if err != nil {
				return fmt.Errorf("node %d: %w", n.ID, err)
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("node %d lists %v", n.ID, got)
			}
		}
		return nil
	})
}

// quorumLeader asks DescribeQuorum through broker b (which forwards it to
// the active controller) for the raft leader.
func quorumLeader(t testing.TB, b *mixedNode) (int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return -1, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return -1, err
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("describe quorum: error %d %+v", resp.ErrorCode, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID < 0 {
		return -1, fmt.Errorf("describe quorum: partition error %d leader %d", p.ErrorCode, p.LeaderID)
	}
	return p.LeaderID, nil
}

// partitionState is a partition's leader and ISR from broker b's Metadata.
func mixedPartitionState(b *mixedNode, topic string, partition int32) (leader int32, isr []int32, err error) {
	md, err := metadataFrom(b.Addr, topic)
	if err != nil {
		return -1, nil, err
	}
	for _, tp := range md.Topics {
		for _, p := range tp.Partitions {
			if p.Partition == partition {
				isr = slices.Clone(p.ISR)
				slices.Sort(isr)
				return p.Leader, isr, nil
			}
		}
	}
	return -1, nil, fmt.Errorf("%s-%d not in metadata", topic, partition)
}

func adminOf(t testing.TB, c *mixedCluster, seeds ...*mixedNode) *kadm.Client {
	return kadm.NewClient(c.client(t, seeds))
}
