package broker

// DescribeConfigs: v1-4 (client and controller listeners)
//
// Behavior (ConfigHelper.describeConfigs, DynamicBrokerConfig):
//   - BROKER (4) for this node's id: every key Kafka defines except its
//     internal ones (ConfigDef.defineInternal: internal.*, unstable.*, ...),
//     plus every supplied key (Kafka's originals: unknown keys too, and
//     broker.id with node.id's value as KafkaConfig.populateSynonyms sets
//     it). The value is the current one: a dynamic value from the metadata
//     log (this broker's, then the cluster-wide default), else the static or
//     default value of the key itself (null when that is null: Kafka reports
//     log.retention.ms as null when only log.retention.hours is set).
//   - Synonyms (and the source, the first synonym's, else DEFAULT_CONFIG)
//     are Kafka's configSynonyms: for each of the key's synonyms
//     (log.retention.ms/minutes/hours, log.roll.*, log.flush.interval.ms,
//     listener.name.* and its base key) the per-broker dynamic, cluster
//     dynamic, static and default values, in that order, without the
//     entries before the first one for the key itself.
//   - Sensitive: PASSWORD keys and keys of unknown type (unknown and
//     plugin keys), whose values and synonym values are null. Read-only
//     unless Kafka can change the key itself dynamically. Type (v3+) the
//     key's (a listener override's base key's), UNKNOWN for keys Kafka does
//     not define.
//   - The name "" describes the cluster-wide dynamic defaults only, with
//     only those as synonyms (createBrokerConfigEntry without
//     perBrokerConfig); another
//     broker id, or a name that is not a number, is INVALID_REQUEST.
//   - TOPIC (2): every topic key Kafka defines but the internal ones, plus
//     the topic's overrides: the override (DYNAMIC_TOPIC_CONFIG), else the
//     broker's current value of the key's broker synonym converted to the
//     topic unit, else the topic default; synonyms are the override, then
//     the broker synonym's as above. Unknown topics get
//     UNKNOWN_TOPIC_OR_PARTITION, invalid names INVALID_TOPIC_EXCEPTION.
//   - BROKER_LOGGER (8): this node's loggers and their levels
//     (broker_loggers.go), each DYNAMIC_BROKER_LOGGER_CONFIG; another id,
//     an empty one or one that is not a number is INVALID_REQUEST.
//   - CLIENT_METRICS (16, KIP-714 subscriptions; ConfigHelper's
//     CLIENT_METRICS case): the three keys of ClientMetricsConfigs sorted
//     (interval.ms, match, metrics), the subscription's value (as the
//     parsed value converted back: a LIST's elements trimmed, without
//     duplicates, joined by commas) with source CLIENT_METRICS_CONFIG and
//     itself as its synonym, else the default with DEFAULT_CONFIG; a name
//     without a subscription answers the defaults, not an error; the name
//     "" is INVALID_REQUEST.
//   - GROUP (32, KIP-848/KIP-932 group configs): group_configs.go.
//   - ConfigNames (null or empty: all) limits the answer; IncludeSynonyms
//     (v1+) lists synonyms; IncludeDocumentation (v3+) adds Kafka 4.4's
//     documentation of each key it defines (config/kafka_config_meta.json).
//   - On the CONTROLLER listener the same answer describes this node's
//     configuration (Kafka's ControllerApis describes topics there without
//     broker synonyms, from its static config; kgo-broker gives the client
//     listener's answer).
//
// Version notes:
//   - v1: synonyms, ConfigSource; v2: no change; v3: ConfigType,
//     Documentation (KIP-569); v4: flexible

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(32, 1, 4, onBoth, handleDescribeConfigs) }

const (
	resourceTopic        = 2
	resourceBroker       = 4
	resourceBrokerLogger = 8
)

// describeOpts are what a DescribeConfigs resource asks for.
type describeOpts struct {
	names    []string // null or empty: every key
	synonyms bool
	docs     bool
}

func (o describeOpts) want(name string) bool {
	return len(o.names) == 0 || slices.Contains(o.names, name)
}

