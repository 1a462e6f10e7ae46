//go:build integration

package integration

// Replication between brokers (replication/fetcher*.go, isr.go) on three
// combined kgo-broker processes: followers fetch from the leader, acks=all
// waits for the ISR, a killed leader is replaced by an ISR member without
// losing an acknowledged record, and the killed broker catches up and
// rejoins the ISR when it comes back.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/storage"
)

// describeIsr runs kafka-topics.sh --describe and returns partition 0's
// leader and ISR.
func describeIsr(t *testing.T, addr, topic string) (int32, []int32, string) {
	t.Helper()
	r := MustKafkaTool(t, RunOpts{}, "kafka-topics.sh", "--bootstrap-server", addr, "--describe", "--topic", topic)
	for _, l := range lines(r.Stdout) {
		if !strings.Contains(l, "Partition: 0") {
			continue
		}
		leader, isr := int32(-1), []int32(nil)
		for _, f := range strings.Split(l, "\t") {
			f = strings.TrimSpace(f)
			switch {
			case strings.HasPrefix(f, "Leader: "):
				if n, err := strconv.Atoi(strings.TrimPrefix(f, "Leader: ")); err == nil {
					leader = int32(n)
				}
			case strings.HasPrefix(f, "Isr: "):
				for _, s := range strings.Split(strings.TrimPrefix(f, "Isr: "), ",") {
					if n, err := strconv.Atoi(s); err == nil {
						isr = append(isr, int32(n))
					}
				}
			}
		}
		slices.Sort(isr)
		return leader, isr, l
	}
	t.Fatalf("kafka-topics.sh --describe: no partition 0:\n%s", r.Stdout)
	return -1, nil, ""
}

