package controller

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

// snapshot writes a raft snapshot of the controller's image.
func (e *testEnv) snapshot() raft.OffsetAndEpoch {
	e.t.Helper()
	img := e.c.Image()
	id, err := e.node.CreateSnapshot(raft.SnapshotImage{EndOffset: img.Offset + 1, Epoch: img.Epoch,
		LastContainedLogTimestamp: img.AppendTimeMs, Records: func() [][]byte {
			var out [][]byte
			for _, r := range img.Records() {
				out = append(out, metadatacache.EncodeRecord(r))
			}
			return out
		}})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

// TestRestartFromSnapshot: after the log before a snapshot is deleted, a
// restarted controller rebuilds its state and image from the snapshot
// (HandleSnapshot) and the batches after it.
func TestRestartFromSnapshot(t *testing.T) {
	e := newTestEnv(t, nil)
	e.node.SetSnapshotConfig(raft.SnapshotConfig{MaxBytesBetweenSnapshots: 1 << 40, RetentionBytes: 1, RetentionMs: -1})
	epoch := e.addBroker(1)
	rt := e.createTopic("t", 2, 1, "retention.ms", "5")
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = 1, epoch
	first := e.do(req).(*kmsg.AllocateProducerIDsResponse).ProducerIDStart
	e.snapshot()
	e.c.writeNoOp()
	s2 := e.snapshot()
	if st := e.node.Status(); st.LogStartOffset != s2.Offset {
		t.Fatalf("log start %d, want %d", st.LogStartOffset, s2.Offset)
	}
	ru := e.createTopic("u", 1, 1)
	e.stop()

	e.start(nil)
	img := e.c.Image()
	if topic := img.TopicByName("t"); topic == nil || topic.ID != rt.TopicID || len(topic.Partitions) != 2 || img.TopicConfig("t")["retention.ms"] != "5" {
		t.Fatalf("topic t after restart: %+v", topic)
	}
	if topic := img.TopicByName("u"); topic == nil || topic.ID != ru.TopicID {
		t.Fatalf("topic u after restart: %+v", topic)
	}
	var features, txn int
	var topics int
	e.c.view(func(s *state) { features, txn, topics = len(s.features), int(s.inTransaction), len(s.topics) })
	if features != 6 || txn != -1 || topics != 2 {
		t.Fatalf("state after restart: %d features, transaction at %d, %d topics", features, txn, topics)
	}
	if b := img.Broker(1); b == nil || b.Epoch != epoch {
		t.Fatalf("broker after restart %+v", b)
	}
	if hb := e.heartbeat(1, epoch, img.Offset, false, false); hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("heartbeat after restart %+v", hb)
	}
	if got := e.do(req).(*kmsg.AllocateProducerIDsResponse).ProducerIDStart; got != first+1000 {
		t.Fatalf("producer ids restarted at %d after %d", got, first)
	}
	// the state knows the names: creating t again fails
	if r := e.createTopic("t", 1, 1); r.ErrorCode == 0 {
		t.Fatal("topic t created twice after a restart from a snapshot")
	}
}
