package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestEnvKey(t *testing.T) {
	cases := map[string]string{
		"KAFKA_LOG_DIRS":                          "log.dirs",
		"KAFKA_NODE_ID":                           "node.id",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP":    "listener.security.protocol.map",
		"KAFKA_SOME__UNDERSCORE":                  "some_underscore",
		"KAFKA_A___B":                             "a-b",
		"KAFKA_CONTROLLER_QUORUM_VOTERS":          "controller.quorum.voters",
		"KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR":  "offsets.topic.replication.factor",
		"KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY":    "listener.name.internal.ssl.key",
		"KAFKA_X_KAFKA_Y":                         "x.kafka.y", // only the prefix is removed (Kafka 4.4.0)
		"KAFKA_A____B":                            "a-.b",
		"KAFKA_A_____B":                           "a-_b",
		"KAFKA_____X":                             "-.x",
		"KAFKA_LISTENER_NAME_A__B___C_SASL_X_Y_Z": "listener.name.a_b-c.sasl.x.y.z",
	}
	for env, want := range cases {
		got, ok := EnvKey(env)
		if !ok || got != want {
			t.Errorf("EnvKey(%s) = %q, %v; want %q", env, got, ok, want)
		}
	}
	for _, env := range []string{"KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
		"KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL", "KAFKA_LOG4J_LOGGERS",
		"KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME", "PATH", "CLUSTER_ID", "KAFKA", "kafka_node_id"} {
		if k, ok := EnvKey(env); ok {
			t.Errorf("EnvKey(%s) = %q, want excluded", env, k)
		}
	}
}

