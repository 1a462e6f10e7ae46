package config

import (
	"strconv"
	"strings"
	"time"
)

// GroupConfig is one group's effective settings, as Kafka 4.4's group
// coordinator and share partitions read them: GroupConfigManager keeps a
// GroupConfig of the group's overrides only, clamped by
// GroupConfig.evaluate to the broker's current min/max group.* bounds (a
// bound lowered after the override was set wins, with a warning in Kafka's
// log), and each reader (GroupMetadataManager, SharePartitionManager) falls
// back to the broker's group.* value when the group has no override
// (GroupConfig.brokerSynonym; the GroupConfig default for keys without
// one). The zero value and a GroupConfig of a nil broker config answer
// Kafka's defaults. Build it with (*Config).ResolveGroupConfig.
type GroupConfig struct {
	broker    *Config
	dynamic   []map[string]string // this broker's dynamic configs, then the cluster defaults
	overrides map[string]any      // parsed and clamped
}

// ResolveGroupConfig resolves a group's effective settings from its
// overrides (the GROUP config resource's configs, e.g. the broker's
// GroupConfigs lookup). An override that no longer parses (stored by
// another version) is ignored, never a panic.
func (c *Config) ResolveGroupConfig(overrides map[string]string) GroupConfig {
	return c.ResolveGroupConfigWith(overrides, nil, nil)
}

// ResolveGroupConfigWith is ResolveGroupConfig over the broker's current
// config: a broker synonym's value is this broker's dynamic one
// (perBroker), else the cluster-wide dynamic default, else the static one,
// as KafkaConfig's current values are (group.*.assignment.interval.ms and
// the *.assignor.offload.enable keys are dynamic broker configs).
func (c *Config) ResolveGroupConfigWith(overrides, perBroker, clusterDefault map[string]string) GroupConfig {
	g := GroupConfig{broker: c, dynamic: []map[string]string{perBroker, clusterDefault}, overrides: make(map[string]any, len(overrides))}
	for name, raw := range overrides {
		k, ok := LookupGroupKey(name)
		if !ok {
			continue
		}
		v, err := k.Parse(raw)
		if err != nil {
			continue
		}
		g.overrides[name] = v
	}
	if c == nil {
		return g
	}
	for _, b := range groupBounds {
		v, ok := g.overrides[b.key].(int32)
		if !ok {
			continue
		}
		if b.min != "" {
			v = max(v, c.Int(b.min))
		}
		if b.max != "" {
			v = min(v, c.Int(b.max))
		}
		g.overrides[b.key] = v
	}
	return g
}

// Override reports the group's own (clamped) value of name, if it sets one.
func (g GroupConfig) Override(name string) (string, bool) {
	v, ok := g.overrides[name]
	if !ok {
		return "", false
	}
	return groupValueString(v), true
}

// Value is name's effective value as a string (false for an unknown key
// or a null value: streams.assignor.name without a broker config).
func (g GroupConfig) Value(name string) (string, bool) {
	v, ok := g.value(name)
	if !ok {
		return "", false
	}
	return groupValueString(v), true
}

func (g GroupConfig) value(name string) (any, bool) {
	if v, ok := g.overrides[name]; ok {
		return v, true
	}
	k, ok := LookupGroupKey(name)
	if !ok {
		return nil, false
	}
	if g.broker != nil && k.BrokerSynonym != "" {
		if v, ok := g.broker.brokerGroupValue(k, g.dynamic...); ok {
			return v, true
		}
	}
	if !k.HasDefault {
		return nil, false
	}
	v, err := k.Parse(k.Default)
	return v, err == nil
}

