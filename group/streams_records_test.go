package group

import (
	"encoding/hex"
	"testing"

	"github.com/kgo-broker/kgo-broker/coordinator"
)

// TestStreamsRecordBytes pins the streams group records (KIP-1071,
// StreamsGroup*Key/Value.json version 0) to what Kafka 4.4's generated
// classes write for the same values (kafka-group-coordinator-4.4.0.jar:
// MessageUtil.toCoordinatorTypePrefixedBytes for the key,
// toVersionPrefixedBytes(0, value) for the value).
func TestStreamsRecordBytes(t *testing.T) {
	g := newStreamsGroup("g")
	g.epoch = 3
	g2 := newStreamsGroup("g")
	g2.epoch, g2.metadataHash, g2.validatedTopologyEpoch = 3, 7, 0
	g2.lastAssignmentConfigs = map[string]string{"num.standby.replicas": "1"}
	rack, inst := "r", "i"
	m := newStreamsMember("m")
	m.rackID, m.clientID, m.clientHost, m.rebalanceTimeoutMs, m.processID = &rack, "c", "h", 1000, "p"
	m.endpoint = &endpoint{host: "x", port: 8080}
	m.clientTags = [][2]string{{"k", "v"}}
	m2 := newStreamsMember("m")
	m2.instanceID, m2.clientID, m2.clientHost, m2.rebalanceTimeoutMs, m2.processID = &inst, "c", "h", 1000, "p"
	target := newTasksTuple()
	target.active.add("0", 0)
	target.active.add("0", 2)
	target.standby.add("1", 1)
	cur := newStreamsMember("m")
	cur.epoch, cur.prevEpoch, cur.state = 2, 1, smUnrevokedTasks
	cur.assigned.active.add("0", 2)
	cur.assigned.active.add("0", 0)
	cur.activeEpochs = map[string]map[int32]int32{"0": {0: 1, 2: 2}}
	cur.revoking.active.add("0", 1)
	topo := &streamsTopology{epoch: 0, subs: []subtopology{
		{id: "0", sources: []string{"in"}, repartitionSinks: []string{"r"}},
		{id: "1", changelogs: []topicInfo{{name: "c", configs: [][2]string{{"cleanup.policy", "compact"}}}},
			repartitionSources: []topicInfo{{name: "r"}}, copartition: []copartitionGroup{{sources: []int16{0}, repartition: []int16{0}}}},
	}}
	for _, c := range []struct {
		name       string
		r          record
		key, value string
	}{
		{"metadata", streamsGroupMetadataRecord(g), "0011000167", "000000000003000000000000000000"},
		{"metadata tags", streamsGroupMetadataRecord(g2), "0011000167", "000000000003000000000000000702000400000000011902156e756d2e7374616e6462792e7265706c69636173023100"},
		{"member", streamsMemberMetadataRecord("g", m), "001300016700016d", "000000027202630268000003e80000000002700102781f900002026b02760000"},
		{"member static", streamsMemberMetadataRecord("g", m2), "001300016700016d", "000002690002630268000003e8000000000270ff0100"},
		{"target metadata", streamsTargetMetadataRecord("g", 4, 5), "0014000167", "0000000000040100080000000000000005"},
		{"target member", streamsTargetMemberRecord("g", "m", target), "001500016700016d", "0000020230030000000000000002000202310200000001000100"},
		{"current", streamsCurrentAssignmentRecord("g", cur), "001600016700016d", "00000000000200000001010202300300000000000000020100090300000001000000020101020230020000000100010100"},
		{"topology", streamsTopologyRecord("g", topo), "0017000167", "0000000000000302300203696e010102027201010002310101020263000000000000020f636c65616e75702e706f6c69637908636f6d7061637400000102027200000000000001000202000001020000000000"},
	} {
		if k := hex.EncodeToString(c.r.Key); k != c.key {
			t.Errorf("%s key %s, want %s", c.name, k, c.key)
		}
		if v := hex.EncodeToString(c.r.Value); v != c.value {
			t.Errorf("%s value %s\n want %s", c.name, v, c.value)
		}
	}
}

