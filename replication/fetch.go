package replication

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
)

// Fetch isolation (FetchIsolation): how far a read may go.
type isolation uint8

const (
	isolateLogEnd    isolation = iota // followers
	isolateHW                         // consumers, READ_UNCOMMITTED
	isolateCommitted                  // consumers, READ_COMMITTED: the last stable offset
)

// partResult is one partition's answer to a fetch. The record bytes stay in
// the segment file (region) until the response is written.
type partResult struct {
	part      fetchPart
	errCode   int16
	hw        int64
	lso       int64
	logStart  int64
	diverging *kmsg.FetchResponseTopicPartitionDivergingEpoch
	leaderID  int32 // KIP-951 current leader, on NOT_LEADER / FENCED (v16+)
	leaderEp  int32
	region    storage.FileRegion
	// aborted are the aborted transactions of a read_committed read
	// (non-nil, maybe empty, when the read found its segment); nil otherwise
	aborted []storage.AbortedTxn
	// replicaInSync: a follower's fetch, and the follower is in the ISR
	// (shouldLeaderThrottle spares it)
	replicaInSync bool
	// preferred is the replica a consumer should read from instead (KIP-392,
	// v11+), -1 for none
	preferred int32
}

func (r *partResult) recordsLen() int64 { return r.region.Len }

func errResult(part fetchPart, code int16) *partResult {
	return &partResult{part: part, errCode: code, hw: -1, lso: -1, logStart: -1, leaderID: -1, leaderEp: -1, preferred: -1}
}

// fetchParams are the request-wide parameters (FetchParams).
type fetchParams struct {
	version         int16
	replicaID       int32
	replicaEpoch    int64 // the follower's broker epoch (v15+), -1 unknown
	isFollower      bool
	fetchOnlyLeader bool
	isolation       isolation
	maxWait         time.Duration
	minBytes        int32
	maxBytes        int32
	// client is the consumer's rack and listener (ClientMetadata, v11+),
	// for the preferred read replica
	client FetchClient
}

// FetchResult is a fetch response whose record bytes are still in segment
// files: Resp has every field but the partitions' RecordBatches, and
// Records[i][j] is the file region holding the records of
// Resp.Topics[i].Partitions[j] (Len 0: none). Write it with Body (zero
// copy) or fill RecordBatches with Materialize.
type FetchResult struct {
	Resp    *kmsg.FetchResponse
	Records [][]storage.FileRegion
}

// Materialize reads every region into the response's RecordBatches, for
// callers that encode the response with kmsg.
func (r *FetchResult) Materialize() error {
	for i := range r.Resp.Topics {
		for j := range r.Resp.Topics[i].Partitions {
			reg := r.Records[i][j]
			if reg.Len == 0 {
				continue
			}
			b, err := reg.ReadAll()
			if err != nil {
				return err
			}
			r.Resp.Topics[i].Partitions[j].RecordBatches = b
		}
	}
	return nil
}

// Fetch serves a fetch request (KafkaApis.handleFetchRequest and
// ReplicaManager.fetchMessages) for consumers and, on the leader side, for
// followers:
//
//   - the fetch session (KIP-227) decides which partitions are read and
//     which are answered (sessions.go);
//   - v13+ topic ids unknown to the metadata answer UNKNOWN_TOPIC_ID;
//     partitions the metadata does not know, UNKNOWN_TOPIC_OR_PARTITION;
//   - each partition is read up to the high watermark (READ_UNCOMMITTED),
//     the last stable offset (READ_COMMITTED) or the log end (followers),
//     within the partition's max bytes and what is left of the response's
//     max bytes; the first partition with records gets at least one whole
//     batch even if it is bigger (KIP-74);
//   - if fewer than min_bytes are ready and nothing failed, the request
//     parks until appends bring enough, something fails or max_wait ends,
//     then reads again (DelayedFetch);
//   - current leader epochs are checked (FENCED_LEADER_EPOCH,
//     UNKNOWN_LEADER_EPOCH) and a last fetched epoch that diverges from
//     the log answers with a diverging epoch (KIP-320).
func (rm *ReplicaManager) Fetch(ctx context.Context, req *kmsg.FetchRequest) *FetchResult {
	return rm.FetchAuthorized(ctx, req, nil)
}

