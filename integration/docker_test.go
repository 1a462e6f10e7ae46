//go:build integration

package integration

// The container image (docker/, make docker): built with docker/build.sh and run
// with docker when a Docker daemon answers, else with podman (installed by
// scripts/install-podman.sh, configured by docker/containers.conf). Without an
// engine the test skips, unless KGO_REQUIRE_DOCKER is set.
//
// The containers publish 127.0.0.1:9092 (the image advertises localhost:9092, as
// apache/kafka's does), so the test skips when 9092 is taken.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dockerImage is the tag the test builds, removed at the end (not :latest, which
// `make docker` owns); unique per test process.
var dockerImage = fmt.Sprintf("kgo-broker:it-%d", os.Getpid())

// composeSingleNodeEnv is the environment of apache/kafka's single-node compose
// example, unchanged.
var composeSingleNodeEnv = []string{
	"KAFKA_NODE_ID=1",
	"KAFKA_PROCESS_ROLES=broker,controller",
	"KAFKA_LISTENERS=PLAINTEXT://:9092,CONTROLLER://:9093",
	"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://localhost:9092",
	"KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
	"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
	"KAFKA_CONTROLLER_QUORUM_VOTERS=1@localhost:9093",
	"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
	"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1",
	"KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
	"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0",
	"KAFKA_NUM_PARTITIONS=3",
}

// containerEngine runs docker or podman.
type containerEngine struct {
	t    *testing.T
	name string   // "docker" or "podman"
	env  []string // CONTAINERS_CONF for podman
	tag  string   // unique per test run, for container and volume names
}

// requireContainerEngine returns a usable engine, or skips (fails with
// KGO_REQUIRE_DOCKER) when there is none.
func requireContainerEngine(t *testing.T) *containerEngine {
	t.Helper()
	e := &containerEngine{t: t, tag: fmt.Sprintf("kgo-it-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)}
	var why []string
	if _, err := exec.LookPath("docker"); err == nil {
		if err := exec.Command("docker", "info").Run(); err == nil {
			e.name = "docker"
			return e
		}
		why = append(why, "no Docker daemon answers `docker info`")
	}
	if _, err := exec.LookPath("podman"); err == nil {
		e.name = "podman"
		if os.Getenv("CONTAINERS_CONF") == "" {
			e.env = []string{"CONTAINERS_CONF=" + filepath.Join(repoRoot, "docker", "containers.conf")}
		}
		r := e.run(30*time.Second, "info")
		if r.ExitCode == 0 {
			return e
		}
		// As docker/build.sh: vfs where the default storage driver (overlay) fails.
		e.env = append(e.env, "STORAGE_DRIVER=vfs")
		if e.run(30*time.Second, "info").ExitCode == 0 {
			return e
		}
		why = append(why, "`podman info` fails: "+tail(r.Stderr, 5))
	} else {
		why = append(why, "podman is not installed (scripts/install-podman.sh)")
	}
	msg := "no container engine: " + strings.Join(why, "; ")
	if os.Getenv("KGO_REQUIRE_DOCKER") != "" {
		t.Fatalf("KGO_REQUIRE_DOCKER is set but %s", msg)
	}
	t.Skipf("SKIP: %s (set KGO_REQUIRE_DOCKER=1 to make this a failure)", msg)
	return nil
}

// run runs the engine with args and returns what it printed.
func (e *containerEngine) run(timeout time.Duration, args ...string) ToolResult {
	e.t.Helper()
	return RunCommand(e.t, RunOpts{Timeout: timeout, Env: e.env, Hermetic: true}, e.name, args...)
}

// must runs the engine and fails the test unless it exits 0; it returns stdout, trimmed.
func (e *containerEngine) must(timeout time.Duration, args ...string) string {
	e.t.Helper()
	r := e.run(timeout, args...)
	if r.ExitCode != 0 || r.TimedOut {
		e.t.Fatalf("%s failed:\n%s", e.name, r)
	}
	return strings.TrimSpace(r.Stdout)
}

// logs returns the container's stdout and stderr.
func (e *containerEngine) logs(name string) string {
	e.t.Helper()
	r := e.run(30*time.Second, "logs", name)
	return r.Stdout + r.Stderr
}

// inspect evaluates a Go template against a container or image.
func (e *containerEngine) inspect(kind, name, format string) string {
	e.t.Helper()
	return e.must(30*time.Second, kind, "inspect", "--format", format, name)
}

// startContainer runs the image detached with 127.0.0.1:9092 published and extra
// run arguments (-e, -v ...), removes it at the end of the test, and returns its
// name and the time `run` was called.
func (e *containerEngine) startContainer(suffix string, extra ...string) (string, time.Time) {
	e.t.Helper()
	name := e.tag + "-" + suffix
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Logf("container %s log:\n%s", name, tail(e.logs(name), 60))
		}
		e.run(60*time.Second, "rm", "-f", "-v", name)
	})
	args := append([]string{"run", "-d", "--name", name, "-p", "127.0.0.1:9092:9092"}, extra...)
	args = append(args, dockerImage)
	start := time.Now()
	e.must(60*time.Second, args...)
	return name, start
}

