package broker

import (
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func kafkaLibsInstalled() bool {
	if os.Getenv("KGO_KAFKA_LIBS") != "" {
		return true
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(home, ".cache", "kgo-broker", "kafka-4.4.0", "libs"))
	return err == nil
}

// TestMetadataSnapshotDumpLog writes a snapshot of a metadata image the way
// the broker does (committed records -> cache -> generator source -> raft)
// and reads it back: through a fresh cache (equal image) and, when Kafka's
// jars are installed, with kafka-dump-log.sh --cluster-metadata-decoder.
func TestMetadataSnapshotDumpLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rn, err := raft.NewNode(raft.Config{
		NodeID: 1, Voters: map[int32]raft.VoterEndpoint{1: {Host: "localhost", Port: 9093}},
		ClusterID: "c", MetadataLogDir: dir, FS: vfs.Default, Rand: rand.New(rand.NewSource(1)),
	})
	if err != nil {
		t.Fatal(err)
	}
	cache := metadatacache.NewCache(metadatacache.Config{ClusterID: "c"})
	cfg, err := config.New(map[string]string{
		"process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": "1@localhost:9093",
		"controller.listener.names": "CONTROLLER", "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
		"log.dirs": dir,
	})
	if err != nil {
		t.Fatal(err)
	}
	rn.Register(&cacheFeeder{cache: cache, logger: zap.NewNop()})
	configureMetadataSnapshots(rn, cache, cfg)
	if err := rn.Start(); err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	topicID := [16]byte{1, 2, 3}
	recs := []metadatacache.Record{
		&metadatacache.FeatureLevelRecord{Name: metadatacache.MetadataVersionFeature, FeatureLevel: 25},
		&metadatacache.TopicRecord{Name: "snap-topic", TopicID: topicID},
		&metadatacache.PartitionRecord{PartitionID: 0, TopicID: topicID, Replicas: []int32{1}, Isr: []int32{1}, Leader: 1, LeaderEpoch: 0},
		&metadatacache.ConfigRecord{ResourceType: 2, ResourceName: "snap-topic", Name: "cleanup.policy", Value: ptr("compact")},
	}
	var raw [][]byte
	for _, r := range recs {
		raw = append(raw, metadatacache.EncodeRecord(r))
	}
	last, err := rn.Append(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := cache.WaitForOffset(ctx, last); err != nil {
		t.Fatal(err)
	}
	img, ok := imageSnapshotSource(cache)()
	if !ok {
		t.Fatal("no image")
	}
	id, err := rn.CreateSnapshot(img)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "__cluster_metadata-0", raft.SnapshotFileName(id))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sr, err := raft.DecodeSnapshot(id, b)
	if err != nil {
		t.Fatal(err)
	}
	fresh := metadatacache.NewCache(metadatacache.Config{ClusterID: "c"})
	(&cacheFeeder{cache: fresh, logger: zap.NewNop()}).HandleSnapshot(sr)
	got := fresh.Image()
	if got.Offset != last || got.TopicByName("snap-topic") == nil || got.MetadataVersion() != 25 ||
		got.TopicConfig("snap-topic")["cleanup.policy"] != "compact" {
		t.Fatalf("image from the snapshot: offset %d topics %v", got.Offset, got.TopicNames())
	}

	if !kafkaLibsInstalled() {
		t.Skip("Kafka's jars are not installed (scripts/install-tools.sh); skipping kafka-dump-log.sh")
	}
	out, err := exec.Command("../scripts/kafka-tool", "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", path).CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-dump-log.sh: %v\n%s", err, out)
	}
	s := string(out)
	t.Logf("kafka-dump-log.sh --cluster-metadata-decoder:\n%s", s)
	for _, want := range []string{"SnapshotHeader", "SnapshotFooter", "FEATURE_LEVEL_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "CONFIG_RECORD", `"name":"snap-topic"`} {
		if !strings.Contains(s, want) {
			t.Errorf("kafka-dump-log.sh output lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []string{"Exception", "rror"} {
		if strings.Contains(s, bad) {
			t.Errorf("kafka-dump-log.sh output has %q:\n%s", bad, s)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestNodeMetadataSnapshotRestart: with tiny thresholds a combined node
// snapshots its metadata image by itself (the generator), retention moves the
// metadata log start, and a restart loads the snapshot: topics, the broker's
// registration and the controller's state come back.
func TestNodeMetadataSnapshotRestart(t *testing.T) {
	dir := t.TempDir()
	over := map[string]string{
		"metadata.log.max.record.bytes.between.snapshots": "1",
		"metadata.max.retention.bytes":                    "1",
	}
	n := startNode(t, dir, over)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(n.client(t))
	if _, err := adm.CreateTopic(ctx, 2, 1, map[string]*string{"cleanup.policy": ptr("compact")}, "snap-a"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "snap-b"); err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(dir, "__cluster_metadata-0")
	// Wait, commit by commit (NoOpRecords every 500 ms), for two snapshots
	// written by the generator and the log start to move.
	for {
		st := n.raft.Status()
		snaps, _ := filepath.Glob(filepath.Join(pdir, "*.checkpoint"))
		if st.LogStartOffset > 0 && len(snaps) >= 1 {
			break
		}
		if err := n.cache.WaitForOffset(ctx, n.cache.Image().Offset+1); err != nil {
			t.Fatalf("no snapshot and log start move: %+v, files %v", st, snaps)
		}
	}
	n.stop(t)

	n2 := startNode(t, dir, over)
	adm2 := kadm.NewClient(n2.client(t))
	td, err := adm2.ListTopics(ctx, "snap-a", "snap-b")
	if err != nil {
		t.Fatal(err)
	}
	if a := td["snap-a"]; a.Err != nil || len(a.Partitions) != 2 {
		t.Fatalf("snap-a after restart: %+v", a)
	}
	if b := td["snap-b"]; b.Err != nil || len(b.Partitions) != 1 {
		t.Fatalf("snap-b after restart: %+v", b)
	}
	rc, err := adm2.DescribeTopicConfigs(ctx, "snap-a")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range rc[0].Configs {
		if c.Key == "cleanup.policy" && c.Value != nil && *c.Value == "compact" {
			found = true
		}
	}
	if !found {
		t.Fatalf("snap-a configs after restart: %+v", rc[0].Configs)
	}
	// The controller's state came back too: creating snap-a again fails.
	if _, err := adm2.CreateTopic(ctx, 1, 1, nil, "snap-a"); err == nil {
		t.Fatal("snap-a created twice")
	}
}
