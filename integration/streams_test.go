//go:build integration

package integration

// Kafka Streams 4.4 with processing.guarantee=exactly_once_v2
// (integration/java/StreamsCount.java: re-key by value -> repartition topic
// -> count() in a changelogged RocksDB store -> output) against the broker:
// its counts are exact, without a crash, across a kill -9 of the app and a
// restart, and across a kill -9 of the broker and a restart.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	streamsWords  = 12
	streamsPhase  = 1000 // input records per phase; three phases
	streamsPhases = 3
)

// countWatcher follows the Streams output under read_committed and keeps
// every count each word went through.
type countWatcher struct {
	mu      sync.Mutex
	seq     map[string][]int64
	total   int
	changed chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

func watchCounts(t testing.TB, addr, topic string) *countWatcher {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &countWatcher{seq: map[string][]int64{}, changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer cl.Close()
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			w.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				n, err := strconv.ParseInt(string(r.Value), 10, 64)
				if err != nil {
					n = -1
				}
				w.seq[string(r.Key)] = append(w.seq[string(r.Key)], n)
				w.total++
			})
			close(w.changed)
			w.changed = make(chan struct{})
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-w.done })
	return w
}

// waitTotal waits until at least n count updates were committed.
func (w *countWatcher) waitTotal(t testing.TB, n int, timeout time.Duration, app *bgProc) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		w.mu.Lock()
		total, changed := w.total, w.changed
		w.mu.Unlock()
		if total >= n {
			return
		}
		var exited <-chan struct{}
		if app != nil {
			exited = app.done
		}
		select {
		case <-changed:
		case <-exited:
			t.Fatalf("the Streams app exited (%s) with %d of %d count updates committed", procExit(app.cmd), total, n)
		case <-deadline:
			t.Fatalf("%d of %d count updates committed within %v; the last count of each word: %s", total, n, timeout, w.last())
		}
	}
}

func (w *countWatcher) totalNow() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.total
}

func (w *countWatcher) last() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var parts []string
	for i := 0; i < streamsWords; i++ {
		word := fmt.Sprintf("w%02d", i)
		s := w.seq[word]
		if len(s) == 0 {
			parts = append(parts, word+"=none")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%d", word, s[len(s)-1]))
	}
	return strings.Join(parts, " ")
}

// check: each word went through exactly 1, 2, ..., want (a repeat is a
// duplicate, a gap a loss), and no other key appeared.
func (w *countWatcher) check(t testing.TB, want int64) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, s := range w.seq {
		if !strings.HasPrefix(key, "w") || len(key) != 3 {
			t.Errorf("output key %q is no word of the input", key)
			continue
		}
		ok := int64(len(s)) == want
		for i, n := range s {
			if n != int64(i+1) {
				ok = false
			}
		}
		if !ok {
			t.Errorf("word %s: committed counts %s, want exactly 1..%d", key, summarize(s), want)
		}
	}
	if len(w.seq) != streamsWords {
		t.Errorf("%d words in the output, want %d", len(w.seq), streamsWords)
	}
}

// summarize prints a count sequence with its runs collapsed (1..40 41 41 42..).
func summarize(s []int64) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if j > i {
			fmt.Fprintf(&b, "%d..%d", s[i], s[j])
		} else {
			fmt.Fprintf(&b, "%d", s[i])
		}
		i = j + 1
	}
	return fmt.Sprintf("[%s] (%d updates)", b.String(), len(s))
}

// produceWords writes phase's input records: key r<i>, value w<i mod words>.
// trickleWords writes the second phase of the input, 25 records every 50
// ms, so that a crash comes while the app has records in flight; the
// channel closes when it is written.
func trickleWords(t testing.TB, pcl *kgo.Client, in string) <-chan struct{} {
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; i < streamsPhase; i += 25 {
			<-tick.C
			var recs []*kgo.Record
			for j := i; j < i+25; j++ {
				n := streamsPhase + j
				recs = append(recs, &kgo.Record{Topic: in, Key: []byte(fmt.Sprintf("r%d", n)), Value: []byte(fmt.Sprintf("w%02d", n%streamsWords))})
			}
			if err := pcl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
				t.Errorf("producing phase 1 of the input: %v", err)
				return
			}
		}
	}()
	return produced
}

