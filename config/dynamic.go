package config

// Dynamic broker configs (KIP-226) as Kafka 4.4's DynamicBrokerConfig
// validates them before they are persisted: ConfigAdminManager.preprocess
// on the broker that receives an IncrementalAlterConfigs or AlterConfigs
// for a BROKER resource (this broker's id, or "" for the cluster-wide
// default) calls DynamicBrokerConfig.validate, which
//
//  1. refuses keys Kafka defines but cannot change at runtime ("Cannot
//     update these configs dynamically: [k]"), the ssl.* keystore and
//     truststore keys without a listener prefix, values that do not parse
//     or fail the key's validator (ConfigDef.parse: "Invalid value v for
//     configuration k: ..."), and at the cluster default the per-broker
//     keys (listeners, the ssl.* and sasl.* listener keys, and every
//     listener.name.<l>.<k> but max.connections,
//     max.connection.creation.rate and num.network.threads): "Cannot update
//     these configs at default cluster level, broker id must be
//     specified: [k]" (validateConfigs);
//  2. builds the broker's config with the change applied (static, then the
//     cluster default, then the per-broker configs, a key replacing its
//     synonyms) and runs KafkaConfig's checks ("requirement failed: ...");
//  3. runs the reconfigurables' checks against the broker's current
//     config: a thread count (num.io.threads, num.replica.fetchers,
//     num.recovery.threads.per.data.dir, background.threads) and
//     log.cleaner.threads may change by at most a factor of two
//     (DynamicThreadPool, LogCleaner.validateReconfiguration), wrapped as
//     processReconfiguration wraps them.
//
// Keys Kafka does not define are accepted (custom configs). The caller
// answers every refusal INVALID_REQUEST with the message (KAFKA-13609).

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// dynamicSecurityConfigs are SslConfigs.RECONFIGURABLE_CONFIGS: dynamic only
// with a listener prefix, and per broker.
var dynamicSecurityConfigs = []string{
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates",
}

// dynamicListenerConfigs are DynamicListenerConfig.ReconfigurableConfigs.
var dynamicListenerConfigs = []string{
	"advertised.listeners", "listeners", "listener.security.protocol.map",
	"principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols",
	"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
	"ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
	"ssl.keymanager.algorithm", "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm",
	"ssl.secure.random.implementation", "ssl.client.auth", "ssl.engine.factory.class",
	"sasl.mechanism.inter.broker.protocol", "sasl.jaas.config", "sasl.enabled.mechanisms",
	"sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd", "sasl.kerberos.ticket.renew.window.factor",
	"sasl.kerberos.ticket.renew.jitter", "sasl.kerberos.min.time.before.relogin",
	"sasl.kerberos.principal.to.local.rules", "sasl.login.refresh.window.factor",
	"sasl.login.refresh.window.jitter", "sasl.login.refresh.min.period.seconds",
	"sasl.login.refresh.buffer.seconds",
	"max.connections", "max.connection.creation.rate", "num.network.threads",
}

// clusterLevelListenerConfigs are DynamicBrokerConfig.ClusterLevelListenerConfigs.
var clusterLevelListenerConfigs = []string{"max.connections", "max.connection.creation.rate", "num.network.threads"}

// threadPoolConfigs are DynamicThreadPool.ReconfigurableConfigs.
var threadPoolConfigs = []string{"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"}

// PerBrokerDynamicKey reports whether name can be set dynamically per
// broker only (DynamicBrokerConfig.perBrokerConfigs).
func PerBrokerDynamicKey(name string) bool {
	if m := listenerConfigRE.FindStringSubmatch(name); m != nil {
		return !slices.Contains(clusterLevelListenerConfigs, m[1])
	}
	return (slices.Contains(dynamicSecurityConfigs, name) || slices.Contains(dynamicListenerConfigs, name)) &&
		!slices.Contains(clusterLevelListenerConfigs, name)
}

// dynamicKey is the definition DynamicConfig.Broker gives name (a dynamic
// KafkaConfig key or a broker quota key), false when it has none.
func dynamicKey(name string) (Key, bool) {
	if k, ok := brokerIndex[name]; ok && k.Dynamic {
		return *k, true
	}
	if slices.Contains(BrokerQuotaKeys, name) {
		return Key{Name: name, Type: TypeLong, Validator: AtLeast(0)}, true
	}
	return Key{}, false
}

// DynamicError is a refused dynamic broker config change; Msg is Kafka's
// message (the ConfigException's or the requirement's).
type DynamicError struct{ Msg string }

func (e *DynamicError) Error() string { return e.Msg }

func dynErr(format string, args ...any) error {
	return &DynamicError{Msg: fmt.Sprintf(format, args...)}
}

// javaSet formats names as Kafka 4.4 prints a java.util.Set of them
// ("[a, b]"), in java.util.HashSet's order for up to 12 names (the bucket
// of String.hashCode in a table of 16; ties in name order).
func javaSet(names []string) string {
	s := slices.Clone(names)
	bucket := func(n string) int32 {
		var h int32
		for _, r := range n {
			h = 31*h + r
		}
		u := uint32(h)
		return int32((u ^ u>>16) & 15)
	}
	sort.SliceStable(s, func(i, j int) bool {
		bi, bj := bucket(s[i]), bucket(s[j])
		if bi != bj {
			return bi < bj
		}
		return s[i] < s[j]
	})
	return "[" + strings.Join(s, ", ") + "]"
}