// FetchAuth is the authorizer's verdict on a fetch (KafkaApis.handleFetchRequest),
// which the broker decides: a follower needs CLUSTER_ACTION (every partition
// of the session answers TOPIC_AUTHORIZATION_FAILED without it), a consumer
// READ on each topic (TOPIC_AUTHORIZATION_FAILED, checked before the
// partition's existence).
type FetchAuth struct {
	ClusterAction bool
	Topic         func(name string) bool
}

// FetchAuthorized is Fetch with authorization; a nil auth allows all.
func (rm *ReplicaManager) FetchAuthorized(ctx context.Context, req *kmsg.FetchRequest, auth *FetchAuth) *FetchResult {
	return rm.FetchFrom(ctx, req, auth, FetchClient{})
}

// FetchClient is what KIP-392's replica selection knows of a consumer
// (Kafka's ClientMetadata): the rack_id of its Fetch (client.rack) and the
// listener it came on, whose endpoints a preferred read replica must have.
type FetchClient struct {
	Rack     string
	Listener string
}

// FetchFrom is FetchAuthorized for a consumer described by client: with
// Config.RackAwareReplicaSelector, a leader answers a v11+ consumer fetch
// whose rack has an in-sync follower (and not the leader) with that
// follower as preferred_read_replica and no records (findPreferredReadReplica).
func (rm *ReplicaManager) FetchFrom(ctx context.Context, req *kmsg.FetchRequest, auth *FetchAuth, client FetchClient) *FetchResult {
	replicaID, replicaEpoch := req.ReplicaID, int64(-1)
	if req.Version >= 15 {
		replicaID, replicaEpoch = req.ReplicaState.ID, req.ReplicaState.Epoch
	}
	params := fetchParams{
		version:      req.Version,
		replicaID:    replicaID,
		replicaEpoch: replicaEpoch,
		isFollower:   replicaID >= 0,
		maxWait:      time.Duration(req.MaxWaitMillis) * time.Millisecond,
		minBytes:     req.MinBytes,
		maxBytes:     math.MaxInt32,
		isolation:    isolateHW,
	}
	if req.Version >= 3 {
		params.maxBytes = req.MaxBytes
	}
	if req.Version >= 11 && !params.isFollower {
		params.client = client
		params.client.Rack = req.Rack
	}
	switch {
	case params.isFollower:
		params.isolation = isolateLogEnd
	case req.IsolationLevel == 1:
		params.isolation = isolateCommitted
	}
	// KIP-392: from v11 a consumer may read from a follower.
	params.fetchOnlyLeader = params.isFollower || req.Version < 11

	// Topic ids resolve against one image read now, without a lock: the
	// session cache resolves its partitions' ids holding its own lock, a
	// leaf, so it must not take ReplicaManager.mu to do it.
	img := rm.Image()
	names := func(id [16]byte) (string, bool) {
		if t := img.TopicByID(id); t != nil {
			return t.Name, true
		}
		return "", false
	}
	var parts []fetchPart
	for i := range req.Topics {
		t := &req.Topics[i]
		name := t.Topic
		if req.Version >= 13 {
			name, _ = names(t.TopicID)
		}
		for j := range t.Partitions {
			rp := &t.Partitions[j]
			fp := fetchPart{topic: name, topicID: t.TopicID, partition: rp.Partition, fetchOffset: rp.FetchOffset,
				currentLeaderEpoch: -1, lastFetchedEpoch: -1, logStartOffset: -1, maxBytes: rp.PartitionMaxBytes}
			if req.Version >= 9 {
				fp.currentLeaderEpoch = rp.CurrentLeaderEpoch
			}
			if req.Version >= 12 {
				fp.lastFetchedEpoch = rp.LastFetchedEpoch
			}
			if req.Version >= 5 {
				fp.logStartOffset = rp.LogStartOffset
			}
			parts = append(parts, fp)
		}
	}
	var forgotten []sessionKey
	for _, f := range req.ForgottenTopics {
		name := f.Topic
		if req.Version >= 13 {
			name = ""
		}
		for _, p := range f.Partitions {
			forgotten = append(forgotten, keyOf(req.Version >= 13, name, f.TopicID, p))
		}
	}
	sessionID, sessionEpoch := int32(0), int32(-1)
	if req.Version >= 7 {
		sessionID, sessionEpoch = req.SessionID, req.SessionEpoch
	}
	fc := rm.sessions.newContext(req.Version, sessionID, sessionEpoch, params.isFollower, parts, forgotten, names, rm.now())

	var interesting []fetchPart
	var erroneous []*partResult
	lastTopic, lastAllowed := "", false
	allowed := func(topic string) bool {
		if auth == nil {
			return true
		}
		if params.isFollower {
			return auth.ClusterAction
		}
		if topic != lastTopic || lastTopic == "" {
			lastTopic, lastAllowed = topic, auth.Topic(topic)
		}
		return lastAllowed
	}
	for _, fp := range fc.parts {
		switch {
		case params.isFollower && !allowed(fp.topic):
			erroneous = append(erroneous, errResult(fp, kerr.TopicAuthorizationFailed.Code))
		case fp.topic == "" && req.Version >= 13:
			erroneous = append(erroneous, errResult(fp, kerr.UnknownTopicID.Code))
		case !allowed(fp.topic):
			erroneous = append(erroneous, errResult(fp, kerr.TopicAuthorizationFailed.Code))
		case !rm.knowsPartition(fp.topic, fp.partition):
			erroneous = append(erroneous, errResult(fp, kerr.UnknownTopicOrPartition.Code))
		default:
			interesting = append(interesting, fp)
		}
	}

	var results []*partResult
	if fc.kind != ctxError {
		results = rm.fetchMessages(ctx, params, interesting)
	}
	results = append(results, erroneous...)
	id, code, out := rm.sessions.finish(fc, results, rm.now())
	if params.isFollower {
		rm.recordLeaderReplication(out)
	}
	return rm.buildFetchResponse(req, id, code, out)
}

