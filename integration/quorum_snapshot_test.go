//go:build integration

package integration

// FetchSnapshot across kinds and the removal of an Apache Kafka voter by a
// kgo-broker leader, in a dynamic quorum (KIP-853; setup as
// dynamic_quorum_test.go).

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metadataSnapshots lists the snapshot ids (end offsets) in a node's
// __cluster_metadata-0 directory, without the bootstrap checkpoint (0).
func metadataSnapshots(n *mixedNode) []int64 {
	ents, _ := os.ReadDir(filepath.Join(n.dir, "data", "__cluster_metadata-0"))
	var out []int64
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".checkpoint") {
			continue
		}
		off, err := strconv.ParseInt(strings.SplitN(name, "-", 2)[0], 10, 64)
		if err == nil && off > 0 {
			out = append(out, off)
		}
	}
	return out
}

// TestQuorumSnapshotToKafka: a kgo-broker controller formatted
// --standalone takes metadata snapshots every second; an Apache Kafka 4.4
// controller formatted --no-initial-controllers then starts with an empty
// log, so the kgo-broker leader answers its first Fetch with the snapshot
// id and the Kafka node loads the snapshot with FetchSnapshot (it has a
// checkpoint of its own, at an offset it could not have written itself:
// Kafka's own snapshot interval is an hour and 20 MB). The Kafka node is
// added with kafka-metadata-quorum.sh add-controller (Fetch v18 both ways
// is what both CONTROLLER listeners advertise), replicates a CreateTopics,
// and is removed with remove-controller against the kgo-broker leader: it
// is an observer again and the quorum still commits.
func TestQuorumSnapshotToKafka(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("mixed clusters need kgo-broker as KGO_BROKER_BIN")
	}
	c := &mixedCluster{t: t, clusterID: newClusterID()}
	ports := freePorts(t, 3)
	bs := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	kgoCtl := dynamicNode(t, c, 1, kindKgo, true, ports[0], bs)
	kafkaCtl := dynamicNode(t, c, 2, kindKafka, true, ports[1], bs)
	broker := dynamicNode(t, c, 4, kindKgo, false, ports[2], bs)
	f, err := os.OpenFile(kgoCtl.props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "metadata.log.max.snapshot.interval.ms=1000\nmetadata.max.idle.interval.ms=200\n")
	f.Close()
	formatDynamic(t, c, kgoCtl, "--standalone")
	formatDynamic(t, c, kafkaCtl, "--no-initial-controllers")
	kgoCtl.Start()
	broker.Start()
	c.waitBrokers(3 * readyTimeout())
	dqCreateTopic(t, c, broker, "snap-before")
	var leaderSnap int64
	waitFor(t, 60*time.Second, "a snapshot on the kgo-broker leader", func() error {
		if s := metadataSnapshots(kgoCtl); len(s) > 0 {
			leaderSnap = s[len(s)-1]
			return nil
		}
		return fmt.Errorf("no snapshot yet")
	})

	kafkaCtl.Start()
	waitFor(t, 90*time.Second, "the Kafka controller loads a snapshot fetched from the kgo-broker leader", func() error {
		for _, off := range metadataSnapshots(kafkaCtl) {
			if off >= leaderSnap {
				return nil
			}
		}
		return fmt.Errorf("snapshots on the Kafka node: %v (leader's: %d)", metadataSnapshots(kafkaCtl), leaderSnap)
	})
	waitReplication(t, c, "--bootstrap-controller", kgoCtl.Addr, map[int32]string{1: "Leader", 2: "Observer", 4: "Observer"})

	addController(t, kafkaCtl, "--bootstrap-controller", kgoCtl.Addr)
	waitReplication(t, c, "--bootstrap-controller", kgoCtl.Addr, map[int32]string{1: "Leader", 2: "Follower", 4: "Observer"})
	dqCreateTopic(t, c, broker, "snap-two-voters")
	// The Kafka voter has what the two-voter quorum committed: its
	// DescribeQuorum answer is NOT_LEADER, so read it through the leader
	// (LogEndOffset of 2 reaches the leader's high watermark).
	waitFor(t, 30*time.Second, "the Kafka voter caught up", func() error {
		r := KafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-controller", kgoCtl.Addr, "describe", "--replication")
		for _, l := range lines(r.Stdout) {
			if f := strings.Fields(l); len(f) == 7 && f[0] == "2" && f[3] == "0" {
				return nil
			}
		}
		return fmt.Errorf("lag of 2:\n%s", r)
	})

	r := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-controller", kgoCtl.Addr, "remove-controller",
		"--controller-id", "2", "--controller-directory-id", kafkaCtl.dirID(t))
	if !strings.Contains(r.Stdout, "Removed") || !strings.Contains(r.Stdout, "KRaft controller 2 with directory id "+kafkaCtl.dirID(t)) {
		t.Fatalf("remove-controller:\n%s", r)
	}
	waitReplication(t, c, "--bootstrap-controller", kgoCtl.Addr, map[int32]string{1: "Leader", 2: "Observer", 4: "Observer"})
	st := quorumStatus(t, &Broker{t: t, Addr: broker.Addr})
	if got, want := st["CurrentVoters"], fmt.Sprintf(`[{"id": 1, "directoryId": "%s", "endpoints": ["CONTROLLER://%s"]}]`, kgoCtl.dirID(t), kgoCtl.Addr); got != want {
		t.Errorf("CurrentVoters %q, want %q", got, want)
	}
	dqCreateTopic(t, c, broker, "snap-after-remove")
}

