//go:build integration

package integration

// Partition reassignment (KIP-455, issue 15; controller/reassign.go) with Kafka's own
// kafka-reassign-partitions.sh on one combined node and three brokers:
// --generate proposes a plan; --execute (with --throttle, whose broker and
// topic throttle configs must be accepted) moves an RF=1 partition to
// another broker, grows one from RF 1 to 3, shrinks one from 3 to 1 and
// moves one off its leader; --verify waits for completion and clears the
// throttles; the records produced before are all readable from the new
// replicas after the old broker is stopped, and the removed replicas'
// logs are gone. A reassignment to a stopped (fenced) broker waits, shows
// in --list, and --cancel reverts it; one to an unregistered broker is
// refused with Kafka's error. TestReassignControllerFailover: a waiting
// reassignment survives kill -9 of the active controller.
// TestMixedReassign: reassignments between Kafka 4.4 and kgo-broker
// brokers under either kind of controller.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestReassignPartitions(t *testing.T) {
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Combined: 1, Brokers: 3, Overrides: map[string]string{
		"replica.lag.time.max.ms":  "5000",
		"replica.fetch.backoff.ms": "200",
	}})
	bootstrap := c.Node(1).Addr
	cl := c.Client(nil)
	adm := kadm.NewClient(cl)

	topics := map[string][]int32{ // name -> initial replicas
		"it-move":   {2},
		"it-grow":   {2},
		"it-shrink": {2, 3, 4},
		"it-leader": {2, 3},
		"it-cancel": {2},
	}
	for name, replicas := range topics {
		createAssignedTopic(t, cl, name, replicas)
	}
	const n = 200
	for name := range topics {
		produceTo(t, cl, name, n)
	}
	tool := func(args ...string) ToolResult {
		return KafkaTool(t, RunOpts{Timeout: 120 * time.Second}, "kafka-reassign-partitions.sh",
			append([]string{"--bootstrap-server", bootstrap}, args...)...)
	}
	write := func(name, content string) string {
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}

	// --generate: a plan moving it-move and it-grow onto brokers 3 and 4.
	r := tool("--generate", "--topics-to-move-json-file",
		write("topics.json", `{"version":1,"topics":[{"topic":"it-move"},{"topic":"it-grow"}]}`), "--broker-list", "3,4")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "Current partition replica assignment") ||
		!strings.Contains(r.Stdout, "Proposed partition reassignment configuration") || !strings.Contains(r.Stdout, `"topic":"it-move"`) {
		t.Fatalf("--generate:\n%s", r)
	}

	// --execute with a throttle: the tool writes the brokers' throttle
	// rates and the topics' throttled replicas before the reassignment.
	plan := write("plan.json", `{"version":1,"partitions":[
{"topic":"it-move","partition":0,"replicas":[3]},
{"topic":"it-grow","partition":0,"replicas":[2,3,4]},
{"topic":"it-shrink","partition":0,"replicas":[3]},
{"topic":"it-leader","partition":0,"replicas":[3,4]}]}`)
	r = tool("--execute", "--reassignment-json-file", plan, "--throttle", "50000000")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "Successfully started partition reassignment") {
		t.Fatalf("--execute:\n%s", r)
	}
	t.Logf("--execute:\n%s", r.Stdout)
	// The topics' throttled replicas show in DescribeConfigs; the brokers'
	// rates are checked in the metadata log below.
	throttles := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		tc, err := adm.DescribeTopicConfigs(ctxT(t, 30*time.Second), "it-move")
		if err != nil {
			t.Fatal(err)
		}
		for _, res := range tc {
			for _, cfg := range res.Configs {
				if strings.HasSuffix(cfg.Key, ".replication.throttled.replicas") && cfg.Source == kmsg.ConfigSourceDynamicTopicConfig {
					out[cfg.Key] = cfg.MaybeValue()
				}
			}
		}
		return out
	}
	if got := throttles(); got["leader.replication.throttled.replicas"] != "0:2" || got["follower.replication.throttled.replicas"] != "0:3" {
		t.Errorf("it-move's throttle configs after --execute --throttle: %v", got)
	}
	waitFor(t, 120*time.Second, "the reassignments to complete (--verify)", func() error {
		r := tool("--verify", "--reassignment-json-file", plan)
		if r.ExitCode != 0 {
			return fmt.Errorf("--verify:\n%s", r)
		}
		for _, tp := range []string{"it-move-0", "it-grow-0", "it-shrink-0", "it-leader-0"} {
			if !strings.Contains(r.Stdout, "Reassignment of partition "+tp+" is completed.") {
				return fmt.Errorf("%s not completed:\n%s", tp, r.Stdout)
			}
		}
		if !strings.Contains(r.Stdout, "Clearing broker-level throttles") || !strings.Contains(r.Stdout, "Clearing topic-level throttles") {
			return fmt.Errorf("throttles not cleared:\n%s", r.Stdout)
		}
		return nil
	})
	want := map[string][]int32{"it-move": {3}, "it-grow": {2, 3, 4}, "it-shrink": {3}, "it-leader": {3, 4}}
	waitFor(t, 30*time.Second, "metadata to show the new assignments", func() error {
		md, err := adm.Metadata(ctxT(t, 10*time.Second), "it-move", "it-grow", "it-shrink", "it-leader")
		if err != nil {
			return err
		}
		for name, replicas := range want {
			p := md.Topics[name].Partitions[0]
			isr := slices.Sorted(slices.Values(p.ISR))
			if !slices.Equal(p.Replicas, replicas) || !slices.Equal(isr, slices.Sorted(slices.Values(replicas))) || !slices.Contains(replicas, p.Leader) {
				return fmt.Errorf("%s: replicas %v isr %v leader %d, want replicas %v", name, p.Replicas, p.ISR, p.Leader, replicas)
			}
		}
		return nil
	})
	// The throttle configs the tool wrote are gone again: the topics' from
	// DescribeConfigs, the brokers' rates were set and removed by
	// ConfigRecords in the metadata log (kafka-dump-log.sh).
	if got := throttles(); len(got) != 0 {
		t.Errorf("throttle configs after --verify: %v", got)
	}
	segs, _ := filepath.Glob(filepath.Join(c.Node(1).DataDir, "__cluster_metadata-0", "*.log"))
	dump := MustKafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-dump-log.sh", "--cluster-metadata-decoder", "--files", strings.Join(segs, ","))
	for _, key := range []string{"leader.replication.throttled.rate", "follower.replication.throttled.rate"} {
		set := fmt.Sprintf(`"resourceType":4,"resourceName":"3","name":"%s","value":"50000000"`, key)
		removed := fmt.Sprintf(`"resourceType":4,"resourceName":"3","name":"%s","value":null`, key)
		if i, j := strings.Index(dump.Stdout, set), strings.LastIndex(dump.Stdout, removed); i < 0 || j < i {
			t.Errorf("the metadata log does not set then remove broker 3's %s (set at %d, removed at %d)", key, i, j)
		}
	}
	// Broker 2 no longer holds it-move, it-shrink or it-leader: their logs
	// were deleted (renamed with -delete first, as Kafka does).
	waitFor(t, 30*time.Second, "broker 2 to delete its removed replicas", func() error {
		for _, name := range []string{"it-move-0", "it-shrink-0", "it-leader-0"} {
			if _, err := os.Stat(filepath.Join(c.Node(2).DataDir, name)); err == nil {
				return fmt.Errorf("%s is still in %s", name, c.Node(2).DataDir)
			}
		}
		return nil
	})

	// Every record is readable from the new replicas with broker 2 gone.
	if code := c.Node(2).Stop(60 * time.Second); code != 0 {
		t.Fatalf("node 2 exited with %d", code)
	}
	for name := range want {
		recs := consumeFrom(t, c, name, n)
		for i, rec := range recs {
			if w := fmt.Sprintf("%s-%d", name, i); string(rec.Value) != w || rec.Offset != int64(i) {
				t.Fatalf("%s record %d: offset %d value %q, want %q", name, i, rec.Offset, rec.Value, w)
			}
		}
	}
	c.Node(2).Start()
	c.WaitNodeReady(c.Node(2), 120*time.Second)

	// A reassignment to a fenced broker waits: stop broker 4, move
	// it-cancel onto it; --list and --verify show it in progress until
	// --cancel reverts it.
	if code := c.Node(4).Stop(60 * time.Second); code != 0 {
		t.Fatalf("node 4 exited with %d", code)
	}
	waitFor(t, 60*time.Second, "broker 4 fenced", func() error {
		md, err := adm.Metadata(ctxT(t, 10*time.Second))
		if err != nil {
			return err
		}
		for _, b := range md.Brokers {
			if b.NodeID == 4 {
				return fmt.Errorf("broker 4 still listed")
			}
		}
		return nil
	})
	// (kafka-reassign-partitions.sh --execute itself refuses a broker
	// DescribeCluster does not list: "Unknown broker id 4".)
	cancelPlan := write("cancel.json", `{"version":1,"partitions":[{"topic":"it-cancel","partition":0,"replicas":[4]}]}`)
	if got := alterReassignments(t, cl, 1, true, "it-cancel", kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: 0, Replicas: []int32{4}}); !slices.Equal(got, []string{"NONE"}) {
		t.Fatalf("reassigning it-cancel onto fenced broker 4: %q", got)
	}
	r = tool("--list")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "it-cancel-0: replicas: 4,2. adding: 4. removing: 2.") {
		t.Fatalf("--list:\n%s", r)
	}
	// kafka-topics.sh --describe (DescribeTopicPartitions and
	// ListPartitionReassignments) shows the whole replica set and the
	// reassignment.
	r = MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", bootstrap, "--describe", "--topic", "it-cancel")
	for _, want := range []string{"Partition: 0", "Leader: 2", "Replicas: 4,2", "Isr: 2", "Adding Replicas: 4", "Removing Replicas: 2"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("kafka-topics.sh --describe during the reassignment lacks %q:\n%s", want, r.Stdout)
		}
	}
	r = tool("--verify", "--reassignment-json-file", cancelPlan)
	if !strings.Contains(r.Stdout, "Reassignment of partition it-cancel-0 is still in progress.") {
		t.Fatalf("--verify of a waiting reassignment:\n%s", r)
	}
	// --preserve-throttles: clearing them would send broker 4 its own
	// IncrementalAlterConfigs, which waits for the stopped broker.
	r = tool("--cancel", "--reassignment-json-file", cancelPlan, "--preserve-throttles")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "Successfully cancelled partition reassignment for: it-cancel-0") {
		t.Fatalf("--cancel:\n%s", r)
	}
	t.Logf("--cancel:\n%s", r.Stdout)
	r = tool("--list")
	if r.ExitCode != 0 || !strings.Contains(r.Stdout, "No partition reassignments found.") {
		t.Fatalf("--list after --cancel:\n%s", r)
	}
	md, err := adm.Metadata(ctxT(t, 10*time.Second), "it-cancel")
	if err != nil {
		t.Fatal(err)
	}
	if p := md.Topics["it-cancel"].Partitions[0]; !slices.Equal(p.Replicas, []int32{2}) || p.Leader != 2 {
		t.Fatalf("it-cancel after --cancel: replicas %v leader %d", p.Replicas, p.Leader)
	}
	if recs := consumeFrom(t, c, "it-cancel", n); len(recs) != n {
		t.Fatalf("it-cancel: %d records", len(recs))
	}

	// Kafka's answers for a target that is not registered, a cancel with
	// nothing in progress and, with allow_replication_factor_change off,
	// a replication factor change.
	got := alterReassignments(t, cl, 1, false, "it-cancel",
		kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: 0, Replicas: []int32{99}},
		kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: 0},
		kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: 0, Replicas: []int32{2, 3}})
	wantErrs := []string{
		"INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes broker 99, but no such broker is registered.",
		"NO_REASSIGNMENT_IN_PROGRESS",
		"INVALID_REPLICATION_FACTOR: The replication factor is changed from 1 to 2",
	}
	if !slices.Equal(got, wantErrs) {
		t.Fatalf("AlterPartitionReassignments errors:\n got %q\nwant %q", got, wantErrs)
	}
	c.Node(4).Start()
	c.WaitNodeReady(c.Node(4), 120*time.Second)
}

