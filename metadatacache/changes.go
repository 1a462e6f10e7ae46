package metadatacache

// Changes says what an image changed from the image published before it: the
// MetadataDelta a KRaft MetadataPublisher is handed with each new image
// (MetadataPublisher.onMetadataUpdate). Subscribers use it to look only at
// what changed instead of walking every topic and partition of the image on
// each publication; with many partitions that walk, done for each of the
// controller's NoOpRecords (every metadata.max.idle.interval.ms), was a
// broker's main idle cost. The zero value is "nothing changed".
type Changes struct {
	// Full is set when a snapshot was loaded: anything may have changed,
	// and the other fields are not filled in.
	Full bool

	Features, Brokers, Controllers, Configs, Quotas, ProducerIDs bool
	Scram, ACLs, DelegationTokens, ZkMigration                   bool

	// Topics holds the id of every topic created, removed or with a
	// partition created or changed.
	Topics map[[16]byte]*TopicChanges
}

// TopicChanges is what changed in one topic.
type TopicChanges struct {
	// Created or Removed: the topic (under this id) is new in the image or
	// gone from it. Both are set when it was created and removed again.
	Created, Removed bool
	// Partitions are the partitions created or changed.
	Partitions map[int32]struct{}
}

// Empty reports whether nothing changed: the image differs from the one
// before it only in its offset, epoch and append time (a batch of NoOpRecords).
func (c *Changes) Empty() bool {
	return !c.Full && !c.Features && !c.Brokers && !c.Controllers && !c.Configs && !c.Quotas &&
		!c.ProducerIDs && !c.Scram && !c.ACLs && !c.DelegationTokens && !c.ZkMigration && len(c.Topics) == 0
}

func (c *Changes) topic(id [16]byte) *TopicChanges {
	if c.Topics == nil {
		c.Topics = make(map[[16]byte]*TopicChanges)
	}
	tc := c.Topics[id]
	if tc == nil {
		tc = &TopicChanges{}
		c.Topics[id] = tc
	}
	return tc
}

func (c *Changes) partition(topicID [16]byte, pid int32) {
	tc := c.topic(topicID)
	if tc.Partitions == nil {
		tc.Partitions = make(map[int32]struct{})
	}
	tc.Partitions[pid] = struct{}{}
}

// Changes returns what m changed from the image published before it. The
// result is shared: do not modify it.
func (m *Image) Changes() *Changes { return &m.changes }

// noteChange records in b.changes what rec, just replayed without error,
// changed. Topic and partition changes are noted where they are made.
func (b *builder) noteChange(rec Record) {
	c := &b.changes
	switch rec.(type) {
	case *FeatureLevelRecord:
		c.Features = true
	case *RegisterBrokerRecord, *UnregisterBrokerRecord, *FenceBrokerRecord, *UnfenceBrokerRecord,
		*BrokerRegistrationChangeRecord:
		c.Brokers = true
	case *RegisterControllerRecord, *UnregisterControllerRecord:
		c.Controllers = true
	case *ConfigRecord, *RemoveTopicRecord:
		// A removed topic's configs go with it.
		c.Configs = true
	case *ClientQuotaRecord:
		c.Quotas = true
	case *ProducerIdsRecord:
		c.ProducerIDs = true
	case *ZkMigrationStateRecord:
		c.ZkMigration = true
	case *UserScramCredentialRecord, *RemoveUserScramCredentialRecord:
		c.Scram = true
	case *AccessControlEntryRecord, *RemoveAccessControlEntryRecord:
		c.ACLs = true
	case *DelegationTokenRecord, *RemoveDelegationTokenRecord:
		c.DelegationTokens = true
	}
}
