package replication

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// A seeded simulation of one partition replicated on three in-process
// nodes (the cluster helpers: ReplicaManagers over MemFS, a fake controller
// reached by AlterPartition), driven by a random sequence of steps:
// acks=all idempotent produces, process crashes (kill -9: the page cache
// survives) or power losses (MemFS.CrashClone, with flush.messages=1) and
// restarts, network partitions, lost and delayed messages (requests lost
// before or after they take effect), and leader changes as the controller
// makes them (clean elections from the ISR; a crashed broker is fenced and
// leaves the ISR). After every step, once the cluster is quiet
// (synctest.Wait), it checks:
//
//   - no acknowledged record is lost: the leader's log holds every one at
//     its offset, once, with its value;
//   - the high watermark never exceeds the log end offset of any ISR
//     member, on the leader (for the controller's ISR) and on every
//     replica (its own);
//   - all replicas agree below their high watermarks;
//   - no two nodes lead the same leader epoch;
//
// and, at the end, with every node back and the network healed, that every
// replica rejoined the ISR (within a bounded time) with the leader's log.
//
// go test -run TestSimulation [-sim.seeds=N] [-sim.seed=S] [-v]
// (KGO_SIM_SEEDS=N works too). A failure prints the seed and the step log;
// -sim.seed=S replays that seed alone (the goroutines of one seed still
// interleave as the scheduler likes, so a replay follows the same steps but
// not always the same path).

var (
	simSeeds = flag.Int("sim.seeds", 0, "seeds for TestSimulation (default 2000, 100 with -race or -short)")
	simSeed  = flag.Int64("sim.seed", -1, "replay this one seed of TestSimulation")
	simSteps = flag.Int("sim.steps", 40, "steps per seed of TestSimulation")
)

func TestSimulation(t *testing.T) {
	if *simSeed >= 0 {
		if err := runSim(t, uint64(*simSeed), *simSteps, true); err != nil {
			t.Fatal(err)
		}
		return
	}
	n := 2000
	if invariantsEnabled || testing.Short() {
		n = 100
	}
	if v := os.Getenv("KGO_SIM_SEEDS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	if *simSeeds > 0 {
		n = *simSeeds
	}
	// the seeds run on parallel workers, each seed in its own bubble
	var (
		mu     sync.Mutex
		failed string
		next   uint64
	)
	t.Run("seeds", func(t *testing.T) {
		for w := range 4 {
			t.Run(fmt.Sprint("worker", w), func(t *testing.T) {
				t.Parallel()
				for {
					mu.Lock()
					seed := next
					next++
					stop := int(seed) >= n || failed != ""
					mu.Unlock()
					if stop {
						return
					}
					if err := runSim(t, seed, *simSteps, false); err != nil {
						mu.Lock()
						if failed == "" {
							failed = err.Error()
						}
						mu.Unlock()
						return
					}
				}
			})
		}
	})
	if failed != "" {
		t.Fatal(failed)
	}
	t.Logf("%d seeds of %d steps", n, *simSteps)
}

// simTopic is the simulated partition's topic.
const simTopic = "s"

// sim is one seed's run.
type sim struct {
	c       *rcluster
	rng     *rand.Rand
	durable bool // flush.messages=1: crashes are power losses
	trace   []string
	verbose bool
	t       *testing.T

	netMu sync.Mutex
	net   *rand.Rand  // the network's own randomness, asked from many goroutines
	lossy atomic.Bool // messages may be lost or delayed
	cut   map[int32]bool

	crashed map[int32]bool
	// the producer: one batch in flight, retried until acknowledged
	seq     int32
	pending []string // values of the batch being sent
	acked   map[int64]string
}

func (s *sim) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.trace = append(s.trace, line)
	if s.verbose {
		s.t.Log(line)
	}
}

// simError is a failed check, with what is needed to replay it.
func (s *sim) failf(seed uint64, format string, args ...any) error {
	return fmt.Errorf("simulation seed %d failed: %s\nreplay: go test ./replication/ -run 'TestSimulation$' -sim.seed=%d -v\nsteps:\n  %s",
		seed, fmt.Sprintf(format, args...), seed, strings.Join(s.trace, "\n  "))
}

