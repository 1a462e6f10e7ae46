package metadatacache

import (
	"strconv"
	"strings"
)

// MetadataVersion is one level of the metadata.version feature
// (server-common MetadataVersion.java): the cluster-wide switch for new
// metadata records, record versions and inter-broker RPC versions.
type MetadataVersion struct {
	Level   int16  // the feature level (FeatureLevelRecord.FeatureLevel)
	Name    string // "4.4-IV2"
	Release string // "4.4"
	// MetadataChanged: this level changed the metadata records (new records,
	// versions or fields), so going below it may lose information and is not
	// a safe downgrade (MetadataVersion.didMetadataChange).
	MetadataChanged bool
	// What the level added, for the docs and the logs.
	Change string
}

// Metadata version feature levels that change what this package writes.
const (
	MV3_3_IV3 int16 = 7  // MINIMUM_VERSION of Kafka 4.x; InControlledShutdown
	MV3_4_IV0 int16 = 8  // RegisterBrokerRecord v2
	MV3_5_IV2 int16 = 11 // SCRAM records
	MV3_6_IV1 int16 = 13 // metadata transactions
	MV3_6_IV2 int16 = 14 // delegation token records
	MV3_7_IV0 int16 = 15 // controller registration
	MV3_7_IV2 int16 = 17 // directory assignment: RegisterBrokerRecord v3, PartitionRecord v1
	MV4_0_IV1 int16 = 23 // ELR: PartitionRecord and PartitionChangeRecord v2
	MV4_3_IV0 int16 = 30 // cordoned log dirs: RegisterBrokerRecord v4
	MV4_4_IV1 int16 = 32 // CIDR ACL hosts
	MV4_4_IV2 int16 = 33 // UnregisterControllerRecord

	// MinimumMetadataVersion is the oldest level Kafka 4.x (and
	// kgo-broker) runs or bootstraps (MetadataVersion.MINIMUM_VERSION).
	MinimumMetadataVersion = MV3_3_IV3
	// LatestMetadataVersion is the newest production level
	// (MetadataVersion.LATEST_PRODUCTION of Kafka 4.4): 4.4-IV2.
	LatestMetadataVersion = MV4_4_IV2
)

// metadataVersions are Kafka 4.4's production levels, ascending. 4.5-IV0
// (34) exists in Kafka 4.4 for tests only and is not here.
var metadataVersions = []MetadataVersion{
	{7, "3.3-IV3", "3.3", true, "InControlledShutdown in broker registrations (KIP-841); RegisterBrokerRecord v1"},
	{8, "3.4-IV0", "3.4", true, "ZooKeeper migration (KIP-866): ZkMigrationStateRecord, RegisterBrokerRecord v2"},
	{9, "3.5-IV0", "3.5", false, "tiered storage (KIP-405)"},
	{10, "3.5-IV1", "3.5", false, "replica epoch in Fetch v15 (KIP-903)"},
	{11, "3.5-IV2", "3.5", true, "SCRAM credentials (KIP-554): UserScramCredentialRecord"},
	{12, "3.6-IV0", "3.6", false, "no leader epoch bump when the controller shrinks the ISR (KAFKA-15021)"},
	{13, "3.6-IV1", "3.6", true, "metadata transactions (KIP-868): Begin/End/AbortTransactionRecord"},
	{14, "3.6-IV2", "3.6", true, "delegation tokens (KIP-900): DelegationTokenRecord"},
	{15, "3.7-IV0", "3.7", true, "controller registration (KIP-919): RegisterControllerRecord"},
	{16, "3.7-IV1", "3.7", false, "no metadata record change"},
	{17, "3.7-IV2", "3.7", true, "directory assignment (KIP-858): RegisterBrokerRecord v3, PartitionRecord and PartitionChangeRecord v1, BrokerRegistrationChangeRecord v2"},
	{18, "3.7-IV3", "3.7", false, "no metadata record change"},
	{19, "3.7-IV4", "3.7", false, "Fetch v16 between brokers"},
	{20, "3.8-IV0", "3.8", false, "no metadata record change"},
	{21, "3.9-IV0", "3.9", false, "Fetch v17, ListOffsets v9 between brokers; kraft.version 1 (KIP-853) bootstraps from here"},
	{22, "4.0-IV0", "4.0", false, "group.version 1 (KIP-848) bootstraps from here"},
	{23, "4.0-IV1", "4.0", true, "eligible leader replicas (KIP-966): PartitionRecord and PartitionChangeRecord v2"},
	{24, "4.0-IV2", "4.0", false, "transaction.version 1 and 2 (KIP-890) bootstrap from here"},
	{25, "4.0-IV3", "4.0", false, "ListOffsets v10 between brokers"},
	{26, "4.1-IV0", "4.1", false, "eligible.leader.replicas.version 1 bootstraps from here"},
	{27, "4.1-IV1", "4.1", false, "Fetch v18 between brokers"},
	{28, "4.2-IV0", "4.2", false, "share.version 1 (KIP-932) bootstraps from here"},
	{29, "4.2-IV1", "4.2", false, "ListOffsets v11 between brokers; streams.version 1 (KIP-1071) bootstraps from here"},
	{30, "4.3-IV0", "4.3", true, "cordoned log directories (KIP-1066): RegisterBrokerRecord v4, BrokerRegistrationChangeRecord v3"},
	{31, "4.4-IV0", "4.4", false, "share.version 2 (KIP-1191) bootstraps from here"},
	{32, "4.4-IV1", "4.4", true, "CIDR blocks as ACL hosts"},
	{33, "4.4-IV2", "4.4", true, "controller unregistration (KIP-1312): UnregisterControllerRecord"},
}

