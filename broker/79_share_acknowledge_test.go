package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/share"
)

// notLedLog answers every partition as led elsewhere.
type notLedLog struct{}

func (notLedLog) ReadShare(string, int32, int64, int32, bool, bool) (share.LogRead, error) {
	return share.LogRead{}, kerr.NotLeaderForPartition
}
func (notLedLog) Offsets(string, int32) (int64, int64, int32, error) {
	return -1, -1, -1, kerr.NotLeaderForPartition
}
func (notLedLog) Watch(string, int32, func()) (func(), error) { return func() {}, nil }
func (notLedLog) OffsetForTimestamp(string, int32, int64) (int64, bool, error) {
	return -1, false, kerr.NotLeaderForPartition
}

// ShareFetch and ShareAcknowledge authorize GROUP READ then TOPIC READ,
// check the group and member ids, and answer a partition not led here with
// its leader.
func TestShareAuthorizationAndErrors(t *testing.T) {
	b := authzTestBroker(t, allowACL(resGroup, "g", "User:alice", opRead), allowACL(resTopic, "t", "User:alice", opRead),
		allowACL(resGroup, "g", "User:bob", opRead))
	b.shares = share.NewManager(share.Config{Log: notLedLog{}})
	tid := [16]byte{7}
	// share.version is 0 in this image: the APIs are off
	if r := callAs[*kmsg.ShareFetchResponse](t, b, "alice", kmsg.NewPtrShareFetchRequest(), 1); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("without share.version: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := callAs[*kmsg.ShareAcknowledgeResponse](t, b, "alice", kmsg.NewPtrShareAcknowledgeRequest(), 1); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ack without share.version: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	shareVersionForced.Store(true)
	defer shareVersionForced.Store(false)
	sf := func(group *string, member string, epoch int32, topics ...[16]byte) *kmsg.ShareFetchRequest {
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch = group, kmsg.StringPtr(member), epoch
		r.MaxRecords, r.BatchSize = 10, 10
		for _, id := range topics {
			rt := kmsg.NewShareFetchRequestTopic()
			rt.TopicID = id
			rt.Partitions = append(rt.Partitions, kmsg.NewShareFetchRequestTopicPartition())
			r.Topics = append(r.Topics, rt)
		}
		return r
	}
	g := kmsg.StringPtr("g")
	if r := callAs[*kmsg.ShareFetchResponse](t, b, "carol", sf(g, "m", 0, tid), 1); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("carol: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := callAs[*kmsg.ShareFetchResponse](t, b, "alice", sf(nil, "m", 0, tid), 1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("null group: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := callAs[*kmsg.ShareFetchResponse](t, b, "alice", sf(g, "0123456789012345678901234567890123456", 0, tid), 1); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("long member id: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	r := callAs[*kmsg.ShareFetchResponse](t, b, "bob", sf(g, "bob-1", 0, tid), 1)
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob: %+v", r)
	}
	r = callAs[*kmsg.ShareFetchResponse](t, b, "alice", sf(g, "alice-1", 0, tid, [16]byte{9}), 1)
	if r.ErrorCode != 0 || len(r.Topics) != 2 {
		t.Fatalf("alice: %+v", r)
	}
	p := r.Topics[0].Partitions[0]
	if p.ErrorCode != kerr.NotLeaderForPartition.Code || p.CurrentLeader.LeaderID != 1 || len(r.NodeEndpoints) != 1 || r.NodeEndpoints[0].NodeID != 1 {
		t.Fatalf("not led here: %+v endpoints %+v", p, r.NodeEndpoints)
	}
	if p := r.Topics[1].Partitions[0]; p.ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("unknown topic id: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	if r.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("lock timeout %d", r.AcquisitionLockTimeoutMillis)
	}
	renew := sf(g, "alice-1", 1)
	renew.IsRenewAck, renew.MaxWaitMillis = true, 100
	if r := callAs[*kmsg.ShareFetchResponse](t, b, "alice", renew, 2); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("renew with a max wait: %v", kerr.ErrorForCode(r.ErrorCode))
	}

	sa := func(member string, epoch int32, typ int8) *kmsg.ShareAcknowledgeRequest {
		r := kmsg.NewPtrShareAcknowledgeRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch = g, kmsg.StringPtr(member), epoch
		rt := kmsg.NewShareAcknowledgeRequestTopic()
		rt.TopicID = tid
		rp := kmsg.NewShareAcknowledgeRequestTopicPartition()
		rp.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{typ}}}
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	}
	if r := callAs[*kmsg.ShareAcknowledgeResponse](t, b, "carol", sa("m", 1, 1), 1); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("carol ack: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := callAs[*kmsg.ShareAcknowledgeResponse](t, b, "alice", sa("alice-1", 0, 1), 1); r.ErrorCode != kerr.InvalidShareSessionEpoch.Code {
		t.Fatalf("ack at epoch 0: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := callAs[*kmsg.ShareAcknowledgeResponse](t, b, "alice", sa("nobody", 1, 1), 1); r.ErrorCode != kerr.ShareSessionNotFound.Code {
		t.Fatalf("ack without a session: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := callAs[*kmsg.ShareAcknowledgeResponse](t, b, "alice", sa("alice-1", 1, 4), 1); r.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("renew on v1: %+v", r)
	}
	r2 := callAs[*kmsg.ShareAcknowledgeResponse](t, b, "alice", sa("alice-1", 2, 1), 2)
	if r2.ErrorCode != 0 || r2.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code || r2.AcquisitionLockTimeoutMillis != 30000 {
		t.Fatalf("ack of a share partition not here: %+v", r2)
	}
	if r := callAs[*kmsg.ShareAcknowledgeResponse](t, b, "bob", sa("bob-1", 1, 1), 1); r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob ack: %+v", r)
	}
}
