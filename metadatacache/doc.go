// Package metadatacache holds KRaft cluster metadata: codecs for the
// metadata records Kafka keeps in __cluster_metadata, and the immutable
// Image a broker answers Metadata (and a controller validates requests)
// from, rebuilt by replaying committed batches.
//
//	raft commit ──► Cache.Apply(Batch) ──► builder (copy-on-write) ──► *Image ──► subscribers
//	                                                                     ▲
//	readers: Cache.Image() (atomic, lock-free) ──────────────────────────┘
//
// # Framing
//
// Each metadata record is the value of a v2 record (null key) in
// __cluster_metadata (server-common .../serialization/AbstractApiMessageSerde.java,
// MetadataRecordSerde.java):
//
//	unsigned varint  frame version   always 1; 0 and >1 are rejected
//	unsigned varint  apiKey          MetadataRecordType id (TopicRecord = 2, ...)
//	unsigned varint  version         the record's schema version
//	body             the record in its flexible encoding; nothing may follow
//
// EncodeRecord and DecodeRecord do exactly this. Bodies use the "flexible
// versions" encoding of Kafka's message generator (every metadata record
// is flexible from v0): compact strings and arrays (unsigned varint length
// + 1, 0 for null), uuids as 16 raw bytes, and a tagged-field section at
// the end of the record and of every struct in an array (unsigned varint
// count, then tag, size, data for each, ascending by tag). A tagged field
// equal to its default is not written. Unknown tags are kept in
// UnknownTags and written back, so a record from a newer Kafka survives a
// round trip. Schemas: metadata/src/main/resources/common/metadata/*.json.
//
// Decoding is defensive: every length is checked against the bytes left
// before anything is allocated, strings longer than 32767 bytes are
// refused (as Kafka's readers do), a known tagged field must use exactly
// its declared size, and trailing bytes are an error.
//
// The record types implemented are RegisterBroker (0), UnregisterBroker
// (1), Topic (2), Partition (3), Config (4), PartitionChange (5),
// FenceBroker (7), UnfenceBroker (8), RemoveTopic (9), FeatureLevel (12),
// ClientQuota (14), ProducerIds (15), BrokerRegistrationChange (17), NoOp
// (20), ZkMigrationState (21), BeginTransaction (23), EndTransaction (24),
// AbortTransaction (25), RegisterController (27) and UnregisterController
// (29, KIP-1312). The ACL, SCRAM and delegation-token records (10, 11, 18,
// 19, 22, 26) are not: DecodeRecord reports them as ErrUnknownRecordType.
// Versions are those of the schemas up to Kafka 4.2. From metadata.version
// 4.3-IV0 (level 30) Kafka writes RegisterBrokerRecord v4 and
// BrokerRegistrationChangeRecord v3 with the KIP-1066 CordonedLogDirs
// field; those versions are not known here and are rejected as
// ErrUnsupportedVersion (RecordVersionFor never returns them).
//
// # Replay
//
// Replay follows Kafka's metadata/src/main/java/org/apache/kafka/image
// (MetadataDelta and the per-area deltas) and its loader:
//
//   - FeatureLevelRecord sets a finalized level; level 0 removes the feature
//     (FeaturesDelta). metadata.version is kept in the same map.
//   - RegisterControllerRecord and UnregisterControllerRecord add and remove
//     a controller registration.
//   - RegisterBrokerRecord replaces the broker's registration whole
//     (BrokerRegistration.fromRecord; log dirs sorted); UnregisterBrokerRecord
//     removes it without checking the epoch. FenceBrokerRecord,
//     UnfenceBrokerRecord and BrokerRegistrationChangeRecord need a registered
//     broker with the same epoch (ClusterDelta.getBrokerOrThrow); the change
//     record's Fenced is -1 unfence / 0 none / 1 fence, InControlledShutdown
//     0 none / 1 in, non-empty LogDirs replace the dirs
//     (BrokerRegistration.cloneWith).
//   - TopicRecord (re)creates a topic with no partitions (TopicsDelta).
//     PartitionRecord creates or replaces a partition; missing or all-zero
//     directories become MIGRATING (zero uuid) for each replica
//     (PartitionRegistration(PartitionRecord), defaultToMigrating).
//   - PartitionChangeRecord (PartitionRegistration.merge) changes only the
//     fields present: nil lists, Leader -2 and LeaderRecoveryState -1 mean
//     unchanged. Any other Leader (including -1, no leader) bumps the leader
//     epoch; every change record bumps the partition epoch.
//   - RemoveTopicRecord removes the topic, its partitions and its TOPIC
//     configs (MetadataDelta.replay(RemoveTopicRecord), ConfigurationsDelta).
//   - ConfigRecord sets a config of (type, name); a null value deletes it, and
//     a resource without configs disappears (ConfigurationDelta).
//   - ClientQuotaRecord sets or removes one quota value of an entity.
//   - ProducerIdsRecord records the last block handed out (ProducerIdsDelta).
//   - NoOpRecord changes nothing but the offset.
//   - Begin/End/AbortTransactionRecord (KIP-868, image/loader/MetadataBatchLoader):
//     records between Begin and End are published together, possibly
//     across batches; Abort drops them. Records before a Begin in the same
//     batch are published first, at the offset just before the Begin.
//
// A record that cannot be replayed (unknown topic or partition, epoch
// mismatch, invalid value) is skipped, as Kafka's loader does with its
// fault handler; Apply reports it as a *ReplayError and still publishes.
//
// # Images
//
// An Image is never modified once published. The builder clones a map the
// first time a batch changes it, a Topic the first time one of its
// partitions changes, and makes a new Partition or Broker value for each
// change; everything else is shared with the previous image. Comparing
// pointers between an old and a new image therefore finds what changed
// (Cache.Subscribe hands both to the broker). Image.Records writes an image
// back as records in MetadataImage.write order, for snapshots;
// Cache.LoadSnapshot builds an image from such records.
package metadatacache
