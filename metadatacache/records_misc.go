package metadatacache

import "github.com/twmb/franz-go/pkg/kbin"

// ---- FeatureLevelRecord ----

// MetadataVersionFeature is the feature whose level is the metadata.version.
const MetadataVersionFeature = "metadata.version"

// FeatureLevelRecord (apiKey 12, v0) finalizes a feature level; level 0
// removes the feature. FeatureLevelRecord.json (its version never advances
// beyond 0: logs begin with one).
type FeatureLevelRecord struct {
	ver
	Name         string
	FeatureLevel int16
	UnknownTags  []TaggedField
}

// NewFeatureLevelRecord returns a FeatureLevelRecord at its newest version.
func NewFeatureLevelRecord() *FeatureLevelRecord {
	r := &FeatureLevelRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *FeatureLevelRecord) Default() { *r = FeatureLevelRecord{ver: r.ver} }

func (*FeatureLevelRecord) Key() int16        { return KeyFeatureLevel }
func (*FeatureLevelRecord) MaxVersion() int16 { return 0 }

func (r *FeatureLevelRecord) AppendTo(dst []byte) []byte {
	dst = appendString(dst, r.Name)
	dst = kbin.AppendInt16(dst, r.FeatureLevel)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *FeatureLevelRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.Name = d.string("Name")
	r.FeatureLevel = d.int16()
	r.UnknownTags = d.tags(nil)
	return d.done("FeatureLevelRecord")
}

// ---- ClientQuotaRecord ----

// ClientQuotaEntityData is one part of a quota entity: a type ("user",
// "client-id", "ip") and a name, nil for the default entity.
type ClientQuotaEntityData struct {
	EntityType  string
	EntityName  *string
	UnknownTags []TaggedField
}

// ClientQuotaRecord (apiKey 14, v0) sets or removes one quota value of an
// entity. ClientQuotaRecord.json.
type ClientQuotaRecord struct {
	ver
	Entity      []ClientQuotaEntityData
	QuotaKey    string // the schema's "Key" (Key() is the apiKey)
	Value       float64
	Remove      bool
	UnknownTags []TaggedField
}

// NewClientQuotaRecord returns a ClientQuotaRecord at its newest version.
func NewClientQuotaRecord() *ClientQuotaRecord {
	r := &ClientQuotaRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *ClientQuotaRecord) Default() { *r = ClientQuotaRecord{ver: r.ver} }

func (*ClientQuotaRecord) Key() int16        { return KeyClientQuota }
func (*ClientQuotaRecord) MaxVersion() int16 { return 0 }

func (r *ClientQuotaRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(r.Entity))
	for _, e := range r.Entity {
		dst = appendString(dst, e.EntityType)
		dst = appendNullableString(dst, e.EntityName)
		dst = appendNoTags(dst, e.UnknownTags)
	}
	dst = appendString(dst, r.QuotaKey)
	dst = kbin.AppendFloat64(dst, r.Value)
	dst = appendBool(dst, r.Remove)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *ClientQuotaRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	n := d.arrayLen("Entity", false, 3)
	if d.err == nil {
		r.Entity = make([]ClientQuotaEntityData, n)
		for i := range r.Entity {
			e := &r.Entity[i]
			e.EntityType = d.string("Entity.EntityType")
			e.EntityName = d.nullableString("Entity.EntityName")
			e.UnknownTags = d.tags(nil)
		}
	}
	r.QuotaKey = d.string("Key")
	r.Value = d.float64()
	r.Remove = d.bool()
	r.UnknownTags = d.tags(nil)
	return d.done("ClientQuotaRecord")
}

// ---- ProducerIdsRecord ----

// ProducerIdsRecord (apiKey 15, v0) allocates a block of producer ids to a
// broker; NextProducerID is the first id of the next block.
// ProducerIdsRecord.json.
type ProducerIdsRecord struct {
	ver
	BrokerID       int32
	BrokerEpoch    int64 // default -1
	NextProducerID int64
	UnknownTags    []TaggedField
}

// NewProducerIdsRecord returns a ProducerIdsRecord with defaults at its newest version.
func NewProducerIdsRecord() *ProducerIdsRecord {
	r := &ProducerIdsRecord{}
	r.Default()
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *ProducerIdsRecord) Default() { *r = ProducerIdsRecord{ver: r.ver, BrokerEpoch: -1} }

func (*ProducerIdsRecord) Key() int16        { return KeyProducerIds }
func (*ProducerIdsRecord) MaxVersion() int16 { return 0 }

func (r *ProducerIdsRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.BrokerID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	dst = kbin.AppendInt64(dst, r.NextProducerID)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *ProducerIdsRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.BrokerID = d.int32()
	r.BrokerEpoch = d.int64()
	r.NextProducerID = d.int64()
	r.UnknownTags = d.tags(nil)
	return d.done("ProducerIdsRecord")
}

// ---- NoOpRecord ----

// NoOpRecord (apiKey 20, v0) has no fields; the active controller writes
// one periodically so the log (and the high watermark) keep advancing.
type NoOpRecord struct {
	ver
	UnknownTags []TaggedField
}

// NewNoOpRecord returns a NoOpRecord at its newest version.
func NewNoOpRecord() *NoOpRecord { return &NoOpRecord{} }

// Default resets every field to the schema's default, keeping the version.
func (r *NoOpRecord) Default() { *r = NoOpRecord{ver: r.ver} }

