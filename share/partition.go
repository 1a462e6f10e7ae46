package share

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/sharestate"
)

// Limits are the settings of one share partition: the broker's
// group.share.* configs under the group's share.* overrides, resolved when
// the partition is loaded and again on each request (SetLimits; Kafka's
// ShareGroupConfigProvider).
type Limits struct {
	LockMs        int64 // share.record.lock.duration.ms / group.share.record.lock.duration.ms
	DeliveryLimit int16 // share.delivery.count.limit / group.share.delivery.count.limit
	MaxLocks      int64 // share.partition.max.record.locks / group.share.partition.max.record.locks
	ReadCommitted bool  // share.isolation.level=read_committed
	// DLQ: records rejected or past the delivery limit go to the group's
	// dead-letter queue first (Archiving, then Archived; KIP-1191):
	// share.version 2 finalized and errors.deadletterqueue.topic.name set
	// (SharePartition.isDLQEnabledForGroup)
	DLQ bool
}

// The causes a DLQ record names in its __dlq.errors.message header
// (ShareGroupDLQManager.CLIENT_REJECT, DELIVERY_COUNT_EXCEEDED).
const (
	CauseRejected      = "Offset rejected by client."
	CauseDeliveryCount = "Offset delivery count exceeded the threshold."
)

// DLQBatch is a run of Archiving records to write to the dead-letter queue
// (SharePartition.DlqBatch): their delivery count, and the cause (a
// rejection, else the delivery limit; "" for none).
type DLQBatch struct {
	First, Last int64
	Deliveries  int16
	Cause       string
}

// AcquireMode is ShareFetch v2's ShareAcquireMode (KIP-1206).
type AcquireMode int8

const (
	// BatchOptimized acquires whole record batches: max_records is a soft
	// limit, the last batch may pass it.
	BatchOptimized AcquireMode = 0
	// RecordLimit acquires at most max_records records, splitting a batch.
	RecordLimit AcquireMode = 1
)

// span is a run of consecutive offsets in one state (Kafka's InFlightBatch,
// or one entry of its offsetState once split). Spans cover [start, next)
// without holes; equal neighbours are merged again after each change.
type span struct {
	first, last int64
	spanState
	// gen is the write that changed this span and has not completed; old
	// is what a failed write restores (InFlightState.rollbackState).
	gen uint64
	old *spanState
}

type spanState struct {
	state      sharestate.RecordState
	deliveries int16
	member     string // the member holding the acquisition lock (Acquired only)
	deadline   int64  // when the acquisition lock expires, in ms (Acquired only)
}

func (s *span) count() int64 { return s.last - s.first + 1 }

func terminal(st sharestate.RecordState) bool {
	return st == sharestate.Acknowledged || st == sharestate.Archived
}

// Partition is one share partition: the in-flight records of a share group
// on one topic partition, on that partition's leader (Kafka's
// SharePartition). It is a state machine: time comes in as nowMs arguments,
// the persisted state comes in through Load and leaves as Writes the caller
// sends to the Persister outside the lock, then reports with Complete.
type Partition struct {
	Group     string
	Topic     string
	TopicID   [16]byte
	Partition int32

	mu lockrank.Mutex // guards everything below
	// loaded: Load succeeded; fenced: a write was fenced or leadership
	// moved, the partition answers NOT_LEADER_OR_FOLLOWER until dropped.
	loaded, fenced bool
	lim            Limits
	stateEpoch     int32
	leaderEpoch    int32
	start          int64 // the share-partition start offset (SPSO)
	next           int64 // the offset after the last in-flight record (SPEO+1)
	spans          []span
	gen            uint64 // the last write generation handed out
	pending        int    // writes handed out and not completed

	// maxLimit is the largest delivery limit applied: records delivered
	// under a higher limit keep their counts when it is lowered
	maxLimit int16

	// loadedEpoch is leaderEpoch, readable without mu (Manager.Retain)
	loadedEpoch atomic.Int32
}

// NewPartition returns a share partition that must be Loaded before use.
func NewPartition(group, topic string, topicID [16]byte, partition int32, lim Limits) *Partition {
	p := &Partition{Group: group, Topic: topic, TopicID: topicID, Partition: partition, lim: lim, maxLimit: lim.DeliveryLimit}
	p.mu.SetRank(lockrank.SharePartition)
	return p
}

func (p *Partition) String() string {
	return fmt.Sprintf("%s:%s-%d", p.Group, p.Topic, p.Partition)
}

