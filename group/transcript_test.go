package group

// Transcript tests (STYLE.md #2): each file under testdata/ is a scenario of
// commands, each followed by "----" and the output it must produce:
//
//	# comment
//	join g member=a
//	----
//	wrote 0: group g gen=0 proto=consumer/- leader=- members=-
//	join g a: MEMBER_ID_REQUIRED
//
// The coordinator runs on a coordinator.MemLog and a ManualClock inside a
// synctest bubble: every request runs in its own goroutine, and a command's
// output is what happened once every goroutine is blocked again, so it is
// the same on every run. Output lists the records the command wrote (with
// their log offsets), then the requests that completed, in the order they
// were sent; a request still waiting shows "(waiting)". "hw hold" stops
// the high watermark so a reply that waits for its records to commit is
// seen waiting; "hw commit" moves it to the log end.
//
// Member ids are random: a command names a member by an alias, and the
// first join of an alias sends no member id and binds the alias to the id
// the coordinator hands out. Output prints aliases.
//
// go test ./group/ -run Transcripts -rewrite regenerates the expected
// output from what the code does now; review the diff.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of the transcripts under testdata/")

func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { runTranscript(t, f) })
		})
	}
}

// ---- file format ----

type step struct {
	comments []string // lines before the command, kept on rewrite
	cmd      string
	line     int
	want     []string
}

func parseTranscript(t *testing.T, path string) []step {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var steps []step
	var cur step
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case cur.cmd == "" && (strings.HasPrefix(l, "#") || strings.TrimSpace(l) == ""):
			if strings.HasPrefix(l, "#") || len(cur.comments) > 0 {
				cur.comments = append(cur.comments, l)
			}
		case cur.cmd == "":
			cur.cmd, cur.line = l, n
			if !sc.Scan() || sc.Text() != "----" {
				t.Fatalf("%s:%d: command without ----", path, n)
			}
			n++
			for sc.Scan() {
				n++
				if sc.Text() == "" {
					break
				}
				cur.want = append(cur.want, sc.Text())
			}
			steps = append(steps, cur)
			cur = step{}
		}
	}
	if cur.cmd == "" && len(cur.comments) > 0 {
		steps = append(steps, cur) // trailing comments
	}
	return steps
}