func runSim(t *testing.T, seed uint64, steps int, verbose bool) (err error) {
	synctest.Test(t, func(t *testing.T) {
		err = simulate(t, seed, steps, verbose)
	})
	return err
}

func simulate(t *testing.T, seed uint64, steps int, verbose bool) error {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &sim{rng: rng, net: rand.New(rand.NewPCG(seed, 0x9e7)), durable: rng.IntN(2) == 0, verbose: verbose, t: t,
		cut: map[int32]bool{}, crashed: map[int32]bool{}, acked: map[int64]string{}}
	cfg := testReplicationConfig()
	s.c = newCluster(t, 3, cfg)
	s.c.netFault = s.netFault
	if rng.IntN(4) == 0 {
		s.c.fetchVersion = 11 // leaders without KIP-320: OffsetForLeaderEpoch truncation
	}
	configs := map[string]string{"min.insync.replicas": "2"}
	if s.durable {
		configs["flush.messages"] = "1"
	}
	s.c.createTopic(simTopic, []int32{1, 2, 3}, 1, nil, configs)
	s.logf("seed %d: 3 replicas, min.insync.replicas=2, durable=%v, fetch v%d", seed, s.durable, s.c.fetchVersion)
	for step := range steps {
		s.step(step)
		synctest.Wait()
		if err := s.check(); err != nil {
			return s.failf(seed, "after step %d: %v", step, err)
		}
	}
	// heal everything: every replica must rejoin the ISR with the leader's log
	s.logf("heal")
	s.lossy.Store(false)
	for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
		switch {
		case s.crashed[id]:
			s.restart(id)
		case s.cut[id]:
			s.heal(id)
		}
	}
	s.electIfLeaderless()
	for i := 0; s.pending != nil && i < 100; i++ {
		s.produce()
		time.Sleep(100 * time.Millisecond)
		s.electIfLeaderless()
	}
	deadline := time.Now().Add(4 * cfg.LagTimeMax)
	for !s.converged() {
		if time.Now().After(deadline) {
			if os.Getenv("KGO_SIM_STACKS") != "" {
				buf := make([]byte, 1<<22)
				os.Stderr.Write(buf[:runtime.Stack(buf, true)])
			}
			return s.failf(seed, "not converged %v after healing: %s", 4*cfg.LagTimeMax, s.state())
		}
		time.Sleep(100 * time.Millisecond)
		s.electIfLeaderless()
	}
	synctest.Wait()
	if err := s.check(); err != nil {
		return s.failf(seed, "after healing: %v", err)
	}
	return nil
}

// netFault is the cluster's network: cut nodes are unreachable (the
// helpers' down flag), and with lossy on, a request is sometimes delayed,
// lost, or answered with the answer lost.
func (s *sim) netFault(from, to int32, _ kmsg.Request) netFate {
	s.netMu.Lock()
	defer s.netMu.Unlock()
	if !s.lossy.Load() {
		return netFate{}
	}
	var f netFate
	switch r := s.net.IntN(100); {
	case r < 3:
		f.dropReq = true
	case r < 6:
		f.dropResp = true
	case r < 20:
		f.delay = time.Duration(s.net.IntN(300)) * time.Millisecond
	}
	return f
}

func (s *sim) live() []int32 {
	var out []int32
	for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
		if !s.crashed[id] && !s.c.node(id).down.Load() {
			out = append(out, id)
		}
	}
	return out
}

// meta is the controller's view of the partition.
func (s *sim) meta() *metadatacache.Partition {
	return s.c.ctrlImage().Partition(topicID(simTopic), 0)
}

