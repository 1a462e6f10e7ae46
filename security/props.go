package security

import (
	"strings"
)

// Props is where security settings come from: a broker config key's
// effective value (dynamic broker config, static config, Kafka's default),
// and listener-prefixed keys (listener.name.<l>.*) when they are set. The
// broker implements it over config.Config and the metadata image's broker
// configs; tests use MapProps.
type Props interface {
	Get(key string) (string, bool)
}

// MapProps is Props over a map (no defaults).
type MapProps map[string]string

// Get implements Props.
func (m MapProps) Get(key string) (string, bool) { v, ok := m[key]; return v, ok }

// listenerPrefix is ListenerName.configPrefix: listener.name.<lower-case name>.
func listenerPrefix(listener string) string {
	return "listener.name." + strings.ToLower(listener) + "."
}

// ListenerGet looks key up for a listener as Kafka's
// valuesWithPrefixOverride does: listener.name.<l>.<key> wins over <key>.
func ListenerGet(p Props, listener, key string) (string, bool) {
	if v, ok := p.Get(listenerPrefix(listener) + key); ok {
		return v, true
	}
	return p.Get(key)
}

// mechGet looks a key up for a listener and SASL mechanism:
// listener.name.<l>.<mechanism>.<key>, then the listener's <key>
// (ConfigurationUtils and SaslChannelBuilder's saslMechanismPrefix).
func mechGet(p Props, listener, mechanism, key string) (string, bool) {
	if v, ok := p.Get(listenerPrefix(listener) + strings.ToLower(mechanism) + "." + key); ok {
		return v, true
	}
	return ListenerGet(p, listener, key)
}
