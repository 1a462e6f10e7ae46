//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// jbodCluster starts three combined nodes; node 1 has two log dirs (its
// DataDir, which holds the metadata log, and data2) and a disk fault
// control file (cmd/kgo-broker/diskfault_invariants.go). It returns the
// cluster, node 1's second dir and its control file.
func jbodCluster(t *testing.T, overrides map[string]string) (*Cluster, string, string) {
	t.Helper()
	if why := diskHookUnavailable(); why != "" {
		t.Skip(why)
	}
	ctl := filepath.Join(t.TempDir(), "disk-fault")
	c := StartCluster(t, ClusterOptions{
		Combined:  3,
		Overrides: overrides,
		NodeDirOverrides: func(id int32, dir string) map[string]string {
			if id != 1 {
				return nil
			}
			return map[string]string{"log.dirs": filepath.Join(dir, "data") + "," + filepath.Join(dir, "data2")}
		},
		NodeEnv: func(id int32) []string {
			if id != 1 {
				return nil
			}
			return []string{diskFaultEnv + "=" + ctl}
		},
	})
	return c, filepath.Join(c.Node(1).Dir, "data2"), ctl
}

// createAssigned creates topic with one partition per replica list.
func createAssigned(t *testing.T, addr, topic string, assignment ...[]int32) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for i, rs := range assignment {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), rs
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 30*time.Second), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// partitionStates returns each partition's leader and ISR from Metadata.
func partitionStates(addr, topic string) (map[int32]int32, map[int32][]int32, error) {
	md, err := metadataFrom(addr, topic)
	if err != nil {
		return nil, nil, err
	}
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode != 0 {
		return nil, nil, fmt.Errorf("topic %s not in metadata", topic)
	}
	leaders, isrs := map[int32]int32{}, map[int32][]int32{}
	for _, p := range md.Topics[0].Partitions {
		leaders[p.Partition], isrs[p.Partition] = p.Leader, p.ISR
	}
	return leaders, isrs, nil
}