// TestReassignControllerFailover: a reassignment waiting for its fenced
// target survives kill -9 of the active controller (it is in the metadata
// log): the new controller lists it and completes it once the target
// broker is back, and every record is read from the new replica with the
// old one stopped.
func TestReassignControllerFailover(t *testing.T) {
	c := StartCluster(t, ClusterOptions{Combined: 3, Brokers: 1, Overrides: map[string]string{
		"replica.lag.time.max.ms":  "5000",
		"replica.fetch.backoff.ms": "200",
	}})
	const topic, n = "it-failover", 100
	cl := c.Client(nil)
	createAssignedTopic(t, cl, topic, []int32{2})
	produceTo(t, cl, topic, n)
	if code := c.Node(4).Stop(60 * time.Second); code != 0 {
		t.Fatalf("node 4 exited with %d", code)
	}
	if got := alterReassignments(t, cl, 1, true, topic, kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: 0, Replicas: []int32{4}}); !slices.Equal(got, []string{"NONE"}) {
		t.Fatalf("reassign onto stopped broker 4: %q", got)
	}
	old, _ := c.WaitLeader(60*time.Second, 0)
	old.Kill()
	ld, _ := c.WaitLeader(60*time.Second, old.ID)
	t.Logf("active controller %d killed; %d leads", old.ID, ld.ID)
	var alive []string
	for _, id := range []int32{1, 2, 3} {
		if id != old.ID {
			alive = append(alive, c.Node(id).Addr)
		}
	}
	acl := c.Client(alive)
	waitFor(t, 60*time.Second, "the new controller to list the reassignment", func() error {
		resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctxT(t, 10*time.Second), acl)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return fmt.Errorf("%+v", resp)
		}
		p := resp.Topics[0].Partitions[0]
		if !slices.Equal(p.Replicas, []int32{4, 2}) || !slices.Equal(p.AddingReplicas, []int32{4}) || !slices.Equal(p.RemovingReplicas, []int32{2}) {
			return fmt.Errorf("replicas %v adding %v removing %v", p.Replicas, p.AddingReplicas, p.RemovingReplicas)
		}
		return nil
	})
	old.Start()
	c.WaitNodeReady(old, 120*time.Second)
	c.Node(4).Start()
	c.WaitNodeReady(c.Node(4), 120*time.Second)
	waitFor(t, 120*time.Second, "the reassignment to complete", func() error {
		md, err := metadataFrom(c.Node(4).Addr, topic)
		if err != nil {
			return err
		}
		p := md.Topics[0].Partitions[0]
		if !slices.Equal(p.Replicas, []int32{4}) || !slices.Equal(p.ISR, []int32{4}) || p.Leader != 4 {
			return fmt.Errorf("replicas %v isr %v leader %d", p.Replicas, p.ISR, p.Leader)
		}
		return nil
	})
	if code := c.Node(2).Stop(60 * time.Second); code != 0 {
		t.Fatalf("node 2 exited with %d", code)
	}
	recs := consumeFromAddr(t, c, c.Node(4).Addr, topic, n)
	for i, rec := range recs {
		if w := fmt.Sprintf("%s-%d", topic, i); string(rec.Value) != w {
			t.Fatalf("record %d: %q, want %q", i, rec.Value, w)
		}
	}
}

