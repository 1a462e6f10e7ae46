package config

import (
	"os"
	"strings"
	"testing"
)

// TestAcceptsLikeKafka replays testdata/kafka-4.4-broker-accepts.tsv: for every
// broker key and a set of odd values (on top of a valid combined-node config),
// whether Kafka 4.4.0's KafkaConfig.fromProps accepted it (OK) or not (ERR).
// kgo-broker must agree, except for CLASS-like keys: it cannot load Java classes,
// so it accepts any class name (they are never acted on).
func TestAcceptsLikeKafka(t *testing.T) {
	data, err := os.ReadFile("testdata/kafka-4.4-broker-accepts.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			t.Fatalf("bad line %q", line)
		}
		if k, _ := Lookup(f[0]); k.Type == TypeClass || strings.HasSuffix(f[0], ".assignors") {
			continue
		}
		props := map[string]string{"process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": "1@localhost:9093",
			"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "advertised.listeners": "PLAINTEXT://localhost:9092",
			"controller.listener.names": "CONTROLLER", "log.dirs": "/tmp/x"}
		props[f[0]] = f[1]
		_, err := New(props)
		if kafkaOK := f[2] == "OK"; kafkaOK != (err == nil) {
			t.Errorf("%s=%q: Kafka %s, kgo-broker %v", f[0], f[1], f[2], err)
		}
	}
}

// TestTopicConfigAcceptsLikeKafka replays testdata/kafka-4.4-topic-accepts.tsv:
// whether Kafka 4.4.0's LogConfig.validate accepted a single topic config.
func TestTopicConfigAcceptsLikeKafka(t *testing.T) {
	data, err := os.ReadFile("testdata/kafka-4.4-topic-accepts.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		f := strings.Split(line, "\t")
		err := ValidateTopicConfig(f[0], f[1])
		if kafkaOK := f[2] == "OK"; kafkaOK != (err == nil) {
			t.Errorf("%s=%q: Kafka %s, kgo-broker %v", f[0], f[1], f[2], err)
		}
	}
}
