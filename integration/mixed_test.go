//go:build integration

package integration

// Mixed clusters of Apache Kafka 4.4 and kgo-broker nodes (mixed_harness_test.go):
//
//   - TestMixedKafkaControllers: Kafka controllers (1 voter, 3 voters) with
//     kgo-broker brokers, whose admin requests reach Kafka's controller in an
//     Envelope;
//   - TestMixedKgoControllers: kgo-broker controllers (1 voter, 3 voters)
//     with Kafka brokers, whose Envelopes kgo-broker's controller serves;
//   - in each 3-voter cluster, a topic with RF=3 across both kinds of broker
//     (mixedReplication): leaders on either kind, acks=all with
//     min.insync.replicas=2, ISR shrink and expand across kinds, leader
//     failover by kill -9, no acknowledged record lost;
//   - TestMixedQuorum: a quorum of kgo-broker and Kafka controllers that
//     register with each other (ControllerRegistration, KIP-919) and elect
//     each other's kind after the leader dies.
//
// One cluster per subtest group; the steps of a cluster run in order on it.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestMixedKafkaControllers(t *testing.T) {
	t.Parallel()
	t.Run("1-voter", func(t *testing.T) {
		c := startMixed(t,
			mixedSpec{ID: 1, Kind: kindKafka, Controller: true},
			mixedSpec{ID: 2, Kind: kindKgo}, mixedSpec{ID: 3, Kind: kindKgo})
		mixedScenario(t, c, []int32{2, 3})
	})
	t.Run("3-voters", func(t *testing.T) {
		c := startMixed(t,
			mixedSpec{ID: 1, Kind: kindKafka, Controller: true}, mixedSpec{ID: 2, Kind: kindKafka, Controller: true},
			mixedSpec{ID: 3, Kind: kindKafka, Controller: true},
			mixedSpec{ID: 4, Kind: kindKgo}, mixedSpec{ID: 5, Kind: kindKgo}, mixedSpec{ID: 6, Kind: kindKafka})
		mixedScenario(t, c, []int32{4, 5})
		t.Run("replication", func(t *testing.T) { mixedReplication(t, c, 6, 4, 5) })
	})
}

func TestMixedKgoControllers(t *testing.T) {
	t.Parallel()
	t.Run("1-voter", func(t *testing.T) {
		c := startMixed(t,
			mixedSpec{ID: 1, Kind: kindKgo, Controller: true},
			mixedSpec{ID: 2, Kind: kindKafka}, mixedSpec{ID: 3, Kind: kindKafka})
		mixedScenario(t, c, []int32{2, 3})
	})
	t.Run("3-voters", func(t *testing.T) {
		c := startMixed(t,
			mixedSpec{ID: 1, Kind: kindKgo, Controller: true}, mixedSpec{ID: 2, Kind: kindKgo, Controller: true},
			mixedSpec{ID: 3, Kind: kindKgo, Controller: true},
			mixedSpec{ID: 4, Kind: kindKafka}, mixedSpec{ID: 5, Kind: kindKafka}, mixedSpec{ID: 6, Kind: kindKgo})
		mixedScenario(t, c, []int32{4, 5})
		t.Run("replication", func(t *testing.T) { mixedReplication(t, c, 4, 6, 5) })
	})
}

