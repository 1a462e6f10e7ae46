//go:build integration

package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// finalizedLevel is a finalized feature level as ApiVersions v3+ reports it
// (0 when not finalized).
func finalizedLevel(t *testing.T, b *Broker, name string) (int16, error) {
	t.Helper()
	cl := b.Client()
	defer cl.Close()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "kgo-it", "1.0"
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		return 0, err
	}
	for _, f := range resp.FinalizedFeatures {
		if f.Name == name {
			return f.MaxVersionLevel, nil
		}
	}
	return 0, nil
}

// waitFinalized waits until ApiVersions reports the level.
func waitFinalized(t *testing.T, b *Broker, name string, want int16) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%s %d in ApiVersions", name, want), func() error {
		got, err := finalizedLevel(t, b, name)
		if err == nil && got != want {
			err = fmt.Errorf("finalized %d", got)
		}
		return err
	})
}

var describeField = regexp.MustCompile(`([A-Za-z]+): (\S+)`)

// describeFeatures runs `kafka-features.sh describe` and returns each
// feature's fields (FeatureCommand prints one line per supported feature,
// its columns padded: "Feature: <name>  SupportedMinVersion: <v>
// SupportedMaxVersion: <v>  FinalizedVersionLevel: <v>  Epoch: <n>", levels
// of metadata.version as release names).
func describeFeatures(t *testing.T, b *Broker) map[string]map[string]string {
	t.Helper()
	r := MustKafkaTool(t, RunOpts{}, "kafka-features.sh", "--bootstrap-server", b.Addr, "describe")
	out := map[string]map[string]string{}
	for _, l := range lines(r.Stdout) {
		fields := map[string]string{}
		for _, m := range describeField.FindAllStringSubmatch(l, -1) {
			fields[m[1]] = m[2]
		}
		if fields["Feature"] == "" {
			t.Fatalf("describe: no Feature in %q\n%s", l, r)
		}
		out[fields["Feature"]] = fields
	}
	return out
}

func features(t *testing.T, b *Broker, args ...string) ToolResult {
	t.Helper()
	return KafkaTool(t, RunOpts{}, "kafka-features.sh", append([]string{"--bootstrap-server", b.Addr}, args...)...)
}

