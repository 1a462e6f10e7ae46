package broker

// Share partitions on this node's partition leaders (KIP-932, package
// share): the manager behind ShareFetch (78) and ShareAcknowledge (79),
// its view of the logs (the replica manager), its settings (the broker's
// group.share.* configs under each group's share.* GROUP configs), and the
// image subscriber that drops the share partitions of partitions whose
// leadership left this node or moved to a new epoch.

import (
	"context"
	"sort"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/replication"
	"github.com/kgo-broker/kgo-broker/share"
)

// shareLog is share.LogReader over the replica manager.
type shareLog struct{ rm *replication.ReplicaManager }

func (l shareLog) ReadShare(topic string, partition int32, offset int64, maxBytes int32, minOne, readCommitted bool) (share.LogRead, error) {
	r, err := l.rm.ReadShare(topic, partition, offset, maxBytes, minOne, readCommitted)
	return share.LogRead{Records: r.Records, LogStart: r.LogStart, Aborted: r.Aborted}, err
}

func (l shareLog) Offsets(topic string, partition int32) (int64, int64, int32, error) {
	return l.rm.ShareOffsets(topic, partition)
}

func (l shareLog) Watch(topic string, partition int32, wake func()) (func(), error) {
	return l.rm.WatchPartition(topic, partition, wake)
}

func (l shareLog) OffsetForTimestamp(topic string, partition int32, ts int64) (int64, bool, error) {
	return l.rm.ShareOffsetForTimestamp(topic, partition, ts)
}

// shareDefaults are the broker's group.share.* settings.
func shareDefaults(cfg *config.Config) share.Defaults {
	return share.Defaults{
		Limits: share.Limits{
			LockMs:        int64(cfg.Int("group.share.record.lock.duration.ms")),
			DeliveryLimit: int16(cfg.Int("group.share.delivery.count.limit")),
			MaxLocks:      int64(cfg.Int("group.share.partition.max.record.locks")),
		},
		AutoOffsetReset: "latest",
		MaxSessions:     int(cfg.Int("group.share.max.share.sessions")),
	}
}

// newShareManager builds the share partition manager on the replica
// manager. The persister is b.sharePersister (the share coordinator's,
// broker/share_persister.go) when set; nil keeps the share state in
// memory. Group configs come from b.shareGroupConfig when set, else from
// the image's GROUP config resources.
func newShareManager(cfg *config.Config, b *Broker, now func() time.Time) *share.Manager {
	return share.NewManager(share.Config{
		Persister:   b.sharePersister,
		Log:         shareLog{rm: b.replicas},
		GroupConfig: b.groupConfigOf,
		Defaults:    shareDefaults(cfg),
		Now:         now,
		OnError: func(p *share.Partition, err error) {
			b.logger.Warn("persisting share partition state failed", zap.String("group", p.Group),
				zap.String("topic", p.Topic), zap.Int32("partition", p.Partition), zap.Error(err))
		},
		DLQ:        newShareDLQ(b),
		DLQFeature: b.shareDLQEnabled,
		OnDLQError: b.logDLQError,
	})
}

// shareGroupKeys are the GROUP config keys the share partitions read.
var shareGroupKeys = []string{"share.record.lock.duration.ms", "share.delivery.count.limit",
	"share.partition.max.record.locks", "share.isolation.level", "share.auto.offset.reset",
	"errors.deadletterqueue.topic.name"}

// groupConfigOf is a group's effective share.* settings, resolved as
// Kafka's GroupConfigManager does (Broker.GroupConfig: the group's
// override, trimmed and clamped to this broker's group.share.* bounds,
// else this broker's current group.share.* value).
func (b *Broker) groupConfigOf(group string) map[string]string {
	if b.shareGroupConfig != nil {
		return b.shareGroupConfig(group)
	}
	if b.meta == nil || b.cfg == nil {
		return nil
	}
	gc := b.GroupConfig(group)
	out := make(map[string]string, len(shareGroupKeys))
	for _, k := range shareGroupKeys {
		if v, ok := gc.Value(k); ok {
			out[k] = v
		}
	}
	return out
}

