package sharecoord

import (
	"cmp"
	"math"
	"slices"
)

// combineBatches is Kafka 4.4's PersisterStateBatchCombiner: the state
// batches so far and the new ones become one sorted list of
// non-overlapping batches.
//
//   - Prune: with a start offset (not -1), batches ending before it are
//     dropped and a batch straddling it keeps only [start, last].
//   - Zero or one batch left: returned as is.
//   - Otherwise a sweep over the batches' begin and end points: every
//     offset takes the batch of highest priority covering it, priority
//     being (delivery count, delivery state) compared in that order, so a
//     later delivery or a terminal state wins over what it overlaps. Runs of
//     adjacent offsets with the same count and state are coalesced into one
//     batch.
//
// Kafka's older pairwise merge (a TreeSet of batches split and re-added)
// gives the same answer; the sweep is what 4.4 runs.
func combineBatches(soFar, newer []stateBatch, startOffset int64) []stateBatch {
	pruned := make([]stateBatch, 0, len(soFar)+len(newer))
	for _, list := range [][]stateBatch{soFar, newer} {
		for _, b := range list {
			switch {
			case startOffset != -1 && b.last < startOffset:
			case startOffset == -1 || b.first >= startOffset:
				pruned = append(pruned, b)
			default:
				pruned = append(pruned, stateBatch{first: startOffset, last: b.last, state: b.state, count: b.count})
			}
		}
	}
	if len(pruned) < 2 {
		return pruned
	}
	return sweepMerge(pruned)
}

type batchPriority struct {
	count int16
	state int8
}

func comparePriority(a, b batchPriority) int {
	if c := cmp.Compare(a.count, b.count); c != 0 {
		return c
	}
	return cmp.Compare(a.state, b.state)
}

type sweepEvent struct {
	offset int64
	begin  bool
	prio   batchPriority
}

func sweepMerge(batches []stateBatch) []stateBatch {
	events := make([]sweepEvent, 0, 2*len(batches))
	for _, b := range batches {
		if b.last < b.first {
			continue // an empty range covers nothing
		}
		p := batchPriority{count: b.count, state: b.state}
		events = append(events, sweepEvent{offset: b.first, begin: true, prio: p})
		if b.last < math.MaxInt64 {
			// A batch reaching the last offset never ends (Kafka's
			// last+1 would wrap around).
			events = append(events, sweepEvent{offset: b.last + 1, prio: p})
		}
	}
	// Ends before begins at the same offset (Boolean.compare: false first).
	slices.SortStableFunc(events, func(a, b sweepEvent) int {
		if c := cmp.Compare(a.offset, b.offset); c != 0 {
			return c
		}
		switch {
		case a.begin == b.begin:
			return 0
		case !a.begin:
			return -1
		}
		return 1
	})
	active := map[batchPriority]int{}
	var out []stateBatch
	var cur *batchPriority
	prev := int64(-1)
	for i := 0; i < len(events); {
		off := events[i].offset
		if cur != nil && off > prev {
			out = appendCoalesced(out, prev, off-1, *cur)
		}
		for ; i < len(events) && events[i].offset == off; i++ {
			e := events[i]
			if e.begin {
				active[e.prio]++
			} else if active[e.prio] <= 1 {
				delete(active, e.prio)
			} else {
				active[e.prio]--
			}
		}
		cur = nil
		for p := range active {
			if cur == nil || comparePriority(p, *cur) > 0 {
				p := p
				cur = &p
			}
		}
		prev = off
	}
	if cur != nil {
		out = appendCoalesced(out, prev, math.MaxInt64, *cur)
	}
	return out
}

func appendCoalesced(out []stateBatch, first, last int64, p batchPriority) []stateBatch {
	if n := len(out); n > 0 {
		l := &out[n-1]
		if l.last+1 == first && l.state == p.state && l.count == p.count {
			l.last = last
			return out
		}
	}
	return append(out, stateBatch{first: first, last: last, state: p.state, count: p.count})
}