// alterReassignments sends AlterPartitionReassignments for partitions of
// topic and returns each partition's answer as "CODE[: message]".
func alterReassignments(t *testing.T, cl *kgo.Client, version int16, allowRF bool, topic string, parts ...kmsg.AlterPartitionAssignmentsRequestTopicPartition) []string {
	t.Helper()
	req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	req.Version, req.AllowReplicationFactorChange = version, allowRF
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic, rt.Partitions = topic, parts
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 30*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Topics) != 1 {
		t.Fatalf("AlterPartitionReassignments: %+v", resp)
	}
	got := []string{}
	for _, p := range resp.Topics[0].Partitions {
		s := "NONE"
		if p.ErrorCode != 0 {
			s = kerr.ErrorForCode(p.ErrorCode).(*kerr.Error).Message
		}
		if p.ErrorMessage != nil {
			s += ": " + *p.ErrorMessage
		}
		got = append(got, s)
	}
	return got
}

// createAssignedTopic creates a one-partition topic on the given replicas
// and waits until it has a leader.
func createAssignedTopic(t *testing.T, cl *kgo.Client, name string, replicas []int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
	rt.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: replicas}}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 30*time.Second), cl)
	if err != nil {
		t.Fatal(err)
	}
	if e := kerr.ErrorForCode(resp.Topics[0].ErrorCode); e != nil {
		t.Fatalf("create %s: %v", name, e)
	}
	adm := kadm.NewClient(cl)
	waitFor(t, 30*time.Second, name+" to have a leader and a full ISR", func() error {
		md, err := adm.Metadata(ctxT(t, 10*time.Second), name)
		if err != nil {
			return err
		}
		td := md.Topics[name]
		if td.Err != nil || len(td.Partitions) != 1 {
			return fmt.Errorf("%v %d partitions", td.Err, len(td.Partitions))
		}
		if p := td.Partitions[0]; p.Leader < 0 || len(p.ISR) != len(replicas) {
			return fmt.Errorf("leader %d isr %v", p.Leader, p.ISR)
		}
		return nil
	})
}

