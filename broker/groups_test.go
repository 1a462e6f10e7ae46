package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var groupTestProps = map[string]string{
	"group.initial.rebalance.delay.ms": "0",
	"offsets.topic.num.partitions":     "5",
}

func produceN(t *testing.T, ctx context.Context, cl *kgo.Client, topic string, partitions, perPartition int) {
	t.Helper()
	var rs []*kgo.Record
	for p := 0; p < partitions; p++ {
		for i := 0; i < perPartition; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(p), Value: []byte(fmt.Sprintf("%d-%d-%d", p, i, time.Now().UnixNano()))})
		}
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

func TestGroupFindCoordinatorCreatesOffsetsTopic(t *testing.T) {
	n := startNode(t, "", groupTestProps)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := n.client(t)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"g1", "g2"}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Coordinators[0].ErrorCode == 0 && resp.Coordinators[1].ErrorCode == 0 {
			if resp.Coordinators[0].NodeID != 1 || resp.Coordinators[0].Port == 0 {
				t.Fatalf("coordinator: %+v", resp.Coordinators[0])
			}
			break
		}
		if c := resp.Coordinators[0].ErrorCode; c != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("unexpected error %v", kerr.ErrorForCode(c))
		}
		time.Sleep(50 * time.Millisecond)
	}
	md, err := kadm.NewClient(cl).Metadata(ctx, "__consumer_offsets")
	if err != nil {
		t.Fatal(err)
	}
	if td := md.Topics["__consumer_offsets"]; len(td.Partitions) != 5 || !td.IsInternal {
		t.Fatalf("__consumer_offsets: %+v", td)
	}
}

// TestGroupCooperativeThreeMembers: three members share 12 partitions with
// cooperative-sticky; one leaves; the others take over from the committed
// offsets; nothing is lost.
func TestGroupCooperativeThreeMembers(t *testing.T) {
	n := startNode(t, "", groupTestProps)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adm := kadm.NewClient(n.client(t))
	if _, err := adm.CreateTopic(ctx, 12, 1, nil, "work"); err != nil {
		t.Fatal(err)
	}
	prod := n.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produceN(t, ctx, prod, "work", 12, 10)

	var mu sync.Mutex
	seen := map[string]int{}
	assigned := map[int]int{}
	newMember := func(i int) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.addr), kgo.ConsumerGroup("coop"), kgo.ConsumeTopics("work"),
			kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				assigned[i] += len(m["work"])
				mu.Unlock()
			}),
			kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) {
				_ = cl.CommitUncommittedOffsets(ctx)
			}))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	members := []*kgo.Client{newMember(0), newMember(1), newMember(2)}
	var wg sync.WaitGroup
	stops := make([]context.CancelFunc, 3)
	for i, cl := range members {
		cctx, stop := context.WithCancel(ctx)
		stops[i] = stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[string(r.Value)]++
					mu.Unlock()
				})
				_ = cl.CommitUncommittedOffsets(cctx)
			}
		}()
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			if ctx.Err() != nil {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("120 records", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 120 })
	waitFor("every member assigned", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return assigned[0] > 0 && assigned[1] > 0 && assigned[2] > 0
	})

	// Member 2 leaves; more records arrive; the two others read them.
	stops[2]()
	start := time.Now()
	members[2].Close()
	produceN(t, ctx, prod, "work", 12, 5)
	waitFor("180 records", func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 180 })
	t.Logf("classic cooperative rebalance + catch-up after a leave: %v", time.Since(start))
	stops[0]()
	stops[1]()
	wg.Wait()
	for _, cl := range members[:2] {
		_ = cl.CommitUncommittedOffsets(ctx)
		cl.Close()
	}
	offs, err := adm.FetchOffsets(ctx, "coop")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 12; p++ {
		o, ok := offs.Lookup("work", p)
		if !ok || o.At != 15 {
			t.Errorf("committed offset of work-%d = %+v, want 15", p, o)
		}
	}
	// Empty now: describe, then delete.
	dg, err := adm.DescribeGroups(ctx, "coop")
	if err != nil {
		t.Fatal(err)
	}
	if g := dg["coop"]; g.State != "Empty" || g.ProtocolType != "consumer" {
		t.Fatalf("describe: %+v", g)
	}
	dr, err := adm.DeleteGroups(ctx, "coop")
	if err != nil || dr["coop"].Err != nil {
		t.Fatalf("delete: %v %v", err, dr["coop"].Err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }
