package replication

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kgo-broker/kgo-broker/storage"
)

// What share partitions (package share, KIP-932) need of a partition this
// node leads: a consumer's read as Kafka's DelayedShareFetch makes it
// (ReplicaManager.readFromLog with the leader as the only replica read
// from, FetchIsolation HIGH_WATERMARK or TXN_COMMITTED), and the offsets a
// share partition is loaded with.

// ShareRead is one read for a share partition.
type ShareRead struct {
	Records  []byte // whole record batches, copied out of the segment files
	LogStart int64
	// Aborted are the aborted transactions overlapping the read
	// (readCommitted only)
	Aborted []storage.AbortedTxn
}

// ReadShare reads whole batches of a partition led here from offset (the
// log start offset when offset is below it), at most maxBytes unless minOne
// lets a first larger batch through, up to the high watermark, or the last
// stable offset with readCommitted. NOT_LEADER_OR_FOLLOWER when the
// partition is not led here.
func (rm *ReplicaManager) ReadShare(topic string, partition int32, offset int64, maxBytes int32, minOne, readCommitted bool) (ShareRead, error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return ShareRead{}, err
	}
	out, region, err := p.readShare(offset, maxBytes, minOne, readCommitted)
	if err != nil || region.Len == 0 {
		return out, err
	}
	// the bytes are copied holding no partition lock, as ReadLog does:
	// a leadership change does not wait on the disk
	if out.Records, err = region.ReadAll(); err != nil {
		return ShareRead{}, kerr.KafkaStorageError
	}
	return out, nil
}

// readShare finds what ReadShare copies. p.mu is read-held only here.
func (p *Partition) readShare(offset int64, maxBytes int32, minOne, readCommitted bool) (ShareRead, storage.FileRegion, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return ShareRead{}, storage.FileRegion{}, kerr.NotLeaderForPartition
	}
	out := ShareRead{LogStart: p.log.LogStartOffset()}
	offset = max(offset, out.LogStart)
	bound := p.hw.Load()
	if readCommitted {
		bound = p.lastStableOffset()
	}
	if offset >= bound {
		return out, storage.FileRegion{}, nil
	}
	var ri storage.ReadInfo
	var err error
	if readCommitted {
		ri, out.Aborted, err = p.log.ReadCommitted(offset, max(maxBytes, 0), bound, minOne)
	} else {
		ri, err = p.log.Read(offset, max(maxBytes, 0), bound, minOne)
	}
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			// deleted under the read: the next read starts at the new
			// log start
			return ShareRead{LogStart: p.log.LogStartOffset()}, storage.FileRegion{}, nil
		}
		return ShareRead{}, storage.FileRegion{}, err
	}
	return out, ri.Region, nil
}

// ShareOffsets returns a partition's log start offset, high watermark and
// leader epoch; NOT_LEADER_OR_FOLLOWER when it is not led here.
func (rm *ReplicaManager) ShareOffsets(topic string, partition int32) (logStart, hw int64, leaderEpoch int32, err error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return -1, -1, -1, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return -1, -1, -1, kerr.NotLeaderForPartition
	}
	return p.log.LogStartOffset(), p.hw.Load(), p.leaderEpoch, nil
}

// ShareOffsetForTimestamp is the first offset below the high watermark
// whose record timestamp is at or after ts (share.auto.offset.reset=
// by_duration, KIP-1106); found is false when there is none.
func (rm *ReplicaManager) ShareOffsetForTimestamp(topic string, partition int32, ts int64) (offset int64, found bool, err error) {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return -1, false, err
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return -1, false, kerr.NotLeaderForPartition
	}
	off, _, _, ok := p.log.FetchOffsetByTimestamp(max(ts, 0))
	if !ok || off >= p.hw.Load() {
		return -1, false, nil
	}
	return off, true, nil
}