// produceTo writes n records "<topic>-<i>" with acks=all.
func produceTo(t *testing.T, cl *kgo.Client, topic string, n int) {
	t.Helper()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "%s-%d", topic, i)})
	}
	if err := cl.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// consumeFrom reads n records of topic from the start, bootstrapped on
// node 1 (which the test never stops).
func consumeFrom(t *testing.T, c *Cluster, topic string, n int) []*kgo.Record {
	t.Helper()
	return consumeFromAddr(t, c, c.Node(1).Addr, topic, n)
}

// consumeFromAddr reads n records of topic from the start, bootstrapped
// on addr.
func consumeFromAddr(t *testing.T, c *Cluster, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl := c.Client([]string{addr}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx := ctxT(t, 60*time.Second)
	var recs []*kgo.Record
	for len(recs) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %s", len(recs), n, topic)
		}
		recs = append(recs, fs.Records()...)
	}
	return recs
}

// TestMixedReassign: reassignment across kinds. kgo-controller: a
// kgo-broker controller reassigns partitions between Apache Kafka 4.4
// brokers (2, 3) and a kgo-broker broker (4); the request goes to a Kafka
// broker, which forwards it in an Envelope, and Kafka's brokers act on the
// controller's PartitionChangeRecords (adding replicas fetch, the leader's
// AlterPartition completes, removed replicas stop). kafka-controller: the
// same with Kafka's controller and kgo-broker brokers 2 and 3 beside Kafka
// broker 4. RF=1 on broker 2 moves to brokers 3 and 4 (the leader is
// removed), then back to broker 2 alone; the records are read back each
// time with the old replicas stopped.
func TestMixedReassign(t *testing.T) {
	t.Run("kgo-controller", func(t *testing.T) {
		mixedReassign(t, startMixed(t,
			mixedSpec{ID: 1, Kind: kindKgo, Controller: true},
			mixedSpec{ID: 2, Kind: kindKafka}, mixedSpec{ID: 3, Kind: kindKafka}, mixedSpec{ID: 4, Kind: kindKgo}))
	})
	t.Run("kafka-controller", func(t *testing.T) {
		mixedReassign(t, startMixed(t,
			mixedSpec{ID: 1, Kind: kindKafka, Controller: true},
			mixedSpec{ID: 2, Kind: kindKgo}, mixedSpec{ID: 3, Kind: kindKgo}, mixedSpec{ID: 4, Kind: kindKafka}))
	})
}