func writeTranscript(t *testing.T, path string, steps []step) {
	var b strings.Builder
	for i, s := range steps {
		for _, c := range trimTrailingBlank(s.comments) {
			b.WriteString(c + "\n")
		}
		if s.cmd == "" {
			continue
		}
		b.WriteString(s.cmd + "\n----\n")
		for _, w := range s.want {
			b.WriteString(w + "\n")
		}
		if i < len(steps)-1 {
			b.WriteString("\n")
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func trimTrailingBlank(ls []string) []string {
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

func runTranscript(t *testing.T, path string) {
	steps := parseTranscript(t, path)
	r := newRunner(t)
	defer r.close()
	failed := false
	for i := range steps {
		s := &steps[i]
		if s.cmd == "" {
			continue
		}
		got := r.exec(s.cmd)
		if *rewrite {
			s.want = got
			continue
		}
		if !slices.Equal(got, s.want) {
			failed = true
			t.Errorf("%s:%d: %s\n got:\n\t%s\nwant:\n\t%s", path, s.line, s.cmd,
				strings.Join(got, "\n\t"), strings.Join(s.want, "\n\t"))
			break // later steps depend on this one
		}
	}
	if *rewrite && !failed {
		writeTranscript(t, path, steps)
	}
}

// ---- the runner ----

type runner struct {
	t     *testing.T
	clock *ManualClock
	log   *coordinator.MemLog
	cache *metadatacache.Cache
	c     *Coordinator
	epoch int32

	alias   map[string]string // member id -> alias
	ids     map[string]string // alias -> member id
	unnamed int

	calls  []*call // in flight, in the order sent
	shown  int     // records of the log already printed
	closed bool

	// Share groups (share_transcript_test.go).
	persister  *fakePersister
	leftMu     sync.Mutex
	left       []string // OnShareMemberLeft calls
	shareNotes []string
	sgEpoch    map[string]int32 // share member -> epoch of its last answer
	stEpochs   map[string]int32 // streams member -> epoch of its last answer
	cfgMu      sync.Mutex
	groupCfgs  map[string]map[string]string // GROUP resource configs
}

// call is one request in flight; done receives the function that prints
// its result (run on the runner's goroutine, which owns the aliases).
type call struct {
	label string
	done  chan func() string
	// bind names the member id a join was given, before anything of the
	// step is printed.
	bind func()
}

var transcriptTP = coordinator.TopicPartition{Topic: OffsetsTopic, Partition: 0}

func newRunner(t *testing.T) *runner {
	r := &runner{t: t, clock: NewManualClock(time.Unix(1_700_000_000, 0)), log: coordinator.NewMemLog(true),
		cache: metadatacache.NewCache(metadatacache.Config{}), alias: map[string]string{}, ids: map[string]string{}, sgEpoch: map[string]int32{}}
	offsetsID := [16]byte{9}
	recs := []metadatacache.Record{
		&metadatacache.TopicRecord{Name: OffsetsTopic, TopicID: offsetsID},
		part(offsetsID, 0),
		&metadatacache.TopicRecord{Name: "t", TopicID: topicT},
	}
	for p := int32(0); p < 4; p++ {
		recs = append(recs, part(topicT, p))
	}
	if err := r.cache.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs) - 1), Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	r.persister = newFakePersister(r.topicName)
	r.c = New(Config{NodeID: 1, Writer: r.log, Clock: r.clock, Image: r.cache.Image, OffsetsTopicPartitions: 1,
		InitialRebalanceDelay: 3 * time.Second, SharePersister: r.persister, ShareMaxSize: 3,
		LatestOffset: func(_ context.Context, _ [16]byte, p int32) (int64, error) {
			if p == 2 {
				return -1, kerr.NotLeaderForPartition
			}
			return 100, nil
		},
		GroupConfig: r.groupConfig,
		OnShareMemberLeft: func(g, m string) {
			r.leftMu.Lock()
			r.left = append(r.left, g+"/"+m)
			r.leftMu.Unlock()
		}})
	r.c.OnImage(nil, r.cache.Image())
	synctest.Wait()
	return r
}

func (r *runner) close() {
	r.c.Close()
	synctest.Wait()
}

// name is the alias of a member id (ids never seen get #1, #2, ...).
func (r *runner) name(id string) string {
	if id == "" {
		return `""`
	}
	if a, ok := r.alias[id]; ok {
		return a
	}
	r.unnamed++
	a := fmt.Sprintf("#%d", r.unnamed)
	r.alias[id], r.ids[a] = a, id
	return a
}

// id is the member id of an alias ("" if unbound: a first join).
func (r *runner) id(alias string) string { return r.ids[alias] }

func (r *runner) bind(alias, id string) {
	if alias == "" || id == "" || r.ids[alias] != "" {
		return
	}
	if _, ok := r.alias[id]; ok {
		return
	}
	r.alias[id], r.ids[alias] = alias, id
}

// start runs a request in its own goroutine.
func (r *runner) start(label string, fn func() func() string) {
	c := &call{label: label, done: make(chan func() string, 1)}
	r.calls = append(r.calls, c)
	go func() { c.done <- fn() }()
}

// settle waits until every goroutine is blocked, then reports what the
// command wrote and which requests completed.
func (r *runner) settle(out []string, started int) []string {
	synctest.Wait()
	done := make([]func() string, len(r.calls))
	for i, c := range r.calls {
		select {
		case done[i] = <-c.done:
			if c.bind != nil {
				c.bind()
			}
		default:
		}
	}
	var results []string
	rest := r.calls[:0]
	for i, c := range r.calls {
		switch {
		case done[i] != nil:
			results = append(results, c.label+": "+done[i]())
		case i >= started:
			results = append(results, c.label+": (waiting)")
			fallthrough
		default:
			rest = append(rest, c)
		}
	}
	r.calls = rest
	recs := r.log.Records(transcriptTP)
	for _, l := range recs[r.shown:] {
		out = append(out, fmt.Sprintf("wrote %d: %s", l.Offset, r.describe(l)))
	}
	r.shown = len(recs)
	out = append(out, r.shareOutput()...)
	return append(out, results...)
}

// ---- commands ----

type args struct {
	pos []string
	kv  map[string]string
}

func parseArgs(fields []string) args {
	a := args{kv: map[string]string{}}
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			a.kv[k] = v
		} else if f == `""` {
			a.pos = append(a.pos, "")
		} else {
			a.pos = append(a.pos, f)
		}
	}
	return a
}

func (a args) str(k, def string) string {
	if v, ok := a.kv[k]; ok {
		return v
	}
	return def
}

func (a args) int(t *testing.T, k string, def int64) int64 {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%s: %v", k, v, err)
	}
	return n
}

func (a args) dur(t *testing.T, k string, def time.Duration) time.Duration {
	v, ok := a.kv[k]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("%s=%s: %v", k, v, err)
	}
	return d
}

func (a args) has(k string) bool { return slices.Contains(a.pos, k) }

func (a args) nstr(k string) *string {
	if v, ok := a.kv[k]; ok {
		return &v
	}
	return nil
}

