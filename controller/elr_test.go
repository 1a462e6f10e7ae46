package controller

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// Eligible leader replicas (KIP-966) and elections: PartitionChangeBuilder's
// rules, one transcript per rule, then the controller decisions that use
// them (fencing, registration after an unclean shutdown, min ISR changes,
// the feature's upgrade and downgrade, ElectLeaders).

// changeCase is one PartitionChangeBuilder transcript: a partition, what a
// decision sets, and the record (nil fields: unchanged).
type changeCase struct {
	name            string
	p               partitionState
	elr             bool
	minISR          int
	election        election
	acceptable      []int32
	uncleanShutdown int32
	targetIsr       []int32 // nil: the partition's ISR
	// want: nil means no record.
	want *wantChange
}

type wantChange struct {
	leader       int32 // -2: unchanged
	isr          []int32
	elr          []int32
	lastKnownElr []int32
	lrs          int8 // -1: unchanged
}

func TestPartitionChangeBuilderELR(t *testing.T) {
	none := int32(-1)
	for _, c := range []changeCase{
		{name: "shrink below min ISR: the removed members become eligible",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 1},
			elr: true, minISR: 2, acceptable: []int32{1, 2, 3}, uncleanShutdown: none, targetIsr: []int32{1},
			want: &wantChange{leader: -2, isr: []int32{1}, elr: []int32{2, 3}, lrs: -1}},
		{name: "shrink to min ISR: no ELR",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{1, 2, 3}, leader: 1},
			elr: true, minISR: 2, acceptable: []int32{1, 2, 3}, uncleanShutdown: none, targetIsr: []int32{1, 2},
			want: &wantChange{leader: -2, isr: []int32{1, 2}, lrs: -1}},
		{name: "ISR back at min ISR clears the ELR",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{1}, elr: []int32{2, 3}, leader: 1},
			elr: true, minISR: 2, acceptable: []int32{1, 2, 3}, uncleanShutdown: none, targetIsr: []int32{1, 2},
			want: &wantChange{leader: -2, isr: []int32{1, 2}, elr: []int32{}, lrs: -1}},
		{name: "the last ISR member is fenced: the ISR empties, the leader is remembered",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{1}, elr: []int32{2, 3}, leader: 1},
			elr: true, minISR: 2, acceptable: nil, uncleanShutdown: none, targetIsr: []int32{},
			want: &wantChange{leader: -1, isr: []int32{}, elr: []int32{1, 2, 3}, lastKnownElr: []int32{1}, lrs: -1}},
		{name: "without ELR the last ISR member stays",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{1}, leader: 1},
			elr: false, minISR: 2, acceptable: nil, uncleanShutdown: none, targetIsr: []int32{},
			want: &wantChange{leader: -1, lrs: -1}},
		{name: "election from the ELR when the ISR is empty",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{}, elr: []int32{1, 2, 3}, lastKnownElr: []int32{1}, leader: -1},
			elr: true, minISR: 2, acceptable: []int32{2}, uncleanShutdown: none,
			want: &wantChange{leader: 2, isr: []int32{2}, elr: []int32{1, 3}, lastKnownElr: []int32{}, lrs: -1}},
		{name: "unclean shutdown: the broker leaves the ELR",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{}, elr: []int32{2, 3}, lastKnownElr: []int32{1}, leader: -1},
			elr: true, minISR: 2, acceptable: nil, uncleanShutdown: 2,
			want: &wantChange{leader: -2, elr: []int32{3}, lrs: -1}},
		{name: "ISR and ELR empty: the last known leader is elected, as an unclean election",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{}, elr: []int32{}, lastKnownElr: []int32{1}, leader: -1},
			elr: true, minISR: 2, acceptable: []int32{1, 2}, uncleanShutdown: none,
			want: &wantChange{leader: 1, isr: []int32{1}, lastKnownElr: []int32{}, lrs: 1}},
		{name: "the last known leader must be alive",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{}, elr: []int32{}, lastKnownElr: []int32{1}, leader: -1},
			elr: true, minISR: 2, acceptable: []int32{2}, uncleanShutdown: none,
			want: nil},
		{name: "unclean election beats a dead ELR and clears it",
			p:   partitionState{replicas: []int32{1, 2}, isr: []int32{}, elr: []int32{1}, lastKnownElr: []int32{1}, leader: -1},
			elr: true, minISR: 2, election: electUnclean, acceptable: []int32{2}, uncleanShutdown: none,
			want: &wantChange{leader: 2, isr: []int32{2}, elr: []int32{}, lastKnownElr: []int32{}, lrs: 1}},
		{name: "ELR disabled (downgraded): the next change clears the lists",
			p:   partitionState{replicas: []int32{1, 2, 3}, isr: []int32{1, 3}, elr: []int32{2}, leader: 1},
			elr: false, minISR: 2, acceptable: []int32{1, 2, 3}, uncleanShutdown: none, targetIsr: []int32{1},
			want: &wantChange{leader: -2, isr: []int32{1}, elr: []int32{}, lrs: -1}},
		{name: "preferred election moves leadership to the first replica",
			p:   partitionState{replicas: []int32{1, 2}, isr: []int32{1, 2}, leader: 2},
			elr: true, minISR: 1, election: electPreferred, acceptable: []int32{1, 2}, uncleanShutdown: none,
			want: &wantChange{leader: 1, lrs: -1}},
		{name: "preferred election: the first replica is not in the ISR",
			p:   partitionState{replicas: []int32{1, 2}, isr: []int32{2}, leader: 2},
			elr: true, minISR: 1, election: electPreferred, acceptable: []int32{1, 2}, uncleanShutdown: none,
			want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.p
			b := &changeBuilder{
				mv: metadatacache.LatestMetadataVersion, topicID: [16]byte{1}, p: &p,
				acceptable: func(r int32) bool { return slices.Contains(c.acceptable, r) },
				minISR:     c.minISR, elr: c.elr, election: c.election, uncleanShutdown: c.uncleanShutdown,
				targetIsr: p.isr, targetElr: p.elr, targetLastKnownElr: p.lastKnownElr, targetLRS: p.leaderRecoveryState,
			}
			if c.targetIsr != nil {
				b.targetIsr = c.targetIsr
			}
			rec := b.build()
			if c.want == nil {
				if rec != nil {
					t.Fatalf("want no change, got %+v", rec)
				}
				return
			}
			if rec == nil {
				t.Fatalf("want %+v, got no change", c.want)
			}
			w := c.want
			if rec.Leader != w.leader || !equalNil(rec.Isr, w.isr) || !equalNil(rec.EligibleLeaderReplicas, w.elr) ||
				!equalNil(rec.LastKnownElr, w.lastKnownElr) || rec.LeaderRecoveryState != w.lrs {
				t.Fatalf("got leader %d isr %v elr %v lastKnownElr %v lrs %d\nwant %+v",
					rec.Leader, rec.Isr, rec.EligibleLeaderReplicas, rec.LastKnownElr, rec.LeaderRecoveryState, *w)
			}
		})
	}
}

