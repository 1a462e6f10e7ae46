package replication

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
)

// TestImageDeltaMatchesFullScan drives a replica manager through random
// metadata changes (topics created, deleted and created again under the same
// name, partitions added, leaders moved, this node's replica moved away and
// back, config changes, NoOps) and checks after each one that the partitions
// it hosts, their leadership and their logs are what a walk of the whole image
// says: OnImage's per-change path (applyTopicChanges) must end where the full
// scan would.
func TestImageDeltaMatchesFullScan(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0))
			h := newHarness(t)
			gen := 0
			names := []string{"a", "b", "c", "d"}
			ids := map[string][16]byte{} // live topics
			replicasFor := func() []int32 {
				switch rng.IntN(3) {
				case 0:
					return []int32{2, 3}
				case 1:
					return []int32{1, 2}
				default:
					return []int32{2, 1, 3}
				}
			}
			for step := 0; step < 150; step++ {
				name := names[rng.IntN(len(names))]
				id, live := ids[name]
				switch op := rng.IntN(8); {
				case !live && op < 6:
					gen++
					var nid [16]byte
					copy(nid[:], fmt.Sprintf("%s-%d...............", name, gen))
					reps := replicasFor()
					h.createTopicID(name, nid, 1+rng.IntN(3), reps, reps[0], nil, nil)
					ids[name] = nid
				case live && op == 0:
					r := metadatacache.NewRemoveTopicRecord()
					r.TopicID = id
					h.apply(r)
					delete(ids, name)
				case live && op == 1:
					// add a partition
					tp := h.cache.Image().TopicByID(id)
					pr := metadatacache.NewPartitionRecord()
					reps := replicasFor()
					pr.TopicID, pr.PartitionID = id, int32(len(tp.Partitions))
					pr.Replicas, pr.Isr, pr.Leader = reps, reps, reps[0]
					h.apply(pr)
				case live && op <= 4:
					// move the leader or the replicas
					tp := h.cache.Image().TopicByID(id)
					pid := int32(rng.IntN(len(tp.Partitions)))
					c := metadatacache.NewPartitionChangeRecord()
					c.TopicID, c.PartitionID = id, pid
					if op == 4 {
						reps := replicasFor()
						c.Replicas, c.Isr, c.Leader = reps, reps, reps[0]
					} else {
						reps := tp.Partition(pid).Replicas
						c.Leader = reps[rng.IntN(len(reps))]
					}
					h.apply(c)
				case op == 5:
					c := metadatacache.NewConfigRecord()
					c.ResourceType, c.ResourceName, c.Name = metadatacache.ConfigResourceBroker, "", "log.retention.ms"
					v := fmt.Sprint(1000 + step)
					c.Value = &v
					h.apply(c)
				default:
					h.apply(metadatacache.NewNoOpRecord())
				}
				checkHostedPartitions(t, h, step)
			}
		})
	}
}

// checkHostedPartitions compares rm's partitions and h's logs with a walk of
// the cache's image.
func checkHostedPartitions(t *testing.T, h *harness, step int) {
	t.Helper()
	img := h.cache.Image()
	want := map[storage.TopicPartition]*metadatacache.Partition{}
	ids := map[storage.TopicPartition][16]byte{}
	for _, tp := range img.Topics() {
		for _, mp := range tp.Partitions {
			if mp.HasReplica(1) {
				k := storage.TopicPartition{Topic: tp.Name, Partition: mp.ID}
				want[k], ids[k] = mp, tp.ID
			}
		}
	}
	h.rm.mu.Lock()
	defer h.rm.mu.Unlock()
	if len(h.rm.partitions) != len(want) {
		t.Fatalf("step %d: %d partitions hosted, the image has %d", step, len(h.rm.partitions), len(want))
	}
	for k, mp := range want {
		p := h.rm.partitions[k]
		if p == nil {
			t.Fatalf("step %d: %v not hosted", step, k)
		}
		p.mu.Lock()
		ok := p.topicID == ids[k] && p.leader == mp.Leader && p.leaderEpoch == mp.LeaderEpoch &&
			p.isLeader == (mp.Leader == 1) && p.log != nil
		p.mu.Unlock()
		if !ok {
			t.Fatalf("step %d: %v out of date with the image", step, k)
		}
	}
	h.logs.mu.Lock()
	defer h.logs.mu.Unlock()
	if len(h.logs.logs) != len(want) {
		t.Fatalf("step %d: %d logs, %d hosted partitions", step, len(h.logs.logs), len(want))
	}
	for k := range want {
		if l := h.logs.logs[k]; l == nil || l.TopicID() != ids[k] {
			t.Fatalf("step %d: log of %v missing or of another topic", step, k)
		}
	}
}
