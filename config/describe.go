package config

// What DescribeConfigs needs of a broker's configuration, as Kafka's
// ConfigHelper and DynamicBrokerConfig compute it: the originals, the
// static defaults, each key's synonyms and type.

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Originals are the supplied keys as Kafka keeps them
// (AbstractConfig.originals after KafkaConfig.populateSynonyms): every key
// set in the file, the environment or an override, unknown ones included,
// plus broker.id with node.id's value when only node.id is set.
func (c *Config) Originals() map[string]string { return maps.Clone(c.originals()) }

func (c *Config) originals() map[string]string {
	c.originalsOnce.Do(func() { c.originalsMap = c.buildOriginals() })
	return c.originalsMap
}

func (c *Config) buildOriginals() map[string]string {
	out := make(map[string]string, len(c.explicit)+1)
	for k, v := range c.explicit {
		if _, known := brokerIndex[k]; known {
			v = strings.TrimSpace(v)
		}
		out[k] = v
	}
	if _, ok := out["broker.id"]; !ok {
		if id, ok := out["node.id"]; ok {
			out["broker.id"] = id
		}
	}
	return out
}

// StaticDefaults are the non-null defaults of every broker key, as strings
// (DynamicBrokerConfig.staticDefaultConfigs).
func StaticDefaults() map[string]string { return maps.Clone(staticDefaults()) }

var staticDefaults = sync.OnceValue(func() map[string]string {
	out := make(map[string]string, len(brokerKeys))
	for _, k := range brokerKeys {
		if k.HasDefault {
			out[k.Name] = k.Default
		}
	}
	return out
})

// Value is a known key's effective static value as Kafka's ConfigDef
// converts it back to a string (lists joined with ","), and false when the
// value is null or the key unknown. broker.id is node.id's when only
// node.id is set (KafkaConfig.populateSynonyms).
func (c *Config) Value(name string) (string, bool) {
	if _, known := brokerIndex[name]; !known {
		return "", false
	}
	if name == "broker.id" && !c.IsSet(name) && c.IsSet("node.id") {
		return c.NodeIDString(), true
	}
	if c.values[name] == nil {
		return "", false
	}
	return c.String(name), true
}

// listenerConfigRE is DynamicBrokerConfig.ListenerConfigNameRegex.
var listenerConfigRE = regexp.MustCompile(`^listener\.name\.[^.]*\.(.*)$`)

// listenerMechanismConfigs are DynamicBrokerConfig.LISTENER_MECHANISM_CONFIGS:
// set per listener and SASL mechanism (listener.name.l.mechanism.<key>).
var listenerMechanismConfigs = []string{
	"sasl.jaas.config", "sasl.login.class", "sasl.login.callback.handler.class",
	"sasl.server.callback.handler.class", "connections.max.reauth.ms", "sasl.server.max.receive.size",
}

// BrokerConfigSynonyms is DynamicBrokerConfig.brokerConfigSynonyms with
// listener overrides matched: the keys that set name, highest priority
// first (log.retention.ms, .minutes, .hours; log.roll.ms, .hours;
// log.roll.jitter.ms, .hours; log.flush.interval.ms then
// log.flush.scheduler.interval.ms; a listener.name.* key then its base key),
// else name alone.
func BrokerConfigSynonyms(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	if m := listenerConfigRE.FindStringSubmatch(name); m != nil {
		base := m[1]
		for _, mc := range listenerMechanismConfigs {
			if strings.HasSuffix(name, "."+mc) {
				base = mc
			}
		}
		return []string{name, base}
	}
	return []string{name}
}

// BrokerQuotaKeys are QuotaConfig.brokerQuotaConfigs: LONG broker keys
// (bytes per second, at least 0, default Long.MAX_VALUE) that can only be
// set dynamically, per broker or as the cluster default. KafkaConfig does
// not define them, so a server.properties value is ignored, and
// DescribeConfigs lists them only when set, read-only (they are not in
// DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS), as Kafka does.
var BrokerQuotaKeys = []string{
	"leader.replication.throttled.rate",
	"follower.replication.throttled.rate",
	"replica.alter.log.dirs.io.max.bytes.per.second",
}

