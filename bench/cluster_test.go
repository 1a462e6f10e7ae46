package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNewClusterConfig checks the three nodes' server.properties (no broker
// is started): ids, one voter list naming every controller port, the
// replication keys, and an SSL keystore that outlives the deletion of a
// cluster's dir, for the next repetition's cluster (a keystore inside the
// first cluster's dir broke the second cluster's start).
func TestNewClusterConfig(t *testing.T) {
	tmp := t.TempDir()
	first, err := newCluster(kafka, filepath.Join(tmp, "cluster-r0-kafka"), 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(first.Dir); err != nil {
		t.Fatal(err)
	}
	c, err := newCluster(kgo, filepath.Join(tmp, "cluster-r0-kgo"), 3)
	if err != nil {
		t.Fatal(err)
	}
	var voters []string
	for _, b := range c.Nodes {
		voters = append(voters, voter(b.NodeID, b.CtrlPort))
	}
	for i, b := range c.Nodes {
		if b.NodeID != i+1 {
			t.Errorf("node %d has id %d", i, b.NodeID)
		}
		raw, err := os.ReadFile(b.Props)
		if err != nil {
			t.Fatal(err)
		}
		props := map[string]string{}
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(k, "#") {
				props[k] = v
			}
		}
		for k, want := range map[string]string{
			"node.id":                                  string(rune('1' + i)),
			"process.roles":                            "broker,controller",
			"controller.quorum.voters":                 strings.Join(voters, ","),
			"log.dirs":                                 b.DataDir,
			"default.replication.factor":               "3",
			"offsets.topic.replication.factor":         "3",
			"transaction.state.log.replication.factor": "3",
			"min.insync.replicas":                      "2",
			"transaction.state.log.min.isr":            "2",
		} {
			if props[k] != want {
				t.Errorf("node %d: %s=%q, want %q", b.NodeID, k, props[k], want)
			}
		}
		ks := props["listener.name.ssl.ssl.keystore.location"]
		if _, err := os.Stat(ks); err != nil {
			t.Errorf("node %d: keystore: %v", b.NodeID, err)
		}
		if strings.HasPrefix(ks, c.Dir) || strings.HasPrefix(ks, first.Dir) {
			t.Errorf("node %d: keystore %s is inside a cluster's dir", b.NodeID, ks)
		}
	}
}
