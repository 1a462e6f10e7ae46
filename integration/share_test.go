//go:build integration

package integration

// Share groups (KIP-932, issue 17) driven by Apache Kafka 4.4's own
// KafkaShareConsumer (integration/java/ShareTool.java) and its tools
// (kafka-configs.sh --entity-type groups, kafka-share-groups.sh): several
// consumers of one group share one partition's records, each record is
// accepted once, released records come back with a higher delivery count,
// rejected ones never come back, and a record released on every delivery is
// archived at the group's delivery count limit.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareOverrides are the broker settings of the share group tests: the
// share coordinator's state topic on a single node, as Kafka's own
// config/server.properties for one node sets it.
func shareOverrides(extra map[string]string) map[string]string {
	o := map[string]string{
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// setGroupConfig sets dynamic configs of a group (KIP-848/KIP-932 group
// configs) with kafka-configs.sh.
func setGroupConfig(t *testing.T, b *Broker, group string, kv ...string) {
	t.Helper()
	MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-configs.sh", "--bootstrap-server", b.Addr,
		"--alter", "--entity-type", "groups", "--entity-name", group, "--add-config", strings.Join(kv, ","))
}

// produceShareValues writes records with values v<from>..v<to-1> to partition 0
// of topic, in synchronous batches of per records, so that the partition
// holds many small batches (share consumers then acquire batch by batch).
func produceShareValues(t *testing.T, b *Broker, topic string, from, to, per int) {
	t.Helper()
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := from; i < to; i += per {
		var recs []*kgo.Record
		for j := i; j < min(i+per, to); j++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("k%d", j)), Value: []byte(fmt.Sprintf("v%d", j))})
		}
		if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
			t.Fatalf("producing v%d..: %v", i, err)
		}
	}
}

// runShareTool runs ShareTool <command> bootstrap=<addr> args... to completion.
func runShareTool(t testing.TB, timeout time.Duration, addr, command string, args ...string) javaRun {
	t.Helper()
	all := append([]string{command, "bootstrap=" + addr, fmt.Sprintf("deadline.ms=%d", (timeout - 5*time.Second).Milliseconds())}, args...)
	r := RunCommand(t, RunOpts{Timeout: timeout}, javaBin(), javaArgs(t, "384m", "ShareTool", all...)...)
	return javaRun{ToolResult: r, Events: parseEvents(r.Stdout)}
}

// shareDelivery is one delivery of a record to a share consumer.
type shareDelivery struct {
	consumer int
	offset   int64
	delivery int
	ack      string
}