func handleDescribeConfigs(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.meta.Image()
	for _, rs := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
		o := describeOpts{names: rs.ConfigNames, synonyms: r.IncludeSynonyms, docs: r.Version >= 3 && r.IncludeDocumentation}
		fail := func(err *kerr.Error, format string, args ...any) {
			rr.ErrorCode = err.Code
			if format != "" {
				rr.ErrorMessage = strPtr(fmt.Sprintf(format, args...))
			}
		}
		switch rs.ResourceType {
		case resourceTopic:
			switch {
			case validateTopicName(rs.ResourceName) != nil:
				fail(kerr.InvalidTopicException, "")
			case img.TopicByName(rs.ResourceName) == nil:
				fail(kerr.UnknownTopicOrPartition, "")
			default:
				rr.Configs = b.topicConfigEntries(img, rs.ResourceName, o)
			}
		case resourceBroker:
			id, err := strconv.Atoi(rs.ResourceName)
			switch {
			case rs.ResourceName == "":
				rr.Configs = b.clusterDefaultEntries(img, o)
			case err != nil:
				fail(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", rs.ResourceName)
			case int32(id) != b.nodeID:
				fail(kerr.InvalidRequest, "Unexpected broker id, expected %d or empty string, but received %s", b.nodeID, rs.ResourceName)
			default:
				rr.Configs = b.brokerConfigEntries(img, o)
			}
		case resourceBrokerLogger:
			id, err := strconv.Atoi(rs.ResourceName)
			switch {
			case rs.ResourceName == "":
				fail(kerr.InvalidRequest, "Broker id must not be empty")
			case err != nil:
				fail(kerr.InvalidRequest, "Broker id must be an integer, but it is: %s", rs.ResourceName)
			case int32(id) != b.nodeID:
				fail(kerr.InvalidRequest, "Unexpected broker id, expected %d but received %s", b.nodeID, rs.ResourceName)
			default:
				rr.Configs = b.brokerLoggerEntries(o)
			}
		case kmsg.ConfigResourceTypeClientMetrics:
			if rs.ResourceName == "" {
				fail(kerr.InvalidRequest, "Client metrics subscription name must not be empty")
			} else {
				rr.ErrorMessage = strPtr("") // Kafka's answer here carries "", not null
				rr.Configs = clientMetricsEntries(img, rs.ResourceName, o)
			}
		case kmsg.ConfigResourceTypeGroupConfig:
			if rs.ResourceName == "" {
				fail(kerr.InvalidRequest, "Group name must not be empty")
			} else {
				rr.ErrorMessage = strPtr("")
				rr.Configs = b.groupConfigEntries(img, rs.ResourceName, o)
			}
		default:
			fail(kerr.InvalidRequest, "Unsupported resource type %d", rs.ResourceType)
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return protocol.Response{Msg: resp}, nil
}

// brokerConfigEntries describes this broker (ConfigHelper's BROKER case
// with perBrokerConfig).
func (b *Broker) brokerConfigEntries(img *metadatacache.Image, o describeOpts) []kmsg.DescribeConfigsResponseResourceConfig {
	perBroker, clusterDefaults := img.BrokerConfig(b.nodeID), img.DefaultBrokerConfig()
	originals := b.cfg.Originals()
	names := sortedKeys(originals)
	for _, k := range config.Keys() {
		if !k.Internal {
			if _, set := originals[k.Name]; !set {
				names = append(names, k.Name)
			}
		}
	}
	// Kafka's current config is rebuilt from the static, cluster default
	// and per-broker dynamic configs (DynamicBrokerConfig.updateCurrentConfig),
	// so dynamic keys KafkaConfig does not define, such as
	// leader.replication.throttled.rate, are among its originals.
	for _, m := range []map[string]string{perBroker, clusterDefaults} {
		for name := range m {
			if _, set := originals[name]; !set {
				if _, known := config.Lookup(name); !known {
					names = append(names, name)
				}
			}
		}
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range names {
		if !o.want(name) {
			continue
		}
		value, ok := perBroker[name]
		if !ok {
			value, ok = clusterDefaults[name]
		}
		if !ok {
			if _, known := config.Lookup(name); known {
				value, ok = b.cfg.Value(name)
			} else {
				value, ok = originals[name]
			}
		}
		var v *string
		if ok {
			v = &value
		}
		out = append(out, brokerEntry(b.cfg, name, v, b.cfg.DescribeSynonyms(name, perBroker, clusterDefaults), o))
	}
	return out
}

// clusterDefaultEntries describes the cluster-wide dynamic defaults (the
// BROKER resource ""): only the keys set there, without per-broker synonyms.
func (b *Broker) clusterDefaultEntries(img *metadatacache.Image, o describeOpts) []kmsg.DescribeConfigsResponseResourceConfig {
	clusterDefaults := img.DefaultBrokerConfig()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range sortedKeys(clusterDefaults) {
		if !o.want(name) {
			continue
		}
		value := clusterDefaults[name]
		var synonyms []config.ConfigSynonym
		for _, s := range b.cfg.DescribeSynonyms(name, nil, clusterDefaults) {
			if s.Source == config.SourceDynamicDefaultBrokerConfig {
				synonyms = append(synonyms, s)
			}
		}
		out = append(out, brokerEntry(b.cfg, name, &value, synonyms, o))
	}
	return out
}

// brokerEntry is ConfigHelper.createBrokerConfigEntry.
func brokerEntry(cfg *config.Config, name string, value *string, synonyms []config.ConfigSynonym, o describeOpts) kmsg.DescribeConfigsResponseResourceConfig {
	c := kmsg.NewDescribeConfigsResponseResourceConfig()
	c.Name = name
	typ, typed := config.BrokerKeyType(name)
	c.IsSensitive = !typed || typ == config.TypePassword // KafkaConfig.maybeSensitive
	if typed {
		c.ConfigType = kmsg.ConfigType(typ.DescribeConfigsType())
	}
	if !c.IsSensitive {
		c.Value = value
	}
	c.Source = kmsg.ConfigSource(config.SourceDefaultConfig)
	if len(synonyms) > 0 {
		c.Source = kmsg.ConfigSource(synonyms[0].Source)
	}
	c.ReadOnly = !config.DynamicBrokerKey(name)
	if o.synonyms {
		c.ConfigSynonyms = configSynonyms(synonyms, c.IsSensitive)
	}
	if k, known := config.Lookup(name); known && o.docs {
		c.Documentation = strPtr(k.Doc)
	}
	return c
}

// topicConfigEntries describes a topic (ConfigHelper's TOPIC case).
func (b *Broker) topicConfigEntries(img *metadatacache.Image, topic string, o describeOpts) []kmsg.DescribeConfigsResponseResourceConfig {
	overrides := img.TopicConfig(topic)
	perBroker, clusterDefaults := img.BrokerConfig(b.nodeID), img.DefaultBrokerConfig()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, tk := range config.TopicKeys() {
		override, overridden := overrides[tk.Name]
		if tk.Internal && !overridden || !o.want(tk.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = tk.Name
		c.ConfigType = kmsg.ConfigType(tk.Type.DescribeConfigsType())
		c.IsSensitive = tk.Sensitive()
		var synonyms []config.ConfigSynonym
		if overridden {
			c.Value = strPtr(override)
			synonyms = append(synonyms, config.ConfigSynonym{Name: tk.Name, Value: override, Source: config.SourceDynamicTopicConfig})
		} else if v, ok := b.cfg.TopicValue(tk, perBroker, clusterDefaults); ok {
			c.Value = strPtr(v)
		}
		if p := tk.PrimaryBrokerSynonym(); p != "" {
			synonyms = append(synonyms, b.cfg.DescribeSynonyms(p, perBroker, clusterDefaults)...)
		}
		c.Source = kmsg.ConfigSource(config.SourceDefaultConfig)
		if len(synonyms) > 0 {
			c.Source = kmsg.ConfigSource(synonyms[0].Source)
		}
		if c.IsSensitive {
			c.Value = nil
		}
		if o.synonyms {
			c.ConfigSynonyms = configSynonyms(synonyms, c.IsSensitive)
		}
		if o.docs {
			c.Documentation = strPtr(tk.Doc)
		}
		out = append(out, c)
	}
	return out
}

// clientMetricsEntries describes a client metrics subscription.
func clientMetricsEntries(img *metadatacache.Image, name string, o describeOpts) []kmsg.DescribeConfigsResponseResourceConfig {
	set := img.Configs(metadatacache.ConfigResource{Type: metadatacache.ConfigResourceClientMetrics, Name: name})
	keys := slices.Clone(config.ClientMetricsKeys)
	slices.SortFunc(keys, func(a, b config.ClientMetricsKey) int { return strings.Compare(a.Name, b.Name) })
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range keys {
		if !o.want(k.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = k.Name
		c.ConfigType = kmsg.ConfigTypeInt
		if k.Type == "LIST" {
			c.ConfigType = kmsg.ConfigTypeList
		}
		c.Value = strPtr(k.Default)
		c.Source = kmsg.ConfigSource(config.SourceDefaultConfig)
		var synonyms []config.ConfigSynonym
		if raw, ok := set[k.Name]; ok {
			v := config.ClientMetricsDescribeValue(k.Name, raw)
			c.Value = &v
			c.Source = kmsg.ConfigSource(config.SourceClientMetricsConfig)
			synonyms = append(synonyms, config.ConfigSynonym{Name: k.Name, Value: v, Source: config.SourceClientMetricsConfig})
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

func configSynonyms(in []config.ConfigSynonym, sensitive bool) []kmsg.DescribeConfigsResponseResourceConfigConfigSynonym {
	out := make([]kmsg.DescribeConfigsResponseResourceConfigConfigSynonym, 0, len(in))
	for _, s := range in {
		cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		cs.Name, cs.Source = s.Name, kmsg.ConfigSource(s.Source)
		if !sensitive {
			cs.Value = strPtr(s.Value)
		}
		out = append(out, cs)
	}
	return out
}

func strPtr(s string) *string { return &s }
