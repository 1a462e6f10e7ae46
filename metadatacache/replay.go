package metadatacache

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrReplay is wrapped by every error about a record that could not be
// replayed (unknown topic, broker epoch mismatch, ...). Such records are
// skipped, as Kafka's MetadataBatchLoader does with its fault handler.
var ErrReplay = errors.New("metadatacache: cannot replay record")

// ReplayError describes one skipped record.
type ReplayError struct {
	Offset int64
	Record Record
	Err    error
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("metadatacache: replaying %T at offset %d: %v", e.Record, e.Offset, e.Err)
}

// Unwrap returns ErrReplay and the cause.
func (e *ReplayError) Unwrap() []error { return []error{ErrReplay, e.Err} }

// builder makes the next Image from a base image, copy-on-write: maps are
// cloned the first time they change, a topic is cloned the first time one
// of its partitions changes, a changed partition or broker is a new value.
// After build the builder must not be used again.
type builder struct {
	img *Image // starts as a shallow copy of the base

	ownFeatures, ownBrokers, ownControllers, ownTopics, ownConfigs, ownQuotas bool
	ownScram, ownACLs, ownTokens                                              bool

	ownTopic  map[[16]byte]bool
	ownConfig map[ConfigResource]bool

	// changes is what the records replayed so far changed from the base.
	changes Changes
}

func newBuilder(base *Image) *builder {
	img := *base
	img.changes = Changes{}
	return &builder{img: &img}
}

func (b *builder) build() *Image {
	img := b.img
	img.changes = b.changes
	b.img = nil
	return img
}

func cloneMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return make(map[K]V)
	}
	return maps.Clone(m)
}

func (b *builder) features() map[string]int16 {
	if !b.ownFeatures {
		b.img.features = cloneMap(b.img.features)
		b.ownFeatures = true
	}
	return b.img.features
}

func (b *builder) brokers() map[int32]*Broker {
	if !b.ownBrokers {
		b.img.brokers = cloneMap(b.img.brokers)
		b.ownBrokers = true
	}
	return b.img.brokers
}

func (b *builder) controllers() map[int32]*Controller {
	if !b.ownControllers {
		b.img.controllers = cloneMap(b.img.controllers)
		b.ownControllers = true
	}
	return b.img.controllers
}

func (b *builder) topics() {
	if !b.ownTopics {
		b.img.topicsByID = cloneMap(b.img.topicsByID)
		b.img.topicsByName = cloneMap(b.img.topicsByName)
		b.ownTopics = true
		b.ownTopic = make(map[[16]byte]bool)
	}
}

// mutableTopic returns a topic this builder owns (cloned on first use).
func (b *builder) mutableTopic(t *Topic) *Topic {
	b.topics()
	if b.ownTopic[t.ID] {
		return t
	}
	nt := &Topic{Name: t.Name, ID: t.ID, Partitions: cloneMap(t.Partitions)}
	b.img.topicsByID[t.ID] = nt
	if b.img.topicsByName[t.Name] == t {
		b.img.topicsByName[t.Name] = nt
	}
	b.ownTopic[t.ID] = true
	return nt
}

// setPartition stores p as partition p.ID of t (in the builder's copy).
func (b *builder) setPartition(t *Topic, p *Partition) {
	b.mutableTopic(t).Partitions[p.ID] = p
	b.changes.partition(t.ID, p.ID)
}

func (b *builder) configs() map[ConfigResource]map[string]string {
	if !b.ownConfigs {
		b.img.configs = cloneMap(b.img.configs)
		b.ownConfigs = true
		b.ownConfig = make(map[ConfigResource]bool)
	}
	return b.img.configs
}

func (b *builder) quotas() map[string]*ClientQuota {
	if !b.ownQuotas {
		b.img.quotas = cloneMap(b.img.quotas)
		b.ownQuotas = true
	}
	return b.img.quotas
}

func (b *builder) scram() map[ScramKey]*ScramCredential {
	if !b.ownScram {
		b.img.scram = cloneMap(b.img.scram)
		b.ownScram = true
	}
	return b.img.scram
}

func (b *builder) acls() map[[16]byte]*ACL {
	if !b.ownACLs {
		b.img.acls = cloneMap(b.img.acls)
		b.ownACLs = true
	}
	return b.img.acls
}

func (b *builder) tokens() map[string]*DelegationToken {
	if !b.ownTokens {
		b.img.tokens = cloneMap(b.img.tokens)
		b.ownTokens = true
	}
	return b.img.tokens
}

