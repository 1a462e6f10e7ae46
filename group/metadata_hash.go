package group

// The subscription metadata hash of KIP-1101: consumer and share groups
// write it in their group epoch records (ConsumerGroupMetadataValue tag 0,
// ShareGroupMetadataValue.MetadataHash) and bump the group epoch when it
// changes, instead of persisting every subscribed topic's metadata. The
// bytes hashed are those of Kafka's Utils.computeTopicHash and
// computeGroupHash, fed to hash4j's XXH3-64 stream: little-endian
// integers, strings as UTF-16 code units followed by their length, so a
// Kafka node loading a group written here computes the same hash and
// does not move the group's epoch.

import (
	"encoding/binary"
	"slices"
	"unicode/utf16"

	"github.com/zeebo/xxh3"

	"github.com/kgo-broker/kgo-broker/metadatacache"
)

// hashStream appends values as hash4j's HashStream64 does.
type hashStream []byte

func (h *hashStream) putByte(v byte)  { *h = append(*h, v) }
func (h *hashStream) putInt(v int32)  { *h = binary.LittleEndian.AppendUint32(*h, uint32(v)) }
func (h *hashStream) putLong(v int64) { *h = binary.LittleEndian.AppendUint64(*h, uint64(v)) }
func (h *hashStream) sum() int64      { return int64(xxh3.Hash(*h)) }
func (h *hashStream) putString(s string) {
	n := 0
	for _, c := range utf16.Encode([]rune(s)) {
		*h = binary.LittleEndian.AppendUint16(*h, c)
		n++
	}
	h.putInt(int32(n))
}

// javaStringCompare orders strings as Java's String.compareTo: by UTF-16
// code unit (Go's < compares bytes, which differs above U+FFFF).
func javaStringCompare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// topicHash is Utils.computeTopicHash: 0 for a topic not in the image,
// else the hash of a magic byte 0, the topic id, name and partition count,
// and per partition its index and the sorted racks of its replicas'
// brokers (each as its length and the string).
func topicHash(img *metadatacache.Image, name string) int64 {
	t := img.TopicByName(name)
	if t == nil {
		return 0
	}
	var h hashStream
	h.putByte(0)
	h.putLong(int64(binary.BigEndian.Uint64(t.ID[:8])))
	h.putLong(int64(binary.BigEndian.Uint64(t.ID[8:])))
	h.putString(t.Name)
	h.putInt(int32(len(t.Partitions)))
	for i := range int32(len(t.Partitions)) {
		h.putInt(i)
		var racks []string
		if p := t.Partitions[i]; p != nil {
			for _, r := range p.Replicas {
				if b := img.Broker(r); b != nil && b.Rack != nil {
					racks = append(racks, *b.Rack)
				}
			}
		}
		slices.SortFunc(racks, javaStringCompare)
		for _, r := range racks {
			h.putInt(int32(len(utf16.Encode([]rune(r)))))
			h.putString(r)
		}
	}
	return h.sum()
}

// groupMetadataHash is ModernGroup.computeMetadataHash: the subscribed
// topics that exist, by name, each contributing its topic hash
// (Utils.computeGroupHash); 0 when there are none.
func groupMetadataHash(img *metadatacache.Image, topics []string) int64 {
	var names []string
	for _, t := range topics {
		if img.TopicByName(t) != nil {
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		return 0
	}
	slices.SortFunc(names, javaStringCompare)
	names = slices.Compact(names)
	var h hashStream
	for _, n := range names {
		h.putLong(topicHash(img, n))
	}
	return h.sum()
}
