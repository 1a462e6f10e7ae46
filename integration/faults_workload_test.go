//go:build integration

package integration

// The fault suite's workload and checkers: an acks=all idempotent producer
// writing sequenced records ("<partition>-<seq>") to every partition of an
// RF=3, min.insync.replicas=2 topic and remembering each acknowledgement
// (time and offset); a read_uncommitted and a read_committed consumer
// remembering every record they were given; and, at the end, the checks:
// every acknowledged record is in the log exactly once, at the offset it
// was acknowledged with, in sequence order; every record a consumer saw is
// in the final log at the offset it saw it at; every replica of every
// partition holds the same batches byte for byte (read from each replica
// with a v12 Fetch, which a follower serves to its high watermark); every
// controller's __cluster_metadata log holds the same batches up to the
// quorum's high watermark (read from the segment files).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/storage"
)

// workloadFillPrefix starts the values of records a test writes to the
// workload's topic besides the producer's (a backlog, say): Check skips them.
const workloadFillPrefix = "fill:"

// faultWorkloadRate is records per second per partition.
const faultWorkloadRate = 50

type sentRec struct {
	enq, ack time.Time
	off      int64
	acked    bool
	failed   bool
}

type consumedRec struct {
	off int64
	val string
}

// workload runs the producer and the two consumers against one topic.
type workload struct {
	t     testing.TB
	c     *Cluster
	topic string
	parts int

	mu       sync.Mutex
	sent     [][]*sentRec // by partition, index = sequence number
	errs     map[string]int
	consumed [2][][]consumedRec // [isolation][partition]
	consErrs [2]map[string]int

	// convergeTimeout is how long Check waits for the replicas to agree.
	convergeTimeout time.Duration

	prod     *kgo.Client
	stopProd chan struct{}
	stopCons context.CancelFunc
	wg, cwg  sync.WaitGroup
}

func newWorkload(t testing.TB, c *Cluster, topic string, parts int) *workload {
	w := &workload{t: t, c: c, topic: topic, parts: parts, sent: make([][]*sentRec, parts),
		errs: map[string]int{}, stopProd: make(chan struct{}), convergeTimeout: 60 * time.Second}
	for i := range w.consumed {
		w.consumed[i] = make([][]consumedRec, parts)
		w.consErrs[i] = map[string]int{}
	}
	return w
}

// producerOpts: acks=all, idempotent (franz-go's default with acks=all),
// retried without limit; requests time out after 5s on the broker plus 2s
// on the client, so a connection to a paused broker is given up after ~7s.
func (w *workload) producerOpts() []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(w.c.BrokerAddrs()...),
		kgo.DefaultProduceTopic(w.topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.MaxBufferedRecords(1 << 20),
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.DialTimeout(2 * time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
		kgo.MetadataMinAge(100 * time.Millisecond),
	}
}

// Start starts producing faultWorkloadRate records a second to each
// partition, and the consumers.
func (w *workload) Start() {
	var err error
	w.prod, err = kgo.NewClient(w.producerOpts()...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.wg.Add(1)
	go w.produceLoop()
	ctx, cancel := context.WithCancel(context.Background())
	w.stopCons = cancel
	for i, iso := range []kgo.IsolationLevel{kgo.ReadUncommitted(), kgo.ReadCommitted()} {
		offs := map[int32]kgo.Offset{}
		for p := 0; p < w.parts; p++ {
			offs[int32(p)] = kgo.NewOffset().AtStart()
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(w.c.BrokerAddrs()...), kgo.FetchIsolationLevel(iso),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offs}),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.DialTimeout(2*time.Second),
			kgo.RequestTimeoutOverhead(2*time.Second), kgo.MetadataMinAge(100*time.Millisecond))
		if err != nil {
			w.t.Fatal(err)
		}
		w.cwg.Add(1)
		go w.consumeLoop(ctx, i, cl)
	}
}

func (w *workload) produceLoop() {
	defer w.wg.Done()
	tick := time.NewTicker(time.Second / faultWorkloadRate)
	defer tick.Stop()
	for {
		select {
		case <-w.stopProd:
			return
		case <-tick.C:
		}
		now := time.Now()
		for p := 0; p < w.parts; p++ {
			w.mu.Lock()
			seq := len(w.sent[p])
			s := &sentRec{enq: now}
			w.sent[p] = append(w.sent[p], s)
			w.mu.Unlock()
			r := &kgo.Record{Partition: int32(p), Value: []byte(fmt.Sprintf("%d-%08d", p, seq))}
			w.prod.Produce(context.Background(), r, func(r *kgo.Record, err error) {
				w.mu.Lock()
				defer w.mu.Unlock()
				if err != nil {
					s.failed = true
					w.errs[err.Error()]++
					return
				}
				s.acked, s.ack, s.off = true, time.Now(), r.Offset
			})
		}
	}
}

