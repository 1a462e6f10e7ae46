package broker

import (
	"context"
	"fmt"
	"github.com/twmb/franz-go/pkg/kversion"
	"maps"
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

// TestGroupRestartKeepsOffsets: committed offsets and the group survive a
// restart (the shard replays __consumer_offsets), and kadm's group admin
// calls work.
func TestGroupRestartKeepsOffsets(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, dir, groupTestProps)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(n.client(t))
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "r"); err != nil {
		t.Fatal(err)
	}
	produceN(t, ctx, n.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "r", 3, 4)

	cl := n.client(t, kgo.ConsumerGroup("rg"), kgo.ConsumeTopics("r"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
	got := 0
	for got < 12 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	// While the member is in: list, describe with members, and offset
	// delete refused for the subscribed topic.
	lg, err := adm.ListGroups(ctx)
	if err != nil || len(lg) != 1 || lg["rg"].State != "Stable" {
		t.Fatalf("list: %v %+v", err, lg)
	}
	dg, err := adm.DescribeGroups(ctx, "rg")
	if err != nil {
		t.Fatal(err)
	}
	g := dg["rg"]
	if g.State != "Stable" || g.Protocol == "" || len(g.Members) != 1 {
		t.Fatalf("describe: %+v", g)
	}
	if ca, ok := g.Members[0].Assigned.AsConsumer(); !ok || len(ca.Topics) != 1 || len(ca.Topics[0].Partitions) != 3 {
		t.Fatalf("member assignment: %+v", g.Members[0].Assigned)
	}
	od, err := adm.DeleteOffsets(ctx, "rg", kadm.TopicsSet{"r": {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e := od["r"][0]; e == nil {
		t.Fatalf("offset delete of a subscribed topic succeeded")
	}
	cl.Close() // leaves the group

	n.stop(t)
	n2 := startNode(t, dir, groupTestProps)
	adm2 := kadm.NewClient(n2.client(t))
	var offs kadm.OffsetResponses
	for {
		offs, err = adm2.FetchOffsets(ctx, "rg")
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for p := int32(0); p < 3; p++ {
		if o, _ := offs.Lookup("r", p); o.At != 4 {
			t.Fatalf("offset of r-%d after restart: %+v", p, o)
		}
	}
	lg, err = adm2.ListGroups(ctx)
	if err != nil || lg["rg"].State != "Empty" {
		t.Fatalf("list after restart: %v %+v", err, lg)
	}
	// A new member resumes from the committed offsets: nothing old again.
	produceN(t, ctx, n2.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner())), "r", 3, 1)
	cl2 := n2.client(t, kgo.ConsumerGroup("rg"), kgo.ConsumeTopics("r"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got = 0
	for got < 3 {
		fs := cl2.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != 4 {
				t.Fatalf("re-read old record %s-%d@%d", r.Topic, r.Partition, r.Offset)
			}
		})
		got += fs.NumRecords()
	}
}

// ownership tracks which member owns which partition through the kgo
// assignment callbacks.
type ownership struct {
	mu    sync.Mutex
	owner map[int32]int
}

func (o *ownership) opts(i int) []kgo.Opt {
	set := func(m map[string][]int32, to int) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, p := range m["work"] {
			if to >= 0 || o.owner[p] == i {
				o.owner[p] = to
			}
		}
	}
	return []kgo.Opt{
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { set(m, i) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { set(m, -1) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { set(m, -1) }),
	}
}

// balanced reports whether members own all n partitions, each n/len(members).
func (o *ownership) balanced(n int, members ...int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	count := map[int]int{}
	for p := int32(0); p < int32(n); p++ {
		who, ok := o.owner[p]
		if !ok || who < 0 {
			return false
		}
		count[who]++
	}
	for _, m := range members {
		if count[m] != n/len(members) {
			return false
		}
	}
	return len(count) == len(members)
}

// TestGroupRebalanceTimeOnLeave measures (does not assert) how long a
// 3-member group sharing 12 partitions takes to hand the partitions of a
// member that leaves to the other two: classic protocol with
// cooperative-sticky, and KIP-848 with the server-side uniform assignor.
func TestGroupRebalanceTimeOnLeave(t *testing.T) {
	n := startNode(t, "", groupTestProps)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	adm := kadm.NewClient(n.client(t))
	if _, err := adm.CreateTopic(ctx, 12, 1, nil, "work"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"classic cooperative-sticky", []kgo.Opt{kgo.Balancers(kgo.CooperativeStickyBalancer())}},
		{"KIP-848 uniform", []kgo.Opt{kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &ownership{owner: map[int32]int{}}
			group := "rebal-" + fmt.Sprint(time.Now().UnixNano())
			var members []*kgo.Client
			for i := 0; i < 3; i++ {
				opts := append([]kgo.Opt{kgo.SeedBrokers(n.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics("work"),
					kgo.FetchMaxWait(100 * time.Millisecond)}, tc.opts...)
				cl, err := kgo.NewClient(append(opts, o.opts(i)...)...)
				if err != nil {
					t.Fatal(err)
				}
				members = append(members, cl)
				go func() {
					for ctx.Err() == nil {
						if fs := cl.PollFetches(ctx); fs.IsClientClosed() {
							return
						}
					}
				}()
			}
			wait := func(what string, cond func() bool) time.Duration {
				start := time.Now()
				for !cond() {
					if ctx.Err() != nil {
						t.Fatalf("timed out waiting for %s", what)
					}
					time.Sleep(5 * time.Millisecond)
				}
				return time.Since(start)
			}
			join := wait("3 balanced members", func() bool { return o.balanced(12, 0, 1, 2) })
			start := time.Now()
			members[2].Close()
			closed := time.Since(start)
			took := wait("2 balanced members", func() bool { return o.balanced(12, 0, 1) })
			t.Logf("%s: 3 members balanced after %v; after one leaves (LeaveGroup / epoch -1 took %v), the other two own all 12 partitions %v later (%v in all)",
				tc.name, join.Round(time.Millisecond), closed.Round(time.Millisecond), took.Round(time.Millisecond), (closed + took).Round(time.Millisecond))
			members[0].Close()
			members[1].Close()
		})
	}
}

// TestGroupOffsetCommitThroughput measures (does not assert) OffsetCommit
// requests per second through the broker, one partition per commit.
func TestGroupOffsetCommitThroughput(t *testing.T) {
	n := startNode(t, "", groupTestProps)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cl := n.client(t)
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 12, 1, nil, "work")
	if err != nil {
		t.Fatal(err)
	}
	commit := func(i int) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "tput", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic, rt.TopicID = "work", created.ID // v10 names the topic by id
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = int32(i%12), int64(i)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	}
	for {
		if err := commit(0); err == nil {
			break
		} else if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, conc := range []int{1, 8} {
		const total = 4000
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, conc)
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < total; i += conc {
					if err := commit(i); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		el := time.Since(start)
		t.Logf("OffsetCommit, %d in flight: %d commits in %v = %.0f commits/s", conc, total, el.Round(time.Millisecond), float64(total)/el.Seconds())
	}
}

// TestGroupTxnOffsetCommit: TxnOffsetCommit through the broker writes the
// offsets as a transactional batch of __consumer_offsets; they are not
// visible (and UNSTABLE_OFFSET_COMMIT with require_stable) until the
// producer's COMMIT marker, which the WriteTxnMarkers handler writes
// through CompleteTransaction; a restart replays batch and marker, and a
// transaction still open at the restart can still end.
func TestGroupTxnOffsetCommit(t *testing.T) {
	dir := t.TempDir()
	// Raw TxnOffsetCommits of a producer no transaction coordinator knows:
	// without KIP-890 verification (the verified path is exercised end to
	// end by the integration suite's transactional clients).
	props := maps.Clone(groupTestProps)
	props["transaction.partition.verification.enable"] = "false"
	n := startNode(t, dir, props)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// TxnOffsetCommit v4: v5+ (transaction.version 2) always has the
	// partition added through the transaction coordinator.
	v4 := kversion.Stable()
	v4.SetMaxKeyVersion(28, 4)
	v4.SetMaxKeyVersion(9, 9) // OffsetFetch by topic name (v10 names topics by id)
	cl := n.client(t, kgo.MaxVersions(v4))
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "x"); err != nil {
		t.Fatal(err)
	}

	txnCommit := func(cl *kgo.Client, pid int64, part int32, off int64) {
		t.Helper()
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.ProducerEpoch = "tx", "tg", pid, 0
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = "x"
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = part, off
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
			if err == nil {
				return
			}
			if !kerr.IsRetriable(err) || ctx.Err() != nil {
				t.Fatalf("TxnOffsetCommit: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	fetch := func(cl *kgo.Client, stable bool) map[int32]string {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = stable
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = "tg"
		rg.Topics = []kmsg.OffsetFetchRequestGroupTopic{{Topic: "x", Partitions: []int32{0, 1}}}
		req.Groups = append(req.Groups, rg)
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			g := resp.Groups[0]
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				if !kerr.IsRetriable(err) || ctx.Err() != nil {
					t.Fatalf("OffsetFetch: %v", err)
				}
				time.Sleep(50 * time.Millisecond)
				continue
			}
			out := map[int32]string{}
			for _, p := range g.Topics[0].Partitions {
				out[p.Partition] = fmt.Sprint(p.Offset)
				if p.ErrorCode != 0 {
					out[p.Partition] = kerr.ErrorForCode(p.ErrorCode).(*kerr.Error).Message
				}
			}
			return out
		}
	}
	complete := func(n *testNode, pid int64, commit bool) {
		t.Helper()
		p := n.broker.groups.PartitionFor("tg")
		for {
			err := n.broker.groups.CompleteTransaction(ctx, p, pid, 0, 0, commit)
			if err == nil {
				return
			}
			if !kerr.IsRetriable(err) || ctx.Err() != nil {
				t.Fatalf("CompleteTransaction: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	txnCommit(cl, 1000, 0, 5)
	if got := fetch(cl, false); got[0] != "-1" || got[1] != "-1" {
		t.Fatalf("pending offsets visible: %v", got)
	}
	if got := fetch(cl, true); got[0] != "UNSTABLE_OFFSET_COMMIT" || got[1] != "-1" {
		t.Fatalf("require_stable: %v", got)
	}
	complete(n, 1000, true)
	if got := fetch(cl, true); got[0] != "5" {
		t.Fatalf("after COMMIT: %v", got)
	}
	// Another transaction is open when the node restarts.
	txnCommit(cl, 1001, 1, 7)
	n.stop(t)
	n2 := startNode(t, dir, props)
	cl2 := n2.client(t, kgo.MaxVersions(v4))
	if got := fetch(cl2, true); got[0] != "5" || got[1] != "UNSTABLE_OFFSET_COMMIT" {
		t.Fatalf("after restart: %v", got)
	}
	complete(n2, 1001, false)
	if got := fetch(cl2, true); got[0] != "5" || got[1] != "-1" {
		t.Fatalf("after ABORT: %v", got)
	}
}
