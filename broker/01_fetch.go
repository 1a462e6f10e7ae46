package broker

// Fetch: v4-18
//
// Behavior (replication.ReplicaManager.Fetch):
//   - Consumers read up to the high watermark, or the last stable offset
//     with READ_COMMITTED (= the high watermark while there are no
//     transactions); followers (replica id >= 0) up to the log end, which
//     records their fetch offset and moves the high watermark.
//   - Long poll: fewer than min_bytes ready -> the request parks until
//     appends bring enough or max_wait_ms ends (woken by appends, not
//     polled). max_bytes and partition max_bytes bound the answer, except
//     that the first partition with records returns at least one whole
//     batch (KIP-74).
//   - Incremental fetch sessions (KIP-227): FETCH_SESSION_ID_NOT_FOUND,
//     INVALID_FETCH_SESSION_EPOCH, FETCH_SESSION_TOPIC_ID_ERROR; forgotten
//     topics; incremental answers carry only partitions with news.
//   - Per partition: OFFSET_OUT_OF_RANGE, NOT_LEADER_OR_FOLLOWER (with
//     CurrentLeader and NodeEndpoints on v16+), FENCED_LEADER_EPOCH,
//     UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID
//     (v13+), diverging epoch (KIP-320, v12+).
//   - Authorization (authz.go): a follower needs CLUSTER_ACTION (every
//     partition answers TOPIC_AUTHORIZATION_FAILED without it), a consumer
//     READ on each topic (TOPIC_AUTHORIZATION_FAILED before
//     UNKNOWN_TOPIC_OR_PARTITION; an unknown topic id stays UNKNOWN_TOPIC_ID).
//   - Record bytes go from the segment files to the socket without being
//     decoded (replication.FetchResult.Body, sendfile where possible).
//   - Quotas (quotas.go): a consumer's response size counts against its
//     consumer_byte_rate and max_bytes is capped at the quota window's
//     allowance; a throttled fetch answers no partitions with
//     throttle_time_ms (FetchContext.getThrottledResponse). Followers are
//     exempt.
//   - Fetch from follower (KIP-392, v11+): a consumer may fetch from any
//     replica, up to its high watermark; with replica.selector.class=
//     RackAwareReplicaSelector a leader answers a consumer whose rack_id
//     has an in-sync follower (and not the leader) with that follower as
//     preferred_read_replica and no records (replication/preferred.go).
//   - Replication throttles (KIP-73, replication_quotas.go): a follower out
//     of the ISR gets no records for partitions in the topic's
//     leader.replication.throttled.replicas while
//     leader.replication.throttled.rate is exceeded.
//   - This is the client listeners' Fetch; the CONTROLLER listener's (KRaft's)
//     is registered in controller_apis.go.
//
// Version notes:
//   - v4: isolation level, last stable offset, aborted transactions
//   - v5: log start offset; v7: sessions (KIP-227); v9: current leader epoch
//   - v11: rack id, preferred read replica (KIP-392)
//   - v12: flexible; last fetched epoch, diverging epoch, current leader,
//     snapshot id (tagged)
//   - v13: topic ids (KIP-516); v15: replica state replaces replica id
//     (KIP-903); v16: NodeEndpoints (KIP-951); v17: replica directory id
//     (KIP-853); v18: high watermark in the request (KIP-1166)

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/replication"
)

func init() { regKey(1, 4, 18, onBroker, handleFetch) }

func handleFetch(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.FetchRequest)
	consumer := r.ReplicaID < 0 && r.ReplicaState.ID < 0
	quotas := consumer && b.quotas != nil && b.quotas.fetch.Enabled()
	if !consumer {
		skipRequestQuota(ctx) // replication is exempt (sendResponseExemptThrottle)
	}
	if quotas {
		// KafkaApis.handleFetchRequest: max_bytes is capped at what the
		// quota window allows, or the fetch would be throttled for sure.
		if m := b.quotas.fetch.MaxValueInQuotaWindow(req.Principal.Name, req.ClientID); m < float64(r.MaxBytes) {
			r.MaxBytes = int32(m)
			r.MinBytes = min(r.MinBytes, r.MaxBytes)
		}
	}
	var auth *replication.FetchAuth
	if b.authorizing(req) {
		if !consumer {
			auth = &replication.FetchAuth{ClusterAction: b.authorizeCluster(req, opClusterAction)}
		} else {
			auth = &replication.FetchAuth{Topic: func(name string) bool { return b.authorize(req, opRead, resTopic, name) }}
		}
	}
	res := b.replicas.FetchFrom(ctx, r, auth, replication.FetchClient{Listener: req.Listener})
	if r.Version >= 16 {
		var leaders []int32
		for _, t := range res.Resp.Topics {
			for _, p := range t.Partitions {
				if p.CurrentLeader.LeaderID >= 0 {
					leaders = append(leaders, p.CurrentLeader.LeaderID)
				}
			}
		}
		for _, ep := range b.leaderEndpoints(req.Listener, leaders) {
			nb := kmsg.NewFetchResponseBroker()
			nb.NodeID, nb.Host, nb.Port, nb.Rack = ep.id, ep.host, ep.port, ep.rack
			res.Resp.Brokers = append(res.Resp.Brokers, nb)
		}
	}
	// The body is encoded by hand around the segment file regions, which
	// are streamed with sendfile (replication/fetchbody.go).
	body := res.Body()
	if quotas || consumer && b.quotas != nil && b.quotas.request.Enabled() {
		// Both quotas are recorded; if either is violated the answer has
		// no records and the bytes are taken back (unrecordQuotaSensor).
		reqT := b.requestThrottle(ctx, req)
		bwT := b.byteThrottle(b.quotas.fetch, req, int(body.Size()))
		if t := max(reqT, bwT); t > 0 {
			b.quotas.fetch.Unrecord(req.Principal.Name, req.ClientID, float64(body.Size()))
			if reqT >= bwT {
				b.quotas.request.Throttled(req.Principal.Name, req.ClientID, reqT)
			}
			return protocol.Response{Msg: throttledFetch(r, res.Resp, t)}, nil
		}
	}
	// BytesOutPerSec counts consumer fetches only (and not a throttled
	// fetch's, which sends no records): Kafka counts followers' as
	// ReplicationBytesOutPerSec (BrokerTopicStats.updateBytesOut).
	if consumer {
		var out int64
		for _, regs := range res.Records {
			for _, reg := range regs {
				out += reg.Len
			}
		}
		b.bytesOut.Add(out)
	}
	return protocol.Response{Body: body}, nil
}

// throttledFetch is FetchContext.getThrottledResponse: no partitions, the
// throttle time, and the session id of an incremental session (a new
// session is not created).
func throttledFetch(r *kmsg.FetchRequest, full *kmsg.FetchResponse, throttleMs int) *kmsg.FetchResponse {
	resp := r.ResponseKind().(*kmsg.FetchResponse)
	resp.ThrottleMillis = int32(throttleMs)
	resp.ErrorCode = full.ErrorCode
	if r.SessionEpoch > 0 {
		resp.SessionID = full.SessionID
	}
	return resp
}