// metadata is meta=x, or meta-len=n bytes of it.
func (a args) metadata(t *testing.T) *string {
	if n := a.int(t, "meta-len", -1); n >= 0 {
		m := strings.Repeat("x", int(n))
		return &m
	}
	return a.nstr("meta")
}

// partitions reads t-0=42 style arguments: topic-partition=offset.
func (a args) partitions(t *testing.T) map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for k, v := range a.kv {
		i := strings.LastIndexByte(k, '-')
		if i <= 0 {
			continue
		}
		p, err := strconv.ParseInt(k[i+1:], 10, 32)
		if err != nil {
			continue
		}
		off, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%s: %v", k, v, err)
		}
		if out[k[:i]] == nil {
			out[k[:i]] = map[int32]int64{}
		}
		out[k[:i]][int32(p)] = off
	}
	return out
}

func errName(c int16) string {
	if c == 0 {
		return "OK"
	}
	if e := kerr.ErrorForCode(c); e != nil {
		if ke, ok := e.(*kerr.Error); ok {
			return ke.Message
		}
	}
	return fmt.Sprintf("ERR%d", c)
}

func (r *runner) exec(line string) []string {
	fields := strings.Fields(line)
	cmd, a := fields[0], parseArgs(fields[1:])
	started := len(r.calls)
	var out []string
	switch cmd {
	case "join":
		r.join(a)
	case "sync":
		r.sync(a)
	case "heartbeat":
		r.heartbeat(a)
	case "leave":
		r.leave(a)
	case "commit-offsets":
		r.commitOffsets(a)
	case "txn-commit":
		r.txnCommit(a)
	case "end-txn":
		r.endTxn(a)
	case "fetch":
		r.fetch(a)
	case "offset-delete":
		r.offsetDelete(a)
	case "delete":
		r.deleteGroups(a)
	case "describe":
		r.describeGroup(a)
	case "list":
		r.list()
	case "cg-heartbeat":
		r.cgHeartbeat(a)
	case "expire":
		r.c.ExpireOffsets()
	case "advance":
		d, err := time.ParseDuration(a.pos[0])
		if err != nil {
			r.t.Fatal(err)
		}
		advanceClock(r.clock, d)
	case "hw":
		switch a.pos[0] {
		case "hold":
			r.log.SetAutoCommit(false)
		case "commit":
			r.log.CommitAll(transcriptTP)
		case "auto":
			r.log.SetAutoCommit(true)
			r.log.CommitAll(transcriptTP)
		default:
			r.t.Fatalf("hw %s", a.pos[0])
		}
		out = append(out, fmt.Sprintf("high watermark %d, log end %d", r.hw(), r.log.LogEnd(transcriptTP)))
	case "fail-appends":
		r.log.FailAppends(errArg(r.t, a.pos))
	case "fail-verify":
		r.log.FailVerification(errArg(r.t, a.pos))
	case "reload":
		// The partition is led again at a new leader epoch: the old shard
		// unloads and a new one replays the log.
		r.epoch++
		r.log.SetLeaderEpoch(transcriptTP, r.epoch)
		r.c.rt.SetLeaders(map[int32]int32{0: r.epoch})
		synctest.Wait()
		out = append(out, fmt.Sprintf("loaded at epoch %d", r.epoch))
	case "unload":
		r.c.rt.SetLeaders(nil)
	case "dump":
		out = append(out, r.dump()...)
	case "delete-topic":
		// The topic is deleted from the metadata: its offsets go.
		old := r.cache.Image()
		ti := old.TopicByName(a.pos[0])
		if err := r.cache.Apply(metadatacache.Batch{BaseOffset: old.Offset + 1, LastOffset: old.Offset + 1, Epoch: 1,
			Records: []metadatacache.Record{&metadatacache.RemoveTopicRecord{TopicID: ti.ID}}}); err != nil {
			r.t.Fatal(err)
		}
		r.c.OnImage(old, r.cache.Image())
	default:
		if !r.shareExec(cmd, a) && !r.streamsExec(cmd, a) {
			r.t.Fatalf("unknown command %q", cmd)
		}
	}
	return r.settle(out, started)
}

func (r *runner) hw() int64 {
	hw, _ := r.log.HighWatermark(transcriptTP)
	return hw
}

func errArg(t *testing.T, pos []string) error {
	if len(pos) == 0 || pos[0] == "none" {
		return nil
	}
	for c := int16(-1); c < 200; c++ {
		if e, ok := kerr.ErrorForCode(c).(*kerr.Error); ok && e.Message == pos[0] {
			return e
		}
	}
	t.Fatalf("unknown error %s", pos[0])
	return nil
}