// Write is a WriteShareGroupState partition the caller sends, then reports
// with Complete. Records counts the records whose state it carries.
type Write struct {
	gen  uint64
	Data kmsg.WriteShareGroupStateRequestTopicPartition
	// DLQ are the records this write moves to Archiving: once it is
	// persisted they are written to the dead-letter queue, then Archived
	// (SharePartition.initiateDLQAndArchive)
	DLQ []DLQBatch
}

// Committed says whether a Write's changes stay when its persisting
// fails: only acknowledgements are rolled back.
func (w *Write) Committed() bool { return w.gen == 0 }

// Load initializes the partition from a ReadShareGroupState answer
// (SharePartition.maybeInitialize). A start offset of -1 (never written) is
// resolved by resolveStart, the share.auto.offset.reset offset. State
// batches below the start offset are dropped; an Acquired state read back
// (a leader that crashed holding locks) is Available again; offsets between
// batches are Available with no deliveries. It returns the partition's
// error code for the answer's error.
func (p *Partition) Load(rp *kmsg.ReadShareGroupStateResponseTopicPartition, leaderEpoch int32, resolveStart func() (int64, error)) error {
	if rp.ErrorCode != 0 {
		return kerr.ErrorForCode(rp.ErrorCode)
	}
	start := rp.StartOffset
	if start < 0 {
		off, err := resolveStart()
		if err != nil {
			return err
		}
		start = off
	}
	batches := slices.Clone(rp.StateBatches)
	slices.SortFunc(batches, func(a, b kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch) int {
		switch {
		case a.FirstOffset < b.FirstOffset:
			return -1
		case a.FirstOffset > b.FirstOffset:
			return 1
		}
		return 0
	})
	var spans []span
	next := start
	for _, b := range batches {
		first, last := max(b.FirstOffset, next), b.LastOffset
		if last < first {
			continue // below the start offset, or overlapping one already taken
		}
		if first > next {
			spans = append(spans, span{first: next, last: first - 1, spanState: spanState{state: sharestate.Available}})
		}
		st := sharestate.RecordState(b.DeliveryState)
		switch st {
		case sharestate.Acknowledged, sharestate.Archived, sharestate.Available, sharestate.Archiving:
		default:
			st = sharestate.Available
		}
		dc := max(b.DeliveryCount, 0)
		if dc >= p.lim.DeliveryLimit && st == sharestate.Available {
			// delivered as often as the limit allows (a lower limit
			// than the state was written with): never again
			st = sharestate.Archived
		}
		spans = append(spans, span{first: first, last: last, spanState: spanState{state: st, deliveries: min(dc, p.lim.DeliveryLimit)}})
		next = last + 1
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loaded = true
	p.stateEpoch = rp.StateEpoch
	p.leaderEpoch = leaderEpoch
	p.loadedEpoch.Store(leaderEpoch)
	p.start = start
	p.next = next
	p.spans = mergeSpans(spans)
	p.advanceLocked()
	return p.checkLocked()
}

// SetLimits applies the group's current settings (Kafka reads them from
// the group's configs on each use, ShareGroupConfigProvider): a new lock
// duration applies to locks taken or renewed from now on, a new delivery
// limit to records released or acquired from now on (an Available record
// at or above it is archived when next met), a new max.record.locks to
// the next reads.
func (p *Partition) SetLimits(lim Limits) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if lim.LockMs <= 0 || lim.DeliveryLimit <= 0 || lim.MaxLocks <= 0 {
		return
	}
	p.lim = lim
	p.maxLimit = max(p.maxLimit, lim.DeliveryLimit)
}

// Loaded says whether Load succeeded.
func (p *Partition) Loaded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.loaded
}

// Fence marks the partition unusable: its leadership moved or a write was
// fenced (FENCED_STATE_EPOCH); its owner drops it.
func (p *Partition) Fence() {
	p.mu.Lock()
	p.fenced = true
	p.mu.Unlock()
}

// Fenced says whether Fence was called.
func (p *Partition) Fenced() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fenced
}

// LeaderEpoch is the leader epoch the partition was loaded at.
func (p *Partition) LeaderEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.leaderEpoch
}

// Limits returns the partition's settings.
func (p *Partition) Limits() Limits {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lim
}

