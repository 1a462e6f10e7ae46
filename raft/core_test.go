package raft

import (
	"errors"
	"testing"
)

func newTestCore(t *testing.T, id int32, voters []int32, hs HardState, epochs []EpochStart, logEnd int64) *Core {
	t.Helper()
	c, err := NewCore(CoreConfig{ID: id, Voters: voters, State: hs, Epochs: epochs, LogEnd: logEnd})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCoreRestore(t *testing.T) {
	three := []int32{1, 2, 3}
	// a leader comes back resigned in its epoch
	c := newTestCore(t, 1, three, HardState{LeaderEpoch: 4, LeaderID: 1, VotedID: 1}, []EpochStart{{4, 0}}, 1)
	if c.Role() != RoleResigned || c.Epoch() != 4 || c.LeaderAndEpoch().LeaderID != NoLeader {
		t.Fatalf("%+v", c.Status())
	}
	// a candidate campaigns again in the same epoch, without voting twice
	c = newTestCore(t, 2, three, HardState{LeaderEpoch: 5, LeaderID: -1, VotedID: 2}, nil, 0)
	rd := c.Ready()
	if c.Role() != RoleCandidate || c.Epoch() != 5 || len(rd.Messages) != 2 || rd.Messages[0].Epoch != 5 || rd.Messages[0].PreVote {
		t.Fatalf("%+v %v", c.Status(), rd.Messages)
	}
	// a follower fetches from its leader at once
	c = newTestCore(t, 3, three, HardState{LeaderEpoch: 5, LeaderID: 1, VotedID: -1}, []EpochStart{{2, 0}, {5, 7}}, 9)
	rd = c.Ready()
	if c.Role() != RoleFollower || len(rd.Messages) != 1 || rd.Messages[0].Type != MsgFetch ||
		rd.Messages[0].LastOffset != 9 || rd.Messages[0].LastEpoch != 5 {
		t.Fatalf("%+v %v", c.Status(), rd.Messages)
	}
	// a quorum-state older than the log: unattached in the log's epoch
	c = newTestCore(t, 3, three, HardState{LeaderID: -1, VotedID: -1}, []EpochStart{{3, 0}}, 2)
	rd = c.Ready()
	if c.Role() != RoleUnattached || c.Epoch() != 3 || rd.HardState == nil || rd.HardState.LeaderEpoch != 3 {
		t.Fatalf("%+v %+v", c.Status(), rd.HardState)
	}
	// a sole voter elects itself: epoch+1, LeaderChange, committed after flush
	c = newTestCore(t, 1, []int32{1}, HardState{LeaderEpoch: 2, LeaderID: -1, VotedID: -1}, nil, 0)
	rd = c.Ready()
	if c.Role() != RoleLeader || c.Epoch() != 3 || len(rd.Entries) != 1 || !rd.Entries[0].Control || c.HighWatermark() != -1 {
		t.Fatalf("%+v %+v", c.Status(), rd)
	}
	if err := c.Advance(rd); err != nil || c.HighWatermark() != 1 {
		t.Fatalf("hw %d %v", c.HighWatermark(), err)
	}
}

func TestCoreObserverDiscovers(t *testing.T) {
	c := newTestCore(t, -1, []int32{1, 2, 3}, HardState{LeaderID: -1, VotedID: -1}, nil, 0)
	if err := c.Tick(1); err != nil {
		t.Fatal(err)
	}
	rd := c.Ready()
	if len(rd.Messages) != 1 || rd.Messages[0].Type != MsgFetch || rd.Messages[0].From != -1 {
		t.Fatalf("%v", rd.Messages)
	}
	c.Advance(rd)
	f := rd.Messages[0]
	// a non-leader voter names the leader
	if err := c.Step(Message{Type: MsgFetchResp, From: f.To, To: -1, ID: f.ID, Epoch: 4, LeaderID: 2,
		Error: errNotLeaderOrFollower, HighWatermark: -1, ReadFrom: -1}); err != nil {
		t.Fatal(err)
	}
	rd = c.Ready()
	if c.Role() != RoleFollower || c.LeaderAndEpoch() != (LeaderAndEpoch{2, 4}) || len(rd.Messages) != 1 || rd.Messages[0].To != 2 {
		t.Fatalf("%+v %v", c.Status(), rd.Messages)
	}
	// observers never vote
	c.Advance(rd)
	c.Step(Message{Type: MsgVote, From: 3, To: -1, ID: 9, Epoch: 5, LastEpoch: 9, LastOffset: 100})
	rd = c.Ready()
	if len(rd.Messages) != 1 || rd.Messages[0].Granted || c.Epoch() != 4 {
		t.Fatalf("%v", rd.Messages)
	}
}

func TestCoreInvariantErrors(t *testing.T) {
	if invariantsEnabled {
		t.Skip("violations panic under -tags invariants")
	}
	// a leader told of another leader in its own epoch
	c := newTestCore(t, 1, []int32{1}, HardState{LeaderID: -1, VotedID: -1}, nil, 0)
	c.Advance(c.Ready())
	c.voters = []int32{1, 2, 3} // pretend it won a 3-voter election
	err := c.Step(Message{Type: MsgBeginQuorumEpoch, From: 2, To: 1, ID: 1, Epoch: c.Epoch(), LeaderID: 2})
	if !errors.Is(err, ErrInvariant) {
		t.Fatalf("two leaders: %v", err)
	}
	// truncating below the high watermark
	c = newTestCore(t, 1, []int32{1}, HardState{LeaderID: -1, VotedID: -1}, nil, 0)
	c.Advance(c.Ready())
	c.truncate(0)
	if err := c.takeErr(); !errors.Is(err, ErrInvariant) {
		t.Fatalf("truncate below hw: %v", err)
	}
}

func TestEpochCacheEndOffsetFor(t *testing.T) {
	c := epochCache{{1, 0}, {3, 5}, {6, 9}}
	for _, tc := range []struct {
		epoch int32
		want  OffsetAndEpoch
	}{
		{6, OffsetAndEpoch{12, 6}},
		{5, OffsetAndEpoch{9, 3}},
		{3, OffsetAndEpoch{9, 3}},
		{2, OffsetAndEpoch{5, 1}},
		{0, OffsetAndEpoch{0, 0}},
		{7, OffsetAndEpoch{12, 6}},
	} {
		if got := c.endOffsetFor(tc.epoch, 12); got != tc.want {
			t.Errorf("endOffsetFor(%d) = %+v, want %+v", tc.epoch, got, tc.want)
		}
	}
}
