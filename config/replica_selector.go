package config

import (
	"fmt"
	"strings"
)

// RackAwareReplicaSelector is the one replica.selector.class kgo-broker acts
// on (KIP-392): Kafka's org.apache.kafka.common.replica.RackAwareReplicaSelector,
// which sends a consumer with a client.rack to an in-sync replica in its rack.
const RackAwareReplicaSelector = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

// RackAwareReplicaSelection reports whether replica.selector.class is
// RackAwareReplicaSelector. Unset (the default), leaders never name a
// preferred read replica, though consumers may still fetch from followers.
func (c *Config) RackAwareReplicaSelection() bool {
	return strings.TrimSpace(c.String("replica.selector.class")) == RackAwareReplicaSelector
}

// ValidateReplicaSelector refuses a replica selector kgo-broker does not
// have. Like ValidateAuthorizer it is checked when the node starts: Kafka's
// KafkaConfig takes any class name and the ReplicaManager fails to create it
// (ReplicaManager.createReplicaSelector: the class cannot be loaded).
func (c *Config) ValidateReplicaSelector() error {
	v := strings.TrimSpace(c.String("replica.selector.class"))
	if v != "" && v != RackAwareReplicaSelector {
		return c.fail("replica.selector.class", fmt.Sprintf("Invalid value %s for configuration replica.selector.class: Class %s cannot be found", v, v),
			"kgo-broker supports replica.selector.class="+RackAwareReplicaSelector+" or none (empty)")
	}
	return nil
}
