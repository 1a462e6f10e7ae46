package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Validator checks a parsed value, as Kafka's ConfigDef.Validator does. raw is the
// string as given; parsed is what parseType returned for the key's type. The
// error text matches Kafka's.
type Validator interface {
	Validate(name, raw string, parsed any) error
	String() string // Kafka's Validator.toString, e.g. "[1,...]"
}

// javaString formats a parsed value as Java's toString would in Kafka's messages.
func javaString(v any) string {
	switch x := v.(type) {
	case float64:
		return javaDouble(x)
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// javaDouble formats f as Java's Double.toString does for ordinary values.
func javaDouble(f float64) string {
	if math.IsInf(f, 0) {
		if f > 0 {
			return "Infinity"
		}
		return "-Infinity"
	}
	a := math.Abs(f)
	if a != 0 && (a < 1e-3 || a >= 1e7) {
		s := strconv.FormatFloat(f, 'E', -1, 64)
		mant, exp, _ := strings.Cut(s, "E")
		if !strings.Contains(mant, ".") {
			mant += ".0"
		}
		return mant + "E" + strings.TrimPrefix(exp, "+")
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func num(v any) (float64, bool) {
	switch x := v.(type) {
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

type rangeValidator struct {
	min, max       float64
	hasMin, hasMax bool
}

// AtLeast is Kafka's Range.atLeast(min).
func AtLeast(min float64) Validator { return rangeValidator{min: min, hasMin: true} }

// Between is Kafka's Range.between(min, max).
func Between(min, max float64) Validator {
	return rangeValidator{min: min, max: max, hasMin: true, hasMax: true}
}

func (r rangeValidator) Validate(name, raw string, parsed any) error {
	n, ok := num(parsed)
	if !ok {
		return nil
	}
	// int64 beyond 2^53 compares exactly enough for Kafka's small bounds.
	if r.hasMin && n < r.min {
		return invalid(name, javaString(parsed), "Value must be at least "+fmtNum(r.min))
	}
	if r.hasMax && n > r.max {
		return invalid(name, javaString(parsed), "Value must be no more than "+fmtNum(r.max))
	}
	return nil
}

func (r rangeValidator) String() string {
	if !r.hasMax {
		return "[" + fmtNum(r.min) + ",...]"
	}
	return "[" + fmtNum(r.min) + ",...," + fmtNum(r.max) + "]"
}

type betweenOr struct{ min, max, or float64 }

// BetweenOr accepts [min, max] or exactly or (compression.gzip.level).
func BetweenOr(min, max, or float64) Validator { return betweenOr{min, max, or} }

func (b betweenOr) Validate(name, raw string, parsed any) error {
	n, ok := num(parsed)
	if !ok || n == b.or || (n >= b.min && n <= b.max) {
		return nil
	}
	return invalid(name, javaString(parsed), fmt.Sprintf("Value must be between %s and %s or equal to %s",
		fmtNum(b.min), fmtNum(b.max), fmtNum(b.or)))
}

func (b betweenOr) String() string {
	return fmt.Sprintf("[%s,...,%s] or %s", fmtNum(b.min), fmtNum(b.max), fmtNum(b.or))
}

type oneOf struct {
	values     []string
	ignoreCase bool
}

// OneOf is Kafka's ValidString.in / ValidList.in: the value (each list item) must be
// one of values.
func OneOf(values ...string) Validator { return oneOf{values: values} }

// OneOfIgnoreCase is Kafka's CaseInsensitiveValidString.
func OneOfIgnoreCase(values ...string) Validator { return oneOf{values: values, ignoreCase: true} }

func (o oneOf) ok(s string) bool {
	for _, v := range o.values {
		if v == s || (o.ignoreCase && strings.EqualFold(v, s)) {
			return true
		}
	}
	return false
}

func (o oneOf) Validate(name, raw string, parsed any) error {
	items, isList := parsed.([]string)
	if !isList {
		s, _ := parsed.(string)
		items = []string{s}
	}
	for _, s := range items {
		if !o.ok(s) {
			if o.ignoreCase {
				return invalid(name, s, "String must be one of (case insensitive): "+strings.Join(o.values, ", "))
			}
			return invalid(name, s, "String must be one of: "+strings.Join(o.values, ", "))
		}
	}
	return nil
}

func (o oneOf) String() string {
	s := "[" + strings.Join(o.values, ", ") + "]"
	if o.ignoreCase {
		return "(case insensitive) " + s
	}
	return s
}

type noDuplicates struct{}

// NoDuplicates rejects a list with a repeated item (Kafka 4.x ValidList).
func NoDuplicates() Validator { return noDuplicates{} }

func (noDuplicates) Validate(name, raw string, parsed any) error {
	items, _ := parsed.([]string)
	seen := map[string]bool{}
	for _, s := range items {
		if seen[s] {
			return &ValueError{Key: name, Msg: fmt.Sprintf("Configuration '%s' values must not be duplicated.", name)}
		}
		seen[s] = true
	}
	return nil
}

func (noDuplicates) String() string { return "" }

type nonEmptyList struct{ valid string }

// NonEmptyList rejects an empty list (Kafka 4.x ValidList without allowEmpty).
func NonEmptyList() Validator { return nonEmptyList{valid: "any non-empty value"} }

func (n nonEmptyList) Validate(name, raw string, parsed any) error {
	if items, ok := parsed.([]string); ok && len(items) == 0 {
		return &ValueError{Key: name, Msg: fmt.Sprintf("Configuration '%s' must not be empty. Valid values include: %s", name, n.valid)}
	}
	return nil
}

func (nonEmptyList) String() string { return "" }

type nonEmptyString struct{}

// NonEmptyString is Kafka's ConfigDef.NonEmptyString.
func NonEmptyString() Validator { return nonEmptyString{} }

func (nonEmptyString) Validate(name, raw string, parsed any) error {
	if s, ok := parsed.(string); ok && s == "" {
		return invalid(name, s, "String must be non-empty")
	}
	return nil
}

func (nonEmptyString) String() string { return "non-empty string" }

type all []Validator

// All runs every validator in order (Kafka's CompositeValidator).
func All(vs ...Validator) Validator {
	// A non-empty list that must also be one of some values says which.
	for i, v := range vs {
		if _, ok := v.(nonEmptyList); ok {
			for _, w := range vs {
				if o, ok := w.(oneOf); ok {
					vs[i] = nonEmptyList{valid: o.String()}
				}
			}
		}
	}
	return all(vs)
}

func (a all) Validate(name, raw string, parsed any) error {
	for _, v := range a {
		if err := v.Validate(name, raw, parsed); err != nil {
			return err
		}
	}
	return nil
}

func (a all) String() string {
	var parts []string
	for _, v := range a {
		if s := v.String(); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

type throttledReplicas struct{}

// ThrottledReplicas validates leader/follower.replication.throttled.replicas: the
// literal '*' or partitionId:brokerId pairs.
func ThrottledReplicas() Validator { return throttledReplicas{} }

func (throttledReplicas) Validate(name, raw string, parsed any) error {
	items, _ := parsed.([]string)
	if len(items) == 1 && items[0] == "*" {
		return nil
	}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		if !ok || !isDigits(strings.TrimSpace(p)) || !isDigits(strings.TrimSpace(b)) {
			return invalid(name, javaString(parsed), name+" must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
		}
	}
	return nil
}

func (throttledReplicas) String() string {
	return "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

type quorumVoters struct{}

// QuorumVoters validates controller.quorum.voters entries {id}@{host}:{port}.
func QuorumVoters() Validator { return quorumVoters{} }

func (quorumVoters) Validate(name, raw string, parsed any) error {
	items, _ := parsed.([]string)
	_, err := parseVoters(name, items)
	return err
}

func (quorumVoters) String() string { return "non-empty list" }

type bootstrapServers struct{}

// BootstrapServers validates controller.quorum.bootstrap.servers entries {host}:{port}.
func BootstrapServers() Validator { return bootstrapServers{} }

func (bootstrapServers) Validate(name, raw string, parsed any) error {
	items, _ := parsed.([]string)
	for _, it := range items {
		if _, err := parseHostPort(it); err != nil {
			return &ValueError{Key: name, Msg: fmt.Sprintf("Failed to parse host name from %s for the configuration %s. Each entry should be in the form \"{host}:{port}\"", it, name)}
		}
	}
	return nil
}

func (bootstrapServers) String() string { return "non-empty list" }