// TestAssignReplicasToDirs: a broker with two log dirs under a controller
// of the other kind (kgo-broker under Apache Kafka 4.4 and the reverse).
// The controller leaves the broker's replicas of a new topic UNASSIGNED
// (several dirs); the broker reports the directory each log is in with
// AssignReplicasToDirs (KIP-858), and the controller writes
// PartitionChangeRecords naming those directories (read back with
// kafka-dump-log.sh --cluster-metadata-decoder).
func TestAssignReplicasToDirs(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("mixed clusters need kgo-broker as KGO_BROKER_BIN")
	}
	for _, kinds := range [][2]nodeKind{{kindKafka, kindKgo}, {kindKgo, kindKafka}} {
		t.Run(fmt.Sprintf("%s-controller-%s-broker", kinds[0], kinds[1]), func(t *testing.T) { assignReplicasToDirs(t, kinds[0], kinds[1]) })
	}
}

func assignReplicasToDirs(t *testing.T, ctlKind, brokerKind nodeKind) {
	c := &mixedCluster{t: t, clusterID: newClusterID()}
	ports := freePorts(t, 2)
	bs := fmt.Sprintf("127.0.0.1:%d", ports[0])
	ctl := dynamicNode(t, c, 1, ctlKind, true, ports[0], bs)
	broker := dynamicNode(t, c, 4, brokerKind, false, ports[1], bs)
	b, err := os.ReadFile(broker.props)
	if err != nil {
		t.Fatal(err)
	}
	data, data2 := filepath.Join(broker.dir, "data"), filepath.Join(broker.dir, "data2")
	props := strings.Replace(string(b), "log.dirs="+data+"\n", "log.dirs="+data+","+data2+"\n", 1)
	if err := os.WriteFile(broker.props, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	formatDynamic(t, c, ctl, "--standalone")
	ctl.Start()
	broker.Start() // formatted on first start (both kinds)
	c.waitBrokers(3 * readyTimeout())
	waitFor(t, 60*time.Second, "CreateTopics dirs", func() error {
		r, err := adminOf(t, c, broker).CreateTopic(ctxT(t, 20*time.Second), 4, 1, nil, "dirs")
		if err == nil && r.Err != nil {
			err = r.Err
		}
		return err
	})
	dir1 := broker.dirID(t)
	dir2 := readProperties(t, filepath.Join(data2, "meta.properties"))["directory.id"]
	seg := filepath.Join(ctl.dir, "data", "__cluster_metadata-0", "00000000000000000000.log")
	waitFor(t, 60*time.Second, "PartitionChangeRecords with the broker's directories", func() error {
		r := KafkaTool(t, RunOpts{}, "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", seg)
		assigned := 0
		for _, l := range lines(r.Stdout) {
			if strings.Contains(l, `"type":"PARTITION_CHANGE_RECORD"`) && (strings.Contains(l, dir1) || strings.Contains(l, dir2)) {
				assigned++
			}
		}
		if assigned < 4 {
			return fmt.Errorf("%d of 4 partitions assigned a directory (dirs %s %s)\n%s", assigned, dir1, dir2, r)
		}
		return nil
	})
}

// appendProps appends lines to a node's server.properties.
func appendProps(t *testing.T, n *mixedNode, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(n.props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		fmt.Fprintln(f, l)
	}
}

// metadataLogStart is the base offset of the oldest segment in a node's
// __cluster_metadata-0 directory (-1 without one).
func metadataLogStart(n *mixedNode) int64 {
	ents, _ := os.ReadDir(filepath.Join(n.dir, "data", "__cluster_metadata-0"))
	start := int64(-1)
	for _, e := range ents {
		if name := e.Name(); strings.HasSuffix(name, ".log") {
			if off, err := strconv.ParseInt(strings.TrimSuffix(name, ".log"), 10, 64); err == nil && (start < 0 || off < start) {
				start = off
			}
		}
	}
	return start
}

// TestQuorumSnapshotFromKafka: the other direction of
// TestQuorumSnapshotToKafka. An Apache Kafka 4.4 controller formatted
// --standalone takes a snapshot every second and deletes the log before it
// (metadata.log.segment.ms and metadata.max.retention.ms of a second), so
// its log starts past 0 and a kgo-broker controller formatted
// --no-initial-controllers, starting with an empty log, must load the
// snapshot with FetchSnapshot (a kgo-broker node's own snapshot interval is
// an hour). It is then added as a voter, replicates a CreateTopics and is
// removed with remove-controller against the Kafka leader.
func TestQuorumSnapshotFromKafka(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("mixed clusters need kgo-broker as KGO_BROKER_BIN")
	}
	c := &mixedCluster{t: t, clusterID: newClusterID()}
	ports := freePorts(t, 3)
	bs := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
	kafkaCtl := dynamicNode(t, c, 1, kindKafka, true, ports[0], bs)
	kgoCtl := dynamicNode(t, c, 2, kindKgo, true, ports[1], bs)
	broker := dynamicNode(t, c, 4, kindKgo, false, ports[2], bs)
	appendProps(t, kafkaCtl, "metadata.log.max.snapshot.interval.ms=1000", "metadata.max.idle.interval.ms=200",
		"metadata.log.segment.ms=1000", "metadata.max.retention.ms=1000")
	formatDynamic(t, c, kafkaCtl, "--standalone")
	formatDynamic(t, c, kgoCtl, "--no-initial-controllers")
	kafkaCtl.Start()
	broker.Start()
	c.waitBrokers(3 * readyTimeout())
	dqCreateTopic(t, c, broker, "ksnap-before")
	var logStart int64
	waitFor(t, 90*time.Second, "the Kafka leader's log to start past 0 after a snapshot", func() error {
		logStart = metadataLogStart(kafkaCtl)
		if s := metadataSnapshots(kafkaCtl); len(s) > 0 && logStart > 0 {
			return nil
		}
		return fmt.Errorf("snapshots %v, log start %d", metadataSnapshots(kafkaCtl), logStart)
	})

	kgoCtl.Start()
	waitFor(t, 90*time.Second, "the kgo-broker controller loads a snapshot fetched from the Kafka leader", func() error {
		for _, off := range metadataSnapshots(kgoCtl) {
			if off >= logStart {
				return nil
			}
		}
		return fmt.Errorf("snapshots on the kgo-broker node: %v (Kafka log start %d)", metadataSnapshots(kgoCtl), logStart)
	})
	waitReplication(t, c, "--bootstrap-controller", kafkaCtl.Addr, map[int32]string{1: "Leader", 2: "Observer", 4: "Observer"})
	addController(t, kgoCtl, "--bootstrap-controller", kafkaCtl.Addr)
	waitReplication(t, c, "--bootstrap-controller", kafkaCtl.Addr, map[int32]string{1: "Leader", 2: "Follower", 4: "Observer"})
	dqCreateTopic(t, c, broker, "ksnap-two-voters")
	r := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-controller", kafkaCtl.Addr, "remove-controller",
		"--controller-id", "2", "--controller-directory-id", kgoCtl.dirID(t))
	if !strings.Contains(r.Stdout, "Removed") {
		t.Fatalf("remove-controller:\n%s", r)
	}
	waitReplication(t, c, "--bootstrap-controller", kafkaCtl.Addr, map[int32]string{1: "Leader", 2: "Observer", 4: "Observer"})
	dqCreateTopic(t, c, broker, "ksnap-after-remove")
}

