//go:build integration

package integration

// Shared helpers of the transaction and exactly-once tests (txn_*_test.go,
// streams_test.go):
//
//   - javaClasses compiles integration/java/*.java once per run with javac
//     against the Kafka jars of scripts/install-tools.sh (scripts/kafka-tool
//     --libs), cached under $KGO_CACHE/java-classes/<hash of the sources,
//     the libs directory and javac's version>, so that later runs reuse it;
//   - runJava / mustTxnTool run one of those programs to completion and
//     parse its JSON lines; startJava runs one in the background (Streams
//     apps, stalled producers; startProc for any program) to wait on, write
//     to, kill -9 or stop;
//   - requireTxnAPIs fails a test at once, naming the missing APIs, when a
//     broker's ApiVersions lacks what transactions need (today's kgo-broker),
//     instead of leaving it to client timeouts;
//   - readTopic reads a topic through a franz-go consumer of either
//     isolation level, up to a sentinel record it appends to every
//     partition first, so that "everything committed so far" is exact.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// ---------------------------------------------------------------------------
// Compiling integration/java

var (
	javaOnce sync.Once
	javaCP   string // classes dir + ":" + libs/*
	javaErr  error
	javaSkip error // a missing tool (javac, the jars): skip unless KGO_REQUIRE_TOOLS
)

// javaClasspath compiles integration/java/*.java (once per test binary, and
// only when the cache lacks this exact build) and returns the classpath to
// run them with.
func javaClasspath(t testing.TB) string {
	t.Helper()
	requireKafkaTools(t)
	javaOnce.Do(func() { javaCP, javaSkip, javaErr = compileJava() })
	missingTool(t, javaSkip)
	if javaErr != nil {
		t.Fatalf("compiling integration/java: %v", javaErr)
	}
	return javaCP
}

func compileJava() (cp string, skip, err error) {
	javac, lerr := exec.LookPath("javac")
	if lerr != nil {
		return "", fmt.Errorf("javac is not on PATH (%v); run scripts/install-tools.sh", lerr), nil
	}
	out, lerr := exec.Command(filepath.Join(repoRoot, "scripts", "kafka-tool"), "--libs").Output()
	if lerr != nil {
		return "", nil, fmt.Errorf("scripts/kafka-tool --libs: %v", lerr)
	}
	libs := strings.TrimSpace(string(out))
	srcs, _ := filepath.Glob(filepath.Join(repoRoot, "integration", "java", "*.java"))
	sort.Strings(srcs)
	if len(srcs) == 0 {
		return "", nil, errors.New("no integration/java/*.java")
	}
	ver, _ := exec.Command(javac, "-version").CombinedOutput()
	h := sha256.New()
	fmt.Fprintf(h, "libs=%s\njavac=%s\n", libs, ver)
	for _, s := range srcs {
		data, rerr := os.ReadFile(s)
		if rerr != nil {
			return "", nil, rerr
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(s), len(data))
		h.Write(data)
	}
	cache := os.Getenv("KGO_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "kgo-broker")
	}
	dir := filepath.Join(cache, "java-classes", hex.EncodeToString(h.Sum(nil))[:16])
	cp = dir + string(os.PathListSeparator) + filepath.Join(libs, "*")
	if fileExists(filepath.Join(dir, ".complete")) {
		return cp, nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", nil, err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "build-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	args := append([]string{"--release", "17", "-Xlint:all", "-Werror", "-d", tmp, "-cp", filepath.Join(libs, "*")}, srcs...)
	cmd := exec.Command(javac, args...)
	if msg, cerr := cmd.CombinedOutput(); cerr != nil {
		return "", nil, fmt.Errorf("javac %s: %v\n%s", strings.Join(args, " "), cerr, msg)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		return "", nil, err
	}
	// Another test binary may have won the race; either copy is the same build.
	if err := os.Rename(tmp, dir); err != nil && !fileExists(filepath.Join(dir, ".complete")) {
		return "", nil, err
	}
	return cp, nil, nil
}

// javaArgs is the JVM command line for one of integration/java's programs:
// a small heap and quick start-up, logs through the tools' log4j2 config
// (stderr, level warn unless KGO_TOOLS_LOG_LEVEL says otherwise).
func javaArgs(t testing.TB, heap, main string, args ...string) []string {
	t.Helper()
	cp := javaClasspath(t)
	level := os.Getenv("KGO_TOOLS_LOG_LEVEL")
	if level == "" {
		level = "warn"
	}
	return append([]string{
		"-Xmx" + heap, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + filepath.Join(repoRoot, "integration", "kafka", "tools-log4j2.properties"),
		"-Dkgo.tools.log.level=" + level,
		"-cp", cp, main,
	}, args...)
}

func javaBin() string {
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return filepath.Join(h, "bin", "java")
	}
	return "java"
}

