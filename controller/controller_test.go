package controller

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/raft"
)

func dirID(b byte) [16]byte { return [16]byte{0: 0x42, 1: b, 15: b} }

// allFeatures are the ranges a kgo-broker node registers with.
func allFeatures() []kmsg.BrokerRegistrationRequestFeature {
	var out []kmsg.BrokerRegistrationRequestFeature
	for _, f := range SupportedFeatures() {
		rf := kmsg.NewBrokerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		out = append(out, rf)
	}
	return out
}

func (e *testEnv) register(id int32, inc byte) *kmsg.BrokerRegistrationResponse {
	e.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID = id
	req.ClusterID = "test-cluster"
	req.IncarnationID = [16]byte{0: byte(id), 1: inc}
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port, l.SecurityProtocol = "PLAINTEXT", "localhost", uint16(9091+id), 0
	req.Listeners = append(req.Listeners, l)
	req.Features = allFeatures()
	req.LogDirs = [][16]byte{dirID(byte(id))}
	return e.do(req).(*kmsg.BrokerRegistrationResponse)
}

func (e *testEnv) heartbeat(id int32, epoch, offset int64, wantFence, wantShutdown bool) *kmsg.BrokerHeartbeatResponse {
	e.t.Helper()
	req := kmsg.NewPtrBrokerHeartbeatRequest()
	req.Version = 1
	req.BrokerID, req.BrokerEpoch, req.CurrentMetadataOffset = id, epoch, offset
	req.WantFence, req.WantShutdown = wantFence, wantShutdown
	return e.do(req).(*kmsg.BrokerHeartbeatResponse)
}

// addBroker registers broker id and unfences it; it returns the broker epoch.
func (e *testEnv) addBroker(id int32) int64 {
	e.t.Helper()
	r := e.register(id, 1)
	if r.ErrorCode != 0 {
		e.t.Fatalf("register %d: %v", id, kerr.ErrorForCode(r.ErrorCode))
	}
	hb := e.heartbeat(id, r.BrokerEpoch, e.c.Image().Offset, false, false)
	if hb.ErrorCode != 0 || hb.IsFenced || !hb.IsCaughtUp {
		e.t.Fatalf("heartbeat %d: %+v", id, hb)
	}
	return r.BrokerEpoch
}

func (e *testEnv) createTopic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsResponseTopic {
	e.t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = configs[i], strp(configs[i+1])
		t.Configs = append(t.Configs, cfg)
	}
	req.Topics = append(req.Topics, t)
	resp := e.do(req).(*kmsg.CreateTopicsResponse)
	if len(resp.Topics) != 1 {
		e.t.Fatalf("CreateTopics: %d results", len(resp.Topics))
	}
	return resp.Topics[0]
}

func errOf(code int16, msg *string) string {
	s := "NONE"
	if code != 0 {
		s = kerr.ErrorForCode(code).(*kerr.Error).Message
	}
	if msg != nil {
		s += ": " + *msg
	}
	return s
}

func TestBootstrapOnEmptyLog(t *testing.T) {
	e := newTestEnv(t, nil)
	img := e.c.Image()
	if mv := img.MetadataVersion(); mv != DefaultMetadataVersion {
		t.Fatalf("metadata.version %d", mv)
	}
	want := map[string]int16{"metadata.version": 33, "eligible.leader.replicas.version": 1, "group.version": 1, "share.version": 2, "streams.version": 1, "transaction.version": 2}
	got := img.Features()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("feature %s = %d, want %d (all %v)", k, got[k], v, got)
		}
	}
	// Offset 0 is the LeaderChange record: Begin, 6 FeatureLevel, the
	// cluster-level min.insync.replicas (ELR is on), End at 1..9.
	if img.Offset != 9 {
		t.Errorf("image offset %d, want 9", img.Offset)
	}
	if v := img.DefaultBrokerConfig()["min.insync.replicas"]; v != "1" {
		t.Errorf("cluster min.insync.replicas %q, want 1", v)
	}
	// A NoOpRecord moves the offset.
	e.c.writeNoOp()
	if got := e.c.Image().Offset; got != 10 {
		t.Errorf("offset after NoOp %d, want 10", got)
	}
}

func TestRestartReplaysAndDoesNotBootstrapAgain(t *testing.T) {
	e := newTestEnv(t, nil)
	epoch := e.addBroker(1)
	rt := e.createTopic("t", 2, 1, "retention.ms", "5")
	before := e.c.Image().Offset
	e.stop()

	// Restart over the same metadata log: the controller replays it and
	// activates in the new epoch with a NoOpRecord, not the bootstrap records.
	e.start(nil)
	img := e.c.Image()
	if img.Offset <= before {
		t.Fatalf("image offset %d, before restart %d", img.Offset, before)
	}
	topic := img.TopicByName("t")
	if topic == nil || topic.ID != rt.TopicID || len(topic.Partitions) != 2 || img.TopicConfig("t")["retention.ms"] != "5" {
		t.Fatalf("topic after restart: %+v", topic)
	}
	var txns, mvRecords int
	e.c.view(func(s *state) { mvRecords = len(s.features); txns = int(s.inTransaction) })
	if mvRecords != 6 || txns != -1 {
		t.Fatalf("features %d, open transaction at %d", mvRecords, txns)
	}
	// The broker is still registered with its epoch; a new incarnation may
	// register (the session was lost with the old controller and is fresh).
	if b := img.Broker(1); b == nil || b.Epoch != epoch {
		t.Fatalf("broker after restart %+v", b)
	}
	hb := e.heartbeat(1, epoch, img.Offset, false, false)
	if hb.ErrorCode != 0 || hb.IsFenced {
		t.Fatalf("heartbeat after restart %+v", hb)
	}
	// Producer ids continue after the restart.
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = 1, epoch
	first := e.do(req).(*kmsg.AllocateProducerIDsResponse).ProducerIDStart
	e.stop()
	e.start(nil)
	if got := e.do(req).(*kmsg.AllocateProducerIDsResponse).ProducerIDStart; got != first+1000 {
		t.Fatalf("producer ids restarted at %d after %d", got, first)
	}
}

