//go:build integration

package integration

// The multi-process harness: a cluster of kgo-broker processes on 127.0.0.x
// loopback addresses, each with its own directory, ports, roles and node id,
// sharing one cluster id (CLUSTER_ID, as the first-start auto-format takes it)
// and one static controller.quorum.voters. Each node is a *Broker of the
// single-node harness (Start, Kill, Stop, Log, cleanup) with its own
// server.properties and readiness check. A node may run Apache Kafka 4.4
// instead (ClusterOptions.Kind, ClusterNode.StartAs): kafka.Kafka from the
// cached jars through testdata/kafka-reference-broker, on the same
// server.properties, directory and ports, so that a node can be replaced by
// the other implementation on its own data (rolling_test.go).

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// ClusterOptions describe a cluster. Node ids are assigned in order:
// combined nodes, then controller-only nodes, then broker-only nodes, from 1.
// Every node with the controller role is a voter.
type ClusterOptions struct {
	Combined    int // process.roles=broker,controller
	Controllers int // process.roles=controller
	Brokers     int // process.roles=broker
	// Overrides apply to every node (after the generated properties).
	Overrides map[string]string
	// NodeOverrides, when set, adds node id's own overrides after
	// Overrides (broker.rack, say).
	NodeOverrides func(id int32) map[string]string
	// Env is added to every node's environment (KGO_LOG_LEVEL=debug, say).
	Env []string
	// NodeEnv, when set, adds node id's own variables after Env (a
	// per-node control file, say).
	NodeEnv func(id int32) []string
	// NodeDirOverrides, when set, adds node id's own properties after
	// NodeOverrides; dir is the node's directory (its DataDir is dir/data),
	// e.g. a second log dir under it.
	NodeDirOverrides func(id int32, dir string) map[string]string
	// NoWait returns before the nodes are ready.
	NoWait bool
	// FormatArgs, when set, formats every node with `format -t <cluster id>
	// -c <server.properties> FormatArgs...` before its first start (instead
	// of the first-start auto-format), e.g. --release-version 4.3.
	FormatArgs []string
	// Placement, when set, puts node id on its own host (a network
	// namespace's address, say) with the fixed ports 9092 (PLAINTEXT) and
	// 9093 (CONTROLLER), started through wrap (["ip", "netns", "exec", ns]).
	// Unset: 127.0.0.<id> on free ports, no wrapper.
	Placement func(id int32) (host string, wrap []string)
	// DataDir, when set, returns the log dir to use for node id instead of
	// <node dir>/data ("" keeps the default), e.g. a small tmpfs.
	DataDir func(id int32) string
	// InterBrokerListener, when set, adds a third listener of that name on
	// every broker (its protocol comes from listener.security.protocol.map
	// in Overrides) and makes it inter.broker.listener.name; the harness's
	// readiness checks stay on PLAINTEXT.
	InterBrokerListener string
	// ControllerDial, when set, is how the harness reaches CONTROLLER
	// listeners (their TLS and SASL when they are secured).
	ControllerDial *protocol.ClientOptions
	// Kind, when set, says which implementation node id runs first
	// (kindKgo when unset). Apache Kafka nodes are formatted by Kafka's
	// kafka-storage.sh format (with KafkaFormatArgs) before their first
	// start, kgo-broker nodes as usual (FormatArgs or the auto-format).
	Kind func(id int32) nodeKind
	// KafkaFormatArgs are added to the Kafka nodes' format command line
	// (--feature share.version=1, say; Kafka's defaults when empty).
	KafkaFormatArgs []string
	// KafkaHeap is KAFKA_HEAP_OPTS for Apache Kafka nodes (-Xmx256M -Xms64M
	// when empty).
	KafkaHeap string
}

// clusterTimeouts are short quorum and session timeouts so failover is quick
// on a loaded machine; tests may override them.
var clusterTimeouts = map[string]string{
	"controller.quorum.election.timeout.ms": "1000",
	"controller.quorum.fetch.timeout.ms":    "1000",
	"controller.quorum.request.timeout.ms":  "1000",
	"broker.session.timeout.ms":             "3000",
	"broker.heartbeat.interval.ms":          "500",
}