// recordLeaderReplication is the leader's quota record of a follower fetch
// (KafkaApis.sizeOfThrottledPartitions): the bytes of the throttled
// partitions in the response, in-sync followers' included, so the total
// replication traffic of throttled replicas stays under the rate. Kafka
// counts the encoded partitions; this counts their record bytes.
func (rm *ReplicaManager) recordLeaderReplication(out []*partResult) {
	q := rm.cfg.LeaderQuota
	var n int64
	for _, r := range out {
		if r.recordsLen() > 0 && q.IsThrottled(r.part.topic, r.part.partition) {
			n += r.recordsLen()
		}
	}
	q.Record(n)
}

// shouldLeaderThrottle is ReplicaManager.shouldLeaderThrottle: a follower
// out of the ISR fetching a partition in leader.replication.throttled.replicas
// while leader.replication.throttled.rate is exceeded gets no records.
func (rm *ReplicaManager) shouldLeaderThrottle(fp fetchPart, replicaInSync bool) bool {
	q := rm.cfg.LeaderQuota
	return !replicaInSync && q.IsThrottled(fp.topic, fp.partition) && q.IsQuotaExceeded()
}

// knowsPartition is metadataCache.contains.
func (rm *ReplicaManager) knowsPartition(topic string, partition int32) bool {
	rm.mu.RLock()
	defer rm.mu.RUnlock()
	t := rm.image.TopicByName(topic)
	return t != nil && t.Partition(partition) != nil
}

