package broker

// ShareFetch: v1-2 (client listeners)
//
// Behavior (KafkaApis.handleShareFetchRequest, SharePartitionManager,
// DelayedShareFetch; package share):
//   - Served once share.version >= 1 is finalized; before, a top-level
//     UNSUPPORTED_VERSION and no topics (isShareGroupProtocolEnabled).
//   - Authorization: GROUP READ on the group (else a top-level
//     GROUP_AUTHORIZATION_FAILED), TOPIC READ on each topic (else the
//     partition's TOPIC_AUTHORIZATION_FAILED); an unknown topic id is
//     UNKNOWN_TOPIC_ID. A null group id (before authorization) or a
//     member id that is empty or longer than 36 characters is
//     INVALID_REQUEST.
//   - Share sessions (share/session.go): epoch 0 opens one with the
//     partitions listed (acknowledgements in it are INVALID_REQUEST),
//     epoch n > 0 adds Topics and drops ForgottenTopicsData (every
//     partition listed joins, then the forgotten leave), epoch -1
//     acknowledges, fetches nothing and closes the session, releasing the
//     member's records (as does the close of the connection that opened
//     the session);
//     SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH and
//     SHARE_SESSION_LIMIT_REACHED are top-level errors, answered after
//     max_wait_ms.
//   - Piggybacked acknowledgements are applied and persisted first; their
//     result is the partition's AcknowledgeErrorCode (INVALID_REQUEST for
//     malformed batches, INVALID_RECORD_STATE for records not acquired by
//     the member).
//   - The fetch covers the session's partitions: each share partition's
//     log is read from its next fetch offset up to the high watermark (the
//     last stable offset with share.isolation.level=read_committed, whose
//     aborted transactions are archived), and the records read are
//     acquired for the member for share.record.lock.duration.ms. Fewer
//     than min_bytes acquired parks the request until appends or released
//     records bring more, or max_wait_ms passes. max_bytes is shared evenly
//     by the partitions (the first batch may pass it); max_records bounds
//     the records acquired (whole batches in batch_optimized mode, exactly
//     in record_limit mode); batch_size bounds each AcquiredRecords range.
//   - Per partition: NOT_LEADER_OR_FOLLOWER with CurrentLeader and
//     NodeEndpoints, UNKNOWN_TOPIC_OR_PARTITION, COORDINATOR_NOT_AVAILABLE
//     while the share coordinator cannot be reached, FENCED_STATE_EPOCH.
//   - Quotas: the consumer byte rate caps max_bytes at the quota window's
//     allowance and throttles by the bytes answered (the records stay
//     acquired: the answer carries them with throttle_time_ms), the
//     request quota as every API; the bytes count in BytesOutPerSec.
//   - An incremental session's answer carries only the partitions with
//     records, errors or acknowledgement results; a new session's carries
//     every partition requested.
//
// Version notes: v0 was the 4.0 early-access version, removed in 4.1; v1:
// first stable (KIP-932): max_records, batch_size,
// acquisition_lock_timeout_ms; v2: ShareAcquireMode and renew
// acknowledgements (KIP-1206, KIP-1222; a renew request fetches nothing,
// and its max_bytes, min_bytes, max_records and max_wait_ms must be 0).

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/share"
)

func init() { regKey(78, 1, 2, onBroker, handleShareFetch) }

// sharePart is one partition of a share request as the handler tracks it.
type sharePart struct {
	tp      share.TopicPartition
	topic   string
	code    int16 // authorization / resolution error, 0 if none
	acks    []share.AckBatch
	hasAcks bool
	ackCode int16
	acked   bool
	res     *share.PartResult
	listed  bool // in the request's Topics
}