// kafkaRequestLog makes a Kafka node log every request it completes
// (kafka.request.logger at DEBUG, Kafka's RequestChannel request log) to a
// file of its own; it returns the file.
func kafkaRequestLog(t *testing.T, n *mixedNode) string {
	t.Helper()
	logFile := filepath.Join(n.dir, "kafka-request.log")
	cfg := filepath.Join(n.dir, "request-log4j2.properties")
	props := fmt.Sprintf(`status = warn
name = kgo-it-request-log
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%%d] %%p %%m (%%c)%%n
appender.req.type = File
appender.req.name = REQ
appender.req.fileName = %s
appender.req.layout.type = PatternLayout
appender.req.layout.pattern = %%m%%n
logger.req.name = kafka.request.logger
logger.req.level = debug
logger.req.additivity = false
logger.req.appenderRef.req.ref = REQ
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = STDERR
`, logFile)
	if err := os.WriteFile(cfg, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	n.env = append(n.env, "KAFKA_OPTS=-Dlog4j2.configurationFile="+cfg)
	return logFile
}

// fetchVersionsServed counts the raft Fetch requests a kgo-broker node
// served, by version, from its Prometheus metrics.
func fetchVersionsServed(t *testing.T, metricsAddr string) map[string]float64 {
	t.Helper()
	body := scrape(t, "http://"+metricsAddr+"/metrics")
	out := map[string]float64{}
	re := regexp.MustCompile(`(?m)^kafka_network_requestmetrics_requests_total\{request="Fetch",version="(\d+)"\} (\S+)$`)
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		var v float64
		fmt.Sscan(m[2], &v)
		out[m[1]] = v
	}
	return out
}

