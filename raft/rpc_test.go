package raft

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

func fetchReq(replica, epoch int32, offset int64, lastEpoch int32, maxWait int32) *kmsg.FetchRequest {
	r := kmsg.NewPtrFetchRequest()
	r.Version = 17
	cid := "cluster"
	r.ClusterID = &cid
	r.ReplicaState.ID = replica
	r.MaxWaitMillis = maxWait
	t := kmsg.NewFetchRequestTopic()
	t.TopicID = MetadataTopicID
	p := kmsg.NewFetchRequestTopicPartition()
	p.CurrentLeaderEpoch, p.FetchOffset, p.LastFetchedEpoch = epoch, offset, lastEpoch
	t.Partitions = append(t.Partitions, p)
	r.Topics = append(r.Topics, t)
	return r
}

func TestHandleRequestValidation(t *testing.T) {
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
		if _, err := n.Append(ctx, records("a", "b")); err != nil { // offsets 1-2
			t.Fatal(err)
		}
		fetch := func(r *kmsg.FetchRequest) (*kmsg.FetchResponse, kmsg.FetchResponseTopicPartition) {
			t.Helper()
			resp, err := n.HandleRequest(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			fr := resp.(*kmsg.FetchResponse)
			if len(fr.Topics) == 1 && len(fr.Topics[0].Partitions) == 1 {
				return fr, fr.Topics[0].Partitions[0]
			}
			return fr, kmsg.FetchResponseTopicPartition{}
		}

		bad := fetchReq(-1, 1, 0, 0, 0)
		other := "other"
		bad.ClusterID = &other
		if fr, _ := fetch(bad); fr.ErrorCode != kerr.InconsistentClusterID.Code {
			t.Errorf("cluster id: %d", fr.ErrorCode)
		}
		bad = fetchReq(-1, 1, 0, 0, 0)
		bad.Topics[0].TopicID = [16]byte{1}
		if fr, _ := fetch(bad); fr.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("topic id: %d", fr.ErrorCode)
		}
		// Argument ranges: a partition-level INVALID_REQUEST, as
		// KafkaRaftClient.handleFetchRequest's buildEmptyFetchResponse.
		if fr, p := fetch(fetchReq(-1, 1, 0, 2, 0)); fr.ErrorCode != 0 || p.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("last fetched epoch > epoch: top-level %d, partition %d", fr.ErrorCode, p.ErrorCode)
		}
		if fr, p := fetch(fetchReq(-1, 1, -1, 0, 0)); fr.ErrorCode != 0 || p.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("negative offset: top-level %d, partition %d", fr.ErrorCode, p.ErrorCode)
		}
		if _, p := fetch(fetchReq(-1, 0, 0, 0, 0)); p.ErrorCode != kerr.FencedLeaderEpoch.Code ||
			p.CurrentLeader.LeaderID != 1 || p.CurrentLeader.LeaderEpoch != 1 {
			t.Errorf("fenced: %+v", p)
		}
		if _, p := fetch(fetchReq(-1, 5, 0, 0, 0)); p.ErrorCode != kerr.UnknownLeaderEpoch.Code {
			t.Errorf("unknown epoch: %+v", p)
		}
		// an anonymous observer reads everything
		_, p := fetch(fetchReq(-1, 1, 0, 0, 0))
		es, err := entriesFromBatches(p.RecordBatches)
		if p.ErrorCode != 0 || p.HighWatermark != 3 || err != nil || len(es) != 2 || !es[0].Control || es[1].LastOffset != 2 {
			t.Errorf("observer fetch: %+v %v %+v", p, err, es)
		}
		// diverging: epoch 1 ends at 3 on the leader
		if _, p := fetch(fetchReq(7, 1, 10, 1, 0)); p.DivergingEpoch.Epoch != 1 || p.DivergingEpoch.EndOffset != 3 {
			t.Errorf("diverging: %+v", p.DivergingEpoch)
		}
		// long poll at the log end: parked until MaxWait
		start := time.Now()
		if _, p := fetch(fetchReq(7, 1, 3, 1, 500)); p.ErrorCode != 0 || len(p.RecordBatches) != 0 || time.Since(start) < 500*time.Millisecond {
			t.Errorf("long poll: %+v after %v", p, time.Since(start))
		}
		// a parked fetch completes on append
		done := make(chan kmsg.FetchResponseTopicPartition)
		go func() { _, p := fetch(fetchReq(7, 1, 3, 1, 5000)); done <- p }()
		synctest.Wait()
		if _, err := n.Append(ctx, records("c")); err != nil {
			t.Fatal(err)
		}
		if p := <-done; len(p.RecordBatches) == 0 {
			t.Errorf("parked fetch returned nothing: %+v", p)
		}
		// replica 7 is an observer in DescribeQuorum
		resp, _ := n.HandleRequest(ctx, &kmsg.DescribeQuorumRequest{Version: 1, Topics: []kmsg.DescribeQuorumRequestTopic{{
			Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
		dp := resp.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0]
		if len(dp.Observers) != 1 || dp.Observers[0].ReplicaID != 7 || dp.Observers[0].LogEndOffset != 3 {
			t.Errorf("observers %+v", dp.Observers)
		}
		resp, _ = n.HandleRequest(ctx, &kmsg.DescribeQuorumRequest{Topics: []kmsg.DescribeQuorumRequestTopic{{
			Topic: "foo", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
		if p := resp.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0]; p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Errorf("describe foo: %d", p.ErrorCode)
		}

		// Vote / BeginQuorumEpoch / EndQuorumEpoch
		vote := kmsg.NewPtrVoteRequest()
		vote.ClusterID = &other
		vote.Topics = []kmsg.VoteRequestTopic{{Topic: MetadataTopic, Partitions: []kmsg.VoteRequestTopicPartition{{CandidateEpoch: 2, CandidateID: 2}}}}
		resp, _ = n.HandleRequest(ctx, vote)
		if vr := resp.(*kmsg.VoteResponse); vr.ErrorCode != kerr.InconsistentClusterID.Code {
			t.Errorf("vote cluster id: %d", vr.ErrorCode)
		}
		cid := "cluster"
		vote.ClusterID = &cid
		vote.Topics[0].Topic = "x"
		resp, _ = n.HandleRequest(ctx, vote)
		if vr := resp.(*kmsg.VoteResponse); vr.ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("vote topic: %d", vr.ErrorCode)
		}
		vote.Topics[0].Topic = MetadataTopic
		vote.Version, vote.VoterID = 1, 9 // meant for another voter
		vote.Topics[0].Partitions[0].CandidateEpoch = 1
		resp, _ = n.HandleRequest(ctx, vote)
		if vp := resp.(*kmsg.VoteResponse).Topics[0].Partitions[0]; vp.ErrorCode != kerr.InvalidVoterKey.Code || vp.VoteGranted {
			t.Errorf("vote for another voter: %+v", vp)
		}
		bqe := kmsg.NewPtrBeginQuorumEpochRequest()
		bqe.ClusterID = &cid
		bqe.Topics = []kmsg.BeginQuorumEpochRequestTopic{{Topic: MetadataTopic, Partitions: []kmsg.BeginQuorumEpochRequestTopicPartition{{LeaderID: 1, LeaderEpoch: 0}}}}
		resp, _ = n.HandleRequest(ctx, bqe)
		if bp := resp.(*kmsg.BeginQuorumEpochResponse).Topics[0].Partitions[0]; bp.ErrorCode != kerr.FencedLeaderEpoch.Code || bp.LeaderEpoch != 1 {
			t.Errorf("stale BeginQuorumEpoch: %+v", bp)
		}
		if le := n.LeaderAndEpoch(); le != (LeaderAndEpoch{LeaderID: 1, Epoch: 1}) {
			t.Errorf("leader changed: %+v", le)
		}
	})
}

func TestBatchCodecMatchesKmsg(t *testing.T) {
	b := EncodeEntry(Entry{Offset: 5, Epoch: 3, AppendTimeMs: 1234, Records: records("x", "yy")})
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.FirstOffset != 5 || rb.PartitionLeaderEpoch != 3 || rb.Magic != 2 || rb.ProducerID != -1 || rb.ProducerEpoch != -1 ||
		rb.FirstSequence != -1 || rb.NumRecords != 2 || rb.LastOffsetDelta != 1 || rb.FirstTimestamp != 1234 || rb.MaxTimestamp != 1234 {
		t.Fatalf("%+v", rb)
	}
	es, err := entriesFromBatches(append(b, EncodeEntry(Entry{Offset: 7, Epoch: 3, Control: true, ControlType: ControlLeaderChange, Records: records("lc")})...))
	if err != nil || len(es) != 2 || es[0].LastOffset != 6 || !es[1].Control {
		t.Fatalf("%+v %v", es, err)
	}
	var got []string
	err = decodeBatches(b, func(bt Batch, control bool) error {
		for _, r := range bt.Records {
			got = append(got, string(r))
		}
		return nil
	})
	if err != nil || len(got) != 2 || got[1] != "yy" {
		t.Fatalf("%v %v", got, err)
	}
	b[len(b)-1] ^= 1
	if _, err := entriesFromBatches(b); err == nil {
		t.Fatal("corrupt batch accepted")
	}
}

func TestQuorumStateFile(t *testing.T) {
	got := string(EncodeQuorumState(HardState{LeaderEpoch: 2, LeaderID: 1, VotedID: -1}, []int32{3, 1, 2}))
	want := `{"clusterId":"","leaderId":1,"leaderEpoch":2,"votedId":-1,"appliedOffset":0,"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}`
	if got != want {
		t.Fatalf("got %s", got)
	}
	hs, err := DecodeQuorumState([]byte(`{"leaderId":-1,"leaderEpoch":7,"votedId":2,"votedDirectoryId":"AAAAAAAAAAAAAAAAAAAAAA","data_version":1}`))
	if err != nil || hs != (HardState{LeaderEpoch: 7, LeaderID: -1, VotedID: 2, KRaftVersion: 1}) {
		t.Fatalf("%+v %v", hs, err)
	}
	// kraft.version 1: data_version 1 with the voted directory id, no voters
	// (FileQuorumStateStore.writeElectionState, QuorumStateDataJsonConverter).
	dir := [16]byte{0: 0x6b, 15: 0x01}
	v1 := HardState{LeaderEpoch: 3, LeaderID: -1, VotedID: 2, VotedDirectoryID: dir, KRaftVersion: 1}
	got = string(EncodeQuorumState(v1, []int32{1, 2}))
	want = `{"leaderId":-1,"leaderEpoch":3,"votedId":2,"votedDirectoryId":"awAAAAAAAAAAAAAAAAAAAQ","data_version":1}`
	if got != want {
		t.Fatalf("v1: got %s", got)
	}
	if hs, err := DecodeQuorumState([]byte(got)); err != nil || hs != v1 {
		t.Fatalf("v1 round trip: %+v %v", hs, err)
	}
	if _, err := DecodeQuorumState([]byte(`{"leaderId":1}`)); err == nil {
		t.Fatal("no data_version accepted")
	}
}

// TestFetchV18HighWatermark: Fetch v18 (KIP-1166) carries the fetcher's
// high watermark. A fetcher at the log end whose high watermark is behind
// the leader's is answered at once (KafkaRaftClient.isHighWatermarkUpdated);
// one that knows the leader's high watermark, a v18 fetch without it
// (Long.MAX_VALUE) and a v17 fetch with the tag are parked until MaxWait.
func TestFetchV18HighWatermark(t *testing.T) {
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
		if _, err := n.Append(ctx, records("a", "b")); err != nil { // offsets 1-2, hw 3
			t.Fatal(err)
		}
		fetch := func(version int16, hw int64) (kmsg.FetchResponseTopicPartition, time.Duration) {
			t.Helper()
			r := fetchReq(7, 1, 3, 1, 500)
			r.Version = version
			r.Topics[0].Partitions[0].HighWatermark = hw
			start := time.Now()
			resp, err := n.HandleRequest(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0], time.Since(start)
		}
		for _, tc := range []struct {
			version int16
			hw      int64
			parked  bool
		}{
			{18, -1, false},                   // unknown: behind
			{18, 2, false},                    // behind
			{18, 3, true},                     // up to date
			{18, FetcherHWNotSupported, true}, // not sent
			{17, 2, true},                     // v17: the tag is not v17's
		} {
			p, took := fetch(tc.version, tc.hw)
			if p.ErrorCode != 0 || p.HighWatermark != 3 || len(p.RecordBatches) != 0 {
				t.Errorf("v%d hw %d: %+v", tc.version, tc.hw, p)
			}
			if parked := took >= 500*time.Millisecond; parked != tc.parked {
				t.Errorf("v%d hw %d: answered after %v, want parked=%v", tc.version, tc.hw, took, tc.parked)
			}
		}
	})
}

