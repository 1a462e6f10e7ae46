package config

import (
	"testing"
	"time"
)

func propsMap(ps []Property) map[string]string {
	m := make(map[string]string, len(ps))
	for _, p := range ps {
		m[p.Key] = p.Value
	}
	return m
}

// FuzzParseMetaProperties: a meta.properties file (read from every log dir at
// start) never panics the .properties parser or ParseMetaProperties; what parses
// re-formats (FormatProperties, as WriteMetaProperties writes it) to the same keys
// and, through MetaProperties.Properties, to the same MetaProperties.
func FuzzParseMetaProperties(f *testing.F) {
	now := time.Date(2026, 11, 29, 12, 56, 41, 0, time.UTC)
	dir, _ := ParseUUID("Lq3Y0fO6Q3mD1x0e3aQk5w")
	for _, m := range []MetaProperties{
		{Version: 1, ClusterID: "5L6g3nShT-eMCtK--X86sw", NodeID: 1, DirectoryID: dir},
		{Version: 1, ClusterID: "c", NodeID: 0},
		{Version: 0, ClusterID: "c", NodeID: 3},
		{Version: 0, NodeID: -1},
	} {
		f.Add(FormatProperties(m.Properties(), "", now))
	}
	f.Add([]byte("# c\n! c\nkey = va\\\n  lue\\u0041\\\n\nk2:v\r\nk3 v\\"))
	f.Add([]byte("version=1\nnode.id=99999999999\ncluster.id=x\n"))
	f.Add([]byte("version=1\nnode.id=1\ncluster.id=x\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAA==\n"))
	f.Add([]byte("\\u12"))
	f.Add([]byte{0xff, '=', 0xfe})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := ParseProperties(b)
		if err != nil {
			return
		}
		props := propsMap(ps)
		ps2, err := ParseProperties(FormatProperties(props, "", now))
		if err != nil {
			t.Fatalf("re-formatted properties do not parse: %v", err)
		}
		props2 := propsMap(ps2)
		if len(props2) != len(props) {
			t.Fatalf("round trip:\n%q\n%q", props, props2)
		}
		for k, v := range props {
			if v2, ok := props2[k]; !ok || v2 != v {
				t.Fatalf("round trip of %q: %q != %q", k, v, v2)
			}
		}
		m, err := ParseMetaProperties(props)
		if err != nil {
			return
		}
		// Properties drops what it cannot write back: an empty cluster.id and, in
		// v0, a negative broker.id (both read as absent).
		if m.ClusterID == "" && m.Version == 1 {
			return
		}
		if m.Version == 0 && m.NodeID < 0 {
			m.NodeID = -1
		}
		m2, err := ParseMetaProperties(m.Properties())
		if err != nil || m2 != m {
			t.Fatalf("round trip %+v: %+v %v", m, m2, err)
		}
	})
}
