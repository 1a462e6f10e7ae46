package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// Every Kafka default must parse and pass its own validator, and the synonym
// table must be consistent.
func TestTableSanity(t *testing.T) {
	if len(brokerKeys) < 370 || len(topicKeys) < 35 {
		t.Fatalf("table too small: %d broker, %d topic keys", len(brokerKeys), len(topicKeys))
	}
	check := func(k Key) {
		if !k.HasDefault {
			return
		}
		if _, err := k.Parse(k.Default); err != nil && k.Name != "controller.quorum.voters" {
			// Kafka does not validate defaults either; only these may fail.
			if !strings.Contains(err.Error(), "must not be empty") {
				t.Errorf("default of %s: %v", k.Name, err)
			}
		}
	}
	for _, k := range brokerKeys {
		check(k)
	}
	for _, k := range topicKeys {
		check(k.Key)
	}
	for _, name := range []string{"process.roles", "node.id", "listeners", "log.dirs", "log.segment.bytes", "message.max.bytes"} {
		if k, ok := Lookup(name); !ok || !k.Acted {
			t.Errorf("%s not acted", name)
		}
	}
	if k, _ := Lookup("num.network.threads"); k.Acted {
		t.Error("num.network.threads acted")
	}
	if len(ActedOn())+len(NotActedOn()) != len(Keys()) {
		t.Error("acted + not acted != all")
	}
	if k, _ := Lookup("process.roles"); !k.Required || k.Type != TypeList || k.Importance != High {
		t.Errorf("%+v", k)
	}
	if k, _ := Lookup("ssl.keystore.password"); !k.Sensitive() || k.Type.DescribeConfigsType() != 9 {
		t.Error("password")
	}
}

