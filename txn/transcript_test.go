package txn

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata transcripts with the actual output")

// Transcript tests: testdata/*.txt hold scenarios in the style of
// etcd-io/raft's datadriven files: a command, "----", its output, a blank
// line. Lines starting with # are comments. After every command the
// harness waits until the coordinator is quiet (see harness.quiesce).
//
//	setup [partitions=1] [tv=2] [max-timeout=MS] [expiration=MS] [abort-interval=MS] [expire-interval=MS]
//	                          brokers 1-3; topics foo (leaders 1,2,3), bar (leader 2);
//	                          __transaction_state partitions led by node 1
//	init txn=T [timeout=MS] [pid=P epoch=E] [v=N]      InitProducerId
//	add txn=T pid=P epoch=E parts=foo-0,bar-0 [v=N] [verify=true]
//	                          AddPartitionsToTxn (v4+: one transaction of a batch)
//	offsets txn=T pid=P epoch=E partition=N [v=N]       AddOffsetsToTxn (__consumer_offsets-N)
//	end txn=T pid=P epoch=E commit|abort [v=N]          EndTxn
//	describe txn=T[,T2]       DescribeTransactions
//	list [states=A,B] [pids=P,Q] [duration=MS] [pattern=RE] [v=N]
//	state txn=T               the coordinator's metadata of T (pending state included)
//	find txn=T                FindCoordinator's leader
//	created                   the topics asked of the controller
//	markers                   the WriteTxnMarkers sent since the last "markers"
//	marker-error err=E [broker=B] [tp=foo-0] [times=N]   answer markers with E (times=0: always)
//	marker-down [broker=B] [times=N]                    transport errors
//	hold broker=B / release broker=B                   park / answer requests to B
//	advance DURATION          move the clock (timers fire)
//	commit-mode manual|auto / commit                   hold the high watermark / move it to the log end
//	fail-appends err=E|off    appends to __transaction_state fail
//	pid-fail err=E|off        the producer id allocator fails
//	leader topic=foo partition=N leader=B               leader change (-1: no leader)
//	delete-topic T
//	crash [truncate]          kill -9 the coordinator and fail over at a new leader epoch
//	                          (truncate: the new leader lacks what was not committed)
//	log [partition=N]         __transaction_state, decoded
//	async NAME COMMAND... / await NAME                 run a request in the background
func TestTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) { runTranscript(t, f) })
	}
}

func runTranscript(t *testing.T, path string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out strings.Builder
	r := &runner{t: t, async: map[string]chan []string{}}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		cmd := line
		i++
		if i >= len(lines) || lines[i] != "----" {
			t.Fatalf("%s:%d: command without ----", path, i)
		}
		i++
		var want []string
		for ; i < len(lines) && lines[i] != ""; i++ {
			want = append(want, lines[i])
		}
		got := r.run(cmd)
		out.WriteString(cmd + "\n----\n")
		for _, g := range got {
			out.WriteString(g + "\n")
		}
		if !*rewrite && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %s\nwant:\n%s\ngot:\n%s", path, cmd, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		if i < len(lines) {
			out.WriteString("\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type runner struct {
	t     *testing.T
	h     *harness
	async map[string]chan []string
}

var errCodes = func() map[string]int16 {
	m := map[string]int16{"NONE": 0}
	for code := int16(-1); code < 200; code++ {
		var ke *kerr.Error
		if errors.As(kerr.ErrorForCode(code), &ke) && ke.Code == code {
			m[ke.Message] = code
		}
	}
	m["NOT_LEADER_OR_FOLLOWER"] = kerr.NotLeaderForPartition.Code // Kafka's name since 2.6
	return m
}()

type args struct {
	t   *testing.T
	cmd string
	kv  map[string]string
	pos []string
}

func parseArgs(t *testing.T, fields []string) args {
	a := args{t: t, cmd: fields[0], kv: map[string]string{}}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else {
			a.pos = append(a.pos, f)
		}
	}
	return a
}

func (a args) has(k string) bool { _, ok := a.kv[k]; return ok }

func (a args) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a args) int(k string, def int64) int64 {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		a.t.Fatalf("%s: bad %s=%q", a.cmd, k, v)
	}
	return n
}

func (a args) code(k string) int16 {
	c, ok := errCodes[a.kv[k]]
	if !ok {
		a.t.Fatalf("%s: unknown error %q", a.cmd, a.kv[k])
	}
	return c
}

