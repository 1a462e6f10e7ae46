package config

import (
	"errors"
	"sort"
	"strconv"
	"strings"
)

// Unit converts a broker synonym's value into the topic key's unit (milliseconds).
type Unit int

// Units of broker synonyms (Kafka's ConfigSynonym converters).
const (
	UnitSame Unit = iota
	UnitMinutes
	UnitHours
)

// Synonym is a broker key whose value is the broker-wide default of a topic key.
type Synonym struct {
	Name string
	Unit Unit
}

// Convert turns a value of the broker synonym into the topic key's unit
// (log.retention.hours=2 -> retention.ms=7200000).
func (s Synonym) Convert(v string) string { return s.convert(v) }

func (s Synonym) convert(v string) string {
	mul := int64(1)
	switch s.Unit {
	case UnitMinutes:
		mul = 60 * 1000
	case UnitHours:
		mul = 60 * 60 * 1000
	default:
		return strings.TrimSpace(v)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return strings.TrimSpace(v)
	}
	return strconv.FormatInt(n*mul, 10)
}

// TopicKey is a topic-level config key (Kafka's LogConfig) with its broker
// synonyms in priority order (ServerTopicConfigSynonyms).
type TopicKey struct {
	Key
	Synonyms []Synonym
}

// TopicKeys returns every topic config key, sorted by name (internal ones included).
func TopicKeys() []TopicKey {
	out := append([]TopicKey(nil), topicKeys...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupTopic returns the topic config key named name.
func LookupTopic(name string) (TopicKey, bool) {
	k, ok := topicIndex[name]
	if !ok {
		return TopicKey{}, false
	}
	return *k, true
}

// TopicKeyForBrokerSynonym returns the topic key a broker key is the default of
// (log.retention.hours -> retention.ms).
func TopicKeyForBrokerSynonym(brokerKey string) (string, bool) {
	t, ok := brokerSynonymOf[brokerKey]
	return t, ok
}

// ErrUnknownTopicConfig is wrapped by ValidateTopicConfig for names LogConfig does not know.
var ErrUnknownTopicConfig = errors.New("unknown topic config")

type topicConfigError struct{ msg string }

func (e *topicConfigError) Error() string        { return e.msg }
func (e *topicConfigError) Is(target error) bool { return target == ErrUnknownTopicConfig }

// ValidateTopicConfig checks one topic config as Kafka's LogConfig.validate does
// for CreateTopics / AlterConfigs / IncrementalAlterConfigs. The error text is the
// InvalidConfigurationException message Kafka sends (error code INVALID_CONFIG):
// "Unknown topic config name: foo" or "Invalid value x for configuration k: ...".
func ValidateTopicConfig(name, value string) error {
	k, ok := topicIndex[name]
	if !ok {
		return &topicConfigError{msg: "Unknown topic config name: " + name}
	}
	_, err := k.Parse(value)
	return err
}

// ValidateTopicConfigs validates a whole set of topic configs, including Kafka's
// cross-key checks that apply without tiered storage.
func ValidateTopicConfigs(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := ValidateTopicConfig(n, configs[n]); err != nil {
			return err
		}
	}
	if v, ok := configs["remote.storage.enable"]; ok && strings.EqualFold(strings.TrimSpace(v), "true") {
		return &ValueError{Key: "remote.storage.enable", Msg: "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log storage."}
	}
	return nil
}

// TopicDefaults returns the broker-wide default of every (non-internal) topic
// config: the first explicitly set broker synonym (converted to the topic key's
// unit), else the first synonym with a Kafka default, else the topic key's own
// default. Keys with a null default are omitted.
func (c *Config) TopicDefaults() map[string]string {
	out := map[string]string{}
	for i := range topicKeys {
		tk := &topicKeys[i]
		if tk.Internal {
			continue
		}
		if v, _, ok := c.topicDefault(tk); ok {
			out[tk.Name] = v
		}
	}
	return out
}

// topicDefault returns the value, and the broker key it came from ("" = LogConfig default).
func (c *Config) topicDefault(tk *TopicKey) (string, string, bool) {
	for _, s := range tk.Synonyms {
		if v, ok := c.explicit[s.Name]; ok {
			return s.convert(v), s.Name, true
		}
	}
	for _, s := range tk.Synonyms {
		if bk := brokerIndex[s.Name]; bk.HasDefault {
			return s.convert(bk.Default), s.Name, true
		}
	}
	if tk.HasDefault {
		return tk.Default, "", true
	}
	return "", "", false
}

// ConfigSynonym is one entry of a DescribeConfigs synonyms list.
type ConfigSynonym struct {
	Name   string
	Value  string
	Source Source
}

// TopicDefault returns a topic config's broker-wide default and the source
// DescribeConfigs reports for it on a topic without an override: STATIC_BROKER_CONFIG
// when a broker synonym is set explicitly, else DEFAULT_CONFIG.
func (c *Config) TopicDefault(topicKey string) (value string, source Source, ok bool) {
	tk, found := topicIndex[topicKey]
	if !found {
		return "", SourceUnknown, false
	}
	v, from, ok := c.topicDefault(tk)
	if !ok {
		return "", SourceUnknown, false
	}
	if from != "" && c.IsSet(from) {
		return v, SourceStaticBrokerConfig, true
	}
	return v, SourceDefaultConfig, true
}

func (c *Config) brokerSynonymEntries(name string) []ConfigSynonym {
	var out []ConfigSynonym
	if v, ok := c.explicit[name]; ok {
		out = append(out, ConfigSynonym{Name: name, Value: strings.TrimSpace(v), Source: SourceStaticBrokerConfig})
	}
	if bk, ok := brokerIndex[name]; ok && bk.HasDefault {
		out = append(out, ConfigSynonym{Name: name, Value: bk.Default, Source: SourceDefaultConfig})
	}
	return out
}

func parseInt64(s string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return n
}
