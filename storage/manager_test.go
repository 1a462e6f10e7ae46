package storage

import (
	"strings"
	"testing"
	"time"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func TestManagerLifecycle(t *testing.T) {
	fs := vfs.NewMem()
	clk := newClock()
	opts := ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: clk.Now, BrokerEpoch: 7}
	m, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	if m.HadCleanShutdown() {
		t.Fatal("fresh dirs have no marker")
	}
	id := [16]byte{1, 2, 3}
	for p := int32(0); p < 4; p++ {
		l, err := m.GetOrCreateLog(TopicPartition{"orders", p}, id, DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, batch(clk.Ms(), int(p)+1), 0)
	}
	// a metadata dir and a stray dir are not the Manager's
	fs.MkdirAll("/d1/__cluster_metadata-0", 0o755)
	fs.MkdirAll("/d1/x-0.abc-stray", 0o755)
	if err := m.DeleteLog(TopicPartition{"orders", 3}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	if err := m.Maintain(); err != nil {
		t.Fatal(err)
	}
	rp, _ := vfs.ReadFile(fs, "/d1/"+RecoveryPointCheckpointFile)
	if !strings.HasPrefix(string(rp), "0\n") {
		t.Fatalf("checkpoint %q", rp)
	}
	m.SetBrokerEpoch(9)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	marker, err := vfs.ReadFile(fs, "/d1/"+CleanShutdownFile)
	if err != nil || string(marker) != `{"broker_epoch":"9","version":"0"}` {
		t.Fatalf("marker %q %v", marker, err)
	}
	all := map[string]bool{}
	for _, d := range []string{"/d1", "/d2"} {
		ents, _ := fs.ReadDir(d)
		for _, e := range ents {
			all[e.Name()] = true
		}
		data, _ := vfs.ReadFile(fs, d+"/"+RecoveryPointCheckpointFile)
		t.Logf("%s: %q", d, data)
	}
	for k := range all {
		if strings.HasSuffix(k, "-delete") {
			t.Fatalf("delete dir left: %s", k)
		}
	}

	m2, err := OpenManager(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if !m2.HadCleanShutdown() || m2.PreviousBrokerEpoch() != 9 {
		t.Fatalf("clean %v epoch %d", m2.HadCleanShutdown(), m2.PreviousBrokerEpoch())
	}
	if _, err := fs.Stat("/d1/" + CleanShutdownFile); err == nil {
		t.Fatal("marker must be removed at startup")
	}
	logs := m2.Logs()
	if len(logs) != 3 {
		t.Fatalf("%d logs after reopen", len(logs))
	}
	for tp, l := range logs {
		if l.LogEndOffset() != int64(tp.Partition)+1 {
			t.Fatalf("%s leo %d", tp, l.LogEndOffset())
		}
		if l.TopicID() != id {
			t.Fatalf("%s topic id lost", tp)
		}
	}
	if _, ok := m2.Log(TopicPartition{"__cluster_metadata", 0}); ok {
		t.Fatal("metadata log must not be loaded")
	}
}

func TestConfigFromMap(t *testing.T) {
	c, err := ConfigFromMap(map[string]string{"segment.bytes": "1048576", "message.timestamp.type": "LogAppendTime",
		"cleanup.policy": "compact,delete", "flush.messages": "1", "retention.ms": "-1"})
	if err != nil {
		t.Fatal(err)
	}
	if c.SegmentBytes != 1<<20 || c.MessageTimestampType != TimestampLogAppendTime || !c.Compact() || !c.Delete() ||
		c.FlushMessages != 1 || c.RetentionMs != -1 || c.IndexIntervalBytes != 4096 {
		t.Fatalf("%+v", c)
	}
	if _, err := ConfigFromMap(map[string]string{"segment.bytes": "abc"}); err == nil || !strings.Contains(err.Error(), "segment.bytes") {
		t.Fatalf("bad value: %v", err)
	}
	if _, err := ConfigFromMap(map[string]string{"cleanup.policy": "forever"}); err == nil {
		t.Fatal("bad policy accepted")
	}
}

func TestParseCleanShutdown(t *testing.T) {
	for in, want := range map[string]int64{
		`{"broker_epoch":"12","version":"0"}`: 12,
		`{"version":0,"brokerEpoch":7}`:       7,
		`{"version":"0"}`:                     -1,
	} {
		if got, ok := parseCleanShutdown([]byte(in)); !ok || got != want {
			t.Errorf("%s: %d %v", in, got, ok)
		}
	}
	if _, ok := parseCleanShutdown([]byte("garbage")); ok {
		t.Error("garbage parsed")
	}
}

// WithValid applies the good keys and skips (and reports) the bad one.
func TestConfigWithValid(t *testing.T) {
	var bad []string
	c := DefaultConfig().WithValid(map[string]string{"retention.ms": "1000", "segment.bytes": "not-a-number", "unknown.key": "x"},
		func(k string, err error) { bad = append(bad, k) })
	if c.RetentionMs != 1000 || c.SegmentBytes != DefaultConfig().SegmentBytes {
		t.Fatalf("retention.ms %d, segment.bytes %d", c.RetentionMs, c.SegmentBytes)
	}
	if len(bad) != 1 || bad[0] != "segment.bytes" {
		t.Fatalf("reported %v", bad)
	}
}

// TestGetOrCreateLogIn: a new log goes to the log dir asked for (KIP-858:
// the directory the metadata names), even when another holds fewer logs;
// a dir that is not a log dir falls back to the least loaded one; an
// existing log stays where it is.
func TestGetOrCreateLogIn(t *testing.T) {
	fs := vfs.NewMem()
	m, err := OpenManager(ManagerOptions{FS: fs, LogDirs: []string{"/d1", "/d2"}, Now: newClock().Now})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	id := [16]byte{1}
	for p, dir := range []string{"/d1", "/d1", "/elsewhere"} {
		if _, err := m.GetOrCreateLogIn(TopicPartition{"t", int32(p)}, id, DefaultConfig(), dir); err != nil {
			t.Fatal(err)
		}
	}
	for p, want := range []string{"/d1", "/d1", "/d2"} {
		if got, _ := m.LogDirOf(TopicPartition{"t", int32(p)}); got != want {
			t.Errorf("t-%d in %s, want %s", p, got, want)
		}
	}
	if _, err := m.GetOrCreateLogIn(TopicPartition{"t", 0}, id, DefaultConfig(), "/d2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := m.LogDirOf(TopicPartition{"t", 0}); got != "/d1" {
		t.Errorf("an existing log moved to %s", got)
	}
}