// replay applies one record and notes what it changed. On error the image
// is unchanged. Transaction markers are the Cache's business and are
// ignored here.
func (b *builder) replay(rec Record) error {
	if err := b.applyRecord(rec); err != nil {
		return err
	}
	b.noteChange(rec)
	return nil
}

func (b *builder) applyRecord(rec Record) error {
	switch r := rec.(type) {
	case *FeatureLevelRecord:
		// FeaturesDelta.replay: level 0 removes the feature.
		if r.FeatureLevel == 0 {
			delete(b.features(), r.Name)
		} else {
			b.features()[r.Name] = r.FeatureLevel
		}
	case *RegisterBrokerRecord:
		b.brokers()[r.BrokerID] = brokerFromRecord(r)
	case *UnregisterBrokerRecord:
		// ClusterDelta.replay removes the broker without checking its epoch.
		delete(b.brokers(), r.BrokerID)
	case *RegisterControllerRecord:
		b.controllers()[r.ControllerID] = controllerFromRecord(r)
	case *UnregisterControllerRecord:
		// ClusterDelta.replay(UnregisterControllerRecord) (KIP-1312).
		delete(b.controllers(), r.ControllerID)
	case *FenceBrokerRecord:
		cur, err := b.brokerForChange(r.ID, r.Epoch, "fence")
		if err != nil {
			return err
		}
		if !cur.Fenced {
			nb := *cur
			nb.Fenced = true
			b.brokers()[r.ID] = &nb
		}
	case *UnfenceBrokerRecord:
		cur, err := b.brokerForChange(r.ID, r.Epoch, "unfence")
		if err != nil {
			return err
		}
		if cur.Fenced {
			nb := *cur
			nb.Fenced = false
			b.brokers()[r.ID] = &nb
		}
	case *BrokerRegistrationChangeRecord:
		return b.replayBrokerChange(r)
	case *TopicRecord:
		b.topics()
		if old := b.img.topicsByID[r.TopicID]; old != nil && old.Name != r.Name && b.img.topicsByName[old.Name] == old {
			delete(b.img.topicsByName, old.Name)
		}
		// TopicsDelta.replay(TopicRecord): a (re)created topic starts with no partitions.
		t := &Topic{Name: r.Name, ID: r.TopicID, Partitions: make(map[int32]*Partition)}
		b.img.topicsByID[r.TopicID] = t
		b.img.topicsByName[r.Name] = t
		b.ownTopic[r.TopicID] = true
		b.changes.topic(r.TopicID).Created = true
	case *PartitionRecord:
		return b.replayPartition(r)
	case *PartitionChangeRecord:
		return b.replayPartitionChange(r)
	case *RemoveTopicRecord:
		t := b.img.topicsByID[r.TopicID]
		if t == nil {
			return fmt.Errorf("unable to delete topic with id %x: no such topic found", r.TopicID)
		}
		b.topics()
		delete(b.img.topicsByID, r.TopicID)
		if b.img.topicsByName[t.Name] == t {
			delete(b.img.topicsByName, t.Name)
		}
		delete(b.ownTopic, r.TopicID)
		b.changes.topic(r.TopicID).Removed = true
		// MetadataDelta.replay(RemoveTopicRecord) also deletes the topic's configs.
		res := ConfigResource{ConfigResourceTopic, t.Name}
		if _, ok := b.img.configs[res]; ok {
			delete(b.configs(), res)
			delete(b.ownConfig, res)
		}
	case *ConfigRecord:
		res := ConfigResource{r.ResourceType, r.ResourceName}
		cur := b.img.configs[res]
		if r.Value == nil {
			if _, ok := cur[r.Name]; !ok {
				return nil
			}
		}
		all := b.configs()
		if !b.ownConfig[res] {
			cur = cloneMap(cur)
			all[res] = cur
			b.ownConfig[res] = true
		}
		if r.Value == nil {
			delete(cur, r.Name)
			if len(cur) == 0 {
				delete(all, res)
				delete(b.ownConfig, res)
			}
		} else {
			cur[r.Name] = *r.Value
		}
	case *ClientQuotaRecord:
		b.replayQuota(r)
	case *ProducerIdsRecord:
		b.img.producerIDs = ProducerIDs{BrokerID: r.BrokerID, BrokerEpoch: r.BrokerEpoch, NextProducerID: r.NextProducerID}
	case *ZkMigrationStateRecord:
		b.img.zkMigrationState = r.ZkMigrationState
	case *ClearElrRecord:
		return b.replayClearElr(r)
	case *UserScramCredentialRecord:
		// ScramDelta.replay: the credential of (user, mechanism) is replaced.
		b.scram()[ScramKey{r.Name, r.Mechanism}] = &ScramCredential{
			Name: r.Name, Mechanism: r.Mechanism, Salt: slices.Clone(r.Salt), StoredKey: slices.Clone(r.StoredKey),
			ServerKey: slices.Clone(r.ServerKey), Iterations: r.Iterations,
		}
	case *RemoveUserScramCredentialRecord:
		if _, ok := b.img.scram[ScramKey{r.Name, r.Mechanism}]; ok {
			delete(b.scram(), ScramKey{r.Name, r.Mechanism})
		}
	case *AccessControlEntryRecord:
		b.acls()[r.ID] = &ACL{
			ID: r.ID, ResourceType: r.ResourceType, ResourceName: r.ResourceName, PatternType: r.PatternType,
			Principal: r.Principal, Host: r.Host, Operation: r.Operation, PermissionType: r.PermissionType,
		}
	case *RemoveAccessControlEntryRecord:
		// AclsDelta.replay(RemoveAccessControlEntryRecord)
		if _, ok := b.img.acls[r.ID]; !ok {
			return fmt.Errorf("failed to remove ACL %x: no such ACL exists", r.ID)
		}
		delete(b.acls(), r.ID)
	case *DelegationTokenRecord:
		b.tokens()[r.TokenID] = &DelegationToken{
			TokenID: r.TokenID, Owner: r.Owner, Requester: r.Requester, Renewers: slices.Clone(r.Renewers),
			IssueTimestamp: r.IssueTimestamp, MaxTimestamp: r.MaxTimestamp, ExpirationTimestamp: r.ExpirationTimestamp,
		}
	case *RemoveDelegationTokenRecord:
		if _, ok := b.img.tokens[r.TokenID]; ok {
			delete(b.tokens(), r.TokenID)
		}
	case *NoOpRecord, *BeginTransactionRecord, *EndTransactionRecord, *AbortTransactionRecord:
		// KRaft's own transaction markers: the Cache handles them.
	default:
		return fmt.Errorf("%w: %T", ErrUnknownRecordType, rec)
	}
	return nil
}