// brokerGroupValue is the broker's value of a group key's synonym in the
// group key's type (KafkaConfig.extractGroupConfigMap and the readers'
// fallbacks; streams.assignor.name is the first of group.streams.assignors).
func (c *Config) brokerGroupValue(k GroupKey, dynamic ...map[string]string) (any, bool) {
	raw, ok := "", false
	for _, m := range dynamic {
		if raw, ok = m[k.BrokerSynonym]; ok {
			break
		}
	}
	if !ok {
		raw, ok = c.Value(k.BrokerSynonym)
	}
	if !ok {
		return nil, false
	}
	if k.Name == "streams.assignor.name" {
		if l, err := parseType(k.BrokerSynonym, raw, TypeList); err == nil {
			if l := l.([]string); len(l) > 0 {
				return l[0], true
			}
		}
		return nil, false
	}
	v, err := parseType(k.Name, raw, k.Type)
	return v, err == nil
}

func groupValueString(v any) string {
	switch x := v.(type) {
	case []string:
		return strings.Join(x, ",")
	case int32:
		return strconv.FormatInt(int64(x), 10)
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case string:
		return x
	}
	return ""
}

func (g GroupConfig) int(name string) int64 {
	switch x, _ := g.value(name); v := x.(type) {
	case int32:
		return int64(v)
	case int64:
		return v
	}
	return 0
}

func (g GroupConfig) ms(name string) time.Duration {
	return time.Duration(g.int(name)) * time.Millisecond
}

func (g GroupConfig) bool(name string) bool {
	v, _ := g.value(name)
	b, _ := v.(bool)
	return b
}

func (g GroupConfig) str(name string) string {
	v, _ := g.value(name)
	s, _ := v.(string)
	return s
}

// ConsumerSessionTimeout is consumer.session.timeout.ms (KIP-848).
func (g GroupConfig) ConsumerSessionTimeout() time.Duration {
	return g.ms("consumer.session.timeout.ms")
}

// ConsumerHeartbeatInterval is consumer.heartbeat.interval.ms.
func (g GroupConfig) ConsumerHeartbeatInterval() time.Duration {
	return g.ms("consumer.heartbeat.interval.ms")
}

// ConsumerAssignmentInterval is consumer.assignment.interval.ms.
func (g GroupConfig) ConsumerAssignmentInterval() time.Duration {
	return g.ms("consumer.assignment.interval.ms")
}

// ShareSessionTimeout is share.session.timeout.ms (KIP-932).
func (g GroupConfig) ShareSessionTimeout() time.Duration { return g.ms("share.session.timeout.ms") }

// ShareHeartbeatInterval is share.heartbeat.interval.ms.
func (g GroupConfig) ShareHeartbeatInterval() time.Duration {
	return g.ms("share.heartbeat.interval.ms")
}

// ShareRecordLockDuration is share.record.lock.duration.ms: how long an
// acquired record stays locked to a consumer.
func (g GroupConfig) ShareRecordLockDuration() time.Duration {
	return g.ms("share.record.lock.duration.ms")
}

// ShareDeliveryCountLimit is share.delivery.count.limit: delivery attempts
// before a record is archived.
func (g GroupConfig) ShareDeliveryCountLimit() int {
	return int(g.int("share.delivery.count.limit"))
}

// SharePartitionMaxRecordLocks is share.partition.max.record.locks: the
// in-flight records a share partition may hold.
func (g GroupConfig) SharePartitionMaxRecordLocks() int {
	return int(g.int("share.partition.max.record.locks"))
}

// ShareAutoOffsetReset is share.auto.offset.reset (default latest).
func (g GroupConfig) ShareAutoOffsetReset() ShareAutoOffsetReset {
	r, ok := ParseShareAutoOffsetReset(g.str("share.auto.offset.reset"))
	if !ok {
		return ShareAutoOffsetReset{Kind: ShareResetLatest, Raw: "latest"}
	}
	return r
}

// ShareIsolationLevel is share.isolation.level as a Fetch IsolationLevel:
// 0 read_uncommitted (the default), 1 read_committed.
func (g GroupConfig) ShareIsolationLevel() int8 {
	if g.str("share.isolation.level") == "read_committed" {
		return 1
	}
	return 0
}

// ShareRenewAcknowledgeEnable is share.renew.acknowledge.enable (KIP-1222
// RENEW acknowledgements; default true).
func (g GroupConfig) ShareRenewAcknowledgeEnable() bool {
	return g.bool("share.renew.acknowledge.enable")
}