// TestFeatures formats a node at metadata.version 4.3 (kgo-broker format
// --release-version), then drives it with Kafka's kafka-features.sh:
// describe, a dry-run and a real upgrade to 4.4 (UpdateFeatures, forwarded
// by the broker to the controller), a refused unsafe downgrade and a
// feature downgrade and upgrade.
func TestFeatures(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := NewBroker(t, BrokerOptions{})
	if r := RunCommand(t, RunOpts{Hermetic: true}, brokerBin, "format", "-t", newClusterID(), "-c", b.Props, "--release-version", "4.3"); r.ExitCode != 0 ||
		!strings.Contains(r.Stdout, "with metadata.version 4.3-IV0.") {
		t.Fatalf("format:\n%s", r)
	}
	b.Start()
	b.WaitReady()

	d := describeFeatures(t, b)
	mv := d["metadata.version"]
	if mv["SupportedMinVersion"] != "3.3-IV3" || mv["SupportedMaxVersion"] != "4.4-IV2" || mv["FinalizedVersionLevel"] != "4.3-IV0" {
		t.Fatalf("metadata.version: %v", mv)
	}
	if g := d["group.version"]; g["FinalizedVersionLevel"] != "1" || g["SupportedMaxVersion"] != "1" {
		t.Errorf("group.version: %v", g)
	}
	if tv := d["transaction.version"]; tv["FinalizedVersionLevel"] != "2" || tv["SupportedMaxVersion"] != "2" {
		t.Errorf("transaction.version: %v", tv)
	}

	if r := features(t, b, "upgrade", "--metadata", "4.4", "--dry-run"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "metadata.version can be upgraded to 33.") {
		t.Fatalf("dry run:\n%s", r)
	}
	if got := describeFeatures(t, b)["metadata.version"]["FinalizedVersionLevel"]; got != "4.3-IV0" {
		t.Fatalf("after the dry run: %s", got)
	}
	if r := features(t, b, "upgrade", "--metadata", "4.4"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "metadata.version was upgraded to 33.") {
		t.Fatalf("upgrade:\n%s", r)
	}
	waitFinalized(t, b, "metadata.version", 33)
	if got := describeFeatures(t, b)["metadata.version"]["FinalizedVersionLevel"]; got != "4.4-IV2" {
		t.Fatalf("after the upgrade: %s", got)
	}

	// 4.4-IV1 and 4.4-IV2 changed the metadata: no safe way back.
	r := features(t, b, "downgrade", "--metadata", "4.3")
	if r.ExitCode == 0 || !strings.Contains(r.Stdout, "Could not downgrade metadata.version to 30. The update failed for all features since the following feature had an error: ") ||
		!strings.Contains(r.Stdout, "Unsupported metadata.version downgrade from 33 to 30. Refusing to perform the requested downgrade because it might delete metadata information.") {
		t.Fatalf("downgrade:\n%s", r)
	}
	if r := features(t, b, "downgrade", "--feature", "transaction.version=1"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "transaction.version was downgraded to 1.") {
		t.Fatalf("feature downgrade:\n%s", r)
	}
	if r := features(t, b, "upgrade", "--feature", "transaction.version=2"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "transaction.version was upgraded to 2.") {
		t.Fatalf("feature upgrade:\n%s", r)
	}
	waitFinalized(t, b, "transaction.version", 2)
	// Eligible leader replicas (KIP-966): finalized by the format (4.1-IV0
	// and later), safely downgraded and upgraded again.
	if e := describeFeatures(t, b)["eligible.leader.replicas.version"]; e["FinalizedVersionLevel"] != "1" || e["SupportedMaxVersion"] != "1" {
		t.Errorf("eligible.leader.replicas.version: %v", e)
	}
	if r := features(t, b, "downgrade", "--feature", "eligible.leader.replicas.version=0"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "eligible.leader.replicas.version was downgraded to 0.") {
		t.Fatalf("ELR downgrade:\n%s", r)
	}
	waitFinalized(t, b, "eligible.leader.replicas.version", 0)
	if r := features(t, b, "upgrade", "--feature", "eligible.leader.replicas.version=1"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "eligible.leader.replicas.version was upgraded to 1.") {
		t.Fatalf("ELR upgrade:\n%s", r)
	}
	waitFinalized(t, b, "eligible.leader.replicas.version", 1)
	// share.version: 1 at 4.3 (level 2, the share groups' dead-letter queue
	// of KIP-1191, is the default from 4.4-IV0), upgraded to 2.
	if sv := describeFeatures(t, b)["share.version"]; sv["SupportedMaxVersion"] != "2" || sv["FinalizedVersionLevel"] != "1" {
		t.Errorf("share.version: %v", sv)
	}
	if r := features(t, b, "upgrade", "--feature", "share.version=2"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "share.version was upgraded to 2.") {
		t.Fatalf("share.version upgrade:\n%s", r)
	}
	waitFinalized(t, b, "share.version", 2)
	// The node keeps working after the upgrade: its records are written at
	// 4.4-IV2's versions.
	createTopic(t, b, "after-upgrade", 2, nil)
	waitTopicReady(t, b, "after-upgrade", 2)
}

// TestFeaturesCluster upgrades a cluster formatted at 4.0 (one
// controller-only node, two broker-only nodes): through a broker, which
// forwards UpdateFeatures to the controller, and with --bootstrap-controller
// straight to it; every node then reports the new levels.
func TestFeaturesCluster(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Controllers: 1, Brokers: 2, FormatArgs: []string{"--release-version", "4.0"}})
	b := c.Brokers()[0].Broker
	ctl := c.Controllers()[0]
	for _, n := range c.Brokers() {
		if got := describeFeatures(t, n.Broker)["metadata.version"]["FinalizedVersionLevel"]; got != "4.0-IV3" {
			t.Fatalf("node %d: metadata.version %s", n.ID, got)
		}
	}
	if r := features(t, b, "upgrade", "--metadata", "4.3"); r.ExitCode != 0 || !strings.Contains(r.Stdout, "metadata.version was upgraded to 30.") {
		t.Fatalf("upgrade through a broker:\n%s", r)
	}
	r := KafkaTool(t, RunOpts{}, "kafka-features.sh", "--bootstrap-controller", ctl.CtrlAddr, "upgrade", "--metadata", "4.4")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "metadata.version was upgraded to 33.") {
		t.Fatalf("upgrade through the controller:\n%s", r)
	}
	for _, n := range c.Brokers() {
		waitFinalized(t, n.Broker, "metadata.version", 33)
	}
	r = KafkaTool(t, RunOpts{}, "kafka-features.sh", "--bootstrap-controller", ctl.CtrlAddr, "describe")
	if r.ExitCode != 0 || !regexp.MustCompile(`Feature: metadata.version\s+SupportedMinVersion: 3.3-IV3\s+SupportedMaxVersion: 4.4-IV2\s+FinalizedVersionLevel: 4.4-IV2`).MatchString(r.Stdout) {
		t.Fatalf("describe on the controller:\n%s", r)
	}
	// The brokers keep registering and serving at the new level: a restart
	// re-registers with RegisterBrokerRecord v4.
	n := c.Brokers()[1]
	n.Stop(30 * time.Second)
	n.Start()
	c.WaitNodeReady(n, readyTimeout())
	if _, err := b.Admin().CreateTopic(ctxT(t, 30*time.Second), 3, 2, nil, "after-cluster-upgrade"); err != nil {
		t.Fatal(err)
	}
	waitLeaders(t, c, "after-cluster-upgrade", 3)
}