// TestStreamsRecordReplay: every record read back gives the group it was
// written from.
func TestStreamsRecordReplay(t *testing.T) {
	s := newShard(&Coordinator{}, nil)
	rack := "r"
	m := newStreamsMember("m")
	m.rackID, m.clientID, m.clientHost, m.rebalanceTimeoutMs, m.processID = &rack, "c", "h", 1000, "p"
	m.endpoint = &endpoint{host: "x", port: 8080}
	m.epoch, m.prevEpoch, m.state = 2, 1, smUnrevokedTasks
	m.assigned.active.add("0", 0)
	m.activeEpochs = map[string]map[int32]int32{"0": {0: 2}}
	m.revoking.active.add("0", 1)
	g := newStreamsGroup("g")
	g.epoch, g.validatedTopologyEpoch = 3, 0
	g.lastAssignmentConfigs = map[string]string{"num.standby.replicas": "0"}
	topo := &streamsTopology{subs: []subtopology{{id: "0", sources: []string{"in"}}}}
	target := newTasksTuple()
	target.active.add("0", 0)
	for _, r := range []record{streamsGroupMetadataRecord(g), streamsTopologyRecord("g", topo), streamsMemberMetadataRecord("g", m),
		streamsTargetMemberRecord("g", "m", target), streamsTargetMetadataRecord("g", 3, 9), streamsCurrentAssignmentRecord("g", m)} {
		s.replay(0, -1, r.Key, r.Value)
	}
	got := s.stgs["g"]
	if got == nil || got.epoch != 3 || got.validatedTopologyEpoch != 0 || got.lastAssignmentConfigs["num.standby.replicas"] != "0" ||
		got.assignmentEpoch != 3 || got.assignmentTs != 9 || got.topology == nil || !got.topology.equal(topo) {
		t.Fatalf("group after replay: %+v", got)
	}
	gm := got.members["m"]
	if gm == nil || !gm.sameMetadata(m) || gm.epoch != 2 || gm.prevEpoch != 1 || gm.state != smUnrevokedTasks ||
		!gm.assigned.equal(m.assigned) || !gm.revoking.equal(m.revoking) || gm.activeEpochs["0"][0] != 2 || !got.target["m"].equal(target) {
		t.Fatalf("member after replay: %+v", gm)
	}
	for _, r := range streamsGroupTombstones(got) {
		s.replay(0, -1, r.Key, r.Value)
	}
	if s.stgs["g"] != nil {
		t.Fatal("group still there after its tombstones")
	}
}

func streamsFuzzRecords() []record {
	rack := "r"
	m := newStreamsMember("m")
	m.rackID, m.clientID, m.clientHost, m.processID = &rack, "c", "h", "p"
	m.endpoint = &endpoint{host: "x", port: 1}
	m.clientTags = [][2]string{{"k", "v"}}
	m.epoch, m.prevEpoch = 2, 1
	m.assigned.active.add("0", 1)
	m.activeEpochs = map[string]map[int32]int32{"0": {1: 2}}
	m.revoking.standby.add("1", 0)
	g := newStreamsGroup("g")
	g.epoch, g.validatedTopologyEpoch, g.storedDescEpoch, g.failedDescEpoch = 3, 0, 1, 2
	g.lastAssignmentConfigs = map[string]string{"num.standby.replicas": "1"}
	topo := &streamsTopology{subs: []subtopology{{id: "0", sources: []string{"in"}, repartitionSinks: []string{"r"}},
		{id: "1", repartitionSources: []topicInfo{{name: "r", configs: [][2]string{{"a", "b"}}}}, copartition: []copartitionGroup{{repartition: []int16{0}}}}}}
	return []record{streamsGroupMetadataRecord(g), streamsTopologyRecord("g", topo), streamsMemberMetadataRecord("g", m),
		streamsTargetMetadataRecord("g", 3, 5), streamsTargetMemberRecord("g", "m", m.assigned), streamsCurrentAssignmentRecord("g", m)}
}

// FuzzReplayStreamsRecord: a streams group record, however malformed,
// never panics replay.
func FuzzReplayStreamsRecord(f *testing.F) {
	for _, r := range streamsFuzzRecords() {
		f.Add(r.Key, r.Value, false)
		f.Add(r.Key, []byte(nil), true)
		if len(r.Value) > 3 {
			f.Add(r.Key, r.Value[:len(r.Value)-3], false)
		}
	}
	f.Fuzz(func(t *testing.T, k, v []byte, tombstone bool) {
		if tombstone {
			v = nil
		} else if v == nil {
			v = []byte{}
		}
		s := fuzzShard()
		for _, r := range streamsFuzzRecords() {
			s.replay(0, coordinator.NoProducer, r.Key, r.Value)
		}
		s.replay(0, coordinator.NoProducer, k, v)
		for _, g := range s.stgs {
			_ = g.stateString()
			_ = g.topicSubtopologies()
			for _, m := range g.members {
				_ = streamsCurrentAssignmentRecord(g.id, m)
				_ = streamsMemberMetadataRecord(g.id, m)
			}
			if g.topology != nil {
				_ = streamsTopologyRecord(g.id, g.topology)
			}
			_ = streamsGroupMetadataRecord(g)
		}
	})
}