// ShareAssignmentInterval is share.assignment.interval.ms.
func (g GroupConfig) ShareAssignmentInterval() time.Duration {
	return g.ms("share.assignment.interval.ms")
}

// StreamsSessionTimeout is streams.session.timeout.ms (KIP-1071).
func (g GroupConfig) StreamsSessionTimeout() time.Duration {
	return g.ms("streams.session.timeout.ms")
}

// StreamsHeartbeatInterval is streams.heartbeat.interval.ms.
func (g GroupConfig) StreamsHeartbeatInterval() time.Duration {
	return g.ms("streams.heartbeat.interval.ms")
}

// StreamsNumStandbyReplicas is streams.num.standby.replicas.
func (g GroupConfig) StreamsNumStandbyReplicas() int {
	return int(g.int("streams.num.standby.replicas"))
}

// StreamsInitialRebalanceDelay is streams.initial.rebalance.delay.ms.
func (g GroupConfig) StreamsInitialRebalanceDelay() time.Duration {
	return g.ms("streams.initial.rebalance.delay.ms")
}

// StreamsAssignmentInterval is streams.assignment.interval.ms.
func (g GroupConfig) StreamsAssignmentInterval() time.Duration {
	return g.ms("streams.assignment.interval.ms")
}

// StreamsTaskOffsetInterval is streams.task.offset.interval.ms.
func (g GroupConfig) StreamsTaskOffsetInterval() time.Duration {
	return g.ms("streams.task.offset.interval.ms")
}

// StreamsNumWarmupReplicas is streams.num.warmup.replicas.
func (g GroupConfig) StreamsNumWarmupReplicas() int {
	return int(g.int("streams.num.warmup.replicas"))
}

// StreamsAcceptableRecoveryLag is streams.acceptable.recovery.lag.
func (g GroupConfig) StreamsAcceptableRecoveryLag() int64 {
	return g.int("streams.acceptable.recovery.lag")
}

// StreamsRackAwareAssignmentTags is streams.rack.aware.assignment.tags.
func (g GroupConfig) StreamsRackAwareAssignmentTags() []string {
	v, _ := g.value("streams.rack.aware.assignment.tags")
	l, _ := v.([]string)
	return l
}

// StreamsAssignorName is streams.assignor.name ("" when unset and the
// broker has no group.streams.assignors).
func (g GroupConfig) StreamsAssignorName() string { return g.str("streams.assignor.name") }

// ErrorsDLQTopicName is errors.deadletterqueue.topic.name ("" for none).
func (g GroupConfig) ErrorsDLQTopicName() string {
	return g.str("errors.deadletterqueue.topic.name")
}

// ErrorsDLQCopyRecordEnable is errors.deadletterqueue.copy.record.enable.
func (g GroupConfig) ErrorsDLQCopyRecordEnable() bool {
	return g.bool("errors.deadletterqueue.copy.record.enable")
}

// GroupDescribeValue is a group key's value as DescribeConfigs reports it
// (ConfigHelper: GroupConfig.fromProps(extractGroupConfigMap, overrides),
// not clamped): the override converted back to a string, else the broker's
// value for a key with a broker synonym that is not internal, else the
// GroupConfig default; the broker's value is its current one as in
// ResolveGroupConfigWith. false: null.
func (c *Config) GroupDescribeValue(k GroupKey, overrides, perBroker, clusterDefault map[string]string) (string, bool) {
	if raw, ok := overrides[k.Name]; ok {
		if v, err := k.Parse(raw); err == nil {
			return groupValueString(v), true
		}
		return raw, true
	}
	if c != nil && k.BrokerSynonym != "" && !k.Internal {
		if v, ok := c.brokerGroupValue(k, perBroker, clusterDefault); ok {
			return groupValueString(v), true
		}
	}
	if !k.HasDefault {
		return "", false
	}
	if v, err := k.Parse(k.Default); err == nil {
		return groupValueString(v), true
	}
	return k.Default, true
}
