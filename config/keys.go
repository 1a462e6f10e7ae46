package config

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Type is a Kafka ConfigDef type.
type Type int

// The ConfigDef types, spelled as Kafka spells them in DescribeConfigs (ConfigType).
const (
	TypeString Type = iota
	TypeInt
	TypeShort
	TypeLong
	TypeDouble
	TypeBoolean
	TypeList
	TypePassword
	TypeClass
)

var typeNames = [...]string{"string", "int", "short", "long", "double", "boolean", "list", "password", "class"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// javaName is the name Kafka prints in "Not a number of type INT".
func (t Type) javaName() string { return strings.ToUpper(t.String()) }

// DescribeConfigsType is the ConfigType code DescribeConfigs v3+ reports
// (DescribeConfigsResponse.ConfigType: BOOLEAN=1, STRING=2, INT=3, SHORT=4, LONG=5,
// DOUBLE=6, LIST=7, CLASS=8, PASSWORD=9).
func (t Type) DescribeConfigsType() int8 {
	switch t {
	case TypeBoolean:
		return 1
	case TypeString:
		return 2
	case TypeInt:
		return 3
	case TypeShort:
		return 4
	case TypeLong:
		return 5
	case TypeDouble:
		return 6
	case TypeList:
		return 7
	case TypeClass:
		return 8
	case TypePassword:
		return 9
	}
	return 0
}

// Importance is ConfigDef.Importance.
type Importance int

// Importance levels.
const (
	High Importance = iota
	Medium
	Low
)

func (i Importance) String() string {
	switch i {
	case High:
		return "high"
	case Medium:
		return "medium"
	}
	return "low"
}

// Key describes one config key as Kafka's ConfigDef does.
type Key struct {
	Name       string
	Type       Type
	Default    string // Kafka's default, as a string; meaningful when HasDefault
	HasDefault bool   // false: the default is null (or Required)
	Required   bool   // no default value: Kafka fails with "Missing required configuration"
	Importance Importance
	Validator  Validator // nil: any value of the right type
	Internal   bool      // Kafka-internal key (defineInternal: not listed by DescribeConfigs)
	Acted      bool      // kgo-broker acts on this key; otherwise accepted and reported as not acted on
	// Doc is Kafka's documentation of the key (DescribeConfigs v3+), and
	// Dynamic whether Kafka can change it at runtime (a broker key in
	// DynamicBrokerConfig.ALL_DYNAMIC_CONFIGS); both from
	// kafka_config_meta.json (meta_kafka.go).
	Doc     string
	Dynamic bool
}

// Sensitive reports whether the value must be hidden (Kafka reports null for
// PASSWORD keys in DescribeConfigs and "[hidden]" in logs).
func (k Key) Sensitive() bool { return k.Type == TypePassword }

// Parse parses value as Kafka's ConfigDef.parseType does (values are trimmed) and
// runs the key's validator. The error text is Kafka's ConfigException text:
// "Invalid value X for configuration K: reason".
func (k Key) Parse(value string) (any, error) {
	v, err := parseType(k.Name, value, k.Type)
	if err != nil {
		return nil, err
	}
	if k.Validator != nil {
		if err := k.Validator.Validate(k.Name, value, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// invalid builds Kafka's ConfigException(name, value, message) text.
func invalid(name string, value any, msg string) error {
	s := fmt.Sprintf("Invalid value %v for configuration %s", value, name)
	if msg != "" {
		s += ": " + msg
	}
	return &ValueError{Key: name, Msg: s}
}

// ValueError is an invalid value for one key (Kafka's ConfigException).
type ValueError struct {
	Key string
	Msg string
}

func (e *ValueError) Error() string { return e.Msg }

// parseType converts a string to the Go value of the type: string, int32 (INT and
// SHORT), int64, float64, bool, []string (LIST; empty string = empty list).
func parseType(name, value string, t Type) (any, error) {
	trimmed := strings.TrimSpace(value)
	switch t {
	case TypeBoolean:
		switch strings.ToLower(trimmed) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, invalid(name, value, "Expected value to be either true or false")
	case TypeString, TypeClass, TypePassword:
		return trimmed, nil
	case TypeInt:
		n, err := strconv.ParseInt(trimmed, 10, 32)
		if err != nil {
			return nil, invalid(name, value, "Not a number of type INT")
		}
		return int32(n), nil
	case TypeShort:
		n, err := strconv.ParseInt(trimmed, 10, 16)
		if err != nil {
			return nil, invalid(name, value, "Not a number of type SHORT")
		}
		return int32(n), nil
	case TypeLong:
		n, err := strconv.ParseInt(trimmed, 10, 64)
		if err != nil {
			return nil, invalid(name, value, "Not a number of type LONG")
		}
		return n, nil
	case TypeDouble:
		f, err := strconv.ParseFloat(trimmed, 64)
		if err != nil || math.IsNaN(f) {
			return nil, invalid(name, value, "Not a number of type DOUBLE")
		}
		return f, nil
	case TypeList:
		return splitList(trimmed), nil
	}
	return nil, invalid(name, value, "unknown type")
}

// splitList splits as Kafka does: on commas with surrounding whitespace; "" is empty.
func splitList(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

var (
	brokerIndex = map[string]*Key{}
	topicIndex  = map[string]*TopicKey{}
	// brokerSynonymOf maps a broker key to the topic key it is a synonym of.
	brokerSynonymOf = map[string]string{}
)

func init() {
	if err := applyKafkaMeta(); err != nil {
		panic("config: " + err.Error())
	}
	for _, name := range actedKeys {
		found := false
		for i := range brokerKeys {
			if brokerKeys[i].Name == name {
				brokerKeys[i].Acted, found = true, true
			}
		}
		if !found {
			panic("config: acted key " + name + " is not a Kafka broker key")
		}
	}
	for i := range brokerKeys {
		brokerIndex[brokerKeys[i].Name] = &brokerKeys[i]
	}
	for i := range topicKeys {
		tk := &topicKeys[i]
		topicIndex[tk.Name] = tk
		for _, s := range tk.Synonyms {
			if _, ok := brokerIndex[s.Name]; !ok {
				panic("config: synonym " + s.Name + " of " + tk.Name + " is not a broker key")
			}
			brokerSynonymOf[s.Name] = tk.Name
		}
	}
}

// Keys returns every broker config key Kafka knows, sorted by name.
func Keys() []Key {
	out := append([]Key(nil), brokerKeys...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the broker key named name.
func Lookup(name string) (Key, bool) {
	k, ok := brokerIndex[name]
	if !ok {
		return Key{}, false
	}
	return *k, true
}

// NotActedOn lists the broker keys kgo-broker accepts (because Kafka knows them)
// but does not act on yet, sorted by name.
func NotActedOn() []string {
	var out []string
	for _, k := range brokerKeys {
		if !k.Acted {
			out = append(out, k.Name)
		}
	}
	sort.Strings(out)
	return out
}

// ActedOn lists the broker keys kgo-broker acts on, sorted by name.
func ActedOn() []string {
	var out []string
	for _, k := range brokerKeys {
		if k.Acted {
			out = append(out, k.Name)
		}
	}
	sort.Strings(out)
	return out
}

// prefixedKeys are dynamic key families Kafka accepts beyond its ConfigDef
// (listener-scoped security settings, config providers, plugin settings).
var prefixedKeys = []string{
	"listener.name.",
	"config.providers.",
	"rsm.config.",
	"rlmm.config.",
	"metric.reporters.",
	"client.quota.callback.",
}

// knownPrefixed reports whether name belongs to a prefixed key family.
func knownPrefixed(name string) bool {
	for _, p := range prefixedKeys {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return true
		}
	}
	return false
}

// suggest returns the known key closest to name (edit distance), or "".
func suggest(name string) string {
	best, bestD := "", 4
	for _, k := range brokerKeys {
		if d := editDistance(name, k.Name, bestD); d < bestD {
			best, bestD = k.Name, d
		}
	}
	return best
}

func editDistance(a, b string, limit int) int {
	if d := len(a) - len(b); d >= limit || -d >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
