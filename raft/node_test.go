package raft

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

type recListener struct {
	mu      sync.Mutex
	batches []Batch
	leaders []LeaderAndEpoch
	ch      chan struct{}
}

func newRecListener() *recListener { return &recListener{ch: make(chan struct{}, 1000)} }

func (l *recListener) HandleCommit(b Batch) {
	l.mu.Lock()
	l.batches = append(l.batches, b)
	l.mu.Unlock()
	l.ch <- struct{}{}
}

func (l *recListener) HandleLeaderChange(le LeaderAndEpoch) {
	l.mu.Lock()
	l.leaders = append(l.leaders, le)
	l.mu.Unlock()
	l.ch <- struct{}{}
}

func (l *recListener) waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		l.mu.Lock()
		ok := cond()
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-l.ch:
		case <-deadline:
			t.Fatalf("timed out; batches=%v leaders=%v", l.batches, l.leaders)
		}
	}
}

func singleVoterConfig(fs vfs.FS, dir string) Config {
	return Config{
		NodeID: 1, Voters: map[int32]VoterEndpoint{1: {Host: "localhost", Port: 9093}},
		ClusterID: "cluster", MetadataLogDir: dir, FS: fs, Rand: rand.New(rand.NewSource(1)),
	}
}

func testSingleVoter(t *testing.T, fs vfs.FS, dir string) {
	ctx := context.Background()
	n, err := NewNode(singleVoterConfig(fs, dir))
	if err != nil {
		t.Fatal(err)
	}
	l := newRecListener()
	n.Register(l)
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	if le := n.LeaderAndEpoch(); le != (LeaderAndEpoch{LeaderID: 1, Epoch: 1}) {
		t.Fatalf("leader %+v", le)
	}
	for i, want := range []int64{1, 3, 4} {
		recs := [][]byte{[]byte("a")}
		if i == 1 {
			recs = [][]byte{[]byte("b"), []byte("c")}
		} else if i == 2 {
			recs = [][]byte{[]byte("d")}
		}
		last, err := n.Append(ctx, recs)
		if err != nil || last != want {
			t.Fatalf("append %d: last=%d err=%v", i, last, err)
		}
	}
	l.waitFor(t, func() bool { return len(l.batches) == 3 && len(l.leaders) == 1 })
	if l.leaders[0] != (LeaderAndEpoch{LeaderID: 1, Epoch: 1}) || l.batches[1].BaseOffset != 2 ||
		string(l.batches[1].Records[1]) != "c" || l.batches[2].Epoch != 1 {
		t.Fatalf("got %+v %+v", l.batches, l.leaders)
	}
	if _, err := n.Append(ctx, [][]byte{make([]byte, 9<<20)}); !errors.Is(err, ErrBatchTooLarge) {
		t.Fatalf("huge batch: %v", err)
	}
	if _, err := n.Append(ctx, nil); err == nil {
		t.Fatal("empty batch accepted")
	}
	if hw := n.HighWatermark(); hw != 5 {
		t.Fatalf("hw %d", hw)
	}
	resp, err := n.HandleRequest(ctx, &kmsg.DescribeQuorumRequest{Version: 2, Topics: []kmsg.DescribeQuorumRequestTopic{{
		Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
	if err != nil {
		t.Fatal(err)
	}
	dq := resp.(*kmsg.DescribeQuorumResponse)
	p := dq.Topics[0].Partitions[0]
	if p.ErrorCode != 0 || p.LeaderID != 1 || p.LeaderEpoch != 1 || p.HighWatermark != 5 || len(p.CurrentVoters) != 1 ||
		p.CurrentVoters[0].LogEndOffset != 5 || len(dq.Nodes) != 1 || dq.Nodes[0].Listeners[0].Port != 9093 {
		t.Fatalf("describe quorum %+v", dq)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Append(ctx, [][]byte{[]byte("x")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	qs, err := vfs.ReadFile(fs, filepath.Join(dir, "__cluster_metadata-0", "quorum-state"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"clusterId":"","leaderId":1,"leaderEpoch":1,"votedId":1,"appliedOffset":0,"currentVoters":[{"voterId":1}],"data_version":0}`; string(qs) != want {
		t.Fatalf("quorum-state %s", qs)
	}

	// Kafka's layout of __cluster_metadata-0.
	ents, err := fs.ReadDir(filepath.Join(dir, "__cluster_metadata-0"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range ents {
		names[e.Name()] = true
	}
	for _, want := range []string{"00000000000000000000.log", "00000000000000000000.index", "leader-epoch-checkpoint", "quorum-state"} {
		if !names[want] {
			t.Errorf("no %s in %v", want, names)
		}
	}
	if lec, err := vfs.ReadFile(fs, filepath.Join(dir, "__cluster_metadata-0", "leader-epoch-checkpoint")); err != nil || string(lec) != "0\n1\n1 0\n" {
		t.Errorf("leader-epoch-checkpoint %q %v", lec, err)
	}

	// Restart: epoch 2, the committed log is re-delivered.
	n2, err := NewNode(singleVoterConfig(fs, dir))
	if err != nil {
		t.Fatal(err)
	}
	l2 := newRecListener()
	n2.Register(l2)
	if err := n2.Start(); err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if le := n2.LeaderAndEpoch(); le != (LeaderAndEpoch{LeaderID: 1, Epoch: 2}) {
		t.Fatalf("leader after restart %+v", le)
	}
	l2.waitFor(t, func() bool { return len(l2.batches) == 3 && len(l2.leaders) == 1 })
	last, err := n2.Append(ctx, [][]byte{[]byte("e")})
	if err != nil || last != 6 { // 5 = LeaderChange of epoch 2
		t.Fatalf("append after restart: %d %v", last, err)
	}
	l2.waitFor(t, func() bool { return len(l2.batches) == 4 })
	if b := l2.batches[3]; b.Epoch != 2 || string(b.Records[0]) != "e" {
		t.Fatalf("batch %+v", b)
	}
	if l2.leaders[0] != (LeaderAndEpoch{LeaderID: 1, Epoch: 2}) {
		t.Fatalf("leaders %+v", l2.leaders)
	}
}

func TestNodeSingleVoterMem(t *testing.T) { testSingleVoter(t, vfs.NewMem(), "/meta") }

func TestNodeSingleVoterOS(t *testing.T) { testSingleVoter(t, vfs.Default, t.TempDir()) }

// TestNodePowerLoss: every batch Append reported committed survives a power
// loss (only synced bytes remain) of a sole voter.
func TestNodePowerLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		fs := vfs.NewMemFS()
		n, err := NewNode(singleVoterConfig(fs, "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		var want []string
		for i := 0; i < 50; i++ {
			v := fmt.Sprintf("r%d", i)
			if _, err := n.Append(ctx, records(v)); err != nil {
				t.Fatal(err)
			}
			want = append(want, v)
		}
		crashed := fs.CrashClone()
		n.Close()

		n2, err := NewNode(singleVoterConfig(crashed, "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		l := newRecListener()
		n2.Register(l)
		if err := n2.Start(); err != nil {
			t.Fatal(err)
		}
		defer n2.Close()
		waitValues(t, l, want)
		if le := n2.LeaderAndEpoch(); le.Epoch != 2 {
			t.Fatalf("epoch after power loss %+v", le)
		}
	})
}

// A failed write of the metadata log stops the node for good and is
// reported once through OnFatal (Kafka's raft IO thread halts the process on
// any error).
func TestNodeOnFatalAfterWriteError(t *testing.T) {
	dir := t.TempDir()
	var sw vfs.Switch
	cfg := singleVoterConfig(vfs.NewInjecting(vfs.Default, sw.Inject), dir)
	fatal := make(chan error, 4)
	cfg.OnFatal = func(err error) { fatal <- err }
	n, err := NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	ctx := context.Background()
	if _, err := n.Append(ctx, [][]byte{[]byte("a")}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-fatal:
		t.Fatalf("OnFatal before any error: %v", err)
	default:
	}
	sw.Set(vfs.FailAfter(vfs.OpWrite, 0, nil))
	if _, err := n.Append(ctx, [][]byte{[]byte("b")}); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("append on a failing disk: %v, want the injected error", err)
	}
	select {
	case err := <-fatal:
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("OnFatal(%v), want the injected error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OnFatal not called after a failed metadata log write")
	}
	sw.Set(nil)
	if _, err := n.Append(ctx, [][]byte{[]byte("c")}); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("append after the failure: %v, want the node to stay failed", err)
	}
	select {
	case err := <-fatal:
		t.Fatalf("OnFatal called twice (%v)", err)
	default:
	}
}
