package config

// Client metrics subscriptions (KIP-714): the configs of a CLIENT_METRICS
// resource, as Kafka's ClientMetricsConfigs defines, validates and parses
// them, and the Java collection orders Kafka's answers follow.
//
//   - Keys: metrics (LIST of metric name prefixes, "*" all, default
//     empty), interval.ms (INT, 100..3600000, default 300000), match (LIST
//     of selector=regex, default empty: every client).
//   - Validation (ClientMetricsConfigs.validate, on the resource's configs
//     after the change): the subscription name must not be empty; every
//     key must be known; ConfigDef.parse (a LIST's elements must not be
//     empty, an INT must parse); interval.ms in range; each match pattern
//     is exactly one '=' between a known selector and a valid regex.
//   - Java's regular expressions are not RE2's: a pattern Java accepts but
//     Go does not (lookaround, backreferences, possessive quantifiers) is
//     refused here; matching is whole-string as Java's Matcher.matches.

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Client metrics config keys and selectors (ClientMetricsConfigs).
const (
	ClientMetricsMetrics    = "metrics"
	ClientMetricsIntervalMs = "interval.ms"
	ClientMetricsMatch      = "match"

	ClientMetricsAllMetrics       = "*"
	ClientMetricsDefaultInterval  = 5 * 60 * 1000
	clientMetricsMinInterval      = 100
	clientMetricsMaxInterval      = 3600000
	ClientMetricsInstanceID       = "client_instance_id"
	ClientMetricsClientID         = "client_id"
	ClientMetricsSoftwareName     = "client_software_name"
	ClientMetricsSoftwareVersion  = "client_software_version"
	ClientMetricsSourceAddress    = "client_source_address"
	ClientMetricsSourcePort       = "client_source_port"
	clientMetricsTypeList         = "LIST"
	clientMetricsTypeInt          = "INT"
	clientMetricsDefaultListValue = ""
)

// ClientMetricsKey is one key of a CLIENT_METRICS resource.
type ClientMetricsKey struct {
	Name, Type, Default, Doc string
}

// ClientMetricsKeys are the keys in ConfigDef order (metrics, interval.ms,
// match), the order ConfigDef.parse checks them in.
var ClientMetricsKeys = []ClientMetricsKey{
	{ClientMetricsMetrics, clientMetricsTypeList, clientMetricsDefaultListValue, "Telemetry metric name prefix list"},
	{ClientMetricsIntervalMs, clientMetricsTypeInt, strconv.Itoa(ClientMetricsDefaultInterval), "Metrics push interval in milliseconds"},
	{ClientMetricsMatch, clientMetricsTypeList, clientMetricsDefaultListValue, "Client match criteria"},
}

var clientMetricsSelectors = map[string]bool{
	ClientMetricsInstanceID: true, ClientMetricsClientID: true, ClientMetricsSoftwareName: true,
	ClientMetricsSoftwareVersion: true, ClientMetricsSourceAddress: true, ClientMetricsSourcePort: true,
}

// LookupClientMetricsKey finds a client metrics key.
func LookupClientMetricsKey(name string) (ClientMetricsKey, bool) {
	for _, k := range ClientMetricsKeys {
		if k.Name == name {
			return k, true
		}
	}
	return ClientMetricsKey{}, false
}

// ClientMetricsError is a refused client metrics change: InvalidRequest
// (Kafka's InvalidRequestException) or else INVALID_CONFIG
// (InvalidConfigurationException, ConfigException).
type ClientMetricsError struct {
	InvalidRequest bool
	Msg            string
}

func (e *ClientMetricsError) Error() string { return e.Msg }

// ClientMetricsSubscription is a parsed subscription
// (ClientMetricsManager.SubscriptionInfo).
type ClientMetricsSubscription struct {
	Name       string
	Metrics    []string // Java HashSet iteration order
	IntervalMs int32
	Match      map[string]*regexp.Regexp // whole-string matchers
}

// ValidateClientMetrics is ClientMetricsConfigs.validate of a subscription's
// configs after a change.
func ValidateClientMetrics(name string, configs map[string]string) *ClientMetricsError {
	if name == "" {
		return &ClientMetricsError{true, "Subscription name can't be empty"}
	}
	_, err := parseClientMetrics(configs, true)
	return err
}

// ParseClientMetrics parses a stored subscription (validated when written).
func ParseClientMetrics(name string, configs map[string]string) (ClientMetricsSubscription, error) {
	s, err := parseClientMetrics(configs, false)
	if err != nil {
		return ClientMetricsSubscription{}, err
	}
	s.Name = name
	return s, nil
}