// FetchOffset is where the next read of the log begins
// (SharePartition.nextFetchOffset): the first Available in-flight record,
// else the end of the in-flight records. ok is false when no record could
// be acquired: nothing Available and max.record.locks records in flight
// (canAcquireRecords).
func (p *Partition) FetchOffset() (offset int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded || p.fenced {
		return 0, false
	}
	for i := range p.spans {
		if p.spans[i].state == sharestate.Available {
			return p.spans[i].first, true
		}
	}
	return p.next, p.next-p.start < p.lim.MaxLocks
}

// Batch is one record batch read from the log, as Acquire needs it: its
// offsets, and whether read_committed drops it (an aborted transaction's
// data batch, or a control batch of a transaction).
type Batch struct {
	First, Last int64
	Aborted     bool
}

// Acquired is a range of offsets acquired by one fetch with its delivery
// count (ShareFetchResponse AcquiredRecords).
type Acquired struct {
	First, Last int64
	Deliveries  int16
}

// Acquire acquires for member the Available in-flight records and the new
// records of batches, read from the log from offset from, in offset order, until maxRecords are acquired
// (SharePartition.acquire). Each acquired record's delivery count goes up
// and its lock expires at nowMs+LockMs. New records are taken only while
// fewer than MaxLocks records are in flight. Aborted batches are archived
// instead (read_committed, ShareFetchUtils' aborted-transaction filter);
// that change is returned as a Write, nil when nothing needs persisting.
func (p *Partition) Acquire(member string, from int64, batches []Batch, maxRecords int, mode AcquireMode, nowMs int64) ([]Acquired, *Write) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded || p.fenced || maxRecords <= 0 {
		return nil, nil
	}
	var out []Acquired
	var archived [][2]int64
	left := int64(maxRecords)
	deadline := nowMs + p.lim.LockMs
	cursor := max(from, p.start)
	for _, b := range batches {
		if left <= 0 || b.Last < b.First {
			break
		}
		if b.First > cursor {
			// offsets the log read from cursor does not hold (a
			// compacted topic's removed records): never delivered,
			// archived so that the start offset passes them
			archived = append(archived, p.archiveGapLocked(cursor, b.First-1)...)
		}
		cursor = max(cursor, b.Last+1)
		first := max(b.First, p.start)
		if first > b.Last {
			continue
		}
		if b.Aborted {
			p.extendLocked(b.Last)
			changed := p.setRangeLocked(first, b.Last, func(s *span) bool {
				if s.state != sharestate.Available {
					return false
				}
				s.state, s.member, s.deadline = sharestate.Archived, "", 0
				return true
			}, 0)
			archived = append(archived, changed...)
			continue
		}
		if first < p.next {
			// delivered as often as a lowered limit allows: archived
			archived = append(archived, p.setRangeLocked(first, min(b.Last, p.next-1), func(s *span) bool {
				if s.state != sharestate.Available || s.deliveries < p.lim.DeliveryLimit {
					return false
				}
				s.state = sharestate.Archived
				return true
			}, 0)...)
		}
		last := b.Last
		if b.Last >= p.next {
			// new records: bounded by the in-flight limit
			room := p.lim.MaxLocks - (p.next - p.start)
			if room <= 0 && first >= p.next {
				break
			}
			if mode == RecordLimit {
				last = min(last, max(first, p.next)+min(room, left)-1)
			}
		}
		if mode == RecordLimit {
			last = p.availableEndLocked(first, last, left)
		}
		stop := false
		if first < p.next {
			last, stop = p.throttleEndLocked(first, last)
		}
		if last < first {
			if stop {
				break
			}
			continue
		}
		p.extendLocked(last)
		got := p.setRangeLocked(first, last, func(s *span) bool {
			if s.state != sharestate.Available {
				return false
			}
			s.state, s.member, s.deadline = sharestate.Acquired, member, deadline
			s.deliveries++
			return true
		}, 0)
		for _, r := range got {
			i := p.findLocked(r[0])
			for ; i < len(p.spans) && p.spans[i].first <= r[1]; i++ {
				s := &p.spans[i]
				out = append(out, Acquired{First: s.first, Last: s.last, Deliveries: s.deliveries})
				left -= s.count()
			}
		}
		if stop {
			break
		}
	}
	p.spans = mergeSpans(p.spans)
	out = mergeAcquired(out)
	var w *Write
	if len(archived) > 0 {
		// Archived aborted records are persisted; no rollback is needed
		// (nothing waits on this write), so they count as committed.
		w = p.writeLocked(archived, 0)
		p.advanceLocked()
	}
	if err := p.checkLocked(); err != nil {
		return nil, nil
	}
	return out, w
}

