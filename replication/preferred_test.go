package replication

import (
	"context"
	"testing"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// registerRacked registers brokers with racks (nil: none) and a PLAINTEXT
// endpoint, unfenced.
func (h *harness) registerRacked(racks map[int32]*string) {
	h.t.Helper()
	var recs []metadatacache.Record
	for id := int32(1); id <= int32(len(racks)); id++ {
		r := metadatacache.NewRegisterBrokerRecord()
		r.BrokerID, r.BrokerEpoch, r.Fenced, r.Rack = id, 10+int64(id), false, racks[id]
		r.EndPoints = []metadatacache.BrokerEndpoint{{Name: "PLAINTEXT", Host: "h", Port: 9092}}
		recs = append(recs, r)
	}
	h.apply(recs...)
}

// preferredOf runs a consumer fetch of version v at offset from a client in
// rack and returns the partition's preferred read replica and record bytes.
func (h *harness) preferredOf(v int16, offset int64, rack string) (int32, int) {
	h.t.Helper()
	req := fetchReq(v, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: offset, epoch: -1})
	req.Rack = rack
	res := h.rm.FetchFrom(context.Background(), req, nil, FetchClient{Listener: "PLAINTEXT"})
	if err := res.Materialize(); err != nil {
		h.t.Fatal(err)
	}
	p := res.Resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		h.t.Fatalf("fetch error %d", p.ErrorCode)
	}
	return p.PreferredReadReplica, len(p.RecordBatches)
}

// The leader names the most caught-up in-sync follower of the consumer's
// rack (RackAwareReplicaSelector), not when the leader is in that rack, the
// follower lacks the offset, is fenced, or the fetch is older than v11.
func TestPreferredReadReplicaRackAware(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RackAwareReplicaSelector = true })
	r1, r2 := "r1", "r2"
	h.registerRacked(map[int32]*string{1: &r1, 2: &r2, 3: &r2, 4: nil})
	h.createTopic("t", 1, []int32{1, 2, 3, 4}, 1, nil, nil)
	h.produce("t", 0, batch(3, "a"))
	follow := func(id int32, offset int64) {
		t.Helper()
		freq := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: offset, epoch: 0})
		freq.ReplicaID = id
		if r := h.fetch(freq); r.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("follower %d fetch error %d", id, r.Topics[0].Partitions[0].ErrorCode)
		}
	}
	follow(2, 1)
	follow(3, 3)
	follow(4, 3)

	for _, c := range []struct {
		v      int16
		offset int64
		rack   string
		want   int32
	}{
		{12, 0, "r2", 3},  // both hold offset 0: 3 has the larger log end
		{12, 2, "r2", 3},  // only 3 holds offset 2
		{12, 0, "r1", -1}, // the leader's rack
		{12, 0, "r9", -1}, // no replica there
		{12, 0, "", -1},   // no rack
		{10, 0, "r2", -1}, // before KIP-392
	} {
		got, n := h.preferredOf(c.v, c.offset, c.rack)
		if got != c.want {
			t.Errorf("v%d offset %d rack %q: preferred %d, want %d", c.v, c.offset, c.rack, got, c.want)
		}
		if got >= 0 && n != 0 {
			t.Errorf("v%d offset %d rack %q: %d record bytes with a preferred replica", c.v, c.offset, c.rack, n)
		}
	}

	// Follower 3 leaves the ISR: 2 is the one left in r2.
	c := metadatacache.NewPartitionChangeRecord()
	c.TopicID, c.PartitionID, c.Isr = topicID("t"), 0, []int32{1, 2, 4}
	h.apply(c)
	if got, _ := h.preferredOf(12, 0, "r2"); got != 2 {
		t.Errorf("preferred %d with 3 out of the ISR, want 2", got)
	}
	// A fenced broker has no endpoint.
	f := metadatacache.NewFenceBrokerRecord()
	f.ID, f.Epoch = 2, 12
	h.apply(f)
	if got, _ := h.preferredOf(12, 0, "r2"); got != -1 {
		t.Errorf("preferred %d with 2 fenced, want none", got)
	}
}

// Without replica.selector.class no replica is named; a follower serves
// consumers up to its high watermark.
func TestPreferredReadReplicaOff(t *testing.T) {
	h := newHarness(t)
	r2 := "r2"
	h.registerRacked(map[int32]*string{1: &r2, 2: &r2})
	h.createTopic("t", 1, []int32{1, 2}, 1, nil, nil)
	h.produce("t", 0, batch(3, "a"))
	freq := fetchReq(12, 0, 1, 1<<20, fetchPartSpec{topic: "t", offset: 3, epoch: 0})
	freq.ReplicaID = 2
	h.fetch(freq)
	if got, n := h.preferredOf(12, 0, "r2"); got != -1 || n == 0 {
		t.Fatalf("preferred %d, %d record bytes; want none and the records", got, n)
	}
}
