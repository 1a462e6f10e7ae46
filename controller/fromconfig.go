package controller

import (
	"time"

	"github.com/kgo-broker/kgo-broker/config"
)

// FromBrokerConfig fills a Config from the broker configuration: node.id,
// num.partitions, default.replication.factor, broker.session.timeout.ms,
// metadata.max.idle.interval.ms (0 disables NoOpRecords), delete.topic.enable,
// unclean.leader.election.enable, min.insync.replicas, auto.leader.rebalance.enable,
// leader.imbalance.check.interval.seconds, unclean.leader.election.interval.ms,
// the topic and group config validation, defaults and LIST types of the config
// package, and metadata.log.dir (where the bootstrap metadata is read from).
// The caller sets Raft, ClusterID, Logger and Now.
func FromBrokerConfig(bc *config.Config) Config {
	idle := time.Duration(bc.Int("metadata.max.idle.interval.ms")) * time.Millisecond
	var imbalance time.Duration
	if bc.Bool("auto.leader.rebalance.enable") {
		imbalance = time.Duration(bc.Long("leader.imbalance.check.interval.seconds")) * time.Second
	}
	if idle == 0 {
		idle = -1
	}
	return Config{
		NodeID:                        bc.NodeID,
		MetadataLogDir:                bc.MetadataLogDir,
		NumPartitions:                 bc.Int("num.partitions"),
		DefaultReplicationFactor:      int16(bc.Int("default.replication.factor")),
		SessionTimeout:                time.Duration(bc.Int("broker.session.timeout.ms")) * time.Millisecond,
		MaxIdleInterval:               idle,
		DeleteTopicDisable:            !bc.Bool("delete.topic.enable"),
		UncleanLeaderElectionEnable:   bc.Bool("unclean.leader.election.enable"),
		ValidateTopicConfig:           config.ValidateTopicConfig,
		ValidateGroupConfigs:          bc.ValidateGroupConfigs,
		TopicConfigs:                  topicConfigsFrom(bc),
		ListConfig:                    listConfig,
		LeaderImbalanceCheckInterval:  imbalance,
		MinInsyncReplicas:             int(bc.Int("min.insync.replicas")),
		UncleanLeaderElectionInterval: time.Duration(bc.Long("unclean.leader.election.interval.ms")) * time.Millisecond,
	}
}

// topicConfigsFrom computes a new topic's effective configs: an override is
// DYNAMIC_TOPIC_CONFIG, otherwise the broker-wide default with its source
// (STATIC_BROKER_CONFIG or DEFAULT_CONFIG). Sensitive values are hidden.
func topicConfigsFrom(bc *config.Config) func(map[string]string) []TopicConfigEntry {
	return func(overrides map[string]string) []TopicConfigEntry {
		var out []TopicConfigEntry
		for _, tk := range config.TopicKeys() {
			if tk.Internal {
				continue
			}
			e := TopicConfigEntry{Name: tk.Name, IsSensitive: tk.Sensitive()}
			if v, ok := overrides[tk.Name]; ok {
				e.Value, e.Source = strp(v), int8(config.SourceDynamicTopicConfig)
			} else if v, src, ok := bc.TopicDefault(tk.Name); ok {
				e.Value, e.Source = strp(v), int8(src)
			} else {
				e.Source = int8(config.SourceDefaultConfig)
			}
			out = append(out, e)
		}
		return out
	}
}

// listConfig reports whether a topic or broker config is a LIST, and its default.
func listConfig(resourceType int8, name string) (bool, *string) {
	var k config.Key
	switch resourceType {
	case resourceTopic:
		tk, ok := config.LookupTopic(name)
		if !ok {
			return false, nil
		}
		k = tk.Key
	case resourceBroker:
		bk, ok := config.Lookup(name)
		if !ok {
			return false, nil
		}
		k = bk
	default:
		return false, nil
	}
	if k.Type != config.TypeList {
		return false, nil
	}
	if k.HasDefault {
		return true, strp(k.Default)
	}
	return true, nil
}
