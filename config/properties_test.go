package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseProperties(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"equals", "a=b", map[string]string{"a": "b"}},
		{"colon", "a:b", map[string]string{"a": "b"}},
		{"space", "a b", map[string]string{"a": "b"}},
		{"spaces around sep", "  a  =  b  ", map[string]string{"a": "b  "}},
		{"space then sep", "a : b", map[string]string{"a": "b"}},
		{"only first sep", "a==b", map[string]string{"a": "=b"}},
		{"value with sep chars", "a=b=c:d e", map[string]string{"a": "b=c:d e"}},
		{"empty value", "a=", map[string]string{"a": ""}},
		{"key only", "a", map[string]string{"a": ""}},
		{"hash comment", "# c\na=1", map[string]string{"a": "1"}},
		{"bang comment", "  ! c\na=1", map[string]string{"a": "1"}},
		{"comment not continued", "# c \\\na=1", map[string]string{"a": "1"}},
		{"hash in value", "a=1 # not a comment", map[string]string{"a": "1 # not a comment"}},
		{"blank lines", "\n\n  \t\na=1\n\n", map[string]string{"a": "1"}},
		{"continuation", "a=1,\\\n    2,\\\n\t3", map[string]string{"a": "1,2,3"}},
		{"even backslashes", "a=x\\\\\nb=y", map[string]string{"a": `x\`, "b": "y"}},
		{"continuation at eof", "a=1\\", map[string]string{"a": "1"}},
		{"escaped sep in key", `a\=b=c`, map[string]string{"a=b": "c"}},
		{"escaped space in key", `a\ b c`, map[string]string{"a b": "c"}},
		{"escapes", `a=\t\n\r\f\x\\`, map[string]string{"a": "\t\n\r\fx\\"}},
		{"unicode", `a=\u00e9\u0041`, map[string]string{"a": "éA"}},
		{"crlf", "a=1\r\nb=2\rc=3", map[string]string{"a": "1", "b": "2", "c": "3"}},
		{"last wins", "a=1\na=2", map[string]string{"a": "2"}},
		{"utf8", "a=日本", map[string]string{"a": "日本"}},
		{"windows path", `log.dirs=C:\\kafka\\data`, map[string]string{"log.dirs": `C:\kafka\data`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			props, err := ParseProperties([]byte(c.in))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, p := range props {
				got[p.Key] = p.Value
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %q want %q", got, c.want)
			}
		})
	}
}

func TestParsePropertiesLineNumbers(t *testing.T) {
	props, err := ParseProperties([]byte("# c\n\na=1\\\n 2\nb=3\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 2 || props[0].Line != 3 || props[1].Line != 5 {
		t.Fatalf("%+v", props)
	}
}

func TestParsePropertiesMalformedUnicode(t *testing.T) {
	for _, in := range []string{`a=\u12`, `a=\u12G4`} {
		if _, err := ParseProperties([]byte(in)); err == nil || !strings.Contains(err.Error(), `Malformed \uxxxx encoding.`) {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func TestParsePropertiesLatin1(t *testing.T) {
	props, err := ParseProperties([]byte{'a', '=', 0xe9})
	if err != nil || props[0].Value != "é" {
		t.Fatalf("%v %+v", err, props)
	}
}

func TestFormatPropertiesRoundTrip(t *testing.T) {
	in := map[string]string{"version": "1", "k ey": " lead", "x": "a:b=c#d!e\tf\\g", "cluster.id": "5L6g3nShT-eMCtK--X86sw"}
	now := time.Date(2026, 11, 29, 12, 59, 17, 0, time.UTC)
	out := FormatProperties(in, "", now)
	want := "#\n#Sun Nov 29 12:59:17 UTC 2026\n" +
		"cluster.id=5L6g3nShT-eMCtK--X86sw\n" +
		"k\\ ey=\\ lead\n" +
		"version=1\n" +
		"x=a\\:b\\=c\\#d\\!e\\tf\\\\g\n"
	if string(out) != want {
		t.Fatalf("got\n%s\nwant\n%s", out, want)
	}
	props, err := ParseProperties(out)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range props {
		got[p.Key] = p.Value
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("round trip %q", got)
	}
}

func TestWritePropertiesFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.properties")
	if err := WritePropertiesFile(path, map[string]string{"a": "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("tmp left behind: %v", err)
	}
	m, err := ReadPropertiesFile(path)
	if err != nil || m["a"] != "1" {
		t.Fatal(m, err)
	}
}