func (s *sim) step(step int) {
	switch r := s.rng.IntN(100); {
	case r < 45:
		s.produce()
	case r < 53:
		// kill -9 or power loss of a node that is up
		if live := s.live(); len(live) > 1 {
			s.crash(live[s.rng.IntN(len(live))])
		}
	case r < 63:
		// restart a crashed node
		for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
			if s.crashed[id] {
				s.restart(id)
				break
			}
		}
	case r < 68:
		// a network partition cuts a node off (it keeps running); the
		// controller may fence it once its heartbeats stop
		if live := s.live(); len(live) > 1 {
			id := live[s.rng.IntN(len(live))]
			s.cut[id] = true
			s.c.node(id).down.Store(true)
			s.logf("step %d: partition node %d", step, id)
			if s.rng.IntN(2) == 0 {
				s.fence(id)
			}
		}
	case r < 76:
		for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
			if s.cut[id] {
				s.heal(id)
				s.logf("step %d: heal node %d", step, id)
				break
			}
		}
	case r < 84:
		s.electOther(step)
	case r < 88:
		s.lossy.Store(!s.lossy.Load())
		s.logf("step %d: lossy network %v", step, s.lossy.Load())
	default:
		d := time.Duration(s.rng.IntN(15000)) * time.Millisecond
		s.logf("step %d: wait %v", step, d)
		time.Sleep(d)
	}
	s.electIfLeaderless()
	// let replication move on between steps
	time.Sleep(time.Duration(s.rng.IntN(2000)) * time.Millisecond)
}

// produce sends the pending batch (a new one if none) to the leader the
// controller names, acks=all, idempotent, and records it when answered.
func (s *sim) produce() {
	if s.pending == nil {
		n := 1 + s.rng.IntN(3)
		for i := range n {
			s.pending = append(s.pending, fmt.Sprintf("s%d-%d", s.seq, i))
		}
	}
	m := s.meta()
	if m == nil || m.Leader < 0 || s.crashed[m.Leader] {
		s.logf("produce seq %d: no leader", s.seq)
		return
	}
	nd := s.c.node(m.Leader)
	recs := make([]storage.Record, len(s.pending))
	for i, v := range s.pending {
		recs[i] = storage.Record{Value: []byte(v), Timestamp: time.Now().UnixMilli()}
	}
	b := storage.BuildBatch(storage.BatchOptions{Producer: &storage.BatchProducer{ID: 7, Epoch: 0, BaseSequence: s.seq}}, recs...)
	fate, err := s.c.fate(context.Background(), 0, m.Leader, nil)
	if err != nil || nd.down.Load() {
		s.logf("produce seq %d to %d: lost", s.seq, m.Leader)
		return
	}
	ch := make(chan int16, 1)
	var base int64
	go func() {
		resp := nd.rm.Produce(context.Background(), produceReq(12, -1, 5000, simTopic, 0, b), "sim")
		p := resp.Topics[0].Partitions[0]
		base = p.BaseOffset
		ch <- p.ErrorCode
	}()
	code := <-ch
	switch {
	case fate.dropResp || nd.down.Load():
		s.logf("produce seq %d to %d: answer lost (%v)", s.seq, m.Leader, kerr.ErrorForCode(code))
	case code != 0:
		s.logf("produce seq %d to %d: %v", s.seq, m.Leader, kerr.ErrorForCode(code))
	default:
		for i, v := range s.pending {
			s.acked[base+int64(i)] = v
		}
		s.logf("produce seq %d to %d: acknowledged at %d", s.seq, m.Leader, base)
		s.seq += int32(len(s.pending))
		s.pending = nil
	}
}

func (s *sim) crash(id int32) {
	var opt vfs.CrashOption
	kind := "kill -9"
	switch {
	case !s.durable:
		opt = vfs.CrashKeepAll()
	case s.rng.IntN(2) == 0:
		opt, kind = vfs.CrashKeepAll(), "kill -9"
	default:
		cseed := s.rng.Uint64()
		opt, kind = vfs.CrashKeepSome(rand.New(rand.NewPCG(cseed, 1)), 50), fmt.Sprintf("power loss (%d)", cseed)
	}
	s.c.crash(id, opt)
	s.crashed[id] = true
	s.cut[id] = false
	s.logf("crash node %d: %s", id, kind)
	// the controller fences it when its session expires and moves
	// leadership and the ISR without it (ReplicationControlManager)
	s.fence(id)
}

// heal reconnects a cut node; the controller unfences it if it had fenced
// it (its heartbeats reach it again).
func (s *sim) heal(id int32) {
	s.cut[id] = false
	s.c.node(id).down.Store(false)
	if b := s.c.ctrlImage().Broker(id); b != nil && b.Fenced {
		u := metadatacache.NewUnfenceBrokerRecord()
		u.ID, u.Epoch = id, b.Epoch
		s.c.apply(u)
	}
}

func (s *sim) restart(id int32) {
	s.c.restartCrashed(id)
	s.crashed[id] = false
	s.logf("restart node %d (broker epoch %d)", id, s.c.node(id).epoch.Load())
}

