//go:build integration

package integration

// Multi-node clusters of real kgo-broker processes (cluster_harness_test.go):
// split roles (3 controller-only + 2 broker-only processes) and 3 combined
// nodes on 127.0.0.x. These tests start several processes each; they do not
// run in parallel with each other so that failover timings mean something.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterSplitRoles: 3 process.roles=controller + 2 process.roles=broker
// processes. The quorum forms, the brokers fetch the metadata log as
// observers, register and are unfenced; kafka-metadata-quorum.sh through
// either broker shows the voters with their endpoints and the brokers as
// observers; a controller-only node serves only the CONTROLLER APIs and keeps
// no data logs; RF=1 partitions spread over both brokers; a client
// bootstrapped on one broker produces to partitions the other leads. Then a
// broker is killed with SIGKILL: after broker.session.timeout.ms the
// controller fences it and its partitions show "Leader: none"; they come
// back when it returns.
func TestClusterSplitRoles(t *testing.T) {
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Controllers: 3, Brokers: 2})
	b4, b5 := c.Node(4), c.Node(5)

	// Every broker sees both brokers at their advertised listeners (once it
	// has applied the other's registration: StartCluster waits for each
	// broker to be unfenced, not for every broker to have caught up).
	for _, b := range c.Brokers() {
		var md *kmsg.MetadataResponse
		waitFor(t, 15*time.Second, fmt.Sprintf("broker %d to list both brokers", b.ID), func() error {
			var err error
			if md, err = metadataFrom(b.Addr); err != nil {
				return err
			}
			for _, o := range c.Brokers() {
				if !containsBroker(md, o.ID, o.Host, o.Port) {
					return fmt.Errorf("metadata from broker %d does not list broker %d at %s: %+v", b.ID, o.ID, o.Addr, md.Brokers)
				}
			}
			if len(md.Brokers) != 2 {
				return fmt.Errorf("metadata from broker %d lists %d brokers, want 2 (controllers are not brokers): %+v", b.ID, len(md.Brokers), md.Brokers)
			}
			return nil
		})
		if md.ClusterID == nil || *md.ClusterID != c.ClusterID {
			t.Errorf("metadata from broker %d: cluster id %v, want %s", b.ID, md.ClusterID, c.ClusterID)
		}
	}

	// kafka-metadata-quorum.sh through each broker.
	wantVoters := fmt.Sprintf(`[{"id": 1, "endpoints": ["CONTROLLER://%s"]}, {"id": 2, "endpoints": ["CONTROLLER://%s"]}, {"id": 3, "endpoints": ["CONTROLLER://%s"]}]`,
		c.Node(1).CtrlAddr, c.Node(2).CtrlAddr, c.Node(3).CtrlAddr)
	var st map[string]string
	for _, b := range c.Brokers() {
		st = quorumStatus(t, b.Broker)
		if st["ClusterId"] != c.ClusterID {
			t.Errorf("via broker %d: ClusterId %q, want %q", b.ID, st["ClusterId"], c.ClusterID)
		}
		if l := st["LeaderId"]; l != "1" && l != "2" && l != "3" {
			t.Errorf("via broker %d: LeaderId %q, want a controller (1-3)", b.ID, l)
		}
		if st["CurrentVoters"] != wantVoters {
			t.Errorf("via broker %d: CurrentVoters\n %s\nwant\n %s", b.ID, st["CurrentVoters"], wantVoters)
		}
		// Observers are described with the directory id they fetch with
		// (meta.properties directory.id of their metadata log dir).
		want := fmt.Sprintf(`[{"id": 4, "directoryId": "%s"}, {"id": 5, "directoryId": "%s"}]`,
			b4.MetaProperties()["directory.id"], b5.MetaProperties()["directory.id"])
		if got := st["CurrentObservers"]; got != want {
			t.Errorf("via broker %d: CurrentObservers %q, want %q", b.ID, got, want)
		}
	}
	t.Logf("describe --status:\n%v", st)
	r := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-server", b5.Addr, "describe", "--replication")
	t.Logf("describe --replication:\n%s", r.Stdout)
	status := map[string]string{}
	for _, l := range lines(r.Stdout)[1:] {
		f := strings.Fields(l)
		if len(f) != 7 {
			t.Fatalf("describe --replication row %q: %d columns, want 7", l, len(f))
		}
		status[f[0]] = f[6]
		wantDir := "AAAAAAAAAAAAAAAAAAAAAA" // static voters have none
		if f[6] == "Observer" {
			wantDir = c.Node(int32(mustAtoi64(t, "NodeId", f[0]))).MetaProperties()["directory.id"]
		}
		if f[1] != wantDir {
			t.Errorf("describe --replication row %q: DirectoryId %s, want %s", l, f[1], wantDir)
		}
		if f[6] == "Leader" && f[0] != st["LeaderId"] {
			t.Errorf("Leader row for node %s, LeaderId %s", f[0], st["LeaderId"])
		}
		if lag := mustAtoi64(t, "Lag", f[3]); lag < 0 || lag > 50 {
			t.Errorf("row %q: lag %d", l, lag)
		}
	}
	for id, want := range map[string]string{"4": "Observer", "5": "Observer"} {
		if status[id] != want {
			t.Errorf("describe --replication: node %s is %q, want %q", id, status[id], want)
		}
	}
	followers := 0
	for _, id := range []string{"1", "2", "3"} {
		if status[id] == "Follower" {
			followers++
		}
	}
	if followers != 2 {
		t.Errorf("describe --replication: %d voters are Followers, want 2: %v", followers, status)
	}

	// kafka-metadata-quorum.sh --bootstrap-controller (KIP-919): the admin
	// client learns the controllers with DescribeCluster on a CONTROLLER
	// listener and asks the active one; any controller will do.
	for _, n := range []*ClusterNode{c.Node(1), c.Node(3)} {
		r := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-controller", n.CtrlAddr, "describe", "--status")
		if !strings.Contains(r.Stdout, "CurrentVoters:          "+wantVoters) || !strings.Contains(r.Stdout, `"id": 4, "directoryId"`) ||
			!strings.Contains(r.Stdout, "ClusterId:              "+c.ClusterID) {
			t.Errorf("describe --status --bootstrap-controller %s:\n%s", n.CtrlAddr, r.Stdout)
		}
	}
	cl0, err := dialController(c.Node(3).CtrlAddr)
	if err != nil {
		t.Fatal(err)
	}
	dreq := kmsg.NewPtrDescribeClusterRequest()
	dreq.EndpointType = 1
	if dresp, err := cl0.Request(ctxT(t, 5*time.Second), dreq); err != nil {
		t.Errorf("DescribeCluster on CONTROLLER: %v", err)
	} else if code := dresp.(*kmsg.DescribeClusterResponse).ErrorCode; code != kerr.MismatchedEndpointType.Code {
		t.Errorf("DescribeCluster for brokers on a CONTROLLER listener: error %d, want MISMATCHED_ENDPOINT_TYPE", code)
	}
	cl0.Close()

	// A controller-only node: ApiVersions on CONTROLLER lists the KRaft and
	// controller APIs, not the client ones.
	cl, err := dialController(c.Node(2).CtrlAddr)
	if err != nil {
		t.Fatalf("dial controller 2: %v", err)
	}
	for key, want := range map[int16]bool{52: true, 1: true, 55: true, 62: true, 63: true, 19: true, 0: false, 3: false, 10: false} {
		if _, _, ok := cl.Versions(key); ok != want {
			t.Errorf("controller-only node: ApiVersions on CONTROLLER lists %s: %v, want %v", kmsg.NameForKey(key), ok, want)
		}
	}
	cl.Close()

	// RF=1 partitions spread over both brokers.
	const topic = "it-spread"
	adm := kadm.NewClient(c.Client([]string{b4.Addr}))
	cr, err := adm.CreateTopic(ctxT(t, 30*time.Second), 6, 1, nil, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	leaders := waitLeaders(t, c, topic, 6)
	by := map[int32]int{}
	for _, l := range leaders {
		by[l]++
	}
	if by[4] == 0 || by[5] == 0 || by[4]+by[5] != 6 {
		t.Fatalf("partition leaders %v: want RF=1 partitions on both brokers 4 and 5", leaders)
	}

	// A client bootstrapped on broker 4 only produces to every partition,
	// broker 5's too; a client bootstrapped on broker 5 reads them all.
	pcl := c.Client([]string{b4.Addr}, kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for p := int32(0); p < 6; p++ {
		for i := 0; i < 5; i++ {
			recs = append(recs, &kgo.Record{Partition: p, Value: []byte(fmt.Sprintf("p%d-%d", p, i))})
		}
	}
	if err := pcl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce through broker 4: %v", err)
	}
	got := consumeAll(t, b5.Broker, topic, len(recs), 30*time.Second)
	if len(got) != len(recs) {
		t.Errorf("consumed %d records via broker 5, produced %d", len(got), len(recs))
	}

	// The controller-only nodes keep no partition data.
	for _, n := range c.Controllers() {
		ents, err := os.ReadDir(n.DataDir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.Name() != "meta.properties" && e.Name() != "__cluster_metadata-0" {
				t.Errorf("controller-only node %d has %s in its log dir", n.ID, filepath.Join(n.DataDir, e.Name()))
			}
		}
	}
	if _, err := os.Stat(filepath.Join(b5.DataDir, topic+"-"+fmt.Sprint(firstLedBy(leaders, 5)))); err != nil {
		t.Errorf("broker 5 has no log for a partition it leads: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Fencing: SIGKILL broker 5. After broker.session.timeout.ms (3s) without
	// heartbeats the controller fences it; its partitions have no leader.
	killed := time.Now()
	b5.Kill()
	var fencedAfter time.Duration
	waitFor(t, 20*time.Second, "broker 5's partitions to lose their leader", func() error {
		md, err := metadataFrom(b4.Addr, topic)
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || len(md.Topics[0].Partitions) != len(leaders) {
			return fmt.Errorf("metadata for %s: %+v", topic, md.Topics)
		}
		for _, pd := range md.Topics[0].Partitions {
			p, l := pd.Partition, leaders[pd.Partition]
			if l == 5 && pd.Leader != -1 {
				return fmt.Errorf("partition %d: leader %d", p, pd.Leader)
			}
			if l == 4 && pd.Leader != 4 {
				t.Errorf("partition %d led by broker 4: leader %d after broker 5 died", p, pd.Leader)
			}
		}
		fencedAfter = time.Since(killed)
		return nil
	})
	t.Logf("broker 5 fenced %v after SIGKILL (broker.session.timeout.ms=%s)", fencedAfter.Round(time.Millisecond), clusterTimeouts["broker.session.timeout.ms"])
	if fencedAfter < 2*time.Second {
		t.Errorf("broker 5's partitions lost their leader %v after the kill, before broker.session.timeout.ms", fencedAfter)
	}
	r = MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", b4.Addr, "--describe", "--topic", topic)
	none := 0
	for _, l := range lines(r.Stdout) {
		if strings.Contains(l, "Leader: none") {
			none++
		}
	}
	if none != by[5] {
		t.Errorf("kafka-topics.sh --describe: %d partitions with \"Leader: none\", want %d (broker 5's):\n%s", none, by[5], r.Stdout)
	}
	// DescribeCluster without fenced brokers lists broker 4 only.
	dcl := c.Client([]string{b4.Addr})
	dc, err := kmsg.NewPtrDescribeClusterRequest().RequestWith(ctxT(t, 10*time.Second), dcl)
	if err != nil {
		t.Fatal(err)
	}
	if len(dc.Brokers) != 1 || dc.Brokers[0].NodeID != 4 {
		t.Errorf("DescribeCluster while broker 5 is fenced: %+v, want broker 4 only", dc.Brokers)
	}

	// Broker 5 returns: registers, catches up, is unfenced, leads again.
	b5.Start()
	c.WaitNodeReady(b5, 60*time.Second)
	if again := waitLeaders(t, c, topic, 6); fmt.Sprint(again) != fmt.Sprint(leaders) {
		t.Errorf("leaders after broker 5 returned %v, before %v", again, leaders)
	}
	got = consumeAll(t, b4.Broker, topic, len(recs), 30*time.Second)
	if len(got) != len(recs) {
		t.Errorf("after broker 5 returned: consumed %d records, want %d", len(got), len(recs))
	}

	// SIGTERM: a broker-only node shuts down in a controlled way (the
	// controller fences it at once, no session timeout) and exits 0.
	stopped := time.Now()
	if code := b5.Stop(0); code != 0 {
		t.Fatalf("broker 5 exited %d after SIGTERM, want 0", code)
	}
	exitAfter := time.Since(stopped)
	waitFor(t, 10*time.Second, "broker 5's partitions to go offline after its controlled shutdown", func() error {
		md, err := metadataFrom(b4.Addr, topic)
		if err != nil {
			return err
		}
		for _, pd := range md.Topics[0].Partitions {
			if leaders[pd.Partition] == 5 && pd.Leader != -1 {
				return fmt.Errorf("partition %d: leader %d", pd.Partition, pd.Leader)
			}
		}
		return nil
	})
	t.Logf("broker 5: SIGTERM to exit %v, partitions offline %v after SIGTERM", exitAfter.Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
	if time.Since(stopped) > 2500*time.Millisecond {
		t.Errorf("controlled shutdown took %v to take broker 5's partitions offline: the controller should fence it at once, not after broker.session.timeout.ms", time.Since(stopped))
	}
}

func firstLedBy(leaders []int32, id int32) int {
	for p, l := range leaders {
		if l == id {
			return p
		}
	}
	return -1
}

// waitLeaders waits until every broker's Metadata shows topic with n
// partitions, each with a live leader, the same on every broker, and returns
// the leaders by partition.
func waitLeaders(t testing.TB, c *Cluster, topic string, n int) []int32 {
	t.Helper()
	var leaders []int32
	waitFor(t, 30*time.Second, "leaders of "+topic+" on every broker", func() error {
		var first []int32
		for _, b := range c.Brokers() {
			md, err := metadataFrom(b.Addr, topic)
			if err != nil {
				return err
			}
			if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != n {
				return fmt.Errorf("broker %d: topic %s not ready: %+v", b.ID, topic, md.Topics)
			}
			ls := make([]int32, n)
			for _, p := range md.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					return fmt.Errorf("broker %d: %s-%d leader %d error %d", b.ID, topic, p.Partition, p.Leader, p.ErrorCode)
				}
				ls[p.Partition] = p.Leader
			}
			if first != nil && fmt.Sprint(first) != fmt.Sprint(ls) {
				return fmt.Errorf("brokers disagree: %v vs %v", first, ls)
			}
			first = ls
		}
		leaders = first
		return nil
	})
	return leaders
}

// TestClusterCombined: three broker,controller nodes. The quorum forms with
// no observers; an RF=3 topic takes acks=all produce; CreateTopics round
// trips are measured on 3 voters, and on a single-node cluster for
// comparison.
func TestClusterCombined(t *testing.T) {
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Combined: 3})
	st := quorumStatus(t, c.Node(2).Broker)
	wantVoters := fmt.Sprintf(`[{"id": 1, "endpoints": ["CONTROLLER://%s"]}, {"id": 2, "endpoints": ["CONTROLLER://%s"]}, {"id": 3, "endpoints": ["CONTROLLER://%s"]}]`,
		c.Node(1).CtrlAddr, c.Node(2).CtrlAddr, c.Node(3).CtrlAddr)
	if st["CurrentVoters"] != wantVoters || st["CurrentObservers"] != "[]" {
		t.Errorf("describe --status: voters %s observers %s; want %s and []", st["CurrentVoters"], st["CurrentObservers"], wantVoters)
	}
	const topic = "it-combined"
	adm := kadm.NewClient(c.Client(nil))
	cr, err := adm.CreateTopic(ctxT(t, 30*time.Second), 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLeaders(t, c, topic, 3)
	pcl := c.Client([]string{c.Node(3).Addr}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err := pcl.ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic, 30)...).FirstErr(); err != nil {
		t.Fatalf("produce acks=all RF=3: %v", err)
	}
	if got := consumeAll(t, c.Node(1).Broker, topic, 30, 30*time.Second); len(got) != 30 {
		t.Errorf("consumed %d, want 30", len(got))
	}

	rtt3 := createTopicsRTT(t, c.Node(1).Addr, "it-rtt3", 10)
	single := StartBroker(t, BrokerOptions{})
	rtt1 := createTopicsRTT(t, single.Addr, "it-rtt1", 10)
	t.Logf("MEASURE CreateTopics round trip (1 partition, RF=1, median of 10): 1 voter %v, 3 voters %v",
		rtt1.Round(10*time.Microsecond), rtt3.Round(10*time.Microsecond))
}

