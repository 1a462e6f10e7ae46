package metadatacache

import "github.com/twmb/franz-go/pkg/kbin"

// BrokerEndpoint is one listener in RegisterBrokerRecord.EndPoints (and,
// as ControllerEndpoint, in RegisterControllerRecord.EndPoints).
type BrokerEndpoint struct {
	Name             string
	Host             string
	Port             uint16
	SecurityProtocol int16
	UnknownTags      []TaggedField
}

// BrokerFeature is one supported feature range in RegisterBrokerRecord.Features
// (and, as ControllerFeature, in RegisterControllerRecord.Features).
type BrokerFeature struct {
	Name                string
	MinSupportedVersion int16
	MaxSupportedVersion int16
	UnknownTags         []TaggedField
}

// ControllerEndpoint and ControllerFeature have the same schema as the broker ones.
type (
	ControllerEndpoint = BrokerEndpoint
	ControllerFeature  = BrokerFeature
)

func appendEndpoints(dst []byte, eps []BrokerEndpoint) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(eps))
	for _, e := range eps {
		dst = appendString(dst, e.Name)
		dst = appendString(dst, e.Host)
		dst = kbin.AppendUint16(dst, e.Port)
		dst = kbin.AppendInt16(dst, e.SecurityProtocol)
		dst = appendNoTags(dst, e.UnknownTags)
	}
	return dst
}

func readEndpoints(d *decoder) []BrokerEndpoint {
	// Smallest element: two empty strings, port, protocol, empty tags.
	n := d.arrayLen("EndPoints", false, 7)
	if d.err != nil {
		return nil
	}
	out := make([]BrokerEndpoint, n)
	for i := range out {
		e := &out[i]
		e.Name = d.string("EndPoints.Name")
		e.Host = d.string("EndPoints.Host")
		e.Port = d.uint16()
		e.SecurityProtocol = d.int16()
		e.UnknownTags = d.tags(nil)
	}
	return out
}

func appendFeatures(dst []byte, fs []BrokerFeature) []byte {
	dst = kbin.AppendCompactArrayLen(dst, len(fs))
	for _, f := range fs {
		dst = appendString(dst, f.Name)
		dst = kbin.AppendInt16(dst, f.MinSupportedVersion)
		dst = kbin.AppendInt16(dst, f.MaxSupportedVersion)
		dst = appendNoTags(dst, f.UnknownTags)
	}
	return dst
}

func readFeatures(d *decoder) []BrokerFeature {
	n := d.arrayLen("Features", false, 6)
	if d.err != nil {
		return nil
	}
	out := make([]BrokerFeature, n)
	for i := range out {
		f := &out[i]
		f.Name = d.string("Features.Name")
		f.MinSupportedVersion = d.int16()
		f.MaxSupportedVersion = d.int16()
		f.UnknownTags = d.tags(nil)
	}
	return out
}

// ---- RegisterBrokerRecord ----

// RegisterBrokerRecord (apiKey 0, v0-3) registers a broker, replacing any
// earlier registration of the same id. RegisterBrokerRecord.json: v1 adds
// InControlledShutdown, v2 IsMigratingZkBroker, v3 the tagged LogDirs.
type RegisterBrokerRecord struct {
	ver
	BrokerID            int32
	IsMigratingZkBroker bool // v2+, default false
	IncarnationID       [16]byte
	BrokerEpoch         int64
	EndPoints           []BrokerEndpoint
	Features            []BrokerFeature
	Rack                *string
	Fenced              bool // default true
	// InControlledShutdown (v1+), default false.
	InControlledShutdown bool
	// LogDirs (v3+, tag 0): the broker's online log directories.
	LogDirs     [][16]byte
	UnknownTags []TaggedField
}

// NewRegisterBrokerRecord returns a RegisterBrokerRecord with defaults
// (Fenced true) at its newest version.
func NewRegisterBrokerRecord() *RegisterBrokerRecord {
	r := &RegisterBrokerRecord{}
	r.Default()
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *RegisterBrokerRecord) Default() { *r = RegisterBrokerRecord{ver: r.ver, Fenced: true} }

func (*RegisterBrokerRecord) Key() int16        { return KeyRegisterBroker }
func (*RegisterBrokerRecord) MaxVersion() int16 { return 3 }

func (r *RegisterBrokerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.BrokerID)
	if r.v >= 2 {
		dst = appendBool(dst, r.IsMigratingZkBroker)
	}
	dst = append(dst, r.IncarnationID[:]...)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	dst = appendEndpoints(dst, r.EndPoints)
	dst = appendFeatures(dst, r.Features)
	dst = appendNullableString(dst, r.Rack)
	dst = appendBool(dst, r.Fenced)
	if r.v >= 1 {
		dst = appendBool(dst, r.InControlledShutdown)
	}
	var tags tagSet
	if r.v >= 3 && len(r.LogDirs) > 0 {
		tags.add(0, appendUUIDs(nil, r.LogDirs, false))
	}
	return tags.appendTo(dst, r.UnknownTags)
}

