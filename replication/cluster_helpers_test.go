package replication

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// A cluster of in-process ReplicaManagers (run it inside synctest.Test: the
// clock is the bubble's). Followers reach leaders through memConn, which
// calls the leader's Fetch/ListOffsets/OffsetForLeaderEpoch directly, and
// leaders reach a fake controller that validates AlterPartition as the real
// one does and publishes the PartitionChangeRecord to every node's image.

type rcNode struct {
	id    int32
	rm    *ReplicaManager
	cache *metadatacache.Cache
	logs  *memLogs
	down  atomic.Bool
	// epoch is the broker epoch of the node's current registration: it
	// changes when the node restarts (RegisterBrokerRecord).
	epoch atomic.Int64
	// live is rm for other nodes' goroutines (rm and cache change only
	// under rcluster.mu, from the test's goroutine); nil while crashed.
	live atomic.Pointer[ReplicaManager]
}

type rcluster struct {
	t     *testing.T
	nodes map[int32]*rcNode
	rcfg  ReplicationConfig

	mu   sync.Mutex // serializes metadata batches
	next int64

	alters   atomic.Int32 // AlterPartition requests handled
	ctrlDown atomic.Bool
	// ctrl is the controller's own image: it has every record at once.
	ctrl *metadatacache.Cache
	// holdImages: records reach the controller's image at once but the
	// nodes' only at releaseImages (metadata propagation lag).
	holdImages atomic.Bool
	held       []metadatacache.Batch // guarded by mu
	// fetchVersion is the Fetch version leaders serve (17 when 0); below
	// 12 there are no diverging epochs (a pre-KIP-320 leader).
	fetchVersion int16
	// configure, when set, adjusts each node's Config as it starts.
	configure func(cfg *Config)
	// netFault, when set, decides the fate of each message between nodes
	// (to 0: the controller): delayed, the request lost, or the answer
	// lost after the request took effect.
	netFault func(from, to int32, req kmsg.Request) netFate
}

// netFate is what happens to one request.
type netFate struct {
	delay             time.Duration
	dropReq, dropResp bool
}

// fate asks netFault about one request and waits out its delay.
func (c *rcluster) fate(ctx context.Context, from, to int32, req kmsg.Request) (netFate, error) {
	if c.netFault == nil {
		return netFate{}, nil
	}
	f := c.netFault(from, to, req)
	if f.delay > 0 {
		t := time.NewTimer(f.delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return f, ctx.Err()
		case <-t.C:
		}
	}
	if f.dropReq {
		return f, errConnDown
	}
	return f, nil
}

// LogDirs, LogDirOf and FS make memLogs a hwCheckpointLogs.
func (m *memLogs) LogDirs() []string { return []string{m.root} }
func (m *memLogs) LogDirOf(tp storage.TopicPartition) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.logs[tp]
	return m.root, ok
}
func (m *memLogs) FS() vfs.FS { return m.fs }

func brokerEpochOf(id int32) int64 { return 100 + int64(id) }

func testReplicationConfig() ReplicationConfig {
	return ReplicationConfig{
		FetchWaitMax:         500 * time.Millisecond,
		FetchBackoff:         100 * time.Millisecond,
		LagTimeMax:           10 * time.Second,
		HWCheckpointInterval: 5 * time.Second,
	}
}

func newCluster(t *testing.T, n int, rcfg ReplicationConfig) *rcluster {
	t.Helper()
	return newClusterConfigured(t, n, rcfg, nil)
}

// newClusterConfigured is newCluster with configure applied to each node's
// Config.
func newClusterConfigured(t *testing.T, n int, rcfg ReplicationConfig, configure func(cfg *Config)) *rcluster {
	t.Helper()
	c := &rcluster{t: t, nodes: map[int32]*rcNode{}, rcfg: rcfg, configure: configure,
		ctrl: metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})}
	for id := int32(1); id <= int32(n); id++ {
		nd := &rcNode{id: id, logs: newMemLogs()}
		nd.epoch.Store(brokerEpochOf(id))
		c.nodes[id] = nd
	}
	for _, nd := range c.nodes {
		c.startNode(nd)
	}
	var recs []metadatacache.Record
	for id := int32(1); id <= int32(n); id++ {
		r := metadatacache.NewRegisterBrokerRecord()
		r.BrokerID, r.BrokerEpoch, r.Fenced = id, brokerEpochOf(id), false
		recs = append(recs, r)
	}
	c.apply(recs...)
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			if nd.rm != nil {
				nd.rm.Close()
			}
			nd.logs.close()
		}
	})
	return c
}

