package broker

// DescribeConfigs: v1-4 (client listeners)
//
// Behavior (ConfigHelper.describeConfigs):
//   - TOPIC (2): every topic config key, its value and source: the topic's
//     own value (DYNAMIC_TOPIC_CONFIG), else the broker synonym set in the
//     broker's config (STATIC_BROKER_CONFIG), else Kafka's default
//     (DEFAULT_CONFIG). Unknown topics get UNKNOWN_TOPIC_OR_PARTITION.
//   - BROKER (4): this broker's keys with DYNAMIC_BROKER_CONFIG /
//     DYNAMIC_DEFAULT_BROKER_CONFIG from the metadata log, else
//     STATIC_BROKER_CONFIG / DEFAULT_CONFIG; the name "" describes the
//     cluster-wide dynamic defaults; another broker id is INVALID_REQUEST.
//     Sensitive (password) values are null.
//   - BROKER_LOGGER (8): no loggers are adjustable yet: an empty list.
//   - ConfigNames limits the answer; IncludeSynonyms (v1+) lists synonyms in
//     priority order; IncludeDocumentation (v3+) is honoured with null docs.
//
// Version notes:
//   - v1: synonyms, ConfigSource; v3: ConfigType, Documentation; v4: flexible

import (
	"context"
	"fmt"
	"strconv"

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

func handleDescribeConfigs(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeConfigsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := b.meta.Image()
	for _, rs := range r.Resources {
		rr := kmsg.NewDescribeConfigsResponseResource()
		rr.ResourceType, rr.ResourceName = rs.ResourceType, rs.ResourceName
		want := func(name string) bool {
			if rs.ConfigNames == nil {
				return true
			}
			for _, n := range rs.ConfigNames {
				if n == name {
					return true
				}
			}
			return false
		}
		switch rs.ResourceType {
		case resourceTopic:
			if validateTopicName(rs.ResourceName) != nil {
				rr.ErrorCode = kerr.InvalidTopicException.Code
				break
			}
			if img.TopicByName(rs.ResourceName) == nil {
				rr.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			rr.Configs = b.topicConfigEntries(img, rs.ResourceName, r, want)
		case resourceBroker:
			switch rs.ResourceName {
			case "", strconv.Itoa(int(b.nodeID)):
				rr.Configs = b.brokerConfigEntries(img, rs.ResourceName, r, want)
			default:
				rr.ErrorCode = kerr.InvalidRequest.Code
				msg := fmt.Sprintf("Unexpected broker id, expected %d or empty string, but received %s", b.nodeID, rs.ResourceName)
				rr.ErrorMessage = &msg
			}
		case resourceBrokerLogger:
			if rs.ResourceName != strconv.Itoa(int(b.nodeID)) {
				rr.ErrorCode = kerr.InvalidRequest.Code
			}
		default:
			rr.ErrorCode = kerr.InvalidRequest.Code
			msg := fmt.Sprintf("Unsupported resource type %d", rs.ResourceType)
			rr.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, rr)
	}
	return protocol.Response{Msg: resp}, nil
}

func (b *Broker) topicConfigEntries(img *metadatacache.Image, topic string, r *kmsg.DescribeConfigsRequest, want func(string) bool) []kmsg.DescribeConfigsResponseResourceConfig {
	overrides := img.TopicConfig(topic)
	perBroker := img.BrokerConfig(b.nodeID)
	clusterDefaults := img.DefaultBrokerConfig()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, tk := range config.TopicKeys() {
		if tk.Internal || !want(tk.Name) {
			continue
		}
		// Dynamic broker-level synonyms, this broker's first, then the
		// cluster-wide defaults, each in synonym priority order.
		var dynamic []config.ConfigSynonym
		for _, level := range []struct {
			m   map[string]string
			src config.Source
		}{{perBroker, config.SourceDynamicBrokerConfig}, {clusterDefaults, config.SourceDynamicDefaultBrokerConfig}} {
			for _, syn := range tk.Synonyms {
				if v, ok := level.m[syn.Name]; ok {
					dynamic = append(dynamic, config.ConfigSynonym{Name: syn.Name, Value: v, Source: level.src})
				}
			}
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = tk.Name
		c.IsSensitive = tk.Sensitive()
		c.ConfigType = kmsg.ConfigType(tk.Type.DescribeConfigsType())
		var synonyms []config.ConfigSynonym
		if v, ok := overrides[tk.Name]; ok {
			c.Value, c.Source = strPtr(v), kmsg.ConfigSource(config.SourceDynamicTopicConfig)
			synonyms = append(synonyms, config.ConfigSynonym{Name: tk.Name, Value: v, Source: config.SourceDynamicTopicConfig})
		} else if len(dynamic) > 0 {
			c.Value, c.Source = strPtr(dynamicTopicValue(tk, dynamic[0])), kmsg.ConfigSource(dynamic[0].Source)
		} else if v, src, ok := b.cfg.TopicDefault(tk.Name); ok {
			c.Value, c.Source = strPtr(v), kmsg.ConfigSource(src)
		} else {
			c.Source = kmsg.ConfigSource(config.SourceDefaultConfig)
		}
		if c.IsSensitive {
			c.Value = nil
		}
		if r.IncludeSynonyms {
			synonyms = append(synonyms, dynamic...)
			synonyms = append(synonyms, b.cfg.TopicSynonyms(tk.Name)...)
			c.ConfigSynonyms = configSynonyms(synonyms, c.IsSensitive)
		}
		out = append(out, c)
	}
	return out
}

func (b *Broker) brokerConfigEntries(img *metadatacache.Image, name string, r *kmsg.DescribeConfigsRequest, want func(string) bool) []kmsg.DescribeConfigsResponseResourceConfig {
	perBroker := map[string]string{}
	if name != "" {
		perBroker = img.BrokerConfig(b.nodeID)
	}
	clusterDefaults := img.DefaultBrokerConfig()
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, k := range config.Keys() {
		if k.Internal || !want(k.Name) {
			continue
		}
		c := kmsg.NewDescribeConfigsResponseResourceConfig()
		c.Name = k.Name
		c.IsSensitive = k.Sensitive()
		c.ConfigType = kmsg.ConfigType(k.Type.DescribeConfigsType())
		var synonyms []config.ConfigSynonym
		if v, ok := perBroker[k.Name]; ok {
			synonyms = append(synonyms, config.ConfigSynonym{Name: k.Name, Value: v, Source: config.SourceDynamicBrokerConfig})
		}
		if v, ok := clusterDefaults[k.Name]; ok {
			synonyms = append(synonyms, config.ConfigSynonym{Name: k.Name, Value: v, Source: config.SourceDynamicDefaultBrokerConfig})
		}
		if name == "" {
			// The cluster-default resource lists only what is set dynamically.
			if len(synonyms) == 0 {
				continue
			}
			c.Value, c.Source = strPtr(synonyms[0].Value), kmsg.ConfigSource(synonyms[0].Source)
		} else {
			synonyms = append(synonyms, b.cfg.BrokerSynonyms(k.Name)...)
			// The key's own value: a dynamic one, else the static or
			// default value of this very key (never a synonym's: Kafka
			// reports log.retention.ms as null when only
			// log.retention.hours is set).
			switch {
			case len(synonyms) > 0 && synonyms[0].Source < config.SourceStaticBrokerConfig:
				c.Value, c.Source = strPtr(synonyms[0].Value), kmsg.ConfigSource(synonyms[0].Source)
			default:
				if v, src, ok := b.cfg.Get(k.Name); ok {
					c.Value, c.Source = strPtr(v), kmsg.ConfigSource(src)
				} else {
					c.Source = kmsg.ConfigSource(config.SourceDefaultConfig)
				}
			}
		}
		// Static keys are read-only; keys that can be changed dynamically
		// are not distinguished yet, so only dynamic values say so.
		c.ReadOnly = c.Source >= kmsg.ConfigSource(config.SourceStaticBrokerConfig)
		if c.IsSensitive {
			c.Value = nil
		}
		if r.IncludeSynonyms {
			c.ConfigSynonyms = configSynonyms(synonyms, c.IsSensitive)
		}
		out = append(out, c)
	}
	return out
}

// dynamicTopicValue converts a dynamic broker synonym's value into the
// topic key's unit.
func dynamicTopicValue(tk config.TopicKey, syn config.ConfigSynonym) string {
	for _, s := range tk.Synonyms {
		if s.Name == syn.Name {
			return s.Convert(syn.Value)
		}
	}
	return syn.Value
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
