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
// is flexible from v0): compact strings, bytes and arrays (unsigned varint
// length + 1, 0 for null), uuids as 16 raw bytes, and a tagged-field section
// at the end of the record and of every struct in an array (unsigned varint
// count, then tag, size, data for each, ascending by tag). A tagged field
// equal to its default is not written. Unknown tags are kept in
// UnknownTags and written back, so a record from a newer Kafka survives a
// round trip.
//
// # Schema and generated codecs
//
// records.schema describes every record Kafka 4.4 writes to
// __cluster_metadata (apiKeys 0-29; 6, 13 and 16 are unused): fields, types,
// versions, tags, nullable versions and defaults, in a compact line format
// documented at its top, taken from Kafka 4.4.0's
// metadata/src/main/resources/common/metadata/*.json. `go generate
// ./metadatacache` runs internal/gen, which writes records_*_gen.go (one Go
// struct per record and per array element struct, New<Record>, Default,
// Key, MaxVersion, AppendTo, ReadFrom), records_gen.go (the Key* constants,
// NewRecord, RecordKeys) and records_schema_gen_test.go (the schema as data,
// which the tests walk to set and round-trip every field of every version).
// internal/gen's test fails when the generated files are stale. The runtime
// the generated code calls (decoder, append*, tagSet) is codec.go; the values
// the schema cannot say (FencingChange*, NoLeaderChange, ConfigResource*) are
// records.go. Go names spell Kafka's Id as ID (BrokerId -> BrokerID);
// ClientQuotaRecord's Key is QuotaKey (Key() is the apiKey).
//
//	records.schema --internal/gen--> records_*_gen.go --> Record --EncodeRecord/DecodeRecord--> bytes
//
// testdata/kafka-4.4.0 holds what Apache Kafka 4.4.0 itself wrote: the
// metadata log segment of one node after creating, altering and deleting
// topics, configs, quotas, SCRAM credentials, ACLs, producer ids and
// feature levels across two restarts, and the zero checkpoints
// kafka-storage.sh format wrote; every record decodes and re-encodes to the
// same bytes, and the log replays into the image Kafka describes.
// scripts/metadata-fixtures.sh regenerates them from the cached jars.
//
// Decoding is defensive: every length is checked against the bytes left
// before anything is allocated (an array count must fit at the smallest
// element size the schema allows), strings longer than 32767 bytes are
// refused (as Kafka's readers do), a known tagged field must use exactly
// its declared size, and trailing bytes are an error. FuzzDecodeRecord
// checks that anything that decodes re-encodes stably.
//
// # Metadata versions
//
// MetadataVersions lists Kafka 4.4's production metadata.version levels,
// 3.3-IV3 (7) to 4.4-IV2 (33), with what each changed and whether it changed
// the metadata records (a downgrade across such a level is unsafe).
// RecordVersionFor gives the version the controller writes at a level:
// RegisterBrokerRecord v1 from 3.3-IV3, v2 from 3.4-IV0, v3 from 3.7-IV2,
// v4 from 4.3-IV0; PartitionRecord and PartitionChangeRecord v1 from
// 3.7-IV2 and v2 from 4.0-IV1; BrokerRegistrationChangeRecord up to v3.
// ClearElrRecord (28) and UnregisterControllerRecord (29) are written from
// 4.0-IV1 and 4.4-IV2.
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
//   - ClearElrRecord empties the ELR and last known ELR of the named topic's
//     partitions, or of every partition when the name is empty, bumping the
//     partition epoch of those that had one (TopicsDelta.replay).
//   - BrokerRegistrationChangeRecord's non-null CordonedLogDirs replaces the
//     broker's cordoned dirs (KIP-1066); RegisterBrokerRecord v4 sets them.
//   - UserScramCredentialRecord, AccessControlEntryRecord and
//     DelegationTokenRecord (and their Remove* records) are kept in the image
//     (ScramDelta, AclsDelta, DelegationTokenDelta), so snapshots carry them;
//     SCRAM credentials authenticate SASL/SCRAM logins, ACLs feed the
//     broker's authorizer (Image.SameACLs tells it when to rebuild its
//     index); delegation tokens are not acted on yet.
//     Removing an ACL that does not exist cannot be replayed.
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
// back as records in MetadataImage.write order (leaving out what the
// image's metadata.version cannot carry, as Kafka's handleLoss does), for snapshots;
// Cache.LoadSnapshot builds an image from such records.
package metadatacache