// archiveGapLocked archives the Available offsets of [first, last], adding
// them to the in-flight records when past the end. p.mu must be held.
func (p *Partition) archiveGapLocked(first, last int64) [][2]int64 {
	if last < first {
		return nil
	}
	p.extendLocked(last)
	return p.setRangeLocked(first, last, func(s *span) bool {
		if s.state != sharestate.Available {
			return false
		}
		s.state = sharestate.Archived
		return true
	}, 0)
}

// throttleEndLocked bounds the redelivery of [first, last] (Kafka 4.2+
// SharePartition.acquireSubsetBatchRecords): with a delivery limit L above
// 2, a record on its last attempt (L-1 deliveries) is delivered alone, so
// that a poison record does not fail its neighbours again; from
// max(2, ceil(L/2)) deliveries on, fewer records are acquired each time
// (the batch's size halved per delivery past that threshold, at least
// one). stop ends the fetch of the partition after this range. p.mu must
// be held.
func (p *Partition) throttleEndLocked(first, last int64) (end int64, stop bool) {
	limit := int64(p.lim.DeliveryLimit)
	threshold := max(2, (limit+1)/2)
	size := last - first + 1
	var count int64
	allowed := int64(-1)
	for off := first; off <= last; {
		if off >= p.next {
			return last, false // new records: never delivered
		}
		i := p.findLocked(off)
		if i < 0 {
			return off - 1, true
		}
		s := &p.spans[i]
		end := min(s.last, last)
		if s.state != sharestate.Available {
			off = end + 1
			continue
		}
		dc := int64(s.deliveries)
		if limit > 2 && dc == limit-1 {
			if count > 0 {
				return off - 1, true // alone, in the next fetch
			}
			return off, true // alone, in this one
		}
		if dc >= threshold && allowed < 0 {
			allowed = max(1, size>>min(dc-threshold+1, 62))
		}
		n := end - off + 1
		if allowed >= 0 && count+n >= allowed {
			return off + (allowed - count) - 1, true
		}
		count += n
		off = end + 1
	}
	return last, false
}

// availableEndLocked is the last offset of [first, last] to acquire so that
// at most left Available or new records are taken (record_limit mode).
func (p *Partition) availableEndLocked(first, last, left int64) int64 {
	off := first
	for off <= last && left > 0 {
		if off >= p.next {
			return min(last, off+left-1)
		}
		i := p.findLocked(off)
		if i < 0 {
			return off - 1
		}
		s := &p.spans[i]
		end := min(s.last, last)
		if s.state == sharestate.Available {
			n := end - off + 1
			if n >= left {
				return off + left - 1
			}
			left -= n
		}
		off = end + 1
	}
	return min(off-1, last)
}

// extendLocked adds Available spans up to last (new records read from the
// log). p.mu must be held.
func (p *Partition) extendLocked(last int64) {
	if last < p.next {
		return
	}
	p.spans = append(p.spans, span{first: p.next, last: last, spanState: spanState{state: sharestate.Available}})
	p.next = last + 1
}

// findLocked returns the index of the span holding off, -1 if none.
func (p *Partition) findLocked(off int64) int {
	i, ok := slices.BinarySearchFunc(p.spans, off, func(s span, off int64) int {
		switch {
		case s.last < off:
			return -1
		case s.first > off:
			return 1
		}
		return 0
	})
	if !ok {
		return -1
	}
	return i
}

// splitLocked makes off the first offset of a span, if a span holds it.
func (p *Partition) splitLocked(off int64) {
	i := p.findLocked(off)
	if i < 0 || p.spans[i].first == off {
		return
	}
	s := p.spans[i]
	left, right := s, s
	left.last, right.first = off-1, off
	p.spans = slices.Insert(p.spans, i+1, right)
	p.spans[i] = left
}