// ---------------------------------------------------------------------------
// Running them

// JavaEvent is one JSON line a program printed.
type JavaEvent map[string]any

// Str is the string form of field k ("" if absent).
func (e JavaEvent) Str(k string) string {
	v, ok := e[k]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	return fmt.Sprint(v)
}

// Int is field k as an integer (-1 if absent or not a number).
func (e JavaEvent) Int(k string) int64 {
	if f, ok := e[k].(float64); ok {
		return int64(f)
	}
	return -1
}

// Strs is field k as a list of strings.
func (e JavaEvent) Strs(k string) []string {
	l, _ := e[k].([]any)
	out := make([]string, 0, len(l))
	for _, v := range l {
		out = append(out, fmt.Sprint(v))
	}
	return out
}

func (e JavaEvent) String() string {
	b, _ := json.Marshal(map[string]any(e))
	return string(b)
}

// parseEvents returns the JSON lines of out (others are skipped).
func parseEvents(out string) []JavaEvent {
	var evs []JavaEvent
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if !strings.HasPrefix(l, "{") {
			continue
		}
		var e JavaEvent
		if json.Unmarshal([]byte(l), &e) == nil {
			evs = append(evs, e)
		}
	}
	return evs
}

// eventsOf filters events by their "event" field.
func eventsOf(evs []JavaEvent, name string) []JavaEvent {
	var out []JavaEvent
	for _, e := range evs {
		if e.Str("event") == name {
			out = append(out, e)
		}
	}
	return out
}

// javaRun is a finished program's output and events.
type javaRun struct {
	ToolResult
	Events []JavaEvent
}

// runTxnTool runs TxnTool <command> bootstrap=<addr> args... to completion.
// The tool's own watchdog is set a little below timeout so that it reports
// "deadline" before the harness kills it.
func runTxnTool(t testing.TB, timeout time.Duration, addr, command string, args ...string) javaRun {
	t.Helper()
	if timeout == 0 {
		timeout = 90 * time.Second
	}
	all := append([]string{command, "bootstrap=" + addr, fmt.Sprintf("deadline.ms=%d", (timeout - 5*time.Second).Milliseconds())}, args...)
	r := RunCommand(t, RunOpts{Timeout: timeout}, javaBin(), javaArgs(t, "256m", "TxnTool", all...)...)
	return javaRun{ToolResult: r, Events: parseEvents(r.Stdout)}
}

// mustTxnTool is runTxnTool that fails the test unless the tool finished
// with {"event":"done"} and exit 0, naming the step that failed.
func mustTxnTool(t testing.TB, timeout time.Duration, addr, command string, args ...string) javaRun {
	t.Helper()
	r := runTxnTool(t, timeout, addr, command, args...)
	if r.ExitCode != 0 || len(eventsOf(r.Events, "done")) == 0 {
		t.Fatalf("TxnTool %s failed: %s\n%s", command, javaFailure(r), tail(r.String(), 80))
	}
	return r
}

// javaFailure names why a run failed, from its error or deadline event.
func javaFailure(r javaRun) string {
	for _, e := range r.Events {
		switch e.Str("event") {
		case "error":
			return fmt.Sprintf("%s threw %s: %s (cause %s: %s)", e.Str("op"), e.Str("exception"), e.Str("message"), e.Str("cause"), e.Str("causeMessage"))
		case "deadline":
			return fmt.Sprintf("its watchdog stopped it after %sms", e.Str("ms"))
		}
	}
	if r.TimedOut {
		return fmt.Sprintf("killed after %v", r.Duration.Round(time.Second))
	}
	return fmt.Sprintf("exit code %d", r.ExitCode)
}

// javaRecord is a record as TxnTool consume printed it.
type javaRecord struct {
	Partition  int32
	Offset     int64
	Key, Value string
}