func setDiskMode(t *testing.T, ctl, mode string) {
	t.Helper()
	if err := os.WriteFile(ctl+".tmp", []byte(mode+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(ctl+".tmp", ctl); err != nil {
		t.Fatal(err)
	}
	time.Sleep(diskFaultSettle)
}

func jbodProduce(ctx context.Context, cl *kgo.Client, topic string, p int32, value string) error {
	r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(value)}
	return cl.ProduceSync(ctx, r).FirstErr()
}

// TestJBODLogDirFailure (KIP-858): node 1 leads every partition of a
// replicated topic, from two log dirs. When one of them fails (every write
// under it fails with EIO), node 1 keeps running and serving the other
// dir's partitions, reports the failed dir in its heartbeats, and the
// controller moves the failed dir's partitions to another leader and out
// of node 1's ISR (ReplicationControlManager.handleDirectoriesOffline), so a
// producer moves there instead of getting KAFKA_STORAGE_ERROR until node 1
// restarts. kafka-topics.sh --describe shows the new leaders.
func TestJBODLogDirFailure(t *testing.T) {
	c, data2, ctl := jbodCluster(t, nil)
	n1 := c.Node(1)
	const topic = "jbod-fail"
	var assignment [][]int32
	for range 6 {
		assignment = append(assignment, []int32{1, 2, 3})
	}
	createAssigned(t, n1.Addr, topic, assignment...)
	cl := c.Client(c.BrokerAddrs(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	waitFor(t, 30*time.Second, "node 1 leading every partition with a full ISR", func() error {
		leaders, isrs, err := partitionStates(n1.Addr, topic)
		if err != nil {
			return err
		}
		for p := range int32(6) {
			if leaders[p] != 1 || len(isrs[p]) != 3 {
				return fmt.Errorf("partition %d: leader %d ISR %v", p, leaders[p], isrs[p])
			}
		}
		return nil
	})
	for p := range int32(6) {
		if err := jbodProduce(ctxT(t, 30*time.Second), cl, topic, p, fmt.Sprintf("before-%d", p)); err != nil {
			t.Fatalf("produce to %d: %v", p, err)
		}
	}
	failed := partitionsIn(t, data2, topic)
	healthy := partitionsIn(t, filepath.Join(n1.Dir, "data"), topic)
	if len(failed) == 0 || len(healthy) == 0 {
		t.Fatalf("placement on node 1: %v in data, %v in data2", healthy, failed)
	}
	t.Logf("node 1: partitions %v in data, %v in data2", healthy, failed)

	setDiskMode(t, ctl, "fail "+data2)
	start := time.Now()
	// The first write under data2 fails; the producer retries
	// KAFKA_STORAGE_ERROR until the leadership has moved.
	for _, p := range failed {
		if err := jbodProduce(ctxT(t, 60*time.Second), cl, topic, p, fmt.Sprintf("after-%d", p)); err != nil {
			t.Fatalf("produce to partition %d of the failed dir: %v\n%s", p, err, n1.LogTail(30))
		}
	}
	resumed := time.Since(start)
	t.Logf("MEASURE jbod-dir-failure produce-resumed=%v", resumed.Round(time.Millisecond))
	if resumed > 20*time.Second {
		// A follower that cannot write is not re-added to the ISR, so an
		// acks=all produce does not wait replica.lag.time.max.ms for it.
		t.Errorf("producing to the failed dir's partitions took %v", resumed)
	}
	waitFor(t, 30*time.Second, "the failed dir's partitions to leave node 1", func() error {
		leaders, isrs, err := partitionStates(c.Node(2).Addr, topic)
		if err != nil {
			return err
		}
		for _, p := range failed {
			if leaders[p] == 1 || leaders[p] < 0 || slices.Contains(isrs[p], 1) {
				return fmt.Errorf("partition %d: leader %d ISR %v", p, leaders[p], isrs[p])
			}
		}
		for _, p := range healthy {
			if leaders[p] != 1 {
				return fmt.Errorf("healthy partition %d: leader %d", p, leaders[p])
			}
		}
		return nil
	})
	if !isClosed(exitedChan(n1)) {
		t.Logf("node 1 still running, as Kafka's broker with a healthy dir left")
	} else {
		t.Fatalf("node 1 exited:\n%s", n1.LogTail(40))
	}
	if log := n1.Log(); !strings.Contains(log, "log dir is offline") {
		t.Errorf("node 1's log does not say the dir went offline:\n%s", n1.LogTail(30))
	}
	// The healthy dir's partitions are still led and written by node 1.
	for _, p := range healthy {
		if err := jbodProduce(ctxT(t, 30*time.Second), cl, topic, p, fmt.Sprintf("after-%d", p)); err != nil {
			t.Fatalf("produce to healthy partition %d: %v", p, err)
		}
	}
	// Every record acknowledged before and after is there.
	got := map[string]bool{}
	for _, r := range consumeAll(t, c.Node(2).Broker, topic, 12, 60*time.Second) {
		got[string(r.Value)] = true
	}
	for p := range 6 {
		for _, v := range []string{"before-%d", "after-%d"} {
			if k := fmt.Sprintf(v, p); !got[k] {
				t.Errorf("record %s missing (got %v)", k, got)
			}
		}
	}
	r := MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", c.Node(2).Addr, "--describe", "--topic", topic)
	for _, line := range lines(r.Stdout) {
		for _, p := range failed {
			if strings.Contains(line, fmt.Sprintf("Partition: %d\t", p)) && strings.Contains(line, "Leader: 1\t") {
				t.Errorf("kafka-topics.sh --describe: partition %d still led by node 1: %s", p, line)
			}
		}
	}
	t.Logf("kafka-topics.sh --describe:\n%s", r.Stdout)

	// Restarted with data2 still failing, node 1 registers without it
	// (the dir goes offline at startup): the failed dir's partitions stay
	// led elsewhere and out of node 1's ISR (LeaderAcceptor: its replica's
	// dir is not online), the healthy ones come back to it.
	n1.Restart()
	c.WaitNodeReady(n1, 60*time.Second)
	waitFor(t, 60*time.Second, "node 1 back in the healthy partitions' ISR only", func() error {
		leaders, isrs, err := partitionStates(c.Node(2).Addr, topic)
		if err != nil {
			return err
		}
		for _, p := range failed {
			if leaders[p] == 1 || leaders[p] < 0 || slices.Contains(isrs[p], 1) {
				return fmt.Errorf("failed-dir partition %d: leader %d ISR %v", p, leaders[p], isrs[p])
			}
		}
		for _, p := range healthy {
			if !slices.Contains(isrs[p], 1) {
				return fmt.Errorf("healthy partition %d: ISR %v", p, isrs[p])
			}
		}
		return nil
	})
	if log := n1.Log(); !strings.Contains(log, "error while loading log dir; it is offline") {
		t.Errorf("node 1 did not start with data2 offline:\n%s", n1.LogTail(30))
	}
	for _, p := range failed {
		if err := jbodProduce(ctxT(t, 30*time.Second), cl, topic, p, fmt.Sprintf("again-%d", p)); err != nil {
			t.Fatalf("produce to partition %d with node 1's dir still failed: %v", p, err)
		}
	}

	// Restarted on a healthy disk, node 1 registers data2 again and its
	// replicas there rejoin every ISR.
	setDiskMode(t, ctl, "ok")
	n1.Restart()
	c.WaitNodeReady(n1, 60*time.Second)
	waitFor(t, 60*time.Second, "node 1 back in every ISR", func() error {
		_, isrs, err := partitionStates(c.Node(2).Addr, topic)
		if err != nil {
			return err
		}
		for p := range int32(6) {
			if !slices.Contains(isrs[p], 1) {
				return fmt.Errorf("partition %d: ISR %v", p, isrs[p])
			}
		}
		return nil
	})
}

// logDirsDescribe runs kafka-log-dirs.sh --describe for topic and returns,
// per log dir, the partitions listed there with their isFuture flag.
func logDirsDescribe(t *testing.T, b *Broker, topic string) map[string]map[string]bool {
	t.Helper()
	r := MustKafkaTool(t, RunOpts{}, "kafka-log-dirs.sh", "--bootstrap-server", b.Addr, "--describe", "--topic-list", topic)
	var out struct {
		Brokers []struct {
			LogDirs []struct {
				LogDir     string `json:"logDir"`
				Error      any    `json:"error"`
				Partitions []struct {
					Partition string `json:"partition"`
					IsFuture  bool   `json:"isFuture"`
				} `json:"partitions"`
			} `json:"logDirs"`
		} `json:"brokers"`
	}
	for _, l := range lines(r.Stdout) {
		if strings.HasPrefix(l, "{") {
			if err := json.Unmarshal([]byte(l), &out); err != nil {
				t.Fatalf("kafka-log-dirs.sh output: %v\n%s", err, r.Stdout)
			}
		}
	}
	got := map[string]map[string]bool{}
	for _, br := range out.Brokers {
		for _, d := range br.LogDirs {
			got[d.LogDir] = map[string]bool{}
			for _, p := range d.Partitions {
				got[d.LogDir][p.Partition] = p.IsFuture
			}
		}
	}
	return got
}

// TestJBODAlterReplicaLogDirs (KIP-113): kafka-reassign-partitions.sh
// --execute with "log_dirs" moves a replica to the broker's other log dir
// online (AlterReplicaLogDirs: a future replica copied and swapped in);
// kafka-log-dirs.sh --describe shows it there, producing and consuming go on,
// and every record is there after a restart.
func TestJBODAlterReplicaLogDirs(t *testing.T) {
	t.Parallel()
	const topic, perPartition = "jbod-move", 200
	b, data2 := twoDirBrokerWithTopic(t, topic, perPartition)
	data1 := b.DataDir
	abs := func(d string) string {
		a, err := filepath.Abs(d)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	in1 := partitionsIn(t, data1, topic)
	if len(in1) == 0 {
		t.Fatalf("no partition of %s in %s", topic, data1)
	}
	p := in1[0]
	plan := fmt.Sprintf(`{"version":1,"partitions":[{"topic":%q,"partition":%d,"replicas":[1],"log_dirs":[%q]}]}`, topic, p, abs(data2))
	planFile := filepath.Join(t.TempDir(), "reassign.json")
	if err := os.WriteFile(planFile, []byte(plan), 0o644); err != nil {
		t.Fatal(err)
	}
	r := MustKafkaTool(t, RunOpts{}, "kafka-reassign-partitions.sh", "--bootstrap-server", b.Addr,
		"--reassignment-json-file", planFile, "--execute")
	t.Logf("kafka-reassign-partitions.sh --execute:\n%s", r.Stdout)
	key := fmt.Sprintf("%s-%d", topic, p)
	waitFor(t, 60*time.Second, key+" in "+data2, func() error {
		got := logDirsDescribe(t, b, topic)
		if future, ok := got[abs(data2)][key]; !ok || future {
			return fmt.Errorf("%s: %v", data2, got[abs(data2)])
		}
		if _, ok := got[abs(data1)][key]; ok {
			return fmt.Errorf("still in %s", data1)
		}
		return nil
	})
	if got := partitionsIn(t, data2, topic); !slices.Contains(got, p) {
		t.Fatalf("partition directories in data2: %v", got)
	}
	vr := MustKafkaTool(t, RunOpts{}, "kafka-reassign-partitions.sh", "--bootstrap-server", b.Addr,
		"--reassignment-json-file", planFile, "--verify")
	t.Logf("kafka-reassign-partitions.sh --verify:\n%s", vr.Stdout)
	if !strings.Contains(vr.Stdout, "is complete") {
		t.Errorf("--verify does not report the move complete:\n%s", vr.Stdout)
	}
	// Writes go on in the new dir.
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	rec := kgo.StringRecord(fmt.Sprintf("p%d-%d", p, perPartition))
	rec.Partition = p
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), rec).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	check := func(when string) {
		t.Helper()
		got := consumePartition(t, b, topic, p, perPartition+1)
		if len(got) != perPartition+1 {
			t.Fatalf("%s: %d records", when, len(got))
		}
		for i, v := range got {
			if v != fmt.Sprintf("p%d-%d", p, i) {
				t.Fatalf("%s: record %d is %q", when, i, v)
			}
		}
	}
	check("after the move")
	if code := b.Stop(0); code != 0 {
		t.Fatalf("exit code %d", code)
	}
	b.Start()
	b.WaitReady()
	check("after a restart")
	if got := logDirsDescribe(t, b, topic); len(got[abs(data2)]) == 0 || got[abs(data2)][key] {
		t.Fatalf("after a restart: %v", got)
	}
}

// describeCordoned returns DescribeLogDirs v5's is_cordoned by dir.
func describeCordoned(t *testing.T, b *Broker) map[string]bool {
	t.Helper()
	cl := b.Client()
	defer cl.Close()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	req.Version = 5
	// Straight to the broker: kgo's DescribeLogDirs sharding does not carry
	// is_cordoned into its merged answer.
	raw, err := cl.Broker(1).Request(ctxT(t, 10*time.Second), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := raw.(*kmsg.DescribeLogDirsResponse)
	out := map[string]bool{}
	for _, d := range resp.Dirs {
		out[d.Dir] = d.IsCordoned
	}
	return out
}

// TestJBODCordonedLogDirs (KIP-1066): with data2 cordoned (static
// cordoned.log.dirs), DescribeLogDirs v5 marks it, new partitions go to the
// other dir, and AlterReplicaLogDirs into it is INVALID_REPLICA_ASSIGNMENT.
// Cordoning every dir dynamically (kafka-configs.sh) makes CreateTopics fail
// with INVALID_REPLICATION_FACTOR on this one-broker cluster until the
// config is deleted again.
func TestJBODCordonedLogDirs(t *testing.T) {
	t.Parallel()
	b := NewBroker(t, BrokerOptions{})
	data2 := filepath.Join(b.Dir, "data2")
	b.opts.Overrides = map[string]string{"log.dirs": b.DataDir + "," + data2, "cordoned.log.dirs": data2}
	b.Start()
	b.WaitReady()
	abs := func(d string) string { a, _ := filepath.Abs(d); return a }
	if got := describeCordoned(t, b); !got[abs(data2)] || got[abs(b.DataDir)] {
		t.Fatalf("is_cordoned: %v", got)
	}
	const topic = "jbod-cordon"
	createTopic(t, b, topic, 4, nil)
	if got := partitionsIn(t, data2, topic); len(got) != 0 {
		t.Fatalf("partitions %v created in the cordoned dir", got)
	}
	cl := b.Client()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	d := kmsg.NewAlterReplicaLogDirsRequestDir()
	d.Dir = abs(data2)
	d.Topics = []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: topic, Partitions: []int32{0}}}
	req.Dirs = append(req.Dirs, d)
	waitFor(t, 30*time.Second, "AlterReplicaLogDirs into the cordoned dir to be refused", func() error {
		// REPLICA_NOT_AVAILABLE until the broker has created the replica
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidReplicaAssignment.Code {
			return kerr.ErrorForCode(code)
		}
		return nil
	})
	cl.Close()

	MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--entity-type", "brokers",
		"--entity-name", "1", "--alter", "--add-config", "cordoned.log.dirs=*")
	waitFor(t, 30*time.Second, "every dir cordoned", func() error {
		if got := describeCordoned(t, b); !got[abs(b.DataDir)] || !got[abs(data2)] {
			return fmt.Errorf("is_cordoned: %v", got)
		}
		return nil
	})
	waitFor(t, 30*time.Second, "CreateTopics to fail with every dir cordoned", func() error {
		r := KafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", b.Addr, "--create", "--topic", topic+"-2")
		if r.ExitCode == 0 {
			return fmt.Errorf("created %s with every dir cordoned", topic+"-2")
		}
		if !strings.Contains(r.Stdout+r.Stderr, "InvalidReplicationFactorException") {
			return fmt.Errorf("kafka-topics.sh --create: %s", r)
		}
		return nil
	})
	MustKafkaTool(t, RunOpts{}, "kafka-configs.sh", "--bootstrap-server", b.Addr, "--entity-type", "brokers",
		"--entity-name", "1", "--alter", "--delete-config", "cordoned.log.dirs")
	waitFor(t, 30*time.Second, "CreateTopics to work again", func() error {
		if r := KafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", b.Addr, "--create", "--topic", topic+"-3"); r.ExitCode != 0 {
			return fmt.Errorf("%s", r)
		}
		return nil
	})
	// The static value is back after the dynamic one was deleted.
	if got := describeCordoned(t, b); !got[abs(data2)] || got[abs(b.DataDir)] {
		t.Fatalf("is_cordoned after the delete: %v", got)
	}
}