func TestDescribeQuorumDelegatesToRaft(t *testing.T) {
	e := newTestEnv(t, nil)
	req := &kmsg.DescribeQuorumRequest{Version: 2, Topics: []kmsg.DescribeQuorumRequestTopic{{
		Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}}
	dq := e.do(req).(*kmsg.DescribeQuorumResponse)
	if p := dq.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.LeaderID != 1 {
		t.Fatalf("%+v", dq)
	}
}

func TestNotController(t *testing.T) {
	fr := newFakeRaft()
	c, err := New(Config{NodeID: 1, Raft: fr, MaxIdleInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fr.elect(2) // someone else leads
	time.Sleep(10 * time.Millisecond)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic = "x"
	req.Topics = append(req.Topics, ct)
	resp, _ := c.Handle(context.Background(), req)
	if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.NotController.Code {
		t.Fatalf("code %d", code)
	}
	for _, r := range []kmsg.Request{
		kmsg.NewPtrBrokerRegistrationRequest(), kmsg.NewPtrBrokerHeartbeatRequest(),
		kmsg.NewPtrAllocateProducerIDsRequest(), kmsg.NewPtrUnregisterBrokerRequest(),
		kmsg.NewPtrListPartitionReassignmentsRequest(),
	} {
		resp, err := c.Handle(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		code := int16(-1)
		switch r := resp.(type) {
		case *kmsg.BrokerRegistrationResponse:
			code = r.ErrorCode
		case *kmsg.BrokerHeartbeatResponse:
			code = r.ErrorCode
		case *kmsg.AllocateProducerIDsResponse:
			code = r.ErrorCode
		case *kmsg.UnregisterBrokerResponse:
			code = r.ErrorCode
		case *kmsg.ListPartitionReassignmentsResponse:
			code = r.ErrorCode
		}
		if code != kerr.NotController.Code {
			t.Errorf("%T: code %d", resp, code)
		}
	}
}

func TestBrokerRegistrationAndUnfence(t *testing.T) {
	e := newTestEnv(t, nil)
	next := e.c.Image().Offset + 1
	r := e.register(1, 1)
	if r.ErrorCode != 0 {
		t.Fatalf("register: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r.BrokerEpoch != next {
		t.Fatalf("broker epoch %d, want the record's offset %d", r.BrokerEpoch, next)
	}
	b := e.c.Image().Broker(1)
	if b == nil || !b.Fenced || b.Epoch != r.BrokerEpoch {
		t.Fatalf("broker %+v", b)
	}
	// Behind the registration record: stays fenced, not caught up.
	hb := e.heartbeat(1, r.BrokerEpoch, r.BrokerEpoch-1, false, false)
	if hb.ErrorCode != 0 || !hb.IsFenced || hb.IsCaughtUp || hb.ShouldShutdown {
		t.Fatalf("early heartbeat %+v", hb)
	}
	hb = e.heartbeat(1, r.BrokerEpoch, r.BrokerEpoch, false, false)
	if hb.ErrorCode != 0 || hb.IsFenced || !hb.IsCaughtUp {
		t.Fatalf("caught-up heartbeat %+v", hb)
	}
	if e.c.Image().Broker(1).Fenced {
		t.Fatal("broker still fenced in the image")
	}
	// Stale epoch.
	if hb := e.heartbeat(1, r.BrokerEpoch+100, 0, false, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale heartbeat %+v", hb)
	}
	if hb := e.heartbeat(7, 1, 0, false, false); hb.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("unregistered heartbeat %+v", hb)
	}
	// Same incarnation re-registers: epoch unchanged.
	r2 := e.register(1, 1)
	if r2.ErrorCode != 0 || r2.BrokerEpoch != r.BrokerEpoch {
		t.Fatalf("re-register same incarnation %+v", r2)
	}
	// A new incarnation while the session is alive: DUPLICATE_BROKER_REGISTRATION.
	if r3 := e.register(1, 2); r3.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("duplicate registration %+v", r3)
	}
	// Wrong cluster id.
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID = 3, "other"
	if resp := e.do(req).(*kmsg.BrokerRegistrationResponse); resp.ErrorCode != kerr.InconsistentClusterID.Code {
		t.Fatalf("cluster id %+v", resp)
	}
	// No log dirs at this metadata.version.
	req = kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.Features = 3, "test-cluster", allFeatures()
	if resp := e.do(req).(*kmsg.BrokerRegistrationResponse); resp.ErrorCode != kerr.InvalidRegistration.Code {
		t.Fatalf("no log dirs %+v", resp)
	}
	// No metadata.version range: only 3.0-IV1 assumed, unsupported.
	req = kmsg.NewPtrBrokerRegistrationRequest()
	req.BrokerID, req.ClusterID, req.LogDirs = 3, "test-cluster", [][16]byte{dirID(3)}
	if resp := e.do(req).(*kmsg.BrokerRegistrationResponse); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("no features %+v", resp)
	}
}

func TestCreateTopics(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.ValidateTopicConfig = func(name, value string) error {
			if name == "retention.ms" {
				if _, err := fmt.Sscan(value, new(int64)); err != nil {
					return fmt.Errorf("Invalid value %s for configuration retention.ms: Not a number of type LONG", value)
				}
				return nil
			}
			if name == "cleanup.policy" {
				return nil
			}
			return fmt.Errorf("Unknown topic config name: %s", name)
		}
	})
	e.addBroker(1)
	e.addBroker(2)
	e.addBroker(3)

	rt := e.createTopic("orders", -1, -1)
	if rt.ErrorCode != 0 || rt.NumPartitions != 1 || rt.ReplicationFactor != 1 || rt.TopicID == [16]byte{} {
		t.Fatalf("defaults: %+v %s", rt, errOf(rt.ErrorCode, rt.ErrorMessage))
	}
	rt = e.createTopic("events", 6, 3, "retention.ms", "1000")
	if rt.ErrorCode != 0 || rt.NumPartitions != 6 || rt.ReplicationFactor != 3 {
		t.Fatalf("explicit: %s", errOf(rt.ErrorCode, rt.ErrorMessage))
	}
	if len(rt.Configs) != 1 || rt.Configs[0].Name != "retention.ms" || *rt.Configs[0].Value != "1000" {
		t.Fatalf("configs %+v", rt.Configs)
	}
	img := e.c.Image()
	topic := img.TopicByName("events")
	if topic == nil || topic.ID != rt.TopicID || len(topic.Partitions) != 6 {
		t.Fatalf("image topic %+v", topic)
	}
	leaders := map[int32]int{}
	for _, p := range topic.SortedPartitions() {
		if len(p.Replicas) != 3 || p.Leader != p.Replicas[0] || len(p.Isr) != 3 || p.LeaderEpoch != 0 || p.PartitionEpoch != 0 {
			t.Fatalf("partition %+v", p)
		}
		if len(p.Directories) != 3 || p.Directories[0] != dirID(byte(p.Replicas[0])) {
			t.Fatalf("directories %x", p.Directories)
		}
		leaders[p.Leader]++
	}
	if len(leaders) != 3 {
		t.Errorf("leaders not spread: %v", leaders)
	}
	if v, _ := img.Config(metadatacache.ConfigResource{Type: 2, Name: "events"}, "retention.ms"); v != "1000" {
		t.Errorf("config %q", v)
	}

	for _, tc := range []struct {
		name       string
		partitions int32
		rf         int16
		configs    []string
		want       string
	}{
		{"orders", 1, 1, nil, "TOPIC_ALREADY_EXISTS: Topic 'orders' already exists."},
		{"bad name", 1, 1, nil, "INVALID_TOPIC_EXCEPTION: Topic name is invalid: 'bad name' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"},
		{"..", 1, 1, nil, "INVALID_TOPIC_EXCEPTION: Topic name is invalid: '..' is not allowed"},
		{"", 1, 1, nil, "INVALID_TOPIC_EXCEPTION: Topic name is invalid: the empty string is not allowed"},
		{strings.Repeat("x", 250), 1, 1, nil, "INVALID_TOPIC_EXCEPTION: Topic name is invalid: the length of '" + strings.Repeat("x", 250) + "' is longer than the max allowed length 249"},
		{"rf", 1, 4, nil, "INVALID_REPLICATION_FACTOR: Unable to replicate the partition 4 time(s): The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."},
		{"rf0", 1, 0, nil, "INVALID_REPLICATION_FACTOR: Replication factor must be larger than 0, or -1 to use the default value."},
		{"p0", 0, 1, nil, "INVALID_PARTITIONS: Number of partitions was set to an invalid non-positive value."},
		{"cfg", 1, 1, []string{"retention.ms", "abc"}, "INVALID_CONFIG: Invalid value abc for configuration retention.ms: Not a number of type LONG"},
		{"cfg2", 1, 1, []string{"nope", "1"}, "INVALID_CONFIG: Unknown topic config name: nope"},
	} {
		rt := e.createTopic(tc.name, tc.partitions, tc.rf, tc.configs...)
		if got := errOf(rt.ErrorCode, rt.ErrorMessage); got != tc.want {
			t.Errorf("%q: got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	// Collision with an existing topic.
	if rt := e.createTopic("a.b", 1, 1); rt.ErrorCode != 0 {
		t.Fatal(errOf(rt.ErrorCode, rt.ErrorMessage))
	}
	if rt := e.createTopic("a_b", 1, 1); errOf(rt.ErrorCode, rt.ErrorMessage) != "INVALID_TOPIC_EXCEPTION: Topic 'a_b' collides with existing topic: a.b" {
		t.Errorf("collision: %s", errOf(rt.ErrorCode, rt.ErrorMessage))
	}

	// One request: duplicate, __cluster_metadata, validate_only.
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 7
	req.ValidateOnly = true
	for _, n := range []string{"dup", "dup", "__cluster_metadata", "vo"} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = n, 2, 2
		req.Topics = append(req.Topics, ct)
	}
	resp := e.do(req).(*kmsg.CreateTopicsResponse)
	got := map[string]string{}
	for _, rt := range resp.Topics {
		got[rt.Topic] = errOf(rt.ErrorCode, rt.ErrorMessage)
	}
	if got["dup"] != "INVALID_REQUEST: Duplicate topic name." ||
		got["__cluster_metadata"] != "INVALID_REQUEST: Creation of internal topic __cluster_metadata is prohibited." ||
		got["vo"] != "NONE" || len(resp.Topics) != 3 {
		t.Errorf("batch: %v", got)
	}
	if e.c.Image().TopicByName("vo") != nil {
		t.Error("validate_only created the topic")
	}

	// Manual assignments.
	req = kmsg.NewPtrCreateTopicsRequest()
	req.Version = 5
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "manual", -1, -1
	for i, reps := range [][]int32{{2, 3}, {3, 1}} {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(i), reps
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
	}
	req.Topics = []kmsg.CreateTopicsRequestTopic{ct}
	resp = e.do(req).(*kmsg.CreateTopicsResponse)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[0].NumPartitions != 2 || resp.Topics[0].ReplicationFactor != 2 {
		t.Fatalf("manual %s", errOf(resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage))
	}
	if p := e.c.Image().TopicByName("manual").Partition(1); p.Leader != 3 || p.Replicas[1] != 1 {
		t.Fatalf("manual partition %+v", p)
	}
	for _, tc := range []struct {
		reps [][]int32
		rf   int16
		want string
	}{
		{[][]int32{{1, 9}}, -1, "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes broker 9, but no such broker is registered."},
		{[][]int32{{1, 1}}, -1, "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes the broker 1 more than once."},
		{[][]int32{{1, 2}, {1}}, -1, "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
		{[][]int32{{}}, -1, "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes an empty replica list."},
		{[][]int32{{1}}, 1, "INVALID_REQUEST: A manual partition assignment was specified, but replication factor was not set to -1."},
	} {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "m2", -1, tc.rf
		for i, reps := range tc.reps {
			a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			a.Partition, a.Replicas = int32(i), reps
			ct.ReplicaAssignment = append(ct.ReplicaAssignment, a)
		}
		req.Topics = []kmsg.CreateTopicsRequestTopic{ct}
		rt := e.do(req).(*kmsg.CreateTopicsResponse).Topics[0]
		if got := errOf(rt.ErrorCode, rt.ErrorMessage); got != tc.want {
			t.Errorf("got %q\nwant %q", got, tc.want)
		}
	}
	// Too many partitions for one batch.
	if rt := e.createTopic("huge", 1<<30, 1); rt.ErrorCode != kerr.PolicyViolation.Code {
		t.Errorf("huge: %s", errOf(rt.ErrorCode, rt.ErrorMessage))
	}
}

func TestCreateTopicsNoBrokers(t *testing.T) {
	e := newTestEnv(t, nil)
	rt := e.createTopic("t", 1, 1)
	if got := errOf(rt.ErrorCode, rt.ErrorMessage); got != "INVALID_REPLICATION_FACTOR: Unable to replicate the partition 1 time(s): All brokers are currently fenced." {
		t.Fatal(got)
	}
}

func TestDeleteTopics(t *testing.T) {
	e := newTestEnv(t, nil)
	e.addBroker(1)
	a := e.createTopic("a", 2, 1)
	b := e.createTopic("b", 1, 1, "cleanup.policy", "compact")
	e.createTopic("c", 1, 1)

	req := kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 5
	req.TopicNames = []string{"a", "nope"}
	resp := e.do(req).(*kmsg.DeleteTopicsResponse)
	got := map[string]string{}
	for _, rt := range resp.Topics {
		got[*rt.Topic] = errOf(rt.ErrorCode, rt.ErrorMessage)
	}
	if got["a"] != "NONE" || got["nope"] != "UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition." {
		t.Fatalf("by name: %v", got)
	}
	if e.c.Image().TopicByID(a.TopicID) != nil {
		t.Fatal("a not deleted")
	}

	req = kmsg.NewPtrDeleteTopicsRequest()
	req.Version = 6
	req.Topics = []kmsg.DeleteTopicsRequestTopic{{TopicID: b.TopicID}, {TopicID: [16]byte{9}}, {Topic: strp("c")}, {}}
	resp = e.do(req).(*kmsg.DeleteTopicsResponse)
	if len(resp.Topics) != 4 {
		t.Fatalf("results %+v", resp.Topics)
	}
	byID := map[[16]byte]string{}
	for _, rt := range resp.Topics {
		byID[rt.TopicID] = errOf(rt.ErrorCode, rt.ErrorMessage)
		if rt.TopicID == b.TopicID && (rt.Topic == nil || *rt.Topic != "b") {
			t.Errorf("name of deleted id: %v", rt.Topic)
		}
	}
	if byID[b.TopicID] != "NONE" || byID[[16]byte{9}] != "UNKNOWN_TOPIC_ID: This server does not host this topic ID." {
		t.Fatalf("by id: %v", byID)
	}
	img := e.c.Image()
	if img.NumTopics() != 0 {
		t.Fatalf("topics left: %v", img.TopicNames())
	}
	if len(img.TopicConfig("b")) != 0 {
		t.Fatal("configs of a deleted topic remain")
	}
	// The name can be reused.
	if rt := e.createTopic("a", 1, 1); rt.ErrorCode != 0 {
		t.Fatal(errOf(rt.ErrorCode, rt.ErrorMessage))
	}
}

func TestCreatePartitions(t *testing.T) {
	e := newTestEnv(t, nil)
	e.addBroker(1)
	e.addBroker(2)
	e.createTopic("t", 2, 2)

	do := func(validate bool, topics ...kmsg.CreatePartitionsRequestTopic) map[string]string {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version = 3
		req.ValidateOnly = validate
		req.Topics = topics
		out := map[string]string{}
		for _, rt := range e.do(req).(*kmsg.CreatePartitionsResponse).Topics {
			out[rt.Topic] = errOf(rt.ErrorCode, rt.ErrorMessage)
		}
		return out
	}
	topic := func(name string, count int32, assign ...[]int32) kmsg.CreatePartitionsRequestTopic {
		t := kmsg.NewCreatePartitionsRequestTopic()
		t.Topic, t.Count = name, count
		for _, a := range assign {
			t.Assignment = append(t.Assignment, kmsg.CreatePartitionsRequestTopicAssignment{Replicas: a})
		}
		return t
	}
	if got := do(true, topic("t", 4)); got["t"] != "NONE" {
		t.Fatal(got)
	}
	if n := len(e.c.Image().TopicByName("t").Partitions); n != 2 {
		t.Fatalf("validate_only changed partitions: %d", n)
	}
	if got := do(false, topic("t", 4)); got["t"] != "NONE" {
		t.Fatal(got)
	}
	if n := len(e.c.Image().TopicByName("t").Partitions); n != 4 {
		t.Fatalf("partitions %d", n)
	}
	if got := do(false, topic("t", 5, []int32{2, 1})); got["t"] != "NONE" {
		t.Fatal(got)
	}
	if p := e.c.Image().TopicByName("t").Partition(4); p.Leader != 2 {
		t.Fatalf("assigned partition %+v", p)
	}
	for _, tc := range []struct {
		topic kmsg.CreatePartitionsRequestTopic
		want  string
	}{
		{topic("t", 5), "INVALID_PARTITIONS: Topic already has 5 partition(s)."},
		{topic("t", 3), "INVALID_PARTITIONS: The topic t currently has 5 partition(s); 3 would not be an increase."},
		{topic("nope", 3), "UNKNOWN_TOPIC_OR_PARTITION"},
		{topic("t", 7, []int32{1, 2}), "INVALID_REPLICA_ASSIGNMENT: Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."},
		{topic("t", 6, []int32{1}), "INVALID_REPLICA_ASSIGNMENT: The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s)."},
	} {
		if got := do(false, tc.topic); got[tc.topic.Topic] != tc.want {
			t.Errorf("got %q\nwant %q", got[tc.topic.Topic], tc.want)
		}
	}
	if got := do(false, topic("t", 9), topic("t", 9)); got["t"] != "INVALID_REQUEST: Duplicate topic name." {
		t.Errorf("duplicate: %v", got)
	}
}

func TestIncrementalAlterConfigs(t *testing.T) {
	e := newTestEnv(t, func(c *Config) {
		c.ValidateTopicConfig = func(name, value string) error {
			if name == "retention.ms" && value == "x" {
				return errors.New("Invalid value x for configuration retention.ms: Not a number of type LONG")
			}
			return nil
		}
		c.ListConfig = func(typ int8, name string) (bool, *string) {
			if name == "cleanup.policy" {
				return true, strp("delete")
			}
			return false, nil
		}
	})
	e.addBroker(1)
	e.createTopic("t", 1, 1)
	do := func(validate bool, res ...kmsg.IncrementalAlterConfigsRequestResource) []string {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = 1
		req.ValidateOnly = validate
		req.Resources = res
		var out []string
		for _, r := range e.do(req).(*kmsg.IncrementalAlterConfigsResponse).Resources {
			out = append(out, r.ResourceName+"="+errOf(r.ErrorCode, r.ErrorMessage))
		}
		return out
	}
	res := func(typ kmsg.ConfigResourceType, name string, ops ...any) kmsg.IncrementalAlterConfigsRequestResource {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = typ, name
		for i := 0; i+2 < len(ops)+1; i += 3 {
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op = ops[i].(string), ops[i+1].(kmsg.IncrementalAlterConfigOp)
			if v, ok := ops[i+2].(string); ok {
				c.Value = strp(v)
			}
			r.Configs = append(r.Configs, c)
		}
		return r
	}
	topicRes := metadatacache.ConfigResource{Type: 2, Name: "t"}
	if got := do(false, res(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", kmsg.IncrementalAlterConfigOpSet, "5000")); got[0] != "t=NONE" {
		t.Fatal(got)
	}
	if v, _ := e.c.Image().Config(topicRes, "retention.ms"); v != "5000" {
		t.Fatalf("retention.ms = %q", v)
	}
	if got := do(true, res(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil)); got[0] != "t=NONE" {
		t.Fatal(got)
	}
	if v, _ := e.c.Image().Config(topicRes, "retention.ms"); v != "5000" {
		t.Fatal("validate_only applied")
	}
	if got := do(false, res(kmsg.ConfigResourceTypeTopic, "t", "cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, "compact")); got[0] != "t=NONE" {
		t.Fatal(got)
	}
	if v, _ := e.c.Image().Config(topicRes, "cleanup.policy"); v != "delete,compact" {
		t.Fatalf("append: %q", v)
	}
	if got := do(false, res(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", kmsg.IncrementalAlterConfigOpDelete, nil)); got[0] != "t=NONE" {
		t.Fatal(got)
	}
	if _, ok := e.c.Image().Config(topicRes, "retention.ms"); ok {
		t.Fatal("delete not applied")
	}
	for _, tc := range []struct {
		r    kmsg.IncrementalAlterConfigsRequestResource
		want string
	}{
		{res(kmsg.ConfigResourceTypeTopic, "nope", "retention.ms", kmsg.IncrementalAlterConfigOpSet, "1"), "nope=UNKNOWN_TOPIC_OR_PARTITION: The topic 'nope' does not exist."},
		{res(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", kmsg.IncrementalAlterConfigOpSet, "x"), "t=INVALID_CONFIG: Invalid value x for configuration retention.ms: Not a number of type LONG"},
		{res(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", kmsg.IncrementalAlterConfigOpAppend, "1"), "t=INVALID_CONFIG: Can't APPEND to key retention.ms because its type is not LIST."},
		{res(kmsg.ConfigResourceTypeBroker, "9", "log.retention.ms", kmsg.IncrementalAlterConfigOpSet, "1"), "9=BROKER_ID_NOT_REGISTERED: No node with id 9 found."},
		{res(kmsg.ConfigResourceTypeBroker, "x", "log.retention.ms", kmsg.IncrementalAlterConfigOpSet, "1"), "x=INVALID_REQUEST: Unable to parse broker name as a base 10 number."},
		{res(kmsg.ConfigResourceTypeBroker, "1", "leader.replication.throttled.rate", kmsg.IncrementalAlterConfigOpSet, "abc"), "1=INVALID_REQUEST: Invalid value abc for configuration leader.replication.throttled.rate: Not a number of type LONG"},
		{res(kmsg.ConfigResourceTypeBroker, "", "follower.replication.throttled.rate", kmsg.IncrementalAlterConfigOpSet, "-1"), "=INVALID_REQUEST: Invalid value -1 for configuration follower.replication.throttled.rate: Value must be at least 0"},
	} {
		if got := do(false, tc.r); got[0] != tc.want {
			t.Errorf("got %q\nwant %q", got[0], tc.want)
		}
	}
	// Broker and cluster-default resources.
	if got := do(false, res(kmsg.ConfigResourceTypeBroker, "1", "log.retention.ms", kmsg.IncrementalAlterConfigOpSet, "1"),
		res(kmsg.ConfigResourceTypeBroker, "", "log.retention.ms", kmsg.IncrementalAlterConfigOpSet, "2")); got[0] != "1=NONE" || got[1] != "=NONE" {
		t.Fatal(got)
	}
	if v := e.c.Image().BrokerConfig(1)["log.retention.ms"]; v != "1" {
		t.Fatalf("broker config %q", v)
	}
	if v := e.c.Image().DefaultBrokerConfig()["log.retention.ms"]; v != "2" {
		t.Fatalf("default broker config %q", v)
	}
	// Duplicate resource.
	got := do(false, res(kmsg.ConfigResourceTypeTopic, "t", "a", kmsg.IncrementalAlterConfigOpSet, "1"),
		res(kmsg.ConfigResourceTypeTopic, "t", "b", kmsg.IncrementalAlterConfigOpSet, "1"))
	if len(got) != 1 || got[0] != "t=INVALID_REQUEST: Duplicate resource." {
		t.Fatal(got)
	}
}

func TestAlterConfigsLegacy(t *testing.T) {
	e := newTestEnv(t, nil)
	e.addBroker(1)
	e.createTopic("t", 1, 1, "retention.ms", "1", "cleanup.policy", "compact")
	req := kmsg.NewPtrAlterConfigsRequest()
	req.Version = 2
	r := kmsg.NewAlterConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	r.Configs = []kmsg.AlterConfigsRequestResourceConfig{{Name: "segment.ms", Value: strp("100")}}
	req.Resources = []kmsg.AlterConfigsRequestResource{r}
	resp := e.do(req).(*kmsg.AlterConfigsResponse)
	if resp.Resources[0].ErrorCode != 0 {
		t.Fatal(errOf(resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage))
	}
	cfg := e.c.Image().TopicConfig("t")
	if len(cfg) != 1 || cfg["segment.ms"] != "100" {
		t.Fatalf("configs %v", cfg)
	}
}

func TestAllocateProducerIDs(t *testing.T) {
	e := newTestEnv(t, nil)
	epoch := e.addBroker(1)
	for i := int64(0); i < 3; i++ {
		req := kmsg.NewPtrAllocateProducerIDsRequest()
		req.BrokerID, req.BrokerEpoch = 1, epoch
		resp := e.do(req).(*kmsg.AllocateProducerIDsResponse)
		if resp.ErrorCode != 0 || resp.ProducerIDStart != i*1000 || resp.ProducerIDLen != 1000 {
			t.Fatalf("block %d: %+v", i, resp)
		}
	}
	if next := e.c.Image().ProducerIDs(); fmt.Sprint(next) == "" {
		t.Fatal("no producer ids in image")
	}
	req := kmsg.NewPtrAllocateProducerIDsRequest()
	req.BrokerID, req.BrokerEpoch = 1, epoch+1
	if resp := e.do(req).(*kmsg.AllocateProducerIDsResponse); resp.ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Fatalf("stale: %+v", resp)
	}
}

func TestSessionTimeoutFencesAndUnfenceRestoresLeaders(t *testing.T) {
	e := newTestEnv(t, nil)
	e1 := e.addBroker(1)
	e2 := e.addBroker(2)
	e.createTopic("solo", 1, 1)
	e.createTopic("pair", 2, 2)
	img := e.c.Image()
	solo := img.TopicByName("solo").Partition(0)
	lonely := solo.Leader // the broker we let time out
	other, otherEpoch := int32(1), e1
	lonelyEpoch := e2
	if lonely == 1 {
		other, otherEpoch, lonelyEpoch = 2, e2, e1
	}

	// Both heartbeat at 8s; only `other` at 16s; at 18.5s lonely's session has expired.
	e.clock.Advance(8 * time.Second)
	e.heartbeat(1, e1, e.c.Image().Offset, false, false)
	e.heartbeat(2, e2, e.c.Image().Offset, false, false)
	e.clock.Advance(8 * time.Second)
	e.heartbeat(other, otherEpoch, e.c.Image().Offset, false, false)
	// The next check is due when lonely's session (last heard at 8s) expires,
	// as QuorumController schedules it, not a polling interval later.
	if next, want := e.c.fenceStaleBrokers(), e.clock.Now().Add(-8*time.Second+e.cfg.SessionTimeout); !next.Equal(want) {
		t.Fatalf("next session expiry %v, want %v (lonely's)", next, want)
	}
	if e.c.Image().Broker(lonely).Fenced {
		t.Fatal("fenced too early")
	}
	e.clock.Advance(2*time.Second + 500*time.Millisecond)
	e.heartbeat(other, otherEpoch, e.c.Image().Offset, false, false)
	e.c.fenceStaleBrokers()
	img = e.c.Image()
	if !img.Broker(lonely).Fenced {
		t.Fatal("not fenced after the session timeout")
	}
	// ELR (KIP-966): the last ISR member leaves the ISR for the ELR, and
	// becomes the last known leader.
	p := img.TopicByName("solo").Partition(0)
	if p.Leader != -1 || len(p.Isr) != 0 || !slices.Equal(p.Elr, []int32{lonely}) || !slices.Equal(p.LastKnownElr, []int32{lonely}) || p.LeaderEpoch != 1 {
		t.Fatalf("solo after fence: %+v", p)
	}
	for _, p := range img.TopicByName("pair").SortedPartitions() {
		if p.Leader != other || len(p.Isr) != 1 || p.Isr[0] != other {
			t.Fatalf("pair after fence: %+v", p)
		}
	}
	// The fenced broker comes back: heartbeat unfences it and gives solo its leader back.
	hb := e.heartbeat(lonely, lonelyEpoch, img.Offset, false, false)
	if hb.IsFenced {
		t.Fatalf("heartbeat %+v", hb)
	}
	p = e.c.Image().TopicByName("solo").Partition(0)
	if p.Leader != lonely || p.LeaderEpoch != 2 || !slices.Equal(p.Isr, []int32{lonely}) || len(p.Elr) != 0 || len(p.LastKnownElr) != 0 {
		t.Fatalf("solo after unfence: %+v", p)
	}
}

func TestControlledShutdown(t *testing.T) {
	e := newTestEnv(t, nil)
	e1 := e.addBroker(1)
	e2 := e.addBroker(2)
	e.createTopic("t", 4, 2)
	off := e.c.Image().Offset
	hb := e.heartbeat(1, e1, off, false, true)
	if hb.IsFenced || hb.ShouldShutdown {
		t.Fatalf("entering controlled shutdown: %+v", hb)
	}
	img := e.c.Image()
	if !img.Broker(1).InControlledShutdown {
		t.Fatal("not in controlled shutdown")
	}
	for _, p := range img.TopicByName("t").SortedPartitions() {
		if p.Leader != 2 || p.InIsr(1) {
			t.Fatalf("partition still led by / in ISR with 1: %+v", p)
		}
	}
	// Broker 2 has caught up past the shutdown offset: 1 may go.
	e.heartbeat(2, e2, e.c.Image().Offset, false, false)
	hb = e.heartbeat(1, e1, e.c.Image().Offset, false, true)
	if !hb.IsFenced || !hb.ShouldShutdown {
		t.Fatalf("shutdown not granted: %+v", hb)
	}
	if !e.c.Image().Broker(1).Fenced {
		t.Fatal("not fenced")
	}
}

func TestUnregisterBroker(t *testing.T) {
	e := newTestEnv(t, nil)
	e.addBroker(1)
	e.addBroker(2)
	e.createTopic("t", 1, 2)
	req := kmsg.NewPtrUnregisterBrokerRequest()
	req.BrokerID = 2
	if resp := e.do(req).(*kmsg.UnregisterBrokerResponse); resp.ErrorCode != 0 {
		t.Fatal(resp.ErrorCode)
	}
	img := e.c.Image()
	if img.Broker(2) != nil {
		t.Fatal("still registered")
	}
	if p := img.TopicByName("t").Partition(0); p.InIsr(2) || p.Leader != 1 {
		t.Fatalf("partition %+v", p)
	}
	req.BrokerID = 5
	if resp := e.do(req).(*kmsg.UnregisterBrokerResponse); resp.ErrorCode != kerr.BrokerIDNotRegistered.Code {
		t.Fatal(resp.ErrorCode)
	}
}

func TestListPartitionReassignments(t *testing.T) {
	e := newTestEnv(t, nil)
	req := kmsg.NewPtrListPartitionReassignmentsRequest()
	resp := e.do(req).(*kmsg.ListPartitionReassignmentsResponse)
	if resp.ErrorCode != 0 || resp.Topics == nil || len(resp.Topics) != 0 {
		t.Fatalf("%+v", resp)
	}
}

func TestAppendFailureStepsDown(t *testing.T) {
	e := newFakeEnv(t, nil)
	e.addBroker(1)
	e.raft.mu.Lock()
	e.raft.failNext = &raft.NotLeaderError{Leader: raft.LeaderAndEpoch{LeaderID: 1, Epoch: 1}}
	e.raft.mu.Unlock()
	if rt := e.createTopic("t", 1, 1); rt.ErrorCode != kerr.NotController.Code {
		t.Fatalf("got %s", errOf(rt.ErrorCode, rt.ErrorMessage))
	}
	// Raft still names us leader: the controller re-activates and works again.
	e.waitActive()
	if rt := e.createTopic("t", 1, 1); rt.ErrorCode != 0 {
		t.Fatal(errOf(rt.ErrorCode, rt.ErrorMessage))
	}
}

func TestFromBrokerConfig(t *testing.T) {
	bc, err := config.SingleNode(map[string]string{"num.partitions": "3", "log.retention.hours": "1"})
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, func(c *Config) {
		fc := FromBrokerConfig(bc)
		c.NumPartitions, c.ValidateTopicConfig, c.TopicConfigs, c.ListConfig = fc.NumPartitions, fc.ValidateTopicConfig, fc.TopicConfigs, fc.ListConfig
		if fc.SessionTimeout != 9*time.Second || fc.MaxIdleInterval != 500*time.Millisecond || fc.DeleteTopicDisable {
			t.Errorf("from config: %+v", fc)
		}
	})
	e.addBroker(1)
	rt := e.createTopic("t", -1, -1, "cleanup.policy", "compact")
	if rt.ErrorCode != 0 || rt.NumPartitions != 3 {
		t.Fatal(errOf(rt.ErrorCode, rt.ErrorMessage))
	}
	cfgs := map[string]kmsg.CreateTopicsResponseTopicConfig{}
	for _, c := range rt.Configs {
		cfgs[c.Name] = c
	}
	if c := cfgs["cleanup.policy"]; c.Source != 1 || *c.Value != "compact" {
		t.Errorf("cleanup.policy %+v", c)
	}
	if c := cfgs["retention.ms"]; c.Source != 4 || *c.Value != "3600000" {
		t.Errorf("retention.ms %+v", c)
	}
	if c, ok := cfgs["min.insync.replicas"]; !ok || c.Source != 5 || *c.Value != "1" {
		t.Errorf("min.insync.replicas %+v", c)
	}
	if rt := e.createTopic("u", 1, 1, "retention.ms", "abc"); rt.ErrorCode != kerr.InvalidConfig.Code {
		t.Errorf("invalid value: %s", errOf(rt.ErrorCode, rt.ErrorMessage))
	} else {
		t.Logf("message: %s", *rt.ErrorMessage)
	}
	if rt := e.createTopic("u", 1, 1, "no.such", "1"); errOf(rt.ErrorCode, rt.ErrorMessage) != "INVALID_CONFIG: Unknown topic config name: no.such" {
		t.Errorf("unknown: %s", errOf(rt.ErrorCode, rt.ErrorMessage))
	}
}

func TestNoOpRecordsAdvanceTheLog(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxIdleInterval = 10 * time.Millisecond })
	start := e.c.Image().Offset
	deadline := time.Now().Add(5 * time.Second)
	for e.c.Image().Offset < start+3 {
		if time.Now().After(deadline) {
			t.Fatalf("offset stuck at %d", e.c.Image().Offset)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if hw := e.node.HighWatermark(); hw < start+3 {
		t.Fatalf("high watermark %d", hw)
	}
}

func TestConcurrentRequests(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.MaxIdleInterval = 5 * time.Millisecond })
	epoch := e.addBroker(1)
	errs := make(chan error, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 50; i++ {
			resp, err := e.c.Handle(context.Background(), &kmsg.BrokerHeartbeatRequest{Version: 1, BrokerID: 1, BrokerEpoch: epoch, CurrentMetadataOffset: e.c.Image().Offset})
			if err != nil || resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode != 0 {
				errs <- fmt.Errorf("heartbeat: %v %+v", err, resp)
			}
		}
	}()
	var wg = make(chan struct{}, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			defer func() { wg <- struct{}{} }()
			for i := 0; i < 10; i++ {
				req := kmsg.NewPtrCreateTopicsRequest()
				req.Version = 7
				ct := kmsg.NewCreateTopicsRequestTopic()
				ct.Topic, ct.NumPartitions, ct.ReplicationFactor = fmt.Sprintf("t-%d-%d", g, i), 2, 1
				req.Topics = append(req.Topics, ct)
				resp, err := e.c.Handle(context.Background(), req)
				if err != nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != 0 {
					errs <- fmt.Errorf("create: %v %+v", err, resp)
				}
				_ = e.c.Image().TopicNames()
			}
		}(g)
	}
	for g := 0; g < 8; g++ {
		<-wg
	}
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.c.Image().NumTopics(); n != 80 {
		t.Fatalf("topics %d", n)
	}
}

func TestPlacementPrefersUnfencedAndNeverLeadsFenced(t *testing.T) {
	e := newTestEnv(t, nil)
	e.addBroker(1)
	e.addBroker(2)
	r := e.register(3, 1) // registered, still fenced
	if r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	rt := e.createTopic("t", 6, 3)
	if rt.ErrorCode != 0 {
		t.Fatal(errOf(rt.ErrorCode, rt.ErrorMessage))
	}
	for _, p := range e.c.Image().TopicByName("t").SortedPartitions() {
		if p.Leader == 3 || p.InIsr(3) || !p.HasReplica(3) || len(p.Isr) != 2 {
			t.Fatalf("partition %+v", p)
		}
	}
	// Broker 3 catches up: unfenced, joins no ISR by itself (that is the
	// leader's job through AlterPartition) and leadership stays.
	hb := e.heartbeat(3, r.BrokerEpoch, e.c.Image().Offset, false, false)
	if hb.IsFenced {
		t.Fatalf("%+v", hb)
	}
}

func TestPlacerStripes(t *testing.T) {
	brokers := []usableBroker{{id: 1}, {id: 2}, {id: 3}}
	got, err := placeReplicas(rand.New(rand.NewPCG(7, 7)), brokers, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	leaders := map[int32]bool{}
	for _, reps := range got {
		seen := map[int32]bool{}
		for _, r := range reps {
			if seen[r] {
				t.Fatalf("duplicate replica in %v", reps)
			}
			seen[r] = true
		}
		leaders[reps[0]] = true
	}
	if len(leaders) != 3 {
		t.Fatalf("leaders %v from %v", leaders, got)
	}
	rackA, rackB := "a", "b"
	racked := []usableBroker{{id: 1, rack: &rackA}, {id: 2, rack: &rackA}, {id: 3, rack: &rackB}, {id: 4, rack: &rackB}}
	got, err = placeReplicas(rand.New(rand.NewPCG(1, 1)), racked, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	rackOf := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
	for _, reps := range got {
		if rackOf[reps[0]] == rackOf[reps[1]] {
			t.Fatalf("both replicas in one rack: %v", reps)
		}
	}
	if _, err := placeReplicas(rand.New(rand.NewPCG(1, 1)), []usableBroker{{id: 1, fenced: true}}, 1, 1); err == nil || err.Error() != "All brokers are currently fenced." {
		t.Fatalf("all fenced: %v", err)
	}
}

// The single combined node's clean restart: controlled shutdown moves
// leadership to none and fences the broker, so the next incarnation
// registers at once and gets its leaderships back when unfenced.
func TestSingleNodeControlledShutdownAndRestart(t *testing.T) {
	e := newTestEnv(t, nil)
	epoch := e.addBroker(1)
	e.createTopic("t", 2, 1)
	hb := e.heartbeat(1, epoch, e.c.Image().Offset, false, true)
	if hb.IsFenced || hb.ShouldShutdown {
		t.Fatalf("first shutdown heartbeat %+v", hb)
	}
	for _, p := range e.c.Image().TopicByName("t").SortedPartitions() {
		if p.Leader != -1 || len(p.Isr) != 0 || !slices.Equal(p.Elr, []int32{1}) {
			t.Fatalf("partition during controlled shutdown %+v", p)
		}
	}
	hb = e.heartbeat(1, epoch, e.c.Image().Offset, false, true)
	if !hb.IsFenced || !hb.ShouldShutdown {
		t.Fatalf("second shutdown heartbeat %+v", hb)
	}
	e.stop()
	e.start(nil)
	r := e.register(1, 2)
	if r.ErrorCode != 0 {
		t.Fatalf("re-register after clean shutdown: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if hb := e.heartbeat(1, r.BrokerEpoch, e.c.Image().Offset, false, false); hb.IsFenced {
		t.Fatalf("%+v", hb)
	}
	for _, p := range e.c.Image().TopicByName("t").SortedPartitions() {
		if p.Leader != 1 {
			t.Fatalf("partition after restart %+v", p)
		}
	}
	// An unclean restart (no controlled shutdown) must wait for the session.
	e.stop()
	e.start(nil)
	if r2 := e.register(1, 3); r2.ErrorCode != kerr.DuplicateBrokerRegistration.Code {
		t.Fatalf("unclean restart: %+v", r2)
	}
	e.clock.Advance(10 * time.Second)
	e.c.fenceStaleBrokers()
	if r2 := e.register(1, 3); r2.ErrorCode != 0 {
		t.Fatalf("after the session expired: %v", kerr.ErrorForCode(r2.ErrorCode))
	}
}