// mixedScenario drives a cluster through the brokers in subject (the kind
// under test): admin requests (forwarded to the controller in Envelopes),
// produce and consume with a group, fencing and unfencing of a killed
// broker, and kill -9 of the active controller.
func mixedScenario(t *testing.T, c *mixedCluster, subject []int32) {
	var seeds []*mixedNode
	for _, id := range subject {
		seeds = append(seeds, c.node(id))
	}
	adm := adminOf(t, c, seeds...)
	rf := int16(min(len(c.brokers()), 2))

	t.Run("admin", func(t *testing.T) {
		ctx := ctxT(t, 60*time.Second)
		cr, err := adm.CreateTopic(ctx, 2, rf, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "mx-admin")
		if err == nil {
			err = cr.Err
		}
		if err != nil {
			t.Fatalf("CreateTopics: %v", err)
		}
		if _, err := adm.CreateTopic(ctx, 1, rf, nil, "mx-admin"); !isErr(err, kerr.TopicAlreadyExists) {
			t.Errorf("second CreateTopics: %v, want TOPIC_ALREADY_EXISTS", err)
		}
		// Every subject broker must know the topic first: kadm asks any of
		// them for the current partition count, and a broker may apply the
		// controller's records a moment after CreateTopics was answered.
		for _, n := range seeds {
			waitMixedLeaders(t, n, "mx-admin", 2)
		}
		if r, err := adm.CreatePartitions(ctx, 2, "mx-admin"); err != nil || r["mx-admin"].Err != nil {
			t.Fatalf("CreatePartitions: %v %+v", err, r)
		}
		waitMixedLeaders(t, seeds[len(seeds)-1], "mx-admin", 4)
		if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("7200000")}}, "mx-admin"); err != nil || r[0].Err != nil {
			t.Fatalf("IncrementalAlterConfigs: %v %+v", err, r)
		}
		waitFor(t, 30*time.Second, "retention.ms 7200000 on every subject broker", func() error {
			for _, n := range seeds {
				rc, err := adminOf(t, c, n).DescribeTopicConfigs(ctxT(t, 10*time.Second), "mx-admin")
				if err != nil {
					return err
				}
				cfg, err := rc.On("mx-admin", nil)
				if err != nil {
					return err
				}
				for _, e := range cfg.Configs {
					if e.Key == "retention.ms" && (e.Value == nil || *e.Value != "7200000") {
						return fmt.Errorf("node %d: retention.ms %v", n.ID, e.MaybeValue())
					}
				}
			}
			return nil
		})
		if _, err := adm.CreateTopic(ctx, 1, rf, nil, "mx-delete"); err != nil {
			t.Fatal(err)
		}
		if r, err := adm.DeleteTopics(ctx, "mx-delete"); err != nil || r["mx-delete"].Err != nil {
			t.Fatalf("DeleteTopics: %v %+v", err, r)
		}
		if r, err := adm.DeleteTopics(ctx, "mx-never"); err == nil && r["mx-never"].Err == nil {
			t.Error("DeleteTopics of an unknown topic succeeded")
		}
		waitFor(t, 30*time.Second, "mx-delete gone", func() error {
			md, err := metadataFrom(seeds[0].Addr, "mx-delete")
			if err != nil {
				return err
			}
			if len(md.Topics) != 1 || md.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				return fmt.Errorf("topic still there: %+v", md.Topics)
			}
			return nil
		})
	})

	t.Run("groups", func(t *testing.T) {
		const topic = "mx-data"
		if r, err := adm.CreateTopic(ctxT(t, 30*time.Second), 3, rf, nil, topic); err != nil || r.Err != nil {
			t.Fatalf("create: %v %v", err, r.Err)
		}
		waitMixedLeaders(t, seeds[0], topic, 3)
		p := c.client(t, seeds[:1], kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()))
		if err := p.ProduceSync(ctxT(t, 60*time.Second), recordsFor(topic, 60)...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		group := "mx-group-" + strings.ReplaceAll(t.Name(), "/", "-")
		cl := c.client(t, seeds[len(seeds)-1:], kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		ctx := ctxT(t, 90*time.Second)
		seen := map[string]bool{}
		for len(seen) < 60 {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("group consumed %d of 60", len(seen))
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit: %v", err)
		}
		offs, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		var committed int64
		offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
		if committed != 60 {
			t.Errorf("committed offsets sum to %d, want 60", committed)
		}
	})

	t.Run("fencing", func(t *testing.T) {
		victim := seeds[len(seeds)-1]
		victim.Kill()
		c.waitBrokers(30*time.Second, victim.ID) // fenced after broker.session.timeout.ms
		victim.Start()
		c.waitBrokers(3 * readyTimeout()) // unfenced once it caught up
	})

	t.Run("controller-kill", func(t *testing.T) {
		var leader int32
		waitFor(t, 30*time.Second, "the active controller", func() (err error) {
			leader, err = quorumLeader(t, seeds[0])
			return err
		})
		ctl := c.node(leader)
		voters := 0
		for _, n := range c.nodes {
			if n.Controller {
				voters++
			}
		}
		ctl.Kill()
		if voters == 1 {
			ctl.Start()
		} else {
			defer ctl.Start()
		}
		waitFor(t, 3*readyTimeout(), "a new active controller", func() error {
			l, err := quorumLeader(t, seeds[0])
			if err == nil && voters > 1 && l == leader {
				err = fmt.Errorf("still %d", l)
			}
			return err
		})
		// Admin requests reach the new controller (the brokers follow it).
		waitFor(t, 60*time.Second, "CreateTopics after the controller kill", func() error {
			r, err := adm.CreateTopic(ctxT(t, 20*time.Second), 1, rf, nil, "mx-after-kill")
			if err == nil && r.Err != nil && !isErr(r.Err, kerr.TopicAlreadyExists) {
				err = r.Err
			}
			return err
		})
		waitMixedLeaders(t, seeds[0], "mx-after-kill", 1)
		p := c.client(t, seeds, kgo.DefaultProduceTopic("mx-after-kill"))
		if err := p.ProduceSync(ctxT(t, 60*time.Second), recordsFor("mx-after-kill", 5)...).FirstErr(); err != nil {
			t.Fatalf("produce after the controller kill: %v", err)
		}
	})
	c.waitBrokers(3 * readyTimeout())
}

