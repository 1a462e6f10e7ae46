package metadatacache

import "github.com/twmb/franz-go/pkg/kbin"

// ver holds a record's version; embedded in every record type.
type ver struct{ v int16 }

// Version returns the version the record reads and writes.
func (x *ver) Version() int16 { return x.v }

// SetVersion sets the version the record reads and writes.
func (x *ver) SetVersion(v int16) { x.v = v }

// ---- TopicRecord ----

// TopicRecord (apiKey 2, v0) creates a topic. TopicRecord.json.
type TopicRecord struct {
	ver
	Name        string
	TopicID     [16]byte
	UnknownTags []TaggedField
}

// NewTopicRecord returns a TopicRecord with defaults at its newest version.
func NewTopicRecord() *TopicRecord {
	r := &TopicRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *TopicRecord) Default() { *r = TopicRecord{ver: r.ver} }

func (*TopicRecord) Key() int16        { return KeyTopic }
func (*TopicRecord) MaxVersion() int16 { return 0 }

func (r *TopicRecord) AppendTo(dst []byte) []byte {
	dst = appendString(dst, r.Name)
	dst = append(dst, r.TopicID[:]...)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *TopicRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.Name = d.string("Name")
	r.TopicID = d.uuid()
	r.UnknownTags = d.tags(nil)
	return d.done("TopicRecord")
}

// ---- RemoveTopicRecord ----

// RemoveTopicRecord (apiKey 9, v0) deletes a topic with its partitions and
// its configs. RemoveTopicRecord.json.
type RemoveTopicRecord struct {
	ver
	TopicID     [16]byte
	UnknownTags []TaggedField
}

// NewRemoveTopicRecord returns a RemoveTopicRecord at its newest version.
func NewRemoveTopicRecord() *RemoveTopicRecord {
	r := &RemoveTopicRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *RemoveTopicRecord) Default() { *r = RemoveTopicRecord{ver: r.ver} }

func (*RemoveTopicRecord) Key() int16        { return KeyRemoveTopic }
func (*RemoveTopicRecord) MaxVersion() int16 { return 0 }

func (r *RemoveTopicRecord) AppendTo(dst []byte) []byte {
	dst = append(dst, r.TopicID[:]...)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *RemoveTopicRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.TopicID = d.uuid()
	r.UnknownTags = d.tags(nil)
	return d.done("RemoveTopicRecord")
}

// ---- PartitionRecord ----

// PartitionRecord (apiKey 3, v0-2) creates a partition or replaces it
// whole. PartitionRecord.json: v1 adds Directories (KIP-858), v2 adds the
// tagged EligibleLeaderReplicas and LastKnownElr (KIP-966).
type PartitionRecord struct {
	ver
	PartitionID      int32 // default -1
	TopicID          [16]byte
	Replicas         []int32
	Isr              []int32
	RemovingReplicas []int32
	AddingReplicas   []int32
	Leader           int32 // default -1: no leader
	// LeaderRecoveryState is tagged (tag 0) in every version; default 0.
	LeaderRecoveryState int8
	LeaderEpoch         int32 // default -1
	PartitionEpoch      int32 // default -1
	// Directories (v1+): the log directory of each replica, in Replicas order.
	Directories [][16]byte
	// EligibleLeaderReplicas (v2+, tag 1, nullable, default null).
	EligibleLeaderReplicas []int32
	// LastKnownElr (v2+, tag 2, nullable, default null).
	LastKnownElr []int32
	UnknownTags  []TaggedField
}

// NewPartitionRecord returns a PartitionRecord with defaults at its newest version.
func NewPartitionRecord() *PartitionRecord {
	r := &PartitionRecord{}
	r.Default()
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *PartitionRecord) Default() {
	*r = PartitionRecord{ver: r.ver, PartitionID: -1, Leader: -1, LeaderEpoch: -1, PartitionEpoch: -1}
}

func (*PartitionRecord) Key() int16        { return KeyPartition }
func (*PartitionRecord) MaxVersion() int16 { return 2 }

