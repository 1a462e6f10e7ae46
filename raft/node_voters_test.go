package raft

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func describeQuorum(t *testing.T, n *Node) kmsg.DescribeQuorumResponse {
	t.Helper()
	resp, err := n.HandleRequest(context.Background(), &kmsg.DescribeQuorumRequest{Version: 2, Topics: []kmsg.DescribeQuorumRequestTopic{{
		Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return *resp.(*kmsg.DescribeQuorumResponse)
}

// addVoter sends AddRaftVoter v1 for node id to n until it is not
// REQUEST_TIMED_OUT (the new voter may still be catching up).
func addVoter(t *testing.T, n *Node, id int32) *kmsg.AddRaftVoterResponse {
	t.Helper()
	v := testVoter(id)
	for i := 0; ; i++ {
		r := kmsg.NewPtrAddRaftVoterRequest()
		r.Version = 1
		r.VoterID, r.VoterDirectoryID, r.TimeoutMillis, r.AckWhenCommitted = id, v.Key.DirectoryID, 30000, true
		for _, e := range v.Endpoints {
			l := kmsg.NewAddRaftVoterRequestListener()
			l.Name, l.Host, l.Port = e.Name, e.Host, e.Port
			r.Listeners = append(r.Listeners, l)
		}
		resp, err := n.HandleRequest(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		ar := resp.(*kmsg.AddRaftVoterResponse)
		if ar.ErrorCode != kerr.RequestTimedOut.Code || i > 50 {
			return ar
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func removeVoter(t *testing.T, n *Node, id int32, dir [16]byte) *kmsg.RemoveRaftVoterResponse {
	t.Helper()
	r := kmsg.NewPtrRemoveRaftVoterRequest()
	r.VoterID, r.VoterDirectoryID = id, dir
	resp, err := n.HandleRequest(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.RemoveRaftVoterResponse)
}

// TestNodeDynamicQuorum runs Nodes over the wire encoding: node 1 formatted
// --standalone, 2 and 3 without voters (--no-initial-controllers) find it
// through the bootstrap servers; AddRaftVoter adds them (the leader asks
// each its kraft.version range with ApiVersions), DescribeQuorum shows the
// directory ids and endpoints, 1 removes itself and 2 or 3 takes over; a
// restart restores the voter set from the log and from a snapshot, and the
// quorum-state file is data_version 1.
func TestNodeDynamicQuorum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newTestCluster(t, 1, 2, 3)
		c.dynamic = true
		defer c.closeAll()
		c.bootstrap(1, 1)
		for id := int32(1); id <= 3; id++ {
			c.start(id)
		}
		l := c.leader()
		if l.cfg.NodeID != 1 || l.KRaftVersion() != 1 {
			t.Fatalf("leader %d kraft.version %d", l.cfg.NodeID, l.KRaftVersion())
		}
		if _, err := l.Append(ctx, records("a")); err != nil {
			t.Fatal(err)
		}
		waitValues(t, c.lst[3], []string{"a"})

		// errors as Kafka answers them
		if r := addVoter(t, c.nodes[2], 3); r.ErrorCode != kerr.NotLeaderForPartition.Code {
			t.Fatalf("add on a follower: %+v", r)
		}
		noDir := kmsg.NewPtrAddRaftVoterRequest()
		noDir.VoterID = 3
		resp, _ := l.HandleRequest(ctx, noDir)
		if r := resp.(*kmsg.AddRaftVoterResponse); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil ||
			*r.ErrorMessage != "Add voter request didn't include a valid voter" {
			t.Fatalf("add without a directory id: %+v", r)
		}
		if r := removeVoter(t, l, 1, [16]byte{9}); r.ErrorCode != kerr.VoterNotFound.Code {
			t.Fatalf("remove of an unknown key: %+v", r)
		}

		for _, id := range []int32{2, 3} {
			if r := addVoter(t, l, id); r.ErrorCode != 0 || r.ErrorMessage == nil || *r.ErrorMessage != "NONE" {
				t.Fatalf("add voter %d: %+v %v", id, r, r.ErrorMessage)
			}
		}
		if r := addVoter(t, l, 2); r.ErrorCode != kerr.DuplicateVoter.Code || !strings.Contains(*r.ErrorMessage, "is already part of the set of voters") {
			t.Fatalf("add twice: %+v", r)
		}
		dq := describeQuorum(t, l)
		p := dq.Topics[0].Partitions[0]
		if len(p.CurrentVoters) != 3 || len(dq.Nodes) != 3 {
			t.Fatalf("describe quorum %+v nodes %+v", p, dq.Nodes)
		}
		for i, v := range p.CurrentVoters {
			id := int32(i + 1)
			if v.ReplicaID != id || v.ReplicaDirectoryID != testDir(id) {
				t.Errorf("voter %+v, want %d with its directory id", v, id)
			}
			if nd := dq.Nodes[i]; nd.NodeID != id || len(nd.Listeners) != 1 || nd.Listeners[0].Port != uint16(9000+id) {
				t.Errorf("node %+v", nd)
			}
		}
		// The add commits on a majority of the new set (1 and 3); 2 learns
		// the set at its next fetch.
		for id := int32(1); id <= 3; id++ {
			for i := 0; c.nodes[id].Voters().Len() != 3; i++ {
				if i == 500 {
					t.Fatalf("node %d voters %v", id, c.nodes[id].Voters())
				}
				time.Sleep(10 * time.Millisecond)
			}
		}

		// The leader removes itself: it resigns once that commits.
		if r := removeVoter(t, l, 1, testDir(1)); r.ErrorCode != 0 {
			t.Fatalf("remove 1: %+v", r)
		}
		var nl *Node
		for i := 0; i < 500; i++ {
			if le := c.nodes[2].LeaderAndEpoch(); le.LeaderID == 2 || le.LeaderID == 3 {
				nl = c.nodes[le.LeaderID]
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if nl == nil {
			t.Fatalf("no new leader: %+v", c.nodes[2].Status())
		}
		if _, err := nl.Append(ctx, records("b")); err != nil {
			t.Fatal(err)
		}
		// written in the new epoch at kraft.version 1 (FileQuorumStateStore v1)
		b, err := vfs.ReadFile(c.fs[nl.cfg.NodeID], partitionDir("/meta")+"/"+QuorumStateFile)
		if err != nil || !strings.Contains(string(b), `"data_version":1`) || !strings.Contains(string(b), "votedDirectoryId") {
			t.Fatalf("quorum-state of %d: %s %v", nl.cfg.NodeID, b, err)
		}
		waitValues(t, c.lst[1], []string{"a", "b"})
		if st := c.nodes[1].Status(); st.Role != RoleFollower || c.nodes[1].Voters().HasID(1) {
			t.Fatalf("removed node %+v", st)
		}

		// Restart 3: the voter set comes back from the log.
		c.stop(3)
		c.start(3)
		if vs := c.nodes[3].Voters(); vs.Len() != 2 || !vs.IsVoter(testVoter(2).Key) || !vs.IsVoter(testVoter(3).Key) {
			t.Fatalf("restarted 3: voters %v", vs)
		}
		waitValues(t, c.lst[3], []string{"a", "b"})

		// A snapshot carries the voter set in effect at its end.
		n3 := c.nodes[3]
		hw := n3.HighWatermark()
		id, err := n3.CreateSnapshot(SnapshotImage{EndOffset: hw, Epoch: n3.LeaderAndEpoch().Epoch,
			Records: func() [][]byte { return records("state") }})
		if err != nil {
			t.Fatal(err)
		}
		n3.mu.Lock()
		ctl, err := n3.snaps.control(id)
		n3.mu.Unlock()
		if err != nil || ctl.KRaftVersion != 1 || ctl.Voters == nil || ctl.Voters.Len() != 2 || ctl.Voters.HasID(1) {
			t.Fatalf("snapshot %v control %+v %v", id, ctl, err)
		}
	})
}

// TestSnapshotControlRecords: a snapshot of a kraft.version 1 log carries
// the KRaftVersionRecord and VotersRecord in its header batch, as
// RecordsSnapshotWriter writes it, and they decode back.
func TestSnapshotControlRecords(t *testing.T) {
	vs, _ := NewVoterSet(testVoter(1), testVoter(2))
	b := EncodeSnapshotControl(OffsetAndEpoch{Offset: 10, Epoch: 2}, 5, 6, SnapshotControl{KRaftVersion: 1, Voters: &vs}, records("x", "y"))
	sr, err := DecodeSnapshot(OffsetAndEpoch{Offset: 10, Epoch: 2}, b)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Control.KRaftVersion != 1 || sr.Control.Voters == nil || !sr.Control.Voters.Equal(vs) || len(sr.Records()) != 2 {
		t.Fatalf("%+v", sr)
	}
	if sr.Batches[0].BaseOffset != 3 {
		t.Fatalf("data from offset %d, want 3 (after header, KRaftVersion, Voters)", sr.Batches[0].BaseOffset)
	}
	ctl, err := decodeSnapshotControl(b)
	if err != nil || ctl.KRaftVersion != 1 || !ctl.Voters.Equal(vs) {
		t.Fatalf("%+v %v", ctl, err)
	}
	// kraft.version 0: no control records
	b = EncodeSnapshot(OffsetAndEpoch{Offset: 10, Epoch: 2}, 5, 6, records("x"))
	if ctl, err := decodeSnapshotControl(b); err != nil || ctl.KRaftVersion != 0 || ctl.Voters != nil {
		t.Fatalf("%+v %v", ctl, err)
	}
}