// equalNil compares a record's list with the wanted one; nil (unchanged)
// differs from empty (changed to empty).
func equalNil(got, want []int32) bool {
	return (got == nil) == (want == nil) && slices.Equal(got, want)
}

func (e *testEnv) alterIsr(topicID [16]byte, from int32, epochs map[int32]int64, isr ...int32) *kmsg.AlterPartitionResponse {
	e.t.Helper()
	p := e.c.Image().TopicByID(topicID).Partition(0)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.Version, req.BrokerID, req.BrokerEpoch = 3, from, epochs[from]
	tp := kmsg.NewAlterPartitionRequestTopicPartition()
	tp.Partition, tp.LeaderEpoch, tp.PartitionEpoch = 0, p.LeaderEpoch, p.PartitionEpoch
	for _, id := range isr {
		tp.NewEpochISR = append(tp.NewEpochISR, kmsg.AlterPartitionRequestTopicPartitionNewEpochISR{BrokerID: id, BrokerEpoch: epochs[id]})
	}
	req.Topics = []kmsg.AlterPartitionRequestTopic{{TopicID: topicID, Partitions: []kmsg.AlterPartitionRequestTopicPartition{tp}}}
	resp := e.do(req).(*kmsg.AlterPartitionResponse)
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		e.t.Fatalf("AlterPartition %v: %+v", isr, resp)
	}
	return resp
}

