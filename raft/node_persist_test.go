package raft

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// syncGate blocks the fsyncs of a node's metadata log segments while closed:
// a disk whose sync never returns.
type syncGate struct {
	mu      sync.Mutex
	closed  bool
	open    chan struct{}
	entered chan string // a sync waits at the gate
}

func newSyncGate() *syncGate { return &syncGate{entered: make(chan string, 100)} }

func (g *syncGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed, g.open = true, make(chan struct{})
}

func (g *syncGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		g.closed = false
		close(g.open)
	}
}

func (g *syncGate) inject(op vfs.Op) vfs.Fault {
	if op.Kind != vfs.OpSync || !strings.HasSuffix(op.Path, ".log") {
		return vfs.Fault{}
	}
	g.mu.Lock()
	closed, open := g.closed, g.open
	g.mu.Unlock()
	if closed {
		select {
		case g.entered <- op.Path:
		default:
		}
		<-open
	}
	return vfs.Fault{}
}

// staleVote is a Vote request of an old epoch: any replica answers it at
// once (FENCED_LEADER_EPOCH), without a quorum-state write.
func staleVote(epoch int32) *kmsg.VoteRequest {
	r := kmsg.NewPtrVoteRequest()
	r.Version = 2
	cid := "cid"
	r.ClusterID = &cid
	tp := kmsg.NewVoteRequestTopic()
	tp.Topic = MetadataTopic
	p := kmsg.NewVoteRequestTopicPartition()
	p.CandidateEpoch, p.CandidateID, p.LastOffsetEpoch, p.LastOffset, p.PreVote = epoch, 3, 0, 0, true
	tp.Partitions = append(tp.Partitions, p)
	r.Topics = append(r.Topics, tp)
	return r
}

// assertResponsive: with every goroutine of the bubble blocked (the log
// writer in its fsync), Node.mu is free and the node answers a Vote and
// its status.
func assertResponsive(t *testing.T, n *Node) {
	t.Helper()
	synctest.Wait()
	if !n.mu.TryLock() {
		t.Fatal("Node.mu is held while the metadata log's fsync is blocked")
	}
	n.mu.Unlock()
	st := n.Status()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	resp, err := n.HandleRequest(ctx, staleVote(max(st.Epoch-1, 0)))
	if err != nil {
		t.Fatalf("Vote while the log's fsync is blocked: %v", err)
	}
	if vr := resp.(*kmsg.VoteResponse); len(vr.Topics) != 1 || len(vr.Topics[0].Partitions) != 1 {
		t.Fatalf("Vote response %+v", vr)
	}
}

// TestNodeLeaderLogSyncBlocked (issue 14): the leader's metadata-log fsync
// hangs. Nothing waits behind it: Node.mu is free, the leader answers Vote
// and serves Fetch from what it wrote, and a batch commits on the
// followers' durable copies (the leader counts its own log only once
// flushed, so the high watermark never passes what a majority made durable).
func TestNodeLeaderLogSyncBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newTestCluster(t, 1, 2, 3)
		gates := map[int32]*syncGate{}
		for id := int32(1); id <= 3; id++ {
			gates[id] = newSyncGate()
			c.fs[id] = vfs.NewInjecting(c.fs[id], gates[id].inject)
		}
		defer c.closeAll()
		defer func() {
			for _, g := range gates {
				g.release()
			}
		}()
		for id := int32(1); id <= 3; id++ {
			c.start(id)
		}
		l := c.leader()
		lid := l.cfg.NodeID
		if _, err := l.Append(ctx, records("a")); err != nil {
			t.Fatal(err)
		}
		g := gates[lid]
		g.close()
		done := make(chan error, 1)
		go func() {
			_, err := l.Append(ctx, records("b"))
			done <- err
		}()
		<-g.entered // the leader's writer waits in its fsync of "b"
		assertResponsive(t, l)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("append while the leader's fsync hangs: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a batch did not commit on the followers while the leader's fsync hangs")
		}
		st := l.Status()
		if st.Role != RoleLeader || st.LeaderID != lid {
			t.Fatalf("leader %d lost its leadership while its fsync hangs: %+v", lid, st)
		}
		for _, r := range st.Voters {
			if r.ReplicaID == lid && r.LogEndOffset >= st.HighWatermark {
				t.Fatalf("the leader counts its own log end %d (unflushed) for the high watermark %d", r.LogEndOffset, st.HighWatermark)
			}
		}
		for id := int32(1); id <= 3; id++ {
			if id != lid {
				waitValues(t, c.lst[id], []string{"a", "b"})
			}
		}
		// Its own listeners see "b" too: committed and written, not flushed.
		waitValues(t, c.lst[lid], []string{"a", "b"})
		assertResponsive(t, l)
		g.release()
		if _, err := l.Append(ctx, records("c")); err != nil {
			t.Fatal(err)
		}
		for id := int32(1); id <= 3; id++ {
			waitValues(t, c.lst[id], []string{"a", "b", "c"})
		}
	})
}

// TestNodeFollowerLogSyncBlocked: a follower's fsync hangs. It answers Vote
// and its status with Node.mu free, sends no Fetch with entries that are not
// durable (the leader keeps the batch out of its count), and the leader
// commits with the other follower.
func TestNodeFollowerLogSyncBlocked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newTestCluster(t, 1, 2, 3)
		gates := map[int32]*syncGate{}
		for id := int32(1); id <= 3; id++ {
			gates[id] = newSyncGate()
			c.fs[id] = vfs.NewInjecting(c.fs[id], gates[id].inject)
		}
		defer c.closeAll()
		defer func() {
			for _, g := range gates {
				g.release()
			}
		}()
		for id := int32(1); id <= 3; id++ {
			c.start(id)
		}
		l := c.leader()
		lid := l.cfg.NodeID
		if _, err := l.Append(ctx, records("a")); err != nil {
			t.Fatal(err)
		}
		fid := lid%3 + 1
		f := c.nodes[fid]
		g := gates[fid]
		g.close()
		last, err := l.Append(ctx, records("b"))
		if err != nil {
			t.Fatal(err)
		}
		<-g.entered // the follower's writer waits in its fsync of "b"
		assertResponsive(t, f)
		for _, r := range l.Status().Voters {
			if r.ReplicaID == fid && r.LogEndOffset > last {
				t.Fatalf("follower %d reported fetch offset %d past batch %d it has not flushed", fid, r.LogEndOffset, last)
			}
		}
		if st := f.Status(); st.Role != RoleFollower || st.LeaderID != lid {
			t.Fatalf("follower %d: %+v", fid, st)
		}
		g.release()
		if _, err := l.Append(ctx, records("c")); err != nil {
			t.Fatal(err)
		}
		waitValues(t, c.lst[fid], []string{"a", "b", "c"})
	})
}
