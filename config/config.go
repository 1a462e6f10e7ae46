package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Source is where a value comes from, with DescribeConfigs' ConfigSource codes.
type Source int8

// ConfigSource values (DescribeConfigsResponse.ConfigSource).
const (
	SourceUnknown                    Source = 0
	SourceDynamicTopicConfig         Source = 1
	SourceDynamicBrokerConfig        Source = 2
	SourceDynamicDefaultBrokerConfig Source = 3
	SourceStaticBrokerConfig         Source = 4
	SourceDefaultConfig              Source = 5
	SourceDynamicBrokerLoggerConfig  Source = 6
	SourceClientMetricsConfig        Source = 7
	SourceGroupConfig                Source = 8
)

var sourceNames = map[Source]string{
	SourceUnknown: "UNKNOWN", SourceDynamicTopicConfig: "DYNAMIC_TOPIC_CONFIG",
	SourceDynamicBrokerConfig: "DYNAMIC_BROKER_CONFIG", SourceDynamicDefaultBrokerConfig: "DYNAMIC_DEFAULT_BROKER_CONFIG",
	SourceStaticBrokerConfig: "STATIC_BROKER_CONFIG", SourceDefaultConfig: "DEFAULT_CONFIG",
	SourceDynamicBrokerLoggerConfig: "DYNAMIC_BROKER_LOGGER_CONFIG", SourceClientMetricsConfig: "CLIENT_METRICS_CONFIG",
	SourceGroupConfig: "GROUP_CONFIG",
}

func (s Source) String() string {
	if n, ok := sourceNames[s]; ok {
		return n
	}
	return "UNKNOWN"
}

// SingleNodeDefaults are the settings used when there is no server.properties file
// and no KAFKA_* config variable: one combined broker+controller on localhost, as
// Apache Kafka's docker image default server.properties, with log.dirs=./data.
func SingleNodeDefaults() map[string]string {
	return map[string]string{
		"process.roles":                            "broker,controller",
		"node.id":                                  "1",
		"controller.quorum.voters":                 "1@localhost:9093",
		"listeners":                                "PLAINTEXT://:9092,CONTROLLER://:9093",
		"advertised.listeners":                     "PLAINTEXT://localhost:9092",
		"controller.listener.names":                "CONTROLLER",
		"inter.broker.listener.name":               "PLAINTEXT",
		"listener.security.protocol.map":           "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
		"log.dirs":                                 "./data",
		"num.partitions":                           "1",
		"offsets.topic.replication.factor":         "1",
		"transaction.state.log.replication.factor": "1",
		"transaction.state.log.min.isr":            "1",
		// The share coordinator's state topic (KIP-932) on one node, as
		// Kafka's config/server.properties and docker image set it.
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
	}
}

// OriginDefaults is the origin of SingleNodeDefaults values.
const OriginDefaults = "built-in single-node defaults"

// LoadOptions says where Load reads settings from. Precedence, lowest first:
// built-in single-node defaults (only when File is "" and Env has no KAFKA_* config
// variable, as Apache Kafka's docker image uses its default server.properties only
// when no KAFKA_* variable is set), File, Env, Overrides.
type LoadOptions struct {
	File      string   // server.properties path; "" = none
	Env       []string // "NAME=value" entries (os.Environ()); KAFKA_* are mapped to keys
	Overrides []string // "key=value" from --override
	// Strict refuses keys Kafka does not know (UnknownKeyError) instead of
	// accepting them as unused (Config.UnknownKeys), kgo-broker's
	// --strict-config / KGO_STRICT_CONFIG. Apache Kafka accepts them.
	Strict bool
}

// ProcessRoles is process.roles.
type ProcessRoles struct{ Broker, Controller bool }

// IsBroker reports whether the node has the broker role.
func (r ProcessRoles) IsBroker() bool { return r.Broker }

// IsController reports whether the node has the controller role.
func (r ProcessRoles) IsController() bool { return r.Controller }

func (r ProcessRoles) String() string {
	var s []string
	if r.Broker {
		s = append(s, "broker")
	}
	if r.Controller {
		s = append(s, "controller")
	}
	return strings.Join(s, ",")
}

