package broker

// shareGroupsEnabled is Kafka's KafkaApis.isShareGroupProtocolEnabled:
// share groups (KIP-932) are served once the cluster finalized
// share.version 1 or above (ShareVersion.supportsShareGroups). Until then
// every share API answers as Kafka 4.4 does with the feature off
// (UNSUPPORTED_VERSION), so a client fails fast instead of retrying.
func (b *Broker) shareGroupsEnabled() bool {
	return b.shareVersion() >= 1
}

// shareDLQEnabled is ShareVersion.supportsShareGroupDLQ: share groups'
// dead-letter queues (KIP-1191) work once share.version 2 is finalized.
func (b *Broker) shareDLQEnabled() bool {
	return b.shareVersion() >= 2
}

// shareVersion is the finalized share.version, 0 when none.
func (b *Broker) shareVersion() int16 {
	if b.meta == nil {
		return 0
	}
	img := b.meta.Image()
	if img == nil {
		return 0
	}
	level, _ := img.Feature("share.version")
	return level
}