// setRangeLocked applies fn to each span of [first, last] (split at its
// edges) and returns the ranges fn changed. gen > 0 records the old state
// for Complete's rollback. p.mu must be held.
func (p *Partition) setRangeLocked(first, last int64, fn func(*span) bool, gen uint64) [][2]int64 {
	p.splitLocked(first)
	p.splitLocked(last + 1)
	var changed [][2]int64
	for i := max(p.findLocked(first), 0); i < len(p.spans) && p.spans[i].first <= last; i++ {
		s := &p.spans[i]
		if s.last < first {
			continue
		}
		before := s.spanState
		if !fn(s) {
			continue
		}
		if gen > 0 {
			if s.gen == 0 {
				old := before
				s.old = &old
			}
			s.gen = gen
		} else {
			// a change nothing waits on (an acquisition of records
			// whose release is still being written) replaces the
			// pending one: its failure must not undo this
			s.gen, s.old = 0, nil
		}
		if n := len(changed); n > 0 && changed[n-1][1]+1 == s.first {
			changed[n-1][1] = s.last
		} else {
			changed = append(changed, [2]int64{s.first, s.last})
		}
	}
	return changed
}

// mergeSpans joins neighbours in the same state with no write in flight.
func mergeSpans(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	out := spans[:1]
	for _, s := range spans[1:] {
		l := &out[len(out)-1]
		if l.last+1 == s.first && l.spanState == s.spanState && l.gen == 0 && s.gen == 0 {
			l.last = s.last
			continue
		}
		out = append(out, s)
	}
	return out
}

func mergeAcquired(a []Acquired) []Acquired {
	if len(a) < 2 {
		return a
	}
	out := a[:1]
	for _, r := range a[1:] {
		l := &out[len(out)-1]
		if l.Last+1 == r.First && l.Deliveries == r.Deliveries {
			l.Last = r.Last
			continue
		}
		out = append(out, r)
	}
	return out
}

// AckBatch is one acknowledgement batch of ShareAcknowledge or ShareFetch:
// one type for the whole range, or one per offset.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// releasedState is where a released record goes: Available, or Archived
// once it has been delivered DeliveryLimit times (KIP-932's
// group.share.delivery.count.limit), Archiving with a DLQ
// (InFlightState.tryUpdateState).
func (p *Partition) releasedState(s *span) sharestate.RecordState {
	if s.deliveries >= p.lim.DeliveryLimit {
		return p.archivedState()
	}
	return sharestate.Available
}

// archivedState is Archiving with a DLQ, else Archived.
func (p *Partition) archivedState() sharestate.RecordState {
	if p.lim.DLQ {
		return sharestate.Archiving
	}
	return sharestate.Archived
}

// dlqLocked lists the Archiving spans of ranges as DLQ batches with
// cause. p.mu must be held.
func (p *Partition) dlqLocked(out []DLQBatch, ranges [][2]int64, cause string) []DLQBatch {
	for _, r := range ranges {
		for i := max(p.findLocked(r[0]), 0); i < len(p.spans) && p.spans[i].first <= r[1]; i++ {
			s := &p.spans[i]
			if s.last < r[0] || s.state != sharestate.Archiving {
				continue
			}
			out = append(out, DLQBatch{First: max(s.first, r[0]), Last: min(s.last, r[1]), Deliveries: s.deliveries, Cause: cause})
		}
	}
	return out
}

// Acknowledge applies member's acknowledgements (SharePartition.acknowledge):
// accept -> Acknowledged, release -> Available (Archived at the delivery
// limit), reject and gap -> Archived, renew (KIP-1222, renew true only)
// extends the lock. Every record acknowledged must be Acquired by member:
// INVALID_RECORD_STATE otherwise (and for offsets below the start offset);
// offsets past the in-flight records are INVALID_REQUEST; either fails the whole partition's acknowledgement
// with nothing changed. The returned Write carries the new states and must
// complete before the acknowledgement is answered; nil when nothing needs
// persisting (renewals only).
func (p *Partition) Acknowledge(member string, batches []AckBatch, renew bool, nowMs int64) (*Write, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fenced || !p.loaded {
		return nil, kerr.NotLeaderForPartition
	}
	if err := p.validateAcksLocked(member, batches, renew); err != nil {
		return nil, err
	}
	p.gen++
	gen := p.gen
	var changed [][2]int64
	var dlq []DLQBatch
	for _, b := range batches {
		for off := b.First; off <= b.Last; {
			typ, end := ackTypeAt(b, off)
			fn := func(s *span) bool {
				switch sharestate.AcknowledgeType(typ) {
				case sharestate.AckAccept:
					s.state = sharestate.Acknowledged
				case sharestate.AckRelease:
					s.state = p.releasedState(s)
				case sharestate.AckReject:
					s.state = p.archivedState()
				case sharestate.AckGap:
					s.state = sharestate.Archived
				case sharestate.AckRenew:
					s.deadline = nowMs + p.lim.LockMs
					return false
				}
				s.member, s.deadline = "", 0
				return true
			}
			ch := p.setRangeLocked(off, end, fn, gen)
			cause := CauseDeliveryCount // a release at the limit
			if sharestate.AcknowledgeType(typ) == sharestate.AckReject {
				cause = CauseRejected
			}
			dlq = p.dlqLocked(dlq, ch, cause)
			changed = append(changed, ch...)
			off = end + 1
		}
	}
	if len(changed) == 0 {
		p.spans = mergeSpans(p.spans)
		return nil, p.checkLocked()
	}
	p.pending++
	w := p.writeLocked(changed, gen)
	w.DLQ = dlq
	return w, p.checkLocked()
}