// ValidateDynamicConfigs is DynamicBrokerConfig.validateConfigs: step 1
// above for the resource's configs props (perBroker: a broker id, else the
// cluster default).
func ValidateDynamicConfigs(props map[string]string, perBroker bool) error {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	var nonDynamic, unprefixed, perBrokerOnly []string
	for _, n := range names {
		if k, ok := brokerIndex[n]; ok && !k.Dynamic {
			nonDynamic = append(nonDynamic, n)
		}
		if slices.Contains(dynamicSecurityConfigs, n) {
			unprefixed = append(unprefixed, n)
		}
		if PerBrokerDynamicKey(n) {
			perBrokerOnly = append(perBrokerOnly, n)
		}
	}
	if len(nonDynamic) > 0 {
		return dynErr("Cannot update these configs dynamically: %s", javaSet(nonDynamic))
	}
	if len(unprefixed) > 0 {
		return dynErr("These security configs can be dynamically updated only per-listener using the listener prefix: %s", javaSet(unprefixed))
	}
	// validateConfigTypes: a listener override is checked as its base key.
	for _, n := range names {
		base := n
		if m := listenerConfigRE.FindStringSubmatch(n); m != nil {
			base = m[1]
		}
		k, ok := dynamicKey(base)
		if !ok {
			continue
		}
		if _, err := k.Parse(props[n]); err != nil {
			return &DynamicError{Msg: err.Error()}
		}
	}
	if !perBroker && len(perBrokerOnly) > 0 {
		return dynErr("Cannot update these configs at default cluster level, broker id must be specified: %s", javaSet(perBrokerOnly))
	}
	return nil
}

// overrideProps is DynamicBrokerConfig.overrideProps: each key of over
// replaces its synonyms in props.
func overrideProps(props, over map[string]string) {
	for k, v := range over {
		if listenerConfigRE.MatchString(k) {
			delete(props, k) // matchListenerOverride=false: the base key stays
		} else {
			for _, s := range BrokerConfigSynonyms(k) {
				delete(props, s)
			}
		}
		props[k] = v
	}
}

// WithDynamic is this static config with the dynamic configs on top: the
// cluster-wide default, then this broker's (DynamicBrokerConfig
// .updateCurrentConfig). The error is KafkaConfig's refusal of the result.
func (c *Config) WithDynamic(clusterDefault, perBroker map[string]string) (*Config, error) {
	props := make(map[string]string, len(c.explicit)+len(clusterDefault)+len(perBroker))
	origins := make(map[string]string, len(props))
	for k, v := range c.explicit {
		props[k], origins[k] = v, c.origins[k]
	}
	overrideProps(props, clusterDefault)
	overrideProps(props, perBroker)
	for k := range props {
		if _, ok := origins[k]; !ok {
			origins[k] = "dynamic config"
		}
	}
	return build(props, origins, false)
}

// ValidateDynamic is DynamicBrokerConfig.validate: steps 1 to 3 above for
// a resource whose configs would become props (perBroker: this broker's
// own, else the cluster default), given the image's current cluster
// default and per-broker configs of this broker.
func (c *Config) ValidateDynamic(props map[string]string, perBroker bool, clusterDefault, brokerConfigs map[string]string) error {
	if err := ValidateDynamicConfigs(props, perBroker); err != nil {
		return err
	}
	var newCfg *Config
	var err error
	if perBroker {
		newCfg, err = c.WithDynamic(clusterDefault, props)
	} else {
		newCfg, err = c.WithDynamic(props, brokerConfigs)
	}
	if err != nil {
		return &DynamicError{Msg: kafkaConfigMessage(err)}
	}
	cur, err := c.WithDynamic(clusterDefault, brokerConfigs)
	if err != nil {
		cur = c // the current dynamic configs are invalid: compare with the static ones
	}
	changed := false
	for _, k := range append(slices.Clone(threadPoolConfigs), "log.cleaner.threads") {
		if newCfg.Int(k) != cur.Int(k) {
			changed = true
		}
	}
	if !changed {
		return nil
	}
	wrap := func(msg string) error {
		// processReconfiguration: new ConfigException("Invalid dynamic
		// configuration", e) is the (name, value) constructor.
		return dynErr("Invalid value org.apache.kafka.common.config.ConfigException: %s for configuration Invalid dynamic configuration", msg)
	}
	for _, k := range threadPoolConfigs {
		nv, ov := newCfg.Int(k), cur.Int(k)
		if nv == ov {
			continue
		}
		m := fmt.Sprintf("Dynamic thread count update validation failed for %s=%d", k, nv)
		switch {
		case nv <= 0:
			return wrap(m + ", value should be at least 1")
		case nv < ov/2:
			return wrap(fmt.Sprintf("%s, value should be at least half the current value %d", m, ov))
		case nv > ov*2:
			return wrap(fmt.Sprintf("%s, value should not be greater than double the current value %d", m, ov))
		}
	}
	nv, ov := newCfg.Int("log.cleaner.threads"), cur.Int("log.cleaner.threads")
	switch {
	case nv < 1:
		return wrap("Log cleaner threads should be at least 1")
	case nv < ov/2:
		return wrap(fmt.Sprintf("Log cleaner threads cannot be reduced to less than half the current value %d", ov))
	case nv > ov*2:
		return wrap(fmt.Sprintf("Log cleaner threads cannot be increased to more than double the current value %d", ov))
	}
	return nil
}

// kafkaConfigMessage is the message of the exception new KafkaConfig
// throws for err: Scala's require prefixes "requirement failed: ";
// ConfigExceptions and the ArithmeticException of log.cleaner.threads=0
// are as they are.
func kafkaConfigMessage(err error) string {
	msg := err.Error()
	if e, ok := err.(*Error); ok {
		msg = e.Msg
	}
	if msg == "/ by zero" || strings.HasPrefix(msg, "Invalid value ") || strings.HasPrefix(msg, "Missing required configuration") {
		return msg
	}
	return "requirement failed: " + msg
}