// fetchMessages is ReplicaManager.fetchMessages: read now, answer now if
// possible, else park and read again.
func (rm *ReplicaManager) fetchMessages(ctx context.Context, params fetchParams, parts []fetchPart) []*partResult {
	results := rm.readFromLog(params, parts, true)
	if params.maxWait <= 0 || len(parts) == 0 {
		return results
	}
	var bytes int64
	for _, r := range results {
		if r.errCode != 0 || r.diverging != nil || r.preferred >= 0 {
			return results
		}
		bytes += r.recordsLen()
	}
	if bytes >= int64(params.minBytes) {
		return results
	}

	// DelayedFetch: watch every partition read, then re-check on each
	// wake-up whether enough bytes are ready or something changed.
	w := newWaiter()
	for _, r := range results {
		if p, err := rm.lookup(r.part.topic, r.part.partition); err == nil {
			p.watch.add(w)
			defer p.watch.remove(w)
		}
	}
	await(ctx, w, params.maxWait, rm.closed, func() bool { return rm.fetchSatisfied(params, parts) })
	return rm.readFromLog(params, parts, false)
}

// fetchSatisfied is DelayedFetch.tryComplete.
func (rm *ReplicaManager) fetchSatisfied(params fetchParams, parts []fetchPart) bool {
	var accumulated int64
	for _, fp := range parts {
		p, err := rm.lookup(fp.topic, fp.partition)
		if err != nil {
			return true // Case A, B, C
		}
		n, inSync, done := p.bytesReady(params, fp)
		if done {
			return true
		}
		if !params.isFollower || n == 0 || !rm.shouldLeaderThrottle(fp, inSync) {
			accumulated += n
		}
	}
	return accumulated >= int64(params.minBytes)
}

// bytesReady reports how many bytes (up to the partition's max bytes) a
// read at fp.fetchOffset would return now, or done when the fetch must be
// answered at once (leadership changed, epoch fenced, offset beyond the end
// after a truncation, diverging epoch); inSync whether a follower fetching
// is in the ISR (DelayedFetch leaves out the bytes a throttle holds back).
func (p *Partition) bytesReady(params fetchParams, fp fetchPart) (n int64, inSync, done bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkEpoch(fp.currentLeaderEpoch, params.fetchOnlyLeader); err != nil {
		return 0, false, true
	}
	inSync = params.isFollower && containsReplica(p.isr, params.replicaID)
	end := p.endOffset(params.isolation)
	switch {
	case fp.fetchOffset > end:
		return 0, false, true // Case F: truncated
	case fp.fetchOffset == end:
		n = 0
	default:
		ri, err := p.log.Read(fp.fetchOffset, fp.maxBytes, end, true)
		if err != nil {
			return 0, false, true
		}
		n = min(ri.Region.Len, int64(max(fp.maxBytes, 0)))
	}
	if fp.lastFetchedEpoch >= 0 {
		ep, off := p.log.EndOffsetForEpoch(fp.lastFetchedEpoch)
		if ep < 0 || off < 0 || ep < fp.lastFetchedEpoch || off < fp.fetchOffset {
			return 0, false, true // Case H
		}
	}
	return n, inSync, false
}

// endOffset is the offset a read may not pass. p.mu must be held.
func (p *Partition) endOffset(iso isolation) int64 {
	switch iso {
	case isolateLogEnd:
		return p.log.LogEndOffset()
	case isolateCommitted:
		return p.lastStableOffset()
	}
	return p.hw.Load()
}

// readFromLog is ReplicaManager.readFromLog: partitions in order, the
// response byte budget shrinking as records are found; the first partition
// with records may exceed the budget by one batch (KIP-74, v3+).
func (rm *ReplicaManager) readFromLog(params fetchParams, parts []fetchPart, updateFetchState bool) []*partResult {
	limit := int64(params.maxBytes)
	minOne := params.version >= 3
	out := make([]*partResult, 0, len(parts))
	for _, fp := range parts {
		r := rm.read(params, fp, int32(max(min(limit, math.MaxInt32), 0)), minOne, updateFetchState)
		if r.recordsLen() > 0 {
			minOne = false
		}
		limit = max(0, limit-r.recordsLen())
		out = append(out, r)
	}
	return out
}

