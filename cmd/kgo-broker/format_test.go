package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/controller"
	"github.com/kgo-broker/kgo-broker/raft"
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
		{nil, "4.4-IV2", []controller.Feature{feat("metadata.version", 33), feat("eligible.leader.replicas.version", 1), feat("group.version", 1), feat("share.version", 2), feat("streams.version", 1), feat("transaction.version", 2)}},
		{[]string{"--feature", "eligible.leader.replicas.version=0"}, "4.4-IV2", []controller.Feature{feat("metadata.version", 33), feat("group.version", 1), feat("share.version", 2), feat("streams.version", 1), feat("transaction.version", 2)}},
		{[]string{"-r", "4.0-IV1", "-f", "eligible.leader.replicas.version=1"}, "4.0-IV1",
			[]controller.Feature{feat("metadata.version", 23), feat("eligible.leader.replicas.version", 1), feat("group.version", 1)}},
		{[]string{"--release-version", "3.9"}, "3.9-IV0", []controller.Feature{feat("metadata.version", 21)}},
		{[]string{"-r", "4.0", "-f", "transaction.version=1"}, "4.0-IV3",
			[]controller.Feature{feat("metadata.version", 25), feat("group.version", 1), feat("transaction.version", 1)}},
		{[]string{"--feature", "metadata.version=20", "--feature=group.version=1"}, "3.8-IV0",
			[]controller.Feature{feat("metadata.version", 20), feat("group.version", 1)}},
		{[]string{"--feature", "group.version=0", "--feature", "group.version=1", "--feature", "share.version=0"}, "4.4-IV2",
			[]controller.Feature{feat("metadata.version", 33), feat("eligible.leader.replicas.version", 1), feat("group.version", 1), feat("streams.version", 1), feat("transaction.version", 2)}},
		{[]string{"--release-version", "4.3-IV0", "--feature", "transaction.version=0", "--feature", "group.version=0"}, "4.3-IV0",
			[]controller.Feature{feat("metadata.version", 30), feat("eligible.leader.replicas.version", 1), feat("share.version", 1), feat("streams.version", 1)}},
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
		{[]string{"--feature", "streams.version=2"}, "No feature:streams.version with feature level 2"},
		{[]string{"--release-version", "3.9", "--feature", "eligible.leader.replicas.version=1"}, "eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23"},
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

const dynamicQuorum = "controller.quorum.voters=\ncontroller.quorum.bootstrap.servers=localhost:9093\n"