// fence is the controller fencing a broker: out of the ISR unless it is the
// last member, and a new leader from the ISR if it led.
func (s *sim) fence(id int32) {
	f := metadatacache.NewFenceBrokerRecord()
	f.ID, f.Epoch = id, s.c.node(id).epoch.Load()
	recs := []metadatacache.Record{f}
	m := s.meta()
	isr := slices.DeleteFunc(slices.Clone(m.Isr), func(r int32) bool { return r == id })
	pc := metadatacache.NewPartitionChangeRecord()
	pc.TopicID, pc.PartitionID = topicID(simTopic), 0
	change := false
	if len(isr) > 0 && len(isr) < len(m.Isr) {
		pc.Isr, change = isr, true
	}
	if m.Leader == id {
		pc.Leader, change = s.pickLeader(isr, id), true
	}
	if change {
		recs = append(recs, pc)
	}
	s.c.apply(recs...)
	s.logf("controller: fence %d; leader %d isr %v", id, s.meta().Leader, s.meta().Isr)
}

// pickLeader is a clean election: an unfenced ISR member other than not.
func (s *sim) pickLeader(isr []int32, not int32) int32 {
	img := s.c.ctrlImage()
	var cands []int32
	for _, r := range isr {
		if b := img.Broker(r); r != not && b != nil && !b.Fenced {
			cands = append(cands, r)
		}
	}
	if len(cands) == 0 {
		return metadatacache.NoLeader
	}
	return cands[s.rng.IntN(len(cands))]
}

// electOther moves leadership to another ISR member (a preferred leader
// election, a reassignment).
func (s *sim) electOther(step int) {
	m := s.meta()
	l := s.pickLeader(m.Isr, m.Leader)
	if l < 0 {
		return
	}
	pc := metadatacache.NewPartitionChangeRecord()
	pc.TopicID, pc.PartitionID, pc.Leader = topicID(simTopic), 0, l
	s.c.apply(pc)
	s.logf("step %d: controller elects %d (epoch %d) isr %v", step, l, s.meta().LeaderEpoch, s.meta().Isr)
}

// electIfLeaderless elects an unfenced ISR member when the partition has
// no leader (its ISR's last member was fenced and came back).
func (s *sim) electIfLeaderless() {
	m := s.meta()
	if m.Leader >= 0 {
		return
	}
	if l := s.pickLeader(m.Isr, -1); l >= 0 {
		pc := metadatacache.NewPartitionChangeRecord()
		pc.TopicID, pc.PartitionID, pc.Leader = topicID(simTopic), 0, l
		s.c.apply(pc)
		s.logf("controller: elects %d (epoch %d)", l, s.meta().LeaderEpoch)
	}
}

// replica is one node's partition, read at a quiet moment.
type replica struct {
	id      int32
	p       *Partition
	snap    Snapshot
	records map[int64]string
}

func (s *sim) replicas() []replica {
	var out []replica
	for id := int32(1); id <= int32(len(s.c.nodes)); id++ {
		nd := s.c.node(id)
		if s.crashed[id] || nd.rm == nil {
			continue
		}
		p, ok := nd.rm.Partition(simTopic, 0)
		if !ok {
			continue
		}
		r := replica{id: id, p: p, snap: p.Snapshot(), records: map[int64]string{}}
		p.mu.RLock()
		l := p.log
		p.mu.RUnlock()
		if l != nil {
			for off := r.snap.LogStartOffset; off < r.snap.LogEndOffset; {
				b, err := l.ReadBatches(off, 1<<20, r.snap.LogEndOffset, true)
				if err != nil || len(b) == 0 {
					break
				}
				recs, err := storage.DecodeRecords(b)
				if err != nil || len(recs) == 0 {
					break
				}
				for _, rec := range recs {
					r.records[rec.Offset] = string(rec.Value)
				}
				off = recs[len(recs)-1].Offset + 1
			}
		}
		out = append(out, r)
	}
	return out
}

