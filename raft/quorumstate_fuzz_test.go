package raft

import (
	"testing"
)

// FuzzDecodeQuorumState: the quorum-state file read at start never panics the
// decoder; what it accepts re-encodes to the same hard state.
func FuzzDecodeQuorumState(f *testing.F) {
	f.Add(EncodeQuorumState(HardState{LeaderEpoch: 2, LeaderID: 1, VotedID: NoLeader}, []int32{3, 1, 2}))
	f.Add(EncodeQuorumState(HardState{LeaderEpoch: 0, LeaderID: NoLeader, VotedID: NoLeader}, nil))
	f.Add(EncodeQuorumState(HardState{LeaderEpoch: 1<<31 - 1, LeaderID: 7, VotedID: 7}, []int32{7}))
	// a data_version 1 file as Kafka writes it for kraft.version 1
	f.Add([]byte(`{"clusterId":"","leaderId":1,"leaderEpoch":5,"votedId":-1,"appliedOffset":0,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`))
	f.Add([]byte(`{"data_version":0}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, b []byte) {
		hs, err := DecodeQuorumState(b)
		if err != nil {
			return
		}
		again, err := DecodeQuorumState(EncodeQuorumState(hs, []int32{1, 2, 3}))
		if err != nil || again != hs {
			t.Fatalf("round trip %+v: %+v %v", hs, again, err)
		}
	})
}