func endpointsFromRecord(eps []BrokerEndpoint) []Endpoint {
	out := make([]Endpoint, 0, len(eps))
	for _, e := range eps {
		ep := Endpoint{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol}
		// Kafka keys listeners by name: a later duplicate wins.
		if i := slices.IndexFunc(out, func(x Endpoint) bool { return x.Name == e.Name }); i >= 0 {
			out[i] = ep
		} else {
			out = append(out, ep)
		}
	}
	return out
}

func featuresFromRecord(fs []BrokerFeature) map[string]FeatureRange {
	out := make(map[string]FeatureRange, len(fs))
	for _, f := range fs {
		out[f.Name] = FeatureRange{f.MinSupportedVersion, f.MaxSupportedVersion}
	}
	return out
}

func sortedDirs(d [][16]byte) [][16]byte {
	out := slices.Clone(d)
	slices.SortFunc(out, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	return out
}

// brokerFromRecord is BrokerRegistration.fromRecord.
func brokerFromRecord(r *RegisterBrokerRecord) *Broker {
	b := &Broker{
		ID:                   r.BrokerID,
		Epoch:                r.BrokerEpoch,
		IncarnationID:        r.IncarnationID,
		Listeners:            endpointsFromRecord(r.EndPoints),
		SupportedFeatures:    featuresFromRecord(r.Features),
		Fenced:               r.Fenced,
		InControlledShutdown: r.InControlledShutdown,
		IsMigratingZkBroker:  r.IsMigratingZkBroker,
		Directories:          sortedDirs(r.LogDirs),
		CordonedDirectories:  slices.Clone(r.CordonedLogDirs),
	}
	if r.Rack != nil {
		rack := *r.Rack
		b.Rack = &rack
	}
	return b
}

func controllerFromRecord(r *RegisterControllerRecord) *Controller {
	return &Controller{
		ID:                r.ControllerID,
		IncarnationID:     r.IncarnationID,
		ZkMigrationReady:  r.ZkMigrationReady,
		Listeners:         endpointsFromRecord(r.EndPoints),
		SupportedFeatures: featuresFromRecord(r.Features),
	}
}

// brokerForChange is ClusterDelta.getBrokerOrThrow.
func (b *builder) brokerForChange(id int32, epoch int64, action string) (*Broker, error) {
	cur := b.img.brokers[id]
	if cur == nil {
		return nil, fmt.Errorf("tried to %s broker %d, but that broker was not registered", action, id)
	}
	if cur.Epoch != epoch {
		return nil, fmt.Errorf("tried to %s broker %d, but the given epoch, %d, did not match the current broker epoch, %d",
			action, id, epoch, cur.Epoch)
	}
	return cur, nil
}

// replayBrokerChange is ClusterDelta.replay(BrokerRegistrationChangeRecord)
// with BrokerRegistration.cloneWith.
func (b *builder) replayBrokerChange(r *BrokerRegistrationChangeRecord) error {
	cur, err := b.brokerForChange(r.BrokerID, r.BrokerEpoch, "change")
	if err != nil {
		return err
	}
	fenced := cur.Fenced
	switch r.Fenced {
	case FencingChangeUnfence:
		fenced = false
	case FencingChangeNone:
	case FencingChangeFence:
		fenced = true
	default:
		return fmt.Errorf("unknown value for fenced field: %d", r.Fenced)
	}
	ics := cur.InControlledShutdown
	switch r.InControlledShutdown {
	case ControlledShutdownChangeNone:
	case ControlledShutdownChangeIn:
		ics = true
	default:
		return fmt.Errorf("unknown value for inControlledShutdown field: %d", r.InControlledShutdown)
	}
	dirs := cur.Directories
	if len(r.LogDirs) > 0 {
		dirs = sortedDirs(r.LogDirs)
	}
	// A non-null CordonedLogDirs replaces the cordoned dirs (KIP-1066).
	cordoned := cur.CordonedDirectories
	if r.CordonedLogDirs != nil {
		cordoned = slices.Clone(r.CordonedLogDirs)
	}
	if fenced == cur.Fenced && ics == cur.InControlledShutdown && slices.Equal(dirs, cur.Directories) &&
		(cordoned == nil) == (cur.CordonedDirectories == nil) && slices.Equal(cordoned, cur.CordonedDirectories) {
		return nil
	}
	nb := *cur
	nb.Fenced, nb.InControlledShutdown, nb.Directories, nb.CordonedDirectories = fenced, ics, dirs, cordoned
	b.brokers()[r.BrokerID] = &nb
	return nil
}

func validLeaderRecoveryState(v int8) error {
	if v != LeaderRecovered && v != LeaderRecovering {
		return fmt.Errorf("value %d is not a valid leader recovery state", v)
	}
	return nil
}

// migrating reports whether every directory is MIGRATING (all zero) or there are none.
func migrating(dirs [][16]byte) bool {
	for _, d := range dirs {
		if d != ([16]byte{}) {
			return false
		}
	}
	return true
}

// defaultToMigrating is PartitionRegistration.defaultToMigrating.
func defaultToMigrating(dirs [][16]byte, numReplicas int) [][16]byte {
	if migrating(dirs) {
		return make([][16]byte, numReplicas)
	}
	return dirs
}

// replayPartition is TopicDelta.replay(PartitionRecord) with the
// PartitionRegistration(PartitionRecord) constructor.
func (b *builder) replayPartition(r *PartitionRecord) error {
	t := b.img.topicsByID[r.TopicID]
	if t == nil {
		return fmt.Errorf("partition %d of unknown topic id %x", r.PartitionID, r.TopicID)
	}
	if len(r.Directories) > 0 && len(r.Directories) != len(r.Replicas) {
		return fmt.Errorf("partition %d: %d directories for %d replicas", r.PartitionID, len(r.Directories), len(r.Replicas))
	}
	if err := validLeaderRecoveryState(r.LeaderRecoveryState); err != nil {
		return err
	}
	p := &Partition{
		ID:                  r.PartitionID,
		Replicas:            cloneInts(r.Replicas),
		Isr:                 cloneInts(r.Isr),
		RemovingReplicas:    cloneInts(r.RemovingReplicas),
		AddingReplicas:      cloneInts(r.AddingReplicas),
		Leader:              r.Leader,
		LeaderRecoveryState: r.LeaderRecoveryState,
		LeaderEpoch:         r.LeaderEpoch,
		PartitionEpoch:      r.PartitionEpoch,
		Directories:         defaultToMigrating(slices.Clone(r.Directories), len(r.Replicas)),
		Elr:                 cloneInts(r.EligibleLeaderReplicas),
		LastKnownElr:        cloneInts(r.LastKnownElr),
	}
	b.setPartition(t, p)
	return nil
}

// replayPartitionChange is TopicDelta.replay(PartitionChangeRecord) with
// PartitionRegistration.merge: only present fields change, a new leader
// bumps the leader epoch, every change bumps the partition epoch.
func (b *builder) replayPartitionChange(r *PartitionChangeRecord) error {
	t := b.img.topicsByID[r.TopicID]
	if t == nil {
		return fmt.Errorf("unable to find partition %x:%d", r.TopicID, r.PartitionID)
	}
	cur := t.Partitions[r.PartitionID]
	if cur == nil {
		return fmt.Errorf("unable to find partition %x:%d", r.TopicID, r.PartitionID)
	}
	if r.Replicas != nil && len(r.Directories) > 0 && len(r.Replicas) != len(r.Directories) {
		return fmt.Errorf("partition %d: %d directories for %d replicas", r.PartitionID, len(r.Directories), len(r.Replicas))
	}
	np := *cur
	if r.Replicas != nil {
		np.Replicas = cloneInts(r.Replicas)
	}
	dirs := cur.Directories
	if r.Directories != nil {
		dirs = slices.Clone(r.Directories)
	}
	np.Directories = defaultToMigrating(dirs, len(np.Replicas))
	if r.Isr != nil {
		np.Isr = cloneInts(r.Isr)
	}
	if r.RemovingReplicas != nil {
		np.RemovingReplicas = cloneInts(r.RemovingReplicas)
	}
	if r.AddingReplicas != nil {
		np.AddingReplicas = cloneInts(r.AddingReplicas)
	}
	if r.Leader != NoLeaderChange {
		np.Leader = r.Leader
		np.LeaderEpoch = cur.LeaderEpoch + 1
	}
	if r.LeaderRecoveryState != -1 {
		if err := validLeaderRecoveryState(r.LeaderRecoveryState); err != nil {
			return err
		}
		np.LeaderRecoveryState = r.LeaderRecoveryState
	}
	if r.EligibleLeaderReplicas != nil {
		np.Elr = cloneInts(r.EligibleLeaderReplicas)
	}
	if r.LastKnownElr != nil {
		np.LastKnownElr = cloneInts(r.LastKnownElr)
	}
	np.PartitionEpoch = cur.PartitionEpoch + 1
	b.setPartition(t, &np)
	return nil
}

// replayClearElr is TopicsDelta.replay(ClearElrRecord): every partition of
// the named topic (of every topic when the name is empty) that has an ELR or
// a last known ELR gets both emptied, as a PartitionChangeRecord setting them
// to [] would (which bumps the partition epoch).
func (b *builder) replayClearElr(r *ClearElrRecord) error {
	var topics []*Topic
	if r.TopicName == "" {
		topics = slices.Collect(maps.Values(b.img.topicsByID))
	} else {
		t := b.img.topicsByName[r.TopicName]
		if t == nil {
			return fmt.Errorf("cannot clear the ELR of topic %s: no such topic", r.TopicName)
		}
		topics = []*Topic{t}
	}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if len(p.Elr) == 0 && len(p.LastKnownElr) == 0 {
				continue
			}
			np := *p
			np.Elr, np.LastKnownElr = []int32{}, []int32{}
			np.PartitionEpoch++
			b.setPartition(t, &np)
		}
	}
	return nil
}

