package metadatacache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

// apply applies records as one batch at the next offsets and returns the new image.
func apply(t *testing.T, c *Cache, recs ...Record) *Image {
	t.Helper()
	base := c.Image().Offset + 1
	if err := c.Apply(Batch{BaseOffset: base, LastOffset: base + int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return c.Image()
}

// applyAt applies records as one batch starting at base.
func applyAt(t *testing.T, c *Cache, base int64, recs ...Record) {
	t.Helper()
	if err := c.Apply(Batch{BaseOffset: base, LastOffset: base + int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
		t.Fatalf("Apply: %v", err)
	}
}

func register(id int32, epoch int64) *RegisterBrokerRecord {
	r := NewRegisterBrokerRecord()
	r.BrokerID, r.BrokerEpoch, r.IncarnationID = id, epoch, uuidN(byte(id))
	r.EndPoints = []BrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: 0}}
	return r
}

func partition(topic [16]byte, id int32, replicas ...int32) *PartitionRecord {
	r := NewPartitionRecord()
	r.TopicID, r.PartitionID = topic, id
	r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = replicas, replicas, []int32{}, []int32{}
	r.Leader, r.LeaderEpoch, r.PartitionEpoch = replicas[0], 0, 0
	return r
}

func change(topic [16]byte, id int32) *PartitionChangeRecord {
	r := NewPartitionChangeRecord()
	r.TopicID, r.PartitionID = topic, id
	return r
}

func cfg(typ int8, name, key string, value *string) *ConfigRecord {
	return &ConfigRecord{ResourceType: typ, ResourceName: name, Name: key, Value: value}
}

var (
	fooID = uuidN(0x10)
	barID = uuidN(0x40)
)

func bootstrap(t *testing.T) *Cache {
	c := NewCache(Config{ClusterID: "cluster"})
	apply(t, c,
		&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 25},
		register(1, 10), register(2, 20),
		&UnfenceBrokerRecord{ID: 1, Epoch: 10},
		&TopicRecord{Name: "foo", TopicID: fooID},
		partition(fooID, 0, 1, 2), partition(fooID, 1, 2, 1),
		&TopicRecord{Name: "bar", TopicID: barID},
		partition(barID, 0, 1),
		cfg(ConfigResourceTopic, "foo", "retention.ms", strp("1000")),
		cfg(ConfigResourceBroker, "", "log.retention.hours", strp("1")),
		cfg(ConfigResourceBroker, "1", "log.retention.hours", strp("2")),
	)
	return c
}

func TestReplayBasics(t *testing.T) {
	c := bootstrap(t)
	img := c.Image()
	if img.Offset != 11 || img.Epoch != 1 || img.ClusterID != "cluster" || img.MetadataVersion() != 25 {
		t.Fatalf("offset/epoch/cluster/mv: %d %d %q %d", img.Offset, img.Epoch, img.ClusterID, img.MetadataVersion())
	}
	if got := img.TopicNames(); !slices.Equal(got, []string{"bar", "foo"}) {
		t.Fatalf("TopicNames %v", got)
	}
	foo := img.TopicByName("foo")
	if foo == nil || img.TopicByID(fooID) != foo || len(foo.Partitions) != 2 {
		t.Fatalf("foo: %+v", foo)
	}
	p := foo.Partition(1)
	if p.Leader != 2 || !slices.Equal(p.Replicas, []int32{2, 1}) || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
		t.Fatalf("foo-1: %+v", p)
	}
	// No directories in the record: MIGRATING for every replica.
	if len(p.Directories) != 2 || p.Directories[0] != ([16]byte{}) {
		t.Fatalf("directories %v", p.Directories)
	}
	if b := img.Broker(1); b == nil || b.Fenced || b.Epoch != 10 {
		t.Fatalf("broker 1: %+v", b)
	}
	if b := img.Broker(2); b == nil || !b.Fenced {
		t.Fatalf("broker 2 must be fenced (default): %+v", b)
	}
	alive := img.AliveBrokers()
	if len(alive) != 1 || alive[0].ID != 1 {
		t.Fatalf("alive %v", alive)
	}
	if ep, ok := img.Broker(1).Listener("PLAINTEXT"); !ok || ep.Port != 9092 {
		t.Fatal("listener")
	}
	if got := img.TopicConfig("foo"); !reflect.DeepEqual(got, map[string]string{"retention.ms": "1000"}) {
		t.Fatalf("topic config %v", got)
	}
	if got := img.BrokerConfig(1)["log.retention.hours"]; got != "2" {
		t.Fatalf("broker config %q", got)
	}
	if got := img.DefaultBrokerConfig()["log.retention.hours"]; got != "1" {
		t.Fatalf("default broker config %q", got)
	}
	if img.ProducerIDs().NextProducerID != -1 {
		t.Fatal("producer ids before any block")
	}
}