// ackTypeAt is the type of offset off in b and the last offset of the run of
// that type starting at off.
func ackTypeAt(b AckBatch, off int64) (int8, int64) {
	if len(b.Types) == 1 {
		return b.Types[0], b.Last
	}
	i := off - b.First
	t := b.Types[i]
	end := off
	for end < b.Last && b.Types[end+1-b.First] == t {
		end++
	}
	return t, end
}

// validateAcksLocked checks acknowledgements before any is applied
// (ShareFetchUtils/KafkaApis validation and SharePartition's checks).
func (p *Partition) validateAcksLocked(member string, batches []AckBatch, renew bool) error {
	prev := int64(-1)
	for _, b := range batches {
		if b.First > b.Last || b.First <= prev && prev >= 0 || b.First < 0 {
			return kerr.InvalidRequest
		}
		prev = b.Last
		n := b.Last - b.First + 1
		if len(b.Types) != 1 && int64(len(b.Types)) != n {
			return kerr.InvalidRequest
		}
		for _, t := range b.Types {
			switch sharestate.AcknowledgeType(t) {
			case sharestate.AckGap, sharestate.AckAccept, sharestate.AckRelease, sharestate.AckReject:
				// also in a renew request: a client sends all its
				// acknowledgements with the renewals (KIP-1222)
			case sharestate.AckRenew:
				if !renew {
					return kerr.InvalidRequest
				}
			default:
				return kerr.InvalidRequest
			}
		}
		if b.Last >= p.next {
			// SharePartition: "Batch record not found. The first/last
			// offset in request is past acquired records."
			return kerr.InvalidRequest
		}
		if b.First < p.start {
			// "The request batch offsets are not found in the cache"
			return kerr.InvalidRecordState
		}
		for off := b.First; off <= b.Last; {
			i := p.findLocked(off)
			if i < 0 {
				return kerr.InvalidRecordState
			}
			s := &p.spans[i]
			end := min(s.last, b.Last)
			if s.state != sharestate.Acquired || s.member != member {
				// not acquired, or acquired by another member
				// (InvalidRecordStateException); a gap too must be
				// acquired by the member acknowledging it
				return kerr.InvalidRecordState
			}
			off = end + 1
		}
	}
	return nil
}

// ExpireLocks releases the records whose acquisition lock expired by nowMs
// (SharePartition.releaseAcquisitionLockOnTimeout): Available again, or
// Archived at the delivery limit. The Write persists it; nil if none.
func (p *Partition) ExpireLocks(nowMs int64) *Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded || p.fenced {
		return nil
	}
	var changed [][2]int64
	for i := range p.spans {
		s := &p.spans[i]
		if s.state == sharestate.Acquired && s.deadline <= nowMs {
			s.state, s.member, s.deadline = p.releasedState(s), "", 0
			changed = appendRange(changed, s.first, s.last)
		}
	}
	// the acquisition lock timeout names its cause
	// (releaseAcquisitionLockOnTimeout: DELIVERY_COUNT_EXCEEDED)
	dlq := p.dlqLocked(nil, changed, CauseDeliveryCount)
	w := p.finishLocked(changed)
	if w != nil {
		w.DLQ = dlq
	}
	return w
}

// ReleaseMember releases every record member holds (a member that left the
// group, SharePartitionManager.releaseSession / the group coordinator's
// member removal): Available, or Archived at the delivery limit.
func (p *Partition) ReleaseMember(member string) *Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded || p.fenced {
		return nil
	}
	var changed [][2]int64
	for i := range p.spans {
		s := &p.spans[i]
		if s.state == sharestate.Acquired && s.member == member {
			s.state, s.member, s.deadline = p.releasedState(s), "", 0
			changed = appendRange(changed, s.first, s.last)
		}
	}
	dlq := p.dlqLocked(nil, changed, CauseDeliveryCount)
	w := p.finishLocked(changed)
	if w != nil {
		w.DLQ = dlq
	}
	return w
}

