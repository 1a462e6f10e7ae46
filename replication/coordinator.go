package replication

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage"
)

// What the coordinators (group, transaction) need of their partitions, for
// the coordinator runtime's Writer (Kafka's CoordinatorPartitionWriter):
// a local append as leader at a given leader epoch that waits for no
// replica, the high watermark, a wake-up when it moves, and the log to load
// from.

// AppendCoordinator appends records (built by a coordinator, origin
// coordinator: control batches allowed, no sequence checks) to a partition
// this node leads at leaderEpoch, and returns what was appended. It waits
// for the sync flush.messages asks for, not for replication (acks=1).
// NOT_LEADER_OR_FOLLOWER when the partition is not led here at that epoch.
// A transactional write (TxnOffsetCommit) carries the guard VerifyTransaction
// returned: with verification on, a write that starts the producer's
// transaction here without it is INVALID_TXN_STATE (KIP-890).
//
// With minISR the append is refused with NOT_ENOUGH_REPLICAS while the ISR is
// below min.insync.replicas, the check Kafka's Partition.appendRecordsToLeader
// makes for acks=all: the transaction coordinator writes __transaction_state
// that way (TransactionLog.EnforcedRequiredAcks), the group coordinator with
// acks=1 (CoordinatorPartitionWriter).
func (rm *ReplicaManager) AppendCoordinator(topic string, partition, leaderEpoch int32, records []byte, guard *storage.VerificationGuard, minISR bool) (storage.AppendInfo, error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return storage.AppendInfo{}, err
	}
	info, durable, err := p.appendAsCoordinator(records, leaderEpoch, minISR, storage.AppendOptions{Origin: storage.OriginCoordinator,
		RequireVerification: rm.txnSettings().Enabled, Guard: guard})
	if err != nil {
		return info, err
	}
	if durable.Pending() {
		if err := durable.Wait(); err != nil {
			return storage.AppendInfo{}, err
		}
		p.appended()
	}
	return info, nil
}

func (p *Partition) appendAsCoordinator(records []byte, leaderEpoch int32, minISR bool, opts storage.AppendOptions) (storage.AppendInfo, storage.Durable, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil || p.leaderEpoch != leaderEpoch {
		return storage.AppendInfo{}, storage.Durable{}, kerr.NotLeaderForPartition
	}
	if minISR && len(p.isr) < p.effectiveMinIsrLocked() {
		return storage.AppendInfo{}, storage.Durable{}, kerr.NotEnoughReplicas
	}
	info, durable, err := p.log.AppendAsLeaderWith(records, p.leaderEpoch, opts)
	if err != nil {
		return info, storage.Durable{}, err
	}
	if !durable.Pending() {
		p.appendedLocked()
	}
	return info, durable, nil
}

// HighWatermarkOf returns a partition's high watermark.
func (rm *ReplicaManager) HighWatermarkOf(topic string, partition int32) (int64, error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return -1, err
	}
	return p.hw.Load(), nil
}

// WatchPartition calls wake on every append, high watermark move and
// leadership change of the partition until cancel is called. wake is
// called with the partition's locks held: it must not block.
func (rm *ReplicaManager) WatchPartition(topic string, partition int32, wake func()) (cancel func(), err error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return nil, err
	}
	w := &waiter{fn: wake}
	p.watch.add(w)
	return func() { p.watch.remove(w) }, nil
}

// errNoProgress stops a log read that would loop.
var errNoProgress = errors.New("log read made no progress")

// ReadLog calls fn for every batch of the partition's local log from its
// log start to its log end (as it was when the read began), and returns
// that log end offset. fn sees whole batches, as WalkBatches gives them;
// records before the log start inside the first batch are fn's to skip.
func (rm *ReplicaManager) ReadLog(topic string, partition int32, fn func(h storage.BatchHeader, raw []byte) error) (int64, error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return -1, err
	}
	p.mu.RLock()
	l := p.log
	p.mu.RUnlock()
	if l == nil {
		return -1, kerr.NotLeaderForPartition
	}
	off, end := l.LogStartOffset(), l.LogEndOffset()
	for off < end {
		b, err := l.ReadBatches(off, 1<<20, end, true)
		if err != nil {
			return -1, fmt.Errorf("reading %s-%d at %d: %w", topic, partition, off, err)
		}
		if len(b) == 0 {
			break
		}
		next := off
		if err := storage.WalkBatches(b, false, func(h storage.BatchHeader, raw []byte) error {
			next = h.NextOffset()
			return fn(h, raw)
		}); err != nil {
			return -1, err
		}
		if next <= off {
			return -1, errNoProgress
		}
		off = next
	}
	return end, nil
}
