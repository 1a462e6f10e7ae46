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
	var auth *replication.FetchAuth
	if b.authorizing(req) {
		if r.ReplicaID >= 0 || r.ReplicaState.ID >= 0 {
			auth = &replication.FetchAuth{ClusterAction: b.authorizeCluster(req, opClusterAction)}
		} else {
			auth = &replication.FetchAuth{Topic: func(name string) bool { return b.authorize(req, opRead, resTopic, name) }}
		}
	}
	res := b.replicas.FetchAuthorized(ctx, r, auth)
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
	// BytesOutPerSec counts consumer fetches only: Kafka counts followers'
	// as ReplicationBytesOutPerSec (BrokerTopicStats.updateBytesOut).
	if r.ReplicaID < 0 && r.ReplicaState.ID < 0 {
		var out int64
		for _, regs := range res.Records {
			for _, reg := range regs {
				out += reg.Len
			}
		}
		b.bytesOut.Add(out)
	}
	// The body is encoded by hand around the segment file regions, which
	// are streamed with sendfile (replication/fetchbody.go).
	return protocol.Response{Body: res.Body()}, nil
}