func (e *testEnv) partition(topic string) *metadatacache.Partition {
	return e.c.Image().TopicByName(topic).Partition(0)
}

// A fenced broker leaves the ISR for the ELR while the ISR is below
// min.insync.replicas; a new incarnation without a clean shutdown (no
// PreviousBrokerEpoch matching its registration) leaves the ELR, one with
// a clean shutdown stays eligible.
func TestELRFencingAndUncleanShutdown(t *testing.T) {
	e := newTestEnv(t, nil)
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2), 3: e.addBroker(3)}
	e.createTopic("t", 1, 3, "min.insync.replicas", "3")
	p := e.partition("t")
	if len(p.Isr) != 3 || len(p.Elr) != 0 {
		t.Fatalf("new partition %+v", p)
	}
	leader := p.Leader
	var others []int32
	for _, r := range p.Replicas {
		if r != leader {
			others = append(others, r)
		}
	}
	a, b := others[0], others[1]
	// a asks to be fenced: the ISR (2) is below min ISR (3), so a is eligible.
	e.heartbeat(a, epochs[a], e.c.Image().Offset, true, false)
	p = e.partition("t")
	if slices.Contains(p.Isr, a) || !slices.Equal(p.Elr, []int32{a}) || p.Leader != leader {
		t.Fatalf("after fencing %d: %+v", a, p)
	}
	// b too: both eligible.
	e.heartbeat(b, epochs[b], e.c.Image().Offset, true, false)
	p = e.partition("t")
	if !slices.Equal(p.Isr, []int32{leader}) || !slices.Equal(p.Elr, sorted(a, b)) {
		t.Fatalf("after fencing %d: %+v", b, p)
	}
	// a restarts uncleanly (PreviousBrokerEpoch -1): it leaves the ELR.
	r := e.registerPrev(a, 2, -1)
	if r.ErrorCode != 0 {
		t.Fatalf("register %d: %v", a, kerr.ErrorForCode(r.ErrorCode))
	}
	p = e.partition("t")
	if !slices.Equal(p.Elr, []int32{b}) {
		t.Fatalf("after %d's unclean restart: %+v", a, p)
	}
	// b restarts cleanly (its last broker epoch): it stays eligible.
	if r := e.registerPrev(b, 2, epochs[b]); r.ErrorCode != 0 {
		t.Fatalf("register %d: %v", b, kerr.ErrorForCode(r.ErrorCode))
	}
	p = e.partition("t")
	if !slices.Equal(p.Elr, []int32{b}) {
		t.Fatalf("after %d's clean restart: %+v", b, p)
	}
	// The leader is fenced: the ISR empties, the leader joins the ELR and
	// is the last known leader; no leader until an eligible replica is back.
	e.heartbeat(leader, epochs[leader], e.c.Image().Offset, true, false)
	p = e.partition("t")
	if p.Leader != -1 || len(p.Isr) != 0 || !slices.Equal(p.Elr, sorted(leader, b)) || !slices.Equal(p.LastKnownElr, []int32{leader}) {
		t.Fatalf("after fencing the leader: %+v", p)
	}
	// a (not eligible) comes back: still no leader.
	e.heartbeat(a, r.BrokerEpoch, e.c.Image().Offset, false, false)
	if p = e.partition("t"); p.Leader != -1 {
		t.Fatalf("an ineligible replica was elected: %+v", p)
	}
	// b (eligible) comes back: elected from the ELR, the ISR is b alone.
	rb := e.c.Image().Broker(b)
	e.heartbeat(b, rb.Epoch, e.c.Image().Offset, false, false)
	p = e.partition("t")
	if p.Leader != b || !slices.Equal(p.Isr, []int32{b}) || !slices.Equal(p.Elr, []int32{leader}) || len(p.LastKnownElr) != 0 || p.LeaderRecoveryState != 0 {
		t.Fatalf("after %d came back: %+v", b, p)
	}
}