// replayQuota is ClientQuotasDelta/ClientQuotaDelta.replay.
func (b *builder) replayQuota(r *ClientQuotaRecord) {
	parts := make([]ClientQuotaEntityPart, len(r.Entity))
	for i, e := range r.Entity {
		parts[i] = ClientQuotaEntityPart{Type: e.EntityType}
		if e.EntityName != nil {
			n := *e.EntityName
			parts[i].Name = &n
		}
	}
	slices.SortStableFunc(parts, func(a, b ClientQuotaEntityPart) int {
		if a.Type < b.Type {
			return -1
		} else if a.Type > b.Type {
			return 1
		}
		return 0
	})
	key := quotaKey(parts)
	cur := b.img.quotas[key]
	if r.Remove && (cur == nil || !hasKey(cur.Values, r.QuotaKey)) {
		return
	}
	nq := &ClientQuota{Entity: parts}
	if cur != nil {
		nq.Values = maps.Clone(cur.Values)
	} else {
		nq.Values = make(map[string]float64)
	}
	if r.Remove {
		delete(nq.Values, r.QuotaKey)
	} else {
		nq.Values[r.QuotaKey] = r.Value
	}
	if len(nq.Values) == 0 {
		delete(b.quotas(), key)
	} else {
		b.quotas()[key] = nq
	}
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}

// cloneInts copies a slice, keeping nil as nil.
func cloneInts(s []int32) []int32 { return slices.Clone(s) }
