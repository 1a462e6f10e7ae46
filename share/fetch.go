package share

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage"
)

// FetchPart is a partition of a share fetch or acknowledgement: its topic
// id and partition, and the topic name the broker resolved.
type FetchPart struct {
	TopicPartition
	Topic string
}

// FetchParams is one ShareFetch's fetching part (ShareFetch in Kafka's
// server/share/fetch).
type FetchParams struct {
	Group, Member string
	Parts         []FetchPart
	MaxWait       time.Duration
	MinBytes      int32
	MaxBytes      int32
	MaxRecords    int32 // across the request; a soft limit in BatchOptimized mode
	BatchSize     int32 // the largest AcquiredRecords range answered (v1+)
	Mode          AcquireMode
}

// PartResult is one partition's answer: an error, or the acquired records'
// batches and ranges.
type PartResult struct {
	FetchPart
	Err      error
	Records  []byte
	Acquired []Acquired
	// sent are the base offsets of the batches in Records: a later pass
	// of a parked fetch acquiring more of a batch does not repeat it
	sent map[int64]bool
}

// Fetch acquires records for a member from its partitions (Kafka's
// SharePartitionManager.fetchMessages and DelayedShareFetch): it reads each
// share partition's log from its next fetch offset, acquires what it read,
// and parks until at least MinBytes are acquired, an error is met, or
// MaxWait passes, woken by appends to the partitions and by records
// released on the node. Results are in Parts' order.
func (m *Manager) Fetch(ctx context.Context, fp FetchParams) []PartResult {
	res := make([]PartResult, len(fp.Parts))
	for i, p := range fp.Parts {
		res[i].FetchPart = p
	}
	if len(fp.Parts) == 0 {
		return res
	}
	lim, _ := m.groupLimits(fp.Group)
	deadline := m.cfg.Now().Add(fp.MaxWait)
	records := int64(max(fp.MaxRecords, 0))
	if records == 0 {
		records = 500 // the client's max.poll.records default, as a bound
	}
	var bytes int64
	for {
		wake := make(chan struct{}, 1)
		poke := func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		released := m.releasedChan()
		var cancels []func()
		// watch before reading, so an append between the read and the
		// wait is not missed
		if fp.MaxWait > 0 {
			for _, p := range fp.Parts {
				if c, err := m.cfg.Log.Watch(p.Topic, p.Partition, poke); err == nil {
					cancels = append(cancels, c)
				}
			}
		}
		n, got, failed := m.fetchOnce(ctx, fp, lim, res, bytes, records)
		bytes += n
		records -= got
		wait := time.Until(deadline)
		if m.cfg.Now != nil {
			wait = deadline.Sub(m.cfg.Now())
		}
		done := failed || bytes >= int64(max(fp.MinBytes, 1)) || records <= 0 || wait <= 0
		if !done {
			t := time.NewTimer(wait)
			m.parked.Add(1)
			select {
			case <-wake:
			case <-released:
			case <-t.C:
				done = true
			case <-ctx.Done():
				done = true
			}
			m.parked.Add(-1)
			t.Stop()
		}
		for _, c := range cancels {
			c()
		}
		if done {
			// a last look after the wait, as DelayedShareFetch.onComplete
			if !failed && bytes == 0 && records > 0 {
				m.fetchOnce(ctx, fp, lim, res, bytes, records)
			}
			break
		}
	}
	for i := range res {
		res[i].Acquired = splitAcquired(res[i].Acquired, fp.BatchSize)
	}
	return res
}

// splitAcquired cuts ranges longer than batchSize (the client's preferred
// batch of acquired records, ShareFetch v1's BatchSize).
func splitAcquired(a []Acquired, batchSize int32) []Acquired {
	if batchSize <= 0 {
		return a
	}
	var out []Acquired
	for _, r := range a {
		for r.Last-r.First+1 > int64(batchSize) {
			out = append(out, Acquired{First: r.First, Last: r.First + int64(batchSize) - 1, Deliveries: r.Deliveries})
			r.First += int64(batchSize)
		}
		out = append(out, r)
	}
	return out
}