func mixedReassign(t *testing.T, c *mixedCluster) {
	const topic, n = "mx-reassign", 100
	cl := c.client(t, []*mixedNode{c.node(2)})
	createAssignedTopic(t, cl, topic, []int32{2})
	produceTo(t, cl, topic, n)
	reassignAndWait := func(via *mixedNode, replicas []int32) {
		t.Helper()
		vcl := c.client(t, []*mixedNode{via})
		if got := alterReassignments(t, vcl, 1, true, topic, kmsg.AlterPartitionAssignmentsRequestTopicPartition{Partition: 0, Replicas: replicas}); !slices.Equal(got, []string{"NONE"}) {
			t.Fatalf("reassign to %v: %q", replicas, got)
		}
		waitFor(t, 120*time.Second, fmt.Sprintf("%s on %v", topic, replicas), func() error {
			resp, err := kmsg.NewPtrListPartitionReassignmentsRequest().RequestWith(ctxT(t, 10*time.Second), vcl)
			if err != nil {
				return err
			}
			if len(resp.Topics) != 0 {
				return fmt.Errorf("still reassigning: %+v", resp.Topics)
			}
			md, err := metadataFrom(via.Addr, topic)
			if err != nil {
				return err
			}
			p := md.Topics[0].Partitions[0]
			if !slices.Equal(p.Replicas, replicas) || len(p.ISR) != len(replicas) || !slices.Contains(replicas, p.Leader) {
				return fmt.Errorf("replicas %v isr %v leader %d", p.Replicas, p.ISR, p.Leader)
			}
			return nil
		})
	}
	readBack := func(via *mixedNode) {
		t.Helper()
		ccl := c.client(t, []*mixedNode{via}, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		ctx := ctxT(t, 60*time.Second)
		var recs []*kgo.Record
		for len(recs) < n {
			fs := ccl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("read %d of %d records through node %d", len(recs), n, via.ID)
			}
			recs = append(recs, fs.Records()...)
		}
		for i, r := range recs {
			if w := fmt.Sprintf("%s-%d", topic, i); string(r.Value) != w {
				t.Fatalf("record %d: %q, want %q", i, r.Value, w)
			}
		}
	}
	reassignAndWait(c.node(2), []int32{3, 4})
	c.node(2).Kill()
	readBack(c.node(4))
	c.node(2).Start()
	c.waitBrokers(3 * readyTimeout())
	reassignAndWait(c.node(4), []int32{2})
	c.node(3).Kill()
	c.node(4).Kill()
	readBack(c.node(2))
}
