package sharecoord

import (
	"context"
	"encoding/hex"
	"reflect"
	"testing"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// TestLoadKafkaRecords loads a partition holding Kafka's own bytes (the
// golden records), a record of an unknown type, a corrupt value and a
// control marker: the unknown and corrupt ones are skipped, and the state
// is the snapshot with the update merged in.
func TestLoadKafkaRecords(t *testing.T) {
	h := newHarness(t, 1, Config{})
	tp := coordinator.TopicPartition{Topic: TopicName, Partition: 0}
	hx := func(s string) []byte { b, _ := hex.DecodeString(s); return b }
	recs := []coordinator.Record{
		{Key: hx(goldenSnapKey), Value: hx(goldenSnapVal)},
		{Key: hx("0007000000"), Value: hx("0000")},
		{Key: hx(goldenUpdKey), Value: hx("00ff")},
		{Key: hx(goldenUpdKey), Value: encodeUpdateValue(updateValue{snapshotEpoch: 1, leaderEpoch: 4, startOffset: -1,
			deliveryCompleteCount: 8, batches: []stateBatch{{first: 105, last: 120, state: 0, count: 2}}})},
	}
	if _, err := h.log.Append(tp, 0, coordinator.Batch{ProducerID: coordinator.NoProducer, Records: recs}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.log.Append(tp, 0, coordinator.Batch{ProducerID: 5, Marker: &coordinator.Marker{Commit: true}}); err != nil {
		t.Fatal(err)
	}
	h.crash()
	var got *entry
	if err := h.c.rt.Run(context.Background(), 0, func(s *shard) error {
		if len(s.states) != 1 {
			t.Errorf("%d states", len(s.states))
		}
		got = s.states[goldenKey]
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := &entry{state: snapshotValue{snapshotEpoch: 1, stateEpoch: 2, leaderEpoch: 4, startOffset: 100, deliveryCompleteCount: 8,
		createMs: 1700000000000, writeMs: 1700000000001,
		batches: []stateBatch{{first: 100, last: 104, state: 2, count: 1}, {first: 105, last: 120, state: 0, count: 2}}},
		leaderEpoch: 4, stateEpoch: 2, hasStateEpoch: true, updates: 0, hasUpdates: true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", got, want)
	}
}

// TestRequestTimeoutIsCoordinatorNotAvailable: an operation whose record
// does not commit within share.coordinator.write.timeout.ms answers
// COORDINATOR_NOT_AVAILABLE, as Kafka's runtime does.
func TestRequestTimeoutIsCoordinatorNotAvailable(t *testing.T) {
	h := newHarness(t, 1, Config{})
	h.log.SetAutoCommit(false) // writes never commit: the operation times out
	r := &runner{t: t, h: h}
	h.c.cfg.WriteTimeout = 50e6
	got := r.run("init tp=foo-0 state-epoch=0 start=0")
	if want := "foo-0: COORDINATOR_NOT_AVAILABLE (Unable to initialize share group state: The coordinator is not available.)"; len(got) != 1 || got[0] != want {
		t.Fatalf("got %q", got)
	}
}
