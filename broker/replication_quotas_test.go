package broker

import (
	"testing"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/quota"
)

// The bounds come from this broker's dynamic config, else the cluster
// default, else none (BrokerConfigHandler); the throttled partitions from
// each topic's *.replication.throttled.replicas naming this broker.
func TestReplicationThrottleFromImage(t *testing.T) {
	cfg, err := config.SingleNode(map[string]string{"node.id": "2", "controller.quorum.voters": "2@localhost:9093"})
	if err != nil {
		t.Fatal(err)
	}
	q := newReplicationQuotas(cfg, zap.NewNop())
	cache := metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})
	cache.Subscribe(q.onImage)
	next := int64(0)
	set := func(typ int8, name, key string, value *string) {
		t.Helper()
		c := metadatacache.NewConfigRecord()
		c.ResourceType, c.ResourceName, c.Name, c.Value = typ, name, key, value
		if err := cache.Apply(metadatacache.Batch{BaseOffset: next, LastOffset: next, Epoch: 1, Records: []metadatacache.Record{c}}); err != nil {
			t.Fatal(err)
		}
		next++
	}
	str := func(s string) *string { return &s }
	broker, topic := metadatacache.ConfigResourceBroker, metadatacache.ConfigResourceTopic

	set(broker, "", "leader.replication.throttled.rate", str("1000"))
	set(broker, "2", "leader.replication.throttled.rate", str("2000"))
	set(broker, "1", "follower.replication.throttled.rate", str("3000")) // another broker's
	set(broker, "", "replica.alter.log.dirs.io.max.bytes.per.second", str("4000"))
	if got := q.leader.Bound(); got != 2000 {
		t.Errorf("leader bound %v, want this broker's 2000", got)
	}
	if got := q.follower.Bound(); got != quota.Unbounded {
		t.Errorf("follower bound %v, want unbounded", got)
	}
	if got := q.alterLogDirs.Bound(); got != 4000 {
		t.Errorf("alter log dirs bound %v, want the cluster default 4000", got)
	}
	set(broker, "2", "leader.replication.throttled.rate", nil)
	if got := q.leader.Bound(); got != 1000 {
		t.Errorf("leader bound %v after deleting this broker's, want the cluster default 1000", got)
	}
	set(broker, "", "leader.replication.throttled.rate", str("bad"))
	if got := q.leader.Bound(); got != 1000 {
		t.Errorf("leader bound %v after an invalid value, want the previous 1000", got)
	}

	set(topic, "a", "leader.replication.throttled.replicas", str("*"))
	set(topic, "b", "leader.replication.throttled.replicas", str("0:1,1:2,3:2"))
	set(topic, "b", "follower.replication.throttled.replicas", str("2:2"))
	for _, c := range []struct {
		q     *quota.ReplicationQuota
		topic string
		p     int32
		want  bool
	}{
		{q.leader, "a", 5, true}, {q.leader, "b", 0, false}, {q.leader, "b", 1, true}, {q.leader, "b", 3, true},
		{q.follower, "a", 0, false}, {q.follower, "b", 2, true}, {q.follower, "b", 1, false},
	} {
		if got := c.q.IsThrottled(c.topic, c.p); got != c.want {
			t.Errorf("%v IsThrottled(%s, %d) = %v, want %v", c.q.Kind(), c.topic, c.p, got, c.want)
		}
	}
	set(topic, "a", "leader.replication.throttled.replicas", nil)
	if q.leader.IsThrottled("a", 5) {
		t.Error("a-5 still throttled after its config was deleted")
	}
}