func (r *PartitionRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.PartitionID)
	dst = append(dst, r.TopicID[:]...)
	dst = appendInt32s(dst, r.Replicas, false)
	dst = appendInt32s(dst, r.Isr, false)
	dst = appendInt32s(dst, r.RemovingReplicas, false)
	dst = appendInt32s(dst, r.AddingReplicas, false)
	dst = kbin.AppendInt32(dst, r.Leader)
	dst = kbin.AppendInt32(dst, r.LeaderEpoch)
	dst = kbin.AppendInt32(dst, r.PartitionEpoch)
	if r.v >= 1 {
		dst = appendUUIDs(dst, r.Directories, false)
	}
	var tags tagSet
	if r.LeaderRecoveryState != 0 {
		tags.add(0, []byte{byte(r.LeaderRecoveryState)})
	}
	if r.v >= 2 {
		if r.EligibleLeaderReplicas != nil {
			tags.add(1, appendInt32s(nil, r.EligibleLeaderReplicas, true))
		}
		if r.LastKnownElr != nil {
			tags.add(2, appendInt32s(nil, r.LastKnownElr, true))
		}
	}
	return tags.appendTo(dst, r.UnknownTags)
}

func (r *PartitionRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.PartitionID = d.int32()
	r.TopicID = d.uuid()
	r.Replicas = d.int32s("Replicas", false)
	r.Isr = d.int32s("Isr", false)
	r.RemovingReplicas = d.int32s("RemovingReplicas", false)
	r.AddingReplicas = d.int32s("AddingReplicas", false)
	r.Leader = d.int32()
	r.LeaderEpoch = d.int32()
	r.PartitionEpoch = d.int32()
	if r.v >= 1 {
		r.Directories = d.uuids("Directories", false)
	}
	r.UnknownTags = d.tags(func(tag uint32, fd *decoder) bool {
		switch {
		case tag == 0:
			r.LeaderRecoveryState = fd.int8()
		case tag == 1 && r.v >= 2:
			r.EligibleLeaderReplicas = fd.int32s("EligibleLeaderReplicas", true)
		case tag == 2 && r.v >= 2:
			r.LastKnownElr = fd.int32s("LastKnownElr", true)
		default:
			return false
		}
		return true
	})
	return d.done("PartitionRecord")
}

// ---- PartitionChangeRecord ----

// NoLeaderChange is PartitionChangeRecord.Leader's default: the leader did
// not change. NoLeader (-1) means the partition now has no leader.
const (
	NoLeaderChange int32 = -2
	NoLeader       int32 = -1
)

// PartitionChangeRecord (apiKey 5, v0-2) changes some fields of a
// partition; every field but PartitionID and TopicID is tagged and absent
// (nil, or the -2/-1 defaults) means "unchanged". PartitionChangeRecord.json:
// v1 adds Directories (tag 8), v2 adds EligibleLeaderReplicas (tag 6) and
// LastKnownElr (tag 7).
type PartitionChangeRecord struct {
	ver
	PartitionID int32 // default -1
	TopicID     [16]byte
	// Isr (tag 0): nil if unchanged.
	Isr []int32
	// Leader (tag 1): NoLeaderChange (-2, default), NoLeader (-1) or the new leader.
	Leader int32
	// Replicas (tag 2), RemovingReplicas (tag 3), AddingReplicas (tag 4): nil if unchanged.
	Replicas         []int32
	RemovingReplicas []int32
	AddingReplicas   []int32
	// LeaderRecoveryState (tag 5): -1 (default) if unchanged.
	LeaderRecoveryState int8
	// Directories (v1+, tag 8): nil if unchanged.
	Directories [][16]byte
	// EligibleLeaderReplicas (v2+, tag 6), LastKnownElr (v2+, tag 7): nil if unchanged.
	EligibleLeaderReplicas []int32
	LastKnownElr           []int32
	UnknownTags            []TaggedField
}

// NewPartitionChangeRecord returns a PartitionChangeRecord with defaults
// (nothing changes) at its newest version.
func NewPartitionChangeRecord() *PartitionChangeRecord {
	r := &PartitionChangeRecord{}
	r.Default()
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *PartitionChangeRecord) Default() {
	*r = PartitionChangeRecord{ver: r.ver, PartitionID: -1, Leader: NoLeaderChange, LeaderRecoveryState: -1}
}

