package metadatacache

// The record types, encoders and decoders are generated from records.schema
// (records_*_gen.go); this file holds what the schema cannot say: the
// version every record embeds and the values some fields take.

//go:generate go run ./internal/gen -schema records.schema -out .

// ver holds a record's version; embedded in every record type.
type ver struct{ v int16 }

// Version returns the version the record reads and writes.
func (x *ver) Version() int16 { return x.v }

// SetVersion sets the version the record reads and writes.
func (x *ver) SetVersion(v int16) { x.v = v }

// MetadataVersionFeature is the feature whose level is the metadata.version.
const MetadataVersionFeature = "metadata.version"

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

// NoLeaderChange is PartitionChangeRecord.Leader's default: the leader did
// not change. NoLeader (-1) means the partition now has no leader.
const (
	NoLeaderChange int32 = -2
	NoLeader       int32 = -1
)

// Config resource types (ConfigResource.Type ids) used in ConfigRecord.
const (
	ConfigResourceTopic         int8 = 2
	ConfigResourceBroker        int8 = 4
	ConfigResourceBrokerLogger  int8 = 8
	ConfigResourceClientMetrics int8 = 16
	ConfigResourceGroup         int8 = 32
)
