//go:build integration

package integration

// Eligible leader replicas (KIP-966) and leader elections on request, on a
// real cluster of kgo-broker processes (3 combined nodes, the voters, and 2
// broker-only nodes, which the test kills and restarts so the quorum stays
// up), observed with Kafka 4.4's own tools: kafka-features.sh shows
// eligible.leader.replicas.version finalized at 1 (the format default),
// kafka-topics.sh --describe shows Elr and LastKnownElr as the controller
// moves replicas between the ISR and the ELR, and kafka-leader-election.sh
// runs PREFERRED and UNCLEAN elections.

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionView is partition 0 of a topic as DescribeTopicPartitions
// answers it.
type partitionView struct {
	leader            int32
	isr, elr, lastElr []int32
}

func (p partitionView) String() string {
	return fmt.Sprintf("leader %d isr %v elr %v lastKnownElr %v", p.leader, p.isr, p.elr, p.lastElr)
}

// describePartition asks broker addr for partition 0 of topic with
// DescribeTopicPartitions (the request kafka-topics.sh --describe sends).
func describePartition(t *testing.T, c *Cluster, addr, topic string) (partitionView, error) {
	cl := c.Client([]string{addr})
	defer cl.Close()
	return describePartitionWith(t, cl, topic)
}

func describePartitionWith(t *testing.T, cl *kgo.Client, topic string) (partitionView, error) {
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = topic
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		return partitionView{}, err
	}
	if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) == 0 {
		return partitionView{}, fmt.Errorf("topic %s: %+v", topic, resp.Topics)
	}
	p := resp.Topics[0].Partitions[0]
	return partitionView{leader: p.LeaderID, isr: slices.Sorted(slices.Values(p.ISR)),
		elr: slices.Sorted(slices.Values(p.EligibleLeaderReplicas)), lastElr: slices.Sorted(slices.Values(p.LastKnownELR))}, nil
}

// waitPartition waits until partition 0 of topic, as broker addr sees it,
// satisfies ok.
func waitPartition(t *testing.T, c *Cluster, addr, topic, what string, ok func(partitionView) bool) partitionView {
	t.Helper()
	var last partitionView
	waitFor(t, 60*time.Second, topic+": "+what, func() error {
		v, err := describePartition(t, c, addr, topic)
		if err != nil {
			return err
		}
		last = v
		if !ok(v) {
			return fmt.Errorf("%s", v)
		}
		return nil
	})
	return last
}

// describeRow runs kafka-topics.sh --describe and returns partition 0's
// tab-separated fields by name ("Leader", "Isr", "Elr", "LastKnownElr").
func describeRow(t *testing.T, addr, topic string) (map[string]string, string) {
	t.Helper()
	r := MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", addr, "--describe", "--topic", topic)
	for _, l := range lines(r.Stdout) {
		if !strings.Contains(l, "Partition: 0\t") && !strings.HasSuffix(l, "Partition: 0") {
			continue
		}
		fields := map[string]string{}
		for _, f := range strings.Split(l, "\t") {
			name, value, _ := strings.Cut(strings.TrimSpace(f), ":")
			fields[name] = strings.TrimSpace(value)
		}
		return fields, l
	}
	t.Fatalf("kafka-topics.sh --describe: no partition 0:\n%s", r.Stdout)
	return nil, ""
}

func expectRow(t *testing.T, addr, topic string, want map[string]string) {
	t.Helper()
	got, row := describeRow(t, addr, topic)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("kafka-topics.sh --describe %s: %s is %q, want %q\n%s", topic, k, got[k], v, row)
		}
	}
}