// TestFetchRequestCarriesHighWatermark: the follower's Fetch names its high
// watermark (-1 unknown) at v18 (KafkaRaftClient.buildFetchRequest), and
// ServedVersions serve Fetch up to 18 as Kafka 4.4's controller does.
func TestFetchRequestCarriesHighWatermark(t *testing.T) {
	n := &Node{cfg: Config{NodeID: 2, ClusterID: "cluster"}}
	r := n.toKmsgRequest(Message{Type: MsgFetch, To: 1, Epoch: 3, LastOffset: 9, LastEpoch: 3, FetcherHW: 7, HasFetcherHW: true}).(*kmsg.FetchRequest)
	if r.Version != 18 || r.Topics[0].Partitions[0].HighWatermark != 7 {
		t.Errorf("v%d hw %d", r.Version, r.Topics[0].Partitions[0].HighWatermark)
	}
	r = n.toKmsgRequest(Message{Type: MsgFetch, To: 1, Epoch: 3, LastOffset: 0, LastEpoch: 0, FetcherHW: -1, HasFetcherHW: true}).(*kmsg.FetchRequest)
	if hw := r.Topics[0].Partitions[0].HighWatermark; hw != -1 {
		t.Errorf("unknown hw sent as %d", hw)
	}
	if v := ServedVersions[1]; v != [2]int16{4, 18} {
		t.Errorf("Fetch served %v", v)
	}
	// decoded: v18 keeps it, v17 drops it
	for _, tc := range []struct {
		version int16
		has     bool
	}{{18, true}, {17, false}} {
		req := fetchReq(3, 1, 0, 0, 0)
		req.Version = tc.version
		req.Topics[0].Partitions[0].HighWatermark = 5
		m, resp, err := (&Node{cfg: Config{NodeID: 1, ClusterID: "cluster"}}).fromKmsgRequest(req)
		if err != nil || resp != nil || m.HasFetcherHW != tc.has || tc.has && m.FetcherHW != 5 {
			t.Errorf("v%d: %+v %v %v", tc.version, m, resp, err)
		}
	}
}