func TestSingleNodeDefaults(t *testing.T) {
	c, err := Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 1 || !c.ProcessRoles.IsBroker() || !c.ProcessRoles.IsController() {
		t.Fatalf("%+v", c)
	}
	wantL := []Listener{{Name: "PLAINTEXT", Port: 9092, SecurityProtocol: "PLAINTEXT"}, {Name: "CONTROLLER", Port: 9093, SecurityProtocol: "PLAINTEXT"}}
	if !reflect.DeepEqual(c.Listeners, wantL) {
		t.Fatalf("listeners %+v", c.Listeners)
	}
	if !reflect.DeepEqual(c.AdvertisedListeners, []Listener{{Name: "PLAINTEXT", Host: "localhost", Port: 9092, SecurityProtocol: "PLAINTEXT"}}) {
		t.Fatalf("advertised %+v", c.AdvertisedListeners)
	}
	if !reflect.DeepEqual(c.AdvertisedControllerListeners, []Listener{{Name: "CONTROLLER", Port: 9093, SecurityProtocol: "PLAINTEXT"}}) {
		t.Fatalf("advertised controller %+v", c.AdvertisedControllerListeners)
	}
	if c.InterBrokerListenerName != "PLAINTEXT" || !reflect.DeepEqual(c.ControllerListenerNames, []string{"CONTROLLER"}) {
		t.Fatalf("%q %q", c.InterBrokerListenerName, c.ControllerListenerNames)
	}
	if !reflect.DeepEqual(c.QuorumVoters, map[int32]HostPort{1: {"localhost", 9093}}) || len(c.Voters) != 1 {
		t.Fatalf("voters %+v", c.QuorumVoters)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"data"}) || c.MetadataLogDir != "data" {
		t.Fatalf("dirs %q %q", c.LogDirs, c.MetadataLogDir)
	}
	if c.Int("num.partitions") != 1 || c.Int("offsets.topic.replication.factor") != 1 || c.Int("transaction.state.log.min.isr") != 1 {
		t.Fatal("replication defaults")
	}
	if v, src, ok := c.Get("num.partitions"); v != "1" || src != SourceStaticBrokerConfig || !ok {
		t.Fatal(v, src, ok)
	}
	if v, src, ok := c.Get("log.segment.bytes"); v != "1073741824" || src != SourceDefaultConfig || !ok {
		t.Fatal(v, src, ok)
	}
	if _, _, ok := c.Get("log.retention.ms"); ok {
		t.Fatal("null default reported")
	}
	if c.Origin("node.id") != OriginDefaults {
		t.Fatal(c.Origin("node.id"))
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const baseProps = `process.roles=broker,controller
node.id=1
controller.quorum.voters=1@localhost:9093
listeners=PLAINTEXT://:9092,CONTROLLER://:9093
advertised.listeners=PLAINTEXT://localhost:9092
controller.listener.names=CONTROLLER
log.dirs=/tmp/kgo-test
`

func TestPrecedence(t *testing.T) {
	file := writeFile(t, baseProps+"num.partitions=2\nlog.retention.hours=10\nauto.create.topics.enable=false\n")
	c, err := Load(LoadOptions{
		File:      file,
		Env:       []string{"KAFKA_NUM_PARTITIONS=3", "KAFKA_LOG_RETENTION_HOURS=20", "PATH=/bin", "KAFKA_HEAP_OPTS=-Xmx1G"},
		Overrides: []string{"num.partitions=4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Int("num.partitions") != 4 || c.Origin("num.partitions") != "--override" {
		t.Fatal(c.Int("num.partitions"))
	}
	if c.Int("log.retention.hours") != 20 || c.Origin("log.retention.hours") != "KAFKA_LOG_RETENTION_HOURS" {
		t.Fatal(c.Int("log.retention.hours"))
	}
	if c.Bool("auto.create.topics.enable") || c.Origin("auto.create.topics.enable") != "server.properties line 10" {
		t.Fatal(c.Origin("auto.create.topics.enable"))
	}
	// A file disables the built-in single-node defaults: Kafka's own defaults apply.
	if c.Int("offsets.topic.replication.factor") != 3 {
		t.Fatal(c.Int("offsets.topic.replication.factor"))
	}
	if got := c.TopicDefaults()["retention.ms"]; got != "72000000" {
		t.Fatal(got)
	}
	ex := c.Explicit()
	if ex["num.partitions"] != "4" || ex["log.dirs"] != "/tmp/kgo-test" || len(ex) != 10 {
		t.Fatal(ex)
	}
}

func TestEnvOnlyDisablesDefaults(t *testing.T) {
	_, err := Load(LoadOptions{Env: []string{"KAFKA_NUM_PARTITIONS=3"}})
	if err == nil || !strings.Contains(err.Error(), `Missing required configuration "process.roles" which has no default value.`) {
		t.Fatal(err)
	}
	// A full docker-style environment works; listeners derive from advertised listeners.
	c, err := Load(LoadOptions{Env: []string{
		"KAFKA_NODE_ID=1", "KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@kafka:9093", "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://kafka:9092,CONTROLLER://kafka:9093",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_LOG_DIRS=/tmp/kraft-combined-logs",
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 2 || c.Listeners[0].Host != "0.0.0.0" || c.Listeners[1].Port != 9093 {
		t.Fatalf("%+v", c.Listeners)
	}
	if c.AdvertisedControllerListeners[0].Host != "kafka" || c.InterBrokerListenerName != "PLAINTEXT" {
		t.Fatalf("%+v", c.AdvertisedControllerListeners)
	}
	// Overrides apply on top of the built-in defaults.
	c, err = Load(LoadOptions{Overrides: []string{"log.dirs=/x,/y", "metadata.log.dir=/m"}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.LogDirs, []string{"/x", "/y"}) || c.MetadataLogDir != "/m" || len(c.AllDirs()) != 3 {
		t.Fatal(c.LogDirs, c.MetadataLogDir)
	}
}

func TestValidationMessages(t *testing.T) {
	cases := []struct {
		name string
		opts LoadOptions
		want []string
	}{
		{"strict: unknown env key", LoadOptions{Env: []string{"KAFKA_FOO_BAR=1"}, Strict: true},
			[]string{"unknown config key 'foo.bar' (from KAFKA_FOO_BAR): "}},
		{"strict: unknown key suggests", LoadOptions{Overrides: []string{"num.partition=1"}, Strict: true},
			[]string{"unknown config key 'num.partition' (from --override)", "did you mean 'num.partitions'?"}},
		{"strict: topic key in broker config", LoadOptions{Overrides: []string{"retention.ms=1"}, Strict: true},
			[]string{"'retention.ms'", "topic-level config", "log.retention.ms"}},
		{"bad int", LoadOptions{Env: []string{"KAFKA_NUM_PARTITIONS=abc"}},
			[]string{"Invalid value abc for configuration num.partitions: Not a number of type INT (from KAFKA_NUM_PARTITIONS)"}},
		{"range", LoadOptions{Overrides: []string{"num.partitions=0"}},
			[]string{"Invalid value 0 for configuration num.partitions: Value must be at least 1 (from --override)"}},
		{"bad bool", LoadOptions{Overrides: []string{"auto.create.topics.enable=yes"}},
			[]string{"Invalid value yes for configuration auto.create.topics.enable: Expected value to be either true or false"}},
		{"int overflow", LoadOptions{Overrides: []string{"num.partitions=3000000000"}},
			[]string{"Not a number of type INT"}},
		{"short", LoadOptions{Overrides: []string{"offsets.topic.replication.factor=40000"}},
			[]string{"Invalid value 40000 for configuration offsets.topic.replication.factor: Not a number of type SHORT"}},
		{"one of", LoadOptions{Overrides: []string{"log.cleanup.policy=foo"}},
			[]string{"Invalid value foo for configuration log.cleanup.policy: String must be one of: compact, delete"}},
		{"double", LoadOptions{Overrides: []string{"log.cleaner.min.cleanable.ratio=2"}},
			[]string{"Invalid value 2.0 for configuration log.cleaner.min.cleanable.ratio: Value must be no more than 1"}},
		{"empty list", LoadOptions{Overrides: []string{"process.roles="}},
			[]string{"Configuration 'process.roles' must not be empty. Valid values include: [broker, controller]"}},
		{"bad role", LoadOptions{Overrides: []string{"process.roles=broker,foo"}},
			[]string{"Invalid value foo for configuration process.roles: String must be one of: broker, controller"}},
		{"dup list", LoadOptions{Overrides: []string{"log.dirs=/a,/a"}},
			[]string{"Configuration 'log.dirs' values must not be duplicated."}},
		{"node.id missing", LoadOptions{File: "NODEID"},
			[]string{`Missing required configuration "node.id" which has no default value.`, "node.id=1"}},
		{"broker.id mismatch", LoadOptions{Overrides: []string{"broker.id=2"}},
			[]string{"`node.id` and `broker.id` must be set to the same value."}},
		{"controller.listener.names not in listeners", LoadOptions{Overrides: []string{"controller.listener.names=FOO", "listener.security.protocol.map=FOO:PLAINTEXT,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"}},
			[]string{"controller.listener.names must only contain values appearing in the 'listeners' configuration when running the KRaft controller role (from --override)"}},
		{"advertised 0.0.0.0", LoadOptions{Overrides: []string{"advertised.listeners=PLAINTEXT://0.0.0.0:9092"}},
			[]string{"advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address. (from --override)"}},
		{"listeners 0.0.0.0 advertised by default", LoadOptions{File: "ZEROS"},
			[]string{"advertised.listeners cannot use the nonroutable meta-address 0.0.0.0", "advertised.listeners is not set"}},
		{"voter without node", LoadOptions{Overrides: []string{"controller.quorum.voters=2@localhost:9093"}},
			[]string{"the node id 1 must be included in the set of voters controller.quorum.voters=Set(2)"}},
		{"bad voters", LoadOptions{Overrides: []string{"controller.quorum.voters=1@localhost"}},
			[]string{"Failed to parse host name from entry 1@localhost for the configuration controller.quorum.voters. Each entry should be in the form `{id}@{host}:{port}`."}},
		{"bad voter id", LoadOptions{Overrides: []string{"controller.quorum.voters=x@localhost:9093"}},
			[]string{"Failed to parse voter ID as an integer from x"}},
		{"no voters", LoadOptions{Overrides: []string{"controller.quorum.voters="}},
			[]string{"either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of controllers."}},
		{"broker only with voter", LoadOptions{Overrides: []string{"process.roles=broker", "listeners=PLAINTEXT://:9092"}},
			[]string{"If process.roles contains just the 'broker' role, the node id 1 must not be included in the set of voters controller.quorum.voters=Set(1)"}},
		{"inter broker listener", LoadOptions{Overrides: []string{"inter.broker.listener.name=FOO"}},
			[]string{"Listener with name FOO defined in inter.broker.listener.name not found in listener.security.protocol.map."}},
		{"inter broker listener not advertised", LoadOptions{Overrides: []string{"inter.broker.listener.name=SSL"}},
			[]string{"inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid options based on currently configured listeners are PLAINTEXT"}},
		{"bad listener", LoadOptions{Overrides: []string{"listeners=PLAINTEXT:/:9092,CONTROLLER://:9093"}},
			[]string{"Error creating broker listeners from '[PLAINTEXT:/:9092, CONTROLLER://:9093]': Unable to parse PLAINTEXT:/:9092 to a broker endpoint (from --override)"}},
		{"no protocol", LoadOptions{Overrides: []string{"listeners=FOO://:9092,CONTROLLER://:9093"}},
			[]string{"No security protocol defined for listener FOO"}},
		{"dup port", LoadOptions{Overrides: []string{"listeners=PLAINTEXT://:9092,CONTROLLER://:9092"}},
			[]string{"Each listener must have a different port"}},
		{"sasl inter-broker mechanism not enabled", LoadOptions{Overrides: []string{"listener.security.protocol.map=PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT", "sasl.enabled.mechanisms=PLAIN"}},
			[]string{"sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms when SASL is used for inter-broker communication"}},
		{"bad protocol map", LoadOptions{Overrides: []string{"listener.security.protocol.map=PLAINTEXT:FOO"}},
			[]string{"Invalid security protocol `FOO` defined in listener.security.protocol.map"}},
		{"roll", LoadOptions{Overrides: []string{"log.roll.ms=0"}},
			[]string{"log.roll.ms must be greater than or equal to 1"}},
		{"relation", LoadOptions{Overrides: []string{"group.consumer.min.session.timeout.ms=50000"}},
			[]string{"group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms (from --override)"}},
		{"cordoned", LoadOptions{Overrides: []string{"cordoned.log.dirs=/nope"}},
			[]string{"All entries in cordoned.log.dirs must be present in log.dirs or log.dir. Missing entries : /nope"}},
		{"retention", LoadOptions{Overrides: []string{"log.retention.minutes=0"}},
			[]string{"log.retention.ms must be unlimited (-1) or, greater than or equal to 1 (from --override)"}},
		{"replica wait", LoadOptions{Overrides: []string{"replica.fetch.wait.max.ms=40000"}},
			[]string{"replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"}},
		{"bad override", LoadOptions{Overrides: []string{"novalue"}},
			[]string{`invalid --override "novalue"`}},
		{"controller only with broker listener", LoadOptions{Overrides: []string{"process.roles=controller", "advertised.listeners="}},
			[]string{"Configuration 'advertised.listeners' must not be empty"}},
		{"controller only with broker listener 2", LoadOptions{File: "CONTROLLERONLY"},
			[]string{"The listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			switch c.opts.File {
			case "NODEID":
				c.opts.File = writeFile(t, strings.Replace(baseProps, "node.id=1\n", "", 1))
			case "ZEROS":
				c.opts.File = writeFile(t, strings.Replace(strings.Replace(baseProps, "advertised.listeners=PLAINTEXT://localhost:9092\n", "", 1),
					"PLAINTEXT://:9092", "PLAINTEXT://0.0.0.0:9092", 1))
			case "CONTROLLERONLY":
				c.opts.File = writeFile(t, strings.Replace(strings.Replace(baseProps, "advertised.listeners=PLAINTEXT://localhost:9092\n", "", 1),
					"broker,controller", "controller", 1))
			}
			_, err := Load(c.opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
}

func TestErrorTypes(t *testing.T) {
	_, err := Load(LoadOptions{Overrides: []string{"num.partitions=x"}})
	var e *Error
	if !errors.As(err, &e) || e.Key != "num.partitions" || e.Origin != "--override" {
		t.Fatalf("%#v", err)
	}
	_, err = Load(LoadOptions{Env: []string{"KAFKA_FOO=1"}, Strict: true})
	var u *UnknownKeyError
	if !errors.As(err, &u) || u.Key != "foo" || u.Origin != "KAFKA_FOO" {
		t.Fatalf("%#v", err)
	}
}

func TestValidConfigurations(t *testing.T) {
	ok := [][]string{
		{"process.roles=broker", "node.id=2", "listeners=PLAINTEXT://:9092", "controller.quorum.voters=1@localhost:9093"},
		{"process.roles=controller", "listeners=CONTROLLER://:9093", "advertised.listeners=CONTROLLER://ctl:9093"},
		{"controller.quorum.voters=", "controller.quorum.bootstrap.servers=localhost:9093"},
		{"listener.name.plaintext.sasl.enabled.mechanisms=PLAIN", "log.cleaner.threads=2"},
		{"listeners=PLAINTEXT://[::1]:9092,CONTROLLER://:9093", "advertised.listeners=PLAINTEXT://[::1]:9092"},
		{"log.retention.ms=-1", "log.cleanup.policy=compact,delete", "compression.type=zstd"},
		{"num.partitions= 3 "},
	}
	for _, o := range ok {
		c, err := Load(LoadOptions{Overrides: o})
		if err != nil {
			t.Errorf("%q: %v", o, err)
			continue
		}
		if o[0] == "num.partitions= 3 " && c.Int("num.partitions") != 3 {
			t.Error("trim")
		}
	}
	c, _ := Load(LoadOptions{Overrides: ok[4]})
	if c.AdvertisedListeners[0].Host != "::1" || c.AdvertisedListeners[0].Addr() != "[::1]:9092" {
		t.Fatalf("%+v", c.AdvertisedListeners)
	}
	c, _ = Load(LoadOptions{Overrides: ok[0]})
	if c.ProcessRoles.IsController() || len(c.AdvertisedControllerListeners) != 0 || c.ProcessRoles.String() != "broker" {
		t.Fatalf("%+v", c)
	}
}

func TestGetters(t *testing.T) {
	c, err := New(map[string]string{
		"process.roles": "broker,controller", "node.id": "3", "controller.quorum.voters": "3@h:9093",
		"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093", "controller.listener.names": "CONTROLLER",
		"advertised.listeners": "PLAINTEXT://h:9092", "log.dirs": "/d", "ssl.keystore.password": "secret",
		"log.cleanup.policy": "compact, delete",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Long("log.retention.bytes") != -1 || c.Int("message.max.bytes") != 1048588 || !c.Bool("delete.topic.enable") ||
		c.String("log.message.timestamp.type") != "CreateTime" || c.Double("log.cleaner.min.cleanable.ratio") != 0.5 ||
		!reflect.DeepEqual(c.List("log.cleanup.policy"), []string{"compact", "delete"}) || c.Long("log.retention.ms") != 0 {
		t.Fatal("getters")
	}
	if c.Redacted()["ssl.keystore.password"] != "[hidden]" || c.Explicit()["ssl.keystore.password"] != "secret" {
		t.Fatal("redacted")
	}
	if c.Int("offsets.topic.replication.factor") != 3 {
		t.Fatal("SHORT")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("wrong type did not panic")
		}
	}()
	c.Int("log.retention.bytes")
}

// The environment of apache/kafka's docker/examples single-node plaintext compose file.
func TestDockerComposeExampleEnv(t *testing.T) {
	env := []string{
		"KAFKA_NODE_ID=1", "KAFKA_PROCESS_ROLES=broker,controller",
		"KAFKA_LISTENER_SECURITY_PROTOCOL_MAP=CONTROLLER:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT,PLAINTEXT:PLAINTEXT",
		"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT_HOST://localhost:9092,PLAINTEXT://broker:19092",
		"KAFKA_CONTROLLER_QUORUM_VOTERS=1@broker:29093",
		"KAFKA_LISTENERS=CONTROLLER://:29093,PLAINTEXT_HOST://:9092,PLAINTEXT://:19092",
		"KAFKA_INTER_BROKER_LISTENER_NAME=PLAINTEXT", "KAFKA_CONTROLLER_LISTENER_NAMES=CONTROLLER",
		"CLUSTER_ID=4L6g3nShT-eMCtK--X86sw", "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR=1",
		"KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS=0", "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR=1",
		"KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR=1", "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR=1",
		"KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR=1", "KAFKA_LOG_DIRS=/tmp/kraft-combined-logs",
		"KAFKA_HEAP_OPTS=-Xmx512M", "PATH=/usr/bin",
	}
	c, err := Load(LoadOptions{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Listeners) != 3 || len(c.AdvertisedListeners) != 2 || c.InterBrokerListenerName != "PLAINTEXT" ||
		c.QuorumVoters[1] != (HostPort{"broker", 29093}) || c.Int("group.initial.rebalance.delay.ms") != 0 ||
		c.LogDirs[0] != "/tmp/kraft-combined-logs" || c.Origin("log.dirs") != "KAFKA_LOG_DIRS" {
		t.Fatalf("%+v", c)
	}
	if got := c.ExplicitNotActedOn(); len(got) != 0 {
		t.Fatal(got)
	}
}

// TestUnknownKeysAccepted: keys Kafka does not know (a real deployment's
// plugin, reporter and vendor keys, client settings, topic-level keys)
// are accepted as Kafka accepts them, listed with where they came from and
// a hint, kept as originals and hidden in logs; a bad value of a known key
// still fails, naming the key.
func TestUnknownKeysAccepted(t *testing.T) {
	file := filepath.Join(t.TempDir(), "server.properties")
	props := "process.roles=broker,controller\nnode.id=1\ncontroller.quorum.voters=1@localhost:9093\n" +
		"listeners=PLAINTEXT://:9092,CONTROLLER://:9093\ncontroller.listener.names=CONTROLLER\n" +
		"log.dirs=" + t.TempDir() + "\n" +
		"confluent.license=secret\nmetric.reporters=io.confluent.metrics.reporter.ConfluentMetricsReporter\n" +
		"confluent.metrics.reporter.bootstrap.servers=localhost:9092\nnum.partition=3\nretention.ms=1000\n"
	if err := os.WriteFile(file, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(LoadOptions{File: file, Env: []string{"KAFKA_BOOTSTRAP_SERVERS=localhost:9092", "KAFKA_HEAP_OPTS=-Xmx1G", "KAFKA_OPTS=-Dx=y"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range c.UnknownKeys() {
		got = append(got, u.Key+" <- "+u.Origin)
		if u.Hint == "" {
			t.Errorf("%s: no hint", u.Key)
		}
	}
	want := []string{"bootstrap.servers <- KAFKA_BOOTSTRAP_SERVERS", "confluent.license <- server.properties line 7",
		"confluent.metrics.reporter.bootstrap.servers <- server.properties line 9", "num.partition <- server.properties line 10",
		"retention.ms <- server.properties line 11"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("unknown keys:\n got %q\nwant %q", got, want)
	}
	if u := c.UnknownKeys()[3]; !strings.Contains(u.Hint, "did you mean 'num.partitions'?") {
		t.Errorf("hint %q", u.Hint)
	}
	if v, src, ok := c.Get("confluent.license"); !ok || v != "secret" || src != SourceStaticBrokerConfig || c.Redacted()["confluent.license"] != "[hidden]" {
		t.Errorf("unknown key kept as an original: %q %v %v, redacted %q", v, src, ok, c.Redacted()["confluent.license"])
	}
	for _, k := range c.ExplicitNotActedOn() {
		if c.IsUnknown(k) {
			t.Errorf("unknown key %s listed as known but not acted on", k)
		}
	}
	// A bad value of a known key still stops the start, naming the key.
	_, err = Load(LoadOptions{File: file, Overrides: []string{"num.partitions=many"}})
	var e *Error
	if !errors.As(err, &e) || e.Key != "num.partitions" {
		t.Fatalf("bad value: %v", err)
	}
	// Strict mode refuses the first unknown key.
	_, err = Load(LoadOptions{File: file, Strict: true})
	var u *UnknownKeyError
	if !errors.As(err, &u) || u.Key != "confluent.license" {
		t.Fatalf("strict: %v", err)
	}
}

// TestNonConfigEnvKeepsDefaults: KAFKA_* variables that are not server
// configs (client tools' and the JVM's) do not replace the built-in
// single-node defaults; a variable naming a server key does.
func TestNonConfigEnvKeepsDefaults(t *testing.T) {
	c, err := Load(LoadOptions{Env: []string{"KAFKA_BOOTSTRAP_SERVERS=localhost:9092", "KAFKA_HEAP_OPTS=-Xmx1G", "KAFKA_OPTS=-Dx=y", "KAFKA_JMX_OPTS=-D"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != 1 || c.Origin("node.id") != OriginDefaults || len(c.UnknownKeys()) != 1 {
		t.Fatalf("node.id %d from %q, unknown %v", c.NodeID, c.Origin("node.id"), c.UnknownKeys())
	}
	if _, err := Load(LoadOptions{Env: []string{"KAFKA_NUM_PARTITIONS=3"}}); err == nil {
		t.Fatal("a server key in the environment kept the defaults (the docker image's rule: then only the variables count)")
	}
}

func TestListenerKeysActedOn(t *testing.T) {
	c, err := SingleNode(map[string]string{
		"listener.name.sasl_ssl.plain.sasl.jaas.config":                         "x",
		"listener.name.ssl.ssl.keystore.location":                               "/k",
		"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class": "y",
		"listener.name.ssl.ssl.keystore.bogus":                                  "z",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := c.ExplicitNotActedOn()
	if len(got) != 1 || got[0] != "listener.name.ssl.ssl.keystore.bogus" {
		t.Fatalf("not acted on: %v", got)
	}
}
