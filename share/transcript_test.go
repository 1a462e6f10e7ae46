package share

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/sharestate"
	"github.com/kgo-broker/kgo-broker/storage"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata transcripts with the actual output")

// Transcript tests: testdata/*.txt hold scenarios in the style of
// etcd-io/raft's datadriven files: a command, "----", its output, a blank
// line. Lines starting with # are comments. One share group "g" on topic
// foo (partitions 0 and 1) of a fake log, a manual clock starting at 0 ms,
// and a MemPersister that survives "restart".
//
//	setup [lock=MS] [limit=N] [max-locks=N] [reset=earliest|latest] [isolation=read_committed] [sessions=N] [dlq=TOPIC]
//	                                       dlq: share.version 2 and the group's DLQ topic
//	dlq run|fail                           run the DLQ writes queued so far, answering ok or an error
//	produce [p=N] n=N [gap=N] [pid=P txn]  append a batch of n records (gap: after N offsets
//	                                       compaction removed; pid/txn: transactional)
//	marker [p=N] pid=P commit|abort        append a transaction marker
//	fetch member=M [p=0,1] [max-records=N] [mode=batch|record] [batch-size=N] [max-bytes=N]
//	ack member=M [p=N] RANGES [renew]      RANGES: 0-4:accept,5:release,6-7:reject,8:gap,9:renew
//	                                       or 0-2:accept/release/accept (one type per offset)
//	advance MS                             move the clock and expire acquisition locks
//	leave member=M                         OnMemberLeft
//	group-empty                            OnGroupEmpty
//	config KEY=VALUE...                    set the group's configs (KEY alone: delete it)
//	state [p=N]                            the share partition and the persisted state
//	persist-fail CODE|off                  answer writes with CODE
//	restart [epoch=N]                      a new leader: a new manager on the same persister
//	delete-records [p=N] to=OFF            move the log start offset
//	session open|update|ack|close member=M [epoch=N] [add=0,1] [forget=0]
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
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out strings.Builder
	h := newHarness()
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			out.WriteString(line + "\n")
			continue
		}
		out.WriteString(line + "\n----\n")
		// skip the expected output
		var want []string
		if i+1 < len(lines) && lines[i+1] == "----" {
			i++
			for i+1 < len(lines) && lines[i+1] != "" {
				i++
				want = append(want, lines[i])
			}
		}
		got := h.run(t, line)
		out.WriteString(got)
		if !*rewrite && strings.TrimRight(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\n got:\n%s\nwant:\n%s", path, i+1, line, got, strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var topicID = [16]byte{0xf0, 0x0f}

type harness struct {
	now       time.Time
	log       *fakeLog
	persister *MemPersister
	m         *Manager
	defaults  Defaults
	group     map[string]string
	epoch     int32
	dlqOn     bool
	dlqQueue  []func()
	dlqFail   bool
	dlqLog    []string
}

func (h *harness) WriteDLQ(_ context.Context, r DLQRecords) error {
	s := fmt.Sprintf("dlq %s foo-%d %d-%d deliveries=%d cause=%q", r.Group, r.Partition, r.First, r.Last, r.Deliveries, r.Cause)
	if h.dlqFail {
		h.dlqLog = append(h.dlqLog, s+": failed")
		return fmt.Errorf("DLQ write failed")
	}
	h.dlqLog = append(h.dlqLog, s+": written")
	return nil
}

func newHarness() *harness {
	h := &harness{now: time.UnixMilli(0), log: newFakeLog(), persister: NewMemPersister(), group: map[string]string{}}
	h.defaults = Defaults{Limits: Limits{LockMs: 30000, DeliveryLimit: 5, MaxLocks: 2000}, MaxSessions: 2000}
	h.newManager()
	return h
}

func (h *harness) newManager() {
	h.log.epoch = h.epoch
	h.m = NewManager(Config{Persister: h.persister, Log: h.log, Defaults: h.defaults,
		GroupConfig: func(string) map[string]string { return h.group },
		Now:         func() time.Time { return h.now },
		DLQ:         h, DLQFeature: func() bool { return h.dlqOn },
		DLQSpawn: func(f func()) { h.dlqQueue = append(h.dlqQueue, f) }})
}

func args(fields []string) map[string]string {
	a := map[string]string{}
	for _, f := range fields {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			v = "true"
		}
		a[k] = v
	}
	return a
}

func num(a map[string]string, k string, def int64) int64 {
	if v, ok := a[k]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err == nil {
			return n
		}
	}
	return def
}