// TestJBODMoveUnderLoad (KIP-113): in a 3-node cluster, node 1's replicas
// of a topic move to its other log dir (AlterReplicaLogDirs, the leader's
// and followers' alike) while an acks=all producer writes to every
// partition; every acknowledged record is read back afterwards, from node 1
// too.
func TestJBODMoveUnderLoad(t *testing.T) {
	c, data2, _ := jbodCluster(t, nil)
	n1 := c.Node(1)
	data1 := filepath.Join(n1.Dir, "data")
	const topic, parts = "jbod-load", 4
	createAssigned(t, n1.Addr, topic, []int32{1, 2, 3}, []int32{2, 1, 3}, []int32{1, 3, 2}, []int32{3, 2, 1})
	waitFor(t, 30*time.Second, "full ISRs", func() error {
		_, isrs, err := partitionStates(n1.Addr, topic)
		if err != nil {
			return err
		}
		for p := range int32(parts) {
			if len(isrs[p]) != 3 {
				return fmt.Errorf("partition %d: ISR %v", p, isrs[p])
			}
		}
		return nil
	})
	cl := c.Client(c.BrokerAddrs(), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	acked := make(chan string, 1<<16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ctx.Err() == nil; i++ {
			r := &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: []byte(fmt.Sprintf("v%d", i))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err == nil {
				acked <- string(r.Value)
			}
		}
	}()
	time.Sleep(time.Second) // some data to copy first
	// Move every replica node 1 has to the dir it is not in.
	abs := func(d string) string { a, _ := filepath.Abs(d); return a }
	where := map[int32]string{}
	for _, p := range partitionsIn(t, data1, topic) {
		where[p] = abs(data2)
	}
	for _, p := range partitionsIn(t, data2, topic) {
		where[p] = abs(data1)
	}
	ncl := n1.Client()
	req := kmsg.NewPtrAlterReplicaLogDirsRequest()
	for p, dir := range where {
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = dir
		d.Topics = []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: topic, Partitions: []int32{p}}}
		req.Dirs = append(req.Dirs, d)
	}
	raw, err := ncl.Broker(1).Request(ctxT(t, 10*time.Second), req)
	ncl.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range raw.(*kmsg.AlterReplicaLogDirsResponse).Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("AlterReplicaLogDirs %s-%d: %v", rt.Topic, rp.Partition, kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	waitFor(t, 60*time.Second, "every replica of node 1 moved", func() error {
		got := logDirsDescribe(t, n1.Broker, topic)
		for p, dir := range where {
			if future, ok := got[dir][fmt.Sprintf("%s-%d", topic, p)]; !ok || future {
				return fmt.Errorf("partition %d not (only) in %s yet: %v", p, dir, got)
			}
		}
		return nil
	})
	time.Sleep(time.Second) // writes go on after the swap
	cancel()
	<-done
	close(acked)
	want := map[string]bool{}
	for v := range acked {
		want[v] = true
	}
	t.Logf("MEASURE jbod-move-under-load acked=%d moved=%d", len(want), len(where))
	if len(want) == 0 {
		t.Fatal("nothing acknowledged")
	}
	for _, from := range []*ClusterNode{n1, c.Node(2)} {
		got := map[string]bool{}
		for _, r := range consumeAll(t, from.Broker, topic, len(want), 60*time.Second) {
			got[string(r.Value)] = true
		}
		for v := range want {
			if !got[v] {
				t.Fatalf("acknowledged record %s missing (read through node %d, %d of %d)", v, from.ID, len(got), len(want))
			}
		}
	}
	// Node 1 still serves reads from the moved logs after a restart.
	n1.Restart()
	c.WaitNodeReady(n1, 60*time.Second)
	if got := logDirsDescribe(t, n1.Broker, topic); len(got[abs(data1)])+len(got[abs(data2)]) != parts {
		t.Fatalf("after a restart: %v", got)
	}
}