func (rm *ReplicaManager) read(params fetchParams, fp fetchPart, limit int32, minOne, updateFetchState bool) *partResult {
	p, err := rm.lookup(fp.topic, fp.partition)
	if err != nil {
		r := errResult(fp, errorCode(err))
		rm.fillFetchLeader(params, r)
		return r
	}
	if fp.topicID != ([16]byte{}) && params.version >= 13 && fp.topicID != p.topicID {
		// A session's topic id whose name now belongs to a recreated topic.
		return errResult(fp, kerr.InconsistentTopicID.Code)
	}
	if rm.cfg.RackAwareReplicaSelector && params.client.Rack != "" {
		if id := rm.preferredReadReplica(p, params, fp.fetchOffset); id >= 0 {
			// a preferred read-replica skips the read (readFromLog)
			r := p.offsetSnapshot(fp)
			if r.errCode != 0 {
				rm.fillFetchLeader(params, r)
			} else {
				r.preferred = id
			}
			return r
		}
	}
	r, follower := p.read(params, fp, min(fp.maxBytes, limit), minOne)
	if r.errCode != 0 {
		rm.fillFetchLeader(params, r)
		return r
	}
	if follower && r.recordsLen() > 0 && rm.shouldLeaderThrottle(fp, r.replicaInSync) {
		// A throttled partition answers an empty record set, its offsets
		// and high watermark as read (ReplicaManager.readFromLog).
		r.region = storage.FileRegion{}
	}
	if follower && updateFetchState && r.diverging == nil {
		if err := rm.followerFetched(p, params.replicaID, params.replicaEpoch, fp.fetchOffset, fp.logStartOffset); err != nil {
			return errResult(fp, errorCode(err)) // a stale broker epoch (KIP-903)
		}
	}
	return r
}

// fillFetchLeader sets KIP-951's CurrentLeader (v16+) on NOT_LEADER and
// FENCED_LEADER_EPOCH answers.
func (rm *ReplicaManager) fillFetchLeader(params fetchParams, r *partResult) {
	if params.version >= 16 && (r.errCode == kerr.NotLeaderForPartition.Code || r.errCode == kerr.FencedLeaderEpoch.Code) {
		r.leaderID, r.leaderEp = rm.CurrentLeader(r.part.topic, r.part.partition)
	}
}

// read is Partition.fetchRecords + readRecords for one partition.
func (p *Partition) read(params fetchParams, fp fetchPart, maxBytes int32, minOne bool) (*partResult, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if err := p.checkEpoch(fp.currentLeaderEpoch, params.fetchOnlyLeader); err != nil {
		return errResult(fp, errorCode(err)), false
	}
	if params.isFollower && !containsReplica(p.replicas, params.replicaID) {
		// followerReplicaOrThrow
		if fp.currentLeaderEpoch >= 0 {
			return errResult(fp, kerr.UnknownLeaderEpoch.Code), false
		}
		return errResult(fp, kerr.NotLeaderForPartition.Code), false
	}
	r := &partResult{part: fp, hw: p.hw.Load(), lso: p.lastStableOffset(), logStart: p.log.LogStartOffset(),
		leaderID: -1, leaderEp: -1, preferred: -1, replicaInSync: params.isFollower && containsReplica(p.isr, params.replicaID)}
	if fp.lastFetchedEpoch >= 0 {
		ep, off := p.endOffsetForEpoch(fp.lastFetchedEpoch)
		switch {
		case ep < 0 || off < 0, fp.fetchOffset < r.logStart:
			return errResult(fp, kerr.OffsetOutOfRange.Code), false
		case ep < fp.lastFetchedEpoch || off < fp.fetchOffset:
			d := kmsg.NewFetchResponseTopicPartitionDivergingEpoch()
			d.Epoch, d.EndOffset = ep, off
			r.diverging = &d
			return r, params.isFollower
		}
	}
	var ri storage.ReadInfo
	var err error
	if params.isolation == isolateCommitted {
		// up to the last stable offset, with the aborted transactions the
		// consumer drops (LocalLog.read with includeAbortedTxns)
		ri, r.aborted, err = p.log.ReadCommitted(fp.fetchOffset, max(maxBytes, 0), r.lso, minOne)
	} else {
		ri, err = p.log.Read(fp.fetchOffset, max(maxBytes, 0), p.endOffset(params.isolation), minOne)
	}
	if err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			return errResult(fp, kerr.OffsetOutOfRange.Code), false
		}
		return errResult(fp, errorCode(err)), false
	}
	r.region = ri.Region
	return r, params.isFollower
}