func sorted(ids ...int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// registerPrev registers a new incarnation that says how its previous one
// ended (BrokerRegistration v3+ PreviousBrokerEpoch).
func (e *testEnv) registerPrev(id int32, inc byte, prev int64) *kmsg.BrokerRegistrationResponse {
	e.t.Helper()
	req := kmsg.NewPtrBrokerRegistrationRequest()
	req.Version = 4
	req.BrokerID, req.ClusterID = id, "test-cluster"
	req.IncarnationID = [16]byte{0: byte(id), 1: inc}
	req.PreviousBrokerEpoch = prev
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port, l.SecurityProtocol = "PLAINTEXT", "localhost", uint16(9091+id), 0
	req.Listeners = append(req.Listeners, l)
	req.Features = allFeatures()
	req.LogDirs = [][16]byte{dirID(byte(id))}
	return e.do(req).(*kmsg.BrokerRegistrationResponse)
}

// AlterPartition may shrink the ISR below min ISR; the ELR follows.
func TestELRAlterPartition(t *testing.T) {
	e := newTestEnv(t, nil)
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2), 3: e.addBroker(3)}
	rt := e.createTopic("t", 1, 3, "min.insync.replicas", "2")
	p := e.partition("t")
	leader := p.Leader
	e.alterIsr(rt.TopicID, leader, epochs, leader)
	p = e.partition("t")
	want := without(sorted(p.Replicas...), leader)
	if !slices.Equal(p.Isr, []int32{leader}) || !slices.Equal(p.Elr, want) || len(p.LastKnownElr) != 0 {
		t.Fatalf("shrink: %+v", p)
	}
	// Expanding back to min ISR clears the ELR.
	e.alterIsr(rt.TopicID, leader, epochs, leader, want[0])
	if p = e.partition("t"); len(p.Elr) != 0 || len(p.Isr) != 2 {
		t.Fatalf("expand: %+v", p)
	}
}

// A min.insync.replicas change clears the ELRs it governs (ClearElrRecord);
// broker-level min ISR cannot be set and the cluster-level one cannot be
// removed while ELR is enabled.
func TestELRMinISRConfigs(t *testing.T) {
	e := newTestEnv(t, nil)
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2)}
	for _, name := range []string{"t", "u"} {
		rt := e.createTopic(name, 1, 2, "min.insync.replicas", "2")
		leader := e.partition(name).Leader
		e.alterIsr(rt.TopicID, leader, epochs, leader)
		if p := e.partition(name); len(p.Elr) != 1 {
			t.Fatalf("%s: %+v", name, p)
		}
	}
	alter := func(typ kmsg.ConfigResourceType, name string, op kmsg.IncrementalAlterConfigOp, value *string) *kmsg.IncrementalAlterConfigsResponseResource {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = typ, name
		r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "min.insync.replicas", Op: op, Value: value}}
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{r}
		resp := e.do(req).(*kmsg.IncrementalAlterConfigsResponse)
		return &resp.Resources[0]
	}
	if r := alter(kmsg.ConfigResourceTypeTopic, "t", kmsg.IncrementalAlterConfigOpSet, strp("1")); r.ErrorCode != 0 {
		t.Fatalf("topic min ISR: %+v", r)
	}
	if p := e.partition("t"); len(p.Elr) != 0 {
		t.Fatalf("t's ELR survived its min ISR change: %+v", p)
	}
	if p := e.partition("u"); len(p.Elr) != 1 {
		t.Fatalf("u's ELR was cleared by t's min ISR change: %+v", p)
	}
	r := alter(kmsg.ConfigResourceTypeBroker, "1", kmsg.IncrementalAlterConfigOpSet, strp("2"))
	if r.ErrorCode != kerr.InvalidConfig.Code || *r.ErrorMessage != "Broker-level min.insync.replicas cannot be altered while ELR is enabled." {
		t.Fatalf("broker-level min ISR: %+v", r)
	}
	r = alter(kmsg.ConfigResourceTypeBroker, "", kmsg.IncrementalAlterConfigOpDelete, nil)
	if r.ErrorCode != kerr.InvalidConfig.Code || *r.ErrorMessage != "Cluster-level min.insync.replicas cannot be removed while ELR is enabled." {
		t.Fatalf("cluster-level min ISR removal: %+v", r)
	}
	if r := alter(kmsg.ConfigResourceTypeBroker, "", kmsg.IncrementalAlterConfigOpSet, strp("2")); r.ErrorCode != 0 {
		t.Fatalf("cluster-level min ISR: %+v", r)
	}
	if p := e.partition("u"); len(p.Elr) != 0 {
		t.Fatalf("the cluster-level min ISR change did not clear every ELR: %+v", p)
	}
}