func TestPartitionChangeMerge(t *testing.T) {
	c := bootstrap(t)

	// ISR-only change: partition epoch bumps, leader epoch does not.
	ch := change(fooID, 0)
	ch.Isr = []int32{1}
	p := apply(t, c, ch).TopicByID(fooID).Partition(0)
	if p.LeaderEpoch != 0 || p.PartitionEpoch != 1 || !slices.Equal(p.Isr, []int32{1}) || p.Leader != 1 {
		t.Fatalf("after ISR change: %+v", p)
	}

	// Leader change: both bump.
	ch = change(fooID, 0)
	ch.Leader = 2
	p = apply(t, c, ch).TopicByID(fooID).Partition(0)
	if p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 2 || !slices.Equal(p.Isr, []int32{1}) {
		t.Fatalf("after leader change: %+v", p)
	}

	// No leader (-1) is a leader change too.
	ch = change(fooID, 0)
	ch.Leader = NoLeader
	ch.LeaderRecoveryState = LeaderRecovering
	p = apply(t, c, ch).TopicByID(fooID).Partition(0)
	if p.Leader != -1 || p.LeaderEpoch != 2 || p.PartitionEpoch != 3 || p.LeaderRecoveryState != LeaderRecovering {
		t.Fatalf("after no leader: %+v", p)
	}

	// An empty change still bumps the partition epoch (PartitionRegistration.merge).
	p = apply(t, c, change(fooID, 0)).TopicByID(fooID).Partition(0)
	if p.PartitionEpoch != 4 || p.LeaderEpoch != 2 {
		t.Fatalf("after empty change: %+v", p)
	}

	// Replicas change with a reassignment and ELR.
	ch = change(fooID, 0)
	ch.Replicas, ch.AddingReplicas, ch.RemovingReplicas = []int32{1, 2, 3}, []int32{3}, []int32{}
	ch.EligibleLeaderReplicas = []int32{2}
	p = apply(t, c, ch).TopicByID(fooID).Partition(0)
	if !slices.Equal(p.Replicas, []int32{1, 2, 3}) || !slices.Equal(p.AddingReplicas, []int32{3}) ||
		!slices.Equal(p.Elr, []int32{2}) || len(p.Directories) != 3 {
		t.Fatalf("after reassignment: %+v", p)
	}
}

func TestReplayErrorsSkipRecordButPublish(t *testing.T) {
	c := bootstrap(t)
	bad := change(uuidN(0x99), 0)
	bad.Leader = 1
	badEpoch := &FenceBrokerRecord{ID: 1, Epoch: 11}
	ok := cfg(ConfigResourceTopic, "bar", "cleanup.policy", strp("compact"))
	err := c.Apply(Batch{BaseOffset: 12, LastOffset: 14, Epoch: 2, Records: []Record{bad, badEpoch, ok}})
	if !errors.Is(err, ErrReplay) {
		t.Fatalf("err %v", err)
	}
	var re *ReplayError
	if !errors.As(err, &re) || re.Offset != 12 {
		t.Fatalf("ReplayError %+v", re)
	}
	img := c.Image()
	if img.Offset != 14 || img.TopicConfig("bar")["cleanup.policy"] != "compact" || img.Broker(1).Fenced {
		t.Fatalf("image after skipped records: offset %d", img.Offset)
	}
	// Broker change with an unknown fenced value is rejected.
	err = c.Apply(Batch{BaseOffset: 15, LastOffset: 15, Records: []Record{&BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10, Fenced: 5}}})
	if !errors.Is(err, ErrReplay) {
		t.Fatal(err)
	}
	// Stale batches are refused without publishing.
	if err := c.Apply(Batch{BaseOffset: 15, LastOffset: 15}); !errors.Is(err, ErrOffsetRegression) {
		t.Fatal(err)
	}
}

