package raft

import (
	"context"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// controllerHandler serves the CONTROLLER listener of a test node: ApiVersions
// and the KRaft RPCs.
func controllerHandler(n **Node, versions *protocol.MapVersionTable) protocol.Handler {
	return protocol.HandlerFunc(func(ctx context.Context, req *protocol.Request) (protocol.Response, error) {
		if _, ok := req.Msg.(*kmsg.ApiVersionsRequest); ok {
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = req.Version
			for _, k := range versions.Keys() {
				lo, hi, _ := versions.Versions(k)
				resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: lo, MaxVersion: hi})
			}
			return protocol.Response{Msg: resp}, nil
		}
		resp, err := (*n).HandleRequest(ctx, req.Msg)
		return protocol.Response{Msg: resp}, err
	})
}

// TestNodeOverTCP runs three voters over real CONTROLLER connections
// (protocol.Server + ClientTransport) on the real clock.
func TestNodeOverTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("real network and clock")
	}
	served := map[int16][2]int16{18: {0, 4}}
	for k, v := range ServedVersions {
		served[k] = v
	}
	versions := protocol.NewVersionTable(served)
	ids := []int32{1, 2, 3}
	lns := map[int32]net.Listener{}
	voters := map[int32]VoterEndpoint{}
	for _, id := range ids {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[id] = ln
		a := ln.Addr().(*net.TCPAddr)
		voters[id] = VoterEndpoint{Host: "127.0.0.1", Port: a.Port}
	}
	nodes := map[int32]*Node{}
	lst := map[int32]*recListener{}
	for _, id := range ids {
		n, err := NewNode(Config{NodeID: id, Voters: voters, ClusterID: "cid", MetadataLogDir: "/meta", FS: vfs.NewMem(),
			Rand:            rand.New(rand.NewSource(int64(id))),
			ElectionTimeout: 200 * time.Millisecond, FetchTimeout: 400 * time.Millisecond,
			RequestTimeout: 400 * time.Millisecond, FetchMaxWait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		nodes[id] = n
		lst[id] = newRecListener()
		n.Register(lst[id])
		srv := &protocol.Server{Handler: controllerHandler(&n, versions), Versions: versions, ListenerName: "CONTROLLER"}
		go srv.Serve(lns[id])
		defer srv.Close()
	}
	for _, id := range ids {
		if err := nodes[id].Start(); err != nil {
			t.Fatal(err)
		}
		defer nodes[id].Close()
	}
	deadline := time.Now().Add(15 * time.Second)
	var leader *Node
	for leader == nil && time.Now().Before(deadline) {
		for _, n := range nodes {
			if n.Status().Role == RoleLeader {
				leader = n
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if leader == nil {
		t.Fatal("no leader over TCP")
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := leader.Append(ctx, records("over", "tcp")); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		l := lst[id]
		for {
			if v := l.values(); len(v) == 2 && v[1] == "tcp" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d has %v", id, l.values())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// TestTransportFetchHighWatermarkByVersion: the transport sends Fetch at the
// peer's newest version; to a peer serving Fetch only up to v17 (an older
// kgo-broker) the v18 HighWatermark is left off the wire, as Kafka's
// serializer leaves an ignorable field of a newer version.
func TestTransportFetchHighWatermarkByVersion(t *testing.T) {
	for _, tc := range []struct {
		max    int16
		wantHW int64
	}{{18, 5}, {17, FetcherHWNotSupported}} {
		served := map[int16][2]int16{18: {0, 4}, 1: {4, tc.max}}
		versions := protocol.NewVersionTable(served)
		type seen struct {
			version int16
			hw      int64
		}
		got := make(chan seen, 1)
		h := protocol.HandlerFunc(func(ctx context.Context, req *protocol.Request) (protocol.Response, error) {
			switch r := req.Msg.(type) {
			case *kmsg.ApiVersionsRequest:
				resp := kmsg.NewPtrApiVersionsResponse()
				resp.Version = req.Version
				for k, v := range served {
					resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: v[0], MaxVersion: v[1]})
				}
				return protocol.Response{Msg: resp}, nil
			case *kmsg.FetchRequest:
				got <- seen{req.Version, r.Topics[0].Partitions[0].HighWatermark}
				return protocol.Response{Msg: r.ResponseKind()}, nil
			}
			return protocol.Response{}, nil
		})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &protocol.Server{Handler: h, Versions: versions, ListenerName: "CONTROLLER"}
		go srv.Serve(ln)
		a := ln.Addr().(*net.TCPAddr)
		tr := NewClientTransport(map[int32]VoterEndpoint{1: {Host: "127.0.0.1", Port: a.Port}}, "test", nil)
		n := &Node{cfg: Config{NodeID: 2, ClusterID: "cid"}}
		req := n.toKmsgRequest(Message{Type: MsgFetch, To: 1, Epoch: 1, FetcherHW: 5, HasFetcherHW: true})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, err := tr.Send(ctx, Peer{ID: 1}, req); err != nil {
			t.Fatal(err)
		}
		cancel()
		if s := <-got; s.version != tc.max || s.hw != tc.wantHW {
			t.Errorf("peer serving up to v%d got v%d hw %d, want hw %d", tc.max, s.version, s.hw, tc.wantHW)
		}
		tr.Close()
		srv.Close()
	}
}