func parts(a map[string]string, def string) []FetchPart {
	s := a["p"]
	if s == "" {
		s = def
	}
	var out []FetchPart
	for _, f := range strings.Split(s, ",") {
		n, _ := strconv.Atoi(f)
		out = append(out, FetchPart{TopicPartition: TopicPartition{topicID, int32(n)}, Topic: "foo"})
	}
	return out
}

func errName(err error) string {
	if err == nil {
		return "ok"
	}
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Message
	}
	return err.Error()
}

func (h *harness) run(t *testing.T, line string) string {
	fields := strings.Fields(line)
	a := args(fields[1:])
	ctx := context.Background()
	var b strings.Builder
	switch fields[0] {
	case "setup":
		*h = *newHarness()
		h.defaults.LockMs = num(a, "lock", 30000)
		h.defaults.DeliveryLimit = int16(num(a, "limit", 5))
		h.defaults.MaxLocks = num(a, "max-locks", 2000)
		h.defaults.MaxSessions = int(num(a, "sessions", 2000))
		if v := a["reset"]; v != "" {
			h.group["share.auto.offset.reset"] = v
		}
		if v := a["isolation"]; v != "" {
			h.group["share.isolation.level"] = v
		}
		if v := a["dlq"]; v != "" {
			h.dlqOn = true
			h.group["errors.deadletterqueue.topic.name"] = v
		}
		h.newManager()
		b.WriteString("ok\n")
	case "produce":
		p := int32(num(a, "p", 0))
		h.log.skip(p, num(a, "gap", 0))
		first, last := h.log.produce(p, int(num(a, "n", 1)), num(a, "pid", -1), a["txn"] != "")
		fmt.Fprintf(&b, "foo-%d %d-%d\n", p, first, last)
	case "marker":
		p := int32(num(a, "p", 0))
		off := h.log.marker(p, num(a, "pid", 0), a["abort"] != "")
		fmt.Fprintf(&b, "foo-%d marker at %d\n", p, off)
	case "delete-records":
		p := int32(num(a, "p", 0))
		h.log.deleteTo(p, num(a, "to", 0))
		b.WriteString("ok\n")
	case "fetch":
		mode := BatchOptimized
		if a["mode"] == "record" {
			mode = RecordLimit
		}
		res := h.m.Fetch(ctx, FetchParams{Group: "g", Member: a["member"], Parts: parts(a, "0"),
			MaxBytes: int32(num(a, "max-bytes", 1<<20)), MinBytes: 1, MaxRecords: int32(num(a, "max-records", 500)),
			BatchSize: int32(num(a, "batch-size", 0)), Mode: mode})
		for _, r := range res {
			fmt.Fprintf(&b, "foo-%d: %s", r.Partition, errName(r.Err))
			if len(r.Acquired) > 0 {
				b.WriteString(" acquired")
				for _, q := range r.Acquired {
					fmt.Fprintf(&b, " %d-%d(%d)", q.First, q.Last, q.Deliveries)
				}
			}
			if len(r.Records) > 0 {
				b.WriteString(" batches")
				_ = storage.WalkBatches(r.Records, true, func(hd storage.BatchHeader, _ []byte) error {
					fmt.Fprintf(&b, " %d-%d", hd.BaseOffset, hd.LastOffset())
					return nil
				})
			}
			b.WriteString("\n")
		}
	case "ack":
		var ranges string
		for _, f := range fields[1:] {
			if !strings.Contains(f, "=") && f != "renew" {
				ranges = f
			}
		}
		p := parts(a, "0")[0]
		batches, err := parseAcks(ranges)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		errs := h.m.Acknowledge(ctx, "g", a["member"], []AckPart{{FetchPart: p, Batches: batches}}, a["renew"] != "")
		fmt.Fprintf(&b, "foo-%d: %s\n", p.Partition, errName(errs[0]))
	case "advance":
		d, _ := strconv.ParseInt(fields[1], 10, 64)
		h.now = h.now.Add(time.Duration(d) * time.Millisecond)
		h.m.ExpireLocks(ctx)
		fmt.Fprintf(&b, "now=%d\n", h.now.UnixMilli())
	case "leave":
		h.m.OnMemberLeft("g", a["member"])
		b.WriteString("ok\n")
	case "config":
		for _, f := range fields[1:] {
			if k, v, ok := strings.Cut(f, "="); ok {
				h.group[k] = v
			} else {
				delete(h.group, f)
			}
		}
		b.WriteString("ok\n")
	case "dlq":
		h.dlqFail = fields[1] == "fail"
		for len(h.dlqQueue) > 0 {
			f := h.dlqQueue[0]
			h.dlqQueue = h.dlqQueue[1:]
			f() // may queue more (none today)
		}
		if len(h.dlqLog) == 0 {
			b.WriteString("none\n")
		}
		for _, l := range h.dlqLog {
			b.WriteString(l + "\n")
		}
		h.dlqLog = nil
	case "group-empty":
		h.m.OnGroupEmpty("g")
		b.WriteString("ok\n")
	case "persist-fail":
		if fields[1] == "off" {
			h.persister.Fail = 0
		} else {
			c, _ := strconv.Atoi(fields[1])
			h.persister.Fail = int16(c)
		}
		b.WriteString("ok\n")
	case "restart":
		h.epoch = int32(num(a, "epoch", int64(h.epoch)+1))
		h.newManager()
		fmt.Fprintf(&b, "leader-epoch=%d\n", h.epoch)
	case "state":
		for _, p := range parts(a, "0") {
			sp := h.m.Partition("g", p.TopicPartition)
			if sp == nil {
				fmt.Fprintf(&b, "foo-%d: not loaded\n", p.Partition)
			} else {
				fmt.Fprintf(&b, "foo-%d: %s\n", p.Partition, sp.Dump())
			}
			fmt.Fprintf(&b, "persisted: %s\n", h.persister.Dump("g", topicID, p.Partition))
		}
	case "session":
		member := a["member"]
		toTPs := func(s string) []TopicPartition {
			if s == "" {
				return nil
			}
			var out []TopicPartition
			for _, p := range parts(map[string]string{"p": s}, "") {
				out = append(out, p.TopicPartition)
			}
			return out
		}
		var got []TopicPartition
		var err error
		now := h.now.UnixMilli()
		switch fields[1] {
		case "open":
			got, err = h.m.Sessions.Open("g", member, toTPs(a["add"]), now)
		case "update":
			got, err = h.m.Sessions.Update("g", member, int32(num(a, "epoch", 0)), toTPs(a["add"]), toTPs(a["forget"]), now)
		case "ack":
			err = h.m.Sessions.Acknowledge("g", member, int32(num(a, "epoch", 0)), now)
		case "close":
			got = h.m.Sessions.Close("g", member)
		}
		fmt.Fprintf(&b, "%s", errName(err))
		if got != nil {
			b.WriteString(" parts")
			for _, tp := range got {
				fmt.Fprintf(&b, " %d", tp.Partition)
			}
		}
		fmt.Fprintf(&b, " next-epoch=%d sessions=%d\n", h.m.Sessions.Epoch("g", member), h.m.Sessions.Len())
	default:
		t.Fatalf("unknown command %q", line)
	}
	return b.String()
}