func TestRemoveTopicAndConfigs(t *testing.T) {
	c := bootstrap(t)
	img := apply(t, c, &RemoveTopicRecord{TopicID: fooID})
	if img.TopicByName("foo") != nil || img.TopicByID(fooID) != nil || img.NumTopics() != 1 {
		t.Fatal("foo still there")
	}
	if img.TopicConfig("foo") != nil {
		t.Fatal("foo configs still there")
	}
	for _, r := range img.ConfigResources() {
		if r.Type == ConfigResourceTopic && r.Name == "foo" {
			t.Fatal("foo resource still listed")
		}
	}
	// Recreate with a new id in one batch with a config.
	newID := uuidN(0x70)
	img = apply(t, c, &TopicRecord{Name: "foo", TopicID: newID}, partition(newID, 0, 2),
		cfg(ConfigResourceTopic, "foo", "segment.bytes", strp("1024")))
	if img.TopicByName("foo").ID != newID || img.TopicConfig("foo")["retention.ms"] != "" {
		t.Fatal("recreated topic")
	}
	// Config delete removes the key and the empty resource.
	img = apply(t, c, cfg(ConfigResourceTopic, "foo", "segment.bytes", nil))
	if _, ok := img.Config(ConfigResource{ConfigResourceTopic, "foo"}, "segment.bytes"); ok {
		t.Fatal("config not deleted")
	}
	if img.TopicConfig("foo") != nil {
		t.Fatal("empty resource kept")
	}
	// Removing an unknown topic is a replay error.
	if err := c.Apply(Batch{BaseOffset: 100, LastOffset: 100, Records: []Record{&RemoveTopicRecord{TopicID: fooID}}}); !errors.Is(err, ErrReplay) {
		t.Fatal(err)
	}
}

func TestBrokerLifecycle(t *testing.T) {
	c := bootstrap(t)
	img := apply(t, c, &FenceBrokerRecord{ID: 1, Epoch: 10})
	if !img.Broker(1).Fenced {
		t.Fatal("not fenced")
	}
	img = apply(t, c, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10, Fenced: FencingChangeUnfence,
		InControlledShutdown: ControlledShutdownChangeIn, LogDirs: [][16]byte{uuidN(9), uuidN(1)}})
	b := img.Broker(1)
	if b.Fenced || !b.InControlledShutdown || !slices.Equal(b.Directories, [][16]byte{uuidN(1), uuidN(9)}) {
		t.Fatalf("after change: %+v", b)
	}
	// A no-op change keeps the same registration value.
	img2 := apply(t, c, &BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10})
	if img2.Broker(1) != b {
		t.Fatal("no-op change replaced the broker")
	}
	// Re-registration replaces everything (new epoch, fenced by default).
	img = apply(t, c, register(1, 30))
	if b := img.Broker(1); b.Epoch != 30 || !b.Fenced || b.InControlledShutdown {
		t.Fatalf("re-registered: %+v", b)
	}
	img = apply(t, c, &UnregisterBrokerRecord{BrokerID: 2, BrokerEpoch: 20})
	if img.Broker(2) != nil || len(img.Brokers()) != 1 {
		t.Fatal("unregister")
	}
	img = apply(t, c, &RegisterControllerRecord{ControllerID: 3000, IncarnationID: uuidN(5),
		EndPoints: []ControllerEndpoint{{Name: "CONTROLLER", Host: "h", Port: 9093}}})
	if ctl := img.Controller(3000); ctl == nil || ctl.Listeners[0].Name != "CONTROLLER" || len(img.Controllers()) != 1 {
		t.Fatal("controller")
	}
	if img = apply(t, c, &UnregisterControllerRecord{ControllerID: 3000}); img.Controller(3000) != nil {
		t.Fatal("controller not unregistered")
	}
}