func (s *sim) check() error {
	reps := s.replicas()
	m := s.meta()
	var leader *replica
	epochs := map[int32]int32{}
	for i := range reps {
		r := &reps[i]
		if r.snap.HighWatermark > r.snap.LogEndOffset {
			return fmt.Errorf("node %d: high watermark %d beyond its log end offset %d", r.id, r.snap.HighWatermark, r.snap.LogEndOffset)
		}
		if r.snap.IsLeader {
			if other, ok := epochs[r.snap.LeaderEpoch]; ok {
				return fmt.Errorf("nodes %d and %d both lead epoch %d", other, r.id, r.snap.LeaderEpoch)
			}
			epochs[r.snap.LeaderEpoch] = r.id
			if r.id == m.Leader && r.snap.LeaderEpoch == m.LeaderEpoch {
				leader = r
			}
		}
	}
	if leader != nil {
		// the high watermark within every ISR member's log end offset
		for _, id := range m.Isr {
			for _, r := range reps {
				if r.id == id && r.snap.LogEndOffset < leader.snap.HighWatermark {
					return fmt.Errorf("leader %d's high watermark %d beyond ISR member %d's log end offset %d (ISR %v)",
						leader.id, leader.snap.HighWatermark, id, r.snap.LogEndOffset, m.Isr)
				}
			}
		}
		// no acknowledged record lost, none twice
		seen := map[string]int64{}
		for off, v := range leader.records {
			if prev, dup := seen[v]; dup {
				return fmt.Errorf("leader %d holds %q twice, at %d and %d", leader.id, v, prev, off)
			}
			seen[v] = off
		}
		for off, v := range s.acked {
			if got, ok := leader.records[off]; !ok || got != v {
				return fmt.Errorf("acknowledged %q at %d lost: leader %d holds %q (log end %d)", v, off, leader.id, got, leader.snap.LogEndOffset)
			}
		}
	}
	// all replicas agree below their high watermarks
	for i := range reps {
		for j := range reps {
			a, b := &reps[i], &reps[j]
			if i == j || a.snap.HighWatermark > b.snap.HighWatermark {
				continue
			}
			for off := a.snap.LogStartOffset; off < a.snap.HighWatermark; off++ {
				va, oka := a.records[off]
				vb, okb := b.records[off]
				if oka != okb || va != vb {
					return fmt.Errorf("below high watermark %d, node %d holds %q at %d, node %d (high watermark %d) %q",
						a.snap.HighWatermark, a.id, va, off, b.id, b.snap.HighWatermark, vb)
				}
			}
		}
	}
	return nil
}

// converged: every replica in the ISR, every log the leader's, every high
// watermark the leader's log end.
func (s *sim) converged() bool {
	m := s.meta()
	if m.Leader < 0 || len(m.Isr) != len(s.c.nodes) {
		return false
	}
	reps := s.replicas()
	if len(reps) != len(s.c.nodes) {
		return false
	}
	var leo int64 = -1
	for _, r := range reps {
		if r.id == m.Leader {
			leo = r.snap.LogEndOffset
		}
	}
	for _, r := range reps {
		if r.snap.LogEndOffset != leo || r.snap.HighWatermark != leo {
			return false
		}
	}
	return true
}

func (s *sim) state() string {
	m := s.meta()
	var b strings.Builder
	fmt.Fprintf(&b, "controller: leader %d epoch %d isr %v;", m.Leader, m.LeaderEpoch, m.Isr)
	for _, r := range s.replicas() {
		e := r.p.log.EpochEntries()
		fmt.Fprintf(&b, " node %d: leader=%v epoch %d hw %d leo %d isr %v epochs %v", r.id, r.snap.IsLeader,
			r.snap.LeaderEpoch, r.snap.HighWatermark, r.snap.LogEndOffset, r.snap.ISR, e)
		if rp := s.c.node(r.id).rm.repl.Load(); rp != nil {
			if f, ok := rp.fetchers.fetcherFor(storage.TopicPartition{Topic: simTopic, Partition: 0}); ok {
				st, _ := f.state(storage.TopicPartition{Topic: simTopic, Partition: 0})
				fmt.Fprintf(&b, " fetching from %d: phase %d offset %d last epoch %d leader epoch %d delayed %v",
					f.leader, st.phase, st.fetchOffset, st.lastFetchedEpoch, st.leaderEpoch, st.delayUntil.Sub(time.Now()))
			}
		}
		b.WriteString(";")
	}
	return b.String()
}
