package replication

import "time"

// Fetch from follower (KIP-392). A consumer fetch of v11+ may be served by
// any replica (fetchOnlyLeader is false), up to that replica's high
// watermark. With replica.selector.class=RackAwareReplicaSelector the leader
// also tells a consumer that names its rack (client.rack, the request's
// rack_id) which replica to read from: it answers the partition with no
// records, its offsets, and preferred_read_replica; the consumer then
// fetches from that replica until it fails or its metadata is refreshed.

// replicaView is one candidate of the selection (Kafka's ReplicaView).
type replicaView struct {
	id                 int32
	rack               string
	hasRack            bool
	logEndOffset       int64
	sinceCaughtUpMs    int64
	endpointOnListener bool
}

// better is ReplicaView.comparator's order (the larger wins): the log end
// offset, then the shorter time since last caught up, then the id.
func (v replicaView) better(o replicaView) bool {
	switch {
	case v.logEndOffset != o.logEndOffset:
		return v.logEndOffset > o.logEndOffset
	case v.sinceCaughtUpMs != o.sinceCaughtUpMs:
		return v.sinceCaughtUpMs < o.sinceCaughtUpMs
	}
	return v.id > o.id
}

// preferredReadReplica is ReplicaManager.findPreferredReadReplica with
// Kafka's RackAwareReplicaSelector, on the leader only: the candidates are
// the leader and the in-sync followers whose log holds fetchOffset (log
// start <= fetchOffset <= log end), each with its broker's endpoint on the
// consumer's listener (none when the broker is fenced or lacks the
// listener). Replicas in the consumer's rack are looked at; the leader wins
// if it is one of them, else the most caught up (log end offset, then time
// since it was last caught up). It returns -1 when the choice is the leader
// (which is never sent) or no replica is in the rack.
func (rm *ReplicaManager) preferredReadReplica(p *Partition, params fetchParams, fetchOffset int64) int32 {
	img := rm.Image() // before p.mu: ReplicaManager.mu ranks first
	view := func(id int32) replicaView {
		v := replicaView{id: id}
		b := img.Broker(id)
		if b == nil || b.Fenced {
			return v // getPartitionReplicaEndpoints leaves out fenced brokers
		}
		if ep, ok := b.Listener(params.client.Listener); ok && ep.Host != "" && ep.Port >= 0 {
			v.endpointOnListener = true
			if b.Rack != nil {
				v.rack, v.hasRack = *b.Rack, true
			}
		}
		return v
	}
	now := rm.now()
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader || p.log == nil {
		return -1 // leaderIdIfLocal
	}
	leader := view(p.nodeID)
	if leader.hasRack && leader.rack == params.client.Rack {
		return -1
	}
	best, found := replicaView{}, false
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	for _, id := range p.replicas {
		f, ok := p.followers[id]
		if id == p.nodeID || !ok || !containsReplica(p.isr, id) ||
			f.logEndOffset < fetchOffset || f.logStartOffset > fetchOffset {
			continue
		}
		v := view(id)
		if !v.endpointOnListener || !v.hasRack || v.rack != params.client.Rack {
			continue
		}
		v.logEndOffset = f.logEndOffset
		v.sinceCaughtUpMs = sinceMs(now, f.lastCaughtUp)
		if !found || v.better(best) {
			best, found = v, true
		}
	}
	if !found {
		return -1
	}
	return best.id
}

// sinceMs is currentTimeMs - lastCaughtUpTimeMs, with a zero time as
// Kafka's initial 0 (the epoch).
func sinceMs(now, t time.Time) int64 {
	if t.IsZero() {
		return now.UnixMilli()
	}
	return now.Sub(t).Milliseconds()
}

// offsetSnapshot answers a partition whose reader is sent to a preferred
// replica (Partition.fetchOffsetSnapshot without requiring the leader): no
// records, the high watermark, last stable and log start offsets, or the
// leader epoch error.
func (p *Partition) offsetSnapshot(fp fetchPart) *partResult {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkEpoch(fp.currentLeaderEpoch, false); err != nil {
		return errResult(fp, errorCode(err))
	}
	return &partResult{part: fp, hw: p.hw.Load(), lso: p.lastStableOffset(), logStart: p.log.LogStartOffset(),
		leaderID: -1, leaderEp: -1, preferred: -1}
}