// waitContainerMetadata polls Metadata on 127.0.0.1:9092 until node 1 answers as
// localhost:9092, and returns the time since start.
func waitContainerMetadata(t *testing.T, e *containerEngine, name string, start time.Time) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:9092"), kgo.DialTimeout(time.Second),
		kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	deadline := time.Now().Add(readyTimeout())
	var last error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{}
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil {
			if len(resp.Brokers) == 1 && resp.Brokers[0].NodeID == 1 && resp.Brokers[0].Host == "localhost" && resp.Brokers[0].Port == 9092 {
				return time.Since(start)
			}
			err = fmt.Errorf("brokers %+v, want node 1 at localhost:9092", resp.Brokers)
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("container %s: no Metadata from 127.0.0.1:9092 within %v: %v\n%s", name, readyTimeout(), last, tail(e.logs(name), 40))
		}
		if st := e.inspect("container", name, "{{.State.Status}}"); st == "exited" || st == "stopped" {
			t.Fatalf("container %s exited before it answered Metadata:\n%s", name, tail(e.logs(name), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopContainer stops the container with SIGTERM and a 10 s grace period and
// checks it exited 0 within it after a clean shutdown.
func stopContainer(t *testing.T, e *containerEngine, name string) {
	t.Helper()
	start := time.Now()
	e.must(60*time.Second, "stop", "-t", "10", name)
	took := time.Since(start)
	code := e.inspect("container", name, "{{.State.ExitCode}}")
	logs := e.logs(name)
	t.Logf("%s stop -t 10: %v, exit code %s", e.name, took.Round(time.Millisecond), code)
	if code != "0" {
		t.Errorf("exit code after SIGTERM = %s, want 0\n%s", code, tail(logs, 30))
	}
	if took >= 10*time.Second {
		t.Errorf("stop took %v: the broker did not exit within the 10 s grace period (it was killed)", took)
	}
	if !strings.Contains(logs, "shut down cleanly") {
		t.Errorf("broker log does not say it shut down cleanly:\n%s", tail(logs, 30))
	}
}

func TestDocker(t *testing.T) {
	t.Parallel()
	if filepath.Base(brokerBin) != "kgo-broker" {
		t.Skipf("SKIP: KGO_BROKER_BIN=%s is not kgo-broker; the image is built from this repository", brokerBin)
	}
	e := requireContainerEngine(t)
	requireKafkaTools(t)
	lockDockerTest(t)
	if !portFree(9092) {
		t.Skip("SKIP: port 9092 is in use; the image advertises localhost:9092")
	}

	// Build with the same script as `make docker`.
	r := RunCommand(t, RunOpts{Timeout: 5 * time.Minute, Dir: repoRoot, Env: append([]string{"IMAGE=" + dockerImage, "ENGINE=" + e.name}, e.env...)},
		filepath.Join(repoRoot, "docker", "build.sh"))
	if r.ExitCode != 0 {
		t.Fatalf("docker/build.sh failed:\n%s", r)
	}
	t.Cleanup(func() { e.run(60*time.Second, "rmi", "-f", dockerImage) })
	t.Logf("built in %v", r.Duration.Round(time.Millisecond))

	t.Run("image", func(t *testing.T) {
		size, _ := strconv.ParseInt(e.inspect("image", dockerImage, "{{.Size}}"), 10, 64)
		t.Logf("image size %.1f MiB (%d bytes)", float64(size)/(1<<20), size)
		if size <= 0 || size > 30<<20 {
			t.Errorf("image size %d bytes, want under 30 MiB", size)
		}
		if u := e.inspect("image", dockerImage, "{{.Config.User}}"); u != "1000:1000" {
			t.Errorf("image user %q, want 1000:1000 (appuser)", u)
		}
		var ports []string
		for p := range strings.FieldsSeq(strings.NewReplacer("map[", "", "]", "", ":{}", "").Replace(
			e.inspect("image", dockerImage, "{{.Config.ExposedPorts}}"))) {
			ports = append(ports, p)
		}
		sort.Strings(ports)
		if strings.Join(ports, " ") != "9092/tcp 9093/tcp" {
			t.Errorf("exposed ports %v, want 9092/tcp 9093/tcp", ports)
		}
		for _, l := range []string{"version", "source", "title", "licenses"} {
			if v := e.inspect("image", dockerImage, `{{index .Config.Labels "org.opencontainers.image.`+l+`"}}`); v == "" || v == "<no value>" {
				t.Errorf("label org.opencontainers.image.%s missing", l)
			}
		}
		if hc := e.inspect("image", dockerImage, "{{.Config.Healthcheck}}"); !strings.Contains(hc, "healthcheck") {
			t.Errorf("image HEALTHCHECK = %q", hc)
		}
	})
	if t.Failed() {
		return
	}

	// No environment, a named volume: the image's defaults.
	volume := e.tag + "-data"
	t.Cleanup(func() { e.run(60*time.Second, "volume", "rm", "-f", volume) })
	const topic = "docker-it"
	var clusterID string
	t.Run("defaults", func(t *testing.T) {
		name, start := e.startContainer("defaults", "-v", volume+":/var/lib/kafka/data")
		t.Logf("run to first Metadata: %v", waitContainerMetadata(t, e, name, start).Round(time.Millisecond))
		logs := e.logs(name)
		for _, want := range []string{`"config": "/etc/kafka/docker/server.properties"`, `"log.dirs": ["/var/lib/kafka/data"]`, "formatted empty log directories"} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %s:\n%s", want, tail(logs, 30))
			}
		}
		clusterID = logField(logs, "cluster.id")

		MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", "localhost:9092",
			"--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1")
		if r := MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", "localhost:9092", "--list"); !strings.Contains(r.Stdout, topic+"\n") {
			t.Errorf("kafka-topics.sh --list does not show %s:\n%s", topic, r)
		}
		MustKafkaTool(t, RunOpts{Stdin: "one\ntwo\nthree\n"}, "kafka-console-producer.sh",
			"--bootstrap-server", "localhost:9092", "--topic", topic)
		consumeThree(t, topic)

		if e.name == "podman" {
			if r := e.run(30*time.Second, "healthcheck", "run", name); r.ExitCode != 0 {
				t.Errorf("podman healthcheck run: %s", r)
			}
		} else {
			waitFor(t, 60*time.Second, "healthy", func() error {
				if s := e.inspect("container", name, "{{.State.Health.Status}}"); s != "healthy" {
					return fmt.Errorf("health %s", s)
				}
				return nil
			})
		}
		stopContainer(t, e, name)
	})
	if t.Failed() {
		return
	}

	// A new container on the same volume finds the cluster and the records.
	t.Run("restart", func(t *testing.T) {
		name, start := e.startContainer("restart", "-v", volume+":/var/lib/kafka/data")
		t.Logf("run to first Metadata (existing data): %v", waitContainerMetadata(t, e, name, start).Round(time.Millisecond))
		logs := e.logs(name)
		if strings.Contains(logs, "formatted empty log directories") {
			t.Errorf("the restarted container formatted its log directory again:\n%s", tail(logs, 30))
		}
		if got := logField(logs, "cluster.id"); clusterID == "" || got != clusterID {
			t.Errorf("cluster.id after restart %q, want %q", got, clusterID)
		}
		consumeThree(t, topic)
		stopContainer(t, e, name)
	})

	// apache/kafka's single-node compose environment, unchanged.
	t.Run("compose-env", func(t *testing.T) {
		var args []string
		for _, kv := range composeSingleNodeEnv {
			args = append(args, "-e", kv)
		}
		name, start := e.startContainer("compose", args...)
		t.Logf("run to first Metadata (compose env): %v", waitContainerMetadata(t, e, name, start).Round(time.Millisecond))
		if logs := e.logs(name); !strings.Contains(logs, `"config": "environment"`) {
			t.Errorf("log does not say the config came from the environment:\n%s", tail(logs, 30))
		}
		// KAFKA_NUM_PARTITIONS=3 is the default partition count.
		if n := createDefaultTopic(t, "compose-it"); n != 3 {
			t.Errorf("topic with the default partition count: %d partitions, want 3 (KAFKA_NUM_PARTITIONS=3)", n)
		}
		stopContainer(t, e, name)
	})

	// A mounted /mnt/shared/config/server.properties, with KAFKA_* variables on top.
	t.Run("mounted-config", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		props := strings.Join([]string{
			"process.roles=broker,controller", "node.id=1", "controller.quorum.voters=1@localhost:9093",
			"listeners=PLAINTEXT://:9092,CONTROLLER://:9093", "advertised.listeners=PLAINTEXT://localhost:9092",
			"controller.listener.names=CONTROLLER", "log.dirs=/tmp/mounted-data", "num.partitions=2",
		}, "\n") + "\n"
		if err := os.WriteFile(filepath.Join(dir, "server.properties"), []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		name, start := e.startContainer("mounted", "-v", dir+":/mnt/shared/config:ro",
			"-e", "KAFKA_NUM_PARTITIONS=4", "-e", "CLUSTER_ID=MkU3OEVBNTcwNTJENDM2Qg")
		waitContainerMetadata(t, e, name, start)
		logs := e.logs(name)
		for _, want := range []string{`"config": "/mnt/shared/config/server.properties"`, `"log.dirs": ["/tmp/mounted-data"]`, `"cluster.id": "MkU3OEVBNTcwNTJENDM2Qg"`} {
			if !strings.Contains(logs, want) {
				t.Errorf("log lacks %s:\n%s", want, tail(logs, 30))
			}
		}
		if n := createDefaultTopic(t, "mounted-it"); n != 4 {
			t.Errorf("topic with the default partition count: %d partitions, want 4 (KAFKA_NUM_PARTITIONS over the file's 2)", n)
		}
	})

	// KGO_DOCKER_STARTUP_RUNS=N: time from `run` to the first Metadata, N fresh
	// containers with no environment (first start: format included).
	t.Run("startup-time", func(t *testing.T) {
		n, _ := strconv.Atoi(os.Getenv("KGO_DOCKER_STARTUP_RUNS"))
		if n <= 0 {
			t.Skip("SKIP: set KGO_DOCKER_STARTUP_RUNS=N to measure")
		}
		var ds []time.Duration
		for i := 0; i < n; i++ {
			name, start := e.startContainer(fmt.Sprintf("startup%d", i))
			ds = append(ds, waitContainerMetadata(t, e, name, start))
			e.must(60*time.Second, "rm", "-f", "-v", name)
		}
		sorted := append([]time.Duration(nil), ds...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		t.Logf("run to first Metadata over %d runs: median %v, min %v, max %v (all: %v)", n,
			sorted[n/2].Round(time.Millisecond), sorted[0].Round(time.Millisecond), sorted[n-1].Round(time.Millisecond), ds)
	})

	// A bad variable stops the container with a message naming it.
	t.Run("bad-variable", func(t *testing.T) {
		args := []string{"run", "--rm", "--name", e.tag + "-bad"}
		for _, kv := range composeSingleNodeEnv {
			if strings.HasPrefix(kv, "KAFKA_NUM_PARTITIONS=") {
				kv = "KAFKA_NUM_PARTITIONS=abc"
			}
			args = append(args, "-e", kv)
		}
		r := e.run(60*time.Second, append(args, dockerImage)...)
		if r.TimedOut || r.ExitCode == 0 {
			t.Fatalf("the container did not stop on KAFKA_NUM_PARTITIONS=abc:\n%s", r)
		}
		if !strings.Contains(r.Stdout+r.Stderr, "KAFKA_NUM_PARTITIONS") {
			t.Errorf("the error does not name KAFKA_NUM_PARTITIONS:\n%s", r)
		}
		t.Logf("exit code %d: %s", r.ExitCode, tail(strings.TrimSpace(r.Stdout+r.Stderr), 2))
	})
}