// join g member=a [v=5] [instance=i] [session=10s] [rebalance=20s] [protocol=range] [type=consumer]
func (r *runner) join(a args) {
	g, alias := a.pos[0], a.str("member", "")
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = int16(a.int(r.t, "v", 5))
	req.Group, req.MemberID, req.ProtocolType = g, r.id(alias), a.str("type", "consumer")
	req.InstanceID = a.nstr("instance")
	req.SessionTimeoutMillis = int32(a.dur(r.t, "session", 10*time.Second).Milliseconds())
	req.RebalanceTimeoutMillis = int32(a.dur(r.t, "rebalance", 20*time.Second).Milliseconds())
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = strings.Split(a.str("topics", "t"), ",")
	for _, name := range strings.Split(a.str("protocol", "range"), ",") {
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = name, meta.AppendTo(nil)
		req.Protocols = append(req.Protocols, p)
	}
	var resp *kmsg.JoinGroupResponse
	r.start("join "+g+" "+alias, func() func() string {
		resp = r.c.JoinGroup(context.Background(), req, "client", "/127.0.0.1")
		return func() string {
			if resp.ErrorCode != 0 {
				if resp.ErrorCode == kerr.MemberIDRequired.Code {
					return errName(resp.ErrorCode)
				}
				return fmt.Sprintf("%s gen=%d", errName(resp.ErrorCode), resp.Generation)
			}
			s := fmt.Sprintf("OK gen=%d proto=%s leader=%s", resp.Generation, deref(resp.Protocol), r.name(resp.LeaderID))
			if len(resp.Members) > 0 {
				var ms []string
				for _, m := range resp.Members {
					ms = append(ms, r.name(m.MemberID))
				}
				s += " members=" + strings.Join(ms, ",")
			}
			if resp.SkipAssignment {
				s += " skip-assignment"
			}
			return s
		}
	})
	r.calls[len(r.calls)-1].bind = func() { r.bind(alias, resp.MemberID) }
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// sync g member=a gen=1 [assign=a:x,b:y] [instance=i]
func (r *runner) sync(a args) {
	g, alias := a.pos[0], a.str("member", "")
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = g, r.id(alias), int32(a.int(r.t, "gen", 0))
	req.InstanceID = a.nstr("instance")
	pt, pn := "consumer", "range"
	req.ProtocolType, req.Protocol = &pt, &pn
	if as := a.str("assign", ""); as != "" {
		for _, e := range strings.Split(as, ",") {
			m, v, _ := strings.Cut(e, ":")
			ga := kmsg.NewSyncGroupRequestGroupAssignment()
			ga.MemberID, ga.MemberAssignment = r.id(m), []byte(v)
			req.GroupAssignment = append(req.GroupAssignment, ga)
		}
	}
	r.start("sync "+g+" "+alias, func() func() string {
		resp := r.c.SyncGroup(context.Background(), req)
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			return fmt.Sprintf("OK assignment=%q", resp.MemberAssignment)
		}
	})
}

// heartbeat g member=a gen=1 [instance=i]
func (r *runner) heartbeat(a args) {
	g, alias := a.pos[0], a.str("member", "")
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = g, r.id(alias), int32(a.int(r.t, "gen", 0))
	req.InstanceID = a.nstr("instance")
	r.start("heartbeat "+g+" "+alias, func() func() string {
		resp := r.c.Heartbeat(req)
		return func() string { return errName(resp.ErrorCode) }
	})
}

// leave g members=a,b
func (r *runner) leave(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = g
	aliases := strings.Split(a.str("members", ""), ",")
	for _, m := range aliases {
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID = r.id(m)
		req.Members = append(req.Members, lm)
	}
	r.start("leave "+g, func() func() string {
		resp := r.c.LeaveGroup(req)
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			var ps []string
			for i, m := range resp.Members {
				ps = append(ps, aliases[i]+"="+errName(m.ErrorCode))
			}
			return "OK " + strings.Join(ps, " ")
		}
	})
}

func sortedTopicParts[V any](m map[string]map[int32]V) []struct {
	topic string
	part  int32
} {
	var out []struct {
		topic string
		part  int32
	}
	for _, t := range slices.Sorted(maps.Keys(m)) {
		for _, p := range slices.Sorted(maps.Keys(m[t])) {
			out = append(out, struct {
				topic string
				part  int32
			}{t, p})
		}
	}
	return out
}