// startNode builds a node's ReplicaManager over its logs and replays the
// metadata so far (a restart keeps the logs).
func (c *rcluster) startNode(nd *rcNode) {
	id := nd.id
	cache := metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})
	cfg := Config{NodeID: id, Logs: nd.logs, Now: time.Now, Controller: ctrlRequestor{c: c, from: id},
		BrokerEpoch: nd.epoch.Load}
	if c.configure != nil {
		c.configure(&cfg)
	}
	rm := New(cfg)
	cache.Subscribe(rm.OnImage)
	c.mu.Lock()
	// replay the metadata so far: the controller's, or another node's
	var img *metadatacache.Image
	if c.ctrl != nil {
		img = c.ctrl.Image()
	}
	for _, other := range c.nodes {
		if img == nil && other != nd && other.cache != nil && !other.cache.Image().IsEmpty() {
			img = other.cache.Image()
		}
	}
	if img != nil && !img.IsEmpty() {
		recs := img.Records()
		if err := cache.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
			c.t.Fatalf("replay: %v", err)
		}
	}
	nd.cache, nd.rm = cache, rm
	nd.live.Store(rm)
	c.mu.Unlock()
	rcfg := c.rcfg
	rcfg.Dial = c.dial(id)
	rm.StartReplication(rcfg)
}

// restart closes a node's ReplicaManager (writing its HW checkpoint) and
// starts a new one over the same logs.
func (c *rcluster) restart(id int32) {
	nd := c.nodes[id]
	c.mu.Lock()
	rm, logs := nd.rm, nd.logs
	nd.rm, nd.cache = nil, nil
	nd.live.Store(nil)
	nd.logs = &memLogs{fs: logs.fs, root: logs.root, now: time.Now, logs: map[storage.TopicPartition]*storage.Log{}}
	c.mu.Unlock()
	rm.Close()
	logs.close()
	c.startNode(nd)
}

// crash is kill -9: the node stops answering at once and its disks keep
// only what was synced (vfs.MemFS.CrashClone, given opts). The process
// left behind is shut down against the old file system, so nothing it
// does reaches the image the node restarts from. The node stays down
// until restartCrashed.
func (c *rcluster) crash(id int32, opts ...vfs.CrashOption) {
	nd := c.nodes[id]
	nd.down.Store(true)
	c.mu.Lock()
	fs := nd.logs.fs.(*vfs.MemFS).CrashClone(opts...)
	rm, logs := nd.rm, nd.logs
	nd.rm, nd.cache = nil, nil
	nd.live.Store(nil)
	nd.logs = &memLogs{fs: fs, root: logs.root, now: time.Now, crashed: true, logs: map[storage.TopicPartition]*storage.Log{}}
	c.mu.Unlock()
	rm.Close()
	logs.close()
}

// restartCrashed starts a crashed node again: it recovers its logs from
// the crash image, registers with a new broker epoch (as a restarted
// broker does) and is reachable again.
func (c *rcluster) restartCrashed(id int32) {
	nd := c.nodes[id]
	nd.epoch.Add(1000)
	c.startNode(nd)
	r := metadatacache.NewRegisterBrokerRecord()
	r.BrokerID, r.BrokerEpoch, r.Fenced = id, nd.epoch.Load(), false
	c.apply(r)
	nd.down.Store(false)
}

func (c *rcluster) node(id int32) *rcNode { return c.nodes[id] }

func (c *rcluster) apply(recs ...metadatacache.Record) {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	b := metadatacache.Batch{BaseOffset: c.next, LastOffset: c.next + int64(len(recs)) - 1, Epoch: 1, Records: recs}
	c.next += int64(len(recs))
	if c.ctrl != nil {
		if err := c.ctrl.Apply(b); err != nil {
			c.t.Errorf("apply on the controller: %v", err)
		}
	}
	if c.holdImages.Load() {
		c.held = append(c.held, b)
		return
	}
	c.applyNodesLocked(b)
}

// applyNodesLocked applies a metadata batch to every node's image. c.mu
// must be held.
func (c *rcluster) applyNodesLocked(b metadatacache.Batch) {
	for id := int32(1); id <= int32(len(c.nodes)); id++ {
		if c.nodes[id].cache == nil {
			continue // crashed: it replays the image when it restarts
		}
		if err := c.nodes[id].cache.Apply(b); err != nil {
			c.t.Errorf("apply on node %d: %v", id, err)
		}
	}
}

