package config

// Group configs (ConfigResource type GROUP, 32): the per-group dynamic
// configs of KIP-848 (consumer.*), KIP-932 (share.*), KIP-1071 (streams.*)
// and KIP-1191 (errors.deadletterqueue.*), as Kafka 4.4's
// org.apache.kafka.coordinator.group.GroupConfig defines them (key order,
// types, defaults, ConfigDef validators, internal keys and broker synonyms
// read from the 4.4.0 group-coordinator jar). GroupConfig.validate, which
// the controller runs on a GROUP resource's configs after a change
// (ControllerConfigurationValidator), is ValidateGroupConfigs; the values a
// group coordinator uses (GroupConfigManager: the overrides clamped by
// GroupConfig.evaluate to the broker's current bounds, else the broker's
// group.* default) are ResolveGroupConfig.

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GroupKey is one key of GroupConfig.CONFIG_DEF.
type GroupKey struct {
	Key
	// BrokerSynonym is the key's GroupConfig.ALL_GROUP_CONFIG_SYNONYMS
	// entry: the broker config whose value a group without an override
	// uses ("" for share.auto.offset.reset, share.isolation.level,
	// share.renew.acknowledge.enable and errors.deadletterqueue.*, which
	// fall back to their GroupConfig default).
	BrokerSynonym string
}