// A cluster formatted without ELR writes no cluster-level min ISR and keeps
// the last ISR member; upgrading the feature writes the cluster-level min
// ISR (and removes broker-level ones) first; a safe downgrade only lowers
// the level, and the next change of a partition clears its lists.
func TestELRFeatureUpgradeAndDowngrade(t *testing.T) {
	e := newTestEnv(t, func(cfg *Config) {
		cfg.BootstrapFeatures = []Feature{{"metadata.version", 33}, {"group.version", 1}, {"transaction.version", 2}}
		cfg.MinInsyncReplicas = 2
	})
	if _, ok := e.c.Image().DefaultBrokerConfig()["min.insync.replicas"]; ok {
		t.Fatal("cluster-level min.insync.replicas written without ELR")
	}
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2)}
	// Broker-level min ISR is allowed without ELR.
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, "2"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "min.insync.replicas", Value: strp("1")}}
	req.Resources = append(req.Resources, res)
	if r := e.do(req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("broker-level min ISR without ELR: %+v", r.Resources[0])
	}
	rt := e.createTopic("t", 1, 2)
	leader := e.partition("t").Leader
	e.alterIsr(rt.TopicID, leader, epochs, leader)
	if p := e.partition("t"); len(p.Elr) != 0 {
		t.Fatalf("ELR without the feature: %+v", p)
	}

	if resp := e.do(updateFeatures(1, false, featureUpdate(featureELRVersion, 1, upgradeUpgrade))).(*kmsg.UpdateFeaturesResponse); resp.ErrorCode != 0 {
		t.Fatalf("upgrade: %s", errOf(resp.ErrorCode, resp.ErrorMessage))
	}
	img := e.c.Image()
	if lvl, _ := img.Feature(featureELRVersion); lvl != 1 {
		t.Fatalf("eligible.leader.replicas.version %d", lvl)
	}
	if v := img.DefaultBrokerConfig()["min.insync.replicas"]; v != "2" {
		t.Fatalf("cluster-level min.insync.replicas %q, want the static 2", v)
	}
	if _, ok := img.BrokerConfig(2)["min.insync.replicas"]; ok {
		t.Fatal("broker-level min.insync.replicas kept")
	}
	// Now the shrunk ISR's next change follows the ELR rules: the leader
	// is fenced, the ISR empties into the ELR.
	e.heartbeat(leader, epochs[leader], e.c.Image().Offset, true, false)
	p := e.partition("t")
	if len(p.Isr) != 0 || !slices.Equal(p.Elr, []int32{leader}) || !slices.Equal(p.LastKnownElr, []int32{leader}) {
		t.Fatalf("fenced with ELR: %+v", p)
	}

	if resp := e.do(updateFeatures(1, false, featureUpdate(featureELRVersion, 0, upgradeUpgrade))).(*kmsg.UpdateFeaturesResponse); resp.ErrorCode != kerr.InvalidUpdateVersion.Code {
		t.Fatalf("downgrade as an upgrade: %s", errOf(resp.ErrorCode, resp.ErrorMessage))
	}
	if resp := e.do(updateFeatures(1, false, featureUpdate(featureELRVersion, 0, upgradeSafeDowngrade))).(*kmsg.UpdateFeaturesResponse); resp.ErrorCode != 0 {
		t.Fatalf("safe downgrade: %s", errOf(resp.ErrorCode, resp.ErrorMessage))
	}
	if _, ok := e.c.Image().Feature(featureELRVersion); ok {
		t.Fatal("eligible.leader.replicas.version still finalized")
	}
	if p := e.partition("t"); !slices.Equal(p.Elr, []int32{leader}) {
		t.Fatalf("the downgrade changed the partition: %+v", p)
	}
	// The next change (the leader is back): Kafka's builder still elects
	// from the ELR the partition carries, and with ELR off the ELR is
	// cleared (the last known leader is left as it is).
	e.heartbeat(leader, epochs[leader], e.c.Image().Offset, false, false)
	p = e.partition("t")
	if p.Leader != leader || !slices.Equal(p.Isr, []int32{leader}) || len(p.Elr) != 0 || !slices.Equal(p.LastKnownElr, []int32{leader}) {
		t.Fatalf("after the downgrade: %+v", p)
	}
}

