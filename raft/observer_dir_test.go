package raft

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// TestObserverDirectoryID: Fetch v17 carries the fetcher's directory id
// (ReplicaDirectoryId) and the leader describes an observer with the one it
// fetched with, as KafkaRaftClient does; voters of a static quorum have none.
func TestObserverDirectoryID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		cfg := singleVoterConfig(vfs.NewMem(), "/meta")
		cfg.DirectoryID = [16]byte{1, 2, 3}
		cfg.TickInterval = time.Second // few ticks while 5 minutes pass
		n, err := NewNode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		if r := n.toKmsgRequest(Message{Type: MsgFetch, To: 1}).(*kmsg.FetchRequest); r.Topics[0].Partitions[0].ReplicaDirectoryID != cfg.DirectoryID {
			t.Errorf("Fetch sent with directory id %x, want %x", r.Topics[0].Partitions[0].ReplicaDirectoryID, cfg.DirectoryID)
		}
		obsDir := [16]byte{9, 9, 9, 15: 7}
		fr := fetchReq(7, n.LeaderAndEpoch().Epoch, 0, 0, 0)
		fr.Topics[0].Partitions[0].ReplicaDirectoryID = obsDir
		if _, err := n.HandleRequest(ctx, fr); err != nil {
			t.Fatal(err)
		}
		resp, err := n.HandleRequest(ctx, &kmsg.DescribeQuorumRequest{Version: 2, Topics: []kmsg.DescribeQuorumRequestTopic{{
			Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
		if err != nil {
			t.Fatal(err)
		}
		p := resp.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0]
		if len(p.Observers) != 1 || p.Observers[0].ReplicaID != 7 || p.Observers[0].ReplicaDirectoryID != obsDir {
			t.Errorf("observers %+v, want replica 7 with directory id %x", p.Observers, obsDir)
		}
		for _, v := range p.CurrentVoters {
			if v.ReplicaDirectoryID != ([16]byte{}) {
				t.Errorf("static voter %d described with directory id %x", v.ReplicaID, v.ReplicaDirectoryID)
			}
		}

		// An observer silent for 5 minutes is no longer described
		// (LeaderState.clearInactiveObservers).
		time.Sleep(observerSessionTimeoutMs*time.Millisecond + time.Second)
		resp, err = n.HandleRequest(ctx, &kmsg.DescribeQuorumRequest{Version: 2, Topics: []kmsg.DescribeQuorumRequestTopic{{
			Topic: MetadataTopic, Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if obs := resp.(*kmsg.DescribeQuorumResponse).Topics[0].Partitions[0].Observers; len(obs) != 0 {
			t.Errorf("observers after 5 minutes without a fetch: %+v", obs)
		}
	})
}