// finishLocked persists changes nothing waits for: they count as committed
// (no rollback), the start offset may advance at once.
func (p *Partition) finishLocked(changed [][2]int64) *Write {
	if len(changed) == 0 {
		return nil
	}
	p.spans = mergeSpans(p.spans)
	w := p.writeLocked(changed, 0)
	p.advanceLocked()
	p.checkLocked()
	return w
}

func appendRange(r [][2]int64, first, last int64) [][2]int64 {
	if n := len(r); n > 0 && r[n-1][1]+1 == first {
		r[n-1][1] = last
		return r
	}
	return append(r, [2]int64{first, last})
}

// NextDeadline is the earliest acquisition lock expiry, -1 for none.
func (p *Partition) NextDeadline() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := int64(-1)
	for i := range p.spans {
		if s := &p.spans[i]; s.state == sharestate.Acquired && (d < 0 || s.deadline < d) {
			d = s.deadline
		}
	}
	return d
}

// writeLocked builds the WriteShareGroupState partition for the changed
// ranges: the start offset the partition will have once the write
// completes, and the changed records at or above it, with their new states
// (an Acquired record is persisted as Available: a lock does not survive
// the leader). p.mu must be held.
func (p *Partition) writeLocked(changed [][2]int64, gen uint64) *Write {
	return p.writeAtLocked(changed, gen, p.prospectiveStartLocked(gen))
}

// writeAtLocked is writeLocked with the start offset to persist given.
func (p *Partition) writeAtLocked(changed [][2]int64, gen uint64, start int64) *Write {
	d := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	d.Partition = p.Partition
	d.StateEpoch = p.stateEpoch
	d.LeaderEpoch = p.leaderEpoch
	d.StartOffset = start
	var complete int32
	for i := range p.spans {
		s := &p.spans[i]
		if s.last >= start && terminal(s.state) {
			complete += int32(min(s.count(), s.last-start+1))
		}
	}
	d.DeliveryCompleteCount = complete
	for _, r := range changed {
		for i := max(p.findLocked(max(r[0], start)), 0); i < len(p.spans) && p.spans[i].first <= r[1]; i++ {
			s := &p.spans[i]
			first, last := max(s.first, r[0], start), min(s.last, r[1])
			if last < first {
				continue
			}
			st := s.state
			if st == sharestate.Acquired {
				st = sharestate.Available
			}
			b := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
			b.FirstOffset, b.LastOffset, b.DeliveryState, b.DeliveryCount = first, last, int8(st), s.deliveries
			d.StateBatches = append(d.StateBatches, b)
		}
	}
	return &Write{gen: gen, Data: d}
}

// prospectiveStartLocked is the start offset once the terminal records at
// the head are dropped, counting those of write gen but not those of other
// writes still in flight: a write that fails and is rolled back must not
// have moved the persisted start past its records.
func (p *Partition) prospectiveStartLocked(gen uint64) int64 {
	for i := range p.spans {
		s := &p.spans[i]
		if !terminal(s.state) || s.gen != 0 && s.gen != gen {
			return s.first
		}
	}
	return p.next
}

// advanceLocked moves the start offset past the leading terminal records
// whose write completed (SharePartition.maybeUpdateCachedStateAndOffsets).
func (p *Partition) advanceLocked() {
	n := 0
	for n < len(p.spans) && terminal(p.spans[n].state) && p.spans[n].gen == 0 {
		n++
	}
	if n == 0 {
		return
	}
	if n == len(p.spans) {
		p.start = p.next
	} else {
		p.start = p.spans[n].first
	}
	p.spans = slices.Delete(p.spans, 0, n)
}

