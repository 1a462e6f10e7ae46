package coordinator

// JavaStringHash is Java's String.hashCode over UTF-16 code units.
func JavaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// PartitionFor is how Kafka maps a group id or transactional id to a
// partition of its coordinator topic: Utils.abs(id.hashCode()) %
// numPartitions, where Utils.abs maps MIN_VALUE to 0.
func PartitionFor(id string, numPartitions int32) int32 {
	h := JavaStringHash(id)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % numPartitions
}
