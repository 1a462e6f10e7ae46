package broker

// Replication throttles (KIP-73) as Kafka's QuotaFactory wires them: one
// quota.ReplicationQuota each for leader, follower and alter-log-dirs
// replication, fed from the image as DynamicConfigPublisher's handlers do:
//
//   - the bounds (BrokerConfigHandler): leader.replication.throttled.rate,
//     follower.replication.throttled.rate and
//     replica.alter.log.dirs.io.max.bytes.per.second, this broker's dynamic
//     value, else the cluster-wide dynamic default (kafka-configs.sh
//     --entity-type brokers --entity-name N | --entity-default), else
//     unbounded. These keys can only be set dynamically: Kafka reads no
//     server.properties value for them, nor does kgo-broker.
//   - the throttled partitions (TopicConfigHandler.updateThrottledList):
//     each topic's leader.replication.throttled.replicas and
//     follower.replication.throttled.replicas, "*" or the partitions of
//     the "partition:broker" pairs naming this broker.
//
// The replica manager enforces them (replication.Config.LeaderQuota and
// FollowerQuota): the leader leaves throttled partitions of out-of-sync
// followers out of its Fetch answers while its rate is exceeded, and the
// fetchers leave theirs out of their requests. The alter-log-dirs quota
// throttles the copies of replicas moving between log dirs (KIP-113,
// replication.Config.AlterLogDirsQuota, replication/alterlogdirs.go).

import (
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/quota"
)

type replicationQuotas struct {
	nodeID                         int32
	logger                         *zap.Logger
	leader, follower, alterLogDirs *quota.ReplicationQuota
}

func newReplicationQuotas(cfg *config.Config, logger *zap.Logger) *replicationQuotas {
	now := func() int64 { return time.Now().UnixMilli() }
	w := quota.Window{Samples: int(cfg.Int("replication.quota.window.num")),
		WindowMs: int64(cfg.Int("replication.quota.window.size.seconds")) * 1000}
	aw := quota.Window{Samples: int(cfg.Int("alter.log.dirs.replication.quota.window.num")),
		WindowMs: int64(cfg.Int("alter.log.dirs.replication.quota.window.size.seconds")) * 1000}
	return &replicationQuotas{
		nodeID:       cfg.NodeID,
		logger:       logger,
		leader:       quota.NewReplicationQuota(quota.LeaderReplication, w, now),
		follower:     quota.NewReplicationQuota(quota.FollowerReplication, w, now),
		alterLogDirs: quota.NewReplicationQuota(quota.AlterLogDirsReplication, aw, now),
	}
}

func (q *replicationQuotas) all() []*quota.ReplicationQuota {
	return []*quota.ReplicationQuota{q.leader, q.follower, q.alterLogDirs}
}

// onImage is an image subscriber: it sets the bounds and the throttled
// partitions from the image's configs.
func (q *replicationQuotas) onImage(prev, img *metadatacache.Image) {
	if ch := img.Changes(); prev != nil && !ch.Full && !ch.Configs {
		return // only configs (and a snapshot) change the throttles
	}
	perBroker := metadatacache.ConfigResource{Type: metadatacache.ConfigResourceBroker, Name: strconv.Itoa(int(q.nodeID))}
	clusterDefault := metadatacache.ConfigResource{Type: metadatacache.ConfigResourceBroker}
	for _, rq := range q.all() {
		key := rq.Kind().RateKey()
		v, ok := img.Config(perBroker, key)
		if !ok {
			v, ok = img.Config(clusterDefault, key)
		}
		bound := quota.Unbounded
		if ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				// Kafka's handler fails on it and keeps the previous bound
				q.logger.Warn("ignoring an invalid replication throttle rate", zap.String("key", key), zap.String("value", v))
				continue
			}
			bound = float64(n)
		}
		if rq.Bound() != bound {
			q.logger.Info("replication throttle rate", zap.String("key", key), zap.Float64("bytesPerSecond", bound))
			rq.SetBound(bound)
		}
	}
	leader, follower := map[string][]int32{}, map[string][]int32{}
	for _, r := range img.ConfigResources() {
		if r.Type != metadatacache.ConfigResourceTopic {
			continue
		}
		for _, t := range []struct {
			rq  *quota.ReplicationQuota
			out map[string][]int32
		}{{q.leader, leader}, {q.follower, follower}} {
			key := t.rq.Kind().ReplicasKey()
			v, ok := img.Config(r, key)
			if !ok {
				continue
			}
			ps, valid := quota.ParseThrottledReplicas(v, q.nodeID)
			if !valid {
				q.logger.Warn("ignoring an invalid throttled replicas list", zap.String("topic", r.Name), zap.String("key", key), zap.String("value", v))
				continue
			}
			if len(ps) > 0 {
				t.out[r.Name] = ps
			}
		}
	}
	q.leader.SetThrottled(leader)
	q.follower.SetThrottled(follower)
}