func (*PartitionChangeRecord) Key() int16        { return KeyPartitionChange }
func (*PartitionChangeRecord) MaxVersion() int16 { return 2 }

func (r *PartitionChangeRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.PartitionID)
	dst = append(dst, r.TopicID[:]...)
	var tags tagSet
	if r.Isr != nil {
		tags.add(0, appendInt32s(nil, r.Isr, true))
	}
	if r.Leader != NoLeaderChange {
		tags.add(1, kbin.AppendInt32(nil, r.Leader))
	}
	if r.Replicas != nil {
		tags.add(2, appendInt32s(nil, r.Replicas, true))
	}
	if r.RemovingReplicas != nil {
		tags.add(3, appendInt32s(nil, r.RemovingReplicas, true))
	}
	if r.AddingReplicas != nil {
		tags.add(4, appendInt32s(nil, r.AddingReplicas, true))
	}
	if r.LeaderRecoveryState != -1 {
		tags.add(5, []byte{byte(r.LeaderRecoveryState)})
	}
	if r.v >= 2 {
		if r.EligibleLeaderReplicas != nil {
			tags.add(6, appendInt32s(nil, r.EligibleLeaderReplicas, true))
		}
		if r.LastKnownElr != nil {
			tags.add(7, appendInt32s(nil, r.LastKnownElr, true))
		}
	}
	if r.v >= 1 && r.Directories != nil {
		tags.add(8, appendUUIDs(nil, r.Directories, true))
	}
	return tags.appendTo(dst, r.UnknownTags)
}

func (r *PartitionChangeRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.PartitionID = d.int32()
	r.TopicID = d.uuid()
	r.UnknownTags = d.tags(func(tag uint32, fd *decoder) bool {
		switch {
		case tag == 0:
			r.Isr = fd.int32s("Isr", true)
		case tag == 1:
			r.Leader = fd.int32()
		case tag == 2:
			r.Replicas = fd.int32s("Replicas", true)
		case tag == 3:
			r.RemovingReplicas = fd.int32s("RemovingReplicas", true)
		case tag == 4:
			r.AddingReplicas = fd.int32s("AddingReplicas", true)
		case tag == 5:
			r.LeaderRecoveryState = fd.int8()
		case tag == 6 && r.v >= 2:
			r.EligibleLeaderReplicas = fd.int32s("EligibleLeaderReplicas", true)
		case tag == 7 && r.v >= 2:
			r.LastKnownElr = fd.int32s("LastKnownElr", true)
		case tag == 8 && r.v >= 1:
			r.Directories = fd.uuids("Directories", true)
		default:
			return false
		}
		return true
	})
	return d.done("PartitionChangeRecord")
}

// ---- ConfigRecord ----

// Config resource types (ConfigResource.Type ids) used in ConfigRecord.
const (
	ConfigResourceTopic         int8 = 2
	ConfigResourceBroker        int8 = 4
	ConfigResourceBrokerLogger  int8 = 8
	ConfigResourceClientMetrics int8 = 16
	ConfigResourceGroup         int8 = 32
)

// ConfigRecord (apiKey 4, v0) sets one config of a resource, or deletes it
// when Value is nil. ConfigRecord.json.
type ConfigRecord struct {
	ver
	ResourceType int8
	ResourceName string
	Name         string
	Value        *string // nil: delete
	UnknownTags  []TaggedField
}

// NewConfigRecord returns a ConfigRecord at its newest version.
func NewConfigRecord() *ConfigRecord {
	r := &ConfigRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *ConfigRecord) Default() { *r = ConfigRecord{ver: r.ver} }

func (*ConfigRecord) Key() int16        { return KeyConfig }
func (*ConfigRecord) MaxVersion() int16 { return 0 }

func (r *ConfigRecord) AppendTo(dst []byte) []byte {
	dst = append(dst, byte(r.ResourceType))
	dst = appendString(dst, r.ResourceName)
	dst = appendString(dst, r.Name)
	dst = appendNullableString(dst, r.Value)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *ConfigRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.ResourceType = d.int8()
	r.ResourceName = d.string("ResourceName")
	r.Name = d.string("Name")
	r.Value = d.nullableString("Value")
	r.UnknownTags = d.tags(nil)
	return d.done("ConfigRecord")
}
