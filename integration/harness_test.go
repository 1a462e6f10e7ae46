//go:build integration

package integration

// The harness: builds or locates the broker binary, starts it as a real process
// in a temp dir on free loopback ports, waits for it to answer Metadata, stops,
// kills and restarts it, and runs Kafka's tools through scripts/kafka-tool.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var (
	repoRoot  string // absolute path of the repository
	brokerBin string // absolute path of the kgo-broker binary under test
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	root, err := findRepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	repoRoot = root
	if bin := os.Getenv("KGO_BROKER_BIN"); bin != "" {
		// go test runs in the package directory; a relative path is taken
		// relative to the repository root, where it was most likely typed.
		abs := bin
		if !filepath.IsAbs(bin) {
			abs = filepath.Join(root, bin)
		}
		if _, err := os.Stat(abs); err != nil {
			fmt.Fprintln(os.Stderr, "integration: KGO_BROKER_BIN:", err)
			return 1
		}
		brokerBin = abs
	} else {
		// Build exactly as `make build` does so that a stale bin/ never gets tested.
		brokerBin = filepath.Join(root, "bin", "kgo-broker")
		cmd := exec.Command("go", "build", "-trimpath", "-o", brokerBin, "./cmd/kgo-broker")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "integration: building kgo-broker: %v\n%s", err, out)
			return 1
		}
	}
	return m.Run()
}

// findRepoRoot walks up from the working directory (the package dir under go test)
// to the directory holding go.mod and scripts/kafka-tool.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) && fileExists(filepath.Join(dir, "scripts", "kafka-tool")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root (go.mod + scripts/kafka-tool) above the working directory")
		}
		dir = parent
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// ---------------------------------------------------------------------------
// Tool availability

var (
	kafkaToolsOnce sync.Once
	kafkaToolsErr  error
)

// requireKafkaTools skips the test when Kafka's tool jars are not installed, unless
// KGO_REQUIRE_TOOLS is set, in which case it fails it.
func requireKafkaTools(t testing.TB) {
	t.Helper()
	kafkaToolsOnce.Do(func() {
		cmd := exec.Command(filepath.Join(repoRoot, "scripts", "kafka-tool"), "--installed")
		if err := cmd.Run(); err != nil {
			kafkaToolsErr = fmt.Errorf("Apache Kafka's tools are not installed (scripts/kafka-tool --installed: %v); run scripts/install-tools.sh", err)
		}
	})
	missingTool(t, kafkaToolsErr)
}

// requireKcat skips (or, with KGO_REQUIRE_TOOLS, fails) the test when kcat is not on PATH.
func requireKcat(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("kcat")
	if err != nil {
		missingTool(t, fmt.Errorf("kcat is not on PATH (%v); run scripts/install-tools.sh", err))
	}
	return p
}

func missingTool(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("KGO_REQUIRE_TOOLS") != "" {
		t.Fatalf("KGO_REQUIRE_TOOLS is set but %v", err)
	}
	t.Skipf("SKIP: %v (set KGO_REQUIRE_TOOLS=1 to make this a failure)", err)
}

// ---------------------------------------------------------------------------
// Broker process

// BrokerOptions configure StartBroker. The zero value is a single combined
// broker+controller node with id 1 on two free loopback ports.
type BrokerOptions struct {
	// Overrides are passed as `--override k=v`, after the generated server.properties.
	Overrides map[string]string
	// Env is added to the process environment (KAFKA_* variables, for example).
	Env []string
	// NoWait returns from StartBroker without waiting for readiness.
	NoWait bool
	// NoConfig starts the binary with no server.properties (its embedded
	// defaults: ports 9092/9093, data under ./data), in the temp dir with HOME
	// pointing there too.
	NoConfig bool
	// Bin is the binary to run instead of the one under test (brokerBin):
	// the comparison tests run Apache Kafka's reference broker next to it.
	Bin string
	// Wrap is a command prefix the binary is started through, e.g.
	// ["ip", "netns", "exec", "ns1"] (it must exec the binary in place, so
	// that the pid is the broker's).
	Wrap []string
}

// Broker is one kgo-broker process and its directory.
type Broker struct {
	t    testing.TB
	opts BrokerOptions

	Dir        string // temp dir: cwd of the process, server.properties, broker.log
	DataDir    string // log.dirs (and the metadata log dir)
	Props      string // path of server.properties
	LogPath    string // stdout+stderr of every run, appended
	Port       int    // PLAINTEXT listener
	CtrlPort   int    // CONTROLLER listener
	Addr       string // 127.0.0.1:Port
	ClusterID  string // cluster.id after the first successful start (from meta.properties)
	ReadyAfter time.Duration

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current process has exited
	waitErr error         // the current process's cmd.Wait result, valid after done
	started time.Time
	runs    int
}

