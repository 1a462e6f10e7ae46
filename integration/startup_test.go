//go:build integration

package integration

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// checkMetaProperties checks a meta.properties v1 as `kafka-storage.sh format`
// writes it: version=1, cluster.id, node.id=1, directory.id.
func checkMetaProperties(t *testing.T, m map[string]string) {
	t.Helper()
	if m["version"] != "1" {
		t.Errorf("meta.properties version=%q, want 1 (%v)", m["version"], m)
	}
	if !uuidRE.MatchString(m["cluster.id"]) {
		t.Errorf("meta.properties cluster.id=%q is not a base64url uuid (%v)", m["cluster.id"], m)
	}
	if m["node.id"] != "1" {
		t.Errorf("meta.properties node.id=%q, want 1 (%v)", m["node.id"], m)
	}
	if !uuidRE.MatchString(m["directory.id"]) || m["directory.id"] == "AAAAAAAAAAAAAAAAAAAAAA" {
		t.Errorf("meta.properties directory.id=%q is not a base64url uuid (%v)", m["directory.id"], m)
	}
}

// TestStartupNoArgs starts the binary with no arguments in an empty working
// directory: the embedded single-node defaults (9092/9093, data under ./data),
// formatting on first start. SIGTERM exits 0 and the next start is clean.
// Skipped when 9092 or 9093 is taken.
func TestStartupNoArgs(t *testing.T) {
	if !portFree(9092) || !portFree(9093) {
		t.Skip("SKIP: port 9092 or 9093 is in use; the no-argument start needs both")
	}
	b := StartBroker(t, BrokerOptions{NoConfig: true})
	if b.Props != "" || len(b.Args()) != 0 {
		t.Fatalf("started with arguments %q", b.Args())
	}
	meta := b.MetaProperties() // <cwd>/data/meta.properties
	checkMetaProperties(t, meta)

	// Metadata advertises localhost:9092 and the cluster id from meta.properties.
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), b.Client())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Brokers) != 1 || resp.Brokers[0].Host != "localhost" || resp.Brokers[0].Port != 9092 {
		t.Errorf("Metadata brokers %+v, want node 1 at localhost:9092", resp.Brokers)
	}
	if resp.ClusterID == nil || *resp.ClusterID != meta["cluster.id"] {
		t.Errorf("Metadata ClusterID %v, want %s", resp.ClusterID, meta["cluster.id"])
	}

	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0 (broker log at the end of the test output)", code)
	}
	if _, err := os.Stat(filepath.Join(b.DataDir, ".kafka_cleanshutdown")); err != nil {
		t.Errorf("no clean-shutdown marker after SIGTERM: %v", err)
	}

	// Second start on the same directory: same identity, ready again.
	b.Start()
	b.WaitReady()
	again := b.MetaProperties()
	if again["cluster.id"] != meta["cluster.id"] || again["directory.id"] != meta["directory.id"] {
		t.Errorf("meta.properties changed across a restart: %v -> %v", meta, again)
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d after the second SIGTERM, want 0 (broker log at the end of the test output)", code)
	}
}

// TestRandomUUID: `kgo-broker random-uuid` prints a fresh 22-character base64url
// uuid, like `kafka-storage.sh random-uuid`.
func TestRandomUUID(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		r := RunCommand(t, RunOpts{Timeout: 30 * time.Second, Hermetic: true}, brokerBin, "random-uuid")
		if r.ExitCode != 0 {
			t.Fatalf("random-uuid failed:\n%s", r)
		}
		id := strings.TrimSuffix(r.Stdout, "\n")
		if !uuidRE.MatchString(id) || strings.HasPrefix(id, "-") || strings.Contains(id, "\n") {
			t.Fatalf("random-uuid printed %q, want one 22-character base64url id", r.Stdout)
		}
		raw, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(raw) != 16 {
			t.Fatalf("random-uuid %q does not decode to 16 bytes: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("random-uuid repeated %q", id)
		}
		seen[id] = true
	}
}

// TestFormat: `kgo-broker format -t <id> -c <file>` writes meta.properties, a
// second format fails with "already formatted", and the broker then starts with
// that cluster id.
func TestFormat(t *testing.T) {
	t.Parallel()
	b := NewBroker(t, BrokerOptions{})
	r := RunCommand(t, RunOpts{Timeout: 30 * time.Second, Hermetic: true}, brokerBin, "random-uuid")
	id := strings.TrimSpace(r.Stdout)
	if r.ExitCode != 0 || !uuidRE.MatchString(id) {
		t.Fatalf("random-uuid:\n%s", r)
	}

	r = RunCommand(t, RunOpts{Timeout: 30 * time.Second, Dir: b.Dir, Hermetic: true}, brokerBin, "format", "-t", id, "-c", b.Props)
	if r.ExitCode != 0 {
		t.Fatalf("format failed:\n%s", r)
	}
	if !strings.Contains(r.Stdout, "Formatting ") || !strings.Contains(r.Stdout, b.DataDir) {
		t.Errorf("format output %q: want 'Formatting ... %s ...'", r.Stdout, b.DataDir)
	}
	meta := b.MetaProperties()
	checkMetaProperties(t, meta)
	if meta["cluster.id"] != id {
		t.Errorf("meta.properties cluster.id=%q, want %q", meta["cluster.id"], id)
	}

	r = RunCommand(t, RunOpts{Timeout: 30 * time.Second, Dir: b.Dir, Hermetic: true}, brokerBin, "format", "-t", id, "-c", b.Props)
	if r.ExitCode == 0 {
		t.Fatalf("second format succeeded; want a failure:\n%s", r)
	}
	if !strings.Contains(r.Stdout+r.Stderr, "already formatted") {
		t.Errorf("second format does not say 'already formatted':\n%s", r)
	}

	b.Start()
	b.WaitReady()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctxT(t, 10*time.Second), b.Client())
	if err != nil {
		t.Fatal(err)
	}
	if resp.ClusterID == nil || *resp.ClusterID != id {
		t.Errorf("Metadata ClusterID %v, want the formatted %s", resp.ClusterID, id)
	}
}