func electReq(typ int8, topics map[string][]int32) *kmsg.ElectLeadersRequest {
	req := kmsg.NewPtrElectLeadersRequest()
	req.Version, req.ElectionType, req.TimeoutMillis = 2, typ, 30000
	if topics != nil {
		req.Topics = []kmsg.ElectLeadersRequestTopic{}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range topics {
				if !yield(k) {
					return
				}
			}
		}) {
			req.Topics = append(req.Topics, kmsg.ElectLeadersRequestTopic{Topic: name, Partitions: topics[name]})
		}
	}
	return req
}

// ElectLeaders (kafka-leader-election.sh): PREFERRED moves leadership back
// to the first replica once it is in the ISR; UNCLEAN elects an active
// replica outside the ISR/ELR for a leaderless partition.
func TestElectLeaders(t *testing.T) {
	e := newTestEnv(t, nil)
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2)}
	rt := e.createTopic("t", 1, 2)
	p := e.partition("t")
	pref, other := p.Replicas[0], p.Replicas[1]
	codes := func(resp *kmsg.ElectLeadersResponse) map[string][]int16 {
		out := map[string][]int16{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				out[rt.Topic] = append(out[rt.Topic], rp.ErrorCode)
			}
		}
		return out
	}
	resp := e.do(electReq(electionTypePreferred, map[string][]int32{"t": {0, 7}, "nope": {0}})).(*kmsg.ElectLeadersResponse)
	if got := codes(resp); !slices.Equal(got["t"], []int16{kerr.ElectionNotNeeded.Code, kerr.UnknownTopicOrPartition.Code}) ||
		!slices.Equal(got["nope"], []int16{kerr.UnknownTopicOrPartition.Code}) {
		t.Fatalf("preferred at the preferred leader: %v", got)
	}
	if m := resp.Topics[1].Partitions[0].ErrorMessage; m == nil || *m != "Leader election not needed for topic partition." {
		t.Fatalf("message %v", m)
	}
	// The preferred leader is fenced and comes back: the other replica
	// leads, the preferred one rejoins the ISR.
	e.heartbeat(pref, epochs[pref], e.c.Image().Offset, true, false)
	e.heartbeat(pref, epochs[pref], e.c.Image().Offset, false, false)
	if p = e.partition("t"); p.Leader != other || slices.Contains(p.Isr, pref) {
		t.Fatalf("after the preferred leader's fencing %+v", p)
	}
	resp = e.do(electReq(electionTypePreferred, map[string][]int32{"t": {0}})).(*kmsg.ElectLeadersResponse)
	if got := codes(resp)["t"]; !slices.Equal(got, []int16{kerr.PreferredLeaderNotAvailable.Code}) {
		t.Fatalf("preferred replica outside the ISR: %v", got)
	}
	e.alterIsr(rt.TopicID, other, epochs, other, pref)
	// All partitions (null topics): t is listed, the election runs.
	resp = e.do(electReq(electionTypePreferred, nil)).(*kmsg.ElectLeadersResponse)
	if got := codes(resp)["t"]; !slices.Equal(got, []int16{0}) {
		t.Fatalf("preferred: %v", got)
	}
	if p = e.partition("t"); p.Leader != pref {
		t.Fatalf("after the preferred election %+v", p)
	}
	// Again: not needed, so not listed.
	resp = e.do(electReq(electionTypePreferred, nil)).(*kmsg.ElectLeadersResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 0 {
		t.Fatalf("all partitions, none needed: %+v", resp.Topics)
	}

	// UNCLEAN: the leader leaves the ISR's other member out, then is fenced:
	// the partition has no leader, only the fenced leader is eligible.
	e.alterIsr(rt.TopicID, pref, epochs, pref)
	e.heartbeat(pref, epochs[pref], e.c.Image().Offset, true, false)
	if p = e.partition("t"); p.Leader != -1 || !slices.Equal(p.Elr, []int32{pref}) {
		t.Fatalf("leaderless: %+v", p)
	}
	resp = e.do(electReq(electionTypePreferred, map[string][]int32{"t": {0}})).(*kmsg.ElectLeadersResponse)
	if got := codes(resp)["t"]; !slices.Equal(got, []int16{kerr.PreferredLeaderNotAvailable.Code}) {
		t.Fatalf("preferred on a leaderless partition: %v", got)
	}
	resp = e.do(electReq(electionTypeUnclean, map[string][]int32{"t": {0}})).(*kmsg.ElectLeadersResponse)
	if got := codes(resp)["t"]; !slices.Equal(got, []int16{0}) {
		t.Fatalf("unclean: %v", got)
	}
	p = e.partition("t")
	if p.Leader != other || !slices.Equal(p.Isr, []int32{other}) || len(p.Elr) != 0 || p.LeaderRecoveryState != 1 {
		t.Fatalf("after the unclean election: %+v", p)
	}
	resp = e.do(electReq(electionTypeUnclean, map[string][]int32{"t": {0}})).(*kmsg.ElectLeadersResponse)
	if got := codes(resp)["t"]; !slices.Equal(got, []int16{kerr.ElectionNotNeeded.Code}) {
		t.Fatalf("unclean with a leader: %v", got)
	}
	// An unknown election type fails the request.
	bad := electReq(5, map[string][]int32{"t": {0}})
	if resp := e.do(bad).(*kmsg.ElectLeadersResponse); resp.ErrorCode != kerr.InvalidRequest.Code || resp.Topics[0].Partitions[0].ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("unknown election type: %+v", resp)
	}
}

