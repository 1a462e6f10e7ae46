package security

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PrincipalMapper is Kafka's SslPrincipalMapper: ssl.principal.mapping.rules
// turn a certificate's subject distinguished name (RFC 2253, as Java's
// X500Principal.getName prints it) into a principal name. Rules are tried in
// order; "DEFAULT" keeps the name; RULE:pattern/replacement/[LU] applies
// when pattern matches the whole name, replacing with Java's $n group
// references and optionally lower- or upper-casing the result.
type PrincipalMapper struct {
	rules []mapperRule
	text  string
}

type mapperRule struct {
	isDefault   bool
	re          *regexp.Regexp
	full        *regexp.Regexp // re anchored at both ends
	replacement string         // a Go Expand template
	lower       bool
	upper       bool
}

const rulePattern = `(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)`

var (
	ruleSplitter = regexp.MustCompile(`\s*(` + rulePattern + `)\s*(?:,\s*|$)`)
	ruleParser   = regexp.MustCompile(`^(?:` + rulePattern + `)`)
)

// NewPrincipalMapper parses ssl.principal.mapping.rules with Kafka's
// messages.
func NewPrincipalMapper(rules string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{text: rules}
	rules = strings.TrimSpace(rules)
	if rules == "" {
		rules = "DEFAULT"
	}
	for _, sm := range ruleSplitter.FindAllStringSubmatch(rules, -1) {
		rule := sm[1]
		loc := ruleParser.FindStringSubmatchIndex(rule)
		if loc == nil {
			return nil, fmt.Errorf("Invalid rule: %s", rule)
		}
		// RE2 prefers the first alternative that matches; Java's
		// lookingAt does too, so the end is the same.
		if loc[1] != len(rule) {
			return nil, fmt.Errorf("Invalid rule: `%s`, unmatched substring: `%s`", rule, rule[loc[1]:])
		}
		g := func(i int) (string, bool) {
			if loc[2*i] < 0 {
				return "", false
			}
			return rule[loc[2*i]:loc[2*i+1]], true
		}
		if _, ok := g(1); ok {
			m.rules = append(m.rules, mapperRule{isDefault: true})
			continue
		}
		pat, ok := g(2)
		if !ok {
			continue // empty rules are ignored
		}
		repl, _ := g(3)
		flag, _ := g(4)
		re, err := regexp.Compile(pat)
		if err != nil {
			return nil, fmt.Errorf("Invalid rule: %s: %v", rule, err)
		}
		full, err := regexp.Compile(`^(?:` + pat + `)$`)
		if err != nil {
			return nil, fmt.Errorf("Invalid rule: %s: %v", rule, err)
		}
		m.rules = append(m.rules, mapperRule{re: re, full: full, replacement: javaReplacement(repl, re.NumSubexp()),
			lower: flag == "L", upper: flag == "U"})
	}
	if len(m.rules) == 0 && strings.TrimSpace(m.text) != "" {
		return nil, fmt.Errorf("Invalid rule: %s", m.text)
	}
	return m, nil
}

// javaReplacement turns a Java Matcher.replaceAll replacement into a Go
// Expand template: \c is a literal c, $n a group (digits taken while the
// group exists; SslPrincipalMapper escapes references to missing groups).
func javaReplacement(s string, groups int) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			n := int(s[i+1] - '0')
			j := i + 2
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				nn := n*10 + int(s[j]-'0')
				if nn > groups {
					break
				}
				n, j = nn, j+1
			}
			if n > groups {
				b.WriteString("$$")
				continue
			}
			b.WriteString("${" + strconv.Itoa(n) + "}")
			i = j - 1
		case c == '$':
			b.WriteString("$$")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Name maps a distinguished name; an error is Kafka's NoMatchedRuleException.
func (m *PrincipalMapper) Name(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return dn, nil
		}
		if !r.full.MatchString(dn) {
			continue // Java's Matcher.matches: the whole name
		}
		return caseOf(r, r.re.ReplaceAllString(dn, r.replacement)), nil
	}
	return "", fmt.Errorf("No rules apply to %s, rules %s", dn, m.String())
}

func caseOf(r mapperRule, s string) string {
	switch {
	case r.lower:
		return strings.ToLower(s)
	case r.upper:
		return strings.ToUpper(s)
	}
	return s
}

func (m *PrincipalMapper) String() string {
	var parts []string
	for _, r := range m.rules {
		if r.isDefault {
			parts = append(parts, "DEFAULT")
		} else {
			parts = append(parts, "RULE:"+r.re.String())
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// rfc2253Keywords are the attribute types Java's X500Principal.getName
// (RFC2253) prints by keyword; others print as dotted OIDs with the value as
// '#' and the hex of its DER encoding.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// SubjectDN is a certificate subject in the form Java's
// X500Principal.getName() gives it: RFC 2253, the last RDN first.
func SubjectDN(cert *x509.Certificate) string {
	var rdns pkix.RDNSequence
	if rest, err := asn1.Unmarshal(cert.RawSubject, &rdns); err != nil || len(rest) > 0 {
		return cert.Subject.String()
	}
	var parts []string
	for i := len(rdns) - 1; i >= 0; i-- {
		var avas []string
		for _, ava := range rdns[i] {
			oid := ava.Type.String()
			kw, known := rfc2253Keywords[oid]
			s, isString := ava.Value.(string)
			if known && isString {
				avas = append(avas, kw+"="+escapeRFC2253(s))
				continue
			}
			der, err := asn1.Marshal(ava.Value)
			if err != nil {
				continue
			}
			name := oid
			if known {
				name = kw
			}
			avas = append(avas, name+"=#"+hex.EncodeToString(der))
		}
		parts = append(parts, strings.Join(avas, "+"))
	}
	return strings.Join(parts, ",")
}

func escapeRFC2253(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(`,+"\<>;`, c) >= 0,
			c == '#' && i == 0,
			c == ' ' && (i == 0 || i == len(s)-1):
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
