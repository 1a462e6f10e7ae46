package controller

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/security/authorizer"
)

// state is the controller's own view of the metadata, built only by replaying
// committed records (like Kafka's *ControlManager classes). Decisions read it;
// only replay writes it. Guarded by Controller.stateMu.
type state struct {
	// lastOffset is the offset of the last replayed record (-1: none).
	lastOffset int64

	topicsByName map[string][16]byte
	topics       map[[16]byte]*topicState
	// collisions maps a name with '.' unified to '_' to the topics that map to it.
	collisions map[string]map[string]struct{}

	brokers map[int32]*brokerState
	// controllers are the registered controllers (KIP-919; controllers.go).
	controllers map[int32]*controllerState

	// configs: resource -> name -> value.
	configs map[configResource]map[string]string

	features map[string]int16

	// nextProducerID is the first id of the next ProducerIdsRecord block.
	nextProducerID int64
	// producerIDsSet is true once a ProducerIdsRecord was replayed.
	producerIDsSet bool

	// inTransaction is the offset of an open BeginTransactionRecord (-1: none).
	inTransaction int64

	// scram holds the (user, mechanism) pairs that have a SCRAM credential
	// (ScramControlManager.credentials; scram.go).
	scram map[scramKey]int32 // -> iterations

	// quotas are the client quotas by entity (quotaEntityKey) and key
	// (ClientQuotaControlManager.clientQuotaData; quotas.go).
	quotas map[string]map[string]float64
	// acls are the ACLs by id (AclControlManager.idToAcl; acls.go).
	acls map[[16]byte]authorizer.ACL

	// nodeID, staticUnclean and staticMinISR resolve
	// unclean.leader.election.enable and min.insync.replicas below the
	// dynamic configs (set once in New).
	nodeID        int32
	staticUnclean bool
	staticMinISR  int
}

type topicState struct {
	name  string
	id    [16]byte
	parts []*partitionState // index = partition id; always contiguous
}

type partitionState struct {
	replicas            []int32
	isr                 []int32
	removing, adding    []int32
	leader              int32
	leaderRecoveryState int8
	leaderEpoch         int32
	partitionEpoch      int32
	directories         [][16]byte
	elr, lastKnownElr   []int32
}

type brokerState struct {
	id                   int32
	epoch                int64
	incarnation          [16]byte
	rack                 *string
	fenced               bool
	inControlledShutdown bool
	logDirs              [][16]byte
	// cordoned are the log dirs the broker reported cordoned (KIP-1066);
	// nil until it has.
	cordoned [][16]byte
	// registerOffset is the offset of the broker's last RegisterBrokerRecord.
	registerOffset int64
}

// configResource names a ConfigRecord's resource (Kafka's ConfigResource).
type configResource struct {
	typ  int8
	name string
}

// ConfigResource types (ConfigResource.Type ids).
const (
	resourceTopic         int8 = 2
	resourceBroker        int8 = 4
	resourceClientMetrics int8 = 16
	resourceGroup         int8 = 32
)

func newState() *state {
	return &state{
		lastOffset:    -1,
		topicsByName:  make(map[string][16]byte),
		topics:        make(map[[16]byte]*topicState),
		collisions:    make(map[string]map[string]struct{}),
		brokers:       make(map[int32]*brokerState),
		controllers:   make(map[int32]*controllerState),
		configs:       make(map[configResource]map[string]string),
		features:      make(map[string]int16),
		inTransaction: -1,
		scram:         make(map[scramKey]int32),
		quotas:        make(map[string]map[string]float64),
		acls:          make(map[[16]byte]authorizer.ACL),
	}
}

// metadataVersion is the finalized metadata.version level (0 if none).
func (s *state) metadataVersion() int16 { return s.features[featureMetadataVersion] }

// topicConfig resolves a topic config as
// ConfigurationControlManager.getTopicConfig does: the topic's config, this
// node's dynamic config, the cluster-wide dynamic default; ok false means
// the static config applies.
func (s *state) topicConfig(topic, key string) (string, bool) {
	for _, res := range []configResource{
		{resourceTopic, topic},
		{resourceBroker, fmt.Sprint(s.nodeID)},
		{resourceBroker, ""},
	} {
		if v, ok := s.configs[res][key]; ok {
			return v, true
		}
	}
	return "", false
}