func (*NoOpRecord) Key() int16                   { return KeyNoOp }
func (*NoOpRecord) MaxVersion() int16            { return 0 }
func (r *NoOpRecord) AppendTo(dst []byte) []byte { return appendNoTags(dst, r.UnknownTags) }

func (r *NoOpRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.UnknownTags = d.tags(nil)
	return d.done("NoOpRecord")
}

// ---- ZkMigrationStateRecord ----

// ZkMigrationStateRecord (apiKey 21, v0) marks the ZooKeeper migration
// state: 0 None, 1 Migration, 2 PreMigration, 3 PostMigration (3.5+
// numbering). ZkMigrationRecord.json.
type ZkMigrationStateRecord struct {
	ver
	ZkMigrationState int8
	UnknownTags      []TaggedField
}

// NewZkMigrationStateRecord returns a ZkMigrationStateRecord at its newest version.
func NewZkMigrationStateRecord() *ZkMigrationStateRecord { return &ZkMigrationStateRecord{} }

// Default resets every field to the schema's default, keeping the version.
func (r *ZkMigrationStateRecord) Default() { *r = ZkMigrationStateRecord{ver: r.ver} }

func (*ZkMigrationStateRecord) Key() int16        { return KeyZkMigrationState }
func (*ZkMigrationStateRecord) MaxVersion() int16 { return 0 }

func (r *ZkMigrationStateRecord) AppendTo(dst []byte) []byte {
	dst = append(dst, byte(r.ZkMigrationState))
	return appendNoTags(dst, r.UnknownTags)
}

func (r *ZkMigrationStateRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.ZkMigrationState = d.int8()
	r.UnknownTags = d.tags(nil)
	return d.done("ZkMigrationStateRecord")
}

// ---- metadata transactions (KIP-868) ----

// BeginTransactionRecord (apiKey 23, v0) opens a metadata transaction: the
// records up to the matching EndTransactionRecord are published together,
// and dropped if an AbortTransactionRecord comes first.
type BeginTransactionRecord struct {
	ver
	// Name (tag 0, nullable, default null): a description of the transaction.
	Name        *string
	UnknownTags []TaggedField
}

// NewBeginTransactionRecord returns a BeginTransactionRecord at its newest version.
func NewBeginTransactionRecord() *BeginTransactionRecord { return &BeginTransactionRecord{} }

// Default resets every field to the schema's default, keeping the version.
func (r *BeginTransactionRecord) Default() { *r = BeginTransactionRecord{ver: r.ver} }

func (*BeginTransactionRecord) Key() int16        { return KeyBeginTransaction }
func (*BeginTransactionRecord) MaxVersion() int16 { return 0 }

func (r *BeginTransactionRecord) AppendTo(dst []byte) []byte {
	var tags tagSet
	if r.Name != nil {
		tags.add(0, appendNullableString(nil, r.Name))
	}
	return tags.appendTo(dst, r.UnknownTags)
}

func (r *BeginTransactionRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.UnknownTags = d.tags(func(tag uint32, fd *decoder) bool {
		if tag == 0 {
			r.Name = fd.nullableString("Name")
			return true
		}
		return false
	})
	return d.done("BeginTransactionRecord")
}

// EndTransactionRecord (apiKey 24, v0) commits a metadata transaction.
type EndTransactionRecord struct {
	ver
	UnknownTags []TaggedField
}

// NewEndTransactionRecord returns an EndTransactionRecord at its newest version.
func NewEndTransactionRecord() *EndTransactionRecord { return &EndTransactionRecord{} }

// Default resets every field to the schema's default, keeping the version.
func (r *EndTransactionRecord) Default() { *r = EndTransactionRecord{ver: r.ver} }

func (*EndTransactionRecord) Key() int16                   { return KeyEndTransaction }
func (*EndTransactionRecord) MaxVersion() int16            { return 0 }
func (r *EndTransactionRecord) AppendTo(dst []byte) []byte { return appendNoTags(dst, r.UnknownTags) }

func (r *EndTransactionRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.UnknownTags = d.tags(nil)
	return d.done("EndTransactionRecord")
}

// AbortTransactionRecord (apiKey 25, v0) drops an open metadata transaction.
type AbortTransactionRecord struct {
	ver
	// Reason (tag 0, nullable, default null).
	Reason      *string
	UnknownTags []TaggedField
}

// NewAbortTransactionRecord returns an AbortTransactionRecord at its newest version.
func NewAbortTransactionRecord() *AbortTransactionRecord { return &AbortTransactionRecord{} }

// Default resets every field to the schema's default, keeping the version.
func (r *AbortTransactionRecord) Default() { *r = AbortTransactionRecord{ver: r.ver} }

func (*AbortTransactionRecord) Key() int16        { return KeyAbortTransaction }
func (*AbortTransactionRecord) MaxVersion() int16 { return 0 }

func (r *AbortTransactionRecord) AppendTo(dst []byte) []byte {
	var tags tagSet
	if r.Reason != nil {
		tags.add(0, appendNullableString(nil, r.Reason))
	}
	return tags.appendTo(dst, r.UnknownTags)
}

func (r *AbortTransactionRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.UnknownTags = d.tags(func(tag uint32, fd *decoder) bool {
		if tag == 0 {
			r.Reason = fd.nullableString("Reason")
			return true
		}
		return false
	})
	return d.done("AbortTransactionRecord")
}