// javaConsume reads topic from the start to its end offsets (the last stable
// offset under read_committed) with Kafka's Java consumer, and returns the
// records and the end offsets it used.
func javaConsume(t testing.TB, addr, topic, isolation string) ([]javaRecord, map[int32]int64) {
	t.Helper()
	r := mustTxnTool(t, 60*time.Second, addr, "consume", "topic="+topic, "isolation="+isolation)
	var recs []javaRecord
	for _, e := range eventsOf(r.Events, "record") {
		recs = append(recs, javaRecord{Partition: int32(e.Int("partition")), Offset: e.Int("offset"), Key: e.Str("key"), Value: e.Str("value")})
	}
	ends := map[int32]int64{}
	for _, e := range eventsOf(r.Events, "endOffset") {
		ends[int32(e.Int("partition"))] = e.Int("offset")
	}
	return recs, ends
}

// bgProc is a program running in the background (a Java program, kcat).
type bgProc struct {
	t     testing.TB
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{}

	mu      sync.Mutex
	lines   []string
	stderr  bytes.Buffer
	changed chan struct{} // closed and replaced on every new stdout line
}

// startJava starts one of integration/java's programs in the background.
func startJava(t testing.TB, heap, main string, args ...string) *bgProc {
	t.Helper()
	return startProc(t, main, javaBin(), javaArgs(t, heap, main, args...)...)
}

// startProc starts bin with args in its own process group (so that Kill is
// a kill -9 of all of it), killed at the end of the test; on failure its
// output is logged.
func startProc(t testing.TB, name, bin string, args ...string) *bgProc {
	t.Helper()
	p := &bgProc{t: t, name: name, done: make(chan struct{}), changed: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		_ = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s (pid %d, %s) output:\n%s", p.name, p.cmd.Process.Pid, procExit(p.cmd), tail(p.Output(), 60))
		}
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// Events returns every JSON line printed so far.
func (p *bgProc) Events() []JavaEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return parseEvents(strings.Join(p.lines, "\n"))
}

// Output is stdout and stderr so far.
func (p *bgProc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("--- stdout ---\n%s\n--- stderr ---\n%s", strings.Join(p.lines, "\n"), p.stderr.String())
}

// WaitEvent waits until the program has printed an event matching match
// (counting from the first line), and returns it; the program exiting or
// timeout passing fails the test.
func (p *bgProc) WaitEvent(timeout time.Duration, what string, match func(JavaEvent) bool) JavaEvent {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		for _, e := range p.Events() {
			if match(e) {
				return e
			}
			if e.Str("event") == "deadline" {
				p.t.Fatalf("%s: waiting for %s: its watchdog stopped it", p.name, what)
			}
		}
		select {
		case <-changed:
		case <-p.done:
			for _, e := range p.Events() {
				if match(e) {
					return e
				}
			}
			p.t.Fatalf("%s exited (%s) while the test waited for %s", p.name, procExit(p.cmd), what)
		case <-deadline:
			p.t.Fatalf("%s: waited %v for %s in vain", p.name, timeout, what)
		}
	}
}

// Send writes a line to the program's stdin.
func (p *bgProc) Send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("writing to %s: %v", p.name, err)
	}
}

// Wait waits for the program to exit by itself and returns its exit code.
func (p *bgProc) Wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %v", p.name, timeout)
		return -1
	}
}

// Signal sends sig to the program.
func (p *bgProc) Signal(sig syscall.Signal) {
	_ = p.cmd.Process.Signal(sig)
}

// CloseStdin closes the program's standard input.
func (p *bgProc) CloseStdin() { _ = p.stdin.Close() }

// Kill is kill -9 of the JVM's process group; it returns once it is gone.
func (p *bgProc) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// Stop sends SIGTERM and waits up to 30s, then kills.
func (p *bgProc) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.t.Errorf("%s did not exit within 30s of SIGTERM; killing it", p.name)
		p.Kill()
	}
}

// ---------------------------------------------------------------------------
// Broker checks

// txnAPIs are the APIs a transactional client and the coordinator use.
var txnAPIs = []int16{
	kmsg.InitProducerID.Int16(), kmsg.AddPartitionsToTxn.Int16(), kmsg.AddOffsetsToTxn.Int16(),
	kmsg.EndTxn.Int16(), kmsg.WriteTxnMarkers.Int16(), kmsg.TxnOffsetCommit.Int16(),
}

// txnAdminAPIs are the ones kafka-transactions.sh adds.
var txnAdminAPIs = []int16{
	kmsg.DescribeProducers.Int16(), kmsg.DescribeTransactions.Int16(), kmsg.ListTransactions.Int16(),
}