func (r *RegisterBrokerRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.BrokerID = d.int32()
	if r.v >= 2 {
		r.IsMigratingZkBroker = d.bool()
	}
	r.IncarnationID = d.uuid()
	r.BrokerEpoch = d.int64()
	r.EndPoints = readEndpoints(&d)
	r.Features = readFeatures(&d)
	r.Rack = d.nullableString("Rack")
	r.Fenced = d.bool()
	if r.v >= 1 {
		r.InControlledShutdown = d.bool()
	}
	r.UnknownTags = d.tags(func(tag uint32, fd *decoder) bool {
		if tag == 0 && r.v >= 3 {
			r.LogDirs = fd.uuids("LogDirs", false)
			return true
		}
		return false
	})
	return d.done("RegisterBrokerRecord")
}

// ---- UnregisterBrokerRecord ----

// UnregisterBrokerRecord (apiKey 1, v0) removes a broker registration.
// UnregisterBrokerRecord.json.
type UnregisterBrokerRecord struct {
	ver
	BrokerID    int32
	BrokerEpoch int64
	UnknownTags []TaggedField
}

// NewUnregisterBrokerRecord returns an UnregisterBrokerRecord at its newest version.
func NewUnregisterBrokerRecord() *UnregisterBrokerRecord {
	r := &UnregisterBrokerRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *UnregisterBrokerRecord) Default() { *r = UnregisterBrokerRecord{ver: r.ver} }

func (*UnregisterBrokerRecord) Key() int16        { return KeyUnregisterBroker }
func (*UnregisterBrokerRecord) MaxVersion() int16 { return 0 }

func (r *UnregisterBrokerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.BrokerID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *UnregisterBrokerRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.BrokerID = d.int32()
	r.BrokerEpoch = d.int64()
	r.UnknownTags = d.tags(nil)
	return d.done("UnregisterBrokerRecord")
}

// ---- FenceBrokerRecord / UnfenceBrokerRecord ----

// FenceBrokerRecord (apiKey 7, v0) fences a broker. FenceBrokerRecord.json.
// Newer controllers write BrokerRegistrationChangeRecord instead.
type FenceBrokerRecord struct {
	ver
	ID          int32
	Epoch       int64
	UnknownTags []TaggedField
}

// NewFenceBrokerRecord returns a FenceBrokerRecord at its newest version.
func NewFenceBrokerRecord() *FenceBrokerRecord {
	r := &FenceBrokerRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *FenceBrokerRecord) Default() { *r = FenceBrokerRecord{ver: r.ver} }

func (*FenceBrokerRecord) Key() int16        { return KeyFenceBroker }
func (*FenceBrokerRecord) MaxVersion() int16 { return 0 }

func (r *FenceBrokerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ID)
	dst = kbin.AppendInt64(dst, r.Epoch)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *FenceBrokerRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.ID = d.int32()
	r.Epoch = d.int64()
	r.UnknownTags = d.tags(nil)
	return d.done("FenceBrokerRecord")
}

// UnfenceBrokerRecord (apiKey 8, v0) unfences a broker. UnfenceBrokerRecord.json.
type UnfenceBrokerRecord struct {
	ver
	ID          int32
	Epoch       int64
	UnknownTags []TaggedField
}

// NewUnfenceBrokerRecord returns an UnfenceBrokerRecord at its newest version.
func NewUnfenceBrokerRecord() *UnfenceBrokerRecord {
	r := &UnfenceBrokerRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *UnfenceBrokerRecord) Default() { *r = UnfenceBrokerRecord{ver: r.ver} }

func (*UnfenceBrokerRecord) Key() int16        { return KeyUnfenceBroker }
func (*UnfenceBrokerRecord) MaxVersion() int16 { return 0 }

func (r *UnfenceBrokerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ID)
	dst = kbin.AppendInt64(dst, r.Epoch)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *UnfenceBrokerRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.ID = d.int32()
	r.Epoch = d.int64()
	r.UnknownTags = d.tags(nil)
	return d.done("UnfenceBrokerRecord")
}

// ---- BrokerRegistrationChangeRecord ----

// Values of BrokerRegistrationChangeRecord.Fenced
// (BrokerRegistrationFencingChange) and .InControlledShutdown
// (BrokerRegistrationInControlledShutdownChange).
const (
	FencingChangeUnfence int8 = -1
	FencingChangeNone    int8 = 0
	FencingChangeFence   int8 = 1

	ControlledShutdownChangeNone int8 = 0
	ControlledShutdownChangeIn   int8 = 1
)

// BrokerRegistrationChangeRecord (apiKey 17, v0-2) changes a registered
// broker's fencing, controlled-shutdown state or log dirs.
// BrokerRegistrationChangeRecord.json: v1 adds InControlledShutdown (tag 1),
// v2 LogDirs (tag 2).
type BrokerRegistrationChangeRecord struct {
	ver
	BrokerID    int32
	BrokerEpoch int64
	// Fenced (tag 0): -1 unfenced, 0 no change (default), 1 fenced.
	Fenced int8
	// InControlledShutdown (v1+, tag 1): 0 no change (default), 1 in controlled shutdown.
	InControlledShutdown int8
	// LogDirs (v2+, tag 2): the online log dirs; empty means no change.
	LogDirs     [][16]byte
	UnknownTags []TaggedField
}