// uncleanElection resolves unclean.leader.election.enable for a topic
// (topicConfig, then the static config).
func (s *state) uncleanElection(topic string) bool {
	if v, ok := s.topicConfig(topic, "unclean.leader.election.enable"); ok {
		return strings.EqualFold(strings.TrimSpace(v), "true")
	}
	return s.staticUnclean
}

// effectiveMinISR is getTopicEffectiveMinIsr: the topic's
// min.insync.replicas (topicConfig, then the static config), at most its
// replication factor.
func (s *state) effectiveMinISR(t *topicState) int {
	minISR := max(s.staticMinISR, 1)
	if v, ok := s.topicConfig(t.name, "min.insync.replicas"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
			minISR = n
		}
	}
	if len(t.parts) > 0 && len(t.parts[0].replicas) < minISR {
		minISR = len(t.parts[0].replicas)
	}
	return minISR
}

// elrEnabled is FeatureControlManager.isElrFeatureEnabled:
// eligible.leader.replicas.version is 1 (which needs metadata.version
// 4.0-IV1, where PartitionChangeRecord v2 carries the ELR fields).
func (s *state) elrEnabled() bool { return s.features[featureELRVersion] >= 1 }

// active reports whether broker id is unfenced and not in controlled
// shutdown (ClusterControlManager.isActive).
func (s *state) active(id int32) bool {
	b := s.brokers[id]
	return b != nil && !b.fenced && !b.inControlledShutdown
}

