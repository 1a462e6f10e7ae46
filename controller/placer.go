package controller

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// The striped replica placer (Kafka's StripedReplicaPlacer).
//
// Brokers are grouped by rack; each rack keeps its unfenced and its fenced
// brokers in two sorted lists with a random start offset. A partition takes
// its first replica (the leader) from the next rack that has an unfenced
// broker, then one broker from each following rack in turn, unfenced before
// fenced. Each partition starts one rack further on, which gives the
// "striped" pattern:
//
//	partition 0: A0 B0 C0
//	partition 1: B1 C1 A1
//	partition 2: C2 A2 B2
//
// After as many partitions as there are unfenced brokers, racks and brokers
// are shuffled so large topics don't repeat the same replica sets. Brokers in
// controlled shutdown are not usable at all.

// usableBroker is one broker the placer may use.
type usableBroker struct {
	id     int32
	rack   *string
	fenced bool
}

// placementError is Kafka's InvalidReplicationFactorException.
type placementError struct{ msg string }

func (e *placementError) Error() string { return e.msg }

type brokerList struct {
	brokers []int32
	index   int
	offset  int
	epoch   int
}

func (l *brokerList) initialize(r *rand.Rand) {
	if len(l.brokers) > 0 {
		sort.Slice(l.brokers, func(i, j int) bool { return l.brokers[i] < l.brokers[j] })
		l.offset = r.IntN(len(l.brokers))
	}
}

func (l *brokerList) shuffle(r *rand.Rand) {
	r.Shuffle(len(l.brokers), func(i, j int) { l.brokers[i], l.brokers[j] = l.brokers[j], l.brokers[i] })
}

// next returns the next broker of this iteration epoch, or -1.
func (l *brokerList) next(epoch int) int32 {
	if len(l.brokers) == 0 {
		return -1
	}
	if l.epoch != epoch {
		l.epoch = epoch
		l.index = 0
		l.offset = (l.offset + 1) % len(l.brokers)
	}
	if l.index >= len(l.brokers) {
		return -1
	}
	b := l.brokers[(l.index+l.offset)%len(l.brokers)]
	l.index++
	return b
}

type rack struct {
	fenced, unfenced brokerList
}

func (r *rack) next(epoch int) int32 {
	if b := r.unfenced.next(epoch); b >= 0 {
		return b
	}
	return r.fenced.next(epoch)
}

type rackList struct {
	rnd         *rand.Rand
	racks       map[string]*rack
	names       []string // "" sorts first: Kafka's empty Optional
	numTotal    int
	numUnfenced int
	epoch       int
	offset      int
}

func newRackList(rnd *rand.Rand, brokers []usableBroker) *rackList {
	rl := &rackList{rnd: rnd, racks: make(map[string]*rack)}
	for _, b := range brokers {
		name := "\x00" // no rack
		if b.rack != nil {
			name = "\x01" + *b.rack
		}
		rk := rl.racks[name]
		if rk == nil {
			rk = &rack{}
			rl.racks[name] = rk
			rl.names = append(rl.names, name)
		}
		if b.fenced {
			rk.fenced.brokers = append(rk.fenced.brokers, b.id)
		} else {
			rk.unfenced.brokers = append(rk.unfenced.brokers, b.id)
			rl.numUnfenced++
		}
		rl.numTotal++
	}
	sort.Strings(rl.names)
	for _, name := range rl.names {
		rk := rl.racks[name]
		rk.fenced.initialize(rnd)
		rk.unfenced.initialize(rnd)
	}
	if len(rl.names) > 0 {
		rl.offset = rnd.IntN(len(rl.names))
	}
	return rl
}

func (rl *rackList) shuffle() {
	rl.rnd.Shuffle(len(rl.names), func(i, j int) { rl.names[i], rl.names[j] = rl.names[j], rl.names[i] })
	for _, name := range rl.names {
		rk := rl.racks[name]
		rk.fenced.shuffle(rl.rnd)
		rk.unfenced.shuffle(rl.rnd)
	}
}

func (rl *rackList) place(rf int) ([]int32, error) {
	if err := checkPlacement(rf, rl.numTotal, rl.numUnfenced); err != nil {
		return nil, err
	}
	if rl.epoch == rl.numUnfenced && rl.numUnfenced > 1 {
		rl.shuffle()
		rl.epoch = 0
	}
	if rl.offset == len(rl.names) {
		rl.offset = 0
	}
	out := make([]int32, 0, rf)
	first := rl.offset
	for {
		if b := rl.racks[rl.names[first]].unfenced.next(rl.epoch); b >= 0 {
			out = append(out, b)
			break
		}
		first++
		if first == len(rl.names) {
			first = 0
		}
	}
	idx := rl.offset
	for len(out) < rf {
		b := int32(-1)
		for b < 0 {
			if idx == first {
				first = -1
			} else {
				b = rl.racks[rl.names[idx]].next(rl.epoch)
			}
			idx++
			if idx == len(rl.names) {
				idx = 0
			}
		}
		out = append(out, b)
	}
	rl.epoch++
	rl.offset++
	return out, nil
}

// checkPlacement runs the placer's up-front checks, in Kafka's order.
func checkPlacement(rf, numTotal, numUnfenced int) error {
	if rf <= 0 {
		return &placementError{fmt.Sprintf("Invalid replication factor %d: the replication factor must be positive.", rf)}
	}
	if numUnfenced == 0 {
		return &placementError{"All brokers are currently fenced."}
	}
	if rf > numTotal {
		return &placementError{fmt.Sprintf("The target replication factor of %d cannot be reached because only %d broker(s) are registered.", rf, numTotal)}
	}
	return nil
}

// placeReplicas assigns numPartitions partitions of rf replicas each.
func placeReplicas(rnd *rand.Rand, brokers []usableBroker, numPartitions, rf int) ([][]int32, error) {
	rl := newRackList(rnd, brokers)
	if err := checkPlacement(rf, rl.numTotal, rl.numUnfenced); err != nil {
		return nil, err
	}
	out := make([][]int32, 0, numPartitions)
	for p := 0; p < numPartitions; p++ {
		replicas, err := rl.place(rf)
		if err != nil {
			return nil, err
		}
		out = append(out, replicas)
	}
	return out, nil
}
