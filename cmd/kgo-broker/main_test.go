package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kgo-broker/kgo-broker/config"
)

func serverProps(t *testing.T, dir string, extra string) string {
	t.Helper()
	p := filepath.Join(dir, "server.properties")
	content := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
log.dirs=%s,%s
metadata.log.dir=%s
`, filepath.Join(dir, "d1"), filepath.Join(dir, "d2"), filepath.Join(dir, "meta")) + extra
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, nil, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRandomUUIDCommand(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		code, out, _ := runCmd("random-uuid")
		s := strings.TrimSuffix(out, "\n")
		if code != 0 || len(s) != 22 || strings.HasPrefix(s, "-") || seen[s] {
			t.Fatalf("%d %q", code, out)
		}
		if _, err := config.ParseUUID(s); err != nil {
			t.Fatal(err)
		}
		seen[s] = true
	}
}

func TestVersionCommand(t *testing.T) {
	code, out, _ := runCmd("version")
	if code != 0 || !strings.HasPrefix(out, "kgo-broker ") || !strings.Contains(out, "4.4.0") {
		t.Fatal(code, out)
	}
}

// bootstrapLine is the "Bootstrap metadata: ..." line kafka-storage.sh
// format prints (BootstrapMetadata.toString), for metadata.version mv and
// the other features given as name, level pairs.
func bootstrapLine(mv int16, features ...any) string {
	recs := fmt.Sprintf("ApiMessageAndVersion(FeatureLevelRecord(name='metadata.version', featureLevel=%d) at version 0)", mv)
	for i := 0; i+1 < len(features); i += 2 {
		recs += fmt.Sprintf(", ApiMessageAndVersion(FeatureLevelRecord(name='%s', featureLevel=%d) at version 0)", features[i], features[i+1])
	}
	return fmt.Sprintf("Bootstrap metadata: BootstrapMetadata(records=[%s], metadataVersionLevel=%d, source=format command)\n", recs, mv)
}

func TestFormat(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	d1, d2, meta := filepath.Join(dir, "d1"), filepath.Join(dir, "d2"), filepath.Join(dir, "meta")

	code, out, errOut := runCmd("format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props)
	if code != 0 {
		t.Fatalf("%d %s", code, errOut)
	}
	want := bootstrapLine(33, "eligible.leader.replicas.version", 1, "group.version", 1, "share.version", 2, "streams.version", 1, "transaction.version", 2) +
		fmt.Sprintf("Formatting data directory %s with metadata.version 4.4-IV2.\n"+
			"Formatting data directory %s with metadata.version 4.4-IV2.\n"+
			"Formatting metadata directory %s with metadata.version 4.4-IV2.\n", d1, d2, meta)
	if out != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	ids := map[config.UUID]bool{}
	for _, d := range []string{d1, d2, meta} {
		m, err := config.ReadMetaProperties(d)
		if err != nil || m.Version != 1 || m.ClusterID != "5L6g3nShT-eMCtK--X86sw" || m.NodeID != 1 || m.DirectoryID.IsZero() {
			t.Fatalf("%s: %+v %v", d, m, err)
		}
		ids[m.DirectoryID] = true
	}
	if len(ids) != 3 {
		t.Fatal("directory ids not distinct")
	}

	// Again: already formatted.
	code, out, errOut = runCmd("format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props)
	wantErr := fmt.Sprintf("Log directory %s is already formatted. Use --ignore-formatted to ignore this directory and format the others.\n", d1)
	if code != 1 || out != "" || errOut != wantErr {
		t.Fatalf("%d %q %q", code, out, errOut)
	}
	// --ignore-formatted with nothing to do.
	code, out, _ = runCmd("format", "--cluster-id=5L6g3nShT-eMCtK--X86sw", "--config", props, "--ignore-formatted")
	if code != 0 || out != "All of the log directories are already formatted.\n" {
		t.Fatalf("%d %q", code, out)
	}
	// --ignore-formatted formats only the empty one.
	os.RemoveAll(d2)
	code, out, _ = runCmd("format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props, "-g", "--release-version", "4.0")
	if code != 0 || out != bootstrapLine(25, "group.version", 1, "transaction.version", 2)+fmt.Sprintf("Formatting data directory %s with metadata.version 4.0-IV3.\n", d2) {
		t.Fatalf("%d %q", code, out)
	}
	// A different cluster id is refused, naming the directory.
	code, _, errOut = runCmd("format", "-t", "AAAAAAAAAAAAAAAAAAAAAQ", "-c", props, "-g")
	if code != 1 || !strings.Contains(errOut, "Invalid cluster.id in: "+d1+"/meta.properties. Expected AAAAAAAAAAAAAAAAAAAAAQ, but read 5L6g3nShT-eMCtK--X86sw") {
		t.Fatalf("%d %q", code, errOut)
	}
}

func TestFormatErrors(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-c", props}, "argument --cluster-id/-t is required"},
		{[]string{"-t", "x"}, "argument --config/-c is required"},
		{[]string{"-t", "x", "-c", props, "--bogus"}, "unrecognized arguments: '--bogus'"},
		{[]string{"-t", "x", "-c", props, "--release-version", "9.9"}, "Unknown metadata.version '9.9'."},
		{[]string{"-t", "x", "-c", props, "--standalone"}, "You cannot specify controller.quorum.voters and format the node with --initial-controllers or --standalone."},
		{[]string{"-t", "x", "-c", props, "--standalone", "-N"}, "mutually exclusive"},
		{[]string{"-t", "x", "-c", filepath.Join(dir, "missing.properties")}, "no such file"},
		{[]string{"-t", "x", "-c", serverProps(t, t.TempDir(), "num.partitions=0\n")}, "Invalid value 0 for configuration num.partitions: Value must be at least 1"},
	}
	for _, c := range cases {
		code, _, errOut := runCmd(append([]string{"format"}, c.args...)...)
		if code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: %d %q want %q", c.args, code, errOut, c.want)
		}
	}
	// A controller without static voters needs --standalone or --no-initial-controllers.
	d := t.TempDir()
	dyn := serverProps(t, d, "controller.quorum.voters=\ncontroller.quorum.bootstrap.servers=localhost:9093\n")
	code, _, errOut := runCmd("format", "-t", "x", "-c", dyn)
	if code != 1 || !strings.Contains(errOut, "Because controller.quorum.voters is not set on this controller, you must specify one of the following: --standalone, --initial-controllers, or --no-initial-controllers.") {
		t.Fatal(code, errOut)
	}
	code, out, errOut := runCmd("format", "-t", "x", "-c", dyn, "--standalone")
	if code != 0 || !strings.Contains(out, "Formatting dynamic metadata voter directory "+filepath.Join(d, "meta")) {
		t.Fatal(code, out, errOut)
	}
}

type fakeNode struct {
	mu                 sync.Mutex
	started, shutdown  bool
	startErr, shutdErr error
}

func (f *fakeNode) Start() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = true
	return f.startErr
}

func (f *fakeNode) Fatal() <-chan error { return nil }

func (f *fakeNode) ShutdownRequested() <-chan error { return nil }

func (f *fakeNode) Shutdown(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shutdown = true
	return f.shutdErr
}

// withFakeNode runs the server path with a fake node and a signal that fires
// as soon as the node started.
func withFakeNode(t *testing.T, fn *fakeNode) *nodeConfig {
	t.Helper()
	got := &nodeConfig{}
	oldNew, oldSig := newNode, signalContext
	t.Cleanup(func() { newNode, signalContext = oldNew, oldSig })
	ctx, cancel := context.WithCancel(context.Background())
	newNode = func(nc nodeConfig) (node, error) {
		*got = nc
		cancel() // "SIGTERM" right after start
		return fn, nil
	}
	signalContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	return got
}

func TestServeFormatsOnFirstStartAndShutsDown(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "num.network.threads=5\n")
	fn := &fakeNode{}
	got := withFakeNode(t, fn)
	var out, errb bytes.Buffer
	code := run([]string{props, "--override", "num.partitions=3", "--log-format=json"}, []string{"CLUSTER_ID=5L6g3nShT-eMCtK--X86sw"}, &out, &errb)
	if code != 0 || !fn.started || !fn.shutdown {
		t.Fatalf("%d %+v\n%s", code, fn, errb.String())
	}
	if got.ClusterID != "5L6g3nShT-eMCtK--X86sw" || got.Config.Int("num.partitions") != 3 || len(got.DirectoryIDs) != 3 || got.Logger == nil {
		t.Fatalf("%+v", got)
	}
	for d, id := range got.DirectoryIDs {
		m, err := config.ReadMetaProperties(d)
		if err != nil || m.DirectoryID != id {
			t.Fatal(d, err)
		}
	}
	logs := errb.String()
	for _, w := range []string{`"msg":"formatted empty log directories"`, `"cluster.id":"5L6g3nShT-eMCtK--X86sw"`,
		`"msg":"config keys accepted but not acted on by kgo-broker (see docs/CONFIG.md)","keys":["num.network.threads"]`, `"msg":"shut down cleanly"`} {
		if !strings.Contains(logs, w) {
			t.Errorf("logs lack %s:\n%s", w, logs)
		}
	}

	// Second start: the cluster id on disk is used; a different CLUSTER_ID is refused.
	fn = &fakeNode{}
	got = withFakeNode(t, fn)
	errb.Reset()
	if code := run([]string{props}, nil, &out, &errb); code != 0 || got.ClusterID != "5L6g3nShT-eMCtK--X86sw" {
		t.Fatalf("%d %q %s", code, got.ClusterID, errb.String())
	}
	errb.Reset()
	code = run([]string{props}, []string{"CLUSTER_ID=AAAAAAAAAAAAAAAAAAAAAQ"}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "CLUSTER_ID=AAAAAAAAAAAAAAAAAAAAAQ does not match cluster.id 5L6g3nShT-eMCtK--X86sw in") {
		t.Fatalf("%d %s", code, errb.String())
	}

	// A node id that does not match the directories is refused, naming the dir.
	errb.Reset()
	code = run([]string{props, "--override", "node.id=2", "--override", "controller.quorum.voters=2@localhost:9093"}, nil, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "Stored node id 1 doesn't match previous node id 2 in "+filepath.Join(dir, "d1", "meta.properties")) {
		t.Fatalf("%d %s", code, errb.String())
	}
	// Directories from different clusters are refused, naming the dir.
	m, _ := config.ReadMetaProperties(filepath.Join(dir, "d2"))
	m.ClusterID = "AAAAAAAAAAAAAAAAAAAAAQ"
	config.WriteMetaProperties(filepath.Join(dir, "d2"), m)
	errb.Reset()
	code = run([]string{props}, nil, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "Invalid cluster.id in: "+filepath.Join(dir, "d2", "meta.properties")) {
		t.Fatalf("%d %s", code, errb.String())
	}
}

// TestServeWarnsUnknownKeys: a server.properties from a real deployment
// (reporter, vendor and client keys) and a shell's KAFKA_* variables that
// are not server configs start the node, with one warning per unknown key.
func TestServeWarnsUnknownKeys(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "metric.reporters=io.confluent.metrics.reporter.ConfluentMetricsReporter\n"+
		"confluent.metrics.reporter.bootstrap.servers=localhost:9092\nconfluent.support.metrics.enable=false\n")
	fn := &fakeNode{}
	withFakeNode(t, fn)
	var out, errb bytes.Buffer
	env := []string{"KAFKA_BOOTSTRAP_SERVERS=localhost:9092", "KAFKA_HEAP_OPTS=-Xmx1G", "KAFKA_OPTS=-Dfoo=bar", "CLUSTER_ID=5L6g3nShT-eMCtK--X86sw"}
	if code := run([]string{props, "--log-format=json"}, env, &out, &errb); code != 0 || !fn.started {
		t.Fatalf("exit %d:\n%s", code, errb.String())
	}
	logs := errb.String()
	for _, k := range []string{"bootstrap.servers", "confluent.metrics.reporter.bootstrap.servers", "confluent.support.metrics.enable"} {
		line := ""
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, `"key":"`+k+`"`) {
				line = l
			}
		}
		if !strings.Contains(line, `"level":"warn"`) || !strings.Contains(line, "The configuration '"+k+"' was supplied but isn't a known config.") {
			t.Errorf("no warning for %s:\n%s", k, logs)
		}
		if strings.Count(logs, `"key":"`+k+`"`) != 1 {
			t.Errorf("%s warned about %d times", k, strings.Count(logs, `"key":"`+k+`"`))
		}
	}
	if strings.Contains(logs, "KAFKA_HEAP_OPTS") || strings.Contains(logs, "heap.opts") {
		t.Errorf("JVM variables are not server configs:\n%s", logs)
	}
}

func TestServeRandomClusterIDAndDefaults(t *testing.T) {
	dir := t.TempDir()
	fn := &fakeNode{}
	got := withFakeNode(t, fn)
	var out, errb bytes.Buffer
	code := run([]string{"--override", "log.dirs=" + filepath.Join(dir, "data"), "--log-level", "warn"}, nil, &out, &errb)
	if code != 0 {
		t.Fatalf("%d %s", code, errb.String())
	}
	if _, err := config.ParseUUID(got.ClusterID); err != nil || got.Config.NodeID != 1 || !got.Config.ProcessRoles.IsController() {
		t.Fatalf("%+v %v", got, err)
	}
	if errb.Len() != 0 {
		t.Fatalf("warn level logged info: %s", errb.String())
	}
}

func TestServeFailures(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	cases := []struct {
		args []string
		env  []string
		node *fakeNode
		code int
		want string
	}{
		{[]string{props, "extra.properties"}, nil, nil, 2, "only one server.properties"},
		{[]string{"--bogus"}, nil, nil, 2, "unknown flag --bogus"},
		{[]string{"--override", "novalue"}, nil, nil, 2, "use --override key=value"},
		{[]string{props, "--log-format", "xml"}, nil, nil, 2, "unknown log format"},
		{[]string{props}, []string{"KGO_LOG_LEVEL=loud"}, nil, 2, "unknown log level"},
		{[]string{props, "--strict-config"}, []string{"KAFKA_FOO_BAR=1"}, nil, 1, "unknown config key 'foo.bar' (from KAFKA_FOO_BAR)"},
		{[]string{props}, []string{"KAFKA_FOO_BAR=1", "KGO_STRICT_CONFIG=true"}, nil, 1, "unknown config key 'foo.bar' (from KAFKA_FOO_BAR)"},
		{[]string{props}, []string{"KGO_STRICT_CONFIG=maybe"}, nil, 2, "KGO_STRICT_CONFIG=maybe"},
		{[]string{props, "--override", "node.id=x"}, nil, nil, 1, "Invalid value x for configuration node.id: Not a number of type INT (from --override)"},
		{[]string{props}, nil, &fakeNode{startErr: errors.New("boom")}, 1, "boom"},
		{[]string{props}, nil, &fakeNode{shutdErr: errors.New("stuck")}, 1, "stuck"},
	}
	for _, c := range cases {
		fn := c.node
		if fn == nil {
			fn = &fakeNode{}
		}
		withFakeNode(t, fn)
		var out, errb bytes.Buffer
		code := run(c.args, c.env, &out, &errb)
		if code != c.code || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%q: %d %q want %d %q", c.args, code, errb.String(), c.code, c.want)
		}
	}
}

func TestNewNodeBuildsBrokerNode(t *testing.T) {
	cfg, err := config.SingleNode(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := newNode(nodeConfig{Config: cfg, ClusterID: "5L6g3nShT-eMCtK--X86sw"})
	if err != nil || n == nil {
		t.Fatal(n, err)
	}
}

func TestServeMultiNodeDefaultClusterID(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "process.roles=broker\nnode.id=4\nlisteners=PLAINTEXT://:9092\n")
	fn := &fakeNode{}
	got := withFakeNode(t, fn)
	var out, errb bytes.Buffer
	if code := run([]string{props}, nil, &out, &errb); code != 0 {
		t.Fatalf("%d %s", code, errb.String())
	}
	if got.ClusterID != dockerDefaultClusterID || !strings.Contains(errb.String(), "CLUSTER_ID is not set") {
		t.Fatalf("%q %s", got.ClusterID, errb.String())
	}
	m, err := config.ReadMetaProperties(filepath.Join(dir, "meta"))
	if err != nil || m.NodeID != 4 || m.ClusterID != dockerDefaultClusterID {
		t.Fatal(m, err)
	}
}

func TestServeRefusesV0MetaProperties(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	os.MkdirAll(filepath.Join(dir, "d1"), 0o755)
	os.WriteFile(filepath.Join(dir, "d1", "meta.properties"), []byte("version=0\nbroker.id=1\ncluster.id=abc\n"), 0o644)
	withFakeNode(t, &fakeNode{})
	var out, errb bytes.Buffer
	if code := run([]string{props}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "version 0 (ZooKeeper-era) meta.properties") {
		t.Fatalf("%d %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "d2", "meta.properties")); err == nil {
		t.Fatal("formatted other dirs before failing")
	}
}