func TestFeaturesQuotasProducerIDs(t *testing.T) {
	c := bootstrap(t)
	img := apply(t, c,
		&FeatureLevelRecord{Name: "kraft.version", FeatureLevel: 1},
		&FeatureLevelRecord{Name: "group.version", FeatureLevel: 1},
		&FeatureLevelRecord{Name: "group.version", FeatureLevel: 0},
		&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 10, NextProducerID: 1000},
		&ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "user", EntityName: strp("alice")}}, QuotaKey: "producer_byte_rate", Value: 100},
		&ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "user"}}, QuotaKey: "consumer_byte_rate", Value: 5},
		&ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "user"}}, QuotaKey: "consumer_byte_rate", Remove: true},
	)
	if l, ok := img.Feature("kraft.version"); !ok || l != 1 {
		t.Fatal("kraft.version")
	}
	if _, ok := img.Feature("group.version"); ok {
		t.Fatal("level 0 must remove the feature")
	}
	if p := img.ProducerIDs(); p != (ProducerIDs{1, 10, 1000}) {
		t.Fatalf("producer ids %+v", p)
	}
	q := img.ClientQuotas()
	if len(q) != 1 || q[0].Values["producer_byte_rate"] != 100 || *q[0].Entity[0].Name != "alice" {
		t.Fatalf("quotas %+v", q)
	}
}

// Readers of an old image never see later changes; unchanged topics and
// partitions are shared.
func TestCopyOnWrite(t *testing.T) {
	c := bootstrap(t)
	old := c.Image()
	oldFoo, oldBar := old.TopicByName("foo"), old.TopicByName("bar")
	oldP0 := *oldFoo.Partition(0)
	oldBroker := *old.Broker(1)
	oldCfg := old.TopicConfig("foo")

	ch := change(fooID, 0)
	ch.Leader = 2
	next := apply(t, c, ch, &FenceBrokerRecord{ID: 1, Epoch: 10},
		cfg(ConfigResourceTopic, "foo", "retention.ms", strp("5")),
		&FeatureLevelRecord{Name: "x", FeatureLevel: 1})

	if !reflect.DeepEqual(*old.TopicByName("foo").Partition(0), oldP0) || !reflect.DeepEqual(*old.Broker(1), oldBroker) ||
		!reflect.DeepEqual(old.TopicConfig("foo"), oldCfg) {
		t.Fatal("old image changed")
	}
	if _, ok := old.Feature("x"); ok {
		t.Fatal("old features changed")
	}
	if next.TopicByName("bar") != oldBar {
		t.Fatal("unchanged topic not shared")
	}
	if next.TopicByName("foo") == oldFoo || next.TopicByID(fooID) != next.TopicByName("foo") {
		t.Fatal("changed topic shared or maps inconsistent")
	}
	if next.TopicByName("foo").Partition(1) != oldFoo.Partition(1) {
		t.Fatal("unchanged partition not shared")
	}
	if next.TopicByName("foo").Partition(0).Leader != 2 {
		t.Fatal("change lost")
	}
}

