package broker

// shareGroupsEnabled is Kafka's KafkaApis.isShareGroupProtocolEnabled:
// share groups (KIP-932) are served once the cluster finalized
// share.version 1 or above (ShareVersion.supportsShareGroups). Until then
// every share API answers as Kafka 4.4 does with the feature off
// (UNSUPPORTED_VERSION), so a client fails fast instead of retrying.
func (b *Broker) shareGroupsEnabled() bool {
	if b.meta == nil {
		return false
	}
	img := b.meta.Image()
	if img == nil {
		return false
	}
	level, _ := img.Feature("share.version")
	return level >= 1
}
