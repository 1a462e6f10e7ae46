package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/controller"
)

func feat(name string, level int16) controller.Feature {
	return controller.Feature{Name: name, Level: level}
}

// bootstrapIn returns the features of the zero checkpoint in a metadata log dir.
func bootstrapIn(t *testing.T, dir string) []controller.Feature {
	t.Helper()
	recs, err := controller.ReadBootstrap(dir)
	if err != nil {
		t.Fatal(err)
	}
	if recs == nil {
		return nil
	}
	fs, err := controller.BootstrapFeaturesOf(recs)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// --release-version and --feature choose what the zero checkpoint of the
// metadata log dir holds, as kafka-storage.sh format does.
func TestFormatReleaseVersionAndFeatures(t *testing.T) {
	for _, c := range []struct {
		args []string
		mv   string
		want []controller.Feature
	}{
		{nil, "4.4-IV2", []controller.Feature{feat("metadata.version", 33), feat("group.version", 1), feat("transaction.version", 2)}},
		{[]string{"--release-version", "3.9"}, "3.9-IV0", []controller.Feature{feat("metadata.version", 21)}},
		{[]string{"-r", "4.0", "-f", "transaction.version=1"}, "4.0-IV3",
			[]controller.Feature{feat("metadata.version", 25), feat("group.version", 1), feat("transaction.version", 1)}},
		{[]string{"--feature", "metadata.version=20", "--feature=group.version=1"}, "3.8-IV0",
			[]controller.Feature{feat("metadata.version", 20), feat("group.version", 1)}},
		{[]string{"--feature", "group.version=0", "--feature", "group.version=1", "--feature", "share.version=0"}, "4.4-IV2",
			[]controller.Feature{feat("metadata.version", 33), feat("group.version", 1), feat("transaction.version", 2)}},
		{[]string{"--release-version", "4.3-IV0", "--feature", "transaction.version=0", "--feature", "group.version=0"}, "4.3-IV0",
			[]controller.Feature{feat("metadata.version", 30)}},
	} {
		dir := t.TempDir()
		props := serverProps(t, dir, "")
		code, out, errOut := runCmd(append([]string{"format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props}, c.args...)...)
		if code != 0 {
			t.Fatalf("%v: %d %s", c.args, code, errOut)
		}
		var pairs []any
		for _, f := range c.want[1:] {
			pairs = append(pairs, f.Name, f.Level)
		}
		if !strings.HasPrefix(out, bootstrapLine(c.want[0].Level, pairs...)) ||
			!strings.Contains(out, "Formatting metadata directory "+filepath.Join(dir, "meta")+" with metadata.version "+c.mv+".") {
			t.Errorf("%v: output\n%s", c.args, out)
		}
		if got := bootstrapIn(t, filepath.Join(dir, "meta")); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%v: zero checkpoint %v, want %v", c.args, got, c.want)
		}
		// Only the metadata log dir holds it.
		if _, err := os.Stat(filepath.Join(dir, "d1", "__cluster_metadata-0")); err == nil {
			t.Errorf("%v: a data dir got a metadata partition", c.args)
		}
	}
}

// A node without the controller role writes no bootstrap metadata
// (StorageTool writes the zero checkpoint only for controllers).
func TestFormatBrokerOnlyWritesNoBootstrap(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "process.roles=broker\nnode.id=2\nlisteners=PLAINTEXT://:9092\n")
	code, _, errOut := runCmd("format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props)
	if code != 0 {
		t.Fatal(errOut)
	}
	if fs := bootstrapIn(t, filepath.Join(dir, "meta")); fs != nil {
		t.Fatalf("broker-only node wrote %v", fs)
	}
}

func TestFormatFeatureErrors(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--feature", "group.version"}, "Can't parse feature=level string group.version: equals sign not found."},
		{[]string{"--feature", "group.version=x"}, "Can't parse feature=level string group.version=x: unable to parse x as a short."},
		{[]string{"--feature"}, "argument --feature: expected one argument"},
		{[]string{"--feature", "nope=1"}, "Unsupported feature: nope. Supported features are: eligible.leader.replicas.version, group.version, kraft.version, share.version, streams.version, transaction.version"},
		{[]string{"--feature", "share.version=5"}, "No feature:share.version with feature level 5"},
		{[]string{"--feature", "share.version=1"}, "share.version level 1 is not supported by kgo-broker (it supports levels 0 to 0): share groups (KIP-932) are not implemented"},
		{[]string{"--feature", "streams.version=1"}, "streams.version level 1 is not supported by kgo-broker"},
		{[]string{"--feature", "eligible.leader.replicas.version=1"}, "eligible.leader.replicas.version level 1 is not supported by kgo-broker"},
		{[]string{"--feature", "kraft.version=1"}, "Cannot set kraft.version to 1 unless controller.quorum.voters is empty"},
		{[]string{"--release-version", "4.0", "--feature", "metadata.version=25"}, "Use --release-version instead of --feature metadata.version=X to avoid ambiguity."},
		{[]string{"--feature", "metadata.version=6"}, "No MetadataVersion with feature level 6. Valid feature levels are from 7 to 33."},
		{[]string{"--release-version", "4.5-IV0"}, "Unknown metadata.version '4.5-IV0'. Supported metadata.version are: 3.3-IV3, 3.4-IV0, 3.5-IV0, 3.5-IV1, 3.5-IV2, 3.6-IV0, 3.6-IV1, 3.6-IV2, 3.7-IV0, 3.7-IV1, 3.7-IV2, 3.7-IV3, 3.7-IV4, 3.8-IV0, 3.9-IV0, 4.0-IV0, 4.0-IV1, 4.0-IV2, 4.0-IV3, 4.1-IV0, 4.1-IV1, 4.2-IV0, 4.2-IV1, 4.3-IV0, 4.4-IV0, 4.4-IV1, 4.4-IV2\n"},
	} {
		code, out, errOut := runCmd(append([]string{"format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props}, c.args...)...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: %d %q %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "meta")); err == nil {
		t.Fatal("a refused format wrote a directory")
	}
}

// The first start formats empty dirs with the default bootstrap, zero
// checkpoint included, as a format without options would.
func TestFirstStartWritesBootstrap(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	fn := &fakeNode{}
	withFakeNode(t, fn)
	if code := run([]string{props}, []string{"CLUSTER_ID=5L6g3nShT-eMCtK--X86sw"}, &strings.Builder{}, &strings.Builder{}); code != 0 {
		t.Fatal(code)
	}
	if got := bootstrapIn(t, filepath.Join(dir, "meta")); !reflect.DeepEqual(got, controller.DefaultBootstrapFeatures()) {
		t.Fatalf("%v", got)
	}
}
