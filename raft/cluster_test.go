package raft

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

var raceEnabled bool

var debugNet = os.Getenv("RAFTDEBUG") != ""

// memNet connects in-process Nodes: a request goes through the kmsg wire
// encoding to the target's HandleRequest. A cut node neither sends nor receives.
type memNet struct {
	mu     sync.Mutex
	nodes  map[int32]*Node
	cut    map[int32]bool
	byAddr map[string]int32 // bootstrap server address -> node
}

type memTransport struct {
	net  *memNet
	from int32
}

func (t *memTransport) Send(ctx context.Context, peer Peer, req kmsg.Request) (kmsg.Response, error) {
	to := peer.ID
	t.net.mu.Lock()
	if to < 0 {
		to = t.net.byAddr[peer.Addr]
	}
	n := t.net.nodes[to]
	cut := t.net.cut[to] || t.net.cut[t.from]
	t.net.mu.Unlock()
	if debugNet {
		fmt.Printf("%v %d->%d %T cut=%v\n", time.Now().UnixMilli()%100000, t.from, to, req, cut)
	}
	if n == nil || cut {
		return nil, errors.New("unreachable")
	}
	if av, ok := req.(*kmsg.ApiVersionsRequest); ok {
		// the broker layer's ApiVersions: the supported kraft.version range
		resp := av.ResponseKind().(*kmsg.ApiVersionsResponse)
		f := kmsg.NewApiVersionsResponseSupportedFeature()
		f.Name, f.MinVersion, f.MaxVersion = "kraft.version", 0, MaxKRaftVersion
		resp.SupportedFeatures = append(resp.SupportedFeatures, f)
		return resp, nil
	}
	dec := kmsg.RequestForKey(req.Key())
	dec.SetVersion(req.GetVersion())
	if err := dec.ReadFrom(req.AppendTo(nil)); err != nil {
		return nil, err
	}
	resp, err := n.HandleRequest(ctx, dec)
	if err != nil {
		return nil, err
	}
	out := dec.ResponseKind()
	out.SetVersion(req.GetVersion())
	if err := out.ReadFrom(resp.AppendTo(nil)); err != nil {
		return nil, err
	}
	t.net.mu.Lock()
	cut = t.net.cut[to] || t.net.cut[t.from]
	t.net.mu.Unlock()
	if cut {
		return nil, errors.New("unreachable")
	}
	return out, nil
}

type testCluster struct {
	t       *testing.T
	net     *memNet
	dynamic bool // no static voters: bootstrap servers, a bootstrap checkpoint on the initial voters
	voters  map[int32]VoterEndpoint
	fs      map[int32]vfs.FS
	nodes   map[int32]*Node
	lst     map[int32]*recListener
	snap    SnapshotConfig // zero: DefaultSnapshotConfig
}

func newTestCluster(t *testing.T, ids ...int32) *testCluster {
	c := &testCluster{t: t, net: &memNet{nodes: map[int32]*Node{}, cut: map[int32]bool{}, byAddr: map[string]int32{}},
		voters: map[int32]VoterEndpoint{}, fs: map[int32]vfs.FS{}, nodes: map[int32]*Node{}, lst: map[int32]*recListener{}}
	for _, id := range ids {
		c.voters[id] = VoterEndpoint{Host: "localhost", Port: 9000 + int(id)}
		c.net.byAddr[fmt.Sprintf("localhost:%d", 9000+id)] = id
		c.fs[id] = vfs.NewMem()
	}
	return c
}

