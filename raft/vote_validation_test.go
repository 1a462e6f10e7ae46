package raft

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// TestVoteValidation: the error codes of KafkaRaftClient.handleVoteRequest,
// in its order: argument ranges (INVALID_REQUEST), a stale epoch
// (FENCED_LEADER_EPOCH), a negative candidate id (INVALID_REQUEST), then a
// request naming another receiver (INVALID_VOTER_KEY: VoterId, or this id
// with another directory id); all partition-level, none granted, none
// moving this node's epoch. (Kafka 4.4 checks no membership: a replica
// outside the voter set may ask, as a voter just added does.)
func TestVoteValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		n, err := NewNode(singleVoterConfig(vfs.NewMem(), "/meta"))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		epoch := n.LeaderAndEpoch().Epoch // 1: the sole voter elected itself
		vote := func(candEpoch, cand, lastEpoch int32, lastOffset int64, pre bool) *kmsg.VoteRequest {
			r := kmsg.NewPtrVoteRequest()
			r.Version = 2
			cid := "cluster"
			r.ClusterID = &cid
			tp := kmsg.NewVoteRequestTopic()
			tp.Topic = MetadataTopic
			p := kmsg.NewVoteRequestTopicPartition()
			p.CandidateEpoch, p.CandidateID, p.LastOffsetEpoch, p.LastOffset, p.PreVote = candEpoch, cand, lastEpoch, lastOffset, pre
			tp.Partitions = append(tp.Partitions, p)
			r.Topics = append(r.Topics, tp)
			return r
		}
		toVoter := func(r *kmsg.VoteRequest, id int32, dir [16]byte) *kmsg.VoteRequest {
			r.VoterID = id
			r.Topics[0].Partitions[0].VoterDirectoryID = dir
			return r
		}
		for _, c := range []struct {
			name string
			req  *kmsg.VoteRequest
			want int16
		}{
			{"negative last offset", vote(epoch+1, 2, 0, -1, false), kerr.InvalidRequest.Code},
			{"negative last epoch", vote(epoch+1, 2, -1, 0, false), kerr.InvalidRequest.Code},
			{"vote: last epoch = candidate epoch", vote(epoch+1, 2, epoch+1, 0, false), kerr.InvalidRequest.Code},
			{"pre-vote: last epoch > replica epoch", vote(epoch+1, 2, epoch+2, 0, true), kerr.InvalidRequest.Code},
			// At epoch 1 only a pre-vote can be stale yet well-formed.
			{"stale pre-vote", vote(epoch-1, 2, 0, 0, true), kerr.FencedLeaderEpoch.Code},
			{"negative candidate", vote(epoch+1, -3, 0, 0, false), kerr.InvalidRequest.Code},
			{"another voter id", toVoter(vote(epoch, 2, 0, 100, false), 5, [16]byte{}), kerr.InvalidVoterKey.Code},
			{"pre-vote: another voter id", toVoter(vote(epoch, 2, 0, 100, true), 5, [16]byte{}), kerr.InvalidVoterKey.Code},
			{"another directory id", toVoter(vote(epoch, 2, 0, 100, false), 1, [16]byte{1}), kerr.InvalidVoterKey.Code},
		} {
			resp, err := n.HandleRequest(ctx, c.req)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			vr := resp.(*kmsg.VoteResponse)
			if vr.ErrorCode != 0 || len(vr.Topics) != 1 || len(vr.Topics[0].Partitions) != 1 {
				t.Errorf("%s: top-level error %d, %d topics", c.name, vr.ErrorCode, len(vr.Topics))
				continue
			}
			p := vr.Topics[0].Partitions[0]
			if p.ErrorCode != c.want || p.VoteGranted || p.LeaderEpoch != epoch || p.LeaderID != 1 {
				t.Errorf("%s: %+v, want error %d, not granted, leader 1 epoch %d", c.name, p, c.want, epoch)
			}
		}
		if le := n.LeaderAndEpoch(); le.Epoch != epoch || le.LeaderID != 1 {
			t.Errorf("after bad votes: leader %d epoch %d, want 1, %d", le.LeaderID, le.Epoch, epoch)
		}
	})
}
