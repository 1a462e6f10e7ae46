package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// registerDirs registers broker id with log dirs and unfences it; it
// returns the broker epoch.
func (e *testEnv) registerDirs(id int32, dirs ...[16]byte) int64 {
	e.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version, req.BrokerID, req.ClusterID = 4, id, "test-cluster"
	req.IncarnationID = [16]byte{0: byte(id), 1: 1}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "localhost", uint16(9091+id)
	req.Listeners = append(req.Listeners, l)
	req.Features, req.LogDirs = allFeatures(), dirs
	rr := e.do(req).(*kmsg.BrokerRegistrationResponse)
	if rr.ErrorCode != 0 {
		e.t.Fatalf("register %d: %v", id, kerr.ErrorForCode(rr.ErrorCode))
	}
	if hb := e.heartbeat(id, rr.BrokerEpoch, e.c.Image().Offset, false, false); hb.ErrorCode != 0 || hb.IsFenced {
		e.t.Fatalf("heartbeat %d: %+v", id, hb)
	}
	return rr.BrokerEpoch
}

// heartbeatOffline is a heartbeat reporting offline log dirs.
func (e *testEnv) heartbeatOffline(id int32, epoch int64, offline ...[16]byte) *kmsg.BrokerHeartbeatResponse {
	e.t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = id, epoch, e.c.Image().Offset
	req.OfflineLogDirs = offline
	hb := e.do(req).(*kmsg.BrokerHeartbeatResponse)
	if hb.ErrorCode != 0 {
		e.t.Fatalf("heartbeat %d: %v", id, kerr.ErrorForCode(hb.ErrorCode))
	}
	return hb
}

func (e *testEnv) assignDir(id int32, epoch int64, dir, topic [16]byte, part int32) {
	e.t.Helper()
	req := kmsg.NewPtrAssignReplicasToDirsRequest()
	req.BrokerID, req.BrokerEpoch = id, epoch
	req.Directories = []kmsg.AssignReplicasToDirsRequestDirectory{{ID: dir, Topics: []kmsg.AssignReplicasToDirsRequestDirectoryTopic{{
		TopicID: topic, Partitions: []kmsg.AssignReplicasToDirsRequestDirectoryTopicPartition{{Partition: part}},
	}}}}
	if r := e.do(req).(*kmsg.AssignReplicasToDirsResponse); r.ErrorCode != 0 || r.Directories[0].Topics[0].Partitions[0].ErrorCode != 0 {
		e.t.Fatalf("assign: %+v", r)
	}
}

// TestDirectoriesOffline: broker 1 has two log dirs, leading t-0 from dirA
// and t-1 from dirB. A heartbeat reporting dirA offline moves t-0's
// leadership to broker 2 and takes broker 1 out of its ISR, leaves t-1
// alone, and records broker 1's remaining online dir
// (ReplicationControlManager.handleDirectoriesOffline). Reporting it again
// writes nothing. Broker 1's replica in the failed dir never leads again,
// even from the ISR (LeaderAcceptor: its dir is not online).
func TestDirectoriesOffline(t *testing.T) {
	e := newTestEnv(t, nil)
	dirA, dirB := dirID(10), dirID(11)
	epoch1 := e.registerDirs(1, dirA, dirB)
	epoch2 := e.addBroker(2)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", -1, -1
	for i := range int32(2) {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = i, []int32{1, 2}
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	req.Topics = append(req.Topics, rt)
	ct := e.do(req).(*kmsg.CreateTopicsResponse).Topics[0]
	if ct.ErrorCode != 0 {
		t.Fatalf("create: %v", kerr.ErrorForCode(ct.ErrorCode))
	}
	tid := ct.TopicID
	e.assignDir(1, epoch1, dirA, tid, 0)
	e.assignDir(1, epoch1, dirB, tid, 1)
	part := func(p int32) *metadatacache.Partition { return e.c.Image().TopicByName("t").Partition(p) }
	if p0, p1 := part(0), part(1); p0.Leader != 1 || p1.Leader != 1 {
		t.Fatalf("leaders before: %d %d", p0.Leader, p1.Leader)
	}
	p1Before := *part(1)

	hb := e.heartbeatOffline(1, epoch1, dirA)
	if hb.IsFenced {
		t.Fatalf("broker 1 fenced by an offline dir: %+v", hb)
	}
	p0 := part(0)
	if p0.Leader != 2 || !slices.Equal(p0.Isr, []int32{2}) || !slices.Equal(p0.Directories, [][16]byte{dirA, dirID(2)}) {
		t.Fatalf("t-0 after dirA failed: %+v", p0)
	}
	if p1 := part(1); p1.Leader != 1 || p1.LeaderEpoch != p1Before.LeaderEpoch || p1.PartitionEpoch != p1Before.PartitionEpoch {
		t.Fatalf("t-1 (dirB) changed: %+v (before %+v)", p1, p1Before)
	}
	if b := e.c.Image().Broker(1); !slices.Equal(b.Directories, [][16]byte{dirB}) || b.Fenced {
		t.Fatalf("broker 1 after dirA failed: %+v", b)
	}

	// The same report again (every heartbeat carries it) writes nothing.
	off := e.c.Image().Offset
	e.heartbeatOffline(1, epoch1, dirA)
	if e.c.Image().Offset != off {
		t.Fatalf("a repeated offline report wrote records: offset %d -> %d", off, e.c.Image().Offset)
	}

	// Broker 1 back in t-0's ISR (as a leader could ask): when broker 2 is
	// fenced, broker 1 is in the ISR but its dir is offline, so t-0 has no
	// leader rather than one that answers KAFKA_STORAGE_ERROR.
	e.alterIsr(tid, 2, map[int32]int64{1: epoch1, 2: epoch2}, 2, 1)
	if p0 := part(0); !slices.Equal(p0.Isr, []int32{2, 1}) {
		t.Fatalf("t-0 ISR: %v", p0.Isr)
	}
	e.heartbeat(2, epoch2, e.c.Image().Offset, true, false)
	if p0 := part(0); p0.Leader != -1 {
		t.Fatalf("t-0 elected broker %d whose dir is offline: %+v", p0.Leader, p0)
	}
	if p1 := part(1); p1.Leader != 1 {
		t.Fatalf("t-1 leader %d", p1.Leader)
	}
}

// TestDirectoriesOfflineOldMetadataVersion: below 3.7-IV2 (no directory
// assignment) OfflineLogDirs is not acted on.
func TestDirectoriesOfflineOldMetadataVersion(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.BootstrapFeatures = []Feature{{"metadata.version", mv3_7_IV2 - 1}} })
	epoch := e.addBroker(1)
	e.createTopic("t", 1, 1)
	off := e.c.Image().Offset
	e.heartbeatOffline(1, epoch, dirID(1))
	if p := e.c.Image().TopicByName("t").Partition(0); p.Leader != 1 || e.c.Image().Offset != off {
		t.Fatalf("acted on OfflineLogDirs below 3.7-IV2: %+v, offset %d -> %d", p, off, e.c.Image().Offset)
	}
}