// Config is a resolved, validated broker configuration. It is immutable.
type Config struct {
	NodeID       int32
	ProcessRoles ProcessRoles
	// Listeners are the sockets to open (listeners), broker and controller ones.
	Listeners []Listener
	// AdvertisedListeners are the broker listeners advertised to clients
	// (advertised.listeners, else listeners), without controller listeners.
	AdvertisedListeners []Listener
	// AdvertisedControllerListeners are the controller listeners other nodes reach
	// this controller on (from advertised.listeners when named there, else listeners).
	AdvertisedControllerListeners []Listener
	ControllerListenerNames       []string
	InterBrokerListenerName       string
	// ListenerSecurityProtocols is the effective listener.security.protocol.map.
	ListenerSecurityProtocols map[string]string
	// QuorumVoters is controller.quorum.voters by id; Voters keeps the config order.
	QuorumVoters           map[int32]HostPort
	Voters                 []Voter
	QuorumBootstrapServers []HostPort
	LogDirs                []string // log.dirs, else log.dir
	MetadataLogDir         string   // metadata.log.dir, else the first log dir

	explicit map[string]string // set by defaults file/env/override (unknown keys too: Kafka's originals)
	origins  map[string]string // key -> where it was set
	values   map[string]any    // parsed effective value of every key with a non-null value
	unknown  []UnknownKey      // explicit keys Kafka does not know, sorted

	originalsOnce sync.Once // Originals, built on first use (describe.go)
	originalsMap  map[string]string
}

// UnknownKey is a supplied key Kafka does not know: a plugin's or metrics
// reporter's setting, a vendor key (confluent.*), a client setting in a
// shared properties file, a topic-level key. Kafka keeps such keys in its
// originals (plugins read them; DescribeConfigs lists them with a null,
// sensitive value) and never fails on them; kgo-broker does the same and
// warns about each once at startup.
type UnknownKey struct {
	Key, Origin string
	Hint        string // what the key looks like and how to set what was probably meant
}

// Error is a configuration error naming the key and where its value came from.
type Error struct {
	Key    string
	Origin string // "server.properties line 3", "KAFKA_NUM_PARTITIONS", "--override", ...
	Msg    string // Kafka's message
	Hint   string // how to fix it
}

func (e *Error) Error() string {
	s := e.Msg
	if e.Origin != "" {
		s += " (from " + e.Origin + ")"
	}
	if e.Hint != "" {
		s += ". " + e.Hint
	}
	return s
}

// UnknownKeyError is a key Kafka does not know, refused by a strict Load.
type UnknownKeyError struct {
	Key, Origin, Hint string
}

func (e *UnknownKeyError) Error() string {
	s := "unknown config key '" + e.Key + "'"
	if e.Origin != "" {
		s += " (from " + e.Origin + ")"
	}
	return s + ": " + e.Hint
}