func (w *workload) consumeLoop(ctx context.Context, iso int, cl *kgo.Client) {
	defer w.cwg.Done()
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		w.mu.Lock()
		fs.EachError(func(_ string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				w.consErrs[iso][err.Error()]++
			}
		})
		fs.EachRecord(func(r *kgo.Record) {
			if int(r.Partition) < w.parts {
				w.consumed[iso][r.Partition] = append(w.consumed[iso][r.Partition], consumedRec{r.Offset, string(r.Value)})
			}
		})
		w.mu.Unlock()
	}
}

// StopProducing stops new records and waits up to timeout for every
// buffered one to be acknowledged or failed.
func (w *workload) StopProducing(timeout time.Duration) {
	close(w.stopProd)
	w.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := w.prod.Flush(ctx); err != nil {
		w.t.Errorf("producer flush: %v (%d records still buffered)", err, w.prod.BufferedProduceRecords())
	}
	w.prod.Close()
}

// WaitConsumed waits until both consumers have read up to ends (by partition).
func (w *workload) WaitConsumed(ends []int64, timeout time.Duration) error {
	err := pollUntil(timeout, nil, func() error {
		w.mu.Lock()
		defer w.mu.Unlock()
		for iso := range w.consumed {
			for p, end := range ends {
				cs := w.consumed[iso][p]
				var last int64 = -1
				if len(cs) > 0 {
					last = cs[len(cs)-1].off
				}
				if last+1 < end {
					return fmt.Errorf("consumer %s at %s-%d offset %d, end %d", isoName(iso), w.topic, p, last+1, end)
				}
			}
		}
		return nil
	})
	w.stopCons()
	w.cwg.Wait()
	return err
}

func isoName(iso int) string {
	if iso == 0 {
		return "read_uncommitted"
	}
	return "read_committed"
}

// resumedAfter returns, once every partition of parts has acknowledged a
// record enqueued at or after t0, the time from t0 to the last of those
// first acknowledgements.
func (w *workload) resumedAfter(parts []int32, t0 time.Time) (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst time.Duration
	for _, p := range parts {
		recs := w.sent[p]
		i := sort.Search(len(recs), func(i int) bool { return !recs[i].enq.Before(t0) })
		found := false
		for ; i < len(recs); i++ {
			if recs[i].acked {
				worst = max(worst, recs[i].ack.Sub(t0))
				found = true
				break
			}
		}
		if !found {
			return 0, false
		}
	}
	return worst, true
}

// counts: records acknowledged and failed so far.
func (w *workload) counts() (acked, failed int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, recs := range w.sent {
		for _, s := range recs {
			if s.acked {
				acked++
			} else if s.failed {
				failed++
			}
		}
	}
	return
}

// ---------------------------------------------------------------------------
// Reading replicas

// replicaLog is one replica's copy of a partition: its whole batches up to
// its high watermark.
type replicaLog struct {
	node    int32
	hw      int64
	start   int64
	batches [][]byte
}

// readReplicaLog fetches partition p of topic from the broker at addr (leader
// or follower) from its log start to its high watermark, as a v12 consumer
// fetch: a follower serves it up to its own high watermark (KIP-392).
func readReplicaLog(addr, topic string, p int32) (*replicaLog, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := protocol.Dial(ctx, addr, "kgo-it-faults-check")
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rl := &replicaLog{hw: -1}
	for off := int64(0); ; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 0, 0, 16<<20, -1
		req.IsolationLevel = 0
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = p
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = off, 8<<20, -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		raw, err := cl.RequestVersion(ctx, req, 12)
		if err != nil {
			return nil, err
		}
		resp := raw.(*kmsg.FetchResponse)
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return nil, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, fmt.Errorf("fetch %s-%d from %s: %d topics in the answer", topic, p, addr, len(resp.Topics))
		}
		fp := resp.Topics[0].Partitions[0]
		if err := kerr.ErrorForCode(fp.ErrorCode); err != nil {
			if errors.Is(err, kerr.OffsetOutOfRange) && off == 0 && fp.LogStartOffset > 0 {
				off = fp.LogStartOffset
				continue
			}
			return nil, fmt.Errorf("fetch %s-%d at %d from %s: %w", topic, p, off, addr, err)
		}
		if rl.hw < 0 {
			rl.hw, rl.start = fp.HighWatermark, fp.LogStartOffset
		}
		if off >= rl.hw {
			return rl, nil
		}
		n := 0
		for _, b := range wholeBatches(fp.RecordBatches) {
			h, err := storage.ParseBatchHeader(b)
			if err != nil {
				return nil, err
			}
			if err := storage.WalkBatches(b, true, nil); err != nil {
				return nil, fmt.Errorf("%s-%d at %d from %s: %w", topic, p, h.BaseOffset, addr, err)
			}
			if h.LastOffset() < off {
				continue
			}
			if h.BaseOffset >= rl.hw {
				break
			}
			rl.batches = append(rl.batches, b)
			off = h.NextOffset()
			n++
		}
		if n == 0 {
			return nil, fmt.Errorf("fetch %s-%d at %d from %s: no batch below the high watermark %d", topic, p, off, addr, rl.hw)
		}
	}
}

