package metadatacache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
)

// Batch is one committed batch of the metadata log.
type Batch struct {
	BaseOffset   int64
	LastOffset   int64
	Epoch        int32
	AppendTimeMs int64
	Records      []Record // Records[i] is at offset BaseOffset+i
}

// ErrOffsetRegression is returned by Apply for a batch that does not come
// after everything already applied.
var ErrOffsetRegression = errors.New("metadatacache: batch offset is not after the last applied offset")

// ErrTransaction is wrapped by the errors about misplaced transaction
// markers (Begin inside a transaction, End or Abort outside one).
var ErrTransaction = errors.New("metadatacache: invalid metadata transaction marker")

// Config configures a Cache.
type Config struct {
	ClusterID string      // copied into every Image
	Logger    *zap.Logger // nil: no logging
}

// Cache holds the current metadata Image and builds the next one from each
// committed batch (Kafka's MetadataLoader + MetadataBatchLoader). Readers
// call Image() at any time without locks; Apply, LoadSnapshot and the
// subscriber callbacks run one at a time.
//
// The zero Cache is usable and starts from an empty image.
type Cache struct {
	cur atomic.Pointer[Image]

	// notifyMu is a leaf. NewCache ranks the locks; a zero Cache's are
	// unranked, so not checked (tests only).
	notifyMu lockrank.Mutex
	notify   chan struct{} // closed and replaced on each publish

	// deliverMu is held while subscribers run, outside mu: whoever holds it
	// delivers the queued publications in order (deliverMu -> mu, never the
	// reverse), so subscribers never run under mu and never out of order.
	deliverMu lockrank.Mutex

	// mu serializes Apply, LoadSnapshot and Subscribe, and guards the fields below.
	mu struct {
		lockrank.Mutex
		subs       []func(old, new *Image)
		inTxn      bool
		preTxn     *Image   // the image before the open transaction
		pending    *builder // changes not yet published (an open transaction, or deferred)
		lastOffset int64    // last offset applied, published or pending
		started    bool
		// deferred is the position of the last batch applied with
		// ApplyDeferred and not yet published (deferredOK false: none).
		deferredOK                     bool
		deferredOffset, deferredTimeMs int64
		deferredEpoch                  int32
		// published holds the publications not yet delivered to subs.
		published []publication
	}
	clusterID string
	logger    *zap.Logger
}

// NewCache returns a Cache whose image is empty (offset -1).
func NewCache(cfg Config) *Cache {
	c := &Cache{clusterID: cfg.ClusterID, logger: cfg.Logger}
	c.deliverMu.SetRank(lockrank.CacheDeliver)
	c.mu.SetRank(lockrank.Cache)
	c.notifyMu.SetRank(lockrank.CacheNotify)
	c.cur.Store(EmptyImage(cfg.ClusterID))
	return c
}

// Image returns the current image. It never returns nil.
func (c *Cache) Image() *Image {
	if img := c.cur.Load(); img != nil {
		return img
	}
	return EmptyImage(c.clusterID)
}

// publication is one published image and the one it replaced.
type publication struct{ old, new *Image }

// Subscribe registers fn to be called after each publish that changed
// something (new.Changes() says what), in publish order, with the previous
// and the new image. fn runs on the goroutine calling
// Apply/LoadSnapshot/Flush, before that call returns, after the cache
// released its lock (so fn may do I/O and take its own locks without
// ordering them after the cache's), and must not call Apply, LoadSnapshot,
// Flush or Subscribe (it may call Image and WaitForOffset for offsets
// already published).
func (c *Cache) Subscribe(fn func(old, new *Image)) {
	c.mu.Lock()
	c.mu.subs = append(c.mu.subs, fn)
	c.mu.Unlock()
}

