package controller

// Feature names and the metadata.version this controller bootstraps.
//
// The controller bootstraps metadata.version 4.0-IV3 (feature level 25), the
// level Kafka 4.0 formats a new cluster with. At this level Kafka writes
// RegisterBrokerRecord v3 (LogDirs), PartitionRecord and PartitionChangeRecord
// v2 (Directories; ELR fields stay unset because eligible.leader.replicas.version
// is 0), BrokerRegistrationChangeRecord instead of Fence/UnfenceBrokerRecord
// (since 3.3-IV2), NoOpRecords (since 3.3-IV1) and wraps the bootstrap records
// in a metadata transaction (since 3.6-IV1).
const (
	featureMetadataVersion = "metadata.version"
	featureKRaftVersion    = "kraft.version"
	featureGroupVersion    = "group.version"
	featureTxnVersion      = "transaction.version"
)

// Metadata version feature levels (MetadataVersion.java).
const (
	mv3_3_IV1 int16 = 5  // NoOpRecord
	mv3_3_IV2 int16 = 6  // BrokerRegistrationChangeRecord replaces Fence/UnfenceBrokerRecord
	mv3_3_IV3 int16 = 7  // RegisterBrokerRecord v1; MINIMUM_VERSION in 4.x
	mv3_4_IV0 int16 = 8  // RegisterBrokerRecord v2
	mv3_6_IV1 int16 = 13 // metadata transactions
	mv3_7_IV2 int16 = 17 // directory assignment: RegisterBrokerRecord v3, PartitionRecord v1
	mv4_0_IV1 int16 = 23 // ELR: PartitionRecord/PartitionChangeRecord v2
	mv4_0_IV3 int16 = 25

	// DefaultMetadataVersion is the metadata.version level bootstrapped on an
	// empty log: 4.0-IV3.
	DefaultMetadataVersion = mv4_0_IV3
)

// Feature is one finalized feature level written at bootstrap as a
// FeatureLevelRecord.
type Feature struct {
	Name  string
	Level int16
}

// DefaultBootstrapFeatures are the features Kafka's storage tool finalizes
// for metadata.version 4.0-IV3: group.version 1 (KIP-848) and
// transaction.version 2 (KIP-890). kraft.version is a raft control record,
// never a FeatureLevelRecord.
func DefaultBootstrapFeatures() []Feature {
	return []Feature{
		{featureMetadataVersion, DefaultMetadataVersion},
		{featureGroupVersion, 1},
		{featureTxnVersion, 2},
	}
}

func registerBrokerRecordVersion(mv int16) int16 {
	switch {
	case mv >= mv3_7_IV2:
		return 3
	case mv >= mv3_4_IV0:
		return 2
	case mv >= mv3_3_IV3:
		return 1
	}
	return 0
}

func partitionRecordVersion(mv int16) int16 {
	switch {
	case mv >= mv4_0_IV1:
		return 2
	case mv >= mv3_7_IV2:
		return 1
	}
	return 0
}

// partitionChangeRecordVersion matches partitionRecordVersion.
func partitionChangeRecordVersion(mv int16) int16 { return partitionRecordVersion(mv) }

func directoryAssignmentSupported(mv int16) bool { return mv >= mv3_7_IV2 }