func TestELRAndLeaderElections(t *testing.T) {
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Combined: 3, Brokers: 2, Overrides: map[string]string{
		"auto.leader.rebalance.enable": "false", // the test elects the preferred leader itself
		"replica.lag.time.max.ms":      "3000",
		"replica.fetch.backoff.ms":     "200",
	}})
	bootstrap := c.Node(1).Addr

	// The default format finalized ELR, as kafka-storage.sh format does.
	r := MustKafkaTool(t, RunOpts{}, "kafka-features.sh", "--bootstrap-server", bootstrap, "describe")
	found := false
	for _, l := range lines(r.Stdout) {
		if f := strings.Join(strings.Fields(l), " "); strings.HasPrefix(f, "Feature: eligible.leader.replicas.version ") {
			found = strings.Contains(f, "SupportedMinVersion: 0 SupportedMaxVersion: 1 FinalizedVersionLevel: 1 ")
		}
	}
	if !found {
		t.Fatalf("kafka-features.sh describe:\n%s", r.Stdout)
	}

	// it-elr: replicas 1 (preferred leader), 4, 5; min.insync.replicas 3.
	const elrTopic = "it-elr"
	MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", bootstrap, "--create", "--topic", elrTopic,
		"--replica-assignment", "1:4:5", "--config", "min.insync.replicas=3")
	waitPartition(t, c, bootstrap, elrTopic, "ISR 1,4,5", func(v partitionView) bool {
		return v.leader == 1 && slices.Equal(v.isr, []int32{1, 4, 5})
	})
	expectRow(t, bootstrap, elrTopic, map[string]string{"Leader": "1", "Isr": "1,4,5", "Elr": "", "LastKnownElr": ""})

	// A follower dies: the ISR (2) is below min ISR (3), the follower is
	// eligible (ELR) rather than gone.
	c.Node(5).Kill()
	waitPartition(t, c, bootstrap, elrTopic, "5 in the ELR", func(v partitionView) bool {
		return slices.Equal(v.isr, []int32{1, 4}) && slices.Equal(v.elr, []int32{5})
	})
	expectRow(t, bootstrap, elrTopic, map[string]string{"Leader": "1", "Isr": "1,4", "Elr": "5", "LastKnownElr": ""})
	// It comes back and catches up: the ISR is whole, the ELR empty.
	c.Node(5).Start()
	waitPartition(t, c, bootstrap, elrTopic, "ISR 1,4,5 again", func(v partitionView) bool {
		return slices.Equal(v.isr, []int32{1, 4, 5}) && len(v.elr) == 0
	})

	// 4 and 5 shut down cleanly, then the leader dies: the ISR empties into
	// the ELR and 1 is the last known leader. No leader.
	if code := c.Node(4).Stop(0); code != 0 {
		t.Fatalf("node 4 exited with %d", code)
	}
	if code := c.Node(5).Stop(0); code != 0 {
		t.Fatalf("node 5 exited with %d", code)
	}
	waitPartition(t, c, bootstrap, elrTopic, "ISR 1, ELR 4,5", func(v partitionView) bool {
		return slices.Equal(v.isr, []int32{1}) && slices.Equal(v.elr, []int32{4, 5})
	})
	c.Node(1).Kill()
	other := c.Node(2).Addr
	waitPartition(t, c, other, elrTopic, "an empty ISR", func(v partitionView) bool {
		return v.leader == -1 && len(v.isr) == 0 && slices.Equal(v.elr, []int32{1, 4, 5}) && slices.Equal(v.lastElr, []int32{1})
	})
	expectRow(t, other, elrTopic, map[string]string{"Leader": "none", "Isr": "", "Elr": "1,4,5", "LastKnownElr": "1"})
	// 4 comes back after its clean shutdown: still eligible, so it is
	// elected from the ELR.
	c.Node(4).Start()
	waitPartition(t, c, other, elrTopic, "4 elected from the ELR", func(v partitionView) bool {
		return v.leader == 4 && slices.Equal(v.isr, []int32{4})
	})
	// 1 (killed: an unclean shutdown, it leaves the ELR) and 5 come back
	// and rejoin the ISR.
	c.Node(1).Start()
	c.Node(5).Start()
	waitPartition(t, c, other, elrTopic, "ISR 1,4,5 under leader 4", func(v partitionView) bool {
		return v.leader == 4 && slices.Equal(v.isr, []int32{1, 4, 5}) && len(v.elr) == 0 && len(v.lastElr) == 0
	})

	// PREFERRED: leadership goes back to 1.
	r = MustKafkaTool(t, RunOpts{}, "kafka-leader-election.sh", "--bootstrap-server", bootstrap,
		"--election-type", "PREFERRED", "--topic", elrTopic, "--partition", "0")
	if !strings.Contains(r.Stdout, "Successfully completed leader election (PREFERRED) for partitions "+elrTopic+"-0") {
		t.Errorf("kafka-leader-election.sh PREFERRED:\n%s", r)
	}
	waitPartition(t, c, bootstrap, elrTopic, "leader 1", func(v partitionView) bool { return v.leader == 1 })
	expectRow(t, bootstrap, elrTopic, map[string]string{"Leader": "1", "Isr": "1,4,5", "Elr": "", "LastKnownElr": ""})
	// Again, for every partition: nothing to do.
	r = MustKafkaTool(t, RunOpts{}, "kafka-leader-election.sh", "--bootstrap-server", bootstrap,
		"--election-type", "PREFERRED", "--all-topic-partitions")
	if strings.Contains(r.Stdout, "Error") || strings.Contains(r.Stdout, "Successfully") {
		t.Errorf("kafka-leader-election.sh PREFERRED --all-topic-partitions:\n%s", r)
	}

	// UNCLEAN: it-unclean on 4, 5. 5 dies (the ISR is 4), then 4 dies (the
	// ISR empties into the ELR). 5 comes back, not eligible: no leader
	// until an unclean election makes it the leader.
	const uncleanTopic = "it-unclean"
	MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", bootstrap, "--create", "--topic", uncleanTopic,
		"--replica-assignment", "4:5")
	waitPartition(t, c, bootstrap, uncleanTopic, "ISR 4,5", func(v partitionView) bool {
		return v.leader == 4 && slices.Equal(v.isr, []int32{4, 5})
	})
	c.Node(5).Kill()
	waitPartition(t, c, bootstrap, uncleanTopic, "ISR 4", func(v partitionView) bool { return slices.Equal(v.isr, []int32{4}) })
	c.Node(4).Kill()
	waitPartition(t, c, bootstrap, uncleanTopic, "leaderless", func(v partitionView) bool {
		return v.leader == -1 && len(v.isr) == 0 && slices.Equal(v.elr, []int32{4})
	})
	c.Node(5).Start()
	c.WaitNodeReady(c.Node(5), readyTimeout())
	if v, err := describePartition(t, c, bootstrap, uncleanTopic); err != nil || v.leader != -1 {
		t.Fatalf("a replica outside the ISR and ELR was elected without an unclean election: %v %v", v, err)
	}
	r = MustKafkaTool(t, RunOpts{}, "kafka-leader-election.sh", "--bootstrap-server", bootstrap,
		"--election-type", "UNCLEAN", "--topic", uncleanTopic, "--partition", "0")
	if !strings.Contains(r.Stdout, "Successfully completed leader election (UNCLEAN) for partitions "+uncleanTopic+"-0") {
		t.Errorf("kafka-leader-election.sh UNCLEAN:\n%s", r)
	}
	waitPartition(t, c, bootstrap, uncleanTopic, "leader 5", func(v partitionView) bool {
		return v.leader == 5 && slices.Equal(v.isr, []int32{5}) && len(v.elr) == 0
	})
	expectRow(t, bootstrap, uncleanTopic, map[string]string{"Leader": "5", "Isr": "5", "Elr": "", "LastKnownElr": ""})
	// A partition with a leader needs no unclean election.
	r = KafkaTool(t, RunOpts{}, "kafka-leader-election.sh", "--bootstrap-server", bootstrap,
		"--election-type", "UNCLEAN", "--topic", uncleanTopic, "--partition", "0")
	if !strings.Contains(r.Stdout, "Valid replica already elected for partitions "+uncleanTopic+"-0") {
		t.Errorf("kafka-leader-election.sh UNCLEAN with a leader:\n%s", r)
	}
	c.Node(4).Start()
}

