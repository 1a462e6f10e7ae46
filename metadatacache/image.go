package metadatacache

import (
	"bytes"
	"cmp"
	"maps"
	"reflect"
	"slices"
	"strconv"
)

// Endpoint is one listener of a broker or controller.
type Endpoint struct {
	Name             string
	Host             string
	Port             uint16
	SecurityProtocol int16 // SecurityProtocol id: 0 PLAINTEXT, 1 SSL, 2 SASL_PLAINTEXT, 3 SASL_SSL
}

// FeatureRange is a supported [Min, Max] feature level range.
type FeatureRange struct{ Min, Max int16 }

// Broker is a registered broker (Kafka's BrokerRegistration).
type Broker struct {
	ID                   int32
	Epoch                int64
	IncarnationID        [16]byte
	Listeners            []Endpoint // unique names, in registration order
	SupportedFeatures    map[string]FeatureRange
	Rack                 *string // nil: no rack
	Fenced               bool
	InControlledShutdown bool
	IsMigratingZkBroker  bool
	Directories          [][16]byte // online log dirs, sorted
	// CordonedDirectories are the log dirs the broker reported cordoned
	// (KIP-1066, metadata.version 4.3-IV0); nil until it reports them.
	CordonedDirectories [][16]byte
}

// Listener returns the broker's endpoint with the given listener name.
func (b *Broker) Listener(name string) (Endpoint, bool) {
	for _, e := range b.Listeners {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

// Controller is a registered controller (Kafka's ControllerRegistration).
type Controller struct {
	ID                int32
	IncarnationID     [16]byte
	ZkMigrationReady  bool
	Listeners         []Endpoint
	SupportedFeatures map[string]FeatureRange
}

// Leader recovery states (LeaderRecoveryState.java).
const (
	LeaderRecovered  int8 = 0
	LeaderRecovering int8 = 1
)

// Partition is one partition's registration (Kafka's PartitionRegistration).
type Partition struct {
	ID                  int32
	Replicas            []int32
	Isr                 []int32
	RemovingReplicas    []int32
	AddingReplicas      []int32
	Leader              int32 // -1: no leader
	LeaderRecoveryState int8
	LeaderEpoch         int32
	PartitionEpoch      int32
	Directories         [][16]byte // one per replica; all zero ("MIGRATING") when unknown
	Elr                 []int32
	LastKnownElr        []int32
}

// HasReplica reports whether broker id is a replica of the partition.
func (p *Partition) HasReplica(id int32) bool { return slices.Contains(p.Replicas, id) }

// InIsr reports whether broker id is in the ISR.
func (p *Partition) InIsr(id int32) bool { return slices.Contains(p.Isr, id) }

// Topic is a topic and its partitions, keyed by partition id.
type Topic struct {
	Name       string
	ID         [16]byte
	Partitions map[int32]*Partition
}

// Partition returns partition id, or nil.
func (t *Topic) Partition(id int32) *Partition { return t.Partitions[id] }

// SortedPartitions returns the partitions ordered by id.
func (t *Topic) SortedPartitions() []*Partition {
	out := slices.Collect(maps.Values(t.Partitions))
	slices.SortFunc(out, func(a, b *Partition) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// ConfigResource names a config resource: Type is a ConfigResource* id, Name
// the topic name, the broker id in decimal, or "" for the cluster-wide
// broker default.
type ConfigResource struct {
	Type int8
	Name string
}

// ProducerIDs is the last producer-id block handed out
// (ProducerIdsRecord). NextProducerID is -1 before the first block.
type ProducerIDs struct {
	BrokerID       int32
	BrokerEpoch    int64
	NextProducerID int64
}

// ClientQuotaEntityPart is one (type, name) pair of a quota entity; a nil
// Name is the default entity of that type.
type ClientQuotaEntityPart struct {
	Type string
	Name *string
}

// ClientQuota holds the quota values of one entity.
type ClientQuota struct {
	Entity []ClientQuotaEntityPart // sorted by Type
	Values map[string]float64
}

// ScramCredential is one user's SCRAM credential for one mechanism
// (UserScramCredentialRecord; Kafka's ScramCredentialData).
type ScramCredential struct {
	Name       string
	Mechanism  int8 // 1 SCRAM-SHA-256, 2 SCRAM-SHA-512
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int32
}

// ScramKey identifies a SCRAM credential.
type ScramKey struct {
	Name      string
	Mechanism int8
}

// ACL is one access control entry (AccessControlEntryRecord; Kafka's
// StandardAcl), identified by its id. The enums are Kafka's codes
// (ResourceType, PatternType, AclOperation, AclPermissionType).
type ACL struct {
	ID             [16]byte
	ResourceType   int8
	ResourceName   string
	PatternType    int8
	Principal      string
	Host           string
	Operation      int8
	PermissionType int8
}

// DelegationToken is one delegation token (DelegationTokenRecord; Kafka's
// DelegationTokenData), identified by its id.
type DelegationToken struct {
	TokenID             string
	Owner               string
	Requester           string
	Renewers            []string
	IssueTimestamp      int64
	MaxTimestamp        int64
	ExpirationTimestamp int64
}

// Image is an immutable view of the cluster metadata as of Offset. Images
// share unchanged parts (topics, partitions, brokers) with the images they
// were built from: nothing reachable from an Image may be modified. Because
// of the sharing, pointer equality means "unchanged": if
// old.TopicByID(id) == new.TopicByID(id), the topic and all its partitions
// are the same.
type Image struct {
	// Offset and Epoch are those of the last record applied; -1 when empty.
	Offset       int64
	Epoch        int32
	AppendTimeMs int64
	// ClusterID is the cluster id given to the Cache, if any; it is not in
	// the metadata records.
	ClusterID string

	features         map[string]int16
	brokers          map[int32]*Broker
	controllers      map[int32]*Controller
	topicsByID       map[[16]byte]*Topic
	topicsByName     map[string]*Topic
	configs          map[ConfigResource]map[string]string
	quotas           map[string]*ClientQuota
	producerIDs      ProducerIDs
	zkMigrationState int8
	// SCRAM credentials (the SCRAM servers), ACLs (the authorizer) and
	// delegation tokens (kept so that snapshots carry them).
	scram  map[ScramKey]*ScramCredential
	acls   map[[16]byte]*ACL
	tokens map[string]*DelegationToken

	// changes is what this image changed from the one published before it.
	changes Changes
}

// EmptyImage returns an image with no metadata, at offset -1.
func EmptyImage(clusterID string) *Image {
	return &Image{
		Offset:       -1,
		Epoch:        -1,
		AppendTimeMs: -1,
		ClusterID:    clusterID,
		producerIDs:  ProducerIDs{BrokerID: -1, BrokerEpoch: -1, NextProducerID: -1},
	}
}

// IsEmpty reports whether the image holds no metadata at all.
func (m *Image) IsEmpty() bool {
	return len(m.features) == 0 && len(m.brokers) == 0 && len(m.controllers) == 0 &&
		len(m.topicsByID) == 0 && len(m.configs) == 0 && len(m.quotas) == 0 &&
		m.producerIDs.NextProducerID < 0 && m.zkMigrationState == 0 &&
		len(m.scram) == 0 && len(m.acls) == 0 && len(m.tokens) == 0
}

// Feature returns the finalized level of a feature.
func (m *Image) Feature(name string) (int16, bool) {
	l, ok := m.features[name]
	return l, ok
}

// Features returns a copy of the finalized feature levels, including
// metadata.version.
func (m *Image) Features() map[string]int16 { return maps.Clone(m.features) }

// MetadataVersion returns the metadata.version feature level, 0 if unset.
func (m *Image) MetadataVersion() int16 { return m.features[MetadataVersionFeature] }

// Broker returns the registration of broker id, or nil.
func (m *Image) Broker(id int32) *Broker { return m.brokers[id] }

// Brokers returns every registered broker, ordered by id.
func (m *Image) Brokers() []*Broker {
	out := slices.Collect(maps.Values(m.brokers))
	slices.SortFunc(out, func(a, b *Broker) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// AliveBrokers returns the registered brokers that are not fenced, ordered by id.
func (m *Image) AliveBrokers() []*Broker {
	return slices.DeleteFunc(m.Brokers(), func(b *Broker) bool { return b.Fenced })
}

// Controller returns the registration of controller id, or nil.
func (m *Image) Controller(id int32) *Controller { return m.controllers[id] }

// Controllers returns every registered controller, ordered by id.
func (m *Image) Controllers() []*Controller {
	out := slices.Collect(maps.Values(m.controllers))
	slices.SortFunc(out, func(a, b *Controller) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// TopicByName returns the topic, or nil.
func (m *Image) TopicByName(name string) *Topic { return m.topicsByName[name] }

// TopicByID returns the topic, or nil.
func (m *Image) TopicByID(id [16]byte) *Topic { return m.topicsByID[id] }

// NumTopics returns the number of topics.
func (m *Image) NumTopics() int { return len(m.topicsByID) }

// TopicNames returns the topic names, sorted.
func (m *Image) TopicNames() []string {
	out := make([]string, 0, len(m.topicsByID))
	for _, t := range m.topicsByID {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// Topics returns every topic, ordered by name.
func (m *Image) Topics() []*Topic {
	out := slices.Collect(maps.Values(m.topicsByID))
	slices.SortFunc(out, func(a, b *Topic) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Partition returns a partition of a topic, or nil.
func (m *Image) Partition(topicID [16]byte, partition int32) *Partition {
	if t := m.topicsByID[topicID]; t != nil {
		return t.Partitions[partition]
	}
	return nil
}

// Configs returns a copy of the configs set on a resource (nil if none).
func (m *Image) Configs(r ConfigResource) map[string]string { return maps.Clone(m.configs[r]) }

// Config returns one config of a resource.
func (m *Image) Config(r ConfigResource, name string) (string, bool) {
	v, ok := m.configs[r][name]
	return v, ok
}

// TopicConfig returns a copy of the configs set on a topic.
func (m *Image) TopicConfig(topic string) map[string]string {
	return m.Configs(ConfigResource{ConfigResourceTopic, topic})
}

// BrokerConfig returns a copy of the configs set on one broker (not
// including the cluster-wide defaults; see DefaultBrokerConfig).
func (m *Image) BrokerConfig(id int32) map[string]string {
	return m.Configs(ConfigResource{ConfigResourceBroker, strconv.Itoa(int(id))})
}

// DefaultBrokerConfig returns a copy of the cluster-wide broker configs
// (resource BROKER with the empty name).
func (m *Image) DefaultBrokerConfig() map[string]string {
	return m.Configs(ConfigResource{ConfigResourceBroker, ""})
}

// GroupConfigs returns a copy of the dynamic configs set on a group (the
// GROUP config resource, KIP-848/KIP-932 group configs): only the
// overrides, nil if none. config.(*Config).ResolveGroupConfig turns them
// into the group's effective settings. A nil image has none.
func (m *Image) GroupConfigs(groupID string) map[string]string {
	if m == nil {
		return nil
	}
	return m.Configs(ConfigResource{ConfigResourceGroup, groupID})
}

// ConfigResources returns the resources that have configs, ordered by type then name.
func (m *Image) ConfigResources() []ConfigResource {
	out := slices.Collect(maps.Keys(m.configs))
	slices.SortFunc(out, compareResource)
	return out
}

func compareResource(a, b ConfigResource) int {
	if c := cmp.Compare(a.Type, b.Type); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

// ClientQuotas returns the quotas of every entity, in a stable order.
func (m *Image) ClientQuotas() []*ClientQuota {
	keys := slices.Sorted(maps.Keys(m.quotas))
	out := make([]*ClientQuota, len(keys))
	for i, k := range keys {
		out[i] = m.quotas[k]
	}
	return out
}

// ProducerIDs returns the last producer-id block handed out.
func (m *Image) ProducerIDs() ProducerIDs { return m.producerIDs }

// ZkMigrationState returns the last ZkMigrationStateRecord value (0 None).
func (m *Image) ZkMigrationState() int8 { return m.zkMigrationState }

// ScramCredentials returns every SCRAM credential, ordered by mechanism then user.
func (m *Image) ScramCredentials() []*ScramCredential {
	out := slices.Collect(maps.Values(m.scram))
	slices.SortFunc(out, func(a, b *ScramCredential) int {
		if c := cmp.Compare(a.Mechanism, b.Mechanism); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// ScramCredential returns the credential of a user for a mechanism (1
// SCRAM-SHA-256, 2 SCRAM-SHA-512); the SASL/SCRAM server looks users up here.
func (m *Image) ScramCredential(name string, mechanism int8) (*ScramCredential, bool) {
	c, ok := m.scram[ScramKey{Name: name, Mechanism: mechanism}]
	return c, ok
}

// SameACLs reports whether m and o share their ACLs (an image's ACLs are
// copied on write, so unchanged ACLs are the same map).
func (m *Image) SameACLs(o *Image) bool {
	return reflect.ValueOf(m.acls).UnsafePointer() == reflect.ValueOf(o.acls).UnsafePointer()
}

// SameTopics reports whether m and o share their topics and partitions
// (copied on write, as the ACLs).
func (m *Image) SameTopics(o *Image) bool {
	return reflect.ValueOf(m.topicsByID).UnsafePointer() == reflect.ValueOf(o.topicsByID).UnsafePointer()
}

// ACLs returns every ACL, ordered by id.
func (m *Image) ACLs() []*ACL {
	out := slices.Collect(maps.Values(m.acls))
	slices.SortFunc(out, func(a, b *ACL) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	return out
}

// DelegationTokens returns every delegation token, ordered by id.
func (m *Image) DelegationTokens() []*DelegationToken {
	out := slices.Collect(maps.Values(m.tokens))
	slices.SortFunc(out, func(a, b *DelegationToken) int { return cmp.Compare(a.TokenID, b.TokenID) })
	return out
}

// quotaKey is a canonical map key for a quota entity.
func quotaKey(parts []ClientQuotaEntityPart) string {
	var b []byte
	for _, p := range parts {
		b = strconv.AppendQuote(b, p.Type)
		if p.Name == nil {
			b = append(b, "=null;"...)
		} else {
			b = append(b, '=')
			b = strconv.AppendQuote(b, *p.Name)
			b = append(b, ';')
		}
	}
	return string(b)
}
