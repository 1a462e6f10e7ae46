package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kgo-broker/kgo-broker/config"
)

// unreadable makes dir/meta.properties a directory: reading it fails with an
// I/O error (EISDIR) even as root, where chmod would not.
func unreadable(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, config.MetaPropertiesFile)
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A log dir whose meta.properties cannot be read starts offline, as in Kafka
// (MetaPropertiesEnsemble.Loader's errorLogDirs become LogManager's
// initialOfflineDirs): it is never formatted, has no directory id, and the node
// is started with it in OfflineLogDirs. A meta.properties that does not parse
// as one (MetaProperties.Builder throws) is an error dir in Kafka too.
func TestServeUnreadableMetaPropertiesStartsOffline(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	d1, d2, meta := filepath.Join(dir, "d1"), filepath.Join(dir, "d2"), filepath.Join(dir, "meta")
	unreadable(t, d2)
	for _, start := range []string{"first start", "second start"} {
		fn := &fakeNode{}
		got := withFakeNode(t, fn)
		var out, errb bytes.Buffer
		code := run([]string{props, "--log-format=json"}, []string{"CLUSTER_ID=5L6g3nShT-eMCtK--X86sw"}, &out, &errb)
		if code != 0 || !fn.started {
			t.Fatalf("%s: %d\n%s", start, code, errb.String())
		}
		if !slices.Equal(got.OfflineLogDirs, []string{d2}) {
			t.Fatalf("%s: offline dirs %v", start, got.OfflineLogDirs)
		}
		if _, ok := got.DirectoryIDs[d2]; ok || len(got.DirectoryIDs) != 2 {
			t.Fatalf("%s: directory ids %v", start, got.DirectoryIDs)
		}
		for _, d := range []string{d1, meta} {
			if m, err := config.ReadMetaProperties(d); err != nil || m.DirectoryID != got.DirectoryIDs[d] {
				t.Fatalf("%s: %s: %v", start, d, err)
			}
		}
		if fi, err := os.Stat(filepath.Join(d2, config.MetaPropertiesFile)); err != nil || !fi.IsDir() {
			t.Fatalf("%s: the unreadable meta.properties was overwritten: %v", start, err)
		}
		if w := `"msg":"Error while reading meta.properties file; the log directory is offline","file":"` + filepath.Join(d2, "meta.properties"); !strings.Contains(errb.String(), w) {
			t.Fatalf("%s: logs lack %s:\n%s", start, w, errb.String())
		}
	}

	// malformed content: offline too, and left as it is
	bad := []byte("version=7\nnode.id=1\ncluster.id=5L6g3nShT-eMCtK--X86sw\n")
	os.RemoveAll(filepath.Join(d2, config.MetaPropertiesFile))
	if err := os.WriteFile(filepath.Join(d2, config.MetaPropertiesFile), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	got := withFakeNode(t, &fakeNode{})
	var out, errb bytes.Buffer
	if code := run([]string{props}, nil, &out, &errb); code != 0 || !slices.Equal(got.OfflineLogDirs, []string{d2}) {
		t.Fatalf("%d %v\n%s", code, got.OfflineLogDirs, errb.String())
	}
	if data, _ := os.ReadFile(filepath.Join(d2, config.MetaPropertiesFile)); !bytes.Equal(data, bad) {
		t.Fatalf("malformed meta.properties rewritten: %q", data)
	}
	if !strings.Contains(errb.String(), "Unknown meta.properties version number 7") {
		t.Fatalf("logs lack the cause:\n%s", errb.String())
	}

	// what is invalid across dirs stays fatal (MetaPropertiesEnsemble.verify)
	errb.Reset()
	code := run([]string{props, "--override", "node.id=2", "--override", "controller.quorum.voters=2@localhost:9093"}, nil, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "Stored node id 1 doesn't match previous node id 2") {
		t.Fatalf("%d %s", code, errb.String())
	}
}

// The metadata log dir unreadable, or every dir unreadable, stops the startup
// (MetaPropertiesEnsemble.verify), before anything is formatted.
func TestServeUnreadableMetadataLogDir(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	d1, d2, meta := filepath.Join(dir, "d1"), filepath.Join(dir, "d2"), filepath.Join(dir, "meta")
	unreadable(t, meta)
	fn := &fakeNode{}
	withFakeNode(t, fn)
	var out, errb bytes.Buffer
	code := run([]string{props}, nil, &out, &errb)
	if code != 1 || fn.started || !strings.Contains(errb.String(), "Encountered I/O error in metadata log directory "+meta+". Cannot continue.") {
		t.Fatalf("%d %v\n%s", code, fn.started, errb.String())
	}
	for _, d := range []string{d1, d2} {
		if _, err := os.Stat(filepath.Join(d, config.MetaPropertiesFile)); !os.IsNotExist(err) {
			t.Fatalf("%s formatted before failing: %v", d, err)
		}
	}

	unreadable(t, d1)
	unreadable(t, d2)
	errb.Reset()
	code = run([]string{props}, nil, &out, &errb)
	if code != 1 || fn.started || !strings.Contains(errb.String(), "No readable meta.properties files found.") {
		t.Fatalf("%d %v\n%s", code, fn.started, errb.String())
	}
}

// kafka-storage.sh format skips an unreadable dir (Formatter.doFormat: "I/O
// error trying to read log directory ... Ignoring...") and fails only when no
// dir is left.
func TestFormatUnreadableDir(t *testing.T) {
	dir := t.TempDir()
	props := serverProps(t, dir, "")
	d1, d2, meta := filepath.Join(dir, "d1"), filepath.Join(dir, "d2"), filepath.Join(dir, "meta")
	unreadable(t, d2)
	code, out, errOut := runCmd("format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props)
	want := "I/O error trying to read log directory " + d2 + ". Ignoring...\n" +
		bootstrapLine(33, "eligible.leader.replicas.version", 1, "group.version", 1, "share.version", 2, "streams.version", 1, "transaction.version", 2) +
		"Formatting data directory " + d1 + " with metadata.version 4.4-IV2.\n" +
		"Formatting metadata directory " + meta + " with metadata.version 4.4-IV2.\n"
	if code != 0 || out != want {
		t.Fatalf("%d %s\ngot\n%s\nwant\n%s", code, errOut, out, want)
	}
	if fi, err := os.Stat(filepath.Join(d2, config.MetaPropertiesFile)); err != nil || !fi.IsDir() {
		t.Fatalf("the unreadable meta.properties was overwritten: %v", err)
	}
	code, out, _ = runCmd("format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props, "-g")
	if code != 0 || out != "I/O error trying to read log directory "+d2+". Ignoring...\nAll of the log directories are already formatted.\n" {
		t.Fatalf("%d %q", code, out)
	}
	for _, d := range []string{d1, meta} {
		unreadable(t, d)
	}
	code, _, errOut = runCmd("format", "-t", "5L6g3nShT-eMCtK--X86sw", "-c", props)
	if code != 1 || !strings.HasSuffix(errOut, "No available log directories to format.\n") {
		t.Fatalf("%d %q", code, errOut)
	}
}
