package broker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/coordinator"
	"github.com/kgo-broker/kgo-broker/group"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// okPersister initializes and summarizes every share partition it is
// asked about (start offset 5 once initialized).
type okPersister struct {
	mu   sync.Mutex
	init map[[16]byte]map[int32]bool
}

func (p *okPersister) InitializeState(_ context.Context, req *kmsg.InitializeShareGroupStateRequest) (*kmsg.InitializeShareGroupStateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	resp := kmsg.NewPtrInitializeShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewInitializeShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, q := range t.Partitions {
			if p.init[t.TopicID] == nil {
				p.init[t.TopicID] = map[int32]bool{}
			}
			p.init[t.TopicID][q.Partition] = true
			rp := kmsg.NewInitializeShareGroupStateResponseTopicPartition()
			rp.Partition = q.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (p *okPersister) ReadState(context.Context, *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	return kmsg.NewPtrReadShareGroupStateResponse(), nil
}

func (p *okPersister) WriteState(context.Context, *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	return kmsg.NewPtrWriteShareGroupStateResponse(), nil
}

func (p *okPersister) DeleteState(_ context.Context, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	resp := kmsg.NewPtrDeleteShareGroupStateResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, q := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = q.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

func (p *okPersister) ReadStateSummary(_ context.Context, req *kmsg.ReadShareGroupStateSummaryRequest) (*kmsg.ReadShareGroupStateSummaryResponse, error) {
	resp := kmsg.NewPtrReadShareGroupStateSummaryResponse()
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateSummaryResponseTopic()
		rt.TopicID = t.TopicID
		for _, q := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateSummaryResponseTopicPartition()
			rp.Partition, rp.StartOffset, rp.DeliveryCompleteCount = q.Partition, 5, 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// TestShareGroupAPIs drives the share group handlers on a broker whose
// group coordinator writes to memory: off while share.version is 0, then
// a join that initializes the share state, describe, list, offsets and
// the refusals of other group types.
func TestShareGroupAPIs(t *testing.T) {
	b := apiTestBroker(t)
	hb := func(epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = "sg", "m1", epoch, topics
		return call[*kmsg.ShareGroupHeartbeatResponse](t, b, "PLAINTEXT", r, 1)
	}
	if resp := hb(0, "t"); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("share.version 0: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	del := call[*kmsg.DeleteShareGroupOffsetsResponse](t, b, "PLAINTEXT", kmsg.NewPtrDeleteShareGroupOffsetsRequest(), 0)
	if del.ErrorCode != kerr.UnsupportedVersion.Code || del.ErrorMessage == nil || *del.ErrorMessage != unsupportedVersionMessage {
		t.Fatalf("share.version 0 delete offsets: %+v", del)
	}

	// share.version 1 and a one-partition __consumer_offsets led here.
	img := b.meta.Image()
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = "share.version", 1
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = group.OffsetsTopic, [16]byte{9}
	pr := metadatacache.NewPartitionRecord()
	pr.PartitionID, pr.TopicID, pr.Replicas, pr.Isr, pr.Leader = 0, tr.TopicID, []int32{1}, []int32{1}, 1
	if err := b.meta.Apply(metadatacache.Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + 3, Epoch: 1,
		Records: []metadatacache.Record{fl, tr, pr}}); err != nil {
		t.Fatal(err)
	}
	if ti := b.meta.Image().TopicByName(group.OffsetsTopic); ti == nil || ti.Partition(0) == nil || ti.Partition(0).Leader != 1 {
		t.Fatalf("offsets topic %+v, image offset %d (was %d)", ti, b.meta.Image().Offset, img.Offset)
	}
	p := &okPersister{init: map[[16]byte]map[int32]bool{}}
	b.sharePersister = p
	gc := group.Config{NodeID: 1, Writer: coordinator.NewMemLog(true), Image: b.meta.Image, OffsetsTopicPartitions: 1,
		ShareAssignmentInterval: -1}
	b.wireShareGroups(&gc)
	// This broker has no replica manager: partitions end at offset 10.
	gc.LatestOffset = func(context.Context, [16]byte, int32) (int64, error) { return 10, nil }
	b.groups = group.New(gc)
	defer b.groups.Close()
	b.groups.OnImage(nil, b.meta.Image())
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp := hb(0, "t")
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.NotCoordinator.Code {
			if resp.ErrorCode != 0 || resp.MemberEpoch != 1 {
				t.Fatalf("join: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group coordinator never loaded")
		}
	}
	p.mu.Lock()
	initialized := len(p.init[[16]byte{7}])
	p.mu.Unlock()
	if initialized != 3 {
		t.Fatalf("the join initialized %d partitions of t, want 3", initialized)
	}
	// The next heartbeat gets the initialized partitions.
	resp := hb(1)
	if resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) != 1 ||
		len(resp.Assignment.TopicPartitions[0].Partitions) != 3 {
		t.Fatalf("heartbeat: %+v", resp)
	}

	dreq := kmsg.NewPtrShareGroupDescribeRequest()
	dreq.GroupIDs = []string{"sg", "nope"}
	dreq.IncludeAuthorizedOperations = true
	d := call[*kmsg.ShareGroupDescribeResponse](t, b, "PLAINTEXT", dreq, 1)
	if g := d.Groups[0]; g.ErrorCode != 0 || g.GroupState != "Stable" || len(g.Members) != 1 || g.Members[0].Assignment.TopicPartitions[0].Topic != "t" {
		t.Fatalf("describe: %+v", d.Groups[0])
	}
	if d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe unknown: %+v", d.Groups[1])
	}

	lreq := kmsg.NewPtrListGroupsRequest()
	lreq.TypesFilter = []string{"share"}
	l := call[*kmsg.ListGroupsResponse](t, b, "PLAINTEXT", lreq, 5)
	if len(l.Groups) != 1 || l.Groups[0].Group != "sg" || l.Groups[0].GroupType != "share" || l.Groups[0].ProtocolType != "share" {
		t.Fatalf("list: %+v", l.Groups)
	}

	oreq := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	og := kmsg.NewDescribeShareGroupOffsetsRequestGroup()
	og.GroupID = "sg"
	oreq.Groups = append(oreq.Groups, og)
	o := call[*kmsg.DescribeShareGroupOffsetsResponse](t, b, "PLAINTEXT", oreq, 1)
	if len(o.Groups) != 1 || len(o.Groups[0].Topics) != 1 || len(o.Groups[0].Topics[0].Partitions) != 3 ||
		o.Groups[0].Topics[0].Partitions[0].StartOffset != 5 || o.Groups[0].Topics[0].Partitions[0].Lag != 5 {
		t.Fatalf("describe offsets: %+v", o.Groups)
	}

	// A non-empty group keeps its offsets and cannot be deleted.
	areq := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	areq.GroupID = "sg"
	if a := call[*kmsg.AlterShareGroupOffsetsResponse](t, b, "PLAINTEXT", areq, 0); a.ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("alter offsets of a non-empty group: %v", kerr.ErrorForCode(a.ErrorCode))
	}
	dg := kmsg.NewPtrDeleteGroupsRequest()
	dg.Groups = []string{"sg"}
	if r := call[*kmsg.DeleteGroupsResponse](t, b, "PLAINTEXT", dg, 2); r.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete a non-empty share group: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
	// The id is a share group's: other protocols are refused.
	cg := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	cg.Group, cg.MemberID, cg.RebalanceTimeoutMillis, cg.SubscribedTopicNames = "sg", "c1", 30000, []string{"t"}
	cg.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if r := call[*kmsg.ConsumerGroupHeartbeatResponse](t, b, "PLAINTEXT", cg, 1); r.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("consumer heartbeat on a share group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	// Leaving empties the group; then it can be deleted.
	if r := hb(-1); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("leave: %+v", r)
	}
	if r := call[*kmsg.DeleteGroupsResponse](t, b, "PLAINTEXT", dg, 2); r.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(r.Groups[0].ErrorCode))
	}
}
