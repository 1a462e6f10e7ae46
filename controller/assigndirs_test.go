package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAssignReplicasToDirs: broker 1 registers two log dirs, so its replicas
// of a new topic are UNASSIGNED until it reports where they live; the
// controller records each report as a PartitionChangeRecord with the
// partition's directories, answers per-partition errors for unknown
// topics and partitions and partitions the broker does not host, fails a
// stale broker epoch as a whole, and moves leadership and ISR off the
// broker for a directory its registration does not list as online
// (ReplicationControlManager.handleAssignReplicasToDirs).
func TestAssignReplicasToDirs(t *testing.T) {
	e := newTestEnv(t, nil)
	dirA, dirB, gone := dirID(10), dirID(11), dirID(12)
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.Version, reg.BrokerID, reg.ClusterID = 4, 1, "test-cluster"
	reg.IncarnationID = [16]byte{0: 1, 1: 1}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "localhost", 9092
	reg.Listeners = append(reg.Listeners, l)
	reg.Features, reg.LogDirs = allFeatures(), [][16]byte{dirA, dirB}
	rr := e.do(reg).(*kmsg.BrokerRegistrationResponse)
	if rr.ErrorCode != 0 {
		t.Fatalf("register: %v", kerr.ErrorForCode(rr.ErrorCode))
	}
	if hb := e.heartbeat(1, rr.BrokerEpoch, e.c.Image().Offset, false, false); hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("heartbeat: %+v", hb)
	}
	epoch := rr.BrokerEpoch
	e.addBroker(2)

	create := func(name string, assignment ...[]int32) [16]byte {
		t.Helper()
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version = 7
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, -1, -1
		for i, rs := range assignment {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), rs
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
		}
		req.Topics = append(req.Topics, rt)
		resp := e.do(req).(*kmsg.CreateTopicsResponse)
		if resp.Topics[0].ErrorCode != 0 {
			t.Fatalf("create %s: %v", name, kerr.ErrorForCode(resp.Topics[0].ErrorCode))
		}
		return resp.Topics[0].TopicID
	}
	tid := create("t", []int32{1, 2}, []int32{1, 2})
	uid := create("u", []int32{2})
	dirs := func(topic string, p int32) [][16]byte {
		return e.c.Image().TopicByName(topic).Partition(p).Directories
	}
	if got := dirs("t", 0); !slices.Equal(got, [][16]byte{dirUnassigned, dirID(2)}) {
		t.Fatalf("t-0 directories at creation %x", got)
	}

	assign := func(brokerEpoch int64, dir [16]byte, topic [16]byte, parts ...int32) *kmsg.AssignReplicasToDirsResponse {
		t.Helper()
		req := kmsg.NewPtrAssignReplicasToDirsRequest()
		req.BrokerID, req.BrokerEpoch = 1, brokerEpoch
		d := kmsg.NewAssignReplicasToDirsRequestDirectory()
		d.ID = dir
		tp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopic()
		tp.TopicID = topic
		for _, p := range parts {
			pp := kmsg.NewAssignReplicasToDirsRequestDirectoryTopicPartition()
			pp.Partition = p
			tp.Partitions = append(tp.Partitions, pp)
		}
		d.Topics = append(d.Topics, tp)
		req.Directories = append(req.Directories, d)
		return e.do(req).(*kmsg.AssignReplicasToDirsResponse)
	}
	codes := func(r *kmsg.AssignReplicasToDirsResponse) []int16 {
		var out []int16
		for _, d := range r.Directories {
			for _, tp := range d.Topics {
				for _, p := range tp.Partitions {
					out = append(out, p.ErrorCode)
				}
			}
		}
		return out
	}

	before := e.c.Image().TopicByName("t").Partition(0)
	r := assign(epoch, dirA, tid, 0, 1, 7)
	if r.ErrorCode != 0 || !slices.Equal(codes(r), []int16{0, 0, kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("assign: %d %v", r.ErrorCode, codes(r))
	}
	after := e.c.Image().TopicByName("t").Partition(0)
	if !slices.Equal(after.Directories, [][16]byte{dirA, dirID(2)}) || after.PartitionEpoch != before.PartitionEpoch+1 ||
		after.LeaderEpoch != before.LeaderEpoch || after.Leader != before.Leader {
		t.Fatalf("t-0 after the assignment %+v (before %+v)", after, before)
	}
	// The same assignment again changes nothing.
	off := e.c.Image().Offset
	if r := assign(epoch, dirA, tid, 0); r.ErrorCode != 0 || codes(r)[0] != 0 || e.c.Image().Offset != off {
		t.Fatalf("repeat: %d %v offset %d -> %d", r.ErrorCode, codes(r), off, e.c.Image().Offset)
	}
	// Per partition: a topic it does not host, an unknown topic id.
	if r := assign(epoch, dirB, uid, 0); r.ErrorCode != 0 || codes(r)[0] != kerr.NotLeaderForPartition.Code {
		t.Errorf("not a replica: %d %v", r.ErrorCode, codes(r))
	}
	if r := assign(epoch, dirB, [16]byte{9}, 0, 1); r.ErrorCode != 0 || !slices.Equal(codes(r), []int16{kerr.UnknownTopicID.Code, kerr.UnknownTopicID.Code}) {
		t.Errorf("unknown topic: %d %v", r.ErrorCode, codes(r))
	}
	// A stale broker epoch fails the whole request.
	if r := assign(epoch+1, dirB, tid, 0); r.ErrorCode != kerr.StaleBrokerEpoch.Code || len(r.Directories) != 0 {
		t.Errorf("stale epoch: %+v", r)
	}
	// A directory that is not online: the replica is assigned there and
	// leaves the ISR; the leadership moves to broker 2.
	p1 := e.c.Image().TopicByName("t").Partition(1)
	if p1.Leader != 1 {
		// Make broker 1 the leader's replica under test either way: the
		// ISR loses broker 1 and broker 1 never leads.
		t.Logf("t-1 leader %d", p1.Leader)
	}
	if r := assign(epoch, gone, tid, 1); r.ErrorCode != 0 || codes(r)[0] != 0 {
		t.Fatalf("offline dir: %d %v", r.ErrorCode, codes(r))
	}
	p1 = e.c.Image().TopicByName("t").Partition(1)
	if !slices.Equal(p1.Directories, [][16]byte{gone, dirID(2)}) || p1.Leader != 2 || !slices.Equal(p1.Isr, []int32{2}) {
		t.Fatalf("t-1 after an offline dir: %+v", p1)
	}
}

// TestAssignReplicasToDirsOldMetadataVersion: below 3.7-IV2 the request
// fails as a whole.
func TestAssignReplicasToDirsOldMetadataVersion(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.BootstrapFeatures = []Feature{{"metadata.version", mv3_7_IV2 - 1}} })
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID = 1
	if r := e.do(req).(*kmsg.AssignReplicasToDirsResponse); r.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("%+v", r)
	}
}