func (a args) parts(k string) []TopicPartition {
	var out []TopicPartition
	for _, s := range strings.Split(a.kv[k], ",") {
		if s == "" {
			continue
		}
		i := strings.LastIndexByte(s, '-')
		p, err := strconv.Atoi(s[i+1:])
		if i < 0 || err != nil {
			a.t.Fatalf("%s: bad partition %q", a.cmd, s)
		}
		out = append(out, TopicPartition{s[:i], int32(p)})
	}
	return out
}

func (r *runner) run(line string) []string {
	fields := strings.Fields(line)
	if fields[0] == "async" {
		name := fields[1]
		ch := make(chan []string, 1)
		r.async[name] = ch
		var done atomic.Bool
		before := r.h.c.opsRun.Load()
		go func() {
			out := r.request(parseArgs(r.t, fields[2:]))
			done.Store(true)
			ch <- out
		}()
		// Wait until the request ran on its loop (it may then wait for a
		// commit), or is done.
		deadline := time.Now().Add(5 * time.Second)
		for !done.Load() && r.h.c.opsRun.Load() == before {
			if time.Now().After(deadline) {
				r.t.Fatalf("async %s: the request did not run", name)
			}
			time.Sleep(100 * time.Microsecond)
		}
		r.h.quiesce()
		return []string{"started " + name}
	}
	if fields[0] == "await" {
		ch := r.async[fields[1]]
		if ch == nil {
			r.t.Fatalf("await: no async %s", fields[1])
		}
		select {
		case out := <-ch:
			r.h.quiesce()
			return out
		case <-time.After(5 * time.Second):
			r.t.Fatalf("await %s: still running", fields[1])
		}
	}
	a := parseArgs(r.t, fields)
	if a.cmd == "setup" {
		cfg := Config{
			MaxTimeout:            time.Duration(a.int("max-timeout", 900000)) * time.Millisecond,
			IDExpiration:          time.Duration(a.int("expiration", 604800000)) * time.Millisecond,
			AbortTimedOutInterval: time.Duration(a.int("abort-interval", 10000)) * time.Millisecond,
			RemoveExpiredInterval: time.Duration(a.int("expire-interval", 3600000)) * time.Millisecond,
		}
		r.h = newHarness(r.t, int32(a.int("partitions", 1)), int16(a.int("tv", 2)), cfg)
		return []string{"ok"}
	}
	if r.h == nil {
		r.t.Fatalf("%s before setup", line)
	}
	out := r.request(a)
	r.h.quiesce()
	return out
}

func ctx5() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}

