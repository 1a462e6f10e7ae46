package config

import "strings"

// envExcluded are the KAFKA_* variables Apache Kafka's docker image does not turn
// into server properties (KafkaDockerWrapper.getServerConfigsFromEnv).
var envExcluded = map[string]bool{
	"KAFKA_VERSION":              true,
	"KAFKA_HEAP_OPTS":            true,
	"KAFKA_LOG4J_OPTS":           true,
	"KAFKA_OPTS":                 true,
	"KAFKA_JMX_OPTS":             true,
	"KAFKA_JVM_PERFORMANCE_OPTS": true,
	"KAFKA_GC_LOG_OPTS":          true,
	"KAFKA_LOG4J_ROOT_LOGLEVEL":  true,
	"KAFKA_LOG4J_LOGGERS":        true,
	"KAFKA_TOOLS_LOG4J_LOGLEVEL": true,
	"KAFKA_JMX_HOSTNAME":         true,
}

// EnvKey maps an environment variable name to the config key Apache Kafka's docker
// image derives from it: the "KAFKA_" prefix is removed, the rest is lower-cased,
// then "_" -> ".", "..." -> "-", ".." -> "_"; so "_" becomes ".", "__" becomes "_"
// and "___" becomes "-". ok is false for variables that do not start with KAFKA_
// and for the excluded JVM/log4j variables.
//
// Kafka 4.4.0's KafkaDockerWrapper removes only the prefix (KAFKA_X_KAFKA_Y ->
// x.kafka.y); older sources used replace("KAFKA_", ""), which removed every
// occurrence. kgo-broker follows 4.4.0, checked against its jar.
func EnvKey(name string) (key string, ok bool) {
	if !strings.HasPrefix(name, "KAFKA_") || envExcluded[name] {
		return "", false
	}
	key = strings.ToLower(strings.TrimPrefix(name, "KAFKA_"))
	key = strings.ReplaceAll(key, "_", ".")
	key = strings.ReplaceAll(key, "...", "-")
	key = strings.ReplaceAll(key, "..", "_")
	return key, true
}

// EnvSetting is one server property taken from the environment.
type EnvSetting struct {
	Var   string // e.g. KAFKA_LOG_DIRS
	Key   string // e.g. log.dirs
	Value string
}

// FromEnv returns the server properties in environ ("NAME=value" entries, as
// os.Environ returns), in environ order.
func FromEnv(environ []string) []EnvSetting {
	var out []EnvSetting
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if key, ok := EnvKey(name); ok {
			out = append(out, EnvSetting{Var: name, Key: key, Value: value})
		}
	}
	return out
}