// groupKeys are in GroupConfig.CONFIG_DEF's definition order, the order in
// which ConfigDef.parse reports the first invalid value.
var groupKeys = []GroupKey{
	{Key: Key{Name: "consumer.session.timeout.ms", Type: TypeInt, Default: "45000", HasDefault: true, Importance: Medium, Validator: AtLeast(1),
		Doc: "The timeout to detect client failures when using the consumer group protocol."}, BrokerSynonym: "group.consumer.session.timeout.ms"},
	{Key: Key{Name: "consumer.heartbeat.interval.ms", Type: TypeInt, Default: "5000", HasDefault: true, Importance: Medium, Validator: AtLeast(1),
		Doc: "The heartbeat interval given to the members of a consumer group."}, BrokerSynonym: "group.consumer.heartbeat.interval.ms"},
	{Key: Key{Name: "consumer.assignment.interval.ms", Type: TypeInt, Default: "1000", HasDefault: true, Importance: Medium, Validator: AtLeast(0),
		Doc: "The interval between assignment updates for a consumer group."}, BrokerSynonym: "group.consumer.assignment.interval.ms"},
	{Key: Key{Name: "consumer.assignor.offload.enable", Type: TypeBoolean, Default: "true", HasDefault: true, Importance: Medium, Internal: true,
		Doc: "Whether to offload consumer group assignment to a group coordinator background thread."}, BrokerSynonym: "group.consumer.assignor.offload.enable"},
	{Key: Key{Name: "share.session.timeout.ms", Type: TypeInt, Default: "45000", HasDefault: true, Importance: Medium, Validator: AtLeast(1),
		Doc: "The timeout to detect client failures when using the share group protocol."}, BrokerSynonym: "group.share.session.timeout.ms"},
	{Key: Key{Name: "share.heartbeat.interval.ms", Type: TypeInt, Default: "5000", HasDefault: true, Importance: Medium, Validator: AtLeast(1),
		Doc: "The heartbeat interval given to the members of a share group."}, BrokerSynonym: "group.share.heartbeat.interval.ms"},
	{Key: Key{Name: "share.record.lock.duration.ms", Type: TypeInt, Default: "30000", HasDefault: true, Importance: Medium, Validator: AtLeast(1000),
		Doc: "The record acquisition lock duration in milliseconds for share groups."}, BrokerSynonym: "group.share.record.lock.duration.ms"},
	{Key: Key{Name: "share.delivery.count.limit", Type: TypeInt, Default: "5", HasDefault: true, Importance: Medium, Validator: AtLeast(2),
		Doc: "The maximum number of delivery attempts for a record delivered to a share group."}, BrokerSynonym: "group.share.delivery.count.limit"},
	{Key: Key{Name: "share.partition.max.record.locks", Type: TypeInt, Default: "2000", HasDefault: true, Importance: Medium, Validator: AtLeast(100),
		Doc: "Share-group record lock limit per share-partition."}, BrokerSynonym: "group.share.partition.max.record.locks"},
	{Key: Key{Name: "share.auto.offset.reset", Type: TypeString, Default: "latest", HasDefault: true, Importance: Medium, Validator: shareAutoOffsetResetValidator{},
		Doc: "The strategy to initialize the share-partition start offset. <ul><li>earliest: automatically reset the offset to the earliest offset</li><li>latest: automatically reset the offset to the latest offset</li><li>by_duration:&lt;duration&gt;: automatically reset the offset to a configured duration from the current timestamp. &lt;duration&gt; must be specified in ISO8601 format (PnDTnHnMn.nS). Negative duration is not allowed.</li><li>anything else: throw exception to the share consumer.</li></ul>"}},
	{Key: Key{Name: "share.isolation.level", Type: TypeString, Default: "read_uncommitted", HasDefault: true, Importance: Medium, Validator: OneOf("read_committed", "read_uncommitted"),
		Doc: "Controls how to read records written transactionally. If set to \"read_committed\", the share group will only deliver transactional records which have been committed. If set to \"read_uncommitted\", the share group will return all messages, even transactional messages which have been aborted. Non-transactional records will be returned unconditionally in either mode."}},
	{Key: Key{Name: "share.renew.acknowledge.enable", Type: TypeBoolean, Default: "true", HasDefault: true, Importance: Medium,
		Doc: "Whether the renew acknowledge type is enabled for the share group."}},
	{Key: Key{Name: "share.assignment.interval.ms", Type: TypeInt, Default: "1000", HasDefault: true, Importance: Medium, Validator: AtLeast(0),
		Doc: "The interval between assignment updates for a share group."}, BrokerSynonym: "group.share.assignment.interval.ms"},
	{Key: Key{Name: "share.assignor.offload.enable", Type: TypeBoolean, Default: "true", HasDefault: true, Importance: Medium, Internal: true,
		Doc: "Whether to offload share group assignment to a group coordinator background thread."}, BrokerSynonym: "group.share.assignor.offload.enable"},
	{Key: Key{Name: "streams.session.timeout.ms", Type: TypeInt, Default: "45000", HasDefault: true, Importance: Medium, Validator: AtLeast(1),
		Doc: "The timeout to detect client failures when using the streams group protocol."}, BrokerSynonym: "group.streams.session.timeout.ms"},
	{Key: Key{Name: "streams.heartbeat.interval.ms", Type: TypeInt, Default: "5000", HasDefault: true, Importance: Medium, Validator: AtLeast(1),
		Doc: "The heartbeat interval given to the members."}, BrokerSynonym: "group.streams.heartbeat.interval.ms"},
	{Key: Key{Name: "streams.num.standby.replicas", Type: TypeInt, Default: "0", HasDefault: true, Importance: Medium, Validator: AtLeast(0),
		Doc: "The number of standby replicas for each task."}, BrokerSynonym: "group.streams.num.standby.replicas"},
	{Key: Key{Name: "streams.initial.rebalance.delay.ms", Type: TypeInt, Default: "3000", HasDefault: true, Importance: Medium, Validator: AtLeast(0),
		Doc: "The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances."}, BrokerSynonym: "group.streams.initial.rebalance.delay.ms"},
	{Key: Key{Name: "streams.assignment.interval.ms", Type: TypeInt, Default: "1000", HasDefault: true, Importance: Medium, Validator: AtLeast(0),
		Doc: "The interval between assignment updates for a streams group."}, BrokerSynonym: "group.streams.assignment.interval.ms"},
	{Key: Key{Name: "streams.assignor.offload.enable", Type: TypeBoolean, Default: "true", HasDefault: true, Importance: Medium, Internal: true,
		Doc: "Whether to offload streams group assignment to a group coordinator background thread."}, BrokerSynonym: "group.streams.assignor.offload.enable"},
	{Key: Key{Name: "streams.task.offset.interval.ms", Type: TypeInt, Default: "60000", HasDefault: true, Importance: Medium, Validator: AtLeast(1), Internal: true,
		Doc: "The interval in which the warmup task changelog offsets on a client are updated on the broker. The offsets are sent with the next heartbeat after this time has passed."}, BrokerSynonym: "group.streams.task.offset.interval.ms"},
	{Key: Key{Name: "streams.num.warmup.replicas", Type: TypeInt, Default: "2", HasDefault: true, Importance: Medium, Validator: AtLeast(0), Internal: true,
		Doc: "The maximum number of warmup task replicas."}, BrokerSynonym: "group.streams.num.warmup.replicas"},
	{Key: Key{Name: "streams.rack.aware.assignment.tags", Type: TypeList, Default: "", HasDefault: true, Importance: Medium,
		Doc: "List of client tag keys used to distribute standby replicas across Kafka Streams instances. When configured, and the used broker-side assignor supports it, it will make a best-effort to distribute standby tasks over each client tag dimension."}, BrokerSynonym: "group.streams.rack.aware.assignment.tags"},
	{Key: Key{Name: "streams.acceptable.recovery.lag", Type: TypeLong, Default: "10000", HasDefault: true, Importance: Medium, Validator: AtLeast(0), Internal: true,
		Doc: "The maximum acceptable lag (number of offsets to catch up) for a client to be considered caught-up enough to receive an active task assignment."}, BrokerSynonym: "group.streams.acceptable.recovery.lag"},
	{Key: Key{Name: "streams.assignor.name", Type: TypeString, Importance: Medium,
		Doc: "The task assignor to use for this streams group, selected by short name from the assignors registered via the broker configuration group.streams.assignors. When unset, the group defaults to the first assignor configured in the broker's group.streams.assignors setting. Changing the assignor does not trigger a rebalance for the group; the new assignor takes effect on the next rebalance."}, BrokerSynonym: "group.streams.assignors"},
	{Key: Key{Name: "errors.deadletterqueue.topic.name", Type: TypeString, Default: "", HasDefault: true, Importance: Medium,
		Doc: "The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If blank (the default), the group does not have a DLQ topic."}},
	{Key: Key{Name: "errors.deadletterqueue.copy.record.enable", Type: TypeBoolean, Default: "false", HasDefault: true, Importance: Medium,
		Doc: "When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ topic, or just write a record containing the context information headers."}},
}

