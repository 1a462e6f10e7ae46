package raft

// UpdateRaftVoter (82, KIP-853) v0 on the CONTROLLER listener, as Kafka
// 4.4's leader answers it at kraft.version 0 (KafkaRaftClient.
// handleUpdateVoterRequest, then UpdateVoterHandler; KAFKA-16538). A Kafka
// 4.4 voter sends it to every leader it follows, to report its directory id
// and endpoints, and resends it about every second until the leader accepts
// it: a leader that does not list the API makes a Kafka voter log an error
// each time (seen in integration/rolling_test.go).
//
// The checks, in Kafka's order: cluster id (INCONSISTENT_CLUSTER_ID); the
// request's leader epoch against ours (FENCED_LEADER_EPOCH,
// UNKNOWN_LEADER_EPOCH), then leadership (NOT_LEADER_OR_FOLLOWER); a voter
// id with a directory id, the CONTROLLER listener among its endpoints and a
// sane kraft.version range (INVALID_REQUEST); the high watermark known
// (REQUEST_TIMED_OUT); kraft.version 0 within the voter's range
// (INVALID_REQUEST); the voter in the static voter set (VOTER_NOT_FOUND).
// Then the update is accepted. At kraft.version 0, Kafka keeps it in its
// in-memory voter set for a later kraft.version upgrade; kgo-broker supports
// kraft.version 0 only, so there is nothing to keep, and the static voter
// set (controller.quorum.voters) stays as it is.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (n *Node) updateVoter(r *kmsg.UpdateRaftVoterRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.UpdateRaftVoterResponse)
	st := n.Status()
	answer := func(err *kerr.Error) kmsg.Response {
		if err != nil {
			resp.ErrorCode = err.Code
		}
		resp.CurrentLeader.LeaderID, resp.CurrentLeader.LeaderEpoch = st.LeaderID, st.Epoch
		if ep, ok := n.cfg.Voters[st.LeaderID]; ok && st.LeaderID >= 0 {
			resp.CurrentLeader.Host, resp.CurrentLeader.Port = ep.Host, int32(ep.Port)
		}
		return resp
	}
	switch {
	case !n.validClusterID(r.ClusterID):
		return answer(kerr.InconsistentClusterID)
	case r.CurrentLeaderEpoch < st.Epoch:
		return answer(kerr.FencedLeaderEpoch)
	case r.CurrentLeaderEpoch > st.Epoch:
		return answer(kerr.UnknownLeaderEpoch)
	case st.Role != RoleLeader:
		return answer(kerr.NotLeaderForPartition)
	case r.VoterID < 0 || r.VoterDirectoryID == [16]byte{}:
		return answer(kerr.InvalidRequest)
	}
	controller := false
	for _, l := range r.Listeners {
		controller = controller || l.Name == controllerLname
	}
	v := r.KRaftVersionFeature
	switch {
	case !controller:
		return answer(kerr.InvalidRequest)
	case v.MinSupportedVersion < 0 || v.MaxSupportedVersion < 0 || v.MaxSupportedVersion < v.MinSupportedVersion:
		return answer(kerr.InvalidRequest)
	case st.HighWatermark < 0:
		return answer(kerr.RequestTimedOut)
	case v.MinSupportedVersion > 0: // our kraft.version, 0, is out of its range
		return answer(kerr.InvalidRequest)
	}
	if _, ok := n.cfg.Voters[r.VoterID]; !ok {
		return answer(kerr.VoterNotFound)
	}
	return answer(nil)
}