// With no eligible replica, UNCLEAN finds none: ELIGIBLE_LEADERS_NOT_AVAILABLE.
func TestElectLeadersUncleanNoneAvailable(t *testing.T) {
	e := newTestEnv(t, nil)
	epoch := e.addBroker(1)
	e.createTopic("t", 1, 1)
	e.heartbeat(1, epoch, e.c.Image().Offset, true, false)
	resp := e.do(electReq(electionTypeUnclean, map[string][]int32{"t": {0}})).(*kmsg.ElectLeadersResponse)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.EligibleLeadersNotAvailable.Code {
		t.Fatalf("%v", kerr.ErrorForCode(c))
	}
}

// The periodic tasks: preferred leaders come back (auto.leader.rebalance),
// leaderless partitions of topics with unclean.leader.election.enable get
// an unclean leader, others keep waiting for an eligible one.
func TestPeriodicElections(t *testing.T) {
	e := newTestEnv(t, nil)
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2)}
	rt := e.createTopic("t", 1, 2)
	p := e.partition("t")
	pref, other := p.Replicas[0], p.Replicas[1]
	e.heartbeat(pref, epochs[pref], e.c.Image().Offset, true, false)
	e.heartbeat(pref, epochs[pref], e.c.Image().Offset, false, false)
	if e.c.balancePartitionLeaders() {
		t.Fatal("more pending")
	}
	if p = e.partition("t"); p.Leader != other {
		t.Fatalf("the preferred replica is outside the ISR but was elected: %+v", p)
	}
	e.alterIsr(rt.TopicID, other, epochs, other, pref)
	e.c.balancePartitionLeaders()
	if p = e.partition("t"); p.Leader != pref {
		t.Fatalf("after balancing: %+v", p)
	}

	// Two leaderless partitions whose only eligible replica is fenced.
	for _, name := range []string{"clean", "dirty"} {
		rt := e.createTopic(name, 1, 2)
		leader := e.partition(name).Leader
		e.alterIsr(rt.TopicID, leader, epochs, leader)
	}
	cl, dl := e.partition("clean").Leader, e.partition("dirty").Leader
	if cl != dl {
		t.Skipf("the placer put the leaders on different brokers (%d, %d)", cl, dl)
	}
	e.heartbeat(cl, epochs[cl], e.c.Image().Offset, true, false)
	if e.partition("clean").Leader != -1 || e.partition("dirty").Leader != -1 {
		t.Fatalf("not leaderless: %+v %+v", e.partition("clean"), e.partition("dirty"))
	}
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, "dirty"
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "unclean.leader.election.enable", Value: strp("true")}}
	req.Resources = append(req.Resources, res)
	if r := e.do(req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("%+v", r.Resources[0])
	}
	e.c.electUncleanLeaders()
	if p := e.partition("clean"); p.Leader != -1 {
		t.Fatalf("unclean election without the config: %+v", p)
	}
	if p := e.partition("dirty"); p.Leader == -1 || p.Leader == cl || p.LeaderRecoveryState != 1 {
		t.Fatalf("no unclean election with the config: %+v", p)
	}
}