// TestUnknownConfigKey: keys Kafka does not know (a real deployment's
// reporter, vendor and client settings) do not stop the start, from
// server.properties, --override and KAFKA_* alike, and a shell's JVM and
// client variables (KAFKA_HEAP_OPTS, KAFKA_OPTS, KAFKA_BOOTSTRAP_SERVERS)
// do not either: Apache Kafka accepts them, and kgo-broker warns about each
// unknown key once. A bad value of a known key still stops it, naming the
// key; --strict-config refuses unknown keys.
func TestUnknownConfigKey(t *testing.T) {
	t.Parallel()
	kgo := !strings.Contains(brokerBin, "kafka-reference-broker")
	t.Run("accepted", func(t *testing.T) {
		b := NewBroker(t, BrokerOptions{
			Overrides: map[string]string{"kgo.it.no.such.key": "1"},
			Env:       []string{"KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:9092", "KAFKA_HEAP_OPTS=-Xmx512M", "KAFKA_OPTS=-Dkgo.it=1"},
		})
		f, err := os.OpenFile(b.Props, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("metric.reporters=\nconfluent.metrics.reporter.bootstrap.servers=127.0.0.1:9092\nconfluent.support.customer.id=anonymous\nkgo.it.bad.prop.key=1\n")
		f.Close()
		b.Start()
		b.WaitReady()
		if !kgo {
			return
		}
		log := b.Log()
		for _, k := range []string{"kgo.it.no.such.key", "kgo.it.bad.prop.key", "confluent.metrics.reporter.bootstrap.servers", "confluent.support.customer.id", "bootstrap.servers"} {
			warn := "The configuration '" + k + "' was supplied but isn't a known config."
			if n := strings.Count(log, warn); n != 1 {
				t.Errorf("%q logged %d times, want once (broker log at the end of the test output)", warn, n)
			}
		}
		if strings.Contains(log, "heap.opts") || strings.Contains(log, "'opts'") {
			t.Errorf("KAFKA_HEAP_OPTS / KAFKA_OPTS were taken for server configs (broker log at the end of the test output)")
		}
	})
	t.Run("bad value of a known key", func(t *testing.T) {
		b := NewBroker(t, BrokerOptions{Overrides: map[string]string{"num.partitions": "many", "kgo.it.no.such.key": "1"}})
		b.Start()
		if code := b.WaitExit(3 * readyTimeout()); code == 0 {
			t.Errorf("exit code 0 with num.partitions=many, want non-zero")
		}
		if !strings.Contains(b.Log(), "num.partitions") {
			t.Errorf("the output does not name num.partitions (broker log at the end of the test output)")
		}
	})
	if !kgo {
		return // --strict-config is kgo-broker's
	}
	t.Run("strict", func(t *testing.T) {
		b := NewBroker(t, BrokerOptions{Overrides: map[string]string{"kgo.it.no.such.key": "1"}, Env: []string{"KGO_STRICT_CONFIG=true"}})
		b.Start()
		if code := b.WaitExit(15 * time.Second); code == 0 {
			t.Errorf("exit code 0 with an unknown config key and KGO_STRICT_CONFIG=true, want non-zero")
		}
		if !strings.Contains(b.Log(), "unknown config key 'kgo.it.no.such.key'") {
			t.Errorf("the output does not name the unknown key kgo.it.no.such.key (broker log at the end of the test output)")
		}
	})
}

// TestSigtermThenCleanStart: with data written, SIGTERM exits 0 and leaves
// Kafka's clean-shutdown marker, and the next start serves the same data.
func TestSigtermThenCleanStart(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-sigterm"
	createTopic(t, b, topic, 2, nil)
	cl := b.Client()
	if err := cl.ProduceSync(ctxT(t, 30*time.Second),
		recordsFor(topic, 100)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := endOffsets(t, b, topic)
	cl.Close()

	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0 (broker log at the end of the test output)", code)
	}
	if _, err := os.Stat(filepath.Join(b.DataDir, ".kafka_cleanshutdown")); err != nil {
		t.Errorf("no clean-shutdown marker after SIGTERM: %v", err)
	}
	b.Start()
	b.WaitReady()
	waitTopicReady(t, b, topic, 2)
	after := endOffsets(t, b, topic)
	if sumOffsets(after) != sumOffsets(before) || sumOffsets(after) != 100 {
		t.Errorf("end offsets %v before SIGTERM, %v after restart; want 100 records", before, after)
	}
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d after the second SIGTERM, want 0", code)
	}
}

// TestMeasureStartup logs (does not assert) the time from process start to the
// first successful Metadata and the idle RSS.
func TestMeasureStartup(t *testing.T) {
	b := StartBroker(t, BrokerOptions{})
	t.Logf("MEASURE startup: first successful Metadata %v after process start", b.ReadyAfter.Round(time.Millisecond))
	t.Logf("MEASURE RSS: VmRSS %d KiB right after ready", VmRSSKiB(b.PID()))
	time.Sleep(3 * time.Second)
	t.Logf("MEASURE RSS: VmRSS %d KiB after 3s idle", VmRSSKiB(b.PID()))
	// A restart on existing data.
	b.Restart()
	t.Logf("MEASURE restart: first successful Metadata %v after process start (existing data)", b.ReadyAfter.Round(time.Millisecond))
}