// createTopicsRTT measures n CreateTopics round trips through one broker and
// returns the median.
func createTopicsRTT(t testing.TB, addr, prefix string, n int) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var ds []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := createTopicOnce(ctxT(t, 30*time.Second), cl, fmt.Sprintf("%s-%d", prefix, i), 10*time.Second); err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		ds = append(ds, time.Since(start))
	}
	return median(ds)
}

// createTopicOnce sends one CreateTopics (1 partition, RF=1) and returns the
// topic's error (nil when created).
func createTopicOnce(ctx context.Context, cl *kgo.Client, name string, timeout time.Duration) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(timeout.Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, 1, 1
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("CreateTopics: %d topics in the response", len(resp.Topics))
	}
	return kerr.ErrorForCode(resp.Topics[0].ErrorCode)
}

// TestClusterControllerFailover: 3 controller-only + 2 broker-only
// processes, and 3 combined nodes, under a stream of topic creations through
// alternating brokers. Twenty times: SIGKILL the active controller, measure
// the time to a new leader and to the first successful CreateTopics, restart
// the killed node and wait until it has caught up. At the end every
// acknowledged topic exists exactly once, with one id, the same on every
// broker, and the metadata log holds one TopicRecord per topic.
func TestClusterControllerFailover(t *testing.T) {
	// A combined node's restart waits out its broker session (a new
	// incarnation is DUPLICATE_BROKER_REGISTRATION until then, as in Kafka),
	// so its cycles are longer: 10 kills keep the suite within minutes.
	t.Run("split", func(t *testing.T) { controllerFailover(t, ClusterOptions{Controllers: 3, Brokers: 2}, 20) })
	t.Run("combined", func(t *testing.T) { controllerFailover(t, ClusterOptions{Combined: 3}, 10) })
}