// ELR needs metadata.version 4.0-IV1 (23): below it the upgrade is refused,
// and nothing is written (no cluster-level min ISR either).
func TestELRUpgradeNeedsMetadataVersion(t *testing.T) {
	e := newTestEnv(t, func(cfg *Config) { cfg.BootstrapFeatures = []Feature{{"metadata.version", 22}} })
	e.addBroker(1)
	resp := e.do(updateFeatures(2, false, featureUpdate(featureELRVersion, 1, upgradeUpgrade))).(*kmsg.UpdateFeaturesResponse)
	want := "INVALID_UPDATE_VERSION: The update failed for all features since the following feature had an error: " +
		"Invalid update version 1 for feature eligible.leader.replicas.version. eligible.leader.replicas.version could not be set to 1 because it depends on metadata.version level 23"
	if got := errOf(resp.ErrorCode, resp.ErrorMessage); got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
	if _, ok := e.c.Image().DefaultBrokerConfig()["min.insync.replicas"]; ok {
		t.Fatal("a refused upgrade wrote the cluster-level min.insync.replicas")
	}
	// Both at once: metadata.version first makes it valid.
	resp = e.do(updateFeatures(2, false, featureUpdate("metadata.version", 23, upgradeUpgrade), featureUpdate(featureELRVersion, 1, upgradeUpgrade))).(*kmsg.UpdateFeaturesResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("%s", errOf(resp.ErrorCode, resp.ErrorMessage))
	}
	if l, _ := e.c.Image().Feature(featureELRVersion); l != 1 {
		t.Fatalf("eligible.leader.replicas.version %d", l)
	}
}

// unclean.leader.election.enable at the cluster level (BROKER "") applies
// to every topic's automatic elections, ELR or not: when the last ISR
// member is fenced, an active replica outside the ISR and ELR is elected.
func TestUncleanElectionClusterConfig(t *testing.T) {
	e := newTestEnv(t, nil)
	epochs := map[int32]int64{1: e.addBroker(1), 2: e.addBroker(2)}
	rt := e.createTopic("t", 1, 2)
	leader := e.partition("t").Leader
	follower := 3 - leader
	e.alterIsr(rt.TopicID, leader, epochs, leader)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	res := kmsg.NewIncrementalAlterConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "unclean.leader.election.enable", Value: strp("true")}}
	req.Resources = append(req.Resources, res)
	if r := e.do(req).(*kmsg.IncrementalAlterConfigsResponse); r.Resources[0].ErrorCode != 0 {
		t.Fatalf("%+v", r.Resources[0])
	}
	e.heartbeat(leader, epochs[leader], e.c.Image().Offset, true, false)
	p := e.partition("t")
	if p.Leader != follower || !slices.Equal(p.Isr, []int32{follower}) || len(p.Elr) != 0 || p.LeaderRecoveryState != 1 {
		t.Fatalf("after fencing the last ISR member: %+v", p)
	}
}