func TestTransactions(t *testing.T) {
	c := bootstrap(t)
	newID := uuidN(0x80)
	// Records before Begin in the batch are published at the offset before Begin.
	var seen []int64
	c.Subscribe(func(old, new *Image) { seen = append(seen, new.Offset) })
	err := c.Apply(Batch{BaseOffset: 12, LastOffset: 15, Epoch: 2, Records: []Record{
		cfg(ConfigResourceTopic, "bar", "a", strp("1")),
		&BeginTransactionRecord{Name: strp("create baz")},
		&TopicRecord{Name: "baz", TopicID: newID},
		partition(newID, 0, 1),
	}})
	if err != nil {
		t.Fatal(err)
	}
	img := c.Image()
	if img.Offset != 12 || img.TopicConfig("bar")["a"] != "1" || img.TopicByName("baz") != nil {
		t.Fatalf("mid-transaction image offset %d", img.Offset)
	}
	// Waiting for an offset inside the transaction blocks until it ends.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.WaitForOffset(ctx, 15); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
	applyAt(t, c, 16, partition(newID, 1, 2), &EndTransactionRecord{}, &NoOpRecord{})
	img = c.Image()
	if img.Offset != 18 || img.TopicByName("baz") == nil || len(img.TopicByName("baz").Partitions) != 2 {
		t.Fatalf("after end: offset %d", img.Offset)
	}

	// Abort drops the transaction's records; the offset still advances.
	applyAt(t, c, 19, &BeginTransactionRecord{}, &RemoveTopicRecord{TopicID: newID})
	applyAt(t, c, 21, &AbortTransactionRecord{Reason: strp("failover")})
	img = c.Image()
	if img.Offset != 21 || img.TopicByName("baz") == nil {
		t.Fatalf("after abort: offset %d", img.Offset)
	}
	// The aborted transaction changed nothing: subscribers are not told.
	if !slices.Equal(seen, []int64{12, 18}) {
		t.Fatalf("published offsets %v", seen)
	}
	// Misplaced markers are replay errors.
	if err := c.Apply(Batch{BaseOffset: 22, LastOffset: 22, Records: []Record{&EndTransactionRecord{}}}); !errors.Is(err, ErrTransaction) {
		t.Fatal(err)
	}
}

func TestSubscribeAndWait(t *testing.T) {
	c := NewCache(Config{})
	var mu sync.Mutex
	var pairs [][2]int64
	c.Subscribe(func(old, new *Image) {
		mu.Lock()
		pairs = append(pairs, [2]int64{old.Offset, new.Offset})
		mu.Unlock()
	})
	done := make(chan error, 1)
	go func() { done <- c.WaitForOffset(context.Background(), 5) }()
	for i := int64(0); i < 6; i++ {
		if err := c.Apply(Batch{BaseOffset: i, LastOffset: i, Epoch: 1, Records: []Record{&NoOpRecord{}}}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitForOffset did not return")
	}
	if err := c.WaitForOffset(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, p := range pairs {
		if p != [2]int64{int64(i) - 1, int64(i)} {
			t.Fatalf("subscriber calls %v", pairs)
		}
	}
}

func TestZeroCache(t *testing.T) {
	var c Cache
	if c.Image() == nil || c.Image().Offset != -1 || !c.Image().IsEmpty() {
		t.Fatal("zero cache image")
	}
	apply(t, &c, &TopicRecord{Name: "t", TopicID: uuidN(1)})
	if c.Image().TopicByName("t") == nil {
		t.Fatal("zero cache apply")
	}
}

func encodeAll(rs []Record) []byte {
	var b []byte
	for _, r := range rs {
		b = AppendRecord(b, r)
	}
	return b
}

// Image.Records replayed from scratch (via the wire encoding) gives the
// same image, and LoadSnapshot replaces everything.
func TestRecordsSnapshotRoundTrip(t *testing.T) {
	c := bootstrap(t)
	ch := change(fooID, 1)
	ch.Leader, ch.EligibleLeaderReplicas = 1, []int32{2}
	apply(t, c, ch,
		&ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 10, NextProducerID: 2000},
		&RegisterControllerRecord{ControllerID: 3000, IncarnationID: uuidN(5)},
		&ClientQuotaRecord{Entity: []ClientQuotaEntityData{{EntityType: "client-id", EntityName: strp("c")}}, QuotaKey: "request_percentage", Value: 50},
		&BrokerRegistrationChangeRecord{BrokerID: 1, BrokerEpoch: 10, LogDirs: [][16]byte{uuidN(3)}},
	)
	img := c.Image()
	recs := img.Records()
	if _, ok := recs[0].(*FeatureLevelRecord); !ok || recs[0].(*FeatureLevelRecord).Name != MetadataVersionFeature {
		t.Fatalf("first record %T", recs[0])
	}
	// Decode every record from its encoding, as a snapshot reader would.
	var decoded []Record
	for _, r := range recs {
		d, err := DecodeRecord(EncodeRecord(r))
		if err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, d)
	}
	c2 := NewCache(Config{ClusterID: "cluster"})
	apply(t, c2, &TopicRecord{Name: "stale", TopicID: uuidN(0xaa)})
	if err := c2.LoadSnapshot(Batch{LastOffset: img.Offset, Epoch: img.Epoch, Records: decoded}); err != nil {
		t.Fatal(err)
	}
	img2 := c2.Image()
	if img2.TopicByName("stale") != nil {
		t.Fatal("snapshot did not replace the image")
	}
	if img2.Offset != img.Offset {
		t.Fatalf("offset %d", img2.Offset)
	}
	if !bytes.Equal(encodeAll(img2.Records()), encodeAll(recs)) {
		t.Fatal("snapshot round trip differs")
	}
	p := img2.TopicByName("foo").Partition(1)
	if p.LeaderEpoch != 1 || p.PartitionEpoch != 1 || !slices.Equal(p.Elr, []int32{2}) {
		t.Fatalf("partition after snapshot: %+v", p)
	}
	if !reflect.DeepEqual(img2.Broker(1), img.Broker(1)) || !reflect.DeepEqual(img2.ClientQuotas(), img.ClientQuotas()) {
		t.Fatal("broker or quotas differ")
	}
	// Apply continues after the snapshot.
	if err := c2.Apply(Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + 1, Records: []Record{&NoOpRecord{}}}); err != nil {
		t.Fatal(err)
	}
}