func (r *runner) request(a args) []string {
	h := r.h
	ctx, cancel := ctx5()
	defer cancel()
	version := int16(a.int("v", -1))
	ver := func(def int16) int16 {
		if version >= 0 {
			return version
		}
		return def
	}
	switch a.cmd {
	case "init":
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = ver(5)
		id := a.str("txn", "")
		req.TransactionalID = &id
		req.TransactionTimeoutMillis = int32(a.int("timeout", 60000))
		req.ProducerID, req.ProducerEpoch = a.int("pid", -1), int16(a.int("epoch", -1))
		resp := h.c.HandleInitProducerID(ctx, req)
		return []string{fmt.Sprintf("error=%s pid=%d epoch=%d", errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)}

	case "add":
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = ver(3)
		parts := a.parts("parts")
		byTopic := map[string][]int32{}
		var topics []string
		for _, tp := range parts {
			if _, ok := byTopic[tp.Topic]; !ok {
				topics = append(topics, tp.Topic)
			}
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		if req.Version < 4 {
			req.TransactionalID, req.ProducerID, req.ProducerEpoch = a.str("txn", ""), a.int("pid", -1), int16(a.int("epoch", -1))
			for _, t := range topics {
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic, rt.Partitions = t, byTopic[t]
				req.Topics = append(req.Topics, rt)
			}
		} else {
			for _, id := range strings.Split(a.str("txn", ""), ",") {
				tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
				tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch = id, a.int("pid", -1), int16(a.int("epoch", -1))
				tx.VerifyOnly = a.str("verify", "false") == "true"
				for _, t := range topics {
					rt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
					rt.Topic, rt.Partitions = t, byTopic[t]
					tx.Topics = append(tx.Topics, rt)
				}
				req.Transactions = append(req.Transactions, tx)
			}
		}
		resp := h.c.HandleAddPartitionsToTxn(ctx, req)
		var out []string
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				out = append(out, fmt.Sprintf("%s-%d: %s", t.Topic, p.Partition, errName(p.ErrorCode)))
			}
		}
		for _, tx := range resp.Transactions {
			for _, t := range tx.Topics {
				for _, p := range t.Partitions {
					out = append(out, fmt.Sprintf("%s %s-%d: %s", tx.TransactionalID, t.Topic, p.Partition, errName(p.ErrorCode)))
				}
			}
		}
		return out

	case "offsets":
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.Version = ver(3)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = a.str("txn", ""), a.int("pid", -1), int16(a.int("epoch", -1))
		req.Group = "g"
		resp := h.c.HandleAddOffsetsToTxn(ctx, req, int32(a.int("partition", 0)))
		return []string{"error=" + errName(resp.ErrorCode)}

	case "end":
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = ver(5)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = a.str("txn", ""), a.int("pid", -1), int16(a.int("epoch", -1))
		switch {
		case len(a.pos) == 1 && a.pos[0] == "commit":
			req.Commit = true
		case len(a.pos) == 1 && a.pos[0] == "abort":
		default:
			r.t.Fatalf("end: commit or abort")
		}
		resp := h.c.HandleEndTxn(ctx, req)
		if req.Version >= 5 {
			return []string{fmt.Sprintf("error=%s pid=%d epoch=%d", errName(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch)}
		}
		return []string{"error=" + errName(resp.ErrorCode)}

	case "describe":
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = strings.Split(a.str("txn", ""), ",")
		resp := h.c.HandleDescribeTransactions(ctx, req)
		var out []string
		for _, st := range resp.TransactionStates {
			if st.ErrorCode != 0 {
				out = append(out, fmt.Sprintf("%s: error=%s", st.TransactionalID, errName(st.ErrorCode)))
				continue
			}
			var parts []string
			for _, t := range st.Topics {
				for _, p := range t.Partitions {
					parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
				}
			}
			out = append(out, fmt.Sprintf("%s: %s pid=%d epoch=%d timeout=%d start=%s [%s]", st.TransactionalID, st.State,
				st.ProducerID, st.ProducerEpoch, st.TimeoutMillis, relMs(st.StartTimestamp), strings.Join(parts, " ")))
		}
		return out

	case "list":
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = ver(2)
		if a.has("states") {
			req.StateFilters = strings.Split(a.kv["states"], ",")
		}
		if a.has("pids") {
			for _, s := range strings.Split(a.kv["pids"], ",") {
				n, _ := strconv.ParseInt(s, 10, 64)
				req.ProducerIDFilters = append(req.ProducerIDFilters, n)
			}
		}
		req.DurationFilterMillis = a.int("duration", -1)
		if a.has("pattern") {
			p := a.kv["pattern"]
			req.TransactionalIDPattern = &p
		}
		resp := h.c.HandleListTransactions(ctx, req)
		out := []string{"error=" + errName(resp.ErrorCode)}
		if len(resp.UnknownStateFilters) > 0 {
			out = append(out, "unknown states: "+strings.Join(resp.UnknownStateFilters, ","))
		}
		for _, st := range resp.TransactionStates {
			out = append(out, fmt.Sprintf("%s pid=%d %s", st.TransactionalID, st.ProducerID, st.TransactionState))
		}
		return out

	case "state":
		id := a.str("txn", "")
		var s string
		h.onLoop(id, func(sh *shard) {
			if m := sh.txns[id]; m != nil {
				s = describeMeta(m, false)
				if sh.markers[id] != nil {
					s += " markers_pending"
				}
			} else {
				s = "(none)"
			}
		})
		return []string{s}

	case "find":
		leader, err := h.c.FindCoordinator(a.str("txn", ""))
		if err != nil {
			return []string{"error=" + errName(int16(ErrorCode(err)))}
		}
		return []string{fmt.Sprintf("partition=%d leader=%d", h.c.PartitionFor(a.str("txn", "")), leader)}

	case "created":
		h.ctrl.mu.Lock()
		defer h.ctrl.mu.Unlock()
		if len(h.ctrl.created) == 0 {
			return []string{"(none)"}
		}
		return append([]string(nil), h.ctrl.created...)

	case "markers":
		return h.sentLines()

	case "marker-error", "marker-down":
		rule := &markerRule{broker: int32(a.int("broker", -1)), left: int(a.int("times", 1)), transport: a.cmd == "marker-down"}
		if rule.left == 0 {
			rule.left = -1
		}
		if !rule.transport {
			rule.code = a.code("err")
		}
		if a.has("tp") {
			tp := a.parts("tp")[0]
			rule.tp = &tp
		}
		h.mk.mu.Lock()
		h.mk.rules = append(h.mk.rules, rule)
		h.mk.mu.Unlock()
		return []string{"ok"}

	case "hold":
		h.mk.mu.Lock()
		h.mk.held[int32(a.int("broker", 0))] = make(chan struct{})
		h.mk.mu.Unlock()
		return []string{"ok"}

	case "release":
		b := int32(a.int("broker", 0))
		h.mk.mu.Lock()
		h.mk.releaseLocked(b)
		h.mk.mu.Unlock()
		return []string{"ok"}

	case "advance":
		d, err := time.ParseDuration(a.pos[0])
		if err != nil {
			r.t.Fatalf("advance: %v", err)
		}
		h.clock.Advance(d)
		return []string{fmt.Sprintf("now=+%d", h.clock.Now().UnixMilli()-clockStart.UnixMilli())}

	case "commit-mode":
		h.log.SetAutoCommit(a.pos[0] == "auto")
		if a.pos[0] == "auto" {
			h.commitAll()
		}
		return []string{"ok"}

	case "commit":
		h.commitAll()
		return []string{"ok"}

	case "fail-appends":
		if a.kv["err"] == "off" {
			h.log.FailAppends(nil)
		} else {
			h.log.FailAppends(kerr.ErrorForCode(a.code("err")))
		}
		return []string{"ok"}

	case "pid-fail":
		h.pids.mu.Lock()
		if a.kv["err"] == "off" {
			h.pids.fail = nil
		} else {
			h.pids.fail = kerr.ErrorForCode(a.code("err"))
		}
		h.pids.mu.Unlock()
		return []string{"ok"}

	case "leader":
		h.setLeader(a.str("topic", ""), int32(a.int("partition", 0)), int32(a.int("leader", -1)))
		return []string{"ok"}

	case "delete-topic":
		h.deleteTopic(a.pos[0])
		return []string{"ok"}

	case "crash":
		if len(a.pos) > 0 && a.pos[0] == "truncate" {
			// The new leader never got what was not committed.
			for p := int32(0); p < h.nparts; p++ {
				tp := coordinator.TopicPartition{Topic: TopicName, Partition: p}
				hw, _ := h.log.HighWatermark(tp)
				h.log.Truncate(tp, hw)
			}
		}
		h.crash()
		return []string{fmt.Sprintf("reloaded at leader epoch %d", h.cache.Image().TopicByName(TopicName).Partition(0).LeaderEpoch)}

	case "log":
		return h.logLines(int32(a.int("partition", 0)))

	case "seed":
		// Write a record as an older coordinator would have, then fail
		// over so that the coordinator loads it.
		id := a.str("txn", "")
		st, ok := StateFromName(a.str("state", "Empty"))
		if !ok {
			r.t.Fatalf("seed: bad state")
		}
		t := transit{producerID: a.int("pid", 0), prevProducerID: a.int("prev", -1), nextProducerID: a.int("next", -1),
			producerEpoch: int16(a.int("epoch", 0)), timeoutMs: int32(a.int("timeout", 60000)), state: st, partitions: tpSet{},
			startMs: clockStart.UnixMilli() + a.int("start", -1), lastUpdateMs: clockStart.UnixMilli() + a.int("updated", 0),
			clientTV: int16(a.int("ctv", 0))}
		if !a.has("start") {
			t.startMs = -1
		}
		for _, tp := range a.parts("parts") {
			t.partitions[tp] = struct{}{}
		}
		tp := coordinator.TopicPartition{Topic: TopicName, Partition: h.c.PartitionFor(id)}
		rec := coordinator.Record{Key: encodeKey(id), Value: encodeValue(t, h.c.transactionVersion())}
		if _, err := h.log.Append(tp, -1, coordinator.Batch{ProducerID: -1, Records: []coordinator.Record{rec}}); err != nil {
			r.t.Fatal(err)
		}
		if a.str("raw", "") == "corrupt" {
			bad := coordinator.Record{Key: encodeKey("corrupt"), Value: []byte{0, 1, 0xff}}
			unknown := coordinator.Record{Key: []byte{0, 9, 'x'}, Value: []byte{0, 0}}
			if _, err := h.log.Append(tp, -1, coordinator.Batch{ProducerID: -1, Records: []coordinator.Record{bad, unknown}}); err != nil {
				r.t.Fatal(err)
			}
		}
		h.crash()
		return []string{"reloaded"}
	}
	r.t.Fatalf("unknown command %q", a.cmd)
	return nil
}

func (h *harness) logEnds() int64 {
	var n int64
	for p := int32(0); p < h.nparts; p++ {
		n += h.log.LogEnd(coordinator.TopicPartition{Topic: TopicName, Partition: p})
	}
	return n
}

func (h *harness) commitAll() {
	for p := int32(0); p < h.nparts; p++ {
		h.log.CommitAll(coordinator.TopicPartition{Topic: TopicName, Partition: p})
	}
}