// MetadataVersions returns Kafka 4.4's production metadata.version levels,
// ascending.
func MetadataVersions() []MetadataVersion {
	return append([]MetadataVersion(nil), metadataVersions...)
}

// MetadataVersionOf returns the level's description (false if the level is
// not one of MetadataVersions).
func MetadataVersionOf(level int16) (MetadataVersion, bool) {
	i := int(level - MinimumMetadataVersion)
	if i < 0 || i >= len(metadataVersions) {
		return MetadataVersion{}, false
	}
	return metadataVersions[i], true
}

// MetadataVersionName returns "4.4-IV2" for level 33, and "UNKNOWN <n>"
// for a level this package does not know (as kafka-features.sh prints it).
func MetadataVersionName(level int16) string {
	if mv, ok := MetadataVersionOf(level); ok {
		return mv.Name
	}
	return "UNKNOWN " + strconv.Itoa(int(level))
}

// ParseMetadataVersion resolves a --release-version value as
// MetadataVersion.fromVersionString does: "4.4-IV1" names one level, a
// release such as "4.4" its newest level ("3.3" is 3.3-IV3).
func ParseMetadataVersion(s string) (MetadataVersion, bool) {
	var last MetadataVersion
	found := false
	for _, mv := range metadataVersions {
		if mv.Name == s {
			return mv, true
		}
		if mv.Release == s {
			last, found = mv, true
		}
	}
	return last, found
}

// MetadataChangedBetween reports whether some level in (lower, higher]
// changed the metadata records (MetadataVersion.checkIfMetadataChanged):
// downgrading from higher to lower is then unsafe.
func MetadataChangedBetween(lower, higher int16) bool {
	if lower > higher {
		lower, higher = higher, lower
	}
	for _, mv := range metadataVersions {
		if mv.Level > lower && mv.Level <= higher && mv.MetadataChanged {
			return true
		}
	}
	return false
}

// MetadataVersionNames lists the production levels' names, joined by ", "
// (the list kafka-storage.sh prints for an unknown --release-version).
func MetadataVersionNames() string {
	names := make([]string, len(metadataVersions))
	for i, mv := range metadataVersions {
		names[i] = mv.Name
	}
	return strings.Join(names, ", ")
}