// TestMixedELR: eligible leader replicas across implementations, at Kafka
// 4.4's default (eligible.leader.replicas.version 1). A Kafka 4.4
// controller with kgo-broker and Kafka brokers, then a kgo-broker
// controller with the same mix: a follower of an RF=3,
// min.insync.replicas=3 topic is killed, the controller moves it from the
// ISR to the ELR, and both kinds of broker show the same ISR and ELR in
// DescribeTopicPartitions (each decodes the other's PartitionChangeRecord
// v2); the follower comes back and the ELR empties.
func TestMixedELR(t *testing.T) {
	for _, ctl := range []nodeKind{kindKafka, kindKgo} {
		t.Run(ctl.String()+"-controller", func(t *testing.T) {
			c := startMixed(t, mixedSpec{ID: 1, Kind: ctl, Controller: true},
				mixedSpec{ID: 2, Kind: kindKgo}, mixedSpec{ID: 3, Kind: kindKgo}, mixedSpec{ID: 4, Kind: kindKafka})
			c.waitBrokers(3 * time.Minute)
			const topic = "mixed-elr"
			cl := c.client(t, nil)
			req := kmsg.NewPtrCreateTopicsRequest()
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
			rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{2, 3, 4}}}
			rt.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: kmsg.StringPtr("3")}}
			req.Topics = append(req.Topics, rt)
			req.TimeoutMillis = 30000
			resp, err := req.RequestWith(ctxT(t, 60*time.Second), cl)
			if err != nil || resp.Topics[0].ErrorCode != 0 {
				t.Fatalf("create %s: %v %+v", topic, err, resp)
			}
			// views waits until every broker but down shows ok.
			views := func(what string, down int32, ok func(partitionView) bool) {
				t.Helper()
				for _, b := range c.brokers() {
					if b.ID == down {
						continue
					}
					bcl := c.client(t, []*mixedNode{b})
					waitFor(t, 90*time.Second, fmt.Sprintf("%s on %s broker %d", what, b.Kind, b.ID), func() error {
						v, err := describePartitionWith(t, bcl, topic)
						if err != nil {
							return err
						}
						if !ok(v) {
							return fmt.Errorf("%s", v)
						}
						return nil
					})
				}
			}
			views("ISR 2,3,4", -1, func(v partitionView) bool {
				return v.leader == 2 && slices.Equal(v.isr, []int32{2, 3, 4}) && len(v.elr) == 0
			})
			c.node(3).Kill()
			views("3 in the ELR", 3, func(v partitionView) bool {
				return v.leader == 2 && slices.Equal(v.isr, []int32{2, 4}) && slices.Equal(v.elr, []int32{3}) && len(v.lastElr) == 0
			})
			c.node(3).Start()
			views("the ELR empty again", -1, func(v partitionView) bool { return slices.Equal(v.isr, []int32{2, 3, 4}) && len(v.elr) == 0 })
		})
	}
}
