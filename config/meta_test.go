package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRandomUUID(t *testing.T) {
	seen := map[UUID]bool{}
	for i := 0; i < 5000; i++ {
		u := RandomUUID()
		s := u.String()
		if len(s) != 22 || strings.HasPrefix(s, "-") || strings.ContainsAny(s, "+/=") {
			t.Fatalf("bad uuid %q", s)
		}
		if u == ZeroUUID || u == OneUUID || seen[u] {
			t.Fatalf("reserved or duplicate %q", s)
		}
		seen[u] = true
		back, err := ParseUUID(s)
		if err != nil || back != u {
			t.Fatalf("round trip %q: %v", s, err)
		}
		if u[6]>>4 != 4 || u[8]>>6 != 2 {
			t.Fatalf("not a type-4 uuid: %x", u)
		}
	}
}

func TestParseUUID(t *testing.T) {
	u, err := ParseUUID("5L6g3nShT-eMCtK--X86sw")
	if err != nil || u.String() != "5L6g3nShT-eMCtK--X86sw" {
		t.Fatal(u, err)
	}
	if ZeroUUID.String() != "AAAAAAAAAAAAAAAAAAAAAA" || OneUUID.String() != "AAAAAAAAAAAAAAAAAAAAAQ" {
		t.Fatal(ZeroUUID, OneUUID)
	}
	for _, bad := range []string{"", "abc", "5L6g3nShT-eMCtK--X86s", "5L6g3nShT+eMCtK--X86sw", "5L6g3nShT-eMCtK--X86swAAAAAAAAAA"} {
		if _, err := ParseUUID(bad); !errors.Is(err, ErrInvalidUUID) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestMetaPropertiesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := MetaProperties{Version: 1, ClusterID: "5L6g3nShT-eMCtK--X86sw", NodeID: 7, DirectoryID: NewDirectoryID()}
	if err := WriteMetaProperties(dir, m); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	re := regexp.MustCompile(`^#\n#[A-Z][a-z]{2} [A-Z][a-z]{2} \d\d \d\d:\d\d:\d\d \S+ \d{4}\ncluster.id=5L6g3nShT-eMCtK--X86sw\ndirectory.id=[A-Za-z0-9_-]{22}\nnode.id=7\nversion=1\n$`)
	if !re.Match(data) {
		t.Fatalf("meta.properties:\n%s", data)
	}
	got, err := ReadMetaProperties(dir)
	if err != nil || got != m {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, MetaPropertiesFile+".tmp")); !os.IsNotExist(err) {
		t.Fatal("tmp file left")
	}
}

func TestReadMetaPropertiesKafkaFiles(t *testing.T) {
	cases := []struct {
		content string
		want    MetaProperties
		err     string
	}{
		// As written by Kafka on Java 17 (hash order).
		{"#\n#Sun Nov 29 12:59:17 UTC 2026\nnode.id=1\ndirectory.id=cQWr2yLWQDSwjv0vsWnEBw\nversion=1\ncluster.id=5L6g3nShT-eMCtK--X86sw\n",
			MetaProperties{Version: 1, ClusterID: "5L6g3nShT-eMCtK--X86sw", NodeID: 1, DirectoryID: mustUUID("cQWr2yLWQDSwjv0vsWnEBw")}, ""},
		{"broker.id=3\ncluster.id=abc\n", MetaProperties{Version: 0, ClusterID: "abc", NodeID: 3}, ""},
		{"version=0\n", MetaProperties{Version: 0, NodeID: -1}, ""},
		{"version=1\ncluster.id=x\n", MetaProperties{}, "Failed to find node.id"},
		{"version=1\nnode.id=1\n", MetaProperties{}, "cluster.id was not found."},
		{"version=2\n", MetaProperties{}, "Unknown meta.properties version number 2"},
		{"version=x\n", MetaProperties{}, "Invalid meta.properties version string 'x'"},
		{"version=1\nnode.id=a\ncluster.id=x\n", MetaProperties{}, "Unable to read node.id as a base-10 number."},
		{"version=1\nnode.id=1\ncluster.id=x\ndirectory.id=zz\n", MetaProperties{}, "Unable to read directory.id as a Uuid"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, MetaPropertiesFile), []byte(c.content), 0o644)
		got, err := ReadMetaProperties(dir)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: %v want %s", c.content, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: %+v %v", c.content, got, err)
		}
	}
	if _, err := ReadMetaProperties(t.TempDir()); !errors.Is(err, ErrNoMetaProperties) {
		t.Fatal(err)
	}
}

func mustUUID(s string) UUID {
	u, err := ParseUUID(s)
	if err != nil {
		panic(err)
	}
	return u
}

func TestVerifyMetaProperties(t *testing.T) {
	a := MetaProperties{Version: 1, ClusterID: "c1", NodeID: 1, DirectoryID: NewDirectoryID()}
	b := MetaProperties{Version: 1, ClusterID: "c1", NodeID: 1, DirectoryID: NewDirectoryID()}
	if err := VerifyMetaProperties(map[string]MetaProperties{"/a": a, "/b": b}, 1); err != nil {
		t.Fatal(err)
	}
	b2 := b
	b2.ClusterID = "c2"
	err := VerifyMetaProperties(map[string]MetaProperties{"/a": a, "/b": b2}, 1)
	if err == nil || err.Error() != "Invalid cluster.id in: /b/meta.properties. Expected c1, but read c2" {
		t.Fatal(err)
	}
	err = VerifyMetaProperties(map[string]MetaProperties{"/a": a}, 2)
	if err == nil || !strings.HasPrefix(err.Error(), "Stored node id 1 doesn't match previous node id 2 in /a/meta.properties.") {
		t.Fatal(err)
	}
	b3 := b
	b3.DirectoryID = a.DirectoryID
	if err := VerifyMetaProperties(map[string]MetaProperties{"/a": a, "/b": b3}, 1); err == nil || !strings.Contains(err.Error(), "Duplicate directory ID") {
		t.Fatal(err)
	}
	b4 := b
	b4.DirectoryID = UUID{15: 2}
	if err := VerifyMetaProperties(map[string]MetaProperties{"/b": b4}, 1); err == nil || !strings.Contains(err.Error(), "reserved directory ID") {
		t.Fatal(err)
	}
}