// TestMixedKafkaControllerKgoBroker runs a kgo-broker broker under an Apache
// Kafka 4.4 controller formatted by kafka-storage.sh at its defaults
// (4.4-IV2, share.version 2, streams.version 1): the broker decodes what
// Kafka's controller writes (RegisterBrokerRecord v4,
// BrokerRegistrationChangeRecord v3, ...), registers with the ranges it
// supports, gets unfenced and serves a topic.
func TestMixedKafkaControllerKgoBroker(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("needs kgo-broker as the broker")
	}
	ports := freePorts(t, 2)
	ctlAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	clusterID := newClusterID()
	dir := t.TempDir()
	ctlProps := filepath.Join(dir, "controller.properties")
	if err := os.WriteFile(ctlProps, []byte(fmt.Sprintf(`process.roles=controller
node.id=1
controller.quorum.voters=1@%s
listeners=CONTROLLER://%s
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%s
`, ctlAddr, ctlAddr, filepath.Join(dir, "controller"))), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(repoRoot, "integration", "testdata", "kafka-reference-broker")
	if r := RunCommand(t, RunOpts{Hermetic: true}, ref, "format", "-t", clusterID, "-c", ctlProps); r.ExitCode != 0 {
		t.Fatalf("kafka-storage.sh format:\n%s", r)
	}
	ctl := exec.Command(ref, ctlProps)
	ctl.Env = append(hermeticEnv(), "KAFKA_HEAP_OPTS=-Xmx512M")
	ctlLog, err := os.Create(filepath.Join(dir, "controller.log"))
	if err != nil {
		t.Fatal(err)
	}
	ctl.Stdout, ctl.Stderr = ctlLog, ctlLog
	ctl.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := ctl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-ctl.Process.Pid, syscall.SIGKILL)
		ctl.Wait()
		ctlLog.Close()
		if t.Failed() {
			b, _ := os.ReadFile(ctlLog.Name())
			t.Logf("Kafka controller log:\n%s", b)
		}
	})

	b := NewBroker(t, BrokerOptions{Env: []string{"CLUSTER_ID=" + clusterID}})
	if err := os.WriteFile(b.Props, []byte(fmt.Sprintf(`process.roles=broker
node.id=2
controller.quorum.voters=1@%s
listeners=PLAINTEXT://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%s
offsets.topic.replication.factor=1
`, ctlAddr, b.Port, b.Port, b.DataDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Start()
	waitFor(t, 3*readyTimeout(), "the kgo-broker broker to be unfenced by the Kafka controller", func() error {
		md, err := metadataFrom(b.Addr)
		if err != nil {
			return err
		}
		if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 2 {
			return fmt.Errorf("brokers %+v", md.Brokers)
		}
		return nil
	})
	if got := describeFeatures(t, b)["metadata.version"]["FinalizedVersionLevel"]; got != "4.4-IV2" {
		t.Fatalf("metadata.version %s", got)
	}
	if _, err := b.Admin().CreateTopic(ctxT(t, 30*time.Second), 2, 1, nil, "mixed"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "leaders of mixed", func() error {
		md, err := metadataFrom(b.Addr, "mixed")
		if err != nil || len(md.Topics) != 1 || len(md.Topics[0].Partitions) != 2 {
			return fmt.Errorf("%v %+v", err, md)
		}
		for _, p := range md.Topics[0].Partitions {
			if p.Leader != 2 {
				return fmt.Errorf("partition %d leader %d", p.Partition, p.Leader)
			}
		}
		return nil
	})
	cl := b.Client(kgo.DefaultProduceTopic("mixed"))
	defer cl.Close()
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recordsFor("mixed", 3)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consumeAll(t, b, "mixed", 3, 30*time.Second); len(got) != 3 {
		t.Fatalf("consumed %d", len(got))
	}
	// Kafka's defaults are finalized, and the kgo-broker broker supports them.
	feats := describeFeatures(t, b)
	for name, want := range map[string]string{"share.version": "2", "streams.version": "1", "eligible.leader.replicas.version": "1"} {
		if f := feats[name]; f["FinalizedVersionLevel"] != want || f["SupportedMaxVersion"] != want {
			t.Errorf("%s: %v, want finalized and supported up to %s", name, f, want)
		}
	}
}

// TestMixedKgoControllerKafkaBroker runs an Apache Kafka 4.4 broker under a
// kgo-broker controller at 4.4-IV2: it registers, heartbeats with
// BrokerHeartbeat v2 (the cordoned log dirs of 4.3-IV0, which the
// controller records), gets unfenced and reports the finalized features;
// the admin requests it forwards in an Envelope (CreateTopics here; more in
// mixed_test.go) are served by kgo-broker's controller.
func TestMixedKgoControllerKafkaBroker(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	if strings.Contains(brokerBin, "kafka-reference-broker") {
		t.Skip("needs kgo-broker as the controller")
	}
	clusterID := newClusterID()
	c := NewBroker(t, BrokerOptions{Env: []string{"CLUSTER_ID=" + clusterID}})
	ctlAddr := fmt.Sprintf("127.0.0.1:%d", c.CtrlPort)
	if err := os.WriteFile(c.Props, []byte(fmt.Sprintf(`process.roles=controller
node.id=1
controller.quorum.voters=1@%s
listeners=CONTROLLER://%s
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%s
`, ctlAddr, ctlAddr, c.DataDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Start()

	dir := t.TempDir()
	port := freePorts(t, 1)[0]
	props := filepath.Join(dir, "broker.properties")
	if err := os.WriteFile(props, []byte(fmt.Sprintf(`process.roles=broker
node.id=2
controller.quorum.voters=1@%s
listeners=PLAINTEXT://127.0.0.1:%d
advertised.listeners=PLAINTEXT://127.0.0.1:%d
inter.broker.listener.name=PLAINTEXT
controller.listener.names=CONTROLLER
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%s
`, ctlAddr, port, port, filepath.Join(dir, "data"))), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(repoRoot, "integration", "testdata", "kafka-reference-broker")
	kb := exec.Command(ref, props)
	kb.Env = append(hermeticEnv(), "CLUSTER_ID="+clusterID, "KAFKA_HEAP_OPTS=-Xmx512M")
	logf, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		t.Fatal(err)
	}
	kb.Stdout, kb.Stderr = logf, logf
	kb.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := kb.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-kb.Process.Pid, syscall.SIGKILL)
		kb.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("Kafka broker log:\n%s", b)
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitFor(t, 3*readyTimeout(), "the Kafka broker to be unfenced by the kgo-broker controller", func() error {
		md, err := metadataFrom(addr)
		if err != nil {
			return err
		}
		if len(md.Brokers) != 1 || md.Brokers[0].NodeID != 2 {
			return fmt.Errorf("brokers %+v", md.Brokers)
		}
		return nil
	})
	d := describeFeatures(t, &Broker{Addr: addr})
	if mv := d["metadata.version"]; mv["FinalizedVersionLevel"] != "4.4-IV2" {
		t.Fatalf("metadata.version %v", mv)
	}
	if r, err := kadm.NewClient(kafkaBrokerClient(t, addr)).CreateTopic(ctxT(t, 30*time.Second), 1, 1, nil, "enveloped"); err != nil || r.Err != nil {
		t.Fatalf("CreateTopics through the Kafka broker: %v %v", err, r.Err)
	}
	if b, err := os.ReadFile(logf.Name()); err != nil || strings.Contains(string(b), "UnsupportedVersionException") {
		t.Fatalf("the Kafka broker hit an unsupported version:\n%s", b)
	}
}

func kafkaBrokerClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