// StartBroker starts a broker in a fresh temp dir and waits until it answers a
// Metadata request that lists itself. The process is killed at the end of the
// test; on failure its log is printed and its directory kept.
func StartBroker(t testing.TB, opts BrokerOptions) *Broker {
	t.Helper()
	b := NewBroker(t, opts)
	b.Start()
	if !opts.NoWait {
		b.WaitReady()
	}
	return b
}

// NewBroker prepares a temp dir (and server.properties, unless opts.NoConfig)
// without starting anything.
func NewBroker(t testing.TB, opts BrokerOptions) *Broker {
	t.Helper()
	dir, err := os.MkdirTemp("", "kgo-it-"+sanitize(t.Name())+"-")
	if err != nil {
		t.Fatal(err)
	}
	b := &Broker{
		t:       t,
		opts:    opts,
		Dir:     dir,
		DataDir: filepath.Join(dir, "data"),
		Props:   filepath.Join(dir, "server.properties"),
		LogPath: filepath.Join(dir, "broker.log"),
	}
	t.Cleanup(b.cleanup)
	if opts.NoConfig {
		// kgo-broker's embedded defaults: PLAINTEXT :9092, CONTROLLER :9093, ./data.
		b.Props = ""
		b.Port, b.CtrlPort = 9092, 9093
	} else {
		ports := freePorts(t, 2)
		b.Port, b.CtrlPort = ports[0], ports[1]
		if err := os.WriteFile(b.Props, []byte(b.serverProperties()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(b.Port))
	return b
}

// serverProperties is a minimal single-node KRaft config, every key a real Kafka key.
func (b *Broker) serverProperties() string {
	return fmt.Sprintf(`# generated by the kgo-broker integration harness
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%[3]s
num.partitions=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
`, b.Port, b.CtrlPort, b.DataDir)
}

// Args is the broker's command line (without the binary).
func (b *Broker) Args() []string {
	var args []string
	if b.Props != "" {
		args = append(args, b.Props)
	}
	keys := make([]string, 0, len(b.opts.Overrides))
	for k := range b.opts.Overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		args = append(args, "--override", k+"="+b.opts.Overrides[k])
	}
	return args
}

// Start starts the process (again) on the same directory and ports. It does not wait.
func (b *Broker) Start() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cmd != nil && !isClosed(b.done) {
		b.t.Fatalf("broker: Start while pid %d is still running", b.cmd.Process.Pid)
	}
	b.runs++
	logf, err := os.OpenFile(b.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		b.t.Fatal(err)
	}
	bin := brokerBin
	if b.opts.Bin != "" {
		bin = b.opts.Bin
	}
	fmt.Fprintf(logf, "\n===== harness: start #%d at %s: %s %s\n", b.runs,
		time.Now().Format(time.RFC3339Nano), bin, strings.Join(b.Args(), " "))
	argv := append(append(append([]string(nil), b.opts.Wrap...), bin), b.Args()...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = b.Dir
	cmd.Env = append(hermeticEnv(), b.opts.Env...)
	if b.opts.NoConfig {
		cmd.Env = append(cmd.Env, "HOME="+b.Dir)
	}
	cmd.Stdout = logf
	cmd.Stderr = logf
	// The broker must not outlive the test binary. Its own process group lets
	// Kill take any children with it (a wrapper script's, for instance).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	b.started = time.Now()
	if err := cmd.Start(); err != nil {
		logf.Close()
		b.t.Fatalf("broker: start %s: %v", bin, err)
	}
	done := make(chan struct{})
	b.cmd, b.done, b.waitErr = cmd, done, nil
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "===== harness: pid %d exited: %v\n", cmd.Process.Pid, exitDesc(err))
		logf.Close()
		b.mu.Lock()
		b.waitErr = err
		b.mu.Unlock()
		close(done)
	}()
}

