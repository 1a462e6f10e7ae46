package group

import (
	"encoding/hex"
	"testing"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// TestMetadataHashGolden: the topic and group hashes of KIP-1101 equal what
// Apache Kafka 4.4's Utils.computeTopicHash and computeGroupHash return for
// the same topics (computed with the 4.4.0 jars: topic "orders" with id
// 0102..10, three partitions whose replicas' racks are [r2 r1], [r1] and
// none; "payments" with id a0..af, one partition without racks).
func TestMetadataHashGolden(t *testing.T) {
	cache := metadatacache.NewCache(metadatacache.Config{})
	orders := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	payments := [16]byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab, 0xac, 0xad, 0xae, 0xaf}
	broker := func(id int32, rack *string) *metadatacache.RegisterBrokerRecord {
		r := metadatacache.NewRegisterBrokerRecord()
		r.BrokerID, r.Rack = id, rack
		return r
	}
	r1, r2 := "r1", "r2"
	withReplicas := func(p *metadatacache.PartitionRecord, replicas ...int32) *metadatacache.PartitionRecord {
		p.Replicas, p.Isr = replicas, replicas
		return p
	}
	recs := []metadatacache.Record{
		broker(1, &r1), broker(2, &r2), broker(3, nil),
		&metadatacache.TopicRecord{Name: "orders", TopicID: orders},
		withReplicas(part(orders, 0), 2, 1, 3), withReplicas(part(orders, 1), 1), withReplicas(part(orders, 2), 3),
		&metadatacache.TopicRecord{Name: "payments", TopicID: payments},
		withReplicas(part(payments, 0), 3),
	}
	if err := cache.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs) - 1), Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	img := cache.Image()
	for _, c := range []struct {
		topic string
		want  int64
	}{{"orders", 3456951593715312285}, {"payments", -1664718573607810408}, {"missing", 0}} {
		if got := topicHash(img, c.topic); got != c.want {
			t.Errorf("topicHash(%s) = %d, want %d", c.topic, got, c.want)
		}
	}
	if got := groupMetadataHash(img, []string{"payments", "orders", "missing"}); got != 4038627191610004684 {
		t.Errorf("groupMetadataHash = %d, want 4038627191610004684", got)
	}
	if got := groupMetadataHash(img, []string{"missing"}); got != 0 {
		t.Errorf("groupMetadataHash of no existing topic = %d, want 0", got)
	}
}

// TestConsumerGroupMetadataValueBytes: ConsumerGroupMetadataValue as
// Kafka 4.4's generated write() lays it out: version 0, the epoch, and the
// metadata hash as tagged field 0 only when it is not 0.
func TestConsumerGroupMetadataValueBytes(t *testing.T) {
	for _, c := range []struct {
		hash int64
		want string
	}{
		{0, "0000" + "00000004" + "00"},
		{-2, "0000" + "00000004" + "01" + "00" + "08" + "fffffffffffffffe"},
	} {
		r := consumerGroupMetadataRecord("g", 4, c.hash)
		if got := hex.EncodeToString(r.Value); got != c.want {
			t.Errorf("hash %d: value %s, want %s", c.hash, got, c.want)
		}
		epoch, hash, ok := readEpochTag0Long(r.Value)
		if !ok || epoch != 4 || hash != c.hash {
			t.Errorf("hash %d read back as epoch %d hash %d ok %v", c.hash, epoch, hash, ok)
		}
	}
}
