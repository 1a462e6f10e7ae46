package replication

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Special ListOffsets timestamps (ListOffsetsRequest.java).
const (
	tsLatest        = -1
	tsEarliest      = -2
	tsMax           = -3 // v7+
	tsEarliestLocal = -4 // v8+ (tiered storage)
	tsLatestTiered  = -5 // v9+ (tiered storage)
	// v11+ (KIP-1023): the earliest offset not yet uploaded to tiered storage
	tsEarliestPendingUpload = -6

	replicaConsumer  = -1 // CONSUMER_REPLICA_ID
	replicaDebugging = -2 // DEBUGGING_REPLICA_ID
)

// timestampMinVersion is ReplicaManager.timestampMinSupportedVersion.
var timestampMinVersion = map[int64]int16{tsEarliest: 1, tsLatest: 1, tsMax: 7, tsEarliestLocal: 8, tsLatestTiered: 9, tsEarliestPendingUpload: 11}

func listOffsetsTimestampUnsupported(ts int64, version int16) bool {
	if ts >= 0 {
		return false
	}
	min, ok := timestampMinVersion[ts]
	return !ok || version < min
}

// ListOffsets serves ListOffsets v1+ (ReplicaManager.fetchOffset and
// Partition.fetchOffsetForTimestamp):
//
//   - a partition named twice answers INVALID_REQUEST; a special timestamp
//     newer than the request version answers UNSUPPORTED_VERSION;
//   - consumers (replica -1) read up to the high watermark or, with
//     READ_COMMITTED, the last stable offset; other replica ids up to the
//     log end; only the debugging id -2 may ask a follower;
//   - -1 latest: that bound, with the current leader epoch; -2 earliest and
//     -4 earliest local: the log start offset with its epoch; -3 max
//     timestamp and timestamps >= 0: the storage's index lookup, answered
//     only below the bound (else offset and timestamp -1); -5 latest tiered
//     and -6 earliest pending upload: offset -1, epoch -1, since there is no
//     tiered storage (UnifiedLog.fetchOffsetByTimestamp without remote
//     storage);
//   - while a new leader's high watermark is below the start of its epoch,
//     consumers get OFFSET_NOT_AVAILABLE (v5+; LEADER_NOT_AVAILABLE before)
//     for anything but the earliest offsets (KIP-207).
func (rm *ReplicaManager) ListOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	type tpKey struct {
		t string
		p int32
	}
	seen := map[tpKey]int{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			seen[tpKey{t.Topic, p.Partition}]++
		}
	}
	for _, t := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = t.Topic
		for _, rp := range t.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition = rp.Partition
			switch {
			case seen[tpKey{t.Topic, rp.Partition}] > 1:
				sp.ErrorCode = kerr.InvalidRequest.Code
			case listOffsetsTimestampUnsupported(rp.Timestamp, req.Version):
				sp.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				rm.listOffset(req, t.Topic, &rp, &sp)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

func (rm *ReplicaManager) listOffset(req *kmsg.ListOffsetsRequest, topic string, rp *kmsg.ListOffsetsRequestTopicPartition, sp *kmsg.ListOffsetsResponseTopicPartition) {
	p, err := rm.lookup(topic, rp.Partition)
	if err != nil {
		sp.ErrorCode = errorCode(err)
		return
	}
	current := int32(-1)
	if req.Version >= 4 {
		current = rp.CurrentLeaderEpoch
	}
	consumer := req.ReplicaID == replicaConsumer
	ts, off, epoch, err := p.offsetForTimestamp(rp.Timestamp, consumer, req.IsolationLevel == 1, current, req.ReplicaID != replicaDebugging)
	if err != nil {
		if errors.Is(err, kerr.OffsetNotAvailable) && req.Version < 5 {
			err = kerr.LeaderNotAvailable
		}
		sp.ErrorCode = errorCode(err)
		return
	}
	sp.Timestamp, sp.Offset = ts, off
	if req.Version >= 4 && epoch != nil {
		sp.LeaderEpoch = *epoch
	}
}

// offsetForTimestamp is Partition.fetchOffsetForTimestamp plus the bound
// check of ReplicaManager.fetchOffset. It returns (-1, -1, nil, nil) when
// nothing is found below the bound.
func (p *Partition) offsetForTimestamp(ts int64, consumer, readCommitted bool, current int32, onlyLeader bool) (int64, int64, *int32, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkEpoch(current, onlyLeader); err != nil {
		return -1, -1, nil, err
	}
	hw := p.hw.Load()
	last := p.log.LogEndOffset()
	if consumer {
		last = hw
		if readCommitted {
			last = p.lastStableOffset()
		}
	}
	var offsetsErr error
	if s := p.leaderEpochStartOffset.Load(); consumer && s >= 0 && s > hw {
		offsetsErr = kerr.OffsetNotAvailable
	}
	epochOf := func(e int32, ok bool) *int32 {
		if !ok || e < 0 {
			return nil
		}
		return &e
	}
	switch ts {
	case tsLatest:
		if offsetsErr != nil {
			return -1, -1, nil, offsetsErr
		}
		e := p.leaderEpoch
		return -1, last, &e, nil
	case tsEarliest, tsEarliestLocal:
		start := p.log.LogStartOffset()
		e, ok := p.log.EpochForOffset(start)
		return -1, start, epochOf(e, ok), nil
	case tsLatestTiered, tsEarliestPendingUpload:
		e := int32(-1)
		return -1, -1, &e, nil
	}
	var (
		foundTs, foundOff int64
		foundEpoch        int32
		found             bool
	)
	foundOff, foundTs, foundEpoch, found = p.log.FetchOffsetByTimestamp(ts) // ts >= 0 or -3
	if !found || foundOff >= last {
		if offsetsErr != nil {
			return -1, -1, nil, offsetsErr
		}
		return -1, -1, nil, nil
	}
	return foundTs, foundOff, epochOf(foundEpoch, true), nil
}

// OffsetForLeaderEpoch serves OffsetForLeaderEpoch v2+ on the leader
// (Partition.lastOffsetForLeaderEpoch): for each partition, after the
// current leader epoch check, the largest epoch <= the requested one and
// the offset where it ended (the log end offset for the current epoch), or
// epoch -1 and offset -1 when the log knows no such epoch. Kafka serves it
// from the leader only, for consumers (replica id -1, v3+) and followers
// alike.
func (rm *ReplicaManager) OffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, t := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = t.Topic
		for _, rp := range t.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition = rp.Partition
			p, err := rm.lookup(t.Topic, rp.Partition)
			if err == nil {
				sp.LeaderEpoch, sp.EndOffset, err = p.lastOffsetForLeaderEpoch(rp.CurrentLeaderEpoch, rp.LeaderEpoch)
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				sp.LeaderEpoch, sp.EndOffset = -1, -1
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

// lastOffsetForLeaderEpoch is Partition.lastOffsetForLeaderEpoch with
// fetchOnlyFromLeader.
func (p *Partition) lastOffsetForLeaderEpoch(current, epoch int32) (int32, int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkEpoch(current, true); err != nil {
		return -1, -1, err
	}
	e, off := p.endOffsetForEpoch(epoch)
	return e, off, nil
}