// sharesOnImage drops the share partitions of partitions this node no
// longer leads at the epoch they were loaded at (the leader's cached state
// is only valid for its leadership; the new leader loads the persisted
// state).
func (b *Broker) sharesOnImage(_, img *metadatacache.Image) {
	if b.shares == nil {
		return
	}
	b.shares.Retain(func(topic string, partition, epoch int32) bool {
		t := img.TopicByName(topic)
		if t == nil {
			return false
		}
		p := t.Partition(partition)
		return p != nil && p.Leader == b.nodeID && p.LeaderEpoch == epoch
	})
}

// shareVersionForced serves share groups without share.version (tests of
// this package; the lead's end-to-end tests finalize the feature).
var shareVersionForced atomic.Bool

// sharesEnabled is shareGroupsEnabled (share.version >= 1 finalized,
// share_feature.go) with the share partition manager running.
func (b *Broker) sharesEnabled() bool {
	return b.shares != nil && (shareVersionForced.Load() || b.shareGroupsEnabled())
}

// sharesMemberLeft is the group coordinator's share member-left hook: the
// member's records on this node are released and its share session closed.
// It is called on a group coordinator loop and must not block, so the
// release (a persister write) runs on its own goroutine.
func (b *Broker) sharesMemberLeft(groupID, memberID string) {
	go b.shares.OnMemberLeft(groupID, memberID)
}

// shareLeader is the current leader of a partition, for the CurrentLeader
// of NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH answers (KIP-951).
func (b *Broker) shareLeader(topic string, partition int32) (int32, int32) {
	if b.meta == nil {
		return -1, -1
	}
	t := b.meta.Image().TopicByName(topic)
	if t == nil {
		return -1, -1
	}
	p := t.Partition(partition)
	if p == nil {
		return -1, -1
	}
	return p.Leader, p.LeaderEpoch
}

func isLeaderError(code int16) bool {
	return code == kerr.NotLeaderForPartition.Code || code == kerr.FencedLeaderEpoch.Code
}

// ackBatchesValid is KafkaApis.validateAcknowledgementBatches plus the
// checks of ShareAcknowledgementBatch: ranges in order without overlap,
// one type for the range or one per offset, known types (renew only in v2
// requests with IsRenewAck; the other types may come with it). INVALID_REQUEST otherwise. The share partition checks
// the records' states.
func ackBatchesValid(bs []share.AckBatch, version int16, renew bool) bool {
	prev := int64(-1)
	for _, b := range bs {
		if b.First < 0 || b.First > b.Last || b.First <= prev {
			return false
		}
		prev = b.Last
		if n := b.Last - b.First + 1; len(b.Types) != 1 && int64(len(b.Types)) != n || len(b.Types) == 0 {
			return false
		}
		for _, t := range b.Types {
			if t < 0 || t > 4 || t == 4 && (version < 2 || !renew) {
				return false
			}
		}
	}
	return true
}

// shareLeaderIDs returns the leader ids of NodeEndpoints, deduplicated.
func shareLeaderIDs(ids map[int32]bool) []int32 {
	out := make([]int32, 0, len(ids))
	for id := range ids {
		out = append(out, id)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// runShares expires acquisition locks until ctx ends.
func (b *Broker) runShares(ctx context.Context) {
	if b.shares != nil {
		b.shares.Run(ctx, 100*time.Millisecond)
	}
}

func shareTP(id [16]byte, p int32) share.TopicPartition {
	return share.TopicPartition{TopicID: id, Partition: p}
}

// shareNowMs is the broker's clock in ms (the wall clock when unset).
func (b *Broker) shareNowMs() int64 {
	if b.now != nil {
		return b.now().UnixMilli()
	}
	return time.Now().UnixMilli()
}