// TestReplicationLeaderFailover: an RF=3, min.insync.replicas=2 topic on 3
// combined nodes. acks=all produce completes once all three have the
// records; the leader is killed with SIGKILL while a producer keeps going;
// a new leader is elected from the ISR, no acknowledged record is lost, and
// the killed broker, restarted, catches up and rejoins the ISR, as
// kafka-topics.sh --describe shows.
func TestReplicationLeaderFailover(t *testing.T) {
	requireKafkaTools(t)
	c := StartCluster(t, ClusterOptions{Combined: 3, Overrides: map[string]string{
		"replica.lag.time.max.ms":  "5000",
		"replica.fetch.backoff.ms": "200",
	}})
	const topic = "it-replication"
	adm := kadm.NewClient(c.Client(nil))
	cr, err := adm.CreateTopic(ctxT(t, 30*time.Second), 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err == nil {
		err = cr.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	waitLeaders(t, c, topic, 1)

	var leader int32
	var isr []int32
	var row string
	waitFor(t, 30*time.Second, "ISR 1,2,3", func() error {
		leader, isr, row = describeIsr(t, c.Node(1).Addr, topic)
		if !slices.Equal(isr, []int32{1, 2, 3}) {
			return fmt.Errorf("%s", row)
		}
		return nil
	})
	t.Logf("before: %s", row)

	// acks=all through the whole ISR.
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		next  int
	)
	pcl := c.Client(nil, kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(60*time.Second), kgo.ProducerLinger(0))
	produce := func(n int) error {
		var recs []*kgo.Record
		mu.Lock()
		for range n {
			recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf("r%05d", next))})
			next++
		}
		mu.Unlock()
		res := pcl.ProduceSync(ctxT(t, 90*time.Second), recs...)
		mu.Lock()
		defer mu.Unlock()
		for _, r := range res {
			if r.Err == nil {
				acked[string(r.Record.Value)] = true
			}
		}
		return res.FirstErr()
	}
	start := time.Now()
	for range 10 {
		if err := produce(50); err != nil {
			t.Fatalf("produce acks=all RF=3: %v", err)
		}
	}
	t.Logf("MEASURE 500 records acks=all RF=3 in 10 sync batches: %v", time.Since(start).Round(time.Millisecond))

	// Kill the leader while a producer keeps producing.
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
				t.Logf("produce during failover: %v", err)
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	killed := c.Node(leader)
	killedAt := time.Now()
	killed.Kill()
	t.Logf("killed leader %d", leader)

	other := c.Node(leader%3 + 1)
	var newLeader int32
	waitFor(t, 60*time.Second, "a new leader from the ISR", func() error {
		newLeader, isr, row = describeIsr(t, other.Addr, topic)
		if newLeader < 0 || newLeader == leader || slices.Contains(isr, leader) {
			return fmt.Errorf("%s", row)
		}
		return nil
	})
	t.Logf("after the kill (%v): %s", time.Since(killedAt).Round(time.Millisecond), row)
	if !slices.Contains([]int32{1, 2, 3}, newLeader) || !slices.Equal(isr, slices.DeleteFunc([]int32{1, 2, 3}, func(r int32) bool { return r == leader })) {
		t.Errorf("after the kill: leader %d ISR %v, want an ISR member and the two survivors", newLeader, isr)
	}
	// Producing goes on with the new leader.
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if err := produce(50); err != nil {
		t.Fatalf("produce acks=all after failover: %v", err)
	}

	// The killed broker comes back, catches up and rejoins the ISR.
	killed.Start()
	c.WaitNodeReady(killed, readyTimeout())
	rejoinStart := time.Now()
	waitFor(t, 60*time.Second, "the restarted broker back in the ISR", func() error {
		_, isr, row = describeIsr(t, other.Addr, topic)
		if !slices.Equal(isr, []int32{1, 2, 3}) {
			return fmt.Errorf("%s", row)
		}
		return nil
	})
	t.Logf("after the restart (rejoined in %v): %s", time.Since(rejoinStart).Round(time.Millisecond), row)
	if err := produce(50); err != nil {
		t.Fatalf("produce acks=all with the full ISR again: %v", err)
	}

	// No acknowledged record is lost: read everything back, once through a
	// survivor and once preferring the restarted broker's copy.
	mu.Lock()
	want := len(acked)
	mu.Unlock()
	t.Logf("%d records acknowledged of %d sent", want, next)
	got := consumeAll(t, other.Broker, topic, want, 60*time.Second)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
	}
	var lost []string
	for v := range acked {
		if !seen[v] {
			lost = append(lost, v)
		}
	}
	if len(lost) > 0 {
		slices.Sort(lost)
		t.Fatalf("%d acknowledged records lost, e.g. %v", len(lost), lost[:min(10, len(lost))])
	}

	// The restarted broker's own copy holds every acknowledged record: read
	// it as a consumer fetching from a follower (v11+) up to its high
	// watermark, once that reaches the leader's end offset.
	ends, err := adm.ListEndOffsets(ctxT(t, 30*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	var copyVals map[string]bool
	waitFor(t, 60*time.Second, "the restarted broker's copy", func() error {
		var err error
		copyVals, err = readReplica(killed.Addr, topic, end.Offset)
		return err
	})
	for v := range acked {
		if !copyVals[v] {
			t.Fatalf("acknowledged record %s missing from the restarted broker's log", v)
		}
	}
	t.Logf("end offset %d; %d records read through node %d, %d from node %d's own log", end.Offset, len(got), other.ID, len(copyVals), killed.ID)
}

// readReplica reads partition 0 of topic from the broker at addr (leader or
// follower) up to end, and returns the record values.
func readReplica(addr, topic string, end int64) (map[string]bool, error) {
	cl, err := protocol.Dial(context.Background(), addr, "it-read-replica")
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	vals := map[string]bool{}
	for off := int64(0); off < end; {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.SessionEpoch = -1, 100, 1, 8<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch, rp.LogStartOffset = off, 4<<20, -1, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		raw, err := cl.RequestVersion(ctx, req, 12)
		cancel()
		if err != nil {
			return nil, err
		}
		resp := raw.(*kmsg.FetchResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return nil, fmt.Errorf("fetch answer %+v", resp)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			return nil, kerr.ErrorForCode(p.ErrorCode)
		}
		recs, err := storage.DecodeRecords(p.RecordBatches)
		if err != nil {
			return nil, err
		}
		if len(recs) == 0 {
			return nil, fmt.Errorf("at offset %d of %d (high watermark %d)", off, end, p.HighWatermark)
		}
		for _, r := range recs {
			if r.Offset >= off {
				vals[string(r.Value)] = true
				off = r.Offset + 1
			}
		}
	}
	return vals, nil
}
