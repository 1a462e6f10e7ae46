package security

import (
	"errors"
	"fmt"
	"strings"
)

// LoginModule is one entry of a JAAS configuration: the login module class,
// its control flag and its options (javax.security.auth.login's
// AppConfigurationEntry).
type LoginModule struct {
	Class   string
	Flag    string // REQUIRED, REQUISITE, SUFFICIENT or OPTIONAL
	Options map[string]string
}

// Kafka's login module classes.
const (
	PlainLoginModule       = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule       = "org.apache.kafka.common.security.scram.ScramLoginModule"
	OAuthBearerLoginModule = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
)

// disallowedLoginModules is the default of Kafka's
// org.apache.kafka.disallowed.login.modules (CVE-2023-25194, CVE-2025-27818).
var disallowedLoginModules = []string{
	"com.sun.security.auth.module.JndiLoginModule",
	"com.sun.security.auth.module.LdapLoginModule",
}

// ParseJaasConfig parses a sasl.jaas.config value as Kafka's JaasConfig
// does: one or more "<class> <flag> key=value ...;" entries, values as words
// or quoted strings, // and /* */ comments. Kafka requires exactly one
// module in sasl.jaas.config (JaasContext.load).
func ParseJaasConfig(s string) ([]LoginModule, error) {
	t := &jaasTokenizer{src: s}
	var out []LoginModule
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			break
		}
		m, err := parseLoginModule(t, tok)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("Login module not specified in JAAS config")
	}
	return out, nil
}

// ParseSingleJaasConfig is ParseJaasConfig for sasl.jaas.config, which must
// name exactly one login module.
func ParseSingleJaasConfig(key, s string) (LoginModule, error) {
	ms, err := ParseJaasConfig(s)
	if err != nil {
		return LoginModule{}, err
	}
	if len(ms) != 1 {
		return LoginModule{}, fmt.Errorf("JAAS config property contains %d login modules, should be 1 module", len(ms))
	}
	return ms[0], nil
}

// ParseJaasFile parses a JAAS login configuration file (the
// java.security.auth.login.config format Kafka's JAAS file sections use):
// "Name { <entries> };" sections, returned by name.
func ParseJaasFile(s string) (map[string][]LoginModule, error) {
	t := &jaasTokenizer{src: s}
	out := map[string][]LoginModule{}
	for {
		tok, err := t.next()
		if err != nil {
			return nil, err
		}
		if tok.kind == tokEOF {
			return out, nil
		}
		if tok.kind != tokWord && tok.kind != tokQuoted {
			return nil, fmt.Errorf("JAAS file: expected a login context name, got %s", tok)
		}
		name := tok.s
		if tok, err = t.next(); err != nil {
			return nil, err
		} else if tok.kind != tokChar || tok.c != '{' {
			return nil, fmt.Errorf("JAAS file: expected '{' after %s", name)
		}
		var mods []LoginModule
		for {
			tok, err = t.next()
			if err != nil {
				return nil, err
			}
			if tok.kind == tokChar && tok.c == '}' {
				break
			}
			if tok.kind == tokEOF {
				return nil, fmt.Errorf("JAAS file: section %s is not closed by '}'", name)
			}
			m, err := parseLoginModule(t, tok)
			if err != nil {
				return nil, fmt.Errorf("JAAS file section %s: %w", name, err)
			}
			mods = append(mods, m)
		}
		if tok, err = t.next(); err != nil {
			return nil, err
		} else if tok.kind != tokChar || tok.c != ';' {
			return nil, fmt.Errorf("JAAS file: section %s is not terminated by ';'", name)
		}
		out[name] = append(out[name], mods...)
	}
}

func parseLoginModule(t *jaasTokenizer, first jaasToken) (LoginModule, error) {
	m := LoginModule{Class: first.s, Options: map[string]string{}}
	if first.kind != tokWord && first.kind != tokQuoted {
		return m, fmt.Errorf("Login module not specified in JAAS config")
	}
	for _, d := range disallowedLoginModules {
		if strings.TrimSpace(m.Class) == d {
			return m, fmt.Errorf("%s is not allowed. Update System property 'org.apache.kafka.disallowed.login.modules' to allow %s", d, d)
		}
	}
	tok, err := t.next()
	if err != nil {
		return m, err
	}
	if tok.kind == tokEOF {
		return m, errors.New("Login module control flag not specified in JAAS config")
	}
	if tok.kind != tokWord && tok.kind != tokQuoted {
		return m, errors.New("Login module control flag is not available in the JAAS config")
	}
	switch f := strings.ToUpper(tok.s); f {
	case "REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL":
		m.Flag = f
	default:
		return m, fmt.Errorf("Invalid login module control flag '%s' in JAAS config", tok.s)
	}
	for {
		tok, err = t.next()
		if err != nil {
			return m, err
		}
		if tok.kind == tokEOF || (tok.kind == tokChar && tok.c == ';') {
			break
		}
		key := tok.s
		eq, err := t.next()
		if err != nil {
			return m, err
		}
		val, err := t.next()
		if err != nil {
			return m, err
		}
		if eq.kind != tokChar || eq.c != '=' || (val.kind != tokWord && val.kind != tokQuoted) {
			return m, fmt.Errorf("Value not specified for key '%s' in JAAS config", key)
		}
		m.Options[key] = val.s
	}
	if tok.kind != tokChar || tok.c != ';' {
		return m, errors.New("JAAS config entry not terminated by semi-colon")
	}
	return m, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokWord
	tokQuoted
	tokNumber // an unquoted number: StreamTokenizer gives it no string value
	tokChar
)