// Complete reports the result of a Write: nil commits it (the start offset
// may advance); an error restores the states it changed, unless a later
// change already replaced them (InFlightState.completeStateTransition).
// FENCED_STATE_EPOCH and NOT_LEADER_OR_FOLLOWER fence the partition.
func (p *Partition) Complete(w *Write, err error) {
	if w == nil || w.gen == 0 {
		if isFencing(err) {
			p.Fence()
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending--
	for i := range p.spans {
		s := &p.spans[i]
		if s.gen != w.gen {
			continue
		}
		if err != nil && s.old != nil {
			s.spanState = *s.old
		}
		s.gen, s.old = 0, nil
	}
	if isFencing(err) {
		p.fenced = true
	}
	p.spans = mergeSpans(p.spans)
	p.advanceLocked()
	p.checkLocked()
}

func isFencing(err error) bool {
	return err == kerr.FencedStateEpoch || err == kerr.NotLeaderForPartition || err == kerr.FencedLeaderEpoch
}

// Offsets returns the share-partition start offset and the offset after the
// in-flight records (SPSO, SPEO+1).
func (p *Partition) Offsets() (start, next int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.start, p.next
}

// Dump renders the in-flight records for transcripts: the offsets, then
// each span as first-last:STATE/deliveries[@member until deadline][*] (*: a
// write in flight).
func (p *Partition) Dump() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "spso=%d speo=%d", p.start, p.next-1)
	for i := range p.spans {
		s := &p.spans[i]
		fmt.Fprintf(&b, " %d-%d:%s/%d", s.first, s.last, stateName(s.state), s.deliveries)
		if s.state == sharestate.Acquired {
			fmt.Fprintf(&b, "@%s<%d", s.member, s.deadline)
		}
		if s.gen != 0 {
			b.WriteString("*")
		}
	}
	return b.String()
}

func stateName(st sharestate.RecordState) string {
	switch st {
	case sharestate.Available:
		return "AVAILABLE"
	case sharestate.Acquired:
		return "ACQUIRED"
	case sharestate.Acknowledged:
		return "ACKNOWLEDGED"
	case sharestate.Archiving:
		return "ARCHIVING"
	case sharestate.Archived:
		return "ARCHIVED"
	}
	return fmt.Sprintf("STATE(%d)", st)
}

// Archive moves the Archiving records of a DLQ batch to Archived once
// its dead-letter queue write ended, written or not
// (SharePartition.initiateDLQAndArchive: "Failed to write to DLQ,
// proceeding to ARCHIVED regardless."); the Write persists it, nil when
// none was still Archiving (the partition was dropped or the start offset
// passed them).
func (p *Partition) Archive(b DLQBatch) *Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded || p.fenced {
		return nil
	}
	first := max(b.First, p.start)
	if b.Last < first {
		return nil
	}
	before := p.start
	changed := p.setRangeLocked(first, b.Last, func(s *span) bool {
		if s.state != sharestate.Archiving {
			return false
		}
		s.state = sharestate.Archived
		return true
	}, 0)
	if len(changed) == 0 {
		return nil
	}
	// Kafka writes the start offset as it stands: the archived records
	// move it once the write completed, and it is persisted by the next
	// write (initiateDLQAndArchive, then maybeUpdateCachedStateAndOffsets)
	p.spans = mergeSpans(p.spans)
	w := p.writeAtLocked(changed, 0, before)
	p.advanceLocked()
	p.checkLocked()
	return w
}

// Resume lists the Archiving records read back by Load, for their DLQ
// write to be made again (SharePartition.maybeResumeDlqArchiving: the
// cause is the delivery count's at or past the limit, a rejection
// otherwise).
func (p *Partition) Resume() []DLQBatch {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []DLQBatch
	for i := range p.spans {
		s := &p.spans[i]
		if s.state != sharestate.Archiving {
			continue
		}
		cause := CauseRejected
		if s.deliveries >= p.lim.DeliveryLimit {
			cause = CauseDeliveryCount
		}
		out = append(out, DLQBatch{First: s.first, Last: s.last, Deliveries: s.deliveries, Cause: cause})
	}
	return out
}

// MoveStart moves the start offset up to the log start offset when the
// records before it were deleted (retention, DeleteRecords): the in-flight
// records below it are dropped and the new start is persisted
// (SharePartition.updateCacheAndOffsets). nil when nothing moved.
func (p *Partition) MoveStart(logStart int64) *Write {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.loaded || p.fenced || logStart <= p.start {
		return nil
	}
	if logStart >= p.next {
		p.spans, p.next = nil, logStart
	} else {
		p.splitLocked(logStart)
		i := p.findLocked(logStart)
		p.spans = slices.Delete(p.spans, 0, i)
	}
	p.start = logStart
	w := p.writeLocked(nil, 0)
	p.checkLocked()
	return w
}
