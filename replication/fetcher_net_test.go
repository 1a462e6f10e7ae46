package replication

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// The production path over TCP: followers dial the leader's PLAINTEXT
// endpoint from the image with protocol.Client and the leader answers with
// the zero-copy fetch body, as the broker's Fetch handler does.

var netVersions = map[int16][2]int16{1: {4, 18}, 2: {1, 9}, 18: {0, 4}, 23: {2, 4}}

// netHandler serves the replica APIs of rm.
func netHandler(rm *ReplicaManager) protocol.Handler {
	return protocol.HandlerFunc(func(ctx context.Context, req *protocol.Request) (protocol.Response, error) {
		switch r := req.Msg.(type) {
		case *kmsg.ApiVersionsRequest:
			resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
			for k, v := range netVersions {
				ak := kmsg.NewApiVersionsResponseApiKey()
				ak.ApiKey, ak.MinVersion, ak.MaxVersion = k, v[0], v[1]
				resp.ApiKeys = append(resp.ApiKeys, ak)
			}
			return protocol.Response{Msg: resp}, nil
		case *kmsg.FetchRequest:
			return protocol.Response{Body: rm.Fetch(ctx, r).Body()}, nil
		case *kmsg.ListOffsetsRequest:
			return protocol.Response{Msg: rm.ListOffsets(r)}, nil
		case *kmsg.OffsetForLeaderEpochRequest:
			return protocol.Response{Msg: rm.OffsetForLeaderEpoch(r)}, nil
		}
		return protocol.Response{}, errors.New("unexpected request")
	})
}

func TestReplicationOverTCP(t *testing.T) {
	const n = 3
	c := &rcluster{t: t, nodes: map[int32]*rcNode{}}
	var recs []metadatacache.Record
	for id := int32(1); id <= n; id++ {
		nd := &rcNode{id: id, logs: newMemLogs()}
		nd.epoch.Store(brokerEpochOf(id))
		c.nodes[id] = nd
		nd.cache = metadatacache.NewCache(metadatacache.Config{ClusterID: "test"})
		nd.rm = New(Config{NodeID: id, Logs: nd.logs, Controller: ctrlRequestor{c: c, from: id},
			BrokerEpoch: func() int64 { return brokerEpochOf(id) }})
		nd.cache.Subscribe(nd.rm.OnImage)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &protocol.Server{Handler: netHandler(nd.rm), Versions: protocol.NewVersionTable(netVersions), ListenerName: "REPLICATION"}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		r := metadatacache.NewRegisterBrokerRecord()
		r.BrokerID, r.BrokerEpoch, r.Fenced = id, brokerEpochOf(id), false
		r.EndPoints = []metadatacache.BrokerEndpoint{{Name: "REPLICATION", Host: "127.0.0.1", Port: uint16(ln.Addr().(*net.TCPAddr).Port)}}
		recs = append(recs, r)
	}
	c.apply(recs...)
	for _, nd := range c.nodes {
		nd.rm.StartReplication(ReplicationConfig{ListenerName: "REPLICATION", FetchWaitMax: 100 * time.Millisecond,
			FetchBackoff: 50 * time.Millisecond, LagTimeMax: 30 * time.Second})
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			nd.rm.Close()
			nd.logs.close()
		}
	})
	c.createTopic("t", []int32{1, 2, 3}, 1, []int32{1}, map[string]string{"min.insync.replicas": "3"})

	await := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The followers join the ISR through AlterPartition, then acks=all
	// with min.insync.replicas=3 completes once both have each batch.
	await("ISR {1,2,3}", func() bool { return slices.Equal(isrOf(c, "t"), []int32{1, 2, 3}) })
	for i := range 20 {
		resp := c.node(1).rm.Produce(context.Background(), produceReq(12, -1, 10000, "t", 0, batch(5, "tcp")), "test")
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(code))
		}
		for _, id := range []int32{2, 3} {
			if leo := c.part(id, "t").Snapshot().LogEndOffset; leo < int64(5*(i+1)) {
				t.Fatalf("acks=all answered before node %d had the batch (LEO %d)", id, leo)
			}
		}
	}
	want := c.logValues(1, "t")
	for _, id := range []int32{2, 3} {
		await("follower HW", func() bool { return c.part(id, "t").HighWatermark() == 100 })
		if got := c.logValues(id, "t"); !slices.Equal(got, want) {
			t.Fatalf("node %d log differs", id)
		}
	}
}
