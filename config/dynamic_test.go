package config

import "testing"

// TestValidateDynamic checks DynamicBrokerConfig.validate's answers; the
// messages are those Kafka 4.4.0 gave for the same changes on a default
// single node (integration/live_configs_test.go asks both).
func TestValidateDynamic(t *testing.T) {
	c, err := SingleNode(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key, val  string
		perBroker bool
		want      string
	}{
		{"node.id", "5", true, "Cannot update these configs dynamically: [node.id]"},
		{"log.dirs", "/x", false, "Cannot update these configs dynamically: [log.dirs]"},
		{"process.roles", "broker", true, "Cannot update these configs dynamically: [process.roles]"},
		{"listener.name.plaintext.ssl.keystore.location", "/x", false, "Cannot update these configs at default cluster level, broker id must be specified: [listener.name.plaintext.ssl.keystore.location]"},
		{"listener.name.plaintext.ssl.keystore.location", "/x", true, ""},
		{"ssl.keystore.location", "/x", true, "These security configs can be dynamically updated only per-listener using the listener prefix: [ssl.keystore.location]"},
		{"listeners", "PLAINTEXT://:1", false, "Cannot update these configs at default cluster level, broker id must be specified: [listeners]"},
		{"message.max.bytes", "abc", true, "Invalid value abc for configuration message.max.bytes: Not a number of type INT"},
		{"message.max.bytes", "-5", false, "Invalid value -5 for configuration message.max.bytes: Value must be at least 0"},
		{"message.max.bytes", "", false, "Invalid value  for configuration message.max.bytes: Not a number of type INT"},
		{"message.max.bytes", "2000", false, ""},
		{"num.replica.fetchers", "100", true, "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed for num.replica.fetchers=100, value should not be greater than double the current value 1 for configuration Invalid dynamic configuration"},
		{"num.replica.fetchers", "0", true, "Invalid value 0 for configuration num.replica.fetchers: Value must be at least 1"},
		{"num.replica.fetchers", "2", true, ""},
		{"unknown.key.zz", "1", false, ""},
		{"log.cleaner.threads", "10", true, "Invalid value org.apache.kafka.common.config.ConfigException: Log cleaner threads cannot be increased to more than double the current value 1 for configuration Invalid dynamic configuration"},
		{"log.cleaner.threads", "0", true, "/ by zero"},
		{"log.retention.ms", "0", false, "requirement failed: log.retention.ms must be unlimited (-1) or, greater than or equal to 1"},
		{"max.connections", "-1", false, "Invalid value -1 for configuration max.connections: Value must be at least 0"},
		{"max.connections.per.ip", "0", false, "requirement failed: max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."},
		{"log.cleaner.dedupe.buffer.size", "1000", false, "requirement failed: log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."},
		{"background.threads", "100", false, "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed for background.threads=100, value should not be greater than double the current value 10 for configuration Invalid dynamic configuration"},
		{"num.io.threads", "100", false, "Invalid value org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation failed for num.io.threads=100, value should not be greater than double the current value 8 for configuration Invalid dynamic configuration"},
		{"unclean.leader.election.enable", "yes", false, "Invalid value yes for configuration unclean.leader.election.enable: Expected value to be either true or false"},
		{"log.cleaner.io.max.bytes.per.second", "-1", false, ""},
		{"listener.name.plaintext.max.connections", "5", false, ""},
		{"cordoned.log.dirs", "/nonexistent", true, "requirement failed: All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : /nonexistent"},
		{"cordoned.log.dirs", "*,/x", true, "requirement failed: When cordoned.log.dirs is set to *, it must not contain other values"},
		{"leader.replication.throttled.rate", "-1", false, "Invalid value -1 for configuration leader.replication.throttled.rate: Value must be at least 0"},
	}
	for _, tc := range cases {
		err := c.ValidateDynamic(map[string]string{tc.key: tc.val}, tc.perBroker, nil, nil)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%s=%q (per broker %v):\n got %q\nwant %q", tc.key, tc.val, tc.perBroker, got, tc.want)
		}
	}
	multi := map[string]string{"node.id": "5", "log.dirs": "/x", "process.roles": "broker"}
	if err := c.ValidateDynamic(multi, true, nil, nil); err == nil || err.Error() != "Cannot update these configs dynamically: [node.id, process.roles, log.dirs]" {
		t.Errorf("three read-only keys: %v", err)
	}
	// The current value is the broker's own: with num.replica.fetchers=4
	// set for it, 8 is double and 9 more.
	if err := c.ValidateDynamic(map[string]string{"num.replica.fetchers": "8"}, false, nil, map[string]string{"num.replica.fetchers": "4"}); err != nil {
		t.Errorf("cluster default under a per-broker override: %v", err)
	}
	if err := c.ValidateDynamic(map[string]string{"num.replica.fetchers": "9"}, true, nil, map[string]string{"num.replica.fetchers": "4"}); err == nil {
		t.Errorf("num.replica.fetchers 4 -> 9 accepted")
	}
}
