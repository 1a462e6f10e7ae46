package main

import (
	"bytes"
	"go/format"
	"os"
	"path/filepath"
	"testing"
)

// The generated files in metadatacache are what the generator writes from
// records.schema now: run `go generate ./metadatacache` after editing either.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	dir := filepath.Join("..", "..")
	f, err := os.Open(filepath.Join(dir, "records.schema"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := parseSchema(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range generate(s, "records.schema") {
		want, err := format.Source(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not what records.schema generates: run go generate ./metadatacache", name)
		}
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"BrokerId": "BrokerID", "Id": "ID", "TopicId": "TopicID", "NextProducerId": "NextProducerID",
		"IncarnationId": "IncarnationID", "Isr": "Isr", "IsMigratingZkBroker": "IsMigratingZkBroker",
		"Identity": "Identity", "ReplicaIds": "ReplicaIDs", "Iterations": "Iterations",
	} {
		if got := goName(in); got != want {
			t.Errorf("goName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSchemaErrors(t *testing.T) {
	for name, src := range map[string]string{
		"no file":         "record ARecord 1 0\nend\n",
		"open versions":   "file a_gen.go\nrecord ARecord 1 0+\nend\n",
		"unknown type":    "file a_gen.go\nrecord ARecord 1 0\n  X int7 0+\nend\n",
		"duplicate tag":   "file a_gen.go\nrecord ARecord 1 0\n  X int8 0+ tag=0\n  Y int8 0+ tag=0\nend\n",
		"duplicate key":   "file a_gen.go\nrecord ARecord 1 0\nend\nrecord BRecord 1 0\nend\n",
		"null default":    "file a_gen.go\nrecord ARecord 1 0\n  X []int32 0+ default=null\nend\n",
		"nullable int":    "file a_gen.go\nrecord ARecord 1 0\n  X int32 0+ null=0+\nend\n",
		"missing end":     "file a_gen.go\nrecord ARecord 1 0\n",
		"unknown struct":  "file a_gen.go\nrecord ARecord 1 0\n  X []Nope 0+\nend\n",
		"bad attribute":   "file a_gen.go\nrecord ARecord 1 0\n  X int8 0+ size=3\nend\n",
		"not a Record":    "file a_gen.go\nrecord Alpha 1 0\nend\n",
		"reserved name":   "file a_gen.go\nrecord ARecord 1 0\n  UnknownTags int8 0+\nend\n",
		"string default":  "file a_gen.go\nrecord ARecord 1 0\n  X string 0+ default=x\nend\n",
		"bad file suffix": "file a.go\n",
	} {
		if _, err := parseSchema(bytes.NewBufferString(src)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