// TestShareGroupJavaConsumers: three KafkaShareConsumers of one share group
// read one partition of 600 records. Every record is delivered; more than
// one consumer gets records; each accepted record is delivered exactly once
// with delivery count 1; the released ones are delivered twice (counts 1
// and 2) and then accepted; the rejected one once; the one released on every
// delivery exactly share.delivery.count.limit (2) times. After the run
// kafka-share-groups.sh describes the group's start offset past every record
// and lists it.
func TestShareGroupJavaConsumers(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	b := StartBroker(t, BrokerOptions{Overrides: shareOverrides(nil)})
	const topic, group, n = "it-share-java", "it-share-java-g", 600
	createTopic(t, b, topic, 1, nil)
	// Share groups start at the latest offset unless told otherwise
	// (share.auto.offset.reset, KIP-932).
	setGroupConfig(t, b, group, "share.auto.offset.reset=earliest", "share.delivery.count.limit=2")

	// The consumers join first and the records are written once all three
	// hold the partition: a member that joins within the group's
	// assignment interval (group.share.assignment.interval.ms, 1 s) of the
	// last target only gets the partition on a later heartbeat (every 5 s),
	// and one consumer can drain 600 records before that, on Kafka as here.
	release, reject, always := map[int]bool{5: true, 117: true, 433: true}, map[int]bool{9: true, 250: true}, 77
	done := make(chan javaRun, 1)
	go func() {
		done <- runShareTool(t, 150*time.Second, b.Addr, "consume", "topic="+topic, "group="+group,
			fmt.Sprint("expect=", n-1), "consumers=3", "release=5,117,433", "reject=9,250", fmt.Sprint("releasealways=", always),
			"c.max.poll.records=25")
	}()
	awaitShareAssigned(t, b, group, topic, 3, done)
	produceShareValues(t, b, topic, 0, n, 10)
	r := <-done
	if r.ExitCode != 0 || len(eventsOf(r.Events, "done")) == 0 {
		t.Fatalf("ShareTool consume failed: %s\n%s", javaFailure(r), tail(r.String(), 80))
	}
	if errs := eventsOf(r.Events, "commit-error"); len(errs) > 0 {
		t.Errorf("%d acknowledgement commits failed, first: %v", len(errs), errs[0])
	}
	byValue := map[int][]shareDelivery{}
	consumers := map[int]int{}
	for _, e := range eventsOf(r.Events, "record") {
		var i int
		if _, err := fmt.Sscanf(e.Str("value"), "v%d", &i); err != nil {
			t.Fatalf("record with value %q", e.Str("value"))
		}
		d := shareDelivery{consumer: int(e.Int("consumer")), offset: e.Int("offset"), delivery: int(e.Int("delivery")), ack: e.Str("ack")}
		byValue[i] = append(byValue[i], d)
		consumers[d.consumer]++
	}
	if len(consumers) < 2 {
		t.Errorf("records went to %d consumer(s) %v, want the partition shared by at least 2 of 3", len(consumers), consumers)
	}
	for i := 0; i < n; i++ {
		ds := byValue[i]
		var counts, acks []string
		for _, d := range ds {
			counts = append(counts, fmt.Sprint(d.delivery))
			acks = append(acks, d.ack)
		}
		got := fmt.Sprintf("deliveries %v acks %v", counts, acks)
		var want string
		switch {
		case i == always:
			want = "deliveries [1 2] acks [RELEASE RELEASE]"
		case release[i]:
			want = "deliveries [1 2] acks [RELEASE ACCEPT]"
		case reject[i]:
			want = "deliveries [1] acks [REJECT]"
		default:
			want = "deliveries [1] acks [ACCEPT]"
		}
		if got != want {
			t.Errorf("v%d (offset %d): %s, want %s", i, int64(i), got, want)
		}
		for _, d := range ds {
			if d.offset != int64(i) {
				t.Errorf("v%d delivered at offset %d, want %d", i, d.offset, i)
			}
		}
	}
	t.Logf("MEASURE share group: %d records over %d consumers %v", n, len(consumers), consumers)

	// The share group's state: every record is acknowledged or archived, so
	// the lag is 0 (KIP-1226). The persisted start offset may trail the last
	// acknowledged batch (Kafka 4.4 showed 540 of 600 here: acknowledged
	// batches above it are in the state's batches), so it is only bounded.
	waitFor(t, 30*time.Second, "kafka-share-groups.sh --describe to show lag 0", func() error {
		res := KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-share-groups.sh", "--bootstrap-server", b.Addr,
			"--describe", "--group", group)
		if res.ExitCode != 0 {
			return fmt.Errorf("exit %d: %s%s", res.ExitCode, res.Stdout, res.Stderr)
		}
		for _, l := range lines(res.Stdout) {
			f := strings.Fields(l)
			if len(f) >= 5 && f[0] == group && f[1] == topic && f[2] == "0" {
				if so := mustAtoi64(t, "START-OFFSET", f[3]); so <= 0 || so > n || f[4] != "0" {
					return fmt.Errorf("start offset %s lag %s:\n%s", f[3], f[4], res.Stdout)
				}
				return nil
			}
		}
		return fmt.Errorf("no row for %s partition 0:\n%s", topic, res.Stdout)
	})
	res := MustKafkaTool(t, RunOpts{Timeout: 60 * time.Second}, "kafka-share-groups.sh", "--bootstrap-server", b.Addr, "--list")
	if !containsLine(lines(res.Stdout), group) {
		t.Errorf("kafka-share-groups.sh --list does not list %s:\n%s", group, res.Stdout)
	}
}