// Load resolves the configuration from defaults, file, environment and overrides,
// then validates it as Kafka's KafkaConfig does.
func Load(o LoadOptions) (*Config, error) {
	values := map[string]string{}
	origins := map[string]string{}
	env := FromEnv(o.Env)
	if o.File == "" && !anyKnownKey(env) {
		for k, v := range SingleNodeDefaults() {
			values[k], origins[k] = v, OriginDefaults
		}
	}
	if o.File != "" {
		data, err := os.ReadFile(o.File)
		if err != nil {
			return nil, fmt.Errorf("reading server properties: %w", err)
		}
		props, err := ParseProperties(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		base := filepath.Base(o.File)
		for _, p := range props {
			values[p.Key], origins[p.Key] = p.Value, fmt.Sprintf("%s line %d", base, p.Line)
		}
	}
	envSet := map[string]bool{}
	for _, e := range env {
		values[e.Key], origins[e.Key] = e.Value, e.Var
		envSet[e.Key] = true
	}
	// The docker image's configure script derives listeners from
	// KAFKA_ADVERTISED_LISTENERS (hosts replaced by 0.0.0.0) when KAFKA_LISTENERS
	// is unset and the node is not controller-only.
	if envSet["advertised.listeners"] && !envSet["listeners"] && strings.TrimSpace(values["process.roles"]) != "controller" {
		var ls []string
		for _, l := range splitList(values["advertised.listeners"]) {
			if m := endpointRE.FindStringSubmatch(l); m != nil {
				l = m[1] + "://0.0.0.0:" + m[3]
			}
			ls = append(ls, l)
		}
		values["listeners"], origins["listeners"] = strings.Join(ls, ","), "KAFKA_ADVERTISED_LISTENERS (host replaced by 0.0.0.0, as the docker image does)"
	}
	for _, ov := range o.Overrides {
		k, v, ok := strings.Cut(ov, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, &Error{Msg: fmt.Sprintf("invalid --override %q", ov), Hint: "Use --override key=value"}
		}
		k = strings.TrimSpace(k)
		values[k], origins[k] = v, "--override"
	}
	return build(values, origins, o.Strict)
}

// anyKnownKey reports whether an environment setting names a key Kafka
// knows: only those replace the built-in single-node defaults, so a shell
// with KAFKA_BOOTSTRAP_SERVERS exported for the client tools still starts
// a default node.
func anyKnownKey(env []EnvSetting) bool {
	for _, e := range env {
		if IsKnownKey(e.Key) {
			return true
		}
	}
	return false
}

// IsKnownKey reports whether Kafka 4.4 knows name as a broker config key
// (listener- and mechanism-prefixed families included).
func IsKnownKey(name string) bool {
	_, ok := brokerIndex[name]
	return ok || knownPrefixed(name) || authorizerKeys[name]
}

// New builds a Config from explicitly set keys (STATIC_BROKER_CONFIG), with
// Kafka's defaults for the rest; no built-in single-node defaults.
func New(props map[string]string) (*Config, error) {
	origins := map[string]string{}
	for k := range props {
		origins[k] = ""
	}
	vals := make(map[string]string, len(props))
	for k, v := range props {
		vals[k] = v
	}
	return build(vals, origins, false)
}

// SingleNode returns the configuration of the built-in single-node defaults with
// overrides applied on top (e.g. log.dirs for tests).
func SingleNode(overrides map[string]string) (*Config, error) {
	vals := SingleNodeDefaults()
	origins := map[string]string{}
	for k := range vals {
		origins[k] = OriginDefaults
	}
	for k, v := range overrides {
		vals[k], origins[k] = v, "override"
	}
	return build(vals, origins, false)
}

func build(values, origins map[string]string, strict bool) (*Config, error) {
	c := &Config{explicit: values, origins: origins, values: map[string]any{}}
	names := make([]string, 0, len(values))
	for k := range values {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		key, ok := brokerIndex[k]
		if !ok {
			if knownPrefixed(k) || authorizerKeys[k] {
				continue
			}
			u := unknownKey(k, origins[k])
			if strict {
				return nil, u
			}
			c.unknown = append(c.unknown, UnknownKey{Key: u.Key, Origin: u.Origin, Hint: u.Hint})
			continue
		}
		v, err := key.Parse(values[k])
		if err != nil {
			return nil, &Error{Key: k, Origin: origins[k], Msg: err.Error()}
		}
		c.values[k] = v
	}
	for i := range brokerKeys {
		k := &brokerKeys[i]
		if _, set := c.values[k.Name]; set || !k.HasDefault {
			continue
		}
		v, err := parseType(k.Name, k.Default, k.Type)
		if err != nil {
			panic("config: Kafka default of " + k.Name + " does not parse: " + err.Error())
		}
		c.values[k.Name] = v
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func unknownKey(k, origin string) *UnknownKeyError {
	hint := "Kafka has no broker config with this name"
	if tk, ok := topicIndex[k]; ok {
		hint = "this is a topic-level config"
		if len(tk.Synonyms) > 0 {
			hint += fmt.Sprintf("; its broker default is set with '%s'", tk.Synonyms[0].Name)
		} else {
			hint += " with no broker default; set it per topic (kafka-configs.sh --alter --entity-type topics)"
		}
	} else if s := suggest(k); s != "" {
		hint += fmt.Sprintf("; did you mean '%s'?", s)
	}
	hint += ". Fix the name or remove it if it is not meant for a plugin"
	if strings.HasPrefix(origin, "KAFKA_") {
		hint += " (KAFKA_* variables map to keys: '_' -> '.', '__' -> '_', '___' -> '-')"
	}
	return &UnknownKeyError{Key: k, Origin: origin, Hint: hint}
}

func (c *Config) key(name string) *Key {
	k, ok := brokerIndex[name]
	if !ok {
		panic("config: unknown key " + name)
	}
	return k
}

// Int returns an INT or SHORT key's effective value (0 when null).
func (c *Config) Int(name string) int32 {
	c.mustType(name, TypeInt, TypeShort)
	v, _ := c.values[name].(int32)
	return v
}

// Long returns a LONG key's effective value (0 when null).
func (c *Config) Long(name string) int64 {
	c.mustType(name, TypeLong)
	v, _ := c.values[name].(int64)
	return v
}

// Double returns a DOUBLE key's effective value.
func (c *Config) Double(name string) float64 {
	c.mustType(name, TypeDouble)
	v, _ := c.values[name].(float64)
	return v
}

// Bool returns a BOOLEAN key's effective value.
func (c *Config) Bool(name string) bool {
	c.mustType(name, TypeBoolean)
	v, _ := c.values[name].(bool)
	return v
}

// String returns a key's effective value as a trimmed string ("" when null); lists
// are joined with ",".
func (c *Config) String(name string) string {
	c.key(name)
	switch v := c.values[name].(type) {
	case nil:
		return ""
	case string:
		return v
	case []string:
		return strings.Join(v, ",")
	case float64:
		return javaDouble(v)
	default:
		return fmt.Sprint(v)
	}
}

// List returns a LIST key's effective value (nil when null).
func (c *Config) List(name string) []string {
	c.mustType(name, TypeList)
	v, _ := c.values[name].([]string)
	return append([]string(nil), v...)
}

// IsSet reports whether the key was set explicitly (file, env, override or the
// built-in defaults).
func (c *Config) IsSet(name string) bool {
	_, ok := c.explicit[name]
	return ok
}

// Origin says where an explicitly set key came from ("" if not set).
func (c *Config) Origin(name string) string { return c.origins[name] }

func (c *Config) mustType(name string, types ...Type) {
	k := c.key(name)
	for _, t := range types {
		if k.Type == t {
			return
		}
	}
	panic(fmt.Sprintf("config: key %s is of type %s", name, k.Type))
}

// Get returns a key's value as DescribeConfigs reports it: the explicit value
// (STATIC_BROKER_CONFIG) or Kafka's default (DEFAULT_CONFIG). ok is false when the
// key is unknown or its value is null.
func (c *Config) Get(name string) (value string, source Source, ok bool) {
	if v, set := c.explicit[name]; set {
		if _, known := brokerIndex[name]; known {
			return strings.TrimSpace(v), SourceStaticBrokerConfig, true
		}
		return v, SourceStaticBrokerConfig, true // prefixed key (listener.name.*)
	}
	k, known := brokerIndex[name]
	if !known || !k.HasDefault {
		return "", SourceUnknown, false
	}
	return k.Default, SourceDefaultConfig, true
}

// Explicit returns the keys set by the built-in defaults, file, env or override.
func (c *Config) Explicit() map[string]string {
	out := make(map[string]string, len(c.explicit))
	for k, v := range c.explicit {
		out[k] = v
	}
	return out
}

// ExplicitNotActedOn lists the explicitly set keys Kafka knows but
// kgo-broker does not act on, sorted (unknown keys are UnknownKeys).
func (c *Config) ExplicitNotActedOn() []string {
	var out []string
	for k := range c.explicit {
		if key, ok := brokerIndex[k]; (ok && !key.Acted || !ok && knownPrefixed(k)) && !actedListenerKey(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// UnknownKeys lists the supplied keys Kafka does not know, sorted by key.
func (c *Config) UnknownKeys() []UnknownKey { return append([]UnknownKey(nil), c.unknown...) }

// IsUnknown reports whether name was supplied and Kafka does not know it.
func (c *Config) IsUnknown(name string) bool {
	_, set := c.explicit[name]
	return set && !IsKnownKey(name)
}

// Redacted returns Explicit with sensitive values replaced by "[hidden]",
// for logs: PASSWORD keys, keys that look like secrets, and unknown keys,
// whose type is unknown (Kafka treats those as sensitive:
// KafkaConfig.maybeSensitive).
func (c *Config) Redacted() map[string]string {
	out := c.Explicit()
	for k := range out {
		key, ok := brokerIndex[k]
		if (ok && key.Sensitive()) || c.IsUnknown(k) || strings.Contains(k, "password") || strings.HasSuffix(k, "jaas.config") {
			out[k] = "[hidden]"
		}
	}
	return out
}

// NodeIDString is node.id as a string (meta.properties).
func (c *Config) NodeIDString() string { return strconv.Itoa(int(c.NodeID)) }

// AllDirs returns the log dirs plus the metadata dir, without duplicates, in order.
func (c *Config) AllDirs() []string {
	out := append([]string(nil), c.LogDirs...)
	for _, d := range out {
		if d == c.MetadataLogDir {
			return out
		}
	}
	return append(out, c.MetadataLogDir)
}

// Listener returns the listener named name (upper case).
func (c *Config) Listener(name string) (Listener, bool) {
	for _, l := range c.Listeners {
		if l.Name == strings.ToUpper(name) {
			return l, true
		}
	}
	return Listener{}, false
}

// CordonedLogDirs is AbstractKafkaConfig.cordonedLogDirs: cordoned.log.dirs,
// or every log dir when it is "*" (KIP-1066).
func (c *Config) CordonedLogDirs() []string {
	dirs := c.List("cordoned.log.dirs")
	for _, d := range dirs {
		if d == "*" {
			return append([]string(nil), c.LogDirs...)
		}
	}
	return dirs
}