// ClusterNode is one process of a cluster.
type ClusterNode struct {
	*Broker
	ID           int32
	Roles        string // "broker", "controller" or "broker,controller"
	Host         string // 127.0.0.x
	IsBroker     bool
	IsController bool
	CtrlAddr     string // host:CtrlPort ("" for broker-only)
	// InterAddr is host:port of ClusterOptions.InterBrokerListener ("" without).
	InterAddr string
	// Kind is the implementation the node runs (at its next Start).
	Kind      nodeKind
	kafkaHeap string
	clusterID string
	env       []string
	interName string
	ctrlDial  *protocol.ClientOptions
}

// Cluster is a set of kgo-broker processes forming one KRaft cluster.
type Cluster struct {
	t         testing.TB
	ClusterID string
	Nodes     []*ClusterNode // by id - 1
	Voters    string         // controller.quorum.voters
}

// StartCluster starts every node and waits until each broker is unfenced
// and serves Metadata listing every broker, and each controller answers
// ApiVersions on its CONTROLLER listener.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	c := &Cluster{t: t, ClusterID: newClusterID()}
	total := o.Combined + o.Controllers + o.Brokers
	for i := 0; i < total; i++ {
		id := int32(i + 1)
		n := &ClusterNode{ID: id, Host: fmt.Sprintf("127.0.0.%d", id), clusterID: c.ClusterID, env: o.Env,
			interName: o.InterBrokerListener, ctrlDial: o.ControllerDial, Kind: kindKgo, kafkaHeap: o.KafkaHeap}
		if o.Kind != nil {
			n.Kind = o.Kind(id)
		}
		if n.kafkaHeap == "" {
			n.kafkaHeap = "-Xmx256M -Xms64M"
		}
		if o.NodeEnv != nil {
			n.env = append(append([]string(nil), o.Env...), o.NodeEnv(id)...)
		}
		switch {
		case i < o.Combined:
			n.Roles, n.IsBroker, n.IsController = "broker,controller", true, true
		case i < o.Combined+o.Controllers:
			n.Roles, n.IsController = "controller", true
		default:
			n.Roles, n.IsBroker = "broker", true
		}
		c.Nodes = append(c.Nodes, n)
	}
	var voters []string
	for _, n := range c.Nodes {
		var ports []int
		var wrap []string
		if o.Placement != nil {
			n.Host, wrap = o.Placement(n.ID)
			ports = []int{9092, 9093}
		} else {
			ports = freePortsOn(t, n.Host, 3)
		}
		if o.InterBrokerListener != "" && n.IsBroker && len(ports) > 2 {
			n.InterAddr = net.JoinHostPort(n.Host, strconv.Itoa(ports[2]))
		}
		n.Broker = newClusterBroker(t, n, o, ports)
		n.Broker.opts.Wrap = wrap
		if o.DataDir != nil {
			if d := o.DataDir(n.ID); d != "" {
				n.Broker.DataDir = d
			}
		}
		if n.IsController {
			n.CtrlAddr = net.JoinHostPort(n.Host, strconv.Itoa(n.CtrlPort))
			voters = append(voters, fmt.Sprintf("%d@%s", n.ID, n.CtrlAddr))
		}
	}
	c.Voters = strings.Join(voters, ",")
	for _, n := range c.Nodes {
		if err := os.WriteFile(n.Props, []byte(c.serverProperties(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range c.Nodes {
		bin, extra := brokerBin, o.FormatArgs
		if n.Kind == kindKafka {
			requireKafkaTools(t)
			bin, extra = kafkaReference(), o.KafkaFormatArgs
		} else if len(extra) == 0 {
			continue // the first-start auto-format
		}
		args := append([]string{"format", "-t", c.ClusterID, "-c", n.Props}, extra...)
		if r := RunCommand(t, RunOpts{Hermetic: true}, bin, args...); r.ExitCode != 0 {
			t.Fatalf("formatting %s node %d:\n%s", n.Kind, n.ID, r)
		}
	}
	for _, n := range c.Nodes {
		n.Start()
	}
	if !o.NoWait {
		c.WaitReady()
	}
	return c
}

// newClusterID is a random base64url uuid, like kafka-storage.sh random-uuid.
// newClusterID is a random Kafka Uuid as kafka-storage.sh random-uuid prints it.
// It never starts with '-' (as Kafka's Uuid.randomUuid): such an id would be taken
// for an option by the tools' argument parsers ("--cluster-id: expected one argument").
func newClusterID() string { return config.RandomUUID().String() }

func newClusterBroker(t testing.TB, n *ClusterNode, o ClusterOptions, ports []int) *Broker {
	t.Helper()
	dir, err := os.MkdirTemp("", fmt.Sprintf("kgo-it-%s-n%d-", sanitize(t.Name()), n.ID))
	if err != nil {
		t.Fatal(err)
	}
	ov := map[string]string{}
	for k, v := range clusterTimeouts {
		ov[k] = v
	}
	if n.Kind == kindKafka {
		// Kafka's cleaner allocates its whole dedupe buffer (128 MiB by default)
		// at startup: in the harness's small heap that is an OutOfMemoryError
		// ("Error starting LogManager") whenever the heap is fragmented.
		ov["log.cleaner.dedupe.buffer.size"] = "16777216"
	}
	for k, v := range o.Overrides {
		ov[k] = v
	}
	if o.NodeOverrides != nil {
		for k, v := range o.NodeOverrides(n.ID) {
			ov[k] = v
		}
	}
	if o.NodeDirOverrides != nil {
		for k, v := range o.NodeDirOverrides(n.ID, dir) {
			ov[k] = v
		}
	}
	b := &Broker{
		t:       t,
		opts:    BrokerOptions{Overrides: ov},
		Dir:     dir,
		DataDir: filepath.Join(dir, "data"),
		Props:   filepath.Join(dir, "server.properties"),
		LogPath: filepath.Join(dir, "broker.log"),
		Port:    ports[0],
	}
	if n.IsController {
		b.CtrlPort = ports[1]
	}
	b.Addr = net.JoinHostPort(n.Host, strconv.Itoa(b.Port))
	t.Cleanup(b.cleanup)
	return b
}

func (c *Cluster) serverProperties(n *ClusterNode) string {
	var ls []string
	if n.IsBroker {
		ls = append(ls, fmt.Sprintf("PLAINTEXT://%s:%d", n.Host, n.Port))
	}
	if n.IsController {
		ls = append(ls, fmt.Sprintf("CONTROLLER://%s:%d", n.Host, n.CtrlPort))
	}
	if n.InterAddr != "" {
		ls = append(ls, n.interName+"://"+n.InterAddr)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# generated by the kgo-broker cluster harness\n")
	fmt.Fprintf(&b, "process.roles=%s\nnode.id=%d\ncontroller.quorum.voters=%s\n", n.Roles, n.ID, c.Voters)
	fmt.Fprintf(&b, "listeners=%s\n", strings.Join(ls, ","))
	switch {
	case n.IsBroker && n.InterAddr != "":
		fmt.Fprintf(&b, "advertised.listeners=PLAINTEXT://%s:%d,%s://%s\ninter.broker.listener.name=%s\n", n.Host, n.Port, n.interName, n.InterAddr, n.interName)
	case n.IsBroker:
		fmt.Fprintf(&b, "advertised.listeners=PLAINTEXT://%s:%d\ninter.broker.listener.name=PLAINTEXT\n", n.Host, n.Port)
	}
	// The protocol map goes into the file when overridden, so that
	// FormatArgs' format (which reads only the file) parses the listeners.
	pm := "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
	if v, ok := n.Broker.opts.Overrides["listener.security.protocol.map"]; ok {
		pm = v
	}
	fmt.Fprintf(&b, "listener.security.protocol.map=%s\n", pm)
	fmt.Fprintf(&b, `controller.listener.names=CONTROLLER
log.dirs=%s
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
`, n.DataDir)
	return b.String()
}

// Start starts the node's process (again) as n.Kind, with the cluster id in
// CLUSTER_ID for the first-start auto-format.
func (n *ClusterNode) Start() {
	n.Broker.t.Helper()
	n.Broker.opts.Env = append([]string{"CLUSTER_ID=" + n.clusterID}, n.env...)
	n.Broker.opts.Bin = ""
	if n.Kind == kindKafka {
		n.Broker.opts.Bin = kafkaReference()
		n.Broker.opts.Env = append(n.Broker.opts.Env, "KAFKA_HEAP_OPTS="+n.kafkaHeap,
			"KAFKA_JVM_PERFORMANCE_OPTS="+kafkaTestJVMOpts)
	}
	n.Broker.Start()
}

// kafkaTestJVMOpts start a Kafka JVM with less CPU than kafka-run-class.sh's
// G1 and C2 defaults (this machine's cores are shared): tests need a quick
// start, not peak throughput.
const kafkaTestJVMOpts = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true"

// StartAs starts the (stopped) node as kind k on the same directory, node
// id, listeners and server.properties: an operator replacing one
// implementation with the other.
func (n *ClusterNode) StartAs(k nodeKind) {
	n.Broker.t.Helper()
	n.Kind = k
	n.Start()
}

// Brokers returns the nodes with the broker role.
func (c *Cluster) Brokers() []*ClusterNode {
	var out []*ClusterNode
	for _, n := range c.Nodes {
		if n.IsBroker {
			out = append(out, n)
		}
	}
	return out
}

// Controllers returns the nodes with the controller role (the voters).
func (c *Cluster) Controllers() []*ClusterNode {
	var out []*ClusterNode
	for _, n := range c.Nodes {
		if n.IsController {
			out = append(out, n)
		}
	}
	return out
}

// Node returns the node with the given id.
func (c *Cluster) Node(id int32) *ClusterNode { return c.Nodes[id-1] }

// BrokerAddrs lists every broker's client address.
func (c *Cluster) BrokerAddrs() []string {
	var out []string
	for _, n := range c.Brokers() {
		out = append(out, n.Addr)
	}
	return out
}

// WaitReady waits for every node (see StartCluster).
func (c *Cluster) WaitReady() {
	c.t.Helper()
	for _, n := range c.Nodes {
		c.WaitNodeReady(n, readyTimeout())
	}
}

// WaitNodeReady waits until n serves: a broker lists every live broker in
// Metadata, a controller-only node answers ApiVersions on CONTROLLER.
func (c *Cluster) WaitNodeReady(n *ClusterNode, timeout time.Duration) {
	c.t.Helper()
	start := time.Now()
	err := pollUntil(timeout, n.Exited(), func() error {
		if n.IsBroker {
			return c.brokerReady(n)
		}
		return controllerReady(n)
	})
	if err != nil {
		c.t.Fatalf("node %d (%s) not ready: %v", n.ID, n.Roles, err)
	}
	n.ReadyAfter = time.Since(start)
}

func (c *Cluster) brokerReady(n *ClusterNode) error {
	resp, err := metadataFrom(n.Addr)
	if err != nil {
		return err
	}
	if !containsBroker(resp, n.ID, n.Host, n.Port) {
		return fmt.Errorf("metadata from %s does not list node %d at %s: %+v", n.Addr, n.ID, n.Addr, resp.Brokers)
	}
	return nil
}

func containsBroker(resp *kmsg.MetadataResponse, id int32, host string, port int) bool {
	for _, b := range resp.Brokers {
		if b.NodeID == id && b.Host == host && b.Port == int32(port) {
			return true
		}
	}
	return false
}

func controllerReady(n *ClusterNode) error {
	if n.ctrlDial != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		opts := *n.ctrlDial
		opts.ClientID = "kgo-it-cluster"
		cl, err := protocol.DialOptions(ctx, n.CtrlAddr, opts)
		if err != nil {
			return err
		}
		cl.Close()
		return nil
	}
	cl, err := dialController(n.CtrlAddr)
	if err != nil {
		return err
	}
	defer cl.Close()
	return nil
}

// dialController opens a raw Kafka connection to a CONTROLLER listener (the
// client handshakes with ApiVersions).
func dialController(addr string) (*protocol.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return protocol.Dial(ctx, addr, "kgo-it-cluster")
}

// metadataFrom asks one broker (and only it) for Metadata: no topics, the
// given topics, or every topic with "*".
func metadataFrom(addr string, topics ...string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cl, err := protocol.Dial(ctx, addr, "kgo-it-cluster")
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{}
	for _, tp := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(tp)
		req.Topics = append(req.Topics, rt)
	}
	if len(topics) == 1 && topics[0] == "*" {
		req.Topics = nil
	}
	resp, err := cl.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// pollUntil calls fn every 50ms until it returns nil, exited is closed or
// timeout passes.
func pollUntil(timeout time.Duration, exited <-chan struct{}, fn func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if last = fn(); last == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("process exited; last error: %v", last)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v; last error: %v", timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Quorum is what a DescribeQuorum said.
type Quorum struct {
	LeaderID    int32
	LeaderEpoch int32
	HW          int64
	Voters      map[int32]int64 // replica -> log end offset
	Observers   map[int32]int64
}

// DescribeQuorum asks the CONTROLLER listener at addr (a controller answers
// NOT_LEADER_OR_FOLLOWER unless it leads).
func describeQuorumAt(addr string) (Quorum, error) {
	cl, err := dialController(addr)
	if err != nil {
		return Quorum{}, err
	}
	defer cl.Close()
	return describeQuorumWith(cl)
}

func describeQuorumWith(cl *protocol.Client) (Quorum, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rp := kmsg.NewDescribeQuorumRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := cl.Request(ctx, req)
	if err != nil {
		return Quorum{}, err
	}
	resp := kresp.(*kmsg.DescribeQuorumResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return Quorum{}, err
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return Quorum{}, fmt.Errorf("DescribeQuorum: %d topics", len(resp.Topics))
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return Quorum{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch}, err
	}
	q := Quorum{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HW: p.HighWatermark, Voters: map[int32]int64{}, Observers: map[int32]int64{}}
	for _, v := range p.CurrentVoters {
		q.Voters[v.ReplicaID] = v.LogEndOffset
	}
	for _, o := range p.Observers {
		q.Observers[o.ReplicaID] = o.LogEndOffset
	}
	return q, nil
}

// Leader finds the active controller by asking the live controllers
// directly; it returns an error while none leads.
func (c *Cluster) Leader() (*ClusterNode, Quorum, error) {
	var errs []string
	for _, n := range c.Controllers() {
		if isClosed(exitedChan(n)) {
			continue
		}
		q, err := describeQuorumAt(n.CtrlAddr)
		if err == nil && q.LeaderID == n.ID {
			return n, q, nil
		}
		errs = append(errs, fmt.Sprintf("node %d: leader %d epoch %d err %v", n.ID, q.LeaderID, q.LeaderEpoch, err))
	}
	return nil, Quorum{}, fmt.Errorf("no leader: %s", strings.Join(errs, "; "))
}

func exitedChan(n *ClusterNode) chan struct{} {
	_, done := n.current()
	return done
}

// WaitLeader waits for an active controller other than not (0: any) and
// returns it.
func (c *Cluster) WaitLeader(timeout time.Duration, not int32) (*ClusterNode, Quorum) {
	c.t.Helper()
	var (
		ld *ClusterNode
		q  Quorum
	)
	err := pollUntil(timeout, nil, func() error {
		var err error
		ld, q, err = c.Leader()
		if err == nil && ld.ID == not {
			return fmt.Errorf("node %d still leads", not)
		}
		return err
	})
	if err != nil {
		c.t.Fatalf("waiting for a leader: %v", err)
	}
	return ld, q
}

// Client returns a franz-go client bootstrapped on the given brokers (every
// broker when none), closed at the end of the test.
func (c *Cluster) Client(seeds []string, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	if len(seeds) == 0 {
		seeds = c.BrokerAddrs()
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

// freePortsOn returns n distinct free TCP ports on host.
func freePortsOn(t testing.TB, host string, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// median of durations (0 for none).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