// awaitShareAssigned waits until ShareGroupDescribe shows members members of
// group, each assigned partition 0 of topic. A run that ends first (done)
// fails the test with its output.
func awaitShareAssigned(t *testing.T, b *Broker, group, topic string, members int, done chan javaRun) {
	t.Helper()
	cl := b.Client()
	defer cl.Close()
	waitFor(t, 60*time.Second, fmt.Sprintf("%d members of %s assigned %s-0", members, group, topic), func() error {
		select {
		case r := <-done:
			t.Fatalf("ShareTool ended before its consumers were assigned: %s\n%s", javaFailure(r), tail(r.String(), 80))
		default:
		}
		req := kmsg.NewPtrShareGroupDescribeRequest()
		req.GroupIDs = []string{group}
		resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 || resp.Groups[0].ErrorCode != 0 {
			return fmt.Errorf("ShareGroupDescribe: %+v", resp.Groups)
		}
		assigned := 0
		for _, m := range resp.Groups[0].Members {
			for _, tp := range m.Assignment.TopicPartitions {
				if tp.Topic == topic && slices.Contains(tp.Partitions, 0) {
					assigned++
				}
			}
		}
		if assigned < members {
			return fmt.Errorf("%d of %d members hold %s-0 (%d members)", assigned, members, topic, len(resp.Groups[0].Members))
		}
		return nil
	})
}

func containsLine(ls []string, s string) bool {
	for _, l := range ls {
		if strings.TrimSpace(l) == s {
			return true
		}
	}
	return false
}

// shareAccepted returns, per value index, how often a run accepted it, and
// every value index it saw.
func shareAccepted(t *testing.T, r javaRun) (accepted map[int]int, seen map[int]bool) {
	t.Helper()
	accepted, seen = map[int]int{}, map[int]bool{}
	for _, e := range eventsOf(r.Events, "record") {
		var i int
		if _, err := fmt.Sscanf(e.Str("value"), "v%d", &i); err != nil {
			t.Fatalf("record with value %q", e.Str("value"))
		}
		seen[i] = true
		if e.Str("ack") == "ACCEPT" {
			accepted[i]++
		}
	}
	return accepted, seen
}

// TestShareGroupKillRestart: a share group consumes part of a partition
// (every acknowledgement committed), the node is killed with SIGKILL and
// restarted, and the group goes on. Every record is accepted exactly once
// over both runs: none that the first run had acknowledged is delivered
// again (its state was persisted in __share_group_state before the commit
// was answered) and none is lost.
func TestShareGroupKillRestart(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	b := StartBroker(t, BrokerOptions{Overrides: shareOverrides(nil)})
	const topic, group, n = "it-share-restart", "it-share-restart-g", 400
	createTopic(t, b, topic, 1, nil)
	setGroupConfig(t, b, group, "share.auto.offset.reset=earliest")
	produceShareValues(t, b, topic, 0, n, 10)

	first := runShareTool(t, 120*time.Second, b.Addr, "consume", "topic="+topic, "group="+group,
		fmt.Sprint("expect=", n), "consumers=2", "stopat=150", "c.max.poll.records=20")
	if first.ExitCode != 0 || len(eventsOf(first.Events, "done")) == 0 {
		t.Fatalf("first ShareTool run failed: %s\n%s", javaFailure(first), tail(first.String(), 80))
	}
	acc1, _ := shareAccepted(t, first)
	if len(acc1) < 150 || len(acc1) >= n {
		t.Fatalf("first run accepted %d values, want at least 150 and fewer than %d", len(acc1), n)
	}
	b.KillAndRestart()

	second := runShareTool(t, 150*time.Second, b.Addr, "consume", "topic="+topic, "group="+group,
		fmt.Sprint("expect=", n-len(acc1)), "consumers=2", "c.max.poll.records=20")
	if second.ExitCode != 0 || len(eventsOf(second.Events, "done")) == 0 {
		t.Fatalf("second ShareTool run failed: %s\n%s", javaFailure(second), tail(second.String(), 80))
	}
	acc2, seen2 := shareAccepted(t, second)
	for i := range acc1 {
		if seen2[i] {
			t.Errorf("v%d was accepted before the kill and delivered again after it", i)
		}
	}
	for i := 0; i < n; i++ {
		if got := acc1[i] + acc2[i]; got != 1 {
			t.Errorf("v%d accepted %d times over both runs, want 1", i, got)
		}
	}
	t.Logf("MEASURE share group kill -9: %d accepted before, %d after, 0 redelivered", len(acc1), len(acc2))
}

