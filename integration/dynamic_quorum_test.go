//go:build integration

package integration

// A dynamic KRaft quorum (KIP-853) of kgo-broker controllers driven by
// Apache Kafka 4.4's own tools: kgo-broker format --standalone, then
// kafka-metadata-quorum.sh add-controller / remove-controller, describe
// --status / --replication, and kafka-features.sh describe for the
// finalized kraft.version.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// dynamicNode is a kgo-broker node of a dynamic quorum: every node finds the
// quorum through controller.quorum.bootstrap.servers (no
// controller.quorum.voters).
func dynamicNode(t *testing.T, c *mixedCluster, id int32, kind nodeKind, controller bool, port int, bootstrap string) *mixedNode {
	t.Helper()
	root, err := os.MkdirTemp("", fmt.Sprintf("kgo-it-dynamic-%s-%d-", kind, id))
	if err != nil {
		t.Fatal(err)
	}
	n := &mixedNode{mixedSpec: mixedSpec{ID: id, Kind: kind, Controller: controller}, t: t, c: c, dir: root, port: port}
	n.props = filepath.Join(root, "server.properties")
	n.logPath = filepath.Join(root, "node.log")
	n.Addr = fmt.Sprintf("127.0.0.1:%d", port)
	role, listeners := "broker", "PLAINTEXT://"+n.Addr
	extra := "advertised.listeners=PLAINTEXT://" + n.Addr + "\ninter.broker.listener.name=PLAINTEXT\n"
	if controller {
		role, listeners, extra = "controller", "CONTROLLER://"+n.Addr, ""
	}
	props := fmt.Sprintf("process.roles=%s\nnode.id=%d\ncontroller.quorum.bootstrap.servers=%s\nlisteners=%s\n%slog.dirs=%s\n%s",
		role, id, bootstrap, listeners, extra, filepath.Join(root, "data"), mixedCommon(1))
	if err := os.WriteFile(n.props, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	c.nodes = append(c.nodes, n)
	t.Cleanup(n.cleanup)
	return n
}

// dirID is a node's directory.id in its metadata log dir's meta.properties.
func (n *mixedNode) dirID(t *testing.T) string {
	t.Helper()
	id := readProperties(t, filepath.Join(n.dir, "data", "meta.properties"))["directory.id"]
	if id == "" {
		t.Fatalf("node %d has no directory.id", n.ID)
	}
	return id
}

// formatDynamic formats a node with kgo-broker format or, for a Kafka node,
// kafka-storage.sh format (at Kafka's default features) and flag
// (--standalone, --no-initial-controllers).
func formatDynamic(t *testing.T, c *mixedCluster, n *mixedNode, flag string) {
	t.Helper()
	bin, args := brokerBin, []string{"format", "-t", c.clusterID, "-c", n.props, flag}
	if n.Kind == kindKafka {
		bin = kafkaReference()
	}
	if r := RunCommand(t, RunOpts{Hermetic: true}, bin, args...); r.ExitCode != 0 {
		t.Fatalf("format %s node %d %s:\n%s", n.Kind, n.ID, flag, r)
	}
}

// addController runs kafka-metadata-quorum.sh add-controller for n against
// addr (flag --bootstrap-controller or --bootstrap-server), retrying while
// the leader refuses it (the observer not caught up yet, a change pending).
func addController(t *testing.T, n *mixedNode, flag, addr string) {
	t.Helper()
	var r ToolResult
	waitFor(t, 60*time.Second, fmt.Sprintf("add-controller %d", n.ID), func() error {
		r = KafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--command-config", n.props, flag, addr, "add-controller")
		if r.ExitCode != 0 {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	want := fmt.Sprintf("Added controller %d with directory id %s and endpoints: CONTROLLER://%s", n.ID, n.dirID(t), n.Addr)
	if !strings.Contains(r.Stdout, want) {
		t.Fatalf("add-controller %d: want %q\n%s", n.ID, want, r)
	}
}

// quorumRow is one line of kafka-metadata-quorum.sh describe --replication.
type quorumRow struct {
	ID, Dir, Status string
}

// quorumReplication runs describe --replication against addr (a broker with
// --bootstrap-server, else a controller with --bootstrap-controller) and
// returns its rows by node id.
func quorumReplication(t *testing.T, flag, addr string) (map[string]quorumRow, error) {
	t.Helper()
	r := KafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", flag, addr, "describe", "--replication")
	if r.ExitCode != 0 {
		return nil, fmt.Errorf("describe --replication: %s", r)
	}
	ls := lines(r.Stdout)
	if len(ls) == 0 || !slices.Equal(strings.Fields(ls[0]), []string{"NodeId", "DirectoryId", "LogEndOffset", "Lag",
		"LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"}) {
		return nil, fmt.Errorf("describe --replication header:\n%s", r)
	}
	rows := map[string]quorumRow{}
	for _, l := range ls[1:] {
		f := strings.Fields(l)
		if len(f) != 7 {
			return nil, fmt.Errorf("describe --replication line %q", l)
		}
		rows[f[0]] = quorumRow{ID: f[0], Dir: f[1], Status: f[6]}
	}
	return rows, nil
}

// waitReplication waits until describe --replication lists exactly want
// (node id -> status), each with the directory id of its node.
func waitReplication(t *testing.T, c *mixedCluster, flag, addr string, want map[int32]string) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("describe --replication %v", want), func() error {
		rows, err := quorumReplication(t, flag, addr)
		if err != nil {
			return err
		}
		if len(rows) != len(want) {
			return fmt.Errorf("rows %v", rows)
		}
		for id, status := range want {
			r, ok := rows[fmt.Sprint(id)]
			if !ok || r.Status != status {
				return fmt.Errorf("node %d: %+v (rows %v)", id, r, rows)
			}
			if n := c.node(id); n.Controller && r.Dir != n.dirID(t) {
				return fmt.Errorf("node %d directory id %s, want %s", id, r.Dir, n.dirID(t))
			}
		}
		return nil
	})
}

// dqCreateTopic creates a topic through broker b (retrying while the
// controller is not ready).
func dqCreateTopic(t *testing.T, c *mixedCluster, b *mixedNode, name string) {
	t.Helper()
	waitFor(t, 60*time.Second, "CreateTopics "+name, func() error {
		r, err := adminOf(t, c, b).CreateTopic(ctxT(t, 20*time.Second), 1, 1, nil, name)
		if err == nil && r.Err != nil && !isErr(r.Err, kerr.TopicAlreadyExists) {
			err = r.Err
		}
		return err
	})
}

// TestDynamicQuorum: controller 1 is formatted --standalone (the only
// voter, kraft.version 1), controllers 2 and 3 --no-initial-controllers,
// broker 4 on first start; all find the quorum through
// controller.quorum.bootstrap.servers. kafka-metadata-quorum.sh
// add-controller adds 2 (to the controller, --bootstrap-controller) and 3
// (through the broker, which forwards AddRaftVoter in an Envelope);
// describe --status and --replication show the voters with their directory
// ids and the observers; remove-controller --unregister removes 3 (then
// RemoveRaftVoter and UnregisterController), which becomes an observer; 3 is
// added again and the leader killed: the voter set from the log elects a
// new leader. kafka-features.sh describe shows kraft.version finalized at 1.
func TestDynamicQuorum(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("formats with kgo-broker format")
	}
	c := &mixedCluster{t: t, clusterID: newClusterID()}
	ports := freePorts(t, 4)
	var bootstrap []string
	for _, p := range ports[:3] {
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", p))
	}
	bs := strings.Join(bootstrap, ",")
	ctl := []*mixedNode{
		dynamicNode(t, c, 1, kindKgo, true, ports[0], bs),
		dynamicNode(t, c, 2, kindKgo, true, ports[1], bs),
		dynamicNode(t, c, 3, kindKgo, true, ports[2], bs),
	}
	broker := dynamicNode(t, c, 4, kindKgo, false, ports[3], bs)
	format := func(n *mixedNode, flag string) { formatDynamic(t, c, n, flag) }
	format(ctl[0], "--standalone")
	format(ctl[1], "--no-initial-controllers")
	format(ctl[2], "--no-initial-controllers")
	ctl[0].Start()
	broker.Start()
	c.waitBrokers(3 * readyTimeout())
	b := &Broker{t: t, Addr: broker.Addr}

	st := quorumStatus(t, b)
	if got, want := st["CurrentVoters"], fmt.Sprintf(`[{"id": 1, "directoryId": "%s", "endpoints": ["CONTROLLER://%s"]}]`, ctl[0].dirID(t), ctl[0].Addr); got != want {
		t.Errorf("CurrentVoters %q, want %q", got, want)
	}
	if st["LeaderId"] != "1" {
		t.Errorf("LeaderId %q", st["LeaderId"])
	}
	f := describeFeatures(t, b)["kraft.version"]
	if f["SupportedMinVersion"] != "0" || f["SupportedMaxVersion"] != "1" || f["FinalizedVersionLevel"] != "1" {
		t.Errorf("kraft.version %v, want supported 0-1, finalized 1", f)
	}

	// 2 and 3 start as observers, fetching from the leader they find
	// through the bootstrap servers.
	ctl[1].Start()
	ctl[2].Start()
	waitReplication(t, c, "--bootstrap-server", broker.Addr, map[int32]string{1: "Leader", 2: "Observer", 3: "Observer", 4: "Observer"})

	add := func(n *mixedNode, flag, addr string) { addController(t, n, flag, addr) }
	add(ctl[1], "--bootstrap-controller", ctl[0].Addr)
	add(ctl[2], "--bootstrap-server", broker.Addr)
	waitReplication(t, c, "--bootstrap-controller", ctl[0].Addr, map[int32]string{1: "Leader", 2: "Follower", 3: "Follower", 4: "Observer"})
	st = quorumStatus(t, b)
	var voters []string
	for _, n := range ctl {
		voters = append(voters, fmt.Sprintf(`{"id": %d, "directoryId": "%s", "endpoints": ["CONTROLLER://%s"]}`, n.ID, n.dirID(t), n.Addr))
	}
	if got, want := st["CurrentVoters"], "["+strings.Join(voters, ", ")+"]"; got != want {
		t.Errorf("CurrentVoters %q, want %q", got, want)
	}
	if got := st["CurrentObservers"]; !strings.Contains(got, `"id": 4`) {
		t.Errorf("CurrentObservers %q, want broker 4", got)
	}
	dqCreateTopic(t, c, broker, "dq-three-voters")

	// remove-controller --unregister: RemoveRaftVoter, then
	// UnregisterController (KIP-1223).
	r := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-controller", ctl[0].Addr, "remove-controller",
		"--controller-id", "3", "--controller-directory-id", ctl[2].dirID(t), "--unregister")
	for _, want := range []string{"KRaft controller 3 with directory id " + ctl[2].dirID(t) + "\n", "Removed", "Unregistered", "KRaft controller 3\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("remove-controller: want %q\n%s", want, r)
		}
	}
	waitReplication(t, c, "--bootstrap-server", broker.Addr, map[int32]string{1: "Leader", 2: "Follower", 3: "Observer", 4: "Observer"})
	if f := describeFeatures(t, b)["kraft.version"]; f["FinalizedVersionLevel"] != "1" {
		t.Errorf("kraft.version %v after the changes", f)
	}

	// 3 again, then the leader dies: 2 or 3 leads with the voter set from
	// the log.
	add(ctl[2], "--bootstrap-controller", ctl[0].Addr)
	waitReplication(t, c, "--bootstrap-controller", ctl[0].Addr, map[int32]string{1: "Leader", 2: "Follower", 3: "Follower", 4: "Observer"})
	ctl[0].Kill()
	var leader int32
	waitFor(t, 3*readyTimeout(), "a new leader after controller 1 died", func() (err error) {
		leader, err = quorumLeader(t, broker)
		if err == nil && leader != 2 && leader != 3 {
			err = fmt.Errorf("leader %d", leader)
		}
		return err
	})
	dqCreateTopic(t, c, broker, "dq-after-failover")
	ctl[0].Start()
	want := map[int32]string{1: "Follower", 2: "Follower", 3: "Follower", 4: "Observer"}
	want[leader] = "Leader"
	waitReplication(t, c, "--bootstrap-server", broker.Addr, want)
}

