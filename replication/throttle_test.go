package replication

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/quota"
	"github.com/kgo-broker/kgo-broker/storage"
)

// bigBatch is one batch of 10 records of 1000 bytes (about 10 KB).
func bigBatch(i int) []byte {
	recs := make([]storage.Record, 10)
	now := time.Now().UnixMilli()
	for j := range recs {
		recs[j] = storage.Record{Key: []byte(fmt.Sprintf("k%d-%d", i, j)), Value: bytes.Repeat([]byte{'v'}, 1000), Timestamp: now}
	}
	return storage.BuildBatch(storage.BatchOptions{}, recs...)
}

// throttleQuota is a ReplicationQuota on the bubble's clock throttling
// every replica of topic t at bound bytes per second.
func throttleQuota(k quota.ReplicationKind, bound float64) *quota.ReplicationQuota {
	q := quota.NewReplicationQuota(k, quota.DefaultWindow, func() int64 { return time.Now().UnixMilli() })
	q.SetBound(bound)
	q.SetThrottled(map[string][]int32{"t": quota.AllReplicas})
	return q
}

// catchUpTime builds a 2-node cluster with the quotas configure sets,
// lets node 2 (out of the ISR, down) fall ~400 KB behind, brings it back
// and returns how long it took to catch up with the leader.
func catchUpTime(t *testing.T, configure func(cfg *Config)) time.Duration {
	rcfg := testReplicationConfig()
	rcfg.FetchMaxBytes = 16 << 10
	c := newClusterConfigured(t, 2, rcfg, configure)
	c.node(2).down.Store(true)
	c.createTopic("t", []int32{1, 2}, 1, []int32{1}, nil)
	for i := range 40 {
		if res := <-c.produceAsync(1, "t", 1, bigBatch(i)); res.ErrorCode != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(res.ErrorCode))
		}
	}
	leo := c.part(1, "t").Snapshot().LogEndOffset
	start := time.Now()
	c.node(2).down.Store(false)
	c.waitFor("node 2 caught up", func() bool { return c.part(2, "t").Snapshot().LogEndOffset == leo })
	took := time.Since(start)
	t.Logf("%d offsets caught up in %v", leo, took)
	c.waitFor("ISR {1,2}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2}) })
	return took
}

// Unthrottled, a follower 400 KB behind catches up in a few fetches.
func TestReplicationThrottleNone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if took := catchUpTime(t, nil); took > 3*time.Second {
			t.Fatalf("unthrottled catch-up took %v", took)
		}
	})
}

// leader.replication.throttled.rate: the leader answers an out-of-sync
// follower's throttled partition with no records while the rate is above
// the bound, so 400 KB at 20 KB/s takes about 20 s.
func TestReplicationThrottleLeader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lq := throttleQuota(quota.LeaderReplication, 20_000)
		took := catchUpTime(t, func(cfg *Config) {
			if cfg.NodeID == 1 {
				cfg.LeaderQuota = lq
			}
		})
		if took < 15*time.Second || took > 30*time.Second {
			t.Fatalf("catch-up at 20 KB/s of ~400 KB took %v", took)
		}
	})
}

// follower.replication.throttled.rate: the fetcher leaves its throttled,
// out-of-sync partition out of its fetches while the rate is exceeded.
func TestReplicationThrottleFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fq := throttleQuota(quota.FollowerReplication, 20_000)
		took := catchUpTime(t, func(cfg *Config) {
			if cfg.NodeID == 2 {
				cfg.FollowerQuota = fq
			}
		})
		if took < 15*time.Second || took > 30*time.Second {
			t.Fatalf("catch-up at 20 KB/s of ~400 KB took %v", took)
		}
		if r := fq.Rate(); r <= 0 {
			t.Fatalf("follower byte-rate %v after fetching throttled bytes", r)
		}
	})
}

// An in-sync follower is never throttled, even with the rate exceeded:
// its bytes count, but it keeps up (shouldLeaderThrottle, isReplicaInSync).
func TestReplicationThrottleSparesInSync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lq := throttleQuota(quota.LeaderReplication, 1000)
		fq := throttleQuota(quota.FollowerReplication, 1000)
		rcfg := testReplicationConfig()
		rcfg.FetchMaxBytes = 16 << 10
		c := newClusterConfigured(t, 2, rcfg, func(cfg *Config) {
			cfg.LeaderQuota, cfg.FollowerQuota = lq, fq
		})
		c.createTopic("t", []int32{1, 2}, 1, nil, map[string]string{"min.insync.replicas": "2"})
		start := time.Now()
		for i := range 20 {
			if res := <-c.produceAsync(1, "t", -1, bigBatch(i)); res.ErrorCode != 0 {
				t.Fatalf("acks=all produce %d: %v", i, kerr.ErrorForCode(res.ErrorCode))
			}
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("20 acks=all produces with an in-sync follower took %v", took)
		}
		if !lq.IsQuotaExceeded() {
			t.Fatalf("the leader did not count the in-sync follower's bytes (rate %v)", lq.Rate())
		}
	})
}