var ackTypes = map[string]sharestate.AcknowledgeType{
	"gap": sharestate.AckGap, "accept": sharestate.AckAccept, "release": sharestate.AckRelease,
	"reject": sharestate.AckReject, "renew": sharestate.AckRenew,
}

func parseAcks(s string) ([]AckBatch, error) {
	var out []AckBatch
	for _, part := range strings.Split(s, ",") {
		rng, types, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("bad ack %q", part)
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		first, err := strconv.ParseInt(lo, 10, 64)
		if err != nil {
			return nil, err
		}
		last := first
		if isRange {
			if last, err = strconv.ParseInt(hi, 10, 64); err != nil {
				return nil, err
			}
		}
		b := AckBatch{First: first, Last: last}
		for _, ty := range strings.Split(types, "/") {
			v, ok := ackTypes[ty]
			if !ok {
				n, err := strconv.Atoi(ty)
				if err != nil {
					return nil, fmt.Errorf("bad ack type %q", ty)
				}
				v = sharestate.AcknowledgeType(n)
			}
			b.Types = append(b.Types, int8(v))
		}
		out = append(out, b)
	}
	return out, nil
}

// fakeLog is the partition leaders' logs: batches in memory, the high
// watermark at the log end.
type fakeLog struct {
	mu    sync.Mutex
	epoch int32
	parts map[int32]*fakePart
}

type fakePart struct {
	batches  [][]byte
	next     int64
	logStart int64
	aborted  []storage.AbortedTxn
	open     map[int64]int64 // producer id -> first offset of its open transaction
	wakes    map[int]func()
	nextWake int
}

func newFakeLog() *fakeLog { return &fakeLog{parts: map[int32]*fakePart{}} }