func isErr(err error, want *kerr.Error) bool {
	return err != nil && strings.Contains(err.Error(), want.Message)
}

// waitMixedLeaders waits until b's Metadata has n partitions of topic, each
// with a leader.
func waitMixedLeaders(t *testing.T, b *mixedNode, topic string, n int) {
	t.Helper()
	waitFor(t, 60*time.Second, fmt.Sprintf("%d leaders of %s", n, topic), func() error {
		md, err := metadataFrom(b.Addr, topic)
		if err != nil {
			return err
		}
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 || len(md.Topics[0].Partitions) != n {
			return fmt.Errorf("%+v", md.Topics)
		}
		for _, p := range md.Topics[0].Partitions {
			if p.Leader < 0 || p.ErrorCode != 0 {
				return fmt.Errorf("partition %d leader %d error %d", p.Partition, p.Leader, p.ErrorCode)
			}
		}
		return nil
	})
}

// mixedReplication: a topic with RF=3 and min.insync.replicas=2 on brokers
// a (one kind), b and x: partition 0 led by a with b a follower, partition
// 1 led by b with a a follower. acks=all produce runs throughout while b is
// killed (partition 0's ISR shrinks at a's, partition 1 fails over), b comes
// back (the ISRs expand), then a is killed and comes back the same way.
// Every acknowledged record is read back.
func mixedReplication(t *testing.T, c *mixedCluster, a, b, x int32) {
	const topic = "mx-repl"
	na, nb := c.node(a), c.node(b)
	t.Logf("replicas: %d (%s), %d (%s), %d (%s)", a, na.Kind, b, nb.Kind, x, c.node(x).Kind)
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, replicas := range [][]int32{{a, b, x}, {b, a, x}} {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(i), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
	}
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "min.insync.replicas", kmsg.StringPtr("2")
	rt.Configs = append(rt.Configs, cfg)
	req.Topics, req.TimeoutMillis = append(req.Topics, rt), 30000
	cl := c.client(t, []*mixedNode{c.node(x)})
	resp, err := req.RequestWith(ctxT(t, 60*time.Second), cl)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create %s: %v %+v", topic, err, resp)
	}
	all := []int32{a, b, x}
	slices.Sort(all)
	waitISR := func(what string, via *mixedNode, partition int32, leaderOK func(int32) bool, isr []int32) {
		t.Helper()
		waitFor(t, 90*time.Second, what, func() error {
			l, got, err := mixedPartitionState(via, topic, partition)
			if err != nil {
				return err
			}
			if !leaderOK(l) || !slices.Equal(got, isr) {
				return fmt.Errorf("partition %d: leader %d ISR %v, want ISR %v", partition, l, got, isr)
			}
			return nil
		})
	}
	is := func(id int32) func(int32) bool { return func(l int32) bool { return l == id } }
	not := func(id int32) func(int32) bool { return func(l int32) bool { return l >= 0 && l != id } }
	without := func(id int32) []int32 {
		return slices.DeleteFunc(slices.Clone(all), func(r int32) bool { return r == id })
	}
	xn := c.node(x)
	waitISR("partition 0 led by "+na.Kind.String(), xn, 0, is(a), all)
	waitISR("partition 1 led by "+nb.Kind.String(), xn, 1, is(b), all)

	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		next  int
	)
	pcl := c.client(t, []*mixedNode{xn}, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(30*time.Second), kgo.ProducerLinger(0))
	produce := func(n int) error {
		var recs []*kgo.Record
		mu.Lock()
		for range n {
			recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("r%06d", next)), Partition: int32(next % 2)})
			next++
		}
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		res := pcl.ProduceSync(ctx, recs...)
		mu.Lock()
		defer mu.Unlock()
		for _, r := range res {
			if r.Err == nil {
				acked[string(r.Record.Value)] = true
			}
		}
		return res.FirstErr()
	}
	if err := produce(100); err != nil {
		t.Fatalf("produce acks=all RF=3: %v", err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := produce(10); err != nil {
				t.Logf("produce: %v", err)
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()

	// b dies: a (the other kind) drops it from partition 0's ISR; partition
	// 1 fails over away from b.
	nb.Kill()
	waitISR(fmt.Sprintf("%s leader %d shrinking partition 0's ISR", na.Kind, a), xn, 0, is(a), without(b))
	waitISR("partition 1 failing over from "+nb.Kind.String(), xn, 1, not(b), without(b))
	nb.Start()
	waitISR(fmt.Sprintf("%s %d back in partition 0's ISR", nb.Kind, b), xn, 0, is(a), all)
	waitISR(fmt.Sprintf("%s %d back in partition 1's ISR", nb.Kind, b), xn, 1, not(-1), all)

	// a dies: partition 0 fails over to the other kind, whose leader drops a.
	na.Kill()
	waitISR("partition 0 failing over from "+na.Kind.String(), xn, 0, not(a), without(a))
	waitISR("partition 1 without "+na.Kind.String(), xn, 1, not(a), without(a))
	na.Start()
	waitISR(fmt.Sprintf("%s %d back in partition 0's ISR", na.Kind, a), xn, 0, not(-1), all)
	waitISR(fmt.Sprintf("%s %d back in partition 1's ISR", na.Kind, a), xn, 1, not(-1), all)
	close(stop)
	wg.Wait()
	if err := produce(100); err != nil {
		t.Fatalf("produce with the full ISR again: %v", err)
	}

	mu.Lock()
	want := len(acked)
	mu.Unlock()
	t.Logf("%d records acknowledged of %d sent", want, next)
	for _, via := range []*mixedNode{na, nb} {
		got := map[string]bool{}
		rd := c.client(t, []*mixedNode{via}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		ctx := ctxT(t, 90*time.Second)
		for countAcked(acked, got) < want {
			fs := rd.PollFetches(ctx)
			if ctx.Err() != nil {
				break
			}
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)] = true })
		}
		var lost []string
		for v := range acked {
			if !got[v] {
				lost = append(lost, v)
			}
		}
		if len(lost) > 0 {
			slices.Sort(lost)
			t.Fatalf("read through %s %d: %d acknowledged records lost, e.g. %v", via.Kind, via.ID, len(lost), lost[:min(10, len(lost))])
		}
	}
}