// Readers run concurrently with Apply (checked by -race).
func TestConcurrentReaders(t *testing.T) {
	c := bootstrap(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				img := c.Image()
				for _, tp := range img.Topics() {
					for _, p := range tp.SortedPartitions() {
						_ = p.Leader + int32(len(p.Isr))
					}
				}
				_ = img.TopicConfig("foo")
				_ = img.AliveBrokers()
			}
		}()
	}
	for i := 0; i < 200; i++ {
		ch := change(fooID, int32(i%2))
		ch.Leader = int32(1 + i%2)
		apply(t, c, ch, cfg(ConfigResourceTopic, "foo", "k", strp("v")))
	}
	close(stop)
	wg.Wait()
}

// Image.Records picks record versions from the image's metadata.version.
func TestRecordsVersionsFollowMetadataVersion(t *testing.T) {
	for _, c := range []struct{ mv, broker, part int16 }{{7, 1, 0}, {8, 2, 0}, {17, 3, 1}, {23, 3, 2}, {29, 3, 2}, {30, 4, 2}, {33, 4, 2}} {
		cache := NewCache(Config{})
		apply(t, cache, &FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: c.mv}, register(1, 1),
			&TopicRecord{Name: "t", TopicID: fooID}, partition(fooID, 0, 1))
		for _, r := range cache.Image().Records() {
			var want int16 = -1
			switch r.(type) {
			case *RegisterBrokerRecord:
				want = c.broker
			case *PartitionRecord:
				want = c.part
			}
			if want >= 0 && r.Version() != want {
				t.Errorf("mv %d: %T v%d, want v%d", c.mv, r, r.Version(), want)
			}
			if _, err := DecodeRecord(EncodeRecord(r)); err != nil {
				t.Errorf("mv %d: %T: %v", c.mv, r, err)
			}
		}
	}
}