// ctrlImage is the controller's image (node 1's in clusters without one).
func (c *rcluster) ctrlImage() *metadatacache.Image {
	if c.ctrl != nil {
		return c.ctrl.Image()
	}
	return c.nodes[1].cache.Image()
}

func (c *rcluster) createTopic(name string, replicas []int32, leader int32, isr []int32, configs map[string]string) {
	c.t.Helper()
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = name, topicID(name)
	recs := []metadatacache.Record{tr}
	for k, v := range configs {
		recs = append(recs, newConfigRecord(name, k, v))
	}
	if isr == nil {
		isr = replicas
	}
	pr := metadatacache.NewPartitionRecord()
	pr.PartitionID, pr.TopicID = 0, topicID(name)
	pr.Replicas, pr.Isr, pr.Leader = replicas, isr, leader
	pr.LeaderEpoch, pr.PartitionEpoch = 0, 0
	recs = append(recs, pr)
	c.apply(recs...)
}

// elect moves leadership (and sets the ISR) as the controller would.
func (c *rcluster) elect(name string, leader int32, isr []int32) {
	c.t.Helper()
	r := metadatacache.NewPartitionChangeRecord()
	r.TopicID, r.PartitionID, r.Leader, r.Isr = topicID(name), 0, leader, isr
	c.apply(r)
}

func (c *rcluster) meta(name string) metadatacache.Partition {
	return *c.nodes[1].cache.Image().Partition(topicID(name), 0)
}

func (c *rcluster) part(id int32, name string) *Partition {
	p, ok := c.nodes[id].rm.Partition(name, 0)
	if !ok {
		c.t.Fatalf("node %d has no %s-0", id, name)
	}
	return p
}

// waitFor polls cond on the bubble's clock.
func (c *rcluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// produceAsync produces one batch with the given acks to leader.
func (c *rcluster) produceAsync(leader int32, name string, acks int16, recs []byte) <-chan kmsg.ProduceResponseTopicPartition {
	ch := make(chan kmsg.ProduceResponseTopicPartition, 1)
	rm := c.nodes[leader].rm
	go func() {
		resp := rm.Produce(context.Background(), produceReq(12, acks, 30000, name, 0, recs), "test")
		ch <- resp.Topics[0].Partitions[0]
	}()
	return ch
}

// logValues reads a node's whole log of name-0.
func (c *rcluster) logValues(id int32, name string) []string {
	c.t.Helper()
	p := c.part(id, name)
	p.mu.RLock()
	l := p.log
	p.mu.RUnlock()
	b, err := l.ReadBatches(l.LogStartOffset(), 1<<30, l.LogEndOffset(), true)
	if err != nil {
		c.t.Fatalf("read node %d: %v", id, err)
	}
	return values(c.t, b)
}

func (c *rcluster) dial(from int32) DialLeader {
	return func(_ context.Context, to int32) (LeaderConn, error) {
		nd, ok := c.nodes[to]
		if !ok || nd.down.Load() || c.nodes[from].down.Load() {
			return nil, fmt.Errorf("node %d unreachable", to)
		}
		return &memConn{c: c, from: from, to: to}, nil
	}
}

// memConn is a LeaderConn calling the leader's ReplicaManager directly.
type memConn struct {
	c        *rcluster
	from, to int32
	closed   atomic.Bool
}

var errConnDown = errors.New("connection down")

func (m *memConn) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	if m.closed.Load() || m.c.nodes[m.to].down.Load() || m.c.nodes[m.from].down.Load() {
		return nil, errConnDown
	}
	fate, err := m.c.fate(ctx, m.from, m.to, req)
	if err != nil {
		m.closed.Store(true) // a lost message breaks the connection
		return nil, err
	}
	rm := m.c.nodes[m.to].live.Load()
	if rm == nil || m.c.nodes[m.to].down.Load() {
		return nil, errConnDown
	}
	var resp kmsg.Response
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		r.Version = m.fetchVersion()
		res := rm.Fetch(ctx, r)
		if err := res.Materialize(); err != nil {
			return nil, err
		}
		resp = res.Resp
	case *kmsg.ListOffsetsRequest:
		r.Version = 7
		resp = rm.ListOffsets(r)
	case *kmsg.OffsetForLeaderEpochRequest:
		r.Version = 4
		resp = rm.OffsetForLeaderEpoch(r)
	default:
		return nil, fmt.Errorf("memConn: unexpected %T", req)
	}
	if m.c.nodes[m.to].down.Load() || m.c.nodes[m.from].down.Load() || fate.dropResp {
		m.closed.Store(true)
		return nil, errConnDown // died while the request was parked, or the answer was lost
	}
	return resp, nil
}