// wholeBatches splits b into its complete batches (a fetch answer or a
// segment file may end in a partial one).
func wholeBatches(b []byte) [][]byte {
	var out [][]byte
	for len(b) >= 17 {
		h, err := storage.ParseBatchHeader(b)
		if err != nil || h.Length <= 0 || h.Size() > int64(len(b)) {
			break
		}
		out = append(out, b[:h.Size()])
		b = b[h.Size():]
	}
	return out
}

// partitionState is what Metadata from one broker says about a partition.
type partitionState struct {
	leader   int32
	epoch    int32
	replicas []int32
	isr      []int32
}

func topicState(addr, topic string) ([]partitionState, error) {
	md, err := metadataFrom(addr, topic)
	if err != nil {
		return nil, err
	}
	if len(md.Topics) != 1 {
		return nil, fmt.Errorf("metadata from %s: %d topics", addr, len(md.Topics))
	}
	if err := kerr.ErrorForCode(md.Topics[0].ErrorCode); err != nil {
		return nil, fmt.Errorf("metadata from %s: %s: %w", addr, topic, err)
	}
	out := make([]partitionState, len(md.Topics[0].Partitions))
	for _, p := range md.Topics[0].Partitions {
		if int(p.Partition) >= len(out) {
			return nil, fmt.Errorf("metadata from %s: partition %d of %d", addr, p.Partition, len(out))
		}
		isr := append([]int32(nil), p.ISR...)
		sort.Slice(isr, func(i, j int) bool { return isr[i] < isr[j] })
		reps := append([]int32(nil), p.Replicas...)
		sort.Slice(reps, func(i, j int) bool { return reps[i] < reps[j] })
		leader := p.Leader
		if p.ErrorCode != 0 {
			leader = -1
		}
		out[p.Partition] = partitionState{leader: leader, epoch: p.LeaderEpoch, replicas: reps, isr: isr}
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// The end-of-kind check

// checkResult is what the checks found.
type checkResult struct {
	Acked, Failed, Unacked    int64
	Lost, Duplicated          int
	Reordered, OffsetMismatch int
	PhantomReads              int // a consumer saw a record the final log does not have there
	ConsumerRewinds           int // a consumer was handed an offset at or below one it had
	DivergedReplicas          int // (partition, replica) pairs that differ from the leader
	LaggingReplicas           int // (partition, replica) pairs that never caught up (a prefix of the leader's)
	DivergedMetadata          int // controllers whose metadata log differs from the leader's
	Notes                     []string
}

func (r *checkResult) notef(format string, args ...any) {
	if len(r.Notes) < 40 {
		r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
	}
}

// Check stops the workload, waits for the replicas to agree and checks
// everything (see the file comment).
func (w *workload) Check(t testing.TB) checkResult {
	var res checkResult
	w.StopProducing(60 * time.Second)

	// Every replica at the same high watermark, equal to the leader's end.
	var logs map[int32][]*replicaLog
	var lastErr error
	err := pollUntil(w.convergeTimeout, nil, func() error {
		logs, lastErr = w.readAllReplicas()
		if lastErr != nil {
			return lastErr
		}
		for p, rls := range logs {
			for _, rl := range rls[1:] {
				if rl.hw != rls[0].hw {
					return fmt.Errorf("%s-%d: node %d at high watermark %d, leader %d at %d", w.topic, p, rl.node, rl.hw, rls[0].node, rls[0].hw)
				}
			}
		}
		return nil
	})
	if err != nil {
		res.notef("replicas did not converge: %v", err)
		if logs == nil {
			res.DivergedReplicas = -1
			return res
		}
	}
	ends := make([]int64, w.parts)
	for p := 0; p < w.parts; p++ {
		rls := logs[int32(p)]
		ends[p] = rls[0].hw
		for _, rl := range rls[1:] {
			if d, prefix := diffBatches(rls[0], rl); d != "" && prefix {
				res.LaggingReplicas++
				res.notef("%s-%d: node %d lags behind leader %d (what it serves is a prefix of the leader's log): %s", w.topic, p, rl.node, rls[0].node, d)
			} else if d != "" {
				res.DivergedReplicas++
				res.notef("%s-%d: node %d differs from leader %d: %s", w.topic, p, rl.node, rls[0].node, d)
			}
		}
	}
	if err := w.WaitConsumed(ends, 60*time.Second); err != nil {
		res.notef("consumers did not reach the end: %v", err)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	for p := 0; p < w.parts; p++ {
		// The final log, from the leader's copy.
		type at struct {
			off int64
			seq int
		}
		var inLog []at
		byOff := map[int64]string{}
		for _, b := range logs[int32(p)][0].batches {
			recs, err := storage.DecodeRecords(b)
			if err != nil {
				res.notef("%s-%d: decode: %v", w.topic, p, err)
				continue
			}
			for _, r := range recs {
				v := string(r.Value)
				byOff[r.Offset] = v
				if strings.HasPrefix(v, workloadFillPrefix) {
					continue // a test's own backlog, not the producer's
				}
				ps, ss, ok := strings.Cut(v, "-")
				seq, err := strconv.Atoi(ss)
				if !ok || err != nil || ps != strconv.Itoa(p) {
					res.notef("%s-%d offset %d: foreign record %q", w.topic, p, r.Offset, v)
					continue
				}
				inLog = append(inLog, at{r.Offset, seq})
			}
		}
		where := map[int][]int64{}
		prev := -1
		for _, a := range inLog {
			where[a.seq] = append(where[a.seq], a.off)
			if a.seq < prev {
				res.Reordered++
				res.notef("%s-%d: seq %d at offset %d after seq %d", w.topic, p, a.seq, a.off, prev)
			}
			prev = max(prev, a.seq)
		}
		for seq, offs := range where {
			if len(offs) > 1 {
				res.Duplicated += len(offs) - 1
				res.notef("%s-%d: seq %d at offsets %v", w.topic, p, seq, offs)
			}
		}
		for seq, s := range w.sent[p] {
			switch {
			case s.acked:
				res.Acked++
				offs := where[seq]
				if len(offs) == 0 {
					res.Lost++
					res.notef("%s-%d: acknowledged seq %d (offset %d, acked %s) is not in the log", w.topic, p, seq, s.off, s.ack.Format("15:04:05.000"))
				} else if offs[0] != s.off {
					res.OffsetMismatch++
					res.notef("%s-%d: seq %d acknowledged at offset %d, in the log at %v", w.topic, p, seq, s.off, offs)
				}
			case s.failed:
				res.Failed++
			default:
				res.Unacked++
			}
		}
		for iso := range w.consumed {
			last := int64(-1)
			for _, cr := range w.consumed[iso][p] {
				if cr.off <= last {
					res.ConsumerRewinds++
					res.notef("%s %s-%d: offset %d after %d", isoName(iso), w.topic, p, cr.off, last)
				}
				last = max(last, cr.off)
				if v, ok := byOff[cr.off]; !ok || v != cr.val {
					res.PhantomReads++
					res.notef("%s %s-%d: read %q at offset %d, the log has %q there", isoName(iso), w.topic, p, cr.val, cr.off, v)
				}
			}
		}
	}
	if len(w.errs) > 0 {
		res.notef("producer errors: %v", w.errs)
	}
	for iso, m := range w.consErrs {
		if len(m) > 0 {
			res.notef("%s fetch errors (retried): %v", isoName(iso), trimErrs(m))
		}
	}
	return res
}

func trimErrs(m map[string]int) string {
	var s []string
	for k, v := range m {
		s = append(s, fmt.Sprintf("%dx %s", v, k))
	}
	sort.Strings(s)
	if len(s) > 5 {
		s = append(s[:5], "...")
	}
	return strings.Join(s, "; ")
}

// readAllReplicas reads every replica of every partition, the leader's copy first.
func (w *workload) readAllReplicas() (map[int32][]*replicaLog, error) {
	var states []partitionState
	var err error
	for _, b := range w.c.Brokers() {
		if states, err = topicState(b.Addr, w.topic); err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	out := map[int32][]*replicaLog{}
	for p, st := range states {
		if st.leader < 0 {
			return nil, fmt.Errorf("%s-%d has no leader", w.topic, p)
		}
		order := []int32{st.leader}
		for _, r := range st.replicas {
			if r != st.leader {
				order = append(order, r)
			}
		}
		for _, id := range order {
			rl, err := readReplicaLog(w.c.Node(id).Addr, w.topic, int32(p))
			if err != nil {
				return nil, fmt.Errorf("replica %d: %w", id, err)
			}
			rl.node = id
			out[int32(p)] = append(out[int32(p)], rl)
		}
	}
	return out, nil
}

// diffBatches describes the first difference between two copies ("" if
// none), and whether one is a prefix of the other (a replica that lags, not
// one that diverged).
func diffBatches(a, b *replicaLog) (string, bool) {
	if a.start != b.start {
		// Both start at 0 (no retention); a different start is worth a look.
		return fmt.Sprintf("log start %d vs %d", a.start, b.start), false
	}
	n := min(len(a.batches), len(b.batches))
	for i := 0; i < n; i++ {
		if !bytes.Equal(a.batches[i], b.batches[i]) {
			ha, _ := storage.ParseBatchHeader(a.batches[i])
			hb, _ := storage.ParseBatchHeader(b.batches[i])
			return fmt.Sprintf("batch %d: base offset %d epoch %d crc %08x len %d vs base offset %d epoch %d crc %08x len %d",
				i, ha.BaseOffset, ha.PartitionLeaderEpoch, ha.CRC, ha.Length, hb.BaseOffset, hb.PartitionLeaderEpoch, hb.CRC, hb.Length), false
		}
	}
	if len(a.batches) != len(b.batches) {
		return fmt.Sprintf("%d batches (high watermark %d) vs %d (high watermark %d)", len(a.batches), a.hw, len(b.batches), b.hw), true
	}
	return "", false
}

// ---------------------------------------------------------------------------
// The metadata log

// metadataBatches reads a node's __cluster_metadata-0 segment files: its whole
// batches with base offsets, in order.
func metadataBatches(dataDir string) (map[int64][]byte, int64, error) {
	segs, err := filepath.Glob(filepath.Join(dataDir, "__cluster_metadata-0", "*.log"))
	if err != nil {
		return nil, 0, err
	}
	sort.Strings(segs) // 20-digit zero-padded base offsets
	out := map[int64][]byte{}
	start := int64(-1)
	for _, seg := range segs {
		data, err := os.ReadFile(seg)
		if err != nil {
			return nil, 0, err
		}
		for _, b := range wholeBatches(data) {
			h, _ := storage.ParseBatchHeader(b)
			if start < 0 {
				start = h.BaseOffset
			}
			out[h.BaseOffset] = b
		}
	}
	return out, start, nil
}

// checkMetadataLogs compares every controller's metadata log with the
// active controller's, batch by batch, from the latest log start among them
// up to the quorum's high watermark, once every voter has caught up to it.
// It returns how many controllers differ.
func checkMetadataLogs(c *Cluster, res *checkResult) {
	var q Quorum
	var ld *ClusterNode
	err := pollUntil(60*time.Second, nil, func() error {
		var err error
		ld, q, err = c.Leader()
		if err != nil {
			return err
		}
		for id, leo := range q.Voters {
			if leo < q.HW {
				return fmt.Errorf("voter %d at %d, high watermark %d", id, leo, q.HW)
			}
		}
		return nil
	})
	if err != nil {
		res.notef("metadata quorum did not catch up: %v", err)
		res.DivergedMetadata = -1
		return
	}
	logs := map[int32]map[int64][]byte{}
	var from int64
	for _, n := range c.Controllers() {
		var bs map[int64][]byte
		var start int64
		err := pollUntil(10*time.Second, nil, func() error {
			var err error
			bs, start, err = metadataBatches(n.DataDir)
			return err
		})
		if err != nil {
			res.notef("metadata log of node %d: %v", n.ID, err)
			res.DivergedMetadata++
			continue
		}
		logs[n.ID] = bs
		from = max(from, start)
	}
	ref := logs[ld.ID]
	compared := 0
	for _, n := range c.Controllers() {
		bs, ok := logs[n.ID]
		if !ok || n.ID == ld.ID {
			continue
		}
		for off, b := range ref {
			h, _ := storage.ParseBatchHeader(b)
			if off < from || h.LastOffset() >= q.HW {
				continue
			}
			compared++
			if o, ok := bs[off]; !ok || !bytes.Equal(o, b) {
				res.DivergedMetadata++
				res.notef("metadata log: node %d differs from leader %d at offset %d (below the high watermark %d)", n.ID, ld.ID, off, q.HW)
				break
			}
		}
	}
	res.notef("metadata logs: %d batch comparisons with leader %d's log over %d controllers in [%d, %d)", compared, ld.ID, len(logs), from, q.HW)
}