// commit-offsets g [member=a gen=1] [v=8] [meta=x] t-0=42 ...
func (r *runner) commitOffsets(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = int16(a.int(r.t, "v", 8))
	req.Group, req.MemberID, req.Generation = g, r.id(a.str("member", "")), int32(a.int(r.t, "gen", -1))
	if m := a.str("epoch", ""); m != "" { // KIP-848 member id and epoch
		req.MemberID, req.Generation = a.str("member", ""), int32(a.int(r.t, "epoch", -1))
	}
	parts := a.partitions(r.t)
	for _, tp := range sortedTopicParts(parts) {
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != tp.topic {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = tp.topic
			req.Topics = append(req.Topics, rt)
		}
		p := kmsg.NewOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = tp.part, parts[tp.topic][tp.part]
		p.Metadata = a.metadata(r.t)
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, p)
	}
	r.start("commit-offsets "+g, func() func() string {
		resp := r.c.OffsetCommit(req)
		return func() string {
			var ps []string
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					ps = append(ps, fmt.Sprintf("%s-%d=%s", t.Topic, p.Partition, errName(p.ErrorCode)))
				}
			}
			return strings.Join(ps, " ")
		}
	})
}

// txn-commit g txn=tx pid=7 [pepoch=0] [member=a gen=1 | epoch=1] [instance=i] [v=3] t-0=5 ...
func (r *runner) txnCommit(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.Version = int16(a.int(r.t, "v", 3))
	req.TransactionalID, req.Group = a.str("txn", "tx"), g
	req.ProducerID, req.ProducerEpoch = a.int(r.t, "pid", 7), int16(a.int(r.t, "pepoch", 0))
	req.MemberID, req.Generation = r.id(a.str("member", "")), int32(a.int(r.t, "gen", -1))
	if a.str("epoch", "") != "" { // KIP-848 member id and epoch
		req.MemberID, req.Generation = a.str("member", ""), int32(a.int(r.t, "epoch", -1))
	}
	req.InstanceID = a.nstr("instance")
	parts := a.partitions(r.t)
	for _, tp := range sortedTopicParts(parts) {
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != tp.topic {
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = tp.topic
			if ti := r.cache.Image().TopicByName(tp.topic); ti != nil {
				rt.TopicID = ti.ID
			}
			req.Topics = append(req.Topics, rt)
		}
		p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		p.Partition, p.Offset = tp.part, parts[tp.topic][tp.part]
		p.Metadata = a.metadata(r.t)
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions, p)
	}
	r.start(fmt.Sprintf("txn-commit %s pid=%d", g, req.ProducerID), func() func() string {
		resp := r.c.TxnOffsetCommit(context.Background(), req)
		return func() string {
			var ps []string
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					ps = append(ps, fmt.Sprintf("%s-%d=%s", t.Topic, p.Partition, errName(p.ErrorCode)))
				}
			}
			return strings.Join(ps, " ")
		}
	})
}

// end-txn pid=7 [pepoch=0] [coordinator-epoch=0] commit|abort
func (r *runner) endTxn(a args) {
	pid, epoch := a.int(r.t, "pid", 7), int16(a.int(r.t, "pepoch", 0))
	commit := a.has("commit")
	what := "ABORT"
	if commit {
		what = "COMMIT"
	}
	r.start(fmt.Sprintf("end-txn pid=%d %s", pid, what), func() func() string {
		err := r.c.CompleteTransaction(context.Background(), 0, pid, epoch, int32(a.int(r.t, "coordinator-epoch", 0)), commit)
		return func() string {
			if err == nil {
				return "OK"
			}
			var ke *kerr.Error
			if errors.As(err, &ke) {
				return ke.Message
			}
			return err.Error()
		}
	})
}

// fetch g [t-0,t-1 | all] [stable] [v=8] [member=A epoch=1]
func (r *runner) fetch(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = int16(a.int(r.t, "v", 8))
	req.RequireStable = a.has("stable")
	var topics []kmsg.OffsetFetchRequestTopic
	list := ""
	for _, p := range a.pos[1:] {
		if p != "stable" && p != "all" {
			list = p
		}
	}
	if list != "" {
		for _, tp := range strings.Split(list, ",") {
			i := strings.LastIndexByte(tp, '-')
			p, _ := strconv.Atoi(tp[i+1:])
			if len(topics) == 0 || topics[len(topics)-1].Topic != tp[:i] {
				topics = append(topics, kmsg.OffsetFetchRequestTopic{Topic: tp[:i]})
			}
			topics[len(topics)-1].Partitions = append(topics[len(topics)-1].Partitions, int32(p))
		}
	}
	if req.Version >= 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = g
		if m := a.nstr("member"); m != nil {
			rg.MemberID, rg.MemberEpoch = m, int32(a.int(r.t, "epoch", -1))
		}
		for _, t := range topics {
			rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t.Topic, Partitions: t.Partitions})
		}
		req.Groups = append(req.Groups, rg)
	} else {
		req.Group, req.Topics = g, topics
	}
	label := "fetch " + g
	if req.RequireStable {
		label += " stable"
	}
	r.start(label, func() func() string {
		resp := r.c.OffsetFetch(req)
		return func() string {
			code, ts := resp.ErrorCode, resp.Topics
			var gts []kmsg.OffsetFetchResponseGroupTopic
			if req.Version >= 8 {
				code, gts = resp.Groups[0].ErrorCode, resp.Groups[0].Topics
			} else {
				for _, t := range ts {
					gt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic}
					for _, p := range t.Partitions {
						gt.Partitions = append(gt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{
							Partition: p.Partition, Offset: p.Offset, ErrorCode: p.ErrorCode})
					}
					gts = append(gts, gt)
				}
			}
			if code != 0 {
				return errName(code)
			}
			var ps []string
			for _, t := range gts {
				for _, p := range t.Partitions {
					v := strconv.FormatInt(p.Offset, 10)
					if p.ErrorCode != 0 {
						v = errName(p.ErrorCode)
					}
					ps = append(ps, fmt.Sprintf("%s-%d=%s", t.Topic, p.Partition, v))
				}
			}
			if len(ps) == 0 {
				return "none"
			}
			return strings.Join(ps, " ")
		}
	})
}

