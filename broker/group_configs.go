package broker

// GROUP config resources (type 32; KIP-848 group configs, KIP-932 share
// keys): DescribeConfigs' GROUP case and the lookup the group and share
// coordinators read a group's dynamic configs with. Altering them is the
// controller's (controller/configs.go); this broker only forwards.
//
// DescribeConfigs (ConfigHelper's GROUP case, createGroupConfigEntry):
//   - The name "" (or null) is INVALID_REQUEST "Group name must not be
//     empty"; any other name is described, whether or not the group
//     exists or has configs (ConfigRepository.groupConfig of an unknown
//     group is empty). The error message is "" as ConfigHelperUtils
//     .createResponseConfig leaves it.
//   - The keys are GroupConfig's (config.GroupKeys), its internal ones
//     (the *.assignor.offload.enable keys, streams.task.offset.interval.ms,
//     streams.num.warmup.replicas, streams.acceptable.recovery.lag) only
//     when the group sets them (ConfigHelperUtils.createResponseConfig:
//     the originals that are not among AbstractConfig.nonInternalValues,
//     then those), in Kafka's order: the internal overrides in the
//     originals' java.util.HashMap order, then the non-internal keys in
//     their HashMap's order (config.JavaHashOrder; checked against Kafka
//     4.4 on the wire; kafka-configs.sh sorts them anyway).
//   - Value: GroupConfig.fromProps(extractGroupConfigMap, overrides): the
//     group's override as parsed and converted back to a string (not
//     clamped to the broker's bounds), else the broker's current value
//     (dynamic, cluster default, static) of the key's broker synonym (group.share.delivery.count.limit for
//     share.delivery.count.limit; the first of group.streams.assignors
//     for streams.assignor.name), else GroupConfig's default.
//   - Synonyms: the override as GROUP_CONFIG (8), then for a key with a
//     broker synonym that key's synonyms as for a broker config (dynamic
//     per-broker, cluster default, static, default), else the GroupConfig
//     default as DEFAULT_CONFIG. The source is the first synonym's.
//   - Never sensitive (GroupConfig has no PASSWORD key), never read-only;
//     ConfigType the key's; Documentation GroupConfig's doc of the key.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// GroupConfigs returns the dynamic configs set on a group (the GROUP config
// resource's overrides only, from this broker's metadata image; nil when
// none). Pass them to (*config.Config).ResolveGroupConfig, or use
// GroupConfig.
func (b *Broker) GroupConfigs(groupID string) map[string]string {
	return b.meta.Image().GroupConfigs(groupID)
}

// GroupConfig returns a group's effective settings: its overrides clamped
// to this broker's group.* bounds, else this broker's current group.*
// values (dynamic ones included).
func (b *Broker) GroupConfig(groupID string) config.GroupConfig {
	img := b.meta.Image()
	return b.cfg.ResolveGroupConfigWith(img.GroupConfigs(groupID), img.BrokerConfig(b.nodeID), img.DefaultBrokerConfig())
}

// groupConfigEntries describes a group (ConfigHelper's GROUP case).
func (b *Broker) groupConfigEntries(img *metadatacache.Image, groupID string, o describeOpts) []kmsg.DescribeConfigsResponseResourceConfig {
	overrides := img.GroupConfigs(groupID)
	perBroker, clusterDefaults := img.BrokerConfig(b.nodeID), img.DefaultBrokerConfig()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range groupDescribeOrder(overrides) {
		k, _ := config.LookupGroupKey(name)
		override, overridden := overrides[k.Name]
		if !o.want(k.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = k.Name
		c.ConfigType = kmsg.ConfigType(k.Type.DescribeConfigsType())
		if k.Internal {
			c.Value = strPtr(override) // an original, not a parsed value
		} else if v, ok := b.cfg.GroupDescribeValue(k, overrides, perBroker, clusterDefaults); ok {
			c.Value = strPtr(v)
		}
		var synonyms []config.ConfigSynonym
		if overridden {
			synonyms = append(synonyms, config.ConfigSynonym{Name: k.Name, Value: override, Source: config.SourceGroupConfig})
		}
		if k.BrokerSynonym != "" {
			synonyms = append(synonyms, b.cfg.DescribeSynonyms(k.BrokerSynonym, perBroker, clusterDefaults)...)
		} else if k.HasDefault {
			synonyms = append(synonyms, config.ConfigSynonym{Name: k.Name, Value: k.Default, Source: config.SourceDefaultConfig})
		}
		c.Source = kmsg.ConfigSource(config.SourceDefaultConfig)
		if len(synonyms) > 0 {
			c.Source = kmsg.ConfigSource(synonyms[0].Source)
		}
		if o.synonyms {
			c.ConfigSynonyms = configSynonyms(synonyms, false)
		}
		if o.docs {
			c.Documentation = strPtr(k.Doc)
		}
		out = append(out, c)
	}
	return out
}

// groupDescribeOrder is the order of ConfigHelper's GROUP entries: the
// internal keys among the GroupConfig's originals (a HashMap copied from
// the Properties of KafkaConfig.extractGroupConfigMap and the overrides),
// then its nonInternalValues (a HashMap filled from its parsed values, a
// HashMap of every key). Checked against Kafka 4.4.0's GroupConfig and its
// DescribeConfigs answer.
func groupDescribeOrder(overrides map[string]string) []string {
	var all, originals []string
	for _, k := range config.GroupKeys() {
		all = append(all, k.Name)
		if k.BrokerSynonym != "" && !k.Internal {
			originals = append(originals, k.Name) // extractGroupConfigMap
		}
	}
	var nonInternal []string
	for _, n := range config.JavaHashOrder(all, false) {
		if k, _ := config.LookupGroupKey(n); !k.Internal {
			nonInternal = append(nonInternal, n)
		}
	}
	out := config.JavaHashOrder(nonInternal, false)
	var set, first []string
	for n := range overrides {
		if k, ok := config.LookupGroupKey(n); ok && k.Internal {
			set = append(set, n)
		}
	}
	if len(set) == 0 {
		return out
	}
	slices.Sort(set)
	for _, n := range config.JavaHashOrder(config.JavaHashOrder(append(originals, set...), true), false) {
		if k, _ := config.LookupGroupKey(n); k.Internal {
			first = append(first, n)
		}
	}
	return append(first, out...)
}