func (c *testCluster) start(id int32) {
	cfg := Config{NodeID: id, Voters: c.voters, Logger: testLogger(c.t), ClusterID: "cid", MetadataLogDir: "/meta", FS: c.fs[id],
		Rand:            rand.New(rand.NewSource(int64(id))),
		ElectionTimeout: 100 * time.Millisecond, FetchTimeout: 200 * time.Millisecond,
		RequestTimeout: 200 * time.Millisecond, FetchMaxWait: 50 * time.Millisecond, TickInterval: 5 * time.Millisecond,
		Transport: &memTransport{net: c.net, from: id}, Snapshots: c.snap,
		DirectoryID: testDir(id), CanBecomeVoter: true,
		LocalEndpoints: []Endpoint{{Name: "CONTROLLER", Host: "localhost", Port: uint16(9000 + id)}}}
	if c.dynamic {
		cfg.Voters = nil
		for bid := range c.voters {
			cfg.BootstrapServers = append(cfg.BootstrapServers, c.voters[bid])
		}
		c.net.mu.Lock()
		c.net.byAddr[fmt.Sprintf("localhost:%d", 9000+id)] = id
		c.net.mu.Unlock()
	}
	n, err := NewNode(cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	l := newRecListener()
	n.Register(l)
	c.net.mu.Lock()
	c.net.nodes[id] = n
	c.net.mu.Unlock()
	if err := n.Start(); err != nil {
		c.t.Fatal(err)
	}
	c.nodes[id], c.lst[id] = n, l
}

func testDir(id int32) [16]byte { return [16]byte{0: 0xd1, 15: byte(id)} }

// testVoter is node id as a voter entry.
func testVoter(id int32) Voter {
	return Voter{Key: ReplicaKey{ID: id, DirectoryID: testDir(id)},
		Endpoints: []Endpoint{{Name: "CONTROLLER", Host: "localhost", Port: uint16(9000 + id)}}, KRaftMin: 0, KRaftMax: 1}
}

// bootstrap writes the checkpoint kafka-storage.sh format --initial-controllers
// writes (kraft.version 1 and the voters) into id's metadata log dir.
func (c *testCluster) bootstrap(id int32, voters ...int32) {
	var vs []Voter
	for _, v := range voters {
		vs = append(vs, testVoter(v))
	}
	set, err := NewVoterSet(vs...)
	if err != nil {
		c.t.Fatal(err)
	}
	dir := partitionDir("/meta")
	if err := vfs.MkdirAllSync(c.fs[id], dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	b := EncodeSnapshotControl(OffsetAndEpoch{}, 0, 0, SnapshotControl{KRaftVersion: 1, Voters: &set}, nil)
	if err := vfs.WriteFileAtomic(c.fs[id], dir+"/"+SnapshotFileName(OffsetAndEpoch{}), b); err != nil {
		c.t.Fatal(err)
	}
}

func (c *testCluster) stop(id int32) {
	c.net.mu.Lock()
	delete(c.net.nodes, id)
	c.net.mu.Unlock()
	if err := c.nodes[id].Close(); err != nil {
		c.t.Fatal(err)
	}
	delete(c.nodes, id)
}

func (c *testCluster) closeAll() {
	for id := range c.nodes {
		c.stop(id)
	}
}

// leader waits (in fake time) until exactly one running node leads and all
// running nodes agree on it.
func (c *testCluster) leader() *Node {
	c.t.Helper()
	for i := 0; i < 1000; i++ {
		var leaders []int32
		agree := true
		var le LeaderAndEpoch
		first := true
		for id, n := range c.nodes {
			if c.net.cut[id] {
				continue
			}
			st := n.Status()
			if st.Role == RoleLeader {
				leaders = append(leaders, id)
			}
			cur := n.LeaderAndEpoch()
			if first {
				le, first = cur, false
			} else if cur != le {
				agree = false
			}
		}
		if len(leaders) == 1 && agree && le.LeaderID == leaders[0] {
			return c.nodes[leaders[0]]
		}
		time.Sleep(10 * time.Millisecond)
	}
	for id, n := range c.nodes {
		c.t.Logf("%d: %+v cut=%v", id, n.Status(), c.net.cut[id])
	}
	c.t.Fatal("no leader")
	return nil
}

func records(ss ...string) [][]byte {
	var out [][]byte
	for _, s := range ss {
		out = append(out, []byte(s))
	}
	return out
}

func (l *recListener) values() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, b := range l.batches {
		for _, r := range b.Records {
			out = append(out, string(r))
		}
	}
	return out
}

func waitValues(t *testing.T, l *recListener, want []string) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if slices.Equal(l.values(), want) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("listener has %v, want %v", l.values(), want)
}

