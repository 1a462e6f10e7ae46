package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// End to end through a real node and franz-go: an idempotent producer
// (InitProducerId, acks=all), consumers pinned to every Fetch version
// (the zero-copy body), ListOffsets, OffsetForLeaderEpoch, DescribeLogDirs,
// and a long poll woken by a produce.
func TestReplicationEndToEnd(t *testing.T) {
	n := startNode(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	adm := kadm.NewClient(n.client(t))
	if resp, err := adm.CreateTopic(ctx, 3, 1, nil, "e2e"); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v / %v", err, resp.Err)
	}

	p := n.client(t, kgo.DefaultProduceTopic("e2e"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	const perPartition = 20
	for part := int32(0); part < 3; part++ {
		for i := 0; i < perPartition; i++ {
			r := &kgo.Record{Partition: part, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("p%d-%d", part, i))}
			if err := p.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}

	for v := int16(4); v <= 18; v++ {
		vs := kversion.Stable()
		vs.SetMaxKeyVersion(1, v)
		c := n.client(t, kgo.MaxVersions(vs), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
			"e2e": {0: kgo.NewOffset().AtStart(), 1: kgo.NewOffset().AtStart(), 2: kgo.NewOffset().At(5)},
		}))
		want := 2*perPartition + perPartition - 5
		got := map[string]bool{}
		for len(got) < want {
			fs := c.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("fetch v%d: %v", v, err)
			}
			fs.EachRecord(func(r *kgo.Record) {
				exp := fmt.Sprintf("p%d-%d", r.Partition, r.Offset)
				if string(r.Value) != exp {
					t.Fatalf("fetch v%d: offset %d of partition %d holds %q", v, r.Offset, r.Partition, r.Value)
				}
				got[exp] = true
			})
		}
		c.Close()
	}

	ends, err := adm.ListEndOffsets(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	starts, err := adm.ListStartOffsets(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 3; part++ {
		e, _ := ends.Lookup("e2e", part)
		s, _ := starts.Lookup("e2e", part)
		if e.Err != nil || e.Offset != perPartition || s.Err != nil || s.Offset != 0 {
			t.Fatalf("partition %d: start %+v end %+v", part, s, e)
		}
	}
	maxTs, err := adm.ListMaxTimestampOffsets(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := maxTs.Lookup("e2e", 0); m.Err != nil || m.Offset < 0 || m.Timestamp <= 0 {
		t.Fatalf("max timestamp %+v", m)
	}

	var oreq kadm.OffsetForLeaderEpochRequest
	oreq.Add("e2e", 0, 0)
	epochs, err := adm.OffsetForLeaderEpoch(ctx, oreq)
	if err != nil {
		t.Fatal(err)
	}
	if e := epochs["e2e"][0]; e.Err != nil || e.EndOffset != perPartition || e.LeaderEpoch != 0 {
		t.Fatalf("offset for leader epoch %+v", e)
	}

	dirs, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var size int64
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil || d.TotalBytes <= 0 {
			t.Errorf("log dir %+v", d)
		}
		size += d.Topics.Size()
	})
	if size == 0 {
		t.Fatal("log dirs report no data")
	}

	// Long poll: a consumer at the end is answered by a later produce.
	c := n.client(t, kgo.FetchMaxWait(20*time.Second), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{
		"e2e": {1: kgo.NewOffset().At(perPartition)},
	}))
	got := make(chan kgo.Fetches, 1)
	go func() { got <- c.PollFetches(ctx) }()
	time.Sleep(300 * time.Millisecond) // let the fetch park (end-to-end: a real network round trip)
	start := time.Now()
	if err := p.ProduceSync(ctx, &kgo.Record{Partition: 1, Value: []byte("late")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fs := <-got
	if err := fs.Err(); err != nil {
		t.Fatal(err)
	}
	if recs := fs.Records(); len(recs) != 1 || string(recs[0].Value) != "late" {
		t.Fatalf("long poll got %v", recs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("long poll answered after %v: not woken by the produce", d)
	}

	// A raw produce (v12: by topic name) to a partition that does not exist.
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(0, 12)
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = 1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "e2e"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = 9
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, n.client(t, kgo.MaxVersions(vs)))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("produce to partition 9: %v", kerr.ErrorForCode(code))
	}
}
