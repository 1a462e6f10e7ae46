package sharecoord

import (
	"math/rand"
	"reflect"
	"testing"
)

func TestCombineBatches(t *testing.T) {
	b := func(first, last int64, state int8, count int16) stateBatch {
		return stateBatch{first: first, last: last, state: state, count: count}
	}
	for _, tc := range []struct {
		name         string
		soFar, newer []stateBatch
		start        int64
		want         []stateBatch
	}{
		{name: "empty", start: -1, want: []stateBatch{}},
		{name: "one batch is kept as is", newer: []stateBatch{b(0, 9, 0, 1)}, start: -1, want: []stateBatch{b(0, 9, 0, 1)}},
		{name: "contiguous same state coalesce", soFar: []stateBatch{b(0, 9, 0, 1)}, newer: []stateBatch{b(10, 19, 0, 1)}, start: -1,
			want: []stateBatch{b(0, 19, 0, 1)}},
		{name: "contiguous different state stay apart", soFar: []stateBatch{b(0, 9, 0, 1)}, newer: []stateBatch{b(10, 19, 2, 1)}, start: -1,
			want: []stateBatch{b(0, 9, 0, 1), b(10, 19, 2, 1)}},
		{name: "acknowledged inside available splits it", soFar: []stateBatch{b(0, 9, 0, 1)}, newer: []stateBatch{b(3, 5, 2, 1)}, start: -1,
			want: []stateBatch{b(0, 2, 0, 1), b(3, 5, 2, 1), b(6, 9, 0, 1)}},
		{name: "higher delivery count wins over a terminal state", soFar: []stateBatch{b(0, 9, 4, 1)}, newer: []stateBatch{b(5, 14, 0, 2)}, start: -1,
			want: []stateBatch{b(0, 4, 4, 1), b(5, 14, 0, 2)}},
		{name: "lower priority under higher disappears", soFar: []stateBatch{b(0, 9, 2, 3)}, newer: []stateBatch{b(2, 4, 0, 1)}, start: -1,
			want: []stateBatch{b(0, 9, 2, 3)}},
		{name: "start offset prunes and trims", soFar: []stateBatch{b(0, 9, 0, 1), b(10, 19, 2, 1)}, newer: []stateBatch{b(20, 29, 0, 1)}, start: 15,
			want: []stateBatch{b(15, 19, 2, 1), b(20, 29, 0, 1)}},
		{name: "start offset past everything", soFar: []stateBatch{b(0, 9, 0, 1)}, newer: []stateBatch{b(10, 19, 2, 1)}, start: 50,
			want: []stateBatch{}},
		{name: "pruned to one is not merged", soFar: []stateBatch{b(0, 9, 0, 1)}, newer: []stateBatch{b(5, 19, 2, 1)}, start: 10,
			want: []stateBatch{b(10, 19, 2, 1)}},
		{name: "unsorted input comes out sorted", newer: []stateBatch{b(20, 29, 0, 1), b(0, 9, 2, 1)}, start: -1,
			want: []stateBatch{b(0, 9, 2, 1), b(20, 29, 0, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := combineBatches(tc.soFar, tc.newer, tc.start)
			if len(got) == 0 && len(tc.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCombineBatchesReference checks the sweep against the definition on
// random inputs: every covered offset at or past the start offset takes
// the highest (count, state) covering it, adjacent equal offsets coalesce.
func TestCombineBatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for iter := 0; iter < 3000; iter++ {
		var in []stateBatch
		for n := rng.Intn(6); n > 0; n-- {
			first := int64(rng.Intn(40))
			in = append(in, stateBatch{first: first, last: first + int64(rng.Intn(10)),
				state: []int8{0, 2, 4}[rng.Intn(3)], count: int16(rng.Intn(3))})
		}
		start := int64(-1)
		if rng.Intn(2) == 0 {
			start = int64(rng.Intn(40))
		}
		split := rng.Intn(len(in) + 1)
		got := combineBatches(in[:split], in[split:], start)

		if len(in) == 0 || (start != -1 && countKept(in, start) < 2) || (start == -1 && len(in) < 2) {
			continue // returned unmerged, as Kafka does
		}
		var want []stateBatch
		for off := int64(0); off < 60; off++ {
			if start != -1 && off < start {
				continue
			}
			var best *batchPriority
			for _, b := range in {
				if off >= b.first && off <= b.last {
					p := batchPriority{count: b.count, state: b.state}
					if best == nil || comparePriority(p, *best) > 0 {
						best = &p
					}
				}
			}
			if best != nil {
				want = appendCoalesced(want, off, off, *best)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("in %v start %d: got %v, want %v", in, start, got, want)
		}
	}
}

func countKept(in []stateBatch, start int64) int {
	n := 0
	for _, b := range in {
		if b.last >= start {
			n++
		}
	}
	return n
}