func produceWords(t testing.TB, cl *kgo.Client, topic string, phase int) {
	t.Helper()
	recs := make([]*kgo.Record, streamsPhase)
	for i := range recs {
		n := phase*streamsPhase + i
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("r%d", n)), Value: []byte(fmt.Sprintf("w%02d", n%streamsWords))}
	}
	if err := cl.ProduceSync(ctxT(t, 120*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("producing phase %d of the input: %v", phase, err)
	}
}

// startStreamsApp starts StreamsCount and waits until it is RUNNING; extra
// are more of its arguments (s.<config>=<value> sets a StreamsConfig).
func startStreamsApp(t testing.TB, addr, app, in, out, state string, extra ...string) *bgProc {
	t.Helper()
	args := append([]string{"bootstrap=" + addr, "app=" + app, "in=" + in, "out=" + out, "state=" + state}, extra...)
	p := startJava(t, "384m", "StreamsCount", args...)
	p.WaitEvent(120*time.Second, "the Streams app to reach RUNNING", func(e JavaEvent) bool {
		return e.Str("event") == "state" && e.Str("state") == "RUNNING"
	})
	return p
}

// streamsExactlyOnce runs the three input phases through the app; between
// phase 2 and 3, once part of phase 2 is committed, crash kills the app or
// the broker (kill -9) and starts it again.
func streamsExactlyOnce(t *testing.T, crash string) {
	t.Parallel()
	start := time.Now()
	b := startTxnBroker(t, nil)
	app := "it-streams-" + crash
	in, out := app+"-in", app+"-out"
	createTopic(t, b, in, 3, nil)
	createTopic(t, b, out, 2, nil)
	state := t.TempDir()
	w := watchCounts(t, b.Addr, out)
	p := startStreamsApp(t, b.Addr, app, in, out, state)
	t.Logf("Streams app RUNNING %v after the test's start", time.Since(start).Round(time.Second))

	pcl := b.Client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(100), kgo.RecordDeliveryTimeout(120*time.Second))
	produceWords(t, pcl, in, 0)
	w.waitTotal(t, streamsPhase, 120*time.Second, p)

	// Phase 2 trickles in (25 records every 50ms, about 2s), so that the
	// crash comes while the app has records in flight.
	produced := trickleWords(t, pcl, in)
	w.waitTotal(t, streamsPhase+200, 120*time.Second, p)
	switch crash {
	case "app":
		p.Kill()
		t.Logf("killed the Streams app (kill -9) at %d committed updates", w.totalNow())
		<-produced
		restart := time.Now()
		p = startStreamsApp(t, b.Addr, app, in, out, state)
		t.Logf("restarted app RUNNING after %v", time.Since(restart).Round(100*time.Millisecond))
	case "broker":
		b.Kill()
		t.Logf("killed the broker (kill -9) at %d committed updates", w.totalNow())
		b.Start()
		b.WaitReady()
		<-produced
	default:
		<-produced
	}
	produceWords(t, pcl, in, 2)
	w.waitTotal(t, streamsPhases*streamsPhase, 180*time.Second, p)
	w.check(t, streamsPhases*streamsPhase/streamsWords)
	for _, e := range eventsOf(p.Events(), "error") {
		t.Logf("the Streams app reported (thread replaced): %s", e)
	}
	t.Logf("final counts: %s", w.last())
}

// TestStreamsExactlyOnce: 3000 input records, counts of 12 words, no crash.
func TestStreamsExactlyOnce(t *testing.T) { streamsExactlyOnce(t, "none") }

// TestStreamsExactlyOnceAppKill: the app is killed with SIGKILL while it
// processes the second third of the input, and restarted on its state dir.
func TestStreamsExactlyOnceAppKill(t *testing.T) { streamsExactlyOnce(t, "app") }

// TestStreamsExactlyOnceBrokerKill: the broker is killed with SIGKILL while
// the app processes the second third of the input, and restarted.
func TestStreamsExactlyOnceBrokerKill(t *testing.T) { streamsExactlyOnce(t, "broker") }