func countAcked(acked, got map[string]bool) int {
	n := 0
	for v := range acked {
		if got[v] {
			n++
		}
	}
	return n
}

// TestMixedQuorum runs a quorum of two kgo-broker controllers and two Kafka
// controllers with a kgo-broker broker: every controller registers with the
// active controller whichever kind it is (ControllerRegistration, KIP-919),
// as the Kafka controller's DescribeCluster (registrations only) and
// UpdateFeatures (which refuses while a voter has not registered) show.
// Then leaders are killed (kill -9, restarted at once) in both directions: a
// kgo-broker leader until a Kafka controller leads, where a restarted
// kgo-broker controller registers its new incarnation with it, and a Kafka
// leader until a kgo-broker controller leads again. With four voters a
// majority is three, so every one of these elections needs the votes of
// both kinds (Vote and BeginQuorumEpoch with replica directory ids, Kafka's
// UpdateRaftVoter to a kgo-broker leader, pre-votes), and each new leader
// serves CreateTopics through the broker.
func TestMixedQuorum(t *testing.T) {
	t.Parallel()
	c := startMixed(t,
		mixedSpec{ID: 1, Kind: kindKgo, Controller: true}, mixedSpec{ID: 2, Kind: kindKgo, Controller: true},
		mixedSpec{ID: 3, Kind: kindKafka, Controller: true}, mixedSpec{ID: 4, Kind: kindKafka, Controller: true},
		mixedSpec{ID: 5, Kind: kindKgo})
	broker := c.node(5)
	waitFor(t, 60*time.Second, "every controller registered", func() error {
		ids, err := describeControllerIDs(c.node(3))
		if err == nil && !slices.Equal(ids, []int32{1, 2, 3, 4}) {
			err = fmt.Errorf("Kafka controller 3 lists %v", ids)
		}
		return err
	})
	if r := features(t, &Broker{Addr: broker.Addr}, "upgrade", "--feature", "group.version=1", "--dry-run"); r.ExitCode != 0 {
		t.Fatalf("UpdateFeatures with every voter registered:\n%s", r)
	}
	createTopic := func(name string) {
		t.Helper()
		waitFor(t, 60*time.Second, "CreateTopics "+name+" through the kgo-broker broker", func() error {
			r, err := adminOf(t, c, broker).CreateTopic(ctxT(t, 20*time.Second), 1, 1, nil, name)
			if err == nil {
				err = r.Err
			}
			if isErr(err, kerr.TopicAlreadyExists) {
				// an earlier attempt created it (its answer was lost to
				// the failover)
				return nil
			}
			return err
		})
	}
	createTopic("mq-topic")
	// Kafka's controllers were formatted at Kafka's defaults.
	if f := describeFeatures(t, &Broker{Addr: broker.Addr})["streams.version"]; f["FinalizedVersionLevel"] != "1" {
		t.Fatalf("streams.version: %v, want finalized at Kafka 4.4's default 1", f)
	}

	leaderNow := func() int32 { return activeController(t, broker) }
	failover := func(from, want nodeKind) int32 { return failoverUntil(t, c, broker, from, want) }
	// A kgo-broker leader first, then kill kgo-broker leaders until a Kafka
	// controller leads.
	failover(kindKafka, kindKgo)
	leader := failover(kindKgo, kindKafka)
	// A kgo-broker controller's new incarnation registers with it.
	n1 := c.node(1)
	n1.Kill()
	n1.Start()
	waitFor(t, 3*readyTimeout(), "kgo-broker controller 1 registered with the Kafka controller", func() error {
		b, err := os.ReadFile(n1.logPath)
		if err != nil {
			return err
		}
		s := string(b)
		run := s[strings.LastIndex(s, "===== harness: start #"):]
		if !strings.Contains(run, "the controller acknowledged our controller registration") {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	if l := leaderNow(); l != leader {
		t.Logf("the active controller moved to %d meanwhile", l)
	}
	createTopic("mq-under-kafka")
	// Kill Kafka leaders until a kgo-broker controller leads again.
	failover(kindKafka, kindKgo)
	createTopic("mq-under-kgo")
}

// activeController waits for the raft leader that DescribeQuorum through
// broker reports.
func activeController(t *testing.T, broker *mixedNode) int32 {
	t.Helper()
	var l int32
	waitFor(t, 3*readyTimeout(), "the active controller", func() (err error) {
		l, err = quorumLeader(t, broker)
		return err
	})
	return l
}

// failoverUntil kills the active controller (kill -9, restarted at once)
// until one of kind want is active, at least once when the first one is of
// kind from; every kill must elect a new leader. It returns the leader.
func failoverUntil(t *testing.T, c *mixedCluster, broker *mixedNode, from, want nodeKind) int32 {
	t.Helper()
	leader := activeController(t, broker)
	for i := 0; c.node(leader).Kind != want || (i == 0 && c.node(leader).Kind == from); i++ {
		if i == 8 {
			t.Fatalf("controller %d is still active after %d failovers", leader, i)
		}
		old := c.node(leader)
		old.Kill()
		waitFor(t, 3*readyTimeout(), fmt.Sprintf("a new active controller after %s controller %d died", old.Kind, old.ID), func() error {
			l, err := quorumLeader(t, broker)
			if err == nil && l == old.ID {
				err = fmt.Errorf("still %d", l)
			}
			leader = l
			return err
		})
		t.Logf("%s controller %d died: %s controller %d is active", old.Kind, old.ID, c.node(leader).Kind, leader)
		old.Start()
	}
	return leader
}

// describeControllerIDs sends DescribeCluster (EndpointType CONTROLLER) to a
// controller and returns the controller ids it lists.
func describeControllerIDs(n *mixedNode) ([]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = 2
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, err
	}
	if resp.ErrorCode != 0 {
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	var ids []int32
	for _, b := range resp.Brokers {
		ids = append(ids, b.NodeID)
	}
	slices.Sort(ids)
	return ids, nil
}

// TestMixedQuorumKRaftUpgrade: a static quorum (controller.quorum.voters,
// kraft.version 0) of one kgo-broker and two Apache Kafka 4.4 controllers is
// upgraded to kraft.version 1 with kafka-features.sh upgrade --feature
// kraft.version=1 through a kgo-broker broker (KIP-853: the leader writes
// KRaftVersionRecord and a VotersRecord of the static voters with their
// directory ids), once under a kgo-broker leader and once under a Kafka
// one; then leaders are killed until the other kind leads, and the new
// leader serves CreateTopics with the voter set from the log.
func TestMixedQuorumKRaftUpgrade(t *testing.T) {
	t.Parallel()
	for _, under := range []nodeKind{kindKgo, kindKafka} {
		t.Run("under-"+string(under), func(t *testing.T) { mixedKRaftUpgrade(t, under) })
	}
}

func mixedKRaftUpgrade(t *testing.T, under nodeKind) {
	c := startMixed(t,
		mixedSpec{ID: 1, Kind: kindKgo, Controller: true}, mixedSpec{ID: 2, Kind: kindKafka, Controller: true},
		mixedSpec{ID: 3, Kind: kindKafka, Controller: true}, mixedSpec{ID: 4, Kind: kindKgo})
	broker := c.node(4)
	b := &Broker{t: t, Addr: broker.Addr}
	if f := describeFeatures(t, b)["kraft.version"]; f["FinalizedVersionLevel"] != "0" {
		t.Fatalf("kraft.version %v before the upgrade, want finalized 0", f)
	}
	waitFor(t, 60*time.Second, "every controller registered", func() error {
		ids, err := describeControllerIDs(c.node(2))
		if err == nil && !slices.Equal(ids, []int32{1, 2, 3}) {
			err = fmt.Errorf("Kafka controller 2 lists %v", ids)
		}
		return err
	})
	other := nodeKind(kindKafka)
	if under == kindKafka {
		other = kindKgo
	}
	first := failoverUntil(t, c, broker, other, under)
	var r ToolResult
	waitFor(t, 60*time.Second, "kafka-features.sh upgrade --feature kraft.version=1", func() error {
		r = features(t, b, "upgrade", "--feature", "kraft.version=1")
		if r.ExitCode != 0 {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	if !strings.Contains(r.Stdout, "kraft.version was upgraded to 1.") {
		t.Errorf("upgrade output:\n%s", r)
	}
	waitFor(t, 60*time.Second, "kraft.version finalized at 1", func() error {
		if f := describeFeatures(t, b)["kraft.version"]; f["FinalizedVersionLevel"] != "1" {
			return fmt.Errorf("kraft.version %v", f)
		}
		return nil
	})
	leader := failoverUntil(t, c, broker, under, other)
	t.Logf("upgraded under %s controller %d; now %s controller %d leads", c.node(first).Kind, first, c.node(leader).Kind, leader)
	waitFor(t, 60*time.Second, "CreateTopics after the failover", func() error {
		r, err := adminOf(t, c, broker).CreateTopic(ctxT(t, 20*time.Second), 1, 1, nil, "mq-kraft-upgraded")
		if err == nil {
			err = r.Err
		}
		if isErr(err, kerr.TopicAlreadyExists) {
			return nil // an earlier attempt that timed out took effect
		}
		return err
	})
	if f := describeFeatures(t, b)["kraft.version"]; f["FinalizedVersionLevel"] != "1" {
		t.Errorf("kraft.version %v after the failover, want finalized 1", f)
	}
}
