package broker

import (
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