func TestHasOnlineDir(t *testing.T) {
	s := newState()
	s.brokers[1] = &brokerState{id: 1, logDirs: [][16]byte{dirID(1)}}
	s.brokers[2] = &brokerState{id: 2}
	for _, tc := range []struct {
		id   int32
		dir  [16]byte
		want bool
	}{
		{1, dirID(1), true}, {1, dirID(9), false}, {1, dirUnassigned, true}, {1, dirMigrating, true},
		{1, dirLost, false}, {2, dirID(9), true}, {3, dirID(1), false},
	} {
		if got := s.hasOnlineDir(tc.id, tc.dir); got != tc.want {
			t.Errorf("hasOnlineDir(%d, %x) = %v", tc.id, tc.dir, got)
		}
	}
}

// TestCordonedBrokerPlacement (KIP-1066): from 4.3-IV0 a broker whose every
// log dir is cordoned takes no new replicas: with it the only broker,
// CreateTopics fails with INVALID_REPLICATION_FACTOR; once one dir is
// uncordoned it works again. Setting cordoned.log.dirs needs 4.3-IV0.
func TestCordonedBrokerPlacement(t *testing.T) {
	for _, mv := range []int16{metadatacache.MV4_3_IV0 - 1, metadatacache.MV4_3_IV0} {
		e := newTestEnv(t, func(c *Config) { c.BootstrapFeatures = []Feature{{"metadata.version", mv}} })
		dirA, dirB := dirID(10), dirID(11)
		epoch := e.registerDirs(1, dirA, dirB)
		cordon := func(dirs ...[16]byte) {
			t.Helper()
			req := kmsg.NewPtrBrokerHeartbeatRequest()
			req.Version, req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = 2, 1, epoch, e.c.Image().Offset
			req.CordonedLogDirs = append([][16]byte{}, dirs...)
			if hb := e.do(req).(*kmsg.BrokerHeartbeatResponse); hb.ErrorCode != 0 {
				t.Fatalf("heartbeat: %v", kerr.ErrorForCode(hb.ErrorCode))
			}
		}
		cordon(dirA, dirB)
		r := e.createTopic("all-cordoned", 1, 1)
		if want := int16(0); mv >= metadatacache.MV4_3_IV0 {
			want = kerr.InvalidReplicationFactor.Code
			if r.ErrorCode != want {
				t.Fatalf("mv %d: create with every dir cordoned: %s", mv, errOf(r.ErrorCode, r.ErrorMessage))
			}
		} else if r.ErrorCode != want {
			t.Fatalf("mv %d: cordoned dirs applied below 4.3-IV0: %s", mv, errOf(r.ErrorCode, r.ErrorMessage))
		}
		cordon(dirA)
		if r := e.createTopic("one-cordoned", 1, 1); r.ErrorCode != 0 {
			t.Fatalf("mv %d: create with one dir open: %s", mv, errOf(r.ErrorCode, r.ErrorMessage))
		}

		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "cordoned.log.dirs", strp("*")
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp := e.do(req).(*kmsg.IncrementalAlterConfigsResponse)
		got := resp.Resources[0].ErrorCode
		if (mv < metadatacache.MV4_3_IV0) != (got == kerr.InvalidConfig.Code) || mv >= metadatacache.MV4_3_IV0 && got != 0 {
			t.Errorf("mv %d: setting cordoned.log.dirs: %s", mv, errOf(got, resp.Resources[0].ErrorMessage))
		}
	}
}
