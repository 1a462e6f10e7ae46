package broker

// ShareAcknowledge: v1-2 (client listeners)
//
// Behavior (KafkaApis.handleShareAcknowledgeRequest,
// SharePartitionManager.acknowledge; package share):
//   - Served once share.version >= 1 is finalized; before, a top-level
//     UNSUPPORTED_VERSION and no topics.
//   - Authorization: GROUP READ on the group (top-level
//     GROUP_AUTHORIZATION_FAILED), TOPIC READ on each topic (the
//     partition's TOPIC_AUTHORIZATION_FAILED); an unknown topic id is
//     UNKNOWN_TOPIC_ID; a null group id or an empty or over-long member id
//     INVALID_REQUEST.
//   - The share session's epoch (acknowledgeSessionUpdate): 0 is
//     INVALID_SHARE_SESSION_EPOCH (an acknowledgement never opens a
//     session), no session SHARE_SESSION_NOT_FOUND, another epoch
//     INVALID_SHARE_SESSION_EPOCH; -1 acknowledges and then closes the
//     session, releasing the member's other acquired records.
//   - Each partition's batches are checked (INVALID_REQUEST: offsets out
//     of order or overlapping, a type count that is neither 1 nor one per
//     offset, unknown types) and applied all or nothing: accept, release,
//     reject, gap, renew (v2, IsRenewAck); INVALID_RECORD_STATE for records
//     the member has not acquired. The new states are written to the share
//     coordinator before the answer; a failed write undoes them and answers
//     its error (COORDINATOR_NOT_AVAILABLE, FENCED_STATE_EPOCH, ...).
//   - NOT_LEADER_OR_FOLLOWER carries CurrentLeader and NodeEndpoints.
//
// Version notes: v0 was the 4.0 early-access version, removed in 4.1; v1:
// first stable (KIP-932); v2: renew acknowledgements and
// acquisition_lock_timeout_ms (KIP-1222).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/share"
)

func init() { regKey(79, 1, 2, onBroker, handleShareAcknowledge) }

func handleShareAcknowledge(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ShareAcknowledgeRequest)
	resp := r.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
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
	if err := b.shares.Sessions.Acknowledge(group, member, r.ShareSessionEpoch, b.shareNowMs()); err != nil {
		// A session error answers no lock timeout (0), as Kafka's
		// ShareAcknowledgeResponse.of an error does.
		resp.ErrorCode = shareErrCode(err)
		return protocol.Response{Msg: resp}, nil
	}
	if r.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = int32(min(b.shares.LockMs(group), 1<<31-1))
	}
	img := b.meta.Image()
	var parts []*sharePart
	seen := map[share.TopicPartition]bool{}
	for _, t := range r.Topics {
		name, code := "", int16(0)
		if tp := img.TopicByID(t.TopicID); tp == nil {
			code = kerr.UnknownTopicID.Code
		} else if name = tp.Name; !b.authorize(req, opRead, resTopic, name) {
			code = kerr.TopicAuthorizationFailed.Code
		}
		for _, p := range t.Partitions {
			tp := share.TopicPartition{TopicID: t.TopicID, Partition: p.Partition}
			if seen[tp] {
				continue
			}
			seen[tp] = true
			sp := &sharePart{tp: tp, topic: name, code: code, hasAcks: true, listed: true}
			for _, ab := range p.AcknowledgementBatches {
				sp.acks = append(sp.acks, share.AckBatch{First: ab.FirstOffset, Last: ab.LastOffset, Types: ab.AcknowledgeTypes})
			}
			if len(sp.acks) == 0 && sp.code == 0 {
				sp.code = kerr.InvalidRequest.Code // nothing to acknowledge
			}
			parts = append(parts, sp)
		}
	}
	b.shareAcknowledge(ctx, group, member, parts, r.IsRenewAck, r.Version)
	if r.ShareSessionEpoch == share.FinalEpoch {
		b.shares.CloseSession(ctx, group, member)
	}
	leaders := map[int32]bool{}
	topicIdx := map[[16]byte]int{}
	for _, sp := range parts {
		rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
		rp.Partition = sp.tp.Partition
		rp.ErrorCode = sp.ackCode
		rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
		if isLeaderError(rp.ErrorCode) {
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = b.shareLeader(sp.topic, sp.tp.Partition)
			if rp.CurrentLeader.LeaderID >= 0 {
				leaders[rp.CurrentLeader.LeaderID] = true
			}
		}
		i, ok := topicIdx[sp.tp.TopicID]
		if !ok {
			i = len(resp.Topics)
			topicIdx[sp.tp.TopicID] = i
			t := kmsg.NewShareAcknowledgeResponseTopic()
			t.TopicID = sp.tp.TopicID
			resp.Topics = append(resp.Topics, t)
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	for _, ep := range b.leaderEndpoints(req.Listener, shareLeaderIDs(leaders)) {
		ne := kmsg.NewShareAcknowledgeResponseNodeEndpoint()
		ne.NodeID, ne.Host, ne.Port, ne.Rack = ep.id, ep.host, ep.port, ep.rack
		resp.NodeEndpoints = append(resp.NodeEndpoints, ne)
	}
	return protocol.Response{Msg: resp}, nil
}
