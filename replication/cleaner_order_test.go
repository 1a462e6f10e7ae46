package replication

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// Issue 14: the log cleaner held storage.Manager.mu and a Log.mu while it
// called a high watermark callback that took ReplicaManager.mu, while
// applying a metadata image takes ReplicaManager.mu, then a Partition.mu,
// then Manager.mu (creating and deleting logs): an AB/BA that could
// deadlock the broker. The log now owns its high watermark
// (storage.Log.UpdateHighWatermark, HighWatermark), so the cleaner never
// calls up. This runs both paths at once on one real storage.Manager — a
// compacted partition cleaned while it is produced to and while images
// create and delete partitions and move its leader epoch — with the
// Manager's maintenance and the high watermark checkpoint besides. Under
// lockrank (go test -race, -tags invariants) any lock taken out of order
// on these paths panics, whether or not the schedule would have
// deadlocked, so bringing a call up from the cleaner back fails here.
func TestCleanerAndImagesLockOrder(t *testing.T) {
	if !lockrank.Enabled {
		t.Log("lockrank is off (no -race, no -tags invariants): this only checks the paths run concurrently")
	}
	mgr, err := storage.OpenManager(storage.ManagerOptions{
		FS: vfs.NewMemFS(), LogDirs: []string{"/data"},
		// the test drives the cleaner and the maintenance itself
		Cleaner:              storage.CleanerOptions{Disabled: true},
		FlushCheckIntervalMs: 1, RecoveryCheckpointMs: 1, LogStartCheckpointMs: 1, RetentionCheckIntervalMs: 1,
		ProducerExpirationCheckIntervalMs: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, cache: metadatacache.NewCache(metadatacache.Config{ClusterID: "test"}),
		rm: New(Config{NodeID: 1, Logs: mgr, Now: time.Now})}
	h.cache.Subscribe(h.rm.OnImage)
	t.Cleanup(func() {
		h.rm.Close()
		if err := mgr.Close(); err != nil {
			t.Errorf("closing the log manager: %v", err)
		}
	})

	h.createTopic("compacted", 1, []int32{1}, 1, nil, map[string]string{
		"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01",
	})

	var (
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		cleaned  atomic.Int64
		produced atomic.Int64
		errs     = make(chan error, 16)
	)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	run := func(name string, fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := fn(); err != nil {
					report(fmt.Errorf("%s: %w", name, err))
					return
				}
			}
		}()
	}
	// The cleaner thread: Manager.mu -> cleaner.mu -> Log.mu, reading the
	// log's own high watermark; then the cleaning and its checkpoint.
	run("cleaner", func() error {
		ok, err := mgr.Clean()
		if ok {
			cleaned.Add(1)
		}
		return err
	})
	// Producers move the high watermark: Partition.mu -> stateMu -> Log.mu.
	run("producer", func() error {
		// the same ten keys over and over, so the cleaner has work
		if r := h.produce("compacted", 0, batch(10, "same")); r.ErrorCode != 0 {
			return fmt.Errorf("produce: error %d", r.ErrorCode)
		}
		produced.Add(1)
		return nil
	})
	// The Manager's maintenance and metrics, and the high watermark
	// checkpoint (ReplicaManager.mu, Partition.mu, Manager.mu in turn).
	run("maintenance", func() error {
		if err := mgr.Maintain(); err != nil {
			return err
		}
		mgr.Uncleanable()
		return h.rm.CheckpointHighWatermarks()
	})

	// Images, on this goroutine: ReplicaManager.mu -> Partition.mu ->
	// Manager.mu (GetOrCreateLog, DeleteLog) -> Log.mu, until the cleaner
	// has cleaned a few times while they were being applied.
	deadline := time.Now().Add(60 * time.Second)
	i := 0
	for ; i < 20 || cleaned.Load() < 3; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d images: %d cleanings, %d produced", i, cleaned.Load(), produced.Load())
		}
		name := fmt.Sprintf("t%d", i)
		h.createTopic(name, 2, []int32{1}, 1, nil, nil)
		if i > 0 {
			h.deleteTopic(fmt.Sprintf("t%d", i-1))
		}
		// a new leader epoch for the compacted partition (same leader):
		// AssignEpochStartOffset under Partition.mu
		h.changeLeader("compacted", 0, 1)
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if cleaned.Load() < 3 || produced.Load() == 0 {
		t.Fatalf("%d cleanings, %d produce batches", cleaned.Load(), produced.Load())
	}
	l, ok := mgr.Log(storage.TopicPartition{Topic: "compacted", Partition: 0})
	if !ok || l.FirstDirtyOffset() <= 0 || l.HighWatermark() <= 0 {
		t.Fatalf("compacted log: ok %v, first dirty offset %d, high watermark %d", ok, l.FirstDirtyOffset(), l.HighWatermark())
	}
	if _, ok := mgr.Log(storage.TopicPartition{Topic: fmt.Sprintf("t%d", i-2), Partition: 0}); ok {
		t.Fatalf("the log of deleted topic t%d is still there", i-2)
	}
	t.Logf("%d images, %d cleanings, %d produce batches", i, cleaned.Load(), produced.Load())
}