// TestDynamicQuorumMixed: dynamic quorums of kgo-broker and Apache Kafka
// 4.4 controllers, first with a kgo-broker controller formatted
// --standalone, then with a Kafka one (kgo-broker then reads Kafka's
// bootstrap checkpoint and answers the Kafka leader's ApiVersions for its
// kraft.version range). The other two controllers (one of the other kind,
// one kgo-broker) are formatted --no-initial-controllers, join as observers
// and are added with add-controller; then leaders are killed until a Kafka
// controller leads kgo-broker voters (kraft.version 1: replica directory
// ids in Vote, BeginQuorumEpoch and Fetch, the voter set from the log on
// both kinds), until a kgo-broker controller leads again, and until a Kafka
// one leads again. Each leader serves CreateTopics and DescribeQuorum
// through the kgo-broker broker 4.
func TestDynamicQuorumMixed(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("mixed clusters need kgo-broker as KGO_BROKER_BIN")
	}
	for _, kinds := range [][3]nodeKind{{kindKgo, kindKafka, kindKgo}, {kindKafka, kindKgo, kindKgo}} {
		t.Run(fmt.Sprintf("standalone-%s", kinds[0]), func(t *testing.T) { dynamicQuorumMixed(t, kinds) })
	}
}

func dynamicQuorumMixed(t *testing.T, kinds [3]nodeKind) {
	c := &mixedCluster{t: t, clusterID: newClusterID()}
	ports := freePorts(t, 4)
	var bootstrap []string
	for _, p := range ports[:3] {
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", p))
	}
	bs := strings.Join(bootstrap, ",")
	var ctl []*mixedNode
	for i, k := range kinds {
		ctl = append(ctl, dynamicNode(t, c, int32(i+1), k, true, ports[i], bs))
	}
	broker := dynamicNode(t, c, 4, kindKgo, false, ports[3], bs)
	formatDynamic(t, c, ctl[0], "--standalone")
	formatDynamic(t, c, ctl[1], "--no-initial-controllers")
	formatDynamic(t, c, ctl[2], "--no-initial-controllers")
	for _, n := range c.nodes {
		n.Start()
	}
	c.waitBrokers(3 * readyTimeout())
	waitReplication(t, c, "--bootstrap-server", broker.Addr, map[int32]string{1: "Leader", 2: "Observer", 3: "Observer", 4: "Observer"})
	addController(t, ctl[1], "--bootstrap-controller", ctl[0].Addr)
	addController(t, ctl[2], "--bootstrap-server", broker.Addr)
	waitReplication(t, c, "--bootstrap-server", broker.Addr, map[int32]string{1: "Leader", 2: "Follower", 3: "Follower", 4: "Observer"})
	dqCreateTopic(t, c, broker, "dqm-first-leader")

	checkVoters := func(leader int32) {
		t.Helper()
		want := map[int32]string{1: "Follower", 2: "Follower", 3: "Follower", 4: "Observer"}
		want[leader] = "Leader"
		waitReplication(t, c, "--bootstrap-server", broker.Addr, want)
	}
	leader := failoverUntil(t, c, broker, kindKgo, kindKafka)
	checkVoters(leader)
	dqCreateTopic(t, c, broker, "dqm-kafka-leader")
	leader = failoverUntil(t, c, broker, kindKafka, kindKgo)
	checkVoters(leader)
	dqCreateTopic(t, c, broker, "dqm-kgo-leader")
	// And a Kafka leader again (with a Kafka controller formatted
	// --standalone, the first failover found it leading already).
	leader = failoverUntil(t, c, broker, kindKgo, kindKafka)
	checkVoters(leader)
	dqCreateTopic(t, c, broker, "dqm-kafka-again")
}