// offset-delete g t-0 ...
func (r *runner) offsetDelete(a args) {
	g := a.pos[0]
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = g
	for _, tp := range a.pos[1:] {
		i := strings.LastIndexByte(tp, '-')
		p, _ := strconv.Atoi(tp[i+1:])
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != tp[:i] {
			req.Topics = append(req.Topics, kmsg.OffsetDeleteRequestTopic{Topic: tp[:i]})
		}
		req.Topics[len(req.Topics)-1].Partitions = append(req.Topics[len(req.Topics)-1].Partitions,
			kmsg.OffsetDeleteRequestTopicPartition{Partition: int32(p)})
	}
	r.start("offset-delete "+g, func() func() string {
		resp := r.c.OffsetDelete(req)
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			var ps []string
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					ps = append(ps, fmt.Sprintf("%s-%d=%s", t.Topic, p.Partition, errName(p.ErrorCode)))
				}
			}
			return "OK " + strings.Join(ps, " ")
		}
	})
}

// delete g ...
func (r *runner) deleteGroups(a args) {
	req := kmsg.NewPtrDeleteGroupsRequest()
	req.Groups = a.pos
	r.start("delete "+strings.Join(a.pos, ","), func() func() string {
		resp := r.c.DeleteGroups(context.Background(), req)
		return func() string {
			var ps []string
			for _, g := range resp.Groups {
				ps = append(ps, g.Group+"="+errName(g.ErrorCode))
			}
			return strings.Join(ps, " ")
		}
	})
}