// TestQuorumFetchV18Mixed: raft Fetch v18 (KIP-1166) is what both kinds
// negotiate with each other. An Apache Kafka 4.4 voter and a Kafka broker
// (observer) fetch from a kgo-broker leader only at v18 (the leader's
// request metrics, which no kgo-broker fetcher feeds here); kgo-broker
// voters and observers fetch from a Kafka 4.4 leader at v18 (Kafka's own
// request log). Both quorums replicate a CreateTopics.
func TestQuorumFetchV18Mixed(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("mixed clusters need kgo-broker as KGO_BROKER_BIN")
	}
	t.Run("kgo-leader", func(t *testing.T) {
		c := &mixedCluster{t: t, clusterID: newClusterID()}
		ports := freePorts(t, 4)
		bs := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
		leader := dynamicNode(t, c, 1, kindKgo, true, ports[0], bs)
		kafkaCtl := dynamicNode(t, c, 2, kindKafka, true, ports[1], bs)
		broker := dynamicNode(t, c, 4, kindKafka, false, ports[2], bs)
		metrics := fmt.Sprintf("127.0.0.1:%d", ports[3])
		leader.env = append(leader.env, "KGO_METRICS_ADDR="+metrics)
		formatDynamic(t, c, leader, "--standalone")
		formatDynamic(t, c, kafkaCtl, "--no-initial-controllers")
		for _, n := range c.nodes {
			n.Start()
		}
		c.waitBrokers(3 * readyTimeout())
		addController(t, kafkaCtl, "--bootstrap-controller", leader.Addr)
		waitReplication(t, c, "--bootstrap-controller", leader.Addr, map[int32]string{1: "Leader", 2: "Follower", 4: "Observer"})
		dqCreateTopic(t, c, broker, "v18-kgo-leader")
		got := fetchVersionsServed(t, metrics)
		if got["18"] < 1 || len(got) != 1 {
			t.Errorf("Fetch requests served by the kgo-broker leader by version: %v, want v18 only", got)
		}
	})
	t.Run("kafka-leader", func(t *testing.T) {
		c := &mixedCluster{t: t, clusterID: newClusterID()}
		ports := freePorts(t, 3)
		bs := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[0], ports[1])
		leader := dynamicNode(t, c, 1, kindKafka, true, ports[0], bs)
		kgoCtl := dynamicNode(t, c, 2, kindKgo, true, ports[1], bs)
		broker := dynamicNode(t, c, 4, kindKgo, false, ports[2], bs)
		reqLog := kafkaRequestLog(t, leader)
		formatDynamic(t, c, leader, "--standalone")
		formatDynamic(t, c, kgoCtl, "--no-initial-controllers")
		for _, n := range c.nodes {
			n.Start()
		}
		c.waitBrokers(3 * readyTimeout())
		addController(t, kgoCtl, "--bootstrap-controller", leader.Addr)
		waitReplication(t, c, "--bootstrap-controller", leader.Addr, map[int32]string{1: "Leader", 2: "Follower", 4: "Observer"})
		dqCreateTopic(t, c, broker, "v18-kafka-leader")
		b, err := os.ReadFile(reqLog)
		if err != nil {
			t.Fatal(err)
		}
		versions := map[string]int{}
		re := regexp.MustCompile(`"requestApiKey":1,"requestApiVersion":(\d+)`)
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			versions[m[1]]++
		}
		if versions["18"] < 1 || len(versions) != 1 {
			t.Errorf("Fetch requests completed by the Kafka leader by version: %v, want v18 only\n%.2000s", versions, b)
		}
	})
}