// lockDockerTest serializes TestDocker across test processes on this machine (they
// all need host port 9092): it waits up to 5 minutes for the lock, then skips.
func lockDockerTest(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "kgo-broker-docker-test.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			f.Close()
			t.Skip("SKIP: another TestDocker held the lock for 5 minutes")
		}
		time.Sleep(time.Second)
	}
	t.Cleanup(func() { f.Close() }) // releases the lock
}

// consumeThree reads the three records the defaults subtest wrote.
func consumeThree(t *testing.T, topic string) {
	t.Helper()
	r := MustKafkaTool(t, RunOpts{}, "kafka-console-consumer.sh", "--bootstrap-server", "localhost:9092",
		"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", "3", "--timeout-ms", "30000")
	if r.Stdout != "one\ntwo\nthree\n" {
		t.Errorf("kafka-console-consumer.sh read %q, want one two three\n%s", r.Stdout, r)
	}
}

// createDefaultTopic creates a topic with the broker's default partition count and
// replication factor on 127.0.0.1:9092 and returns its partition count.
func createDefaultTopic(t *testing.T, topic string) int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:9092"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	resp, err := kadm.NewClient(cl).CreateTopic(ctxT(t, 30*time.Second), -1, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	return resp.NumPartitions
}

// logField returns the last value of "key": "value" in a console log.
func logField(logs, key string) string {
	v := ""
	rest := logs
	for {
		i := strings.Index(rest, `"`+key+`": "`)
		if i < 0 {
			return v
		}
		rest = rest[i+len(key)+5:]
		if j := strings.IndexByte(rest, '"'); j >= 0 {
			v = rest[:j]
		}
	}
}