func TestApplyDeferredPublishesOnce(t *testing.T) {
	c := NewCache(Config{ClusterID: "c"})
	published := 0
	c.Subscribe(func(old, new *Image) { published++ })
	for i := int64(0); i < 100; i++ {
		tr := NewTopicRecord()
		tr.Name = fmt.Sprintf("t%d", i)
		tr.TopicID = [16]byte{byte(i + 1), 1}
		b := Batch{BaseOffset: i, LastOffset: i, Epoch: 1, Records: []Record{tr}}
		if err := c.ApplyDeferred(b); err != nil {
			t.Fatal(err)
		}
	}
	if published != 0 || c.Image().Offset != -1 {
		t.Fatalf("deferred batches published: %d, offset %d", published, c.Image().Offset)
	}
	c.Flush()
	if published != 1 || c.Image().Offset != 99 || c.Image().NumTopics() != 100 {
		t.Fatalf("after Flush: published %d, offset %d, topics %d", published, c.Image().Offset, c.Image().NumTopics())
	}
	c.Flush() // nothing pending
	tr := NewTopicRecord()
	tr.Name, tr.TopicID = "last", [16]byte{200}
	if err := c.ApplyDeferred(Batch{BaseOffset: 100, LastOffset: 100, Epoch: 1, Records: []Record{tr}}); err != nil {
		t.Fatal(err)
	}
	tr2 := NewTopicRecord()
	tr2.Name, tr2.TopicID = "after", [16]byte{201}
	if err := c.Apply(Batch{BaseOffset: 101, LastOffset: 101, Epoch: 1, Records: []Record{tr2}}); err != nil {
		t.Fatal(err)
	}
	if published != 2 || c.Image().Offset != 101 || c.Image().TopicByName("last") == nil || c.Image().TopicByName("after") == nil {
		t.Fatalf("Apply after deferred: published %d, offset %d", published, c.Image().Offset)
	}
}

func TestApplyDeferredThenTransaction(t *testing.T) {
	c := NewCache(Config{ClusterID: "c"})
	tr := NewTopicRecord()
	tr.Name, tr.TopicID = "before", [16]byte{1}
	if err := c.ApplyDeferred(Batch{BaseOffset: 0, LastOffset: 0, Epoch: 1, Records: []Record{tr}}); err != nil {
		t.Fatal(err)
	}
	tr2 := NewTopicRecord()
	tr2.Name, tr2.TopicID = "inside", [16]byte{2}
	if err := c.ApplyDeferred(Batch{BaseOffset: 1, LastOffset: 2, Epoch: 1, Records: []Record{NewBeginTransactionRecord(), tr2}}); err != nil {
		t.Fatal(err)
	}
	// The deferred batch before the transaction is published at its own offset.
	if img := c.Image(); img.Offset != 0 || img.TopicByName("before") == nil || img.TopicByName("inside") != nil {
		t.Fatalf("image %d before=%v inside=%v", img.Offset, img.TopicByName("before") != nil, img.TopicByName("inside") != nil)
	}
	c.Flush() // the transaction is open: nothing to publish
	if c.Image().Offset != 0 {
		t.Fatal("Flush published an open transaction")
	}
	if err := c.Apply(Batch{BaseOffset: 3, LastOffset: 3, Epoch: 1, Records: []Record{NewEndTransactionRecord()}}); err != nil {
		t.Fatal(err)
	}
	if img := c.Image(); img.Offset != 3 || img.TopicByName("inside") == nil {
		t.Fatalf("after End: offset %d", img.Offset)
	}
}