// fetchOnce makes one pass over the partitions: it returns the bytes and
// records acquired, and whether a partition failed.
func (m *Manager) fetchOnce(ctx context.Context, fp FetchParams, groupLim Limits, res []PartResult, bytes, records int64) (int64, int64, bool) {
	// max_bytes is shared evenly by the partitions (Kafka's
	// PartitionMaxBytesStrategy UNIFORM); the first batch of a response
	// may pass it so that a large batch is not stuck (KIP-74).
	per := int64(fp.MaxBytes) / int64(len(fp.Parts))
	var gotBytes, gotRecords int64
	failed := false
	for i := range res {
		r := &res[i]
		if r.Err != nil || records-gotRecords <= 0 {
			continue
		}
		p, err := m.load(ctx, fp.Group, r.FetchPart)
		if err != nil {
			r.Err, failed = err, true
			continue
		}
		p.SetLimits(groupLim)
		off, ok := p.FetchOffset()
		if !ok {
			if p.Fenced() {
				r.Err, failed = kerr.NotLeaderForPartition, true
			}
			continue
		}
		limit := max(per-int64(len(r.Records)), 0)
		lim := p.Limits()
		read, err := m.cfg.Log.ReadShare(r.Topic, r.Partition, off, int32(min(limit, 1<<30)), bytes+gotBytes == 0, lim.ReadCommitted)
		if err != nil {
			r.Err, failed = err, true
			continue
		}
		if read.LogStart > off {
			// records before the log start were deleted: they are
			// archived as the start offset moves (ShareFetchUtils'
			// OFFSET_OUT_OF_RANGE handling)
			if w := p.MoveStart(read.LogStart); w != nil {
				m.persist(ctx, fp.Group, []pendingWrite{{p, w}})
			}
		}
		batches, raws := parseBatches(read.Records, lim.ReadCommitted, read.Aborted)
		if len(batches) == 0 {
			continue
		}
		acq, w := p.Acquire(fp.Member, max(off, read.LogStart), batches, int(records-gotRecords), fp.Mode, m.nowMs())
		if w != nil {
			m.persist(ctx, fp.Group, []pendingWrite{{p, w}})
		}
		if len(acq) == 0 {
			continue
		}
		for _, a := range acq {
			gotRecords += a.Last - a.First + 1
		}
		r.Acquired = append(r.Acquired, acq...)
		for j, b := range batches {
			if overlaps(b, acq) && !r.sent[b.First] {
				if r.sent == nil {
					r.sent = map[int64]bool{}
				}
				r.sent[b.First] = true
				r.Records = append(r.Records, raws[j]...)
				gotBytes += int64(len(raws[j]))
			}
		}
	}
	return gotBytes, gotRecords, failed
}

func overlaps(b Batch, acq []Acquired) bool {
	for _, a := range acq {
		if a.First <= b.Last && b.First <= a.Last {
			return true
		}
	}
	return false
}

// parseBatches lists the record batches of a read. With readCommitted a
// data batch of an aborted transaction is marked Aborted (its records are
// archived, never delivered), as the consumer's aborted-transaction filter
// would drop them (ShareFetchUtils.processFetchResponse, KIP-932
// read_committed). A malformed tail ends the list.
func parseBatches(recs []byte, readCommitted bool, aborted []storage.AbortedTxn) ([]Batch, [][]byte) {
	var bs []Batch
	var raws [][]byte
	_ = storage.WalkBatches(recs, false, func(h storage.BatchHeader, raw []byte) error {
		b := Batch{First: h.BaseOffset, Last: h.LastOffset()}
		if readCommitted && h.IsTransactional() && !h.IsControl() {
			for _, a := range aborted {
				if a.ProducerID == h.ProducerID && a.FirstOffset <= h.BaseOffset && h.BaseOffset <= a.LastOffset {
					b.Aborted = true
					break
				}
			}
		}
		bs = append(bs, b)
		raws = append(raws, raw)
		return nil
	})
	return bs, raws
}

// AckPart is one partition's acknowledgements.
type AckPart struct {
	FetchPart
	Batches []AckBatch
}

// Acknowledge applies a member's acknowledgements and persists them before
// returning (SharePartitionManager.acknowledge: the futures complete after
// the share coordinator's write). The errors are in parts' order: nil,
// or the partition's error code as an error.
func (m *Manager) Acknowledge(ctx context.Context, group, member string, parts []AckPart, renew bool) []error {
	errs := make([]error, len(parts))
	var ws []pendingWrite
	var idx []int
	now := m.nowMs()
	lim, _ := m.groupLimits(group)
	for i, ap := range parts {
		p := m.Partition(group, ap.TopicPartition)
		if p == nil || p.Fenced() {
			// no share partition here: the records were never
			// acquired from this node (or its leadership moved)
			errs[i] = kerr.UnknownTopicOrPartition
			continue
		}
		p.SetLimits(lim)
		w, err := p.Acknowledge(member, ap.Batches, renew, now)
		if err != nil {
			errs[i] = err
			continue
		}
		if w != nil {
			ws = append(ws, pendingWrite{p, w})
			idx = append(idx, i)
		}
	}
	for j, err := range m.persist(ctx, group, ws) {
		errs[idx[j]] = err
	}
	return errs
}

// CloseSession closes a member's share session (the final epoch) and
// releases the member's records in its partitions
// (SharePartitionManager.releaseSession); the group's last session
// leaving drops its share partitions (ShareSessionCache.remove tells
// ShareGroupListener.onGroupEmpty).
func (m *Manager) CloseSession(ctx context.Context, group, member string) {
	parts := m.Sessions.Close(group, member)
	if len(parts) > 0 {
		m.releaseMember(ctx, group, member, parts)
	}
	m.maybeGroupEmpty(group)
}

// maybeGroupEmpty drops a group's share partitions once it has no share
// session left on this node, so that the next member's fetch loads the
// persisted state again: the only way a leader learns that the share
// state was reset (AlterShareGroupOffsets, which needs an empty group,
// writes a new state epoch) before it acquires from stale state.
func (m *Manager) maybeGroupEmpty(group string) {
	if m.Sessions.groupSessions(group) == 0 {
		m.OnGroupEmpty(group)
	}
}