// ValidateBrokerQuotaConfig is DynamicConfig.Broker.validate for the
// BrokerQuotaKeys (ConfigAdminManager.validateBrokerConfigChange): a LONG of
// at least 0. Other names are not checked here.
func ValidateBrokerQuotaConfig(name, value string) error {
	if !slices.Contains(BrokerQuotaKeys, name) {
		return nil
	}
	parsed, err := parseType(name, value, TypeLong)
	if err != nil {
		return err
	}
	return AtLeast(0).Validate(name, value, parsed)
}

// BrokerKeyType is KafkaConfig.configType: the key's type, or for a
// listener override (listener.name.<l>.[<mechanism>.]<key>) its base key's;
// ok is false for keys Kafka does not define (which DescribeConfigs reports
// as sensitive, of type UNKNOWN).
func BrokerKeyType(name string) (Type, bool) {
	if k, ok := brokerIndex[name]; ok {
		return k.Type, true
	}
	if slices.Contains(BrokerQuotaKeys, name) {
		return TypeLong, true // configTypeExact: DynamicConfig.Broker's keys
	}
	if listenerConfigRE.MatchString(name) {
		if k, ok := brokerIndex[BrokerConfigSynonyms(name)[1]]; ok {
			return k.Type, true
		}
	}
	return 0, false
}

// DynamicBrokerKey reports whether Kafka can change name at runtime
// (DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS; DescribeConfigs' read_only is
// the negation, for the exact name: listener overrides are read-only).
func DynamicBrokerKey(name string) bool {
	k, ok := brokerIndex[name]
	return ok && k.Dynamic
}

// DescribeSynonyms is ConfigHelper.configSynonyms for a broker key: the
// values of name's synonyms, source by source (this broker's dynamic
// configs, the cluster-wide dynamic defaults, the static originals, the
// static defaults), each source in synonym priority order, without the
// entries before the first one for name itself (so log.retention.ms lists
// nothing when only log.retention.hours is set, as in Kafka).
func (c *Config) DescribeSynonyms(name string, perBroker, clusterDefault map[string]string) []ConfigSynonym {
	names := BrokerConfigSynonyms(name)
	originals, defaults := c.originals(), staticDefaults()
	var all []ConfigSynonym
	for _, level := range []struct {
		m   map[string]string
		src Source
	}{{perBroker, SourceDynamicBrokerConfig}, {clusterDefault, SourceDynamicDefaultBrokerConfig},
		{originals, SourceStaticBrokerConfig}, {defaults, SourceDefaultConfig}} {
		for _, n := range names {
			if v, ok := level.m[n]; ok {
				all = append(all, ConfigSynonym{Name: n, Value: v, Source: level.src})
			}
		}
	}
	for i, s := range all {
		if s.Name == name {
			return all[i:]
		}
	}
	return nil
}

// PrimaryBrokerSynonym is ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS:
// the broker key whose value is a topic key's default (log.retention.ms for
// retention.ms), "" when it has none.
func (tk TopicKey) PrimaryBrokerSynonym() string {
	if len(tk.Synonyms) == 0 {
		return ""
	}
	return tk.Synonyms[0].Name
}

// TopicValue is a topic key's effective value on a topic without an
// override, as LogConfig.fromProps over KafkaConfig.extractLogConfigMap
// computes it from the broker's current config: each broker synonym's
// value is this broker's dynamic one, else the cluster-wide dynamic
// default, else the static one; the first synonym with a value wins
// (log.retention.ms over .minutes over .hours), converted into the topic
// key's unit; else the broker default, else the topic key's own default.
// ok is false when the value is null.
func (c *Config) TopicValue(tk TopicKey, perBroker, clusterDefault map[string]string) (string, bool) {
	for _, s := range tk.Synonyms {
		for _, m := range []map[string]string{perBroker, clusterDefault, c.explicit} {
			if v, ok := m[s.Name]; ok {
				return s.convert(v), true
			}
		}
	}
	v, _, ok := c.topicDefault(&tk)
	return v, ok
}