// describe g: DescribeGroups for classic groups, ConsumerGroupDescribe
// with "consumer".
func (r *runner) describeGroup(a args) {
	g := a.pos[0]
	if a.has("consumer") {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{g}
		r.start("describe "+g, func() func() string {
			resp := r.c.ConsumerGroupDescribe(req)
			return func() string {
				rg := resp.Groups[0]
				if rg.ErrorCode != 0 {
					return errName(rg.ErrorCode)
				}
				s := fmt.Sprintf("%s epoch=%d assignment-epoch=%d", rg.State, rg.Epoch, rg.AssignmentEpoch)
				for _, m := range rg.Members {
					s += fmt.Sprintf(" %s(epoch=%d assigned=%s target=%s)", m.MemberID, m.MemberEpoch,
						assignmentString(m.Assignment), assignmentString(m.TargetAssignment))
				}
				return s
			}
		})
		return
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Version = 5
	req.Groups = []string{g}
	r.start("describe "+g, func() func() string {
		resp := r.c.DescribeGroups(req)
		return func() string {
			rg := resp.Groups[0]
			if rg.ErrorCode != 0 {
				return errName(rg.ErrorCode)
			}
			var ms []string
			for _, m := range rg.Members {
				ms = append(ms, r.name(m.MemberID))
			}
			return fmt.Sprintf("%s protocol=%s members=%s", rg.State, orDash(rg.Protocol), orDash(strings.Join(ms, ",")))
		}
	})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func assignmentString(a kmsg.Assignment) string {
	var ps []string
	for _, t := range a.TopicPartitions {
		for _, p := range t.Partitions {
			ps = append(ps, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	return orDash(strings.Join(ps, ","))
}

func (r *runner) list() {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	r.start("list", func() func() string {
		resp := r.c.ListGroups(req)
		return func() string {
			var gs []string
			for _, g := range resp.Groups {
				gs = append(gs, fmt.Sprintf("%s(%s,%s)", g.Group, g.GroupType, g.GroupState))
			}
			s := errName(resp.ErrorCode)
			if len(gs) > 0 {
				s += " " + strings.Join(gs, " ")
			}
			return s
		}
	})
}

// cg-heartbeat g member=A epoch=0 [topics=t] [owned=0,1|none] [rebalance=30s] [instance=i]
func (r *runner) cgHeartbeat(a args) {
	g, mid := a.pos[0], a.str("member", "")
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = g, mid, int32(a.int(r.t, "epoch", 0))
	req.InstanceID = a.nstr("instance")
	if req.MemberEpoch == 0 {
		req.RebalanceTimeoutMillis = int32(a.dur(r.t, "rebalance", 30*time.Second).Milliseconds())
		req.SubscribedTopicNames = strings.Split(a.str("topics", "t"), ",")
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	}
	if owned, ok := a.kv["owned"]; ok {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		if owned != "none" {
			t := kmsg.NewConsumerGroupHeartbeatRequestTopic()
			t.TopicID = topicT
			for _, p := range strings.Split(owned, ",") {
				n, _ := strconv.Atoi(p)
				t.Partitions = append(t.Partitions, int32(n))
			}
			req.Topics = append(req.Topics, t)
		}
	}
	r.start("cg-heartbeat "+g+" "+mid, func() func() string {
		resp := r.c.ConsumerGroupHeartbeat(req, "client", "/127.0.0.1")
		return func() string {
			if resp.ErrorCode != 0 {
				return errName(resp.ErrorCode)
			}
			s := fmt.Sprintf("OK epoch=%d", resp.MemberEpoch)
			if resp.Assignment != nil {
				var ps []string
				for _, t := range resp.Assignment.Topics {
					name := "?"
					if ti := r.cache.Image().TopicByID(t.TopicID); ti != nil {
						name = ti.Name
					}
					for _, p := range t.Partitions {
						ps = append(ps, fmt.Sprintf("%s-%d", name, p))
					}
				}
				s += " assigned=" + orDash(strings.Join(ps, ","))
			}
			return s
		}
	})
}

// dump prints the shard's groups, committed offsets and pending
// transactional offsets, as they are on the loop now (committed or not).
func (r *runner) dump() []string {
	if _, ok := r.c.rt.LeaderEpoch(0); !ok {
		return []string{"dump: not loaded"}
	}
	var out []string
	done := make(chan struct{})
	r.c.rt.Post(0, "dump", func(s *shard) error {
		defer close(done)
		for _, id := range slices.Sorted(maps.Keys(s.groups)) {
			g := s.groups[id]
			var ms []string
			for _, m := range g.allMembers() {
				ms = append(ms, r.name(m.id))
			}
			out = append(out, fmt.Sprintf("group %s classic %s gen=%d members=%s", id, g.state, g.generation, orDash(strings.Join(ms, ","))))
		}
		for _, id := range slices.Sorted(maps.Keys(s.cgs)) {
			g := s.cgs[id]
			out = append(out, fmt.Sprintf("group %s consumer %s epoch=%d members=%s", id, g.stateString(), g.epoch,
				orDash(strings.Join(slices.Sorted(maps.Keys(g.members)), ","))))
		}
		out = append(out, r.shareDump(s)...)
		for _, tp := range r.offsetLines(s.offsets) {
			out = append(out, "offset "+tp)
		}
		for _, pid := range slices.Sorted(maps.Keys(s.pending)) {
			for _, tp := range r.offsetLines(s.pending[pid]) {
				out = append(out, fmt.Sprintf("pending pid=%d %s", pid, tp))
			}
		}
		return nil
	})
	<-done
	return out
}

func (r *runner) offsetLines(m offsetMap) []string {
	var out []string
	for _, g := range slices.Sorted(maps.Keys(m)) {
		for _, tp := range sortedTopicParts(m[g]) {
			out = append(out, fmt.Sprintf("%s %s-%d=%d", g, tp.topic, tp.part, m[g][tp.topic][tp.part].offset))
		}
	}
	return out
}

// ---- records ----

// describe is the one-line form of a record of __consumer_offsets.
func (r *runner) describe(l coordinator.Loaded) string {
	if l.Marker != nil {
		what := "ABORT"
		if l.Marker.Commit {
			what = "COMMIT"
		}
		return fmt.Sprintf("marker %s pid=%d pepoch=%d coordinator-epoch=%d", what, l.ProducerID, l.ProducerEpoch, l.Marker.CoordinatorEpoch)
	}
	prefix := ""
	if l.ProducerID != coordinator.NoProducer {
		prefix = fmt.Sprintf("txn pid=%d ", l.ProducerID)
	}
	return prefix + r.describeKV(l.Key, l.Value)
}

func (r *runner) describeKV(k, v []byte) string {
	if len(k) < 2 {
		return "bad key"
	}
	tomb := func(s string) string {
		if v == nil {
			return s + " tombstone"
		}
		return s
	}
	switch ver := int16(binary.BigEndian.Uint16(k)); ver {
	case 0, 1:
		var key kmsg.OffsetCommitKey
		if key.ReadFrom(k) != nil {
			return "bad offset key"
		}
		s := fmt.Sprintf("offset %s %s-%d", key.Group, key.Topic, key.Partition)
		if v == nil {
			return tomb(s)
		}
		var val kmsg.OffsetCommitValue
		if val.ReadFrom(v) != nil {
			return s + " bad value"
		}
		s += fmt.Sprintf(" = %d", val.Offset)
		if val.Version >= 3 && val.LeaderEpoch >= 0 {
			s += fmt.Sprintf(" leader-epoch=%d", val.LeaderEpoch)
		}
		if val.Metadata != "" {
			s += fmt.Sprintf(" metadata=%q", val.Metadata)
		}
		if val.Version == 1 {
			s += fmt.Sprintf(" expires=+%s", time.Duration(val.ExpireTimestamp-val.CommitTimestamp)*time.Millisecond)
		}
		return s
	case 2:
		var key kmsg.GroupMetadataKey
		if key.ReadFrom(k) != nil {
			return "bad group key"
		}
		s := "group " + key.Group
		if v == nil {
			return tomb(s)
		}
		var val kmsg.GroupMetadataValue
		if val.ReadFrom(v) != nil {
			return s + " bad value"
		}
		leader := "-"
		if val.Leader != nil {
			leader = r.name(*val.Leader)
		}
		var ms []string
		for _, m := range val.Members {
			e := r.name(m.MemberID)
			if len(m.Assignment) > 0 {
				e += fmt.Sprintf(":%q", m.Assignment)
			}
			ms = append(ms, e)
		}
		return fmt.Sprintf("%s gen=%d protocol=%s/%s leader=%s members=%s", s, val.Generation, orDash(val.ProtocolType),
			deref(val.Protocol), leader, orDash(strings.Join(ms, ",")))
	case keyConsumerGroupMetadata, keyConsumerGroupTargetMetadata:
		gid, _, _ := readKey(k, false)
		name := map[int16]string{keyConsumerGroupMetadata: "cg-epoch", keyConsumerGroupTargetMetadata: "cg-target-epoch"}[ver]
		if v == nil {
			return tomb(name + " " + gid)
		}
		return fmt.Sprintf("%s %s = %d", name, gid, newReader(v).i32())
	case keyConsumerGroupMemberMetadata:
		gid, mid, _ := readKey(k, true)
		s := fmt.Sprintf("cg-member %s %s", gid, mid)
		if v == nil {
			return tomb(s)
		}
		rd := newReader(v)
		rd.nstr()
		rd.nstr()
		rd.str()
		rd.str()
		n := rd.arr()
		var topics []string
		for i := int32(0); i < n && rd.r.Ok(); i++ {
			topics = append(topics, rd.str())
		}
		return fmt.Sprintf("%s topics=%s", s, strings.Join(topics, ","))
	case keyConsumerGroupTargetMember:
		gid, mid, _ := readKey(k, true)
		s := fmt.Sprintf("cg-target %s %s", gid, mid)
		if v == nil {
			return tomb(s)
		}
		return s + " = " + r.partsString(partSetOf(newReader(v).topicParts()))
	case keyConsumerGroupCurrentMember:
		gid, mid, _ := readKey(k, true)
		s := fmt.Sprintf("cg-current %s %s", gid, mid)
		if v == nil {
			return tomb(s)
		}
		rd := newReader(v)
		epoch, prev, state := rd.i32(), rd.i32(), rd.i8()
		assigned, revoking := partSetOf(rd.topicParts()), partSetOf(rd.topicParts())
		st := map[int8]string{msStable: "STABLE", msUnrevokedPartitions: "UNREVOKED_PARTITIONS", msUnreleasedPartitions: "UNRELEASED_PARTITIONS"}[state]
		s += fmt.Sprintf(" epoch=%d prev=%d %s assigned=%s", epoch, prev, st, r.partsString(assigned))
		if len(revoking) > 0 {
			s += " revoking=" + r.partsString(revoking)
		}
		return s
	}
	if ver := int16(binary.BigEndian.Uint16(k)); isShareKey(ver) {
		return r.describeShareKV(ver, k, v)
	} else if isStreamsKey(ver) {
		return r.describeStreamsKV(ver, k, v)
	}
	return fmt.Sprintf("key v%d", binary.BigEndian.Uint16(k))
}

func (r *runner) partsString(s partSet) string {
	var ps []string
	for x := range s {
		name := "?"
		if ti := r.cache.Image().TopicByID(x.id); ti != nil {
			name = ti.Name
		}
		ps = append(ps, fmt.Sprintf("%s-%d", name, x.p))
	}
	sort.Strings(ps)
	return orDash(strings.Join(ps, ","))
}