// NewBrokerRegistrationChangeRecord returns a BrokerRegistrationChangeRecord
// at its newest version.
func NewBrokerRegistrationChangeRecord() *BrokerRegistrationChangeRecord {
	r := &BrokerRegistrationChangeRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *BrokerRegistrationChangeRecord) Default() {
	*r = BrokerRegistrationChangeRecord{ver: r.ver}
}

func (*BrokerRegistrationChangeRecord) Key() int16        { return KeyBrokerRegistrationChange }
func (*BrokerRegistrationChangeRecord) MaxVersion() int16 { return 2 }

func (r *BrokerRegistrationChangeRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.BrokerID)
	dst = kbin.AppendInt64(dst, r.BrokerEpoch)
	var tags tagSet
	if r.Fenced != 0 {
		tags.add(0, []byte{byte(r.Fenced)})
	}
	if r.v >= 1 && r.InControlledShutdown != 0 {
		tags.add(1, []byte{byte(r.InControlledShutdown)})
	}
	if r.v >= 2 && len(r.LogDirs) > 0 {
		tags.add(2, appendUUIDs(nil, r.LogDirs, false))
	}
	return tags.appendTo(dst, r.UnknownTags)
}

func (r *BrokerRegistrationChangeRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.BrokerID = d.int32()
	r.BrokerEpoch = d.int64()
	r.UnknownTags = d.tags(func(tag uint32, fd *decoder) bool {
		switch {
		case tag == 0:
			r.Fenced = fd.int8()
		case tag == 1 && r.v >= 1:
			r.InControlledShutdown = fd.int8()
		case tag == 2 && r.v >= 2:
			r.LogDirs = fd.uuids("LogDirs", false)
		default:
			return false
		}
		return true
	})
	return d.done("BrokerRegistrationChangeRecord")
}

// ---- RegisterControllerRecord ----

// RegisterControllerRecord (apiKey 27, v0) registers a controller (KIP-919).
// RegisterControllerRecord.json.
type RegisterControllerRecord struct {
	ver
	ControllerID     int32
	IncarnationID    [16]byte
	ZkMigrationReady bool
	EndPoints        []ControllerEndpoint
	Features         []ControllerFeature
	UnknownTags      []TaggedField
}

// NewRegisterControllerRecord returns a RegisterControllerRecord at its newest version.
func NewRegisterControllerRecord() *RegisterControllerRecord {
	r := &RegisterControllerRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *RegisterControllerRecord) Default() { *r = RegisterControllerRecord{ver: r.ver} }

func (*RegisterControllerRecord) Key() int16        { return KeyRegisterController }
func (*RegisterControllerRecord) MaxVersion() int16 { return 0 }

func (r *RegisterControllerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ControllerID)
	dst = append(dst, r.IncarnationID[:]...)
	dst = appendBool(dst, r.ZkMigrationReady)
	dst = appendEndpoints(dst, r.EndPoints)
	dst = appendFeatures(dst, r.Features)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *RegisterControllerRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.ControllerID = d.int32()
	r.IncarnationID = d.uuid()
	r.ZkMigrationReady = d.bool()
	r.EndPoints = readEndpoints(&d)
	r.Features = readFeatures(&d)
	r.UnknownTags = d.tags(nil)
	return d.done("RegisterControllerRecord")
}

// ---- UnregisterControllerRecord ----

// UnregisterControllerRecord (apiKey 29, v0) removes a controller
// registration (KIP-1312, Kafka trunk 2026-08, written from
// metadata.version 4.4-IV2). UnregisterControllerRecord.json is not in
// the schemas vendored for this project; its one field is taken from the
// KIP and PR #22191.
type UnregisterControllerRecord struct {
	ver
	ControllerID int32
	UnknownTags  []TaggedField
}

// NewUnregisterControllerRecord returns an UnregisterControllerRecord at its newest version.
func NewUnregisterControllerRecord() *UnregisterControllerRecord {
	r := &UnregisterControllerRecord{}
	r.v = r.MaxVersion()
	return r
}

// Default resets every field to the schema's default, keeping the version.
func (r *UnregisterControllerRecord) Default() { *r = UnregisterControllerRecord{ver: r.ver} }

func (*UnregisterControllerRecord) Key() int16        { return KeyUnregisterController }
func (*UnregisterControllerRecord) MaxVersion() int16 { return 0 }

func (r *UnregisterControllerRecord) AppendTo(dst []byte) []byte {
	dst = kbin.AppendInt32(dst, r.ControllerID)
	return appendNoTags(dst, r.UnknownTags)
}

func (r *UnregisterControllerRecord) ReadFrom(src []byte) error {
	if err := checkVersion(r, r.v); err != nil {
		return err
	}
	r.Default()
	d := decoder{b: src}
	r.ControllerID = d.int32()
	r.UnknownTags = d.tags(nil)
	return d.done("UnregisterControllerRecord")
}