// brokerIDs returns the registered broker ids, ascending.
func (s *state) brokerIDs() []int32 {
	ids := make([]int32, 0, len(s.brokers))
	for id := range s.brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// usableBrokers lists the brokers the placer may use: every registered
// broker not in controlled shutdown and not with every log dir cordoned
// (KIP-1066, logdirs.go), fenced ones included (the placer puts them last
// and never makes them leader).
func (s *state) usableBrokers() []usableBroker {
	out := make([]usableBroker, 0, len(s.brokers))
	for _, id := range s.brokerIDs() {
		b := s.brokers[id]
		if b.inControlledShutdown || s.allDirsCordoned(b) {
			continue
		}
		out = append(out, usableBroker{id: id, rack: b.rack, fenced: b.fenced})
	}
	return out
}

// defaultDir is the log dir a new replica on broker id is assigned
// (ClusterControlManager.defaultDir).
func (s *state) defaultDir(id int32) [16]byte {
	b := s.brokers[id]
	switch {
	case b == nil:
		return dirUnassigned
	case len(b.logDirs) == 0:
		return dirMigrating
	case len(b.logDirs) == 1:
		return b.logDirs[0]
	}
	return dirUnassigned
}

// Reserved directory ids (org.apache.kafka.common.DirectoryId).
var (
	dirMigrating  = [16]byte{}
	dirUnassigned = [16]byte{15: 1}
	dirLost       = [16]byte{15: 2}
)

// replay applies one committed record at offset.
func (s *state) replay(offset int64, r metadatacache.Record) error {
	s.lastOffset = offset
	switch r := r.(type) {
	case *metadatacache.TopicRecord:
		if _, ok := s.topics[r.TopicID]; ok {
			return fmt.Errorf("TopicRecord: topic id %x already exists", r.TopicID)
		}
		s.topics[r.TopicID] = &topicState{name: r.Name, id: r.TopicID}
		s.topicsByName[r.Name] = r.TopicID
		if hasCollisionChars(r.Name) {
			u := unifyCollisionChars(r.Name)
			if s.collisions[u] == nil {
				s.collisions[u] = make(map[string]struct{})
			}
			s.collisions[u][r.Name] = struct{}{}
		}
	case *metadatacache.PartitionRecord:
		t := s.topics[r.TopicID]
		if t == nil {
			return fmt.Errorf("PartitionRecord: unknown topic id %x", r.TopicID)
		}
		p := &partitionState{
			replicas: r.Replicas, isr: r.Isr, removing: r.RemovingReplicas, adding: r.AddingReplicas,
			leader: r.Leader, leaderRecoveryState: r.LeaderRecoveryState,
			leaderEpoch: r.LeaderEpoch, partitionEpoch: r.PartitionEpoch,
			directories: r.Directories, elr: r.EligibleLeaderReplicas, lastKnownElr: r.LastKnownElr,
		}
		switch {
		case int(r.PartitionID) < len(t.parts) && r.PartitionID >= 0:
			t.parts[r.PartitionID] = p
		case int(r.PartitionID) == len(t.parts):
			t.parts = append(t.parts, p)
		default:
			return fmt.Errorf("PartitionRecord: partition %d of %s is not next (%d)", r.PartitionID, t.name, len(t.parts))
		}
	case *metadatacache.PartitionChangeRecord:
		t := s.topics[r.TopicID]
		if t == nil || r.PartitionID < 0 || int(r.PartitionID) >= len(t.parts) {
			return fmt.Errorf("PartitionChangeRecord: unknown partition %x-%d", r.TopicID, r.PartitionID)
		}
		old := t.parts[r.PartitionID]
		p := *old
		if r.Isr != nil {
			p.isr = r.Isr
		}
		if r.Leader != metadatacache.NoLeaderChange {
			p.leader = r.Leader
			p.leaderEpoch++
		}
		if r.Replicas != nil {
			p.replicas = r.Replicas
		}
		if r.RemovingReplicas != nil {
			p.removing = r.RemovingReplicas
		}
		if r.AddingReplicas != nil {
			p.adding = r.AddingReplicas
		}
		if r.LeaderRecoveryState != -1 {
			p.leaderRecoveryState = r.LeaderRecoveryState
		}
		if r.Directories != nil {
			p.directories = r.Directories
		}
		if r.EligibleLeaderReplicas != nil {
			p.elr = r.EligibleLeaderReplicas
		}
		if r.LastKnownElr != nil {
			p.lastKnownElr = r.LastKnownElr
		}
		p.partitionEpoch++
		t.parts[r.PartitionID] = &p
	case *metadatacache.ClearElrRecord:
		// TopicsDelta.replay(ClearElrRecord): as a PartitionChangeRecord
		// emptying both lists of each partition that has one.
		for _, t := range s.topics {
			if r.TopicName != "" && t.name != r.TopicName {
				continue
			}
			for pid, p := range t.parts {
				if len(p.elr) == 0 && len(p.lastKnownElr) == 0 {
					continue
				}
				np := *p
				np.elr, np.lastKnownElr = []int32{}, []int32{}
				np.partitionEpoch++
				t.parts[pid] = &np
			}
		}
	case *metadatacache.RemoveTopicRecord:
		t := s.topics[r.TopicID]
		if t == nil {
			return fmt.Errorf("RemoveTopicRecord: unknown topic id %x", r.TopicID)
		}
		delete(s.topics, r.TopicID)
		delete(s.topicsByName, t.name)
		if hasCollisionChars(t.name) {
			u := unifyCollisionChars(t.name)
			delete(s.collisions[u], t.name)
			if len(s.collisions[u]) == 0 {
				delete(s.collisions, u)
			}
		}
		delete(s.configs, configResource{resourceTopic, t.name})
	case *metadatacache.ConfigRecord:
		res := configResource{r.ResourceType, r.ResourceName}
		m := s.configs[res]
		if r.Value == nil {
			delete(m, r.Name)
			if len(m) == 0 {
				delete(s.configs, res)
			}
		} else {
			if m == nil {
				m = make(map[string]string)
				s.configs[res] = m
			}
			m[r.Name] = *r.Value
		}
	case *metadatacache.FeatureLevelRecord:
		if r.FeatureLevel == 0 {
			delete(s.features, r.Name)
		} else {
			s.features[r.Name] = r.FeatureLevel
		}
	case *metadatacache.RegisterBrokerRecord:
		s.brokers[r.BrokerID] = &brokerState{
			id: r.BrokerID, epoch: r.BrokerEpoch, incarnation: r.IncarnationID, rack: r.Rack,
			fenced: r.Fenced, inControlledShutdown: r.InControlledShutdown, logDirs: r.LogDirs,
			cordoned: r.CordonedLogDirs, registerOffset: offset,
		}
	case *metadatacache.RegisterControllerRecord:
		cs := &controllerState{id: r.ControllerID, incarnation: r.IncarnationID, features: make(map[string][2]int16, len(r.Features))}
		for _, f := range r.Features {
			cs.features[f.Name] = [2]int16{f.MinSupportedVersion, f.MaxSupportedVersion}
		}
		s.controllers[r.ControllerID] = cs
	case *metadatacache.UnregisterControllerRecord:
		delete(s.controllers, r.ControllerID)
	case *metadatacache.UnregisterBrokerRecord:
		b := s.brokers[r.BrokerID]
		if b == nil || b.epoch != r.BrokerEpoch {
			return fmt.Errorf("UnregisterBrokerRecord: no broker %d with epoch %d", r.BrokerID, r.BrokerEpoch)
		}
		delete(s.brokers, r.BrokerID)
	case *metadatacache.FenceBrokerRecord:
		return s.changeBroker(r.ID, r.Epoch, 1, 0, nil)
	case *metadatacache.UnfenceBrokerRecord:
		return s.changeBroker(r.ID, r.Epoch, -1, 0, nil)
	case *metadatacache.BrokerRegistrationChangeRecord:
		if err := s.changeBroker(r.BrokerID, r.BrokerEpoch, r.Fenced, r.InControlledShutdown, r.LogDirs); err != nil {
			return err
		}
		if r.CordonedLogDirs != nil {
			// a non-null CordonedLogDirs replaces them (KIP-1066)
			nb := *s.brokers[r.BrokerID]
			nb.cordoned = r.CordonedLogDirs
			s.brokers[r.BrokerID] = &nb
		}
	case *metadatacache.ProducerIdsRecord:
		if s.producerIDsSet && r.NextProducerID <= s.nextProducerID {
			return fmt.Errorf("ProducerIdsRecord: next producer id %d is not greater than %d", r.NextProducerID, s.nextProducerID)
		}
		s.nextProducerID = r.NextProducerID
		s.producerIDsSet = true
	case *metadatacache.UserScramCredentialRecord:
		s.scram[scramKey{r.Name, r.Mechanism}] = r.Iterations
	case *metadatacache.RemoveUserScramCredentialRecord:
		k := scramKey{r.Name, r.Mechanism}
		if _, ok := s.scram[k]; !ok {
			return fmt.Errorf("Unable to find credential to delete: %s/%d", r.Name, r.Mechanism)
		}
		delete(s.scram, k)
	case *metadatacache.ClientQuotaRecord:
		k := quotaEntityKey(r.Entity)
		// Copy on write: a decision may hold the previous map (alterClientQuotas).
		vs := make(map[string]float64, len(s.quotas[k])+1)
		for qk, v := range s.quotas[k] {
			vs[qk] = v
		}
		if r.Remove {
			delete(vs, r.QuotaKey)
		} else {
			vs[r.QuotaKey] = r.Value
		}
		if len(vs) == 0 {
			delete(s.quotas, k)
		} else {
			s.quotas[k] = vs
		}
	case *metadatacache.AccessControlEntryRecord, *metadatacache.RemoveAccessControlEntryRecord:
		return s.replayACL(r)
	case *metadatacache.BeginTransactionRecord:
		s.inTransaction = offset
	case *metadatacache.EndTransactionRecord, *metadatacache.AbortTransactionRecord:
		s.inTransaction = -1
	}
	return nil
}

// changeBroker applies a fencing / controlled-shutdown change. fenced and
// shutdown use BrokerRegistrationChangeRecord's encoding: 0 = no change,
// 1 = fence / enter controlled shutdown, -1 = unfence.
func (s *state) changeBroker(id int32, epoch int64, fenced, shutdown int8, dirs [][16]byte) error {
	b := s.brokers[id]
	if b == nil || b.epoch != epoch {
		return fmt.Errorf("broker registration change: no broker %d with epoch %d", id, epoch)
	}
	nb := *b
	switch fenced {
	case 1:
		nb.fenced = true
	case -1:
		nb.fenced = false
	}
	if shutdown == 1 {
		nb.inControlledShutdown = true
	}
	if len(dirs) > 0 {
		nb.logDirs = dirs
	}
	s.brokers[id] = &nb
	return nil
}
