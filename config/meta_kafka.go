package config

// Kafka's own description of its keys, generated from the 4.4.0 jars by
// scripts/gen-config-meta into kafka_config_meta.json: each key's
// documentation (what DescribeConfigs v3+ returns), whether it is internal
// (ConfigDef.defineInternal: never listed by DescribeConfigs) and, for
// broker keys, whether it can be changed dynamically
// (DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS: DescribeConfigs' read_only is
// false exactly for those and their synonyms).

import (
	_ "embed"
	"encoding/json"
	"fmt"
)

//go:embed kafka_config_meta.json
var kafkaConfigMeta []byte

type keyMeta struct {
	Doc      *string `json:"doc"`
	Internal bool    `json:"internal"`
	Dynamic  bool    `json:"dynamic"`
}

// applyKafkaMeta sets Doc, Internal and Dynamic on the key tables. The
// tables and the metadata must name the same keys: both come from the same
// Kafka release.
func applyKafkaMeta() error {
	var m struct {
		Kafka  string             `json:"kafka"`
		Broker map[string]keyMeta `json:"broker"`
		Topic  map[string]keyMeta `json:"topic"`
	}
	if err := json.Unmarshal(kafkaConfigMeta, &m); err != nil {
		return err
	}
	apply := func(k *Key, km keyMeta, ok bool, what string) error {
		if !ok {
			return fmt.Errorf("%s key %s is not in kafka_config_meta.json (Kafka %s)", what, k.Name, m.Kafka)
		}
		if km.Doc != nil {
			k.Doc = *km.Doc
		}
		k.Internal, k.Dynamic = km.Internal, km.Dynamic
		return nil
	}
	for i := range brokerKeys {
		km, ok := m.Broker[brokerKeys[i].Name]
		if err := apply(&brokerKeys[i], km, ok, "broker"); err != nil {
			return err
		}
	}
	for i := range topicKeys {
		km, ok := m.Topic[topicKeys[i].Name]
		if err := apply(&topicKeys[i].Key, km, ok, "topic"); err != nil {
			return err
		}
	}
	if len(m.Broker) != len(brokerKeys) || len(m.Topic) != len(topicKeys) {
		return fmt.Errorf("kafka_config_meta.json (Kafka %s) has %d broker and %d topic keys, the tables %d and %d",
			m.Kafka, len(m.Broker), len(m.Topic), len(brokerKeys), len(topicKeys))
	}
	return nil
}
