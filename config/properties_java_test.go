package config

import (
	"encoding/base64"
	"os"
	"sort"
	"strings"
	"testing"
)

// TestParsePropertiesMatchesJava replays testdata/java-properties-load.txt: random
// inputs over an alphabet of separators, escapes, comments, continuations and line
// terminators, each with what java.util.Properties.load (JDK 17) made of it.
// Line format: base64(input) SP (base64(key):base64(value),)* sorted by key, or ERR.
func TestParsePropertiesMatchesJava(t *testing.T) {
	data, err := os.ReadFile("testdata/java-properties-load.txt")
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.StdEncoding.EncodeToString
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		in64, want, _ := strings.Cut(line, " ")
		in, err := base64.StdEncoding.DecodeString(in64)
		if err != nil {
			t.Fatal(err)
		}
		props, err := ParseProperties(in)
		got := "ERR"
		if err == nil {
			m := map[string]string{}
			for _, p := range props {
				m[p.Key] = p.Value
			}
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			got = ""
			for _, k := range keys {
				got += enc([]byte(k)) + ":" + enc([]byte(m[k])) + ","
			}
		}
		if got != want {
			t.Errorf("input %q\n got %s\nwant %s", in, got, want)
		}
	}
}