func parseClientMetrics(configs map[string]string, checkKeys bool) (ClientMetricsSubscription, *ClientMetricsError) {
	if checkKeys {
		// Properties.forEach: the HashMap's order decides which unknown
		// key is named.
		keys := make([]string, 0, len(configs))
		for k := range configs {
			keys = append(keys, k)
		}
		for _, k := range JavaHashOrder(sortedStrings(keys), false) {
			if _, ok := LookupClientMetricsKey(k); !ok {
				return ClientMetricsSubscription{}, &ClientMetricsError{true, "Unknown client metrics configuration: " + k}
			}
		}
	}
	s := ClientMetricsSubscription{IntervalMs: ClientMetricsDefaultInterval}
	metrics, err := parseClientMetricsList(ClientMetricsMetrics, configs)
	if err != nil {
		return s, err
	}
	if raw, ok := configs[ClientMetricsIntervalMs]; ok {
		n, perr := strconv.ParseInt(javaTrim(raw), 10, 32)
		if perr != nil {
			return s, &ClientMetricsError{false, fmt.Sprintf("Invalid value %s for configuration %s: Not a number of type INT", raw, ClientMetricsIntervalMs)}
		}
		s.IntervalMs = int32(n)
	}
	match, err := parseClientMetricsList(ClientMetricsMatch, configs)
	if err != nil {
		return s, err
	}
	if _, ok := configs[ClientMetricsIntervalMs]; ok && (s.IntervalMs < clientMetricsMinInterval || s.IntervalMs > clientMetricsMaxInterval) {
		return s, &ClientMetricsError{true, fmt.Sprintf("Invalid value %d for %s, interval must be between %d and %d (1 hour)",
			s.IntervalMs, ClientMetricsIntervalMs, clientMetricsMinInterval, clientMetricsMaxInterval)}
	}
	s.Match = make(map[string]*regexp.Regexp)
	for _, p := range match {
		parts := javaSplit(p, '=')
		illegal := &ClientMetricsError{false, "Illegal client matching pattern: " + p}
		if len(parts) != 2 {
			return s, illegal
		}
		sel := javaTrim(parts[0])
		if !clientMetricsSelectors[sel] {
			return s, illegal
		}
		expr := javaTrim(parts[1])
		if _, err := regexp.Compile(expr); err != nil {
			return s, illegal
		}
		re, err := regexp.Compile(`^(?:` + expr + `)$`)
		if err != nil {
			return s, illegal
		}
		s.Match[sel] = re
	}
	s.Metrics = JavaHashOrder(metrics, false)
	return s, nil
}

// parseClientMetricsList is ConfigDef.parseType for a LIST (trimmed, split
// on commas with the whitespace around them, duplicates dropped) and
// ValidList.anyNonDuplicateValues(true, false): no element may be empty.
func parseClientMetricsList(key string, configs map[string]string) ([]string, *ClientMetricsError) {
	raw, ok := configs[key]
	if !ok {
		return nil, nil
	}
	vals := ParseJavaList(raw)
	for _, v := range vals {
		if v == "" {
			return nil, &ClientMetricsError{false, fmt.Sprintf("Configuration '%s' values must not be empty.", key)}
		}
	}
	return vals, nil
}

// ParseJavaList splits a LIST value as ConfigDef.parseType does, without
// duplicates (first occurrence kept).
func ParseJavaList(raw string) []string {
	t := javaTrim(raw)
	if t == "" {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(t, ",") {
		p = strings.TrimFunc(p, isJavaRegexSpace)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// ClientMetricsDescribeValue is the value DescribeConfigs shows: the parsed
// value converted back (ConfigDef.convertToString), so a LIST is its
// elements joined by commas.
func ClientMetricsDescribeValue(key, raw string) string {
	k, ok := LookupClientMetricsKey(key)
	if !ok {
		return raw
	}
	if k.Type == clientMetricsTypeList {
		return strings.Join(ParseJavaList(raw), ",")
	}
	if n, err := strconv.ParseInt(javaTrim(raw), 10, 32); err == nil {
		return strconv.FormatInt(n, 10)
	}
	return raw
}

func isJavaRegexSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\x0b' || r == '\f' || r == '\r'
}

// javaTrim is String.trim: every character up to U+0020 off both ends.
func javaTrim(s string) string { return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' }) }

// javaSplit is String.split with a one-character literal: trailing empty
// strings are dropped.
func javaSplit(s string, sep byte) []string {
	parts := strings.Split(s, string(sep))
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

func sortedStrings(xs []string) []string {
	out := append([]string(nil), xs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// JavaStringHash is String.hashCode (over UTF-16 code units).
func JavaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// JavaHashOrder is the iteration order of a java.util.HashSet (concurrent:
// a ConcurrentHashMap's key set) the strings were added to in this order,
// duplicates ignored: by bucket (the spread hash masked by the table size
// the set grew to), then in insertion order within a bucket. Kafka's
// client metrics answers (requested metrics, the subscription id's CRC,
// the listed subscriptions) come out in that order. Bins turned into trees
// (8+ colliding entries) are not modelled.
func JavaHashOrder(in []string, concurrent bool) []string {
	var uniq []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			uniq = append(uniq, s)
		}
	}
	n := 16
	for {
		limit := n - n>>2 // 0.75n
		// HashMap resizes when the size exceeds the threshold,
		// ConcurrentHashMap when it reaches it.
		if (!concurrent && len(uniq) <= limit) || (concurrent && len(uniq) < limit) {
			break
		}
		n <<= 1
	}
	buckets := make([][]string, n)
	for _, s := range uniq {
		h := uint32(JavaStringHash(s))
		h ^= h >> 16
		i := int(h) & (n - 1)
		buckets[i] = append(buckets[i], s)
	}
	out := make([]string, 0, len(uniq))
	for _, b := range buckets {
		out = append(out, b...)
	}
	return out
}

// JavaSetString is AbstractCollection.toString: "[a, b]".
func JavaSetString(xs []string) string { return "[" + strings.Join(xs, ", ") + "]" }