// Subscribers run after the cache released its lock, so they may do I/O and
// take their own locks without ordering them after the cache's, and see
// publications in order even when one of them is slow.
func TestSubscribersRunOutsideTheCacheLock(t *testing.T) {
	c := NewCache(Config{})
	var offsets []int64
	c.Subscribe(func(old, img *Image) {
		if !c.mu.TryLock() {
			t.Errorf("subscriber for offset %d runs under the cache lock", img.Offset)
			return
		}
		c.mu.Unlock()
		if old.Offset >= img.Offset {
			t.Errorf("old image at %d, new at %d", old.Offset, img.Offset)
		}
		offsets = append(offsets, img.Offset)
	})
	for i := int64(0); i < 3; i++ {
		if err := c.Apply(Batch{BaseOffset: i, LastOffset: i, Epoch: 1,
			Records: []Record{&TopicRecord{Name: fmt.Sprintf("t%d", i), TopicID: [16]byte{7, byte(i)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if fmt.Sprint(offsets) != "[0 1 2]" {
		t.Fatalf("delivered %v", offsets)
	}
}

func TestChanges(t *testing.T) {
	c := bootstrap(t)
	var got []*Image
	c.Subscribe(func(old, new *Image) { got = append(got, new) })
	base := c.Image().Offset

	// NoOpRecords advance the offset and wake waiters but reach no subscriber.
	applyAt(t, c, base+1, &NoOpRecord{}, &NoOpRecord{})
	if err := c.WaitForOffset(context.Background(), base+2); err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 || !c.Image().Changes().Empty() {
		t.Fatalf("a NoOp batch was delivered: %d", len(got))
	}

	newID := uuidN(0x81)
	leader := change(fooID, 1)
	leader.Leader = 1
	applyAt(t, c, base+3,
		&TopicRecord{Name: "new", TopicID: newID}, partition(newID, 0, 1),
		leader,
		cfg(ConfigResourceBroker, "", "log.retention.ms", strp("1000")),
	)
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	ch := got[0].Changes()
	if ch.Full || !ch.Configs || ch.Brokers || ch.Features || len(ch.Topics) != 2 {
		t.Fatalf("changes %+v", ch)
	}
	if tc := ch.Topics[newID]; tc == nil || !tc.Created || tc.Removed || len(tc.Partitions) != 1 {
		t.Fatalf("new topic changes %+v", tc)
	}
	if tc := ch.Topics[fooID]; tc == nil || tc.Created || tc.Removed || len(tc.Partitions) != 1 {
		t.Fatalf("foo changes %+v", tc)
	} else if _, ok := tc.Partitions[1]; !ok {
		t.Fatalf("foo changes %+v", tc)
	}

	// Each image's changes are its own, not its base's.
	applyAt(t, c, base+7, &RemoveTopicRecord{TopicID: newID})
	ch = got[1].Changes()
	if len(ch.Topics) != 1 || !ch.Topics[newID].Removed || ch.Topics[newID].Created || !ch.Configs {
		t.Fatalf("changes after remove %+v", ch)
	}
	if err := c.LoadSnapshot(Batch{LastOffset: base + 10, Records: []Record{&NoOpRecord{}}}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || !got[2].Changes().Full {
		t.Fatalf("snapshot load: %d deliveries", len(got))
	}
}

// GROUP config resources (type 32) are kept like any other, survive a
// topic removal, and GroupConfigs returns only that group's overrides.
func TestGroupConfigs(t *testing.T) {
	c := bootstrap(t)
	img := apply(t, c, cfg(ConfigResourceGroup, "g1", "share.auto.offset.reset", strp("earliest")),
		cfg(ConfigResourceGroup, "g1", "share.delivery.count.limit", strp("3")),
		cfg(ConfigResourceGroup, "g2", "consumer.session.timeout.ms", strp("50000")),
		&RemoveTopicRecord{TopicID: fooID})
	if g := img.GroupConfigs("g1"); len(g) != 2 || g["share.auto.offset.reset"] != "earliest" || g["share.delivery.count.limit"] != "3" {
		t.Fatalf("g1 %v", g)
	}
	if img.GroupConfigs("g3") != nil || (*Image)(nil).GroupConfigs("g1") != nil {
		t.Fatal("unknown group has configs")
	}
	g := img.GroupConfigs("g1")
	g["x"] = "y" // a copy
	img = apply(t, c, cfg(ConfigResourceGroup, "g1", "share.auto.offset.reset", nil), cfg(ConfigResourceGroup, "g2", "consumer.session.timeout.ms", nil))
	if g := img.GroupConfigs("g1"); len(g) != 1 || g["share.delivery.count.limit"] != "3" {
		t.Fatalf("g1 after delete %v", g)
	}
	if img.GroupConfigs("g2") != nil {
		t.Fatal("g2 kept")
	}
}
