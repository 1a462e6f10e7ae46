package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ShareFetch and ShareAcknowledge through a real node: share sessions,
// acquisition, piggybacked and standalone acknowledgements, redelivery,
// a fetch parked until a produce, closing the session and the connection,
// with the share coordinator of the node as the persister.
func TestShareFetchAcknowledge(t *testing.T) {
	n := startNode(t, "", nil) // share.version 1 is finalized at bootstrap
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := n.client(t)
	adm := kadm.NewClient(cl)
	ct, err := adm.CreateTopic(ctx, 1, 1, nil, "sq")
	if err != nil || ct.Err != nil {
		t.Fatalf("create topic: %v / %v", err, ct.Err)
	}
	n.awaitLeader(t, "sq", 0)
	produce := func(k int) {
		for i := 0; i < k; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "sq", Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(10)
	g, m := "sg", "member-1"
	// The group coordinator initializes a share partition's state when it
	// first assigns it (not exercised here); the share coordinator refuses
	// to read an uninitialized one, as Kafka's.
	init := kmsg.NewPtrInitializeShareGroupStateRequest()
	init.GroupID = g
	it := kmsg.NewInitializeShareGroupStateRequestTopic()
	it.TopicID = ct.ID
	ip := kmsg.NewInitializeShareGroupStateRequestTopicPartition()
	ip.StartOffset = -1
	it.Partitions = append(it.Partitions, ip)
	init.Topics = append(init.Topics, it)
	for {
		ir, err := n.broker.sharePersister.InitializeState(ctx, init)
		if err != nil {
			t.Fatal(err)
		}
		if code := ir.Topics[0].Partitions[0].ErrorCode; code == 0 {
			break
		} else if ctx.Err() != nil {
			t.Fatalf("initializing the share state: %v", kerr.ErrorForCode(code))
		}
		time.Sleep(50 * time.Millisecond) // the share coordinator is loading
	}
	fetch := func(epoch int32, wait int32, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponse {
		t.Helper()
		req := kmsg.NewPtrShareFetchRequest()
		req.Version = 2
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &m, epoch
		req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = wait, 1, 1<<20, 5, 5
		req.ShareAcquireMode = 1 // record_limit
		if epoch == 0 || len(acks) > 0 {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = ct.ID
			rp := kmsg.NewShareFetchRequestTopicPartition()
			rp.AcknowledgementBatches = acks
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	ack := func(epoch int32, first, last int64, typ int8) *kmsg.ShareAcknowledgeResponse {
		t.Helper()
		req := kmsg.NewPtrShareAcknowledgeRequest()
		req.Version = 2
		req.GroupID, req.MemberID, req.ShareSessionEpoch = &g, &m, epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = ct.ID
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		b := kmsg.NewShareAcknowledgeRequestTopicPartitionAcknowledgementBatch()
		b.FirstOffset, b.LastOffset, b.AcknowledgeTypes = first, last, []int8{typ}
		rp.AcknowledgementBatches = append(rp.AcknowledgementBatches, b)
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	acquired := func(resp *kmsg.ShareFetchResponse) [][3]int64 {
		t.Helper()
		if resp.ErrorCode != 0 {
			t.Fatalf("top-level error %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		var out [][3]int64
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				if p.ErrorCode != 0 || p.AcknowledgeErrorCode != 0 {
					t.Fatalf("partition errors %v / %v", kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(p.AcknowledgeErrorCode))
				}
				for _, a := range p.AcquiredRecords {
					out = append(out, [3]int64{a.FirstOffset, a.LastOffset, int64(a.DeliveryCount)})
				}
				if len(p.AcquiredRecords) > 0 && len(p.Records) == 0 {
					t.Fatal("acquired records without record batches")
				}
			}
		}
		return out
	}
	check := func(got [][3]int64, want ...[3]int64) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("acquired %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("acquired %v, want %v", got, want)
			}
		}
	}

	// The group has never consumed and share.auto.offset.reset is latest:
	// an empty first answer, then the records produced after it.
	resp := fetch(0, 0)
	if resp.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("lock timeout %d", resp.AcquisitionLockTimeoutMillis)
	}
	check(acquired(resp))
	produce(7)
	check(acquired(fetch(1, 1000)), [3]int64{10, 14, 1})
	// the acknowledgement piggybacks on the next fetch
	ab := kmsg.NewShareFetchRequestTopicPartitionAcknowledgementBatch()
	ab.FirstOffset, ab.LastOffset, ab.AcknowledgeTypes = 10, 14, []int8{1}
	check(acquired(fetch(2, 1000, ab)), [3]int64{15, 16, 1})
	if r := ack(3, 15, 16, 2); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("release: %+v", r)
	}
	if r := ack(4, 15, 15, 1); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRecordState.Code {
		t.Fatalf("accepting a released record: %v", kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	check(acquired(fetch(5, 1000)), [3]int64{15, 16, 2})

	// A fetch parked on an empty partition wakes on a produce.
	done := make(chan *kmsg.ShareFetchResponse, 1)
	start := time.Now()
	go func() { done <- fetch(6, 10000) }()
	for n.broker.shares.Parked() == 0 {
		select {
		case r := <-done:
			t.Fatalf("the fetch of an empty partition returned at once: %+v", r)
		case <-ctx.Done():
			t.Fatal("the fetch never parked")
		case <-time.After(time.Millisecond):
		}
	}
	produce(1)
	select {
	case r := <-done:
		check(acquired(r), [3]int64{17, 17, 1})
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the parked fetch took %v", time.Since(start))
		}
	case <-ctx.Done():
		t.Fatal("the parked fetch never returned")
	}

	// Session errors.
	if r := fetch(99, 0); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("wrong epoch: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := ack(0, 15, 16, 1); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ack at epoch 0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// The final epoch acknowledges and closes the session.
	if r := ack(-1, 15, 17, 1); r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("final ack: %+v", r)
	}
	if r := fetch(7, 0); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("after close: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// The group's last session is gone: its share partitions are dropped
	// (ShareGroupListener.onGroupEmpty) and the next fetch loads the
	// persisted state.
	if sp := n.broker.shares.Partition(g, shareTP(ct.ID, 0)); sp != nil {
		t.Fatalf("share partition still loaded after the group's last session closed: %s", sp.Dump())
	}

	// A session lives as long as its connection: closing the client
	// closes the session and releases the member's records (Kafka 4.1+).
	produce(3)
	cl2 := n.client(t)
	m2 := "member-2"
	req := kmsg.NewPtrShareFetchRequest()
	req.Version = 2
	req.GroupID, req.MemberID = &g, &m2
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 1000, 1, 1<<20, 10, 10
	rt := kmsg.NewShareFetchRequestTopic()
	rt.TopicID = ct.ID
	rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	r2, err := req.RequestWith(ctx, cl2.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	check(acquired(r2), [3]int64{18, 20, 1})
	cl2.Close()
	for n.broker.shares.Sessions.Epoch(g, m2) != -1 {
		if ctx.Err() != nil {
			t.Fatal("the session outlived its connection")
		}
		time.Sleep(10 * time.Millisecond)
	}
	m = "member-3"
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := acquired(fetch(0, 1000))
		if len(got) == 1 && got[0] == [3]int64{18, 20, 2} {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the connection closed: %v", got)
		}
		m = m + "x" // a fresh member: an empty first answer is the release still in flight
	}
}