func controllerFailover(t *testing.T, o ClusterOptions, kills int) {
	if testing.Short() {
		kills = 3
	}
	if s := os.Getenv("KGO_CLUSTER_KILLS"); s != "" {
		fmt.Sscan(s, &kills)
	}
	if s := os.Getenv("KGO_CLUSTER_LOG_LEVEL"); s != "" {
		o.Env = append(o.Env, "KGO_LOG_LEVEL="+s)
	}
	c := StartCluster(t, o)
	rtt := createTopicsRTT(t, c.Brokers()[len(c.Brokers())-1].Addr, "it-rtt", 10)
	t.Logf("MEASURE CreateTopics round trip through a broker (%d combined, %d controllers, %d brokers; median of 10): %v",
		o.Combined, o.Controllers, o.Brokers, rtt.Round(10*time.Microsecond))

	// The stream: one topic at a time, retried until created or
	// TOPIC_ALREADY_EXISTS after an earlier unacknowledged attempt.
	var (
		mu        sync.Mutex
		confirmed = map[string]bool{}
		attempted = map[string]bool{}
		ambiguous int
		failures  = map[string]int{} // failed stream attempts by error
		failedFor time.Duration      // time spent in failed attempts
		streamErr error
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		clients := make([]*kgo.Client, 0, 2)
		for _, b := range c.Brokers() {
			cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
			if err != nil {
				streamErr = err
				return
			}
			defer cl.Close()
			clients = append(clients, cl)
		}
		// At most 10 topics a second: a steady stream, not a load test (a
		// restarted broker replays every topic record; see the report).
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("it-stream-%04d", i)
			tries := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				attempted[name] = true
				mu.Unlock()
				ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
				began := time.Now()
				err := createTopicOnce(ctx, clients[(i+tries)%len(clients)], name, 5*time.Second)
				cancel()
				if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
					mu.Lock()
					failures[fmt.Sprintf("%v", err)]++
					failedFor += time.Since(began)
					mu.Unlock()
				}
				// TOPIC_ALREADY_EXISTS, even on our first attempt, means an
				// earlier try went through: the broker retries a forwarded
				// request on a new controller when the old one dies before
				// answering, as Kafka's NodeToControllerChannelManager does.
				if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
					mu.Lock()
					confirmed[name] = true
					if err != nil {
						ambiguous++
					}
					mu.Unlock()
					break
				}
				tries++
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}()
	stopStream := sync.OnceFunc(func() { close(stop); wg.Wait() })
	t.Cleanup(stopStream)

	probe, err := kgo.NewClient(kgo.SeedBrokers(c.BrokerAddrs()...), kgo.RequestRetries(0), kgo.DialTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()

	var toLeader, toCreate []time.Duration
	for k := 0; k < kills; k++ {
		old, _ := c.WaitLeader(20*time.Second, 0)
		killed := time.Now()
		old.Kill()
		ld, _ := c.WaitLeader(20*time.Second, old.ID)
		toLeader = append(toLeader, time.Since(killed))
		// First successful CreateTopics through a broker after the kill.
		name := fmt.Sprintf("it-probe-%02d", k)
		err := pollUntil(30*time.Second, nil, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := createTopicOnce(ctx, probe, name, 2*time.Second)
			if errors.Is(err, kerr.TopicAlreadyExists) {
				return nil // an earlier attempt went through
			}
			return err
		})
		if err != nil {
			t.Fatalf("kill %d: CreateTopics after killing controller %d: %v", k, old.ID, err)
		}
		toCreate = append(toCreate, time.Since(killed))
		mu.Lock()
		confirmed[name] = true
		mu.Unlock()

		// The killed controller restarts and catches up with the leader.
		old.Start()
		c.WaitNodeReady(old, 60*time.Second)
		waitFor(t, 30*time.Second, fmt.Sprintf("controller %d to catch up", old.ID), func() error {
			ld2, q, err := c.Leader()
			if err != nil {
				return err
			}
			if leo, ok := q.Voters[old.ID]; !ok || leo < q.HW {
				return fmt.Errorf("leader %d: controller %d at %d, high watermark %d", ld2.ID, old.ID, leo, q.HW)
			}
			return nil
		})
		t.Logf("kill %d: controller %d killed, new leader %d after %v, CreateTopics after %v", k, old.ID, ld.ID,
			toLeader[k].Round(time.Millisecond), toCreate[k].Round(time.Millisecond))
	}
	stopStream()
	if streamErr != nil {
		t.Fatalf("stream: %v", streamErr)
	}
	t.Logf("MEASURE kill -9 of the active controller (%s; %d kills, election.timeout=%sms fetch.timeout=%sms): median to a new leader %v (max %v), to the first successful CreateTopics %v (max %v)",
		t.Name(), kills, clusterTimeouts["controller.quorum.election.timeout.ms"], clusterTimeouts["controller.quorum.fetch.timeout.ms"],
		median(toLeader).Round(time.Millisecond), maxDur(toLeader).Round(time.Millisecond),
		median(toCreate).Round(time.Millisecond), maxDur(toCreate).Round(time.Millisecond))
	if m := median(toLeader); m > 2*time.Second+500*time.Millisecond {
		t.Errorf("median time to a new leader %v, want about fetch timeout + election (<= 2.5s)", m)
	}

	// Every acknowledged topic exists exactly once, with the same id on
	// every broker; nothing that was never attempted appears.
	var ids map[string][16]byte
	// Wait until the brokers have applied everything the controller
	// acknowledged (an ack precedes the brokers' replay), then compare.
	mu.Lock()
	acked := make([]string, 0, len(confirmed))
	for name := range confirmed {
		acked = append(acked, name)
	}
	mu.Unlock()
	waitFor(t, 30*time.Second, "brokers to agree on the topics", func() error {
		var first map[string][16]byte
		for _, b := range c.Brokers() {
			md, err := metadataFrom(b.Addr, "*")
			if err != nil {
				return err
			}
			m := map[string][16]byte{}
			for _, tp := range md.Topics {
				if tp.Topic == nil {
					return fmt.Errorf("topic without a name")
				}
				if _, dup := m[*tp.Topic]; dup {
					t.Errorf("broker %d lists topic %s twice", b.ID, *tp.Topic)
				}
				m[*tp.Topic] = tp.TopicID
			}
			if first != nil && fmt.Sprint(first) != fmt.Sprint(m) {
				return fmt.Errorf("brokers disagree on topics (%d vs %d)", len(first), len(m))
			}
			first = m
		}
		ids = first
		for _, name := range acked {
			if _, ok := ids[name]; !ok {
				return fmt.Errorf("acknowledged topic %s not listed (yet)", name)
			}
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	var lost []string
	for name := range confirmed {
		if _, ok := ids[name]; !ok {
			lost = append(lost, name)
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged topics are missing: %v", len(lost), lost)
	}
	for name := range ids {
		if !attempted[name] && !strings.HasPrefix(name, "it-probe-") && !strings.HasPrefix(name, "it-rtt-") && !strings.HasPrefix(name, "__") {
			t.Errorf("topic %s exists but was never created", name)
		}
	}
	seen := map[[16]byte]string{}
	for name, id := range ids {
		if o, dup := seen[id]; dup {
			t.Errorf("topics %s and %s share id %x", name, o, id)
		}
		seen[id] = name
	}
	t.Logf("stream: %v in failed attempts: %v", failedFor.Round(time.Millisecond), failures)
	t.Logf("%d topics acknowledged (%d stream topics attempted, %d acknowledged as TOPIC_ALREADY_EXISTS after a retry, %d probes) across %d controller kills", len(confirmed), len(attempted), ambiguous, kills, kills)
	if toolsInstalled() {
		checkTopicRecords(t, c, ids)
	}
}

func maxDur(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

// toolsInstalled reports whether Kafka's tools are installed, without
// skipping the test.
func toolsInstalled() bool {
	return exec.Command(filepath.Join(repoRoot, "scripts", "kafka-tool"), "--installed").Run() == nil
}

// checkTopicRecords reads a controller's metadata log with kafka-dump-log.sh
// and checks there is exactly one TopicRecord per topic.
func checkTopicRecords(t *testing.T, c *Cluster, ids map[string][16]byte) {
	t.Helper()
	n := c.Node(1)
	segs, _ := filepath.Glob(filepath.Join(n.DataDir, "__cluster_metadata-0", "*.log"))
	if len(segs) == 0 {
		t.Errorf("no metadata log segments in %s", n.DataDir)
		return
	}
	r := KafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", strings.Join(segs, ","))
	if r.ExitCode != 0 {
		t.Errorf("kafka-dump-log.sh: %s", r)
		return
	}
	count := map[string]int{}
	for _, l := range strings.Split(r.Stdout, "\n") {
		i := strings.Index(l, `"type":"TOPIC_RECORD"`)
		if i < 0 {
			continue
		}
		j := strings.Index(l, `"name":"`)
		if j < 0 {
			continue
		}
		rest := l[j+len(`"name":"`):]
		count[rest[:strings.IndexByte(rest, '"')]]++
	}
	for name := range ids {
		if strings.HasPrefix(name, "__") {
			continue
		}
		if count[name] != 1 {
			t.Errorf("metadata log of controller 1: %d TopicRecords for %s, want 1", count[name], name)
		}
	}
	for name, k := range count {
		if _, ok := ids[name]; !ok {
			t.Errorf("metadata log has %d TopicRecords for %s, which no broker lists", k, name)
		}
	}
}