func (m *memConn) Close() error { m.closed.Store(true); return nil }

func (m *memConn) fetchVersion() int16 {
	if m.c.fetchVersion == 0 {
		return 17
	}
	return m.c.fetchVersion
}

// Versions is protocol.Client.Versions for Fetch.
func (m *memConn) Versions(key int16) (int16, int16, bool) {
	if key != 1 {
		return 0, 0, false
	}
	return 4, m.fetchVersion(), true
}

// ctrlRequestor is the fake controller reached by node from.
type ctrlRequestor struct {
	c    *rcluster
	from int32
}

func (r ctrlRequestor) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c := r.c
	if c.ctrlDown.Load() || c.nodes[r.from].down.Load() {
		return nil, errConnDown
	}
	fate, err := c.fate(ctx, r.from, 0, req)
	if err != nil {
		return nil, err
	}
	resp, err := r.alterPartition(req)
	if err == nil && (fate.dropResp || c.nodes[r.from].down.Load()) {
		return nil, errConnDown
	}
	return resp, err
}

// alterPartition validates AlterPartition as the controller does and
// publishes the accepted ISRs.
func (r ctrlRequestor) alterPartition(req kmsg.Request) (kmsg.Response, error) {
	c := r.c
	ap, ok := req.(*kmsg.AlterPartitionRequest)
	if !ok {
		return nil, fmt.Errorf("fake controller: unexpected %T", req)
	}
	ap.Version = 3
	c.alters.Add(1)
	resp := ap.ResponseKind().(*kmsg.AlterPartitionResponse)
	if nd, ok := c.nodes[ap.BrokerID]; !ok || ap.BrokerEpoch != nd.epoch.Load() {
		resp.ErrorCode = kerr.StaleBrokerEpoch.Code
		return resp, nil
	}
	var recs []metadatacache.Record
	img := c.ctrlImage()
	for _, t := range ap.Topics {
		rt := kmsg.NewAlterPartitionResponseTopic()
		rt.TopidID = t.TopicID
		for _, pd := range t.Partitions {
			rp := kmsg.NewAlterPartitionResponseTopicPartition()
			rp.Partition = pd.Partition
			p := img.Partition(t.TopicID, pd.Partition)
			var isr []int32
			for _, b := range pd.NewEpochISR {
				isr = append(isr, b.BrokerID)
				// KIP-841 / KIP-903: a fenced, shutting down or
				// re-registered broker never joins the ISR
				if b.BrokerID == ap.BrokerID {
					continue
				}
				reg := img.Broker(b.BrokerID)
				switch {
				case reg == nil, reg.Fenced, reg.InControlledShutdown:
					if p != nil && !slices.Contains(p.Isr, b.BrokerID) {
						rp.ErrorCode = kerr.IneligibleReplica.Code
					}
				case b.BrokerEpoch != -1 && b.BrokerEpoch != reg.Epoch:
					rp.ErrorCode = kerr.IneligibleReplica.Code
				}
			}
			switch {
			case p == nil:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case pd.LeaderEpoch < p.LeaderEpoch:
				rp.ErrorCode = kerr.FencedLeaderEpoch.Code
			case pd.PartitionEpoch < p.PartitionEpoch:
				rp.ErrorCode = kerr.InvalidUpdateVersion.Code
			case p.Leader != ap.BrokerID || !slices.Contains(isr, p.Leader):
				rp.ErrorCode = kerr.InvalidRequest.Code
			}
			if rp.ErrorCode == 0 {
				rec := metadatacache.NewPartitionChangeRecord()
				rec.TopicID, rec.PartitionID, rec.Isr = t.TopicID, pd.Partition, isr
				recs = append(recs, rec)
				rp.LeaderID, rp.LeaderEpoch, rp.PartitionEpoch, rp.ISR = p.Leader, p.LeaderEpoch, p.PartitionEpoch+1, isr
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if len(recs) > 0 {
		c.apply(recs...)
	}
	return resp, nil
}

// releaseImages publishes the records held back by holdImages.
func (c *rcluster) releaseImages() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holdImages.Store(false)
	for _, b := range c.held {
		c.applyNodesLocked(b)
	}
	c.held = nil
}