// zeroCheckpointControl reads the kraft.version and voters of the zero
// checkpoint in a metadata log dir.
func zeroCheckpointControl(t *testing.T, meta string) raft.SnapshotControl {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(meta, "__cluster_metadata-0", controller.BootstrapSnapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	s, err := raft.DecodeSnapshot(raft.OffsetAndEpoch{}, b)
	if err != nil {
		t.Fatal(err)
	}
	return s.Control
}

func metaDirID(t *testing.T, dir string) [16]byte {
	t.Helper()
	m, err := config.ReadMetaProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m.DirectoryID
}

// KIP-853 formats (Formatter with initial controllers): --standalone makes
// this controller the only voter, --initial-controllers names the voters
// with their directory ids (this node's metadata log dir gets its one),
// --no-initial-controllers writes kraft.version 1 without voters. The zero
// checkpoint holds KRaftVersionRecord and VotersRecord in its header batch.
func TestFormatDynamicQuorum(t *testing.T) {
	const cid = "5L6g3nShT-eMCtK--X86sw"
	t.Run("standalone", func(t *testing.T) {
		dir := t.TempDir()
		props := serverProps(t, dir, dynamicQuorum+"advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://ctl1:9093\n")
		code, out, errOut := runCmd("format", "-t", cid, "-c", props, "--standalone")
		if code != 0 {
			t.Fatal(errOut)
		}
		meta := filepath.Join(dir, "meta")
		if !strings.Contains(out, "Formatting dynamic metadata voter directory "+meta+" with metadata.version 4.4-IV2.") ||
			!strings.Contains(out, "Formatting data directory "+filepath.Join(dir, "d1")) {
			t.Fatalf("output\n%s", out)
		}
		ctl := zeroCheckpointControl(t, meta)
		if ctl.KRaftVersion != 1 || ctl.Voters == nil || ctl.Voters.Len() != 1 {
			t.Fatalf("control %+v", ctl)
		}
		v := ctl.Voters.Voters()[0]
		if v.Key.ID != 1 || v.Key.DirectoryID != metaDirID(t, meta) || len(v.Endpoints) != 1 ||
			v.Endpoints[0] != (raft.Endpoint{Name: "CONTROLLER", Host: "ctl1", Port: 9093}) || v.KRaftMin != 0 || v.KRaftMax != 1 {
			t.Fatalf("voter %+v", v)
		}
		if got := bootstrapIn(t, meta); !reflect.DeepEqual(got, controller.DefaultBootstrapFeatures()) {
			t.Fatalf("features %v", got)
		}
	})
	t.Run("initial-controllers", func(t *testing.T) {
		dir := t.TempDir()
		props := serverProps(t, dir, dynamicQuorum)
		d1, d2 := "JEXY6aqzQY-32P5TStzaFg", "MvDxzVmcRsaTz33bUuRU6A"
		code, out, errOut := runCmd("format", "-t", cid, "-c", props, "--initial-controllers", "1@h1:9093:"+d1+",2@[::1]:9094:"+d2)
		if code != 0 {
			t.Fatal(errOut)
		}
		meta := filepath.Join(dir, "meta")
		if !strings.Contains(out, "Formatting dynamic metadata voter directory "+meta) {
			t.Fatalf("output\n%s", out)
		}
		want, _ := raft.ParseDirectoryID(d1)
		if got := metaDirID(t, meta); got != want {
			t.Fatalf("directory.id %x, want %s", got, d1)
		}
		ctl := zeroCheckpointControl(t, meta)
		if ctl.KRaftVersion != 1 || ctl.Voters == nil || ctl.Voters.Len() != 2 {
			t.Fatalf("control %+v", ctl)
		}
		if v, _ := ctl.Voters.Get(2); v.Endpoints[0] != (raft.Endpoint{Name: "CONTROLLER", Host: "::1", Port: 9094}) {
			t.Fatalf("voter 2 %+v", v)
		}
	})
	t.Run("no-initial-controllers", func(t *testing.T) {
		dir := t.TempDir()
		props := serverProps(t, dir, dynamicQuorum)
		code, out, errOut := runCmd("format", "-t", cid, "-c", props, "--no-initial-controllers")
		if code != 0 {
			t.Fatal(errOut)
		}
		meta := filepath.Join(dir, "meta")
		if !strings.Contains(out, "Formatting metadata directory "+meta) {
			t.Fatalf("output\n%s", out)
		}
		if ctl := zeroCheckpointControl(t, meta); ctl.KRaftVersion != 1 || ctl.Voters != nil {
			t.Fatalf("control %+v", ctl)
		}
	})
	t.Run("errors", func(t *testing.T) {
		static := serverProps(t, t.TempDir(), "")
		dyn := serverProps(t, t.TempDir(), dynamicQuorum)
		broker := serverProps(t, t.TempDir(), dynamicQuorum+"process.roles=broker\nnode.id=2\nlisteners=PLAINTEXT://:9092\n")
		for _, c := range []struct {
			props string
			args  []string
			want  string
		}{
			{static, []string{"--standalone"}, "You cannot specify controller.quorum.voters and format the node with --initial-controllers or --standalone. If you want to use dynamic quorum, please remove controller.quorum.voters and specify controller.quorum.bootstrap.servers instead."},
			{static, []string{"--initial-controllers", "1@h:1:JEXY6aqzQY-32P5TStzaFg"}, "You cannot specify controller.quorum.voters"},
			{dyn, nil, "Because controller.quorum.voters is not set on this controller, you must specify one of the following: --standalone, --initial-controllers, or --no-initial-controllers."},
			{broker, []string{"--standalone"}, "You can only use --standalone on a controller."},
			{dyn, []string{"--standalone", "--no-initial-controllers"}, "mutually exclusive"},
			{dyn, []string{"--standalone", "--feature", "kraft.version=0"}, "Cannot set kraft.version to 0 if controller.quorum.voters is empty"},
			{dyn, []string{"--initial-controllers", "h:1:x"}, "No @ found in dynamic voter string."},
			{dyn, []string{"--initial-controllers", "@h:1:x"}, "Invalid @ at beginning of dynamic voter string."},
			{dyn, []string{"--initial-controllers", "a@h:1:x"}, "Failed to parse node id in dynamic voter string."},
			{dyn, []string{"--initial-controllers", "-1@h:1:x"}, "Invalid negative node id -1 in dynamic voter string."},
			{dyn, []string{"--initial-controllers", "1@"}, "No hostname found after node id."},
			{dyn, []string{"--initial-controllers", "1@[::1:9093:x"}, "Hostname began with left bracket, but no right bracket was found."},
			{dyn, []string{"--initial-controllers", "1@h"}, "No colon following hostname could be found."},
			{dyn, []string{"--initial-controllers", "1@h:9093"}, "No colon following port could be found."},
			{dyn, []string{"--initial-controllers", "1@h:p:x"}, "Failed to parse port in dynamic voter string."},
			{dyn, []string{"--initial-controllers", "1@h:70000:x"}, "Invalid port 70000 in dynamic voter string."},
			{dyn, []string{"--initial-controllers", "1@h:1:notauuid"}, "Failed to parse directory ID in dynamic voter string."},
			{dyn, []string{"--initial-controllers", "1@h:1:JEXY6aqzQY-32P5TStzaFg,1@h:2:MvDxzVmcRsaTz33bUuRU6A"}, "Node id 1 was specified more than once."},
			{dyn, []string{"--initial-controllers", ","}, "No voters given."},
		} {
			code, _, errOut := runCmd(append([]string{"format", "-t", cid, "-c", c.props}, c.args...)...)
			if code == 0 || !strings.Contains(errOut, c.want) {
				t.Errorf("%v: %d %q, want %q", c.args, code, errOut, c.want)
			}
		}
	})
}