// hermeticEnv is the test's environment without the variables that configure the
// broker (KAFKA_*, CLUSTER_ID, KGO_LOG_*): a stray KAFKA_* in CI would otherwise
// replace the whole config, as in Apache Kafka's docker image.
func hermeticEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "KAFKA_") || k == "CLUSTER_ID" || strings.HasPrefix(k, "KGO_LOG_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// readyTimeout is how long WaitReady polls.
func readyTimeout() time.Duration {
	if s := os.Getenv("KGO_READY_TIMEOUT"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	return 60 * time.Second
}

// WaitReady polls Metadata until the broker answers with itself (node 1 at Addr)
// in the broker list, the process exits, or the deadline passes.
func (b *Broker) WaitReady() {
	b.t.Helper()
	if err := b.waitReady(readyTimeout()); err != nil {
		b.t.Fatalf("broker not ready: %v (broker log at the end of the test output)", err)
	}
}

func (b *Broker) waitReady(timeout time.Duration) error {
	b.mu.Lock()
	done, started := b.done, b.started
	b.mu.Unlock()
	deadline := time.Now().Add(timeout)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(b.Addr),
		kgo.DialTimeout(time.Second),
		kgo.RequestRetries(0),
		kgo.RetryTimeout(time.Second),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	var last error
	for attempt := 0; ; attempt++ {
		select {
		case <-done:
			return fmt.Errorf("process exited before it was ready: %s", exitDesc(b.exitErr()))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no successful Metadata from %s within %v (%d attempts); last error: %v", b.Addr, timeout, attempt, last)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{} // no topics, as Kafka's admin client does
		resp, err := req.RequestWith(ctx, cl)
		cancel()
		if err == nil {
			err = b.checkSelfInMetadata(resp)
		}
		if err == nil {
			b.ReadyAfter = time.Since(started)
			return nil
		}
		last = err
		select {
		case <-done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (b *Broker) checkSelfInMetadata(resp *kmsg.MetadataResponse) error {
	for _, br := range resp.Brokers {
		if br.NodeID == 1 && br.Port == int32(b.Port) {
			return nil
		}
	}
	return fmt.Errorf("metadata response does not list node 1 at port %d: %+v", b.Port, resp.Brokers)
}

// Stop sends SIGTERM and waits up to timeout (30s if 0) for the process to exit.
// It returns the exit code; a timeout kills the process and fails the test.
func (b *Broker) Stop(timeout time.Duration) int {
	b.t.Helper()
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	cmd, done := b.current()
	if cmd == nil || isClosed(done) {
		return b.ExitCode()
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Process.Kill()
		<-done
		b.t.Fatalf("broker pid %d did not exit within %v of SIGTERM; killed (broker log at the end of the test output)", cmd.Process.Pid, timeout)
	}
	return b.ExitCode()
}

// Kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (b *Broker) Kill() {
	b.t.Helper()
	cmd, done := b.current()
	if cmd == nil || isClosed(done) {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the process group
	_ = cmd.Process.Kill()
	<-done
}

// Pause sends SIGSTOP to the broker's process group (every process of it, a
// wrapper script's JVM too); Resume sends SIGCONT. A paused process still
// dies of Kill.
func (b *Broker) Pause() { b.signalGroup(syscall.SIGSTOP) }

// Resume continues a paused broker (SIGCONT to its process group).
func (b *Broker) Resume() { b.signalGroup(syscall.SIGCONT) }

func (b *Broker) signalGroup(sig syscall.Signal) {
	b.t.Helper()
	cmd, done := b.current()
	if cmd == nil || isClosed(done) {
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, sig); err != nil {
		b.t.Errorf("broker pid %d: %v: %v", cmd.Process.Pid, sig, err)
	}
}

// Restart stops (SIGTERM) the broker, expects exit code 0, starts it again on the
// same directory and ports, and waits for readiness.
func (b *Broker) Restart() {
	b.t.Helper()
	if code := b.Stop(0); code != 0 {
		b.t.Fatalf("broker exited with code %d after SIGTERM, want 0 (broker log at the end of the test output)", code)
	}
	b.Start()
	b.WaitReady()
}

// KillAndRestart kills the broker with SIGKILL, starts it again and waits for readiness.
func (b *Broker) KillAndRestart() {
	b.t.Helper()
	b.Kill()
	b.Start()
	b.WaitReady()
}

// Exited is closed when the current process exits.
func (b *Broker) Exited() <-chan struct{} {
	_, done := b.current()
	return done
}

// WaitExit waits up to timeout for the process to exit by itself and returns its
// exit code, or fails the test.
func (b *Broker) WaitExit(timeout time.Duration) int {
	b.t.Helper()
	select {
	case <-b.Exited():
		return b.ExitCode()
	case <-time.After(timeout):
		b.t.Fatalf("broker did not exit within %v (broker log at the end of the test output)", timeout)
		return -1
	}
}

// ExitCode of the last process: -1 while running or when killed by a signal.
func (b *Broker) ExitCode() int {
	cmd, done := b.current()
	if cmd == nil || !isClosed(done) || cmd.ProcessState == nil {
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

// PID of the current process.
func (b *Broker) PID() int {
	cmd, _ := b.current()
	if cmd == nil {
		return 0
	}
	return cmd.Process.Pid
}

func (b *Broker) current() (*exec.Cmd, chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cmd, b.done
}

func (b *Broker) exitErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waitErr
}

// Log returns everything the broker has written so far (all runs).
func (b *Broker) Log() string {
	data, _ := os.ReadFile(b.LogPath)
	return string(data)
}

// LogTail returns the last n lines of the broker log, with a header naming the file.
func (b *Broker) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(b.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return fmt.Sprintf("----- last %d lines of %s -----\n%s\n----- end of broker log -----", len(lines), b.LogPath, strings.Join(lines, "\n"))
}

func (b *Broker) cleanup() {
	b.Kill()
	if b.t.Failed() {
		b.t.Logf("broker dir kept for inspection: %s\n%s", b.Dir, b.LogTail(200))
		return
	}
	if os.Getenv("KGO_KEEP_DIRS") != "" {
		b.t.Logf("broker dir kept (KGO_KEEP_DIRS): %s", b.Dir)
		return
	}
	_ = os.RemoveAll(b.Dir)
}

// Client returns a franz-go client for this broker, closed at the end of the test.
func (b *Broker) Client(opts ...kgo.Opt) *kgo.Client {
	b.t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr)}, opts...)...)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(cl.Close)
	return cl
}

// MetaProperties parses <log.dirs>/meta.properties.
func (b *Broker) MetaProperties() map[string]string {
	b.t.Helper()
	return readProperties(b.t, filepath.Join(b.DataDir, "meta.properties"))
}

// VmRSSKiB reads VmRSS from /proc/<pid>/status (0 if unavailable).
func VmRSSKiB(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// readProperties parses a Java properties file (key=value lines, # comments).
func readProperties(t testing.TB, path string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}

// freePorts returns n distinct free TCP ports on 127.0.0.1. All listeners are held
// until all ports are chosen, so the n ports differ from each other.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// portFree reports whether 127.0.0.1:port and :port can be listened on now.
func portFree(port int) bool {
	for _, addr := range []string{fmt.Sprintf(":%d", port), fmt.Sprintf("127.0.0.1:%d", port)} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}

func isClosed(c chan struct{}) bool {
	if c == nil {
		return true
	}
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func exitDesc(err error) string {
	if err == nil {
		return "exit code 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit code %d", ee.ExitCode())
	}
	return err.Error()
}

func sanitize(name string) string {
	r := strings.NewReplacer("/", "_", " ", "_", ":", "_")
	s := r.Replace(name)
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// ---------------------------------------------------------------------------
// Running tools

// ToolResult is what a finished command printed and how it ended.
type ToolResult struct {
	Cmd      string
	Stdout   string
	Stderr   string
	ExitCode int // -1 if it was killed (timeout)
	TimedOut bool
	Duration time.Duration
}

func (r ToolResult) String() string {
	return fmt.Sprintf("$ %s\n(exit %d after %v, timed out: %v)\n--- stdout ---\n%s\n--- stderr ---\n%s",
		r.Cmd, r.ExitCode, r.Duration.Round(time.Millisecond), r.TimedOut, r.Stdout, r.Stderr)
}

// RunOpts control RunCommand.
type RunOpts struct {
	Timeout time.Duration // default 90s
	Stdin   string
	Dir     string
	Env     []string
	// Hermetic drops KAFKA_*, CLUSTER_ID and KGO_LOG_* from the inherited
	// environment (for running the broker binary's subcommands).
	Hermetic bool
}

// RunCommand runs a program with a timeout, capturing stdout, stderr and the exit code.
func RunCommand(t testing.TB, o RunOpts, name string, args ...string) ToolResult {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = o.Dir
	base := os.Environ()
	if o.Hermetic {
		base = hermeticEnv()
	}
	cmd.Env = append(base, o.Env...)
	cmd.Stdin = strings.NewReader(o.Stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := ToolResult{
		Cmd:      shellQuote(append([]string{name}, args...)),
		Stdout:   stdout.String(),
		Stderr:   stderr.String(),
		Duration: time.Since(start),
		TimedOut: ctx.Err() != nil,
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		res.ExitCode = 0
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
	default:
		t.Fatalf("running %s: %v", res.Cmd, err)
	}
	return res
}

// KafkaTool runs scripts/kafka-tool <tool> args... (e.g. "kafka-topics.sh").
func KafkaTool(t testing.TB, o RunOpts, tool string, args ...string) ToolResult {
	t.Helper()
	requireKafkaTools(t)
	return RunCommand(t, o, filepath.Join(repoRoot, "scripts", "kafka-tool"), append([]string{tool}, args...)...)
}

// MustKafkaTool runs a tool and fails the test unless it exits 0.
func MustKafkaTool(t testing.TB, o RunOpts, tool string, args ...string) ToolResult {
	t.Helper()
	r := KafkaTool(t, o, tool, args...)
	if r.ExitCode != 0 || r.TimedOut {
		t.Fatalf("%s failed:\n%s", tool, r)
	}
	return r
}

func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`*?;&|<>()") {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