func (l *fakeLog) part(p int32) *fakePart {
	fp, ok := l.parts[p]
	if !ok {
		fp = &fakePart{open: map[int64]int64{}, wakes: map[int]func(){}}
		l.parts[p] = fp
	}
	return fp
}

func (l *fakeLog) produce(p int32, n int, pid int64, txn bool) (int64, int64) {
	l.mu.Lock()
	fp := l.part(p)
	recs := make([]storage.Record, n)
	for i := range recs {
		recs[i] = storage.Record{Value: []byte(fmt.Sprintf("v%d", fp.next+int64(i)))}
	}
	o := storage.BatchOptions{BaseOffset: fp.next, Transactional: txn}
	if pid >= 0 {
		o.Producer = &storage.BatchProducer{ID: pid, Epoch: 0, BaseSequence: 0}
		if _, ok := fp.open[pid]; !ok && txn {
			fp.open[pid] = fp.next
		}
	}
	raw := storage.BuildBatch(o, recs...)
	storage.SetBaseOffset(raw, fp.next)
	fp.batches = append(fp.batches, raw)
	first := fp.next
	fp.next += int64(n)
	wakes := fp.wakeList()
	l.mu.Unlock()
	for _, w := range wakes {
		w()
	}
	return first, fp.next - 1
}

func (fp *fakePart) wakeList() []func() {
	var ws []func()
	for _, w := range fp.wakes {
		ws = append(ws, w)
	}
	return ws
}

func (l *fakeLog) marker(p int32, pid int64, abort bool) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	fp := l.part(p)
	typ := int16(1)
	if abort {
		typ = 0
	}
	o := storage.BatchOptions{BaseOffset: fp.next, Control: true, Transactional: true, Producer: &storage.BatchProducer{ID: pid}}
	raw := storage.BuildBatch(o, storage.Record{Key: storage.ControlRecordKey(typ), Value: []byte{0, 0, 0, 0, 0, 0}})
	storage.SetBaseOffset(raw, fp.next)
	fp.batches = append(fp.batches, raw)
	if first, ok := fp.open[pid]; ok && abort {
		fp.aborted = append(fp.aborted, storage.AbortedTxn{ProducerID: pid, FirstOffset: first, LastOffset: fp.next})
	}
	delete(fp.open, pid)
	fp.next++
	return fp.next - 1
}

// skip leaves n offsets out of the log, as compaction would.
func (l *fakeLog) skip(p int32, n int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part(p).next += max(n, 0)
}

func (l *fakeLog) deleteTo(p int32, off int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.part(p).logStart = off
}

func (fp *fakePart) lso() int64 {
	lso := fp.next
	for _, first := range fp.open {
		lso = min(lso, first)
	}
	return lso
}

func (l *fakeLog) ReadShare(topic string, partition int32, offset int64, maxBytes int32, minOne, readCommitted bool) (LogRead, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fp := l.part(partition)
	bound := fp.next
	if readCommitted {
		bound = fp.lso()
	}
	offset = max(offset, fp.logStart)
	out := LogRead{LogStart: fp.logStart}
	for _, raw := range fp.batches {
		h, _ := storage.ParseBatchHeader(raw)
		if h.LastOffset() < offset || h.LastOffset() < fp.logStart {
			continue
		}
		if h.LastOffset() >= bound {
			break
		}
		if len(out.Records)+len(raw) > int(maxBytes) && !(minOne && len(out.Records) == 0) {
			break
		}
		out.Records = append(out.Records, raw...)
	}
	if readCommitted {
		for _, a := range fp.aborted {
			if a.LastOffset >= offset {
				out.Aborted = append(out.Aborted, a)
			}
		}
	}
	return out, nil
}

func (l *fakeLog) Offsets(topic string, partition int32) (int64, int64, int32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fp := l.part(partition)
	return fp.logStart, fp.next, l.epoch, nil
}

// OffsetForTimestamp: record i of the fake log has timestamp i*1000 ms.
func (l *fakeLog) OffsetForTimestamp(topic string, partition int32, ts int64) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fp := l.part(partition)
	off := max((ts+999)/1000, fp.logStart)
	if off >= fp.next {
		return -1, false, nil
	}
	return off, true, nil
}

func (l *fakeLog) Watch(topic string, partition int32, wake func()) (func(), error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fp := l.part(partition)
	id := fp.nextWake
	fp.nextWake++
	fp.wakes[id] = wake
	return func() {
		l.mu.Lock()
		delete(fp.wakes, id)
		l.mu.Unlock()
	}, nil
}