// TestShareGroupFranz: franz-go's share consumer (kgo.ShareGroup), two
// clients in one group over three partitions. Every record is accepted
// exactly once; the released ones come back once with delivery count 2.
func TestShareGroupFranz(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{Overrides: shareOverrides(nil)})
	const topic, group, n = "it-share-franz", "it-share-franz-g", 300
	createTopic(t, b, topic, 3, nil)
	setGroupConfig(t, b, group, "share.auto.offset.reset=earliest")
	if err := b.Client().ProduceSync(ctxT(t, 30*time.Second), recordsFor(topic, n)...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	release := map[string]bool{"v7": true, "v150": true, "v299": true}

	type delivery struct {
		client, count int32
		status        kgo.AckStatus
	}
	var (
		mu       sync.Mutex
		byValue  = map[string][]delivery{}
		accepted = 0
	)
	ctx := ctxT(t, 90*time.Second)
	var wg sync.WaitGroup
	for c := int32(0); c < 2; c++ {
		cl := b.Client(kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(20))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				finished := accepted >= n
				mu.Unlock()
				if finished || ctx.Err() != nil {
					return
				}
				// Short polls, so a client notices the end.
				pollCtx, cancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollRecords(pollCtx, 20)
				cancel()
				fs.EachError(func(tp string, p int32, err error) {
					if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
						t.Logf("client %d: share fetch error %s-%d: %v", c, tp, p, err)
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					v := string(r.Value)
					st := kgo.AckAccept
					mu.Lock()
					if release[v] && len(byValue[v]) == 0 {
						st = kgo.AckRelease
					} else {
						accepted++
					}
					byValue[v] = append(byValue[v], delivery{client: c, count: r.DeliveryCount(), status: st})
					mu.Unlock()
					r.Ack(st)
				})
				if err := cl.FlushAcks(ctx); err != nil && ctx.Err() == nil {
					t.Errorf("client %d: FlushAcks: %v", c, err)
				}
			}
		}()
	}
	wg.Wait()
	if accepted < n {
		t.Fatalf("accepted %d of %d records before the timeout", accepted, n)
	}
	clients := map[int32]int{}
	for i := 0; i < n; i++ {
		v := fmt.Sprintf("v%d", i)
		var got []string
		for _, d := range byValue[v] {
			got = append(got, fmt.Sprintf("%d:%s", d.count, d.status))
			clients[d.client]++
		}
		want := "[1:accept]"
		if release[v] {
			want = "[1:release 2:accept]"
		}
		if fmt.Sprint(got) != want {
			t.Errorf("%s: deliveries %v, want %s", v, got, want)
		}
	}
	if len(clients) < 2 {
		t.Errorf("records went to %d client(s) %v, want both", len(clients), clients)
	}
	t.Logf("MEASURE share group franz-go: %d records over clients %v", n, clients)
}
