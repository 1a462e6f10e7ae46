//go:build integration

package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// quorumStatus runs `kafka-metadata-quorum.sh describe --status` and returns its
// fields, checking the 24-column label padding MetadataQuorumCommand uses.
func quorumStatus(t *testing.T, b *Broker) map[string]string {
	t.Helper()
	r := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-server", b.Addr, "describe", "--status")
	want := []string{"ClusterId", "LeaderId", "LeaderEpoch", "HighWatermark", "MaxFollowerLag",
		"MaxFollowerLagTimeMs", "CurrentVoters", "CurrentObservers"}
	ls := lines(r.Stdout)
	fields := map[string]string{}
	var order []string
	for _, l := range ls {
		label, value, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("describe --status: unexpected line %q\n%s", l, r)
		}
		if len(l) < 24 || l[:24] != fmt.Sprintf("%-24s", label+":") {
			t.Errorf("describe --status: line %q is not padded to 24 columns", l)
		}
		fields[label] = strings.TrimSpace(value)
		order = append(order, label)
	}
	if strings.Join(order, ",") != strings.Join(want, ",") {
		t.Fatalf("describe --status labels %v, want %v\n%s", order, want, r)
	}
	return fields
}

// TestMetadataQuorum checks kafka-metadata-quorum.sh describe --status and
// --replication against the single-node quorum.
func TestMetadataQuorum(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	clusterID := b.MetaProperties()["cluster.id"]

	st := quorumStatus(t, b)
	if st["ClusterId"] != clusterID || !uuidRE.MatchString(clusterID) {
		t.Errorf("ClusterId %q, want meta.properties cluster.id %q", st["ClusterId"], clusterID)
	}
	if st["LeaderId"] != "1" {
		t.Errorf("LeaderId %q, want 1", st["LeaderId"])
	}
	if epoch := mustAtoi64(t, "LeaderEpoch", st["LeaderEpoch"]); epoch < 1 {
		t.Errorf("LeaderEpoch %d, want >= 1", epoch)
	}
	hw1 := mustAtoi64(t, "HighWatermark", st["HighWatermark"])
	if hw1 < 1 {
		t.Errorf("HighWatermark %d, want >= 1 (bootstrap records, broker registration)", hw1)
	}
	if st["MaxFollowerLag"] != "0" || st["MaxFollowerLagTimeMs"] != "0" {
		t.Errorf("MaxFollowerLag %q / MaxFollowerLagTimeMs %q, want 0 / 0 for a single voter", st["MaxFollowerLag"], st["MaxFollowerLagTimeMs"])
	}
	// A static quorum (controller.quorum.voters, kraft.version 0) has no voter
	// directory ids, and Kafka 4.4's tool then leaves "directoryId" out entirely.
	if got, want := st["CurrentVoters"], fmt.Sprintf(`[{"id": 1, "endpoints": ["CONTROLLER://127.0.0.1:%d"]}]`, b.CtrlPort); got != want {
		t.Errorf("CurrentVoters %q, want %q", got, want)
	}
	if got := st["CurrentObservers"]; got != "[]" {
		t.Errorf("CurrentObservers %q, want [] (the combined node is a voter, not an observer)", got)
	}
	if t.Failed() {
		t.FailNow()
	}

	// The high watermark advances when a topic is created (TopicRecord and
	// PartitionRecords are committed to __cluster_metadata).
	createTopic(t, b, "it-quorum", 1, nil)
	waitFor(t, 10*time.Second, "HighWatermark to advance past "+fmt.Sprint(hw1), func() error {
		hw2 := mustAtoi64(t, "HighWatermark", quorumStatus(t, b)["HighWatermark"])
		if hw2 <= hw1 {
			return fmt.Errorf("HighWatermark %d, was %d before creating a topic", hw2, hw1)
		}
		return nil
	})

	// describe --replication: a header and the leader's row.
	r := MustKafkaTool(t, RunOpts{}, "kafka-metadata-quorum.sh", "--bootstrap-server", b.Addr, "describe", "--replication")
	ls := lines(r.Stdout)
	if len(ls) < 2 {
		t.Fatalf("describe --replication: want a header and a row:\n%s", r)
	}
	if got := strings.Join(strings.Fields(ls[0]), " "); got != "NodeId DirectoryId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status" {
		t.Errorf("describe --replication header %q", ls[0])
	}
	var leaderRows int
	for _, l := range ls[1:] {
		f := strings.Fields(l)
		if len(f) != 7 {
			t.Errorf("describe --replication row %q: %d columns, want 7", l, len(f))
			continue
		}
		if f[6] != "Leader" {
			continue
		}
		leaderRows++
		if f[0] != "1" {
			t.Errorf("Leader row NodeId %q, want 1: %q", f[0], l)
		}
		// Static quorum: the zero uuid, printed by Uuid.toString.
		if f[1] != "AAAAAAAAAAAAAAAAAAAAAA" {
			t.Errorf("Leader row DirectoryId %q, want AAAAAAAAAAAAAAAAAAAAAA (static quorum): %q", f[1], l)
		}
		if leo := mustAtoi64(t, "LogEndOffset", f[2]); leo < hw1 {
			t.Errorf("Leader row LogEndOffset %d < earlier HighWatermark %d", leo, hw1)
		}
		if f[3] != "0" {
			t.Errorf("Leader row Lag %q, want 0", f[3])
		}
		if ts := mustAtoi64(t, "LastFetchTimestamp", f[4]); ts <= 0 {
			t.Errorf("Leader row LastFetchTimestamp %d, want now", ts)
		}
	}
	if leaderRows != 1 {
		t.Errorf("describe --replication: %d Leader rows, want 1:\n%s", leaderRows, r)
	}
}
