package replication

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// DeleteRecordsHighWatermark is the offset that asks to delete up to the high
// watermark (DeleteRecordsRequest.HIGH_WATERMARK).
const DeleteRecordsHighWatermark = -1

// deleteRecordsPoll re-checks parked DeleteRecords: a follower's log start offset
// moving does not wake the partition's waiters.
var deleteRecordsPoll = 100 * time.Millisecond

// DeleteRecords is ReplicaManager.deleteRecords + Partition.deleteRecordsOnLeader +
// DelayedDeleteRecords: on the leader only, the log start offset moves up to the
// requested offset (-1: the high watermark); an offset beyond the high watermark
// is OFFSET_OUT_OF_RANGE; a topic without cleanup.policy=delete is
// POLICY_VIOLATION; an internal topic INVALID_TOPIC_EXCEPTION. The answer waits
// (up to the request's timeout, REQUEST_TIMED_OUT after) until the low watermark
// (the smallest log start offset among the leader and the followers it has heard
// from) reaches the offset, and carries the low watermark.
func (rm *ReplicaManager) DeleteRecords(ctx context.Context, req *kmsg.DeleteRecordsRequest) *kmsg.DeleteRecordsResponse {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	type pending struct {
		p        *Partition
		required int64
		sp       *kmsg.DeleteRecordsResponseTopicPartition
	}
	var waits []pending
	for _, t := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = t.Topic
		st.Partitions = make([]kmsg.DeleteRecordsResponseTopicPartition, len(t.Partitions))
		for i, rp := range t.Partitions {
			sp := &st.Partitions[i]
			*sp = kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition = rp.Partition
			sp.LowWatermark = -1
			if isInternalTopic(t.Topic) {
				sp.ErrorCode = kerr.InvalidTopicException.Code
				continue
			}
			p, err := rm.lookup(t.Topic, rp.Partition)
			if err == nil {
				var required, low int64
				required, low, err = p.deleteRecordsOnLeader(rp.Offset)
				if err == nil {
					sp.LowWatermark = low
					if low < required {
						waits = append(waits, pending{p, required, sp})
					}
				}
			}
			if err != nil {
				sp.ErrorCode = errorCode(err)
				if !errors.As(err, new(*kerr.Error)) || errors.Is(err, kerr.KafkaStorageError) {
					rm.logger.Warn("delete records failed", zap.String("topic", t.Topic), zap.Int32("partition", rp.Partition),
						zap.Int64("offset", rp.Offset), zap.Error(err))
				}
			}
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(waits) == 0 {
		return resp
	}
	w := newWaiter()
	for _, pw := range waits {
		pw.p.watch.add(w)
		defer pw.p.watch.remove(w)
	}
	done := func() bool {
		all := true
		for _, pw := range waits {
			if pw.sp.ErrorCode != 0 {
				continue
			}
			low, err := pw.p.lowWatermark()
			switch {
			case err != nil:
				pw.sp.ErrorCode = errorCode(err)
			case low >= pw.required:
				pw.sp.LowWatermark = low
			default:
				pw.sp.LowWatermark = low
				all = false
			}
		}
		return all
	}
	stop := time.Now().Add(time.Duration(req.TimeoutMillis) * time.Millisecond)
	for {
		left := time.Until(stop)
		if await(ctx, w, min(left, deleteRecordsPoll), rm.closed, done) {
			return resp
		}
		if left <= 0 || ctx.Err() != nil || isClosed(rm.closed) {
			break
		}
	}
	for _, pw := range waits {
		if pw.sp.ErrorCode == 0 && pw.sp.LowWatermark < pw.required {
			pw.sp.ErrorCode = kerr.RequestTimedOut.Code
		}
	}
	return resp
}

// DeleteCoordinatorRecords moves the log start offset of a coordinator's
// partition up to offset (at most its high watermark) on the leader, as
// Kafka's CoordinatorPartitionWriter.deleteRecords does with
// allowInternalTopicDeletion: the share coordinator prunes
// __share_group_state so. It does not wait for the followers' log starts.
func (rm *ReplicaManager) DeleteCoordinatorRecords(topic string, partition int32, offset int64) error {
	p, err := rm.lookup(topic, partition)
	if err != nil {
		return err
	}
	_, _, err = p.deleteRecordsOnLeader(offset)
	return err
}

// deleteRecordsOnLeader moves the log start offset (Partition.deleteRecordsOnLeader)
// and returns the offset asked for and the low watermark.
func (p *Partition) deleteRecordsOnLeader(offset int64) (int64, int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkEpoch(-1, true); err != nil {
		return 0, 0, err
	}
	if !p.cfg.Delete() {
		return 0, 0, kerr.PolicyViolation
	}
	hw := p.hw.Load()
	if offset == DeleteRecordsHighWatermark {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return 0, 0, kerr.OffsetOutOfRange
	}
	if err := p.log.IncrementLogStartOffset(offset); err != nil {
		return 0, 0, err
	}
	low, err := p.lowWatermarkLocked()
	return offset, low, err
}

// lowWatermark is Partition.lowWatermarkIfLeader.
func (p *Partition) lowWatermark() (int64, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.lowWatermarkLocked()
}

// lowWatermarkLocked: the smallest log start offset of the leader and the
// replicas it knows the fetch state of. p.mu must be held.
func (p *Partition) lowWatermarkLocked() (int64, error) {
	if err := p.checkEpoch(-1, true); err != nil {
		return 0, err
	}
	low := p.log.LogStartOffset()
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	for _, r := range p.replicas {
		if f, ok := p.followers[r]; ok && r != p.nodeID && f.logStartOffset >= 0 && f.logStartOffset < low {
			low = f.logStartOffset
		}
	}
	return low, nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