func shareErrCode(err error) int16 {
	if err == nil {
		return 0
	}
	if ke, ok := err.(*kerr.Error); ok {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

func handleShareFetch(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ShareFetchRequest)
	resp := r.ResponseKind().(*kmsg.ShareFetchResponse)
	if !b.sharesEnabled() {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return protocol.Response{Msg: resp}, nil
	}
	if r.GroupID == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Invalid group id in the request.")
		return protocol.Response{Msg: resp}, nil
	}
	group, member := *r.GroupID, shareStr(r.MemberID)
	if !b.authorize(req, opRead, resGroup, group) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return protocol.Response{Msg: resp}, nil
	}
	if member == "" || len(member) > 36 {
		// KafkaApis.isMemberIdValid: a client-generated Uuid string
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr("Invalid member id in the request.")
		return protocol.Response{Msg: resp}, nil
	}
	if r.IsRenewAck && (r.MaxBytes != 0 || r.MinBytes != 0 || r.MaxRecords != 0 || r.MaxWaitMillis != 0) {
		// a renew request fetches nothing (KIP-1222)
		resp.ErrorCode = kerr.InvalidRequest.Code
		resp.ErrorMessage = kmsg.StringPtr("maxBytes, minBytes, maxRecords and maxWaitMs must be set to 0 if isRenewAck is true.")
		return protocol.Response{Msg: resp}, nil
	}
	if r.Version >= 1 {
		resp.AcquisitionLockTimeoutMillis = int32(min(b.shares.LockMs(group), 1<<31-1))
	}
	img := b.meta.Image()
	var parts []*sharePart
	byTP := map[share.TopicPartition]*sharePart{}
	hasAcks := false
	for _, t := range r.Topics {
		name, code := "", int16(0)
		if tp := img.TopicByID(t.TopicID); tp == nil {
			code = kerr.UnknownTopicID.Code
		} else if name = tp.Name; !b.authorize(req, opRead, resTopic, name) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			tp := share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}
			if _, dup := byTP[tp]; dup {
				continue
			}
			sp := &sharePart{tp: tp, topic: name, code: code, listed: true}
			for _, ab := range p.AcknowledgementBatches {
				sp.acks = append(sp.acks, share.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
			sp.hasAcks = len(p.AcknowledgementBatches) > 0
			hasAcks = hasAcks || sp.hasAcks
			byTP[tp] = sp
			parts = append(parts, sp)
		}
	}
	var forget []share.TopicPartition
	for _, t := range r.ForgottenTopicsData {
		for _, p := range t.Partitions {
			forget = append(forget, share.TopicPartition{TopicID: t.TopicID, Partition: p})
		}
	}
	// Every partition listed joins the session, also one with an error
	// (answered again on each request until the client forgets it) or
	// listed only for its acknowledgements (ShareSession.update).
	add := make([]share.TopicPartition, 0, len(parts))
	for _, sp := range parts {
		add = append(add, sp.tp)
	}

	// The share session (SharePartitionManager.newContext).
	nowMs := b.shareNowMs()
	var session []share.TopicPartition
	var err error
	epoch := r.ShareSessionEpoch
	switch {
	case epoch == share.FinalEpoch:
		// a final request acknowledges and fetches nothing (FinalContext)
		if !b.shares.Sessions.Exists(group, member) {
			err = kerr.ShareSessionNotFound
		}
	case epoch == share.InitialEpoch:
		if hasAcks {
			err = kerr.InvalidRequest
		} else if session, err = b.shares.Sessions.Open(group, member, add, nowMs); err == nil {
			// the session lives as long as this connection
			b.shares.BindSession(ctx, group, member)
		}
	case epoch < 0:
		err = kerr.InvalidShareSessionEpoch
	default:
		session, err = b.shares.Sessions.Update(group, member, epoch, add, forget, nowMs)
	}
	if err != nil {
		// KafkaApis answers a share session error after max_wait_ms
		// (createIdleShareFetchTimerTask), so that a client retrying
		// at once does not spin
		if wait := time.Duration(max(r.MaxWaitMillis, 0)) * time.Millisecond; wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
		}
		resp.ErrorCode = shareErrCode(err)
		return protocol.Response{Msg: resp}, nil
	}

	// Piggybacked acknowledgements, persisted before the fetch.
	b.shareAcknowledge(ctx, group, member, parts, r.IsRenewAck, r.Version)
	if epoch == share.FinalEpoch {
		b.shares.CloseSession(ctx, group, member)
	}

	// The fetch, over the session's partitions.
	if epoch != share.FinalEpoch && !r.IsRenewAck && len(session) > 0 {
		var fps []share.FetchPart
		var fetched []*sharePart
		for _, tp := range session {
			sp := byTP[tp]
			if sp == nil {
				// a session partition not listed: resolved and
				// authorized again (filterByAuthorized)
				sp = &sharePart{tp: tp}
				if t := img.TopicByID(tp.TopicID); t == nil {
					sp.code = kerr.UnknownTopicID.Code
				} else if sp.topic = t.Name; !b.authorize(req, opRead, resTopic, t.Name) {
					sp.code = kerr.TopicAuthorizationFailed.Code
				}
				byTP[tp] = sp
				parts = append(parts, sp)
			}
			if sp.code != 0 {
				continue
			}
			fps = append(fps, share.FetchPart{TopicPartition: tp, Topic: sp.topic})
			fetched = append(fetched, sp)
		}
		maxBytes, minBytes := r.MaxBytes, r.MinBytes
		if b.quotas != nil && b.quotas.fetch.Enabled() {
			// as Fetch: max_bytes is capped at what the consumer's
			// quota window allows (KafkaApis.handleShareFetchRequest)
			if m := b.quotas.fetch.MaxValueInQuotaWindow(req.Principal.Name, req.ClientID); m < float64(maxBytes) {
				maxBytes = int32(max(m, 0))
				minBytes = min(minBytes, maxBytes)
			}
		}
		mode := share.BatchOptimized
		if r.Version >= 2 && r.ShareAcquireMode == int8(share.RecordLimit) {
			mode = share.RecordLimit
		}
		res := b.shares.Fetch(ctx, share.FetchParams{Group: group, Member: member, Parts: fps,
			MaxWait: time.Duration(max(r.MaxWaitMillis, 0)) * time.Millisecond, MinBytes: minBytes,
			MaxBytes: maxBytes, MaxRecords: r.MaxRecords, BatchSize: r.BatchSize, Mode: mode})
		for i := range res {
			fetched[i].res = &res[i]
		}
	}

	// The answer: a new session's lists every partition, an incremental
	// one those with news (ShareSessionContext.updateAndGenerateResponseData).
	full := epoch == share.InitialEpoch
	leaders := map[int32]bool{}
	topicIdx := map[[16]byte]int{}
	for _, sp := range parts {
		rp := kmsg.NewShareFetchResponseTopicPartition()
		rp.Partition = sp.tp.Partition
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		rp.Records = []byte{}
		news := sp.code != 0 || sp.acked
		rp.ErrorCode = sp.code
		if sp.res != nil {
			if sp.res.Err != nil {
				rp.ErrorCode = shareErrCode(sp.res.Err)
			}
			if len(sp.res.Records) > 0 {
				rp.Records = sp.res.Records
			}
			for _, a := range sp.res.Acquired {
				ar := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
				ar.FirstOffset, ar.LastOffset, ar.DeliveryCount = a.First, a.Last, a.Deliveries
				rp.AcquiredRecords = append(rp.AcquiredRecords, ar)
			}
			news = news || rp.ErrorCode != 0 || len(rp.AcquiredRecords) > 0
		}
		if sp.acked {
			rp.AcknowledgeErrorCode = sp.ackCode
		}
		if !news && !(full && sp.listed) {
			continue
		}
		if isLeaderError(rp.ErrorCode) || isLeaderError(rp.AcknowledgeErrorCode) {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.shareLeader(sp.topic, sp.tp.Partition)
			if rp.CurrentLeader.LeaderID >= 0 {
				leaders[rp.CurrentLeader.LeaderID] = true
			}
		}
		i, ok := topicIdx[sp.tp.TopicID]
		if !ok {
			i = len(resp.Topics)
			topicIdx[sp.tp.TopicID] = i
			t := kmsg.NewShareFetchResponseTopic()
			t.TopicID = sp.tp.TopicID
			resp.Topics = append(resp.Topics, t)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	var out int64
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out += int64(len(p.Records))
		}
	}
	b.bytesOut.Add(out)
	if b.quotas != nil && b.quotas.fetch.Enabled() {
		// the records are acquired already, so a throttled answer keeps
		// them and only tells the client to wait
		resp.ThrottleMillis = int32(b.byteThrottle(b.quotas.fetch, req, int(out)))
	}
	for _, ep := range b.leaderEndpoints(req.Listener, shareLeaderIDs(leaders)) {
		ne := kmsg.NewShareFetchResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port, ne.Rack = ep.id, ep.host, ep.port, ep.rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	}
	return protocol.Response{Msg: resp}, nil
}

// shareAcknowledge applies the acknowledgements of parts that carry some
// and sets their ackCode: the request's checks first (INVALID_REQUEST),
// then the share partitions' (persisted before returning).
func (b *Broker) shareAcknowledge(ctx context.Context, group, member string, parts []*sharePart, renew bool, version int16) {
	var aps []share.AckPart
	var idx []*sharePart
	for _, sp := range parts {
		if !sp.hasAcks {
			continue
		}
		sp.acked = true
		switch {
		case sp.code != 0:
			sp.ackCode = sp.code
		case !ackBatchesValid(sp.acks, version, renew):
			sp.ackCode = kerr.InvalidRequest.Code
		default:
			aps = append(aps, share.AckPart{FetchPart: share.FetchPart{TopicPartition: sp.tp, Topic: sp.topic}, Batches: sp.acks})
			idx = append(idx, sp)
		}
	}
	if len(aps) == 0 {
		return
	}
	for i, err := range b.shares.Acknowledge(ctx, group, member, aps, renew) {
		idx[i].ackCode = shareErrCode(err)
	}
}

func shareStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
