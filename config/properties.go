package config

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Property is one key=value of a .properties file.
type Property struct {
	Key, Value string
	Line       int // line where the logical line starts, from 1
}

// ParseProperties parses the Java .properties format exactly as
// java.util.Properties.load: comment lines start with '#' or '!'; the key ends at
// the first unescaped '=', ':' or whitespace; a line ending in an odd number of
// backslashes continues on the next line (whose leading whitespace is dropped);
// escapes \t \n \r \f \uXXXX, and '\' before any other character is that character.
// Input is UTF-8 (Java reads ISO-8859-1; bytes that are not valid UTF-8 are read as
// ISO-8859-1 too). Later duplicates win when the result is put into a map.
func ParseProperties(data []byte) ([]Property, error) {
	text := string(data)
	if !utf8.ValidString(text) {
		r := make([]rune, len(data))
		for i, b := range data {
			r[i] = rune(b)
		}
		text = string(r)
	}
	lines := splitNatural(text)
	var out []Property
	for i := 0; i < len(lines); i++ {
		start := i + 1
		l := strings.TrimLeft(lines[i], " \t\f")
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		logical, atEOF := "", false
		for {
			if odd := trailingBackslashes(l)%2 == 1; odd {
				logical += l[:len(l)-1]
				i++
				if i >= len(lines) {
					atEOF = true
					break
				}
				l = strings.TrimLeft(lines[i], " \t\f")
				if logical == "" && l != "" && (l[0] == '#' || l[0] == '!') {
					l = "" // still at the start of a logical line: a comment (Java 9+)
					break
				}
				continue
			}
			logical += l
			break
		}
		// Java quirk: a lone continuation followed by an empty line is nothing, but
		// a lone continuation on the last line is the empty key (unless that line
		// ends in CRLF, where Java reads ahead past the CR and finds nothing).
		if logical == "" && (!atEOF || strings.HasSuffix(text, "\r\n")) {
			continue
		}
		k, v := splitKeyValue(logical)
		key, err := unescape(k)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		val, err := unescape(v)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", start, err)
		}
		out = append(out, Property{Key: key, Value: val, Line: start})
	}
	return out, nil
}

// ReadPropertiesFile reads a .properties file into a map (later keys win).
func ReadPropertiesFile(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props, err := ParseProperties(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := make(map[string]string, len(props))
	for _, p := range props {
		m[p.Key] = p.Value
	}
	return m, nil
}

func splitNatural(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return out
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

func isPropSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

// splitKeyValue splits a logical line (leading whitespace already removed).
func splitKeyValue(l string) (key, value string) {
	keyLen, valueStart := 0, len(l)
	hasSep, backslash := false, false
	for keyLen < len(l) {
		c := l[keyLen]
		if (c == '=' || c == ':') && !backslash {
			valueStart, hasSep = keyLen+1, true
			break
		} else if isPropSpace(c) && !backslash {
			valueStart = keyLen + 1
			break
		}
		backslash = c == '\\' && !backslash
		keyLen++
	}
	for valueStart < len(l) {
		c := l[valueStart]
		if !isPropSpace(c) {
			if !hasSep && (c == '=' || c == ':') {
				hasSep = true
			} else {
				break
			}
		}
		valueStart++
	}
	if valueStart > len(l) {
		valueStart = len(l)
	}
	return l[:keyLen], l[valueStart:]
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf(`Malformed \uxxxx encoding.`)
			}
			var r rune
			for _, h := range s[i+1 : i+5] {
				switch {
				case h >= '0' && h <= '9':
					r = r<<4 | (h - '0')
				case h >= 'a' && h <= 'f':
					r = r<<4 | (h - 'a' + 10)
				case h >= 'A' && h <= 'F':
					r = r<<4 | (h - 'A' + 10)
				default:
					return "", fmt.Errorf(`Malformed \uxxxx encoding.`)
				}
			}
			b.WriteRune(r)
			i += 4
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// FormatProperties renders props as java.util.Properties.store(writer, comment)
// does on Java 18+: a "#comment" line, a "#<date>" line, then key=value lines
// sorted by key, escaped as store escapes them (writer form: non-ASCII is
// written as is).
func FormatProperties(props map[string]string, comment string, now time.Time) []byte {
	var b strings.Builder
	b.WriteString("#" + comment + "\n")
	b.WriteString("#" + now.Format("Mon Jan 02 15:04:05 MST 2006") + "\n")
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		b.WriteString(storeEscape(k, true))
		b.WriteByte('=')
		b.WriteString(storeEscape(props[k], false))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// storeEscape is Properties.saveConvert with escUnicode=false.
func storeEscape(s string, isKey bool) string {
	var b strings.Builder
	for i, r := range s {
		switch r {
		case ' ':
			if i == 0 || isKey {
				b.WriteByte('\\')
			}
			b.WriteByte(' ')
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case '=', ':', '#', '!', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// WritePropertiesFile writes props to path as Kafka's PropertiesUtils.writePropertiesFile:
// Properties.store with an empty comment into path+".tmp", fsync, rename over path,
// fsync the directory.
func WritePropertiesFile(path string, props map[string]string) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, strings.NewReader(string(FormatProperties(props, "", time.Now()))))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