// TestDynamicQuorumInitialControllersAutoJoin: a quorum of a kgo-broker
// and an Apache Kafka 4.4 controller formatted with the same
// --initial-controllers (each node's directory id taken from it), and a
// third, kgo-broker controller formatted --no-initial-controllers with
// controller.quorum.auto.join.enable=true, which adds itself as a voter
// (KIP-853's auto-join: AddRaftVoter from the observer once caught up).
// Removed with remove-controller, it adds itself back, as Kafka's does.
// With a Kafka 4.4 controller auto-joining a kgo-broker-led quorum in the
// second run.
func TestDynamicQuorumInitialControllersAutoJoin(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("mixed clusters need kgo-broker as KGO_BROKER_BIN")
	}
	for _, kinds := range [][3]nodeKind{{kindKgo, kindKafka, kindKgo}, {kindKgo, kindKgo, kindKafka}} {
		t.Run(fmt.Sprintf("joiner-%s", kinds[2]), func(t *testing.T) { initialControllersAutoJoin(t, kinds) })
	}
}

func initialControllersAutoJoin(t *testing.T, kinds [3]nodeKind) {
	c := &mixedCluster{t: t, clusterID: newClusterID()}
	ports := freePorts(t, 4)
	var bootstrap []string
	for _, p := range ports[:3] {
		bootstrap = append(bootstrap, fmt.Sprintf("127.0.0.1:%d", p))
	}
	bs := strings.Join(bootstrap, ",")
	var ctl []*mixedNode
	for i, k := range kinds {
		ctl = append(ctl, dynamicNode(t, c, int32(i+1), k, true, ports[i], bs))
	}
	broker := dynamicNode(t, c, 4, kindKgo, false, ports[3], bs)
	f, err := os.OpenFile(ctl[2].props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "controller.quorum.auto.join.enable=true")
	f.Close()

	// Two initial voters: directory ids chosen before the format.
	dirs := []string{newClusterID(), newClusterID()}
	initial := fmt.Sprintf("1@%s:%s,2@%s:%s", ctl[0].Addr, dirs[0], ctl[1].Addr, dirs[1])
	for _, n := range ctl[:2] {
		formatWith(t, c, n, "--initial-controllers", initial)
	}
	formatDynamic(t, c, ctl[2], "--no-initial-controllers")
	for i, n := range ctl[:2] {
		if got := n.dirID(t); got != dirs[i] {
			t.Fatalf("%s controller %d formatted with directory id %s, want %s from --initial-controllers", n.Kind, n.ID, got, dirs[i])
		}
	}
	for _, n := range c.nodes {
		n.Start()
	}
	c.waitBrokers(3 * readyTimeout())
	// 3 joins by itself.
	waitFor(t, 90*time.Second, "controller 3 to auto-join as a voter", func() error {
		rows, err := quorumReplication(t, "--bootstrap-server", broker.Addr)
		if err != nil {
			return err
		}
		if r := rows["3"]; r.Status != "Follower" && r.Status != "Leader" {
			return fmt.Errorf("controller 3 is %q (rows %v)", r.Status, rows)
		}
		if r := rows["3"]; r.Dir != ctl[2].dirID(t) {
			return fmt.Errorf("controller 3 joined with directory id %s, want %s", r.Dir, ctl[2].dirID(t))
		}
		return nil
	})
	b := &Broker{t: t, Addr: broker.Addr}
	if f := describeFeatures(t, b)["kraft.version"]; f["FinalizedVersionLevel"] != "1" {
		t.Errorf("kraft.version %v, want finalized 1", f)
	}
	dqCreateTopic(t, c, broker, "dq-auto-joined")

	// Removed, it comes back: auto-join keeps a controller in the voter
	// set while it is enabled.
	leader, err := quorumLeader(t, broker)
	if err != nil {
		t.Fatal(err)
	}
	via := c.node(leader)
	if leader == 3 {
		via = ctl[0]
	}
	MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-controller", via.Addr, "remove-controller",
		"--controller-id", "3", "--controller-directory-id", ctl[2].dirID(t))
	waitFor(t, 90*time.Second, "controller 3 to add itself back", func() error {
		rows, err := quorumReplication(t, "--bootstrap-server", broker.Addr)
		if err != nil {
			return err
		}
		if r := rows["3"]; r.Status != "Follower" && r.Status != "Leader" {
			return fmt.Errorf("controller 3 is %q", r.Status)
		}
		return nil
	})
	dqCreateTopic(t, c, broker, "dq-rejoined")
}

// formatWith formats a node as formatDynamic does, with a flag and its value.
func formatWith(t *testing.T, c *mixedCluster, n *mixedNode, flag, value string) {
	t.Helper()
	bin, args := brokerBin, []string{"format", "-t", c.clusterID, "-c", n.props, flag, value}
	if n.Kind == kindKafka {
		bin = kafkaReference()
	}
	if r := RunCommand(t, RunOpts{Hermetic: true}, bin, args...); r.ExitCode != 0 {
		t.Fatalf("format %s node %d %s %s:\n%s", n.Kind, n.ID, flag, value, r)
	}
}
