// Package config is kgo-broker's view of Apache Kafka's broker configuration.
//
// It knows every broker config key of Apache Kafka 4.4.0 (name, type, default,
// validator, importance; keys_table.go, generated from Kafka's ConfigDefs) and
// every topic-level key with its broker synonyms (LogConfig and
// ServerTopicConfigSynonyms). A key kgo-broker acts on is marked Acted (acted.go);
// the others are accepted and validated exactly as Kafka validates them, and
// reported once at startup (NotActedOn, Config.ExplicitNotActedOn) and in
// docs/CONFIG.md. A key Kafka does not know (a plugin's, a metrics
// reporter's, a vendor's) is accepted as Kafka accepts it: kept with the
// other supplied keys and listed by Config.UnknownKeys, which the server
// logs once each at WARN; LoadOptions.Strict refuses it instead.
//
// Where values come from, lowest precedence first:
//
//	built-in single-node defaults   only when there is no file and no KAFKA_* variable
//	server.properties               Java .properties format (ParseProperties)
//	KAFKA_* environment             mapped as Apache Kafka's docker image maps it (EnvKey)
//	--override key=value
//
// Load resolves them and validates the result as KafkaConfig does (KRaft mode),
// with Kafka's messages plus where the bad value came from and how to fix it.
// Config exposes the essentials typed (node id, roles, listeners, quorum voters,
// log dirs) and every key through Int/Long/Bool/String/List/Get.
//
// kafka_config_meta.json (meta_kafka.go; scripts/gen-config-meta writes it from
// the 4.4.0 jars) adds each key's documentation and whether Kafka treats it as
// internal or dynamic, for DescribeConfigs (describe.go: originals, synonyms,
// types as Kafka's ConfigHelper computes them).
//
// meta.go reads and writes meta.properties (v0/v1) as Kafka's MetaProperties does;
// uuid.go is Kafka's Uuid (random, parse, base64url string form).
//
// Regenerate docs/CONFIG.md after changing acted.go:
//
//go:generate go test -run TestConfigDoc -update-doc .
package config
