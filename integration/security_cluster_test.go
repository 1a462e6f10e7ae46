//go:build integration

package integration

// A 3-node cluster whose own connections are secured: the CONTROLLER
// listener is SSL with client certificates required (raft, broker
// registration and heartbeats, forwarded admin requests), and the
// inter-broker listener INTERNAL is SASL_SSL with SCRAM-SHA-512 for a
// bootstrap user written by format --add-scram (replica fetchers,
// transaction markers, inter-broker clients). Clients use INTERNAL too:
// franz-go and Kafka's console consumer with SCRAM.

import (
	"crypto/tls"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security/securitytest"
)

func TestSecurityCluster(t *testing.T) {
	p := newTestPKI(t)
	clientCert, err := tls.LoadX509KeyPair(p.server.CertPEM, p.server.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ctrlTLS := p.tlsConfig(t, false)
	ctrlTLS.Certificates = []tls.Certificate{clientCert}
	pw := securitytest.Password
	ov := map[string]string{
		"listener.security.protocol.map": "CONTROLLER:SSL,PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
		// CONTROLLER: SSL, mutual. The node's own connections to it use the
		// same keystore as their client certificate.
		"listener.name.controller.ssl.keystore.location":   p.server.KeystoreJKS,
		"listener.name.controller.ssl.keystore.password":   pw,
		"listener.name.controller.ssl.key.password":        pw,
		"listener.name.controller.ssl.truststore.location": p.server.TruststoreJKS,
		"listener.name.controller.ssl.truststore.password": pw,
		"listener.name.controller.ssl.client.auth":         "required",
		// INTERNAL: SASL_SSL with SCRAM-SHA-512, host names verified (the
		// certificate names 127.0.0.1-16).
		"listener.name.internal.ssl.keystore.type":              "PKCS12",
		"listener.name.internal.ssl.keystore.location":          p.server.KeystoreP12,
		"listener.name.internal.ssl.keystore.password":          pw,
		"listener.name.internal.ssl.truststore.type":            "PEM",
		"listener.name.internal.ssl.truststore.location":        p.server.TruststorePEM,
		"listener.name.internal.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"default.replication.factor":                            "3",
		"min.insync.replicas":                                   "2",
		"offsets.topic.replication.factor":                      "3",
		"transaction.state.log.replication.factor":              "3",
		"transaction.state.log.min.isr":                         "2",
	}
	c := StartCluster(t, ClusterOptions{
		Combined: 3, Overrides: ov, InterBrokerListener: "INTERNAL",
		ControllerDial: &protocol.ClientOptions{TLS: ctrlTLS},
		FormatArgs: []string{"--add-scram", "SCRAM-SHA-512=[name=broker,password=broker-secret]",
			"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]"},
	})
	var inter []string
	for _, n := range c.Brokers() {
		inter = append(inter, n.InterAddr)
	}
	alice := []kgo.Opt{kgo.DialTLSConfig(p.tlsConfig(t, false)), kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())}

	// CreateTopics is forwarded to the active controller over SSL.
	adm := c.Node(1).Admin()
	ctx := ctxT(t, 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "sec-cluster"); err != nil {
		t.Fatal(err)
	}
	// Produced with acks=all through INTERNAL: the followers fetch over
	// SASL_SSL, or the high watermark never moves.
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(inter...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, alice...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 30; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sec-cluster", Value: []byte(fmt.Sprintf("r%d", i))}).FirstErr(); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	waitFor(t, 30*time.Second, "every replica in the ISR", func() error {
		td, err := adm.ListTopics(ctxT(t, 5*time.Second), "sec-cluster")
		if err != nil {
			return err
		}
		for _, pd := range td["sec-cluster"].Partitions {
			if len(pd.ISR) != 3 {
				return fmt.Errorf("partition %d ISR %v", pd.Partition, pd.ISR)
			}
		}
		return nil
	})
	for _, n := range c.Brokers() {
		if got := sumOffsets(endOffsets(t, n.Broker, "sec-cluster")); got != 30 {
			t.Fatalf("node %d: %d records", n.ID, got)
		}
	}
	// A transactional producer: the markers go to the partition leaders
	// over the inter-broker listener.
	tcl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(inter...), kgo.TransactionalID("sec-txn"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, alice...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer tcl.Close()
	if err := tcl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		if err := tcl.ProduceSync(ctx, &kgo.Record{Topic: "sec-cluster", Value: []byte("t")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := tcl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	recs := consumeAll(t, c.Node(2).Broker, "sec-cluster", 36, 30*time.Second, append([]kgo.Opt{kgo.SeedBrokers(inter[1]),
		kgo.FetchIsolationLevel(kgo.ReadCommitted())}, alice...)...)
	if len(recs) != 36 {
		t.Fatalf("consumed %d records, want 36", len(recs))
	}

	// Kafka's console consumer over INTERNAL with SCRAM-SHA-512.
	if requireKafkaToolsOK() {
		props := p.write(t, "alice512.properties", fmt.Sprintf("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"+
			`sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="alice-secret";`+
			"\nssl.truststore.location=%s\nssl.truststore.password=%s\n", p.server.TruststoreJKS, pw))
		r := MustKafkaTool(t, RunOpts{}, "kafka-console-consumer.sh", "--bootstrap-server", strings.Join(inter, ","), "--command-config", props,
			"--topic", "sec-cluster", "--from-beginning", "--max-messages", "36", "--timeout-ms", "30000")
		if !strings.Contains(r.Stderr, "Processed a total of 36 messages") {
			t.Fatalf("console consumer over SASL_SSL on the cluster:\n%s", r)
		}
	}

	// A node whose controller client certificate is missing cannot join:
	// the CONTROLLER listener requires one.
	cl2, err := protocol.DialOptions(ctxT(t, 5*time.Second), c.Node(1).CtrlAddr, protocol.ClientOptions{TLS: p.tlsConfig(t, false)})
	if err == nil {
		cl2.Close()
		t.Fatal("a controller connection without a client certificate was served")
	}
}

// requireKafkaToolsOK reports whether Kafka's tools are installed (without
// skipping the test).
func requireKafkaToolsOK() bool {
	return exec.Command(filepath.Join(repoRoot, "scripts", "kafka-tool"), "--installed").Run() == nil
}