var groupIndex = func() map[string]int {
	m := make(map[string]int, len(groupKeys))
	for i, k := range groupKeys {
		m[k.Name] = i
	}
	return m
}()

// GroupKeys returns Kafka 4.4's group config keys in definition order.
func GroupKeys() []GroupKey { return slices.Clone(groupKeys) }

// LookupGroupKey returns the group config key name.
func LookupGroupKey(name string) (GroupKey, bool) {
	i, ok := groupIndex[name]
	if !ok {
		return GroupKey{}, false
	}
	return groupKeys[i], true
}

// GroupConfigError is GroupConfig.validate's InvalidConfigurationException
// or ConfigException; both are INVALID_CONFIG with Msg as the message.
type GroupConfigError struct{ Msg string }

func (e *GroupConfigError) Error() string { return e.Msg }

func groupErr(format string, args ...any) error {
	return &GroupConfigError{Msg: fmt.Sprintf(format, args...)}
}

// groupBound is one check of GroupConfig.validateValues against the broker
// configs (GroupCoordinatorConfig, ShareGroupConfig), in Kafka's order.
type groupBound struct {
	key      string
	min, max string // broker keys; "" for no such bound
}

var groupBounds = []groupBound{
	{"consumer.heartbeat.interval.ms", "group.consumer.min.heartbeat.interval.ms", "group.consumer.max.heartbeat.interval.ms"},
	{"consumer.session.timeout.ms", "group.consumer.min.session.timeout.ms", "group.consumer.max.session.timeout.ms"},
	{"consumer.assignment.interval.ms", "group.consumer.min.assignment.interval.ms", "group.consumer.max.assignment.interval.ms"},
	{"share.heartbeat.interval.ms", "group.share.min.heartbeat.interval.ms", "group.share.max.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"},
	{"share.record.lock.duration.ms", "group.share.min.record.lock.duration.ms", "group.share.max.record.lock.duration.ms"},
	{"share.delivery.count.limit", "group.share.min.delivery.count.limit", "group.share.max.delivery.count.limit"},
	{"share.partition.max.record.locks", "group.share.min.partition.max.record.locks", "group.share.max.partition.max.record.locks"},
	{"share.assignment.interval.ms", "group.share.min.assignment.interval.ms", "group.share.max.assignment.interval.ms"},
	{"streams.heartbeat.interval.ms", "group.streams.min.heartbeat.interval.ms", "group.streams.max.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "group.streams.min.session.timeout.ms", "group.streams.max.session.timeout.ms"},
	{"streams.num.standby.replicas", "", "group.streams.max.standby.replicas"},
	{"streams.assignment.interval.ms", "group.streams.min.assignment.interval.ms", "group.streams.max.assignment.interval.ms"},
	{"streams.task.offset.interval.ms", "group.streams.min.task.offset.interval.ms", ""},
	{"streams.num.warmup.replicas", "", "group.streams.max.warmup.replicas"},
}

// groupSessionPairs are validateSessionExceedsHeartbeat's pairs: the
// session timeout must exceed the heartbeat interval, a key the group does
// not set taking the broker's value.
var groupSessionPairs = [][2]string{
	{"consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"},
	{"share.session.timeout.ms", "share.heartbeat.interval.ms"},
	{"streams.session.timeout.ms", "streams.heartbeat.interval.ms"},
}

var rackTagsSplit = regexp.MustCompile(`\s*,\s*`)

// ValidateGroupConfigs is GroupConfig.validate(configs, the broker's
// GroupCoordinatorConfig, ShareGroupConfig): configs are a GROUP
// resource's configs after the change (ConfigurationControlManager passes
// them all, the existing ones included). Checks, in Kafka's order: unknown
// names ("Unknown group config name: x", the first in java.util.HashMap
// order), duplicate
// streams.rack.aware.assignment.tags, ConfigDef.parse (types and the
// keys' own validators, "Invalid value ..."), then each set key against the
// broker's min/max group.* configs ("x must be in the range A to B
// inclusive.", "... less than or equal to B", "... greater than or equal to
// A"), streams.assignor.name among group.streams.assignors, each session
// timeout above its heartbeat interval, and the DLQ topic not internal.
func (c *Config) ValidateGroupConfigs(configs map[string]string) error {
	names := make([]string, 0, len(configs))
	for n := range configs {
		names = append(names, n)
	}
	slices.Sort(names)
	// validateNames reports the first unknown key of its HashMap.
	for _, n := range JavaHashOrder(names, false) {
		if _, ok := groupIndex[n]; !ok {
			return groupErr("Unknown group config name: %s", n)
		}
	}
	if v, ok := configs["streams.rack.aware.assignment.tags"]; ok {
		var tags []string
		if strings.TrimSpace(v) != "" {
			tags = rackTagsSplit.Split(v, -1)
		}
		seen := make(map[string]bool, len(tags))
		for _, t := range tags {
			if seen[t] {
				return groupErr("streams.rack.aware.assignment.tags must not contain duplicate tag keys.")
			}
			seen[t] = true
		}
	}
	parsed := make(map[string]any, len(configs))
	for _, k := range groupKeys {
		v, ok := configs[k.Name]
		if !ok {
			continue
		}
		p, err := k.Parse(v)
		if err != nil {
			return &GroupConfigError{Msg: err.Error()}
		}
		parsed[k.Name] = p
	}
	intOf := func(name string) (int64, bool) {
		switch x := parsed[name].(type) {
		case int32:
			return int64(x), true
		case int64:
			return x, true
		}
		return 0, false
	}
	for _, b := range groupBounds {
		v, ok := intOf(b.key)
		if !ok {
			continue
		}
		switch {
		case b.min != "" && b.max != "":
			lo, hi := int64(c.Int(b.min)), int64(c.Int(b.max))
			if v < lo || v > hi {
				return groupErr("%s must be in the range %d to %d inclusive.", b.key, lo, hi)
			}
		case b.max != "":
			if hi := int64(c.Int(b.max)); v > hi {
				return groupErr("%s must be less than or equal to %d", b.key, hi)
			}
		case b.min != "":
			if lo := int64(c.Int(b.min)); v < lo {
				return groupErr("%s must be greater than or equal to %d", b.key, lo)
			}
		}
	}
	if v, ok := parsed["streams.assignor.name"].(string); ok {
		names := c.List("group.streams.assignors")
		if !slices.Contains(names, v) {
			return groupErr("streams.assignor.name '%s' is not a registered task assignor. Registered assignors are: [%s].", v, strings.Join(names, ", "))
		}
	}
	for _, p := range groupSessionPairs {
		s, sSet := intOf(p[0])
		h, hSet := intOf(p[1])
		if !sSet && !hSet {
			continue
		}
		if !sSet {
			s = int64(c.Int(groupKeys[groupIndex[p[0]]].BrokerSynonym))
		}
		if !hSet {
			h = int64(c.Int(groupKeys[groupIndex[p[1]]].BrokerSynonym))
		}
		if s <= h {
			return groupErr("%s must be greater than %s", p[0], p[1])
		}
	}
	if v, ok := parsed["errors.deadletterqueue.topic.name"].(string); ok && v != "" && strings.HasPrefix(v, "__") {
		return groupErr("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")
	}
	return nil
}

// shareAutoOffsetResetValidator is ShareGroupAutoOffsetResetStrategy's
// Validator: "earliest", "latest" or "by_duration:<ISO-8601 duration>"
// (java.time.Duration.parse), not negative. Case matters for the
// strategy, not for the duration's letters (as in Java).
type shareAutoOffsetResetValidator struct{}

func (shareAutoOffsetResetValidator) Validate(name, raw string, parsed any) error {
	s, _ := parsed.(string)
	if _, ok := ParseShareAutoOffsetReset(s); ok {
		return nil
	}
	return invalid(name, s, fmt.Sprintf("Invalid value `%s` for configuration %s. The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.", s, name))
}

func (shareAutoOffsetResetValidator) String() string {
	return "[latest, earliest, by_duration:PnDTnHnMn.nS]"
}

// ShareAutoOffsetResetKind is ShareGroupAutoOffsetResetStrategy's type.
type ShareAutoOffsetResetKind int8

const (
	ShareResetLatest ShareAutoOffsetResetKind = iota
	ShareResetEarliest
	ShareResetByDuration
)

// ShareAutoOffsetReset is a share group's share.auto.offset.reset:
// Duration is by_duration's (the start offset is the first one with a
// timestamp at or after now minus Duration).
type ShareAutoOffsetReset struct {
	Kind     ShareAutoOffsetResetKind
	Duration time.Duration
	Raw      string // the config value
}

// ParseShareAutoOffsetReset parses a share.auto.offset.reset value.
func ParseShareAutoOffsetReset(s string) (ShareAutoOffsetReset, bool) {
	switch s {
	case "earliest":
		return ShareAutoOffsetReset{Kind: ShareResetEarliest, Raw: s}, true
	case "latest":
		return ShareAutoOffsetReset{Kind: ShareResetLatest, Raw: s}, true
	}
	rest, ok := strings.CutPrefix(s, "by_duration:")
	if !ok {
		return ShareAutoOffsetReset{}, false
	}
	d, ok := parseISODuration(rest)
	if !ok || d < 0 {
		return ShareAutoOffsetReset{}, false
	}
	return ShareAutoOffsetReset{Kind: ShareResetByDuration, Duration: d, Raw: s}, true
}

// isoDurationRE is java.time.Duration's PATTERN.
var isoDurationRE = regexp.MustCompile(`(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$`)

// parseISODuration is java.time.Duration.parse (PnDTnHnMn.nS); false for
// what Java refuses (no part, a "T" without a part) or an overflow.
func parseISODuration(s string) (time.Duration, bool) {
	m := isoDurationRE.FindStringSubmatch(s)
	if m == nil || s[len(s)-1] == 'T' || s[len(s)-1] == 't' {
		return 0, false
	}
	if m[2] == "" && m[4] == "" && m[5] == "" && m[6] == "" {
		return 0, false
	}
	var total float64
	for i, unit := range map[int]float64{2: 86400, 4: 3600, 5: 60, 6: 1} {
		if m[i] == "" {
			continue
		}
		n, err := strconv.ParseInt(m[i], 10, 64)
		if err != nil {
			return 0, false
		}
		total += float64(n) * unit
	}
	if m[7] != "" {
		frac, _ := strconv.ParseFloat("0."+m[7], 64)
		if strings.HasPrefix(m[6], "-") {
			frac = -frac
		}
		total += frac
	}
	if m[1] == "-" {
		total = -total
	}
	if total > float64(1<<63-1)/1e9 || total < -float64(1<<63-1)/1e9 {
		return 0, false
	}
	return time.Duration(total * 1e9), true
}
