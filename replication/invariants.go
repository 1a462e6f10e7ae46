package replication

import (
	"errors"
	"fmt"
	"slices"
)

// The replication invariants (doc.go lists them). Each check tests its
// condition first and builds the error only when it fails, so that the
// happy path allocates nothing; a broken invariant panics under
// -tags invariants and the race detector (STYLE.md 7, as storage does) and
// is returned as an error in production, where the caller refuses the
// change it was about to make.

// ErrInvariant wraps a broken replication invariant (a bug, never a client
// error).
var ErrInvariant = errors.New("replication: invariant violated")

// invariantFailed reports a broken invariant.
func invariantFailed(format string, args ...any) error {
	err := fmt.Errorf("%w: "+format, append([]any{ErrInvariant}, args...)...)
	if invariantsEnabled {
		panic(err)
	}
	return err
}

// checkHighWatermarkLocked is checked before the leader moves its high
// watermark from old to hw: it never moves backwards, never passes the
// leader's log end offset, and never passes the log end offset of a member
// of the maximal ISR (the committed ISR and a pending expansion) that has
// fetched since this leadership began. p.mu (read) and stateMu must be held.
func (p *Partition) checkHighWatermarkLocked(old, hw int64) error {
	if hw < old {
		return invariantFailed("%s: high watermark moving backwards from %d to %d", p.tp, old, hw)
	}
	if leo := p.log.LogEndOffset(); hw > leo {
		return invariantFailed("%s: high watermark %d beyond the leader's log end offset %d", p.tp, hw, leo)
	}
	for _, r := range p.maximalISRLocked() {
		if f, ok := p.followers[r]; ok && r != p.nodeID && hw > f.logEndOffset {
			return invariantFailed("%s: high watermark %d beyond the log end offset %d of ISR member %d",
				p.tp, hw, f.logEndOffset, r)
		}
	}
	return nil
}

// checkTruncationLocked is checked before a replica truncates its log to
// offset: a leader never truncates (its log is the one the others follow,
// and everything below its high watermark is committed).
func (p *Partition) checkTruncationLocked(offset int64) error {
	if p.isLeader {
		return invariantFailed("%s: the leader (epoch %d) truncating to %d, high watermark %d",
			p.tp, p.leaderEpoch, offset, p.hw.Load())
	}
	return nil
}

// checkFollowerHighWatermarkLocked is checked after a follower sets its
// high watermark: never past its own log end offset. p.mu must be held.
func (p *Partition) checkFollowerHighWatermarkLocked(hw, leo int64) error {
	if hw > leo {
		return invariantFailed("%s: follower high watermark %d beyond its log end offset %d", p.tp, hw, leo)
	}
	return nil
}

// checkIsrProposalLocked is checked before an AlterPartition is proposed:
// the ISR keeps the leader, lists assigned replicas only, and a member
// being added has reached the high watermark. p.mu and stateMu must be
// held.
func (p *Partition) checkIsrProposalLocked(newIsr []int32) error {
	if !slices.Contains(newIsr, p.nodeID) {
		return invariantFailed("%s: proposed ISR %v without the leader %d", p.tp, newIsr, p.nodeID)
	}
	for _, r := range newIsr {
		if !slices.Contains(p.replicas, r) {
			return invariantFailed("%s: proposed ISR %v holds %d, not a replica of %v", p.tp, newIsr, r, p.replicas)
		}
		if r == p.nodeID || slices.Contains(p.isr, r) {
			continue
		}
		if f, ok := p.followers[r]; !ok || f.logEndOffset < p.hw.Load() {
			return invariantFailed("%s: adding %d to the ISR below the high watermark %d", p.tp, r, p.hw.Load())
		}
	}
	return nil
}