// WaitForOffset waits until the published image includes offset (its
// Offset is at least offset), or ctx ends.
func (c *Cache) WaitForOffset(ctx context.Context, offset int64) error {
	for {
		c.notifyMu.Lock()
		if c.notify == nil {
			c.notify = make(chan struct{})
		}
		ch := c.notify
		img := c.Image()
		c.notifyMu.Unlock()
		if img.Offset >= offset {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// publish stores img as current, wakes waiters and queues the publication
// for the subscribers, which deliver runs once c.mu is released. c.mu must
// be held.
func (c *Cache) publish(img *Image) {
	old := c.Image()
	c.notifyMu.Lock()
	c.cur.Store(img)
	if c.notify != nil {
		close(c.notify)
		c.notify = nil
	}
	c.notifyMu.Unlock()
	// An image that changes nothing but its offset (the controller's
	// NoOpRecord batches) wakes WaitForOffset but is not handed to the
	// subscribers: there is nothing for them to do.
	if !img.changes.Empty() {
		c.mu.published = append(c.mu.published, publication{old: old, new: img})
	}
}

// deliver calls the subscribers for every queued publication, in order.
// Called without c.mu, after every method that may publish.
func (c *Cache) deliver() {
	c.deliverMu.Lock()
	defer c.deliverMu.Unlock()
	for {
		c.mu.Lock()
		q, subs := c.mu.published, c.mu.subs
		c.mu.published = nil
		c.mu.Unlock()
		if len(q) == 0 {
			return
		}
		for _, p := range q {
			for _, fn := range subs {
				fn(p.old, p.new)
			}
		}
	}
}

func (c *Cache) log() *zap.Logger {
	if c.logger == nil {
		return zap.NewNop()
	}
	return c.logger
}

// Apply replays a committed batch and publishes the resulting image, with
// Offset = b.LastOffset and Epoch = b.Epoch.
//
// Records that cannot be replayed are skipped (as Kafka's loader does);
// Apply then still publishes and returns the joined *ReplayError values
// (errors.Is(err, ErrReplay)). Metadata transactions (KIP-868) are
// honoured: records after a BeginTransactionRecord are published only when
// the EndTransactionRecord is applied, possibly in a later batch, and are
// dropped by an AbortTransactionRecord; records before the Begin in the
// same batch are published first, at the offset before the Begin.
func (c *Cache) Apply(b Batch) error {
	return c.apply(b, true)
}

// ApplyDeferred replays a committed batch like Apply but does not publish
// the result: it stays pending until a later Apply or Flush publishes it
// together with whatever followed. A loader catching up on a long log uses
// it so each image is built once per catch-up rather than once per batch,
// as Kafka's MetadataLoader publishes only when it has caught up.
func (c *Cache) ApplyDeferred(b Batch) error {
	return c.apply(b, false)
}

// Flush publishes the changes pending from ApplyDeferred, unless a metadata
// transaction is still open (its end publishes them).
func (c *Cache) Flush() {
	defer c.deliver()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.inTxn || c.mu.pending == nil || !c.mu.deferredOK {
		return
	}
	c.publishPendingLocked()
}

// publishPendingLocked publishes c.mu.pending at the deferred position.
func (c *Cache) publishPendingLocked() {
	img := c.mu.pending.build()
	img.Offset, img.Epoch, img.AppendTimeMs = c.mu.deferredOffset, c.mu.deferredEpoch, c.mu.deferredTimeMs
	c.mu.pending, c.mu.deferredOK = nil, false
	c.publish(img)
}

func (c *Cache) apply(b Batch, publish bool) error {
	defer c.deliver()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.mu.started {
		c.mu.lastOffset = c.Image().Offset
		c.mu.started = true
	}
	if b.LastOffset <= c.mu.lastOffset || b.BaseOffset > b.LastOffset {
		return fmt.Errorf("%w: batch [%d, %d], last applied %d", ErrOffsetRegression, b.BaseOffset, b.LastOffset, c.mu.lastOffset)
	}
	c.mu.lastOffset = b.LastOffset

	bld := c.mu.pending
	if bld == nil {
		bld = newBuilder(c.Image())
	}
	var errs []error
	fail := func(off int64, r Record, err error) {
		errs = append(errs, &ReplayError{Offset: off, Record: r, Err: err})
		c.log().Warn("skipping metadata record that cannot be replayed",
			zap.Int64("offset", off), zap.String("record", fmt.Sprintf("%T", r)), zap.Error(err))
	}
	for i, r := range b.Records {
		off := b.BaseOffset + int64(i)
		switch r.(type) {
		case *BeginTransactionRecord:
			if c.mu.inTxn {
				fail(off, r, fmt.Errorf("%w: BeginTransactionRecord while already in a transaction", ErrTransaction))
				continue
			}
			pre := bld.build()
			if i > 0 {
				pre.Offset, pre.Epoch, pre.AppendTimeMs = off-1, b.Epoch, b.AppendTimeMs
				c.publish(pre)
			} else if c.mu.deferredOK {
				// Deferred batches end right before this transaction.
				pre.Offset, pre.Epoch, pre.AppendTimeMs = c.mu.deferredOffset, c.mu.deferredEpoch, c.mu.deferredTimeMs
				c.publish(pre)
			}
			c.mu.deferredOK = false
			c.mu.preTxn = pre
			c.mu.inTxn = true
			bld = newBuilder(pre)
		case *EndTransactionRecord:
			if !c.mu.inTxn {
				fail(off, r, fmt.Errorf("%w: EndTransactionRecord without a BeginTransactionRecord", ErrTransaction))
				continue
			}
			c.mu.inTxn = false
			c.mu.preTxn = nil
		case *AbortTransactionRecord:
			if !c.mu.inTxn {
				fail(off, r, fmt.Errorf("%w: AbortTransactionRecord without a BeginTransactionRecord", ErrTransaction))
				continue
			}
			bld = newBuilder(c.mu.preTxn)
			c.mu.inTxn = false
			c.mu.preTxn = nil
		default:
			if err := bld.replay(r); err != nil {
				fail(off, r, err)
			}
		}
	}
	if c.mu.inTxn {
		c.mu.pending = bld
		return errors.Join(errs...)
	}
	if !publish {
		c.mu.pending = bld
		c.mu.deferredOK = true
		c.mu.deferredOffset, c.mu.deferredEpoch, c.mu.deferredTimeMs = b.LastOffset, b.Epoch, b.AppendTimeMs
		return errors.Join(errs...)
	}
	c.mu.pending, c.mu.deferredOK = nil, false
	img := bld.build()
	img.Offset, img.Epoch, img.AppendTimeMs = b.LastOffset, b.Epoch, b.AppendTimeMs
	c.publish(img)
	return errors.Join(errs...)
}

// LoadSnapshot replaces the image with one built from scratch from the
// records of a snapshot (MetadataLoader loading a snapshot: everything not
// in the snapshot is gone). b.LastOffset is the last offset the snapshot
// contains (its end offset minus one) and b.Epoch its epoch; b.BaseOffset
// is ignored. An open transaction is dropped. Records that cannot be
// replayed are skipped and reported as with Apply, with ReplayError.Offset
// set to the record's index in b.Records.
func (c *Cache) LoadSnapshot(b Batch) error {
	defer c.deliver()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.pending, c.mu.inTxn, c.mu.preTxn = nil, false, nil
	bld := newBuilder(EmptyImage(c.clusterID))
	var errs []error
	for i, r := range b.Records {
		if err := bld.replay(r); err != nil {
			errs = append(errs, &ReplayError{Offset: int64(i), Record: r, Err: err})
		}
	}
	img := bld.build()
	img.changes = Changes{Full: true}
	img.Offset, img.Epoch, img.AppendTimeMs = b.LastOffset, b.Epoch, b.AppendTimeMs
	c.mu.lastOffset = b.LastOffset
	c.mu.started = true
	c.publish(img)
	if len(errs) > 0 {
		c.log().Warn("snapshot records could not be replayed", zap.Int64("snapshotLastOffset", b.LastOffset), zap.Int("count", len(errs)))
	}
	return errors.Join(errs...)
}