func TestNodeThreeVoters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newTestCluster(t, 1, 2, 3)
		defer c.closeAll()
		for id := int32(1); id <= 3; id++ {
			c.start(id)
		}
		l := c.leader()
		lid := l.cfg.NodeID
		if _, err := l.Append(ctx, records("a", "b")); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Append(ctx, records("c")); err != nil {
			t.Fatal(err)
		}
		for id := range c.nodes {
			waitValues(t, c.lst[id], []string{"a", "b", "c"})
		}
		// a follower refuses with a hint
		for id, n := range c.nodes {
			if id == lid {
				continue
			}
			_, err := n.Append(ctx, records("x"))
			var nle *NotLeaderError
			if !errors.As(err, &nle) || nle.Leader.LeaderID != lid || !errors.Is(err, ErrNotLeader) {
				t.Fatalf("follower append: %v", err)
			}
			break
		}
		// DescribeQuorum on the leader
		resp, err := l.HandleRequest(ctx, &kmsg.DescribeQuorumRequest{Version: 2, Topics: []kmsg.DescribeQuorumRequestTopic{{
			Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
		if err != nil {
			t.Fatal(err)
		}
		p := resp.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0]
		if p.LeaderID != lid || len(p.CurrentVoters) != 3 || p.HighWatermark < 4 {
			t.Fatalf("describe quorum %+v", p)
		}
		for _, v := range p.CurrentVoters {
			if v.LogEndOffset < 4 || v.LastFetchTimestamp <= 0 || v.LastCaughtUpTimestamp <= 0 {
				t.Fatalf("voter state %+v", v)
			}
		}

		// Graceful leader shutdown: EndQuorumEpoch, a new leader takes over.
		c.stop(lid)
		l2 := c.leader()
		if l2.cfg.NodeID == lid || l2.LeaderAndEpoch().Epoch <= 1 {
			t.Fatalf("new leader %+v", l2.LeaderAndEpoch())
		}
		if _, err := l2.Append(ctx, records("d")); err != nil {
			t.Fatal(err)
		}
		// The old leader restarts, follows and catches up; its listener
		// gets the whole committed log again.
		c.start(lid)
		for id := range c.nodes {
			waitValues(t, c.lst[id], []string{"a", "b", "c", "d"})
		}

		// Partition the leader away: the rest elect a new one; the old
		// leader's append does not commit.
		l3 := c.leader()
		old := l3.cfg.NodeID
		c.net.mu.Lock()
		c.net.cut[old] = true
		c.net.mu.Unlock()
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = l3.Append(actx, records("lost"))
		cancel()
		if err == nil {
			t.Fatal("append on an isolated leader committed")
		}
		l4 := c.leader()
		if _, err := l4.Append(ctx, records("e")); err != nil {
			t.Fatal(err)
		}
		c.net.mu.Lock()
		c.net.cut[old] = false
		c.net.mu.Unlock()
		for id := range c.nodes {
			waitValues(t, c.lst[id], []string{"a", "b", "c", "d", "e"})
		}

		// An observer (a broker: not a voter) finds the leader and replicates.
		c.fs[4] = vfs.NewMem()
		c.start(4)
		waitValues(t, c.lst[4], []string{"a", "b", "c", "d", "e"})
		if st := c.nodes[4].Status(); st.Role != RoleFollower || st.LeaderID != l4.cfg.NodeID {
			t.Fatalf("observer %+v", st)
		}
		if _, err := c.nodes[4].Append(ctx, records("x")); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("observer append: %v", err)
		}
		time.Sleep(time.Second)
		resp, err = l4.HandleRequest(ctx, &kmsg.DescribeQuorumRequest{Version: 2, Topics: []kmsg.DescribeQuorumRequestTopic{{
			Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
		if err != nil {
			t.Fatal(err)
		}
		p = resp.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0]
		if len(p.Observers) != 1 || p.Observers[0].ReplicaID != 4 || p.Observers[0].LogEndOffset != p.HighWatermark {
			t.Fatalf("observers %+v hw %d", p.Observers, p.HighWatermark)
		}
	})
}

func testLogger(t *testing.T) *zap.Logger {
	if debugNet {
		return zaptest.NewLogger(t)
	}
	return zap.NewNop()
}

// TestNodePowerLossFollowerAndLeader: voters lose their unsynced bytes one
// after the other while batches commit; nothing committed is lost.
func TestNodePowerLossFollowerAndLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newTestCluster(t, 1, 2, 3)
		defer c.closeAll()
		for id := int32(1); id <= 3; id++ {
			c.start(id)
		}
		var want []string
		uncertain := map[string]bool{} // failed appends may still commit
		seq := 0
		appendSome := func(k int) {
			for i := 0; i < k; i++ {
				for {
					v := fmt.Sprintf("r%d", seq)
					seq++
					l := c.leader()
					actx, cancel := context.WithTimeout(ctx, time.Second)
					_, err := l.Append(actx, records(v))
					cancel()
					if err == nil {
						want = append(want, v)
						break
					}
					uncertain[v] = true
				}
			}
		}
		powerLoss := func(id int32) {
			clone := c.fs[id].(*vfs.MemFS).CrashClone()
			c.stop(id)
			c.fs[id] = clone
			c.start(id)
		}
		appendSome(10)
		for round := 0; round < 3; round++ {
			l := c.leader().cfg.NodeID
			f := l%3 + 1
			powerLoss(f)
			appendSome(5)
			powerLoss(l)
			appendSome(5)
		}
		for id := range c.nodes {
			for i := 0; ; i++ {
				var got []string
				for _, v := range c.lst[id].values() {
					if !uncertain[v] {
						got = append(got, v)
					}
				}
				if slices.Equal(got, want) {
					break
				}
				if i == 1000 {
					t.Fatalf("node %d has %v, want %v", id, got, want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
}