// endOffsetForEpoch is UnifiedLog.endOffsetForEpoch: (-1, -1) when unknown.
// p.mu must be held.
func (p *Partition) endOffsetForEpoch(epoch int32) (int32, int64) {
	ep, off := p.log.EndOffsetForEpoch(epoch)
	if off < 0 {
		return -1, -1
	}
	return ep, off
}

func containsReplica(rs []int32, id int32) bool {
	for _, r := range rs {
		if r == id {
			return true
		}
	}
	return false
}

// updateFollowerFetchState records a follower's fetch offset as its log end
// offset and moves the high watermark (Partition.updateFollowerFetchState).
// Expanding the ISR (AlterPartition) comes with the replica fetchers.
func (p *Partition) updateFollowerFetchState(id int32, fetchOffset, logStartOffset int64) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if !p.isLeader {
		return
	}
	p.stateMu.Lock()
	f, ok := p.followers[id]
	if !ok {
		f = &followerState{}
		p.followers[id] = f
	}
	moved := f.logEndOffset != fetchOffset
	f.logEndOffset = fetchOffset
	f.logStartOffset = logStartOffset
	p.stateMu.Unlock()
	if moved && p.maybeIncrementHW() {
		p.watch.wakeAll()
	}
}

// buildFetchResponse turns results into a kmsg response, grouping runs of
// partitions of the same topic as FetchResponse.of does. NodeEndpoints
// (Brokers) for the CurrentLeader fields are the caller's: they depend on
// the listener.
func (rm *ReplicaManager) buildFetchResponse(req *kmsg.FetchRequest, sessionID int32, code int16, results []*partResult) *FetchResult {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.ErrorCode = code
	resp.SessionID = sessionID
	res := &FetchResult{Resp: resp}
	for _, r := range results {
		n := len(resp.Topics)
		same := n > 0 && (req.Version >= 13 && resp.Topics[n-1].TopicID == r.part.topicID ||
			req.Version < 13 && resp.Topics[n-1].Topic == r.part.topic)
		if !same {
			t := kmsg.NewFetchResponseTopic()
			t.Topic, t.TopicID = r.part.topic, r.part.topicID
			resp.Topics = append(resp.Topics, t)
			res.Records = append(res.Records, nil)
			n++
		}
		sp := kmsg.NewFetchResponseTopicPartition()
		sp.Partition = r.part.partition
		sp.ErrorCode = r.errCode
		sp.HighWatermark = r.hw
		sp.LastStableOffset = r.lso
		sp.LogStartOffset = r.logStart
		if r.diverging != nil {
			sp.DivergingEpoch = *r.diverging
		}
		sp.CurrentLeader.LeaderID, sp.CurrentLeader.LeaderEpoch = r.leaderID, r.leaderEp
		if r.preferred >= 0 && req.Version >= 11 {
			sp.PreferredReadReplica = r.preferred
		}
		if r.aborted != nil && req.Version >= 4 {
			sp.AbortedTransactions = make([]kmsg.FetchResponseTopicPartitionAbortedTransaction, len(r.aborted))
			for i, a := range r.aborted {
				at := &sp.AbortedTransactions[i]
				at.Default()
				at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
			}
		}
		resp.Topics[n-1].Partitions = append(resp.Topics[n-1].Partitions, sp)
		res.Records[n-1] = append(res.Records[n-1], r.region)
	}
	return res
}