type jaasToken struct {
	kind tokKind
	s    string
	c    byte
}

func (t jaasToken) String() string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokChar:
		return fmt.Sprintf("'%c'", t.c)
	}
	return fmt.Sprintf("%q", t.s)
}

// jaasTokenizer follows java.io.StreamTokenizer as Kafka's JaasConfig sets
// it up: words of letters, digits, '.', '-', '_' and '$' starting with a
// letter, '_' or '$'; numbers starting with a digit, '.' or '-'; quoted
// strings in " or ' with Java's escapes, ending at the quote or the end of
// the line; // and /* */ comments, and '/' alone starting a line comment.
type jaasTokenizer struct {
	src string
	pos int
}

func isWordStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' || c >= 160
}

func isWordPart(c byte) bool {
	return isWordStart(c) || c >= '0' && c <= '9' || c == '.' || c == '-'
}

func isNumberStart(c byte) bool { return c >= '0' && c <= '9' || c == '.' || c == '-' }

func (t *jaasTokenizer) next() (jaasToken, error) {
	for t.pos < len(t.src) {
		c := t.src[t.pos]
		switch {
		case c <= ' ':
			t.pos++
		case c == '/':
			if strings.HasPrefix(t.src[t.pos:], "/*") {
				end := strings.Index(t.src[t.pos+2:], "*/")
				if end < 0 {
					t.pos = len(t.src)
				} else {
					t.pos += 2 + end + 2
				}
				continue
			}
			// "//" and a lone '/' (a comment character) end the line.
			for t.pos < len(t.src) && t.src[t.pos] != '\n' && t.src[t.pos] != '\r' {
				t.pos++
			}
		case c == '"' || c == '\'':
			return t.quoted(c), nil
		case c == '-' && !(t.pos+1 < len(t.src) && (t.src[t.pos+1] >= '0' && t.src[t.pos+1] <= '9' || t.src[t.pos+1] == '.')):
			// StreamTokenizer reads '-' as a number's sign first: one
			// not followed by a number is the ordinary character '-'.
			t.pos++
			return jaasToken{kind: tokChar, c: '-'}, nil
		case isNumberStart(c):
			start := t.pos
			t.pos++
			for t.pos < len(t.src) && (t.src[t.pos] >= '0' && t.src[t.pos] <= '9' || t.src[t.pos] == '.') {
				t.pos++
			}
			return jaasToken{kind: tokNumber, s: t.src[start:t.pos]}, nil
		case isWordStart(c):
			return t.word(), nil
		default:
			t.pos++
			return jaasToken{kind: tokChar, c: c}, nil
		}
	}
	return jaasToken{kind: tokEOF}, nil
}

func (t *jaasTokenizer) word() jaasToken {
	start := t.pos
	for t.pos < len(t.src) && isWordPart(t.src[t.pos]) {
		t.pos++
	}
	return jaasToken{kind: tokWord, s: t.src[start:t.pos]}
}

func (t *jaasTokenizer) quoted(q byte) jaasToken {
	t.pos++
	var b strings.Builder
	for t.pos < len(t.src) {
		c := t.src[t.pos]
		if c == q {
			t.pos++
			break
		}
		if c == '\n' || c == '\r' {
			break // StreamTokenizer ends an unterminated string at the line's end
		}
		t.pos++
		if c != '\\' || t.pos >= len(t.src) {
			b.WriteByte(c)
			continue
		}
		e := t.src[t.pos]
		t.pos++
		switch e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		default:
			if e >= '0' && e <= '7' {
				// Octal: up to three digits, the first 0-3 for three.
				v := int(e - '0')
				maxDigits := 2
				if e > '3' {
					maxDigits = 1
				}
				for i := 0; i < maxDigits && t.pos < len(t.src) && t.src[t.pos] >= '0' && t.src[t.pos] <= '7'; i++ {
					v = v*8 + int(t.src[t.pos]-'0')
					t.pos++
				}
				b.WriteByte(byte(v))
			} else {
				b.WriteByte(e)
			}
		}
	}
	return jaasToken{kind: tokQuoted, s: b.String()}
}