// requireTxnAPIs fails the test now, naming what is missing, unless the
// broker at addr advertises every API in keys (txnAPIs when none). Without
// it a client would only time out, slowly and with a vaguer message.
func requireTxnAPIs(t testing.TB, addr string, keys ...int16) {
	t.Helper()
	if len(keys) == 0 {
		keys = txnAPIs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := protocol.Dial(ctx, addr, "kgo-it-txn")
	if err != nil {
		t.Fatalf("ApiVersions from %s: %v", addr, err)
	}
	defer cl.Close()
	var missing []string
	for _, k := range keys {
		if _, _, ok := cl.Versions(k); !ok {
			missing = append(missing, fmt.Sprintf("%s (%d)", kmsg.NameForKey(k), k))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("the broker at %s does not support transactions: its ApiVersions lacks %s", addr, strings.Join(missing, ", "))
	}
}

// txnOverrides are broker settings every transaction test uses: the
// coordinator aborts timed-out transactions within a second of their
// timeout (Kafka's default check runs every 10s).
func txnOverrides(extra map[string]string) map[string]string {
	o := map[string]string{
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// ---------------------------------------------------------------------------
// Reading back with franz-go

// waitStable waits until no partition of topic has an open transaction: its
// last stable offset is its log end offset. A commit or abort returns to the
// producer once the coordinator has decided; the markers follow.
func waitStable(t testing.TB, seeds []string, topic string) map[int32]int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	leo := map[int32]int64{}
	waitFor(t, 60*time.Second, "the markers of "+topic+"'s transactions (last stable offset = log end offset)", func() error {
		ends, err := adm.ListEndOffsets(ctxT(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		stable, err := adm.ListCommittedOffsets(ctxT(t, 10*time.Second), topic)
		if err != nil {
			return err
		}
		var errs []string
		for p, e := range ends[topic] {
			s, _ := stable.Lookup(topic, p)
			if e.Err != nil || s.Err != nil || s.Offset != e.Offset {
				errs = append(errs, fmt.Sprintf("%s-%d: last stable offset %d, log end offset %d (%v %v)", topic, p, s.Offset, e.Offset, e.Err, s.Err))
			}
			leo[p] = e.Offset
		}
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "; "))
		}
		return nil
	})
	return leo
}

const sentinelKey = "__kgo_it_sentinel__"

// readTopic appends a sentinel record to every partition of topic (a plain,
// non-transactional produce), then reads the topic from the start with the
// given isolation until it has seen every sentinel. The sentinels are
// dropped from the result. Under read_committed this is exactly what was
// committed before the call, and nothing aborted.
func readTopic(t testing.TB, seeds []string, topic string, isolation kgo.IsolationLevel, timeout time.Duration) []*kgo.Record {
	t.Helper()
	ctx := ctxT(t, timeout)
	adm, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	md, err := kadm.NewClient(adm).Metadata(ctx, topic)
	if err != nil || md.Topics[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, md.Topics[topic].Err)
	}
	parts := md.Topics[topic].Partitions.Numbers()
	var sentinels []*kgo.Record
	for _, p := range parts {
		sentinels = append(sentinels, &kgo.Record{Topic: topic, Partition: p, Key: []byte(sentinelKey)})
	}
	pcl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordDeliveryTimeout(timeout/2))
	if err != nil {
		t.Fatal(err)
	}
	defer pcl.Close()
	if err := pcl.ProduceSync(ctx, sentinels...).FirstErr(); err != nil {
		t.Fatalf("producing the sentinel records to %s: %v", topic, err)
	}
	ccl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(isolation))
	if err != nil {
		t.Fatal(err)
	}
	defer ccl.Close()
	seen := map[int32]bool{}
	var recs []*kgo.Record
	for len(seen) < len(parts) {
		fs := ccl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: saw the sentinel of %d of %d partitions (%d records) within %v", topic, len(seen), len(parts), len(recs), timeout)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) == sentinelKey {
				seen[r.Partition] = true
				return
			}
			recs = append(recs, r)
		})
	}
	return recs
}

// procExit describes how a finished command ended.
func procExit(cmd *exec.Cmd) string {
	if cmd.ProcessState == nil {
		return "still running"
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit code %d", cmd.ProcessState.ExitCode())
}
