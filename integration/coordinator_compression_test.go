//go:build integration

package integration

// offsets.topic.compression.codec: the group coordinator writes its
// batches in __consumer_offsets with the codec (Kafka's CoordinatorRuntime
// builds them with GroupCoordinatorConfig.offsetTopicCompressionType), Kafka's
// kafka-dump-log.sh decodes them, and the committed offsets load back after
// a restart.

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestCoordinatorCompressionCodec(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{"offsets.topic.compression.codec": "4"}}) // zstd
	const topic, group = "it-offsets-zstd", "it-offsets-zstd-g"
	createTopic(t, b, topic, 2, nil)
	adm := b.Admin()
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: 0, LeaderEpoch: -1})
	offs.Add(kadm.Offset{Topic: topic, Partition: 1, At: 0, LeaderEpoch: -1})
	// Commit offsets 0 (no records needed: a simple consumer group commit).
	if resp, err := adm.CommitOffsets(ctxT(t, 30*time.Second), group, offs); err != nil || resp.Error() != nil {
		t.Fatalf("commit: %v %v", err, resp.Error())
	}
	b.Restart()
	waitFor(t, 60*time.Second, "the committed offsets after the restart", func() error {
		resp, err := b.Admin().FetchOffsets(ctxT(t, 10*time.Second), group)
		if err != nil {
			return err
		}
		if err := resp.Error(); err != nil {
			return err
		}
		if o, ok := resp.Lookup(topic, 1); !ok || o.At != 0 {
			return errors.New("offset of partition 1 not loaded")
		}
		return nil
	})
	segs := globSorted(t, filepath.Join(b.DataDir, "__consumer_offsets-*", "*.log"))
	r := MustKafkaTool(t, RunOpts{}, "kafka-dump-log.sh", "--offsets-decoder", "--files", strings.Join(segs, ","))
	if !strings.Contains(r.Stdout, "compresscodec: zstd") || !strings.Contains(r.Stdout, topic) {
		t.Fatalf("kafka-dump-log.sh shows no zstd batch with the commit:\n%s", tail(r.Stdout, 40))
	}
	if strings.Contains(r.Stdout, "compresscodec: none") {
		t.Errorf("an uncompressed batch in __consumer_offsets with offsets.topic.compression.codec=4:\n%s", tail(r.Stdout, 40))
	}
}