func TestTopicSynonyms(t *testing.T) {
	cases := map[string][]string{
		"segment.bytes":             {"log.segment.bytes"},
		"retention.ms":              {"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		"segment.ms":                {"log.roll.ms", "log.roll.hours"},
		"cleanup.policy":            {"log.cleanup.policy"},
		"min.insync.replicas":       {"min.insync.replicas"},
		"max.message.bytes":         {"message.max.bytes"},
		"flush.messages":            {"log.flush.interval.messages"},
		"flush.ms":                  {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"},
		"segment.index.bytes":       {"log.index.size.max.bytes"},
		"file.delete.delay.ms":      {"log.segment.delete.delay.ms"},
		"min.cleanable.dirty.ratio": {"log.cleaner.min.cleanable.ratio"},
		"remote.storage.enable":     nil,
	}
	for topic, want := range cases {
		tk, ok := LookupTopic(topic)
		if !ok {
			t.Fatalf("%s unknown", topic)
		}
		var got []string
		for _, s := range tk.Synonyms {
			got = append(got, s.Name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s synonyms %q want %q", topic, got, want)
		}
	}
	if tk, ok := TopicKeyForBrokerSynonym("log.retention.hours"); !ok || tk != "retention.ms" {
		t.Error(tk)
	}
}

func TestTopicDefaults(t *testing.T) {
	c, err := SingleNode(nil)
	if err != nil {
		t.Fatal(err)
	}
	d := c.TopicDefaults()
	want := map[string]string{
		"retention.ms": "604800000", "segment.ms": "604800000", "segment.bytes": "1073741824",
		"cleanup.policy": "delete", "max.message.bytes": "1048588", "flush.messages": "9223372036854775807",
		"flush.ms": "9223372036854775807", "min.insync.replicas": "1", "segment.jitter.ms": "0",
		"retention.bytes": "-1", "compression.type": "producer", "message.timestamp.type": "CreateTime",
		"unclean.leader.election.enable": "false", "index.interval.bytes": "4096", "segment.index.bytes": "10485760",
		"message.timestamp.after.max.ms": "3600000", "remote.storage.enable": "false", "min.cleanable.dirty.ratio": "0.5",
	}
	for k, v := range want {
		if d[k] != v {
			t.Errorf("%s = %q want %q", k, d[k], v)
		}
	}
	if _, ok := d["internal.segment.bytes"]; ok {
		t.Error("internal key in defaults")
	}
	if v, src, _ := c.TopicDefault("retention.ms"); v != "604800000" || src != SourceDefaultConfig {
		t.Error(v, src)
	}

	c, err = SingleNode(map[string]string{"log.retention.minutes": "5", "log.roll.hours": "2", "log.flush.scheduler.interval.ms": "1000", "message.max.bytes": "2000000"})
	if err != nil {
		t.Fatal(err)
	}
	d = c.TopicDefaults()
	if d["retention.ms"] != "300000" || d["segment.ms"] != "7200000" || d["flush.ms"] != "1000" || d["max.message.bytes"] != "2000000" {
		t.Fatal(d)
	}
	if v, src, _ := c.TopicDefault("retention.ms"); v != "300000" || src != SourceStaticBrokerConfig {
		t.Error(v, src)
	}
	// log.retention.ms wins over minutes and hours.
	c, _ = SingleNode(map[string]string{"log.retention.ms": "1234", "log.retention.hours": "1"})
	if c.TopicDefaults()["retention.ms"] != "1234" {
		t.Fatal(c.TopicDefaults()["retention.ms"])
	}
	// DescribeConfigs' synonyms (ConfigHelper.configSynonyms): source by
	// source, then without the entries before the key's own.
	all := []ConfigSynonym{
		{"log.retention.ms", "1234", SourceStaticBrokerConfig},
		{"log.retention.hours", "1", SourceStaticBrokerConfig},
		{"log.retention.hours", "168", SourceDefaultConfig},
	}
	if got := c.DescribeSynonyms("log.retention.ms", nil, nil); !reflect.DeepEqual(got, all) {
		t.Fatalf("%+v", got)
	}
	if got := c.DescribeSynonyms("log.retention.hours", nil, nil); !reflect.DeepEqual(got, all[1:]) {
		t.Fatalf("%+v", got)
	}
	if got := c.DescribeSynonyms("log.retention.minutes", nil, nil); got != nil {
		t.Fatalf("minutes is set nowhere: %+v", got)
	}
	dyn := c.DescribeSynonyms("log.retention.ms", map[string]string{"log.retention.hours": "2"}, map[string]string{"log.retention.ms": "5"})
	wantDyn := append([]ConfigSynonym{{"log.retention.ms", "5", SourceDynamicDefaultBrokerConfig}}, all...)
	if !reflect.DeepEqual(dyn, wantDyn) {
		t.Fatalf("dynamic: %+v", dyn)
	}
	if got := c.DescribeSynonyms("num.partitions", nil, nil); !reflect.DeepEqual(got, []ConfigSynonym{{"num.partitions", "1", SourceStaticBrokerConfig}, {"num.partitions", "1", SourceDefaultConfig}}) {
		t.Fatalf("%+v", got)
	}
	// log.retention.ms, if set, wins whatever the source of the others.
	if v, _ := c.TopicValue(topicKeys[indexOfTopicKey("retention.ms")], map[string]string{"log.retention.hours": "2"}, nil); v != "1234" {
		t.Fatalf("retention.ms %s", v)
	}
	if got := BrokerConfigSynonyms("listener.name.sasl_ssl.plain.sasl.jaas.config"); !reflect.DeepEqual(got, []string{"listener.name.sasl_ssl.plain.sasl.jaas.config", "sasl.jaas.config"}) {
		t.Fatalf("%v", got)
	}
	if got := BrokerConfigSynonyms("listener.name.ssl.ssl.keystore.location"); !reflect.DeepEqual(got, []string{"listener.name.ssl.ssl.keystore.location", "ssl.keystore.location"}) {
		t.Fatalf("%v", got)
	}
	if typ, ok := BrokerKeyType("listener.name.ssl.ssl.keystore.password"); !ok || typ != TypePassword || DynamicBrokerKey("listener.name.ssl.ssl.keystore.password") {
		t.Fatalf("listener override type %v %v", typ, ok)
	}
	if typ, _ := BrokerKeyType("log.retention.hours"); typ != TypeInt || DynamicBrokerKey("log.retention.hours") || !DynamicBrokerKey("log.retention.ms") {
		t.Fatalf("log.retention.hours: %v", typ)
	}
	if _, ok := BrokerKeyType("confluent.license"); ok {
		t.Fatal("an unknown key has a type")
	}
}

func indexOfTopicKey(name string) int {
	for i := range topicKeys {
		if topicKeys[i].Name == name {
			return i
		}
	}
	panic(name)
}

func TestValidateTopicConfig(t *testing.T) {
	bad := map[[2]string]string{
		{"retention.ms", "-5"}:                             "Invalid value -5 for configuration retention.ms: Value must be at least -1",
		{"cleanup.policy", "foo"}:                          "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete",
		{"segment.bytes", "abc"}:                           "Invalid value abc for configuration segment.bytes: Not a number of type INT",
		{"segment.bytes", "100"}:                           "Invalid value 100 for configuration segment.bytes: Value must be at least 1048576",
		{"min.insync.replicas", "0"}:                       "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
		{"compression.type", "x"}:                          "Invalid value x for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
		{"message.timestamp.type", "x"}:                    "Invalid value x for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime",
		{"unclean.leader.election.enable", "x"}:            "Invalid value x for configuration unclean.leader.election.enable: Expected value to be either true or false",
		{"min.cleanable.dirty.ratio", "1.5"}:               "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
		{"compression.gzip.level", "0"}:                    "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
		{"flush.messages", "0"}:                            "Invalid value 0 for configuration flush.messages: Value must be at least 1",
		{"leader.replication.throttled.replicas", "0:1,*"}: "Invalid value [0:1, *] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
		{"local.retention.ms", "-3"}:                       "Invalid value -3 for configuration local.retention.ms: Value must be at least -2",
		{"foo.bar", "1"}:                                   "Unknown topic config name: foo.bar",
	}
	for kv, want := range bad {
		err := ValidateTopicConfig(kv[0], kv[1])
		if err == nil || err.Error() != want {
			t.Errorf("%s=%s: got %v\nwant %s", kv[0], kv[1], err, want)
		}
	}
	if err := ValidateTopicConfig("nope", "1"); !errors.Is(err, ErrUnknownTopicConfig) {
		t.Error(err)
	}
	good := [][2]string{
		{"cleanup.policy", ""}, {"cleanup.policy", "compact,delete"}, {"cleanup.policy", "compact,compact"}, {"retention.bytes", "-7"}, {"preallocate", "TRUE"},
		{"leader.replication.throttled.replicas", "*"}, {"follower.replication.throttled.replicas", "0:1, 1:2"},
		{"retention.ms", "-1"}, {"compression.gzip.level", "-1"}, {"compression.zstd.level", "-5"}, {"segment.ms", " 100 "},
	}
	for _, kv := range good {
		if err := ValidateTopicConfig(kv[0], kv[1]); err != nil {
			t.Errorf("%s=%s: %v", kv[0], kv[1], err)
		}
	}
	if err := ValidateTopicConfigs(map[string]string{"retention.ms": "1", "remote.storage.enable": "true"}); err == nil {
		t.Error("remote storage accepted")
	}
}
