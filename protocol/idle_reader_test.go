package protocol

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Requests of every size (tiny, just past the 256-byte head, past the 16 KiB
// read buffer) written whole, pipelined, and cut into random pieces with
// pauses between them, so that the connection waits for its next request
// with and without bytes left in head or in its pooled read buffer
// (awaitRequest): each is handled once, intact, in order.
func TestRequestsCutAnywhereAcrossIdleWaits(t *testing.T) {
	var mu sync.Mutex
	var seen []int32
	topics := map[int32]string{}
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		m := req.Msg.(*kmsg.MetadataRequest)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, req.CorrelationID)
		if got, want := *m.Topics[0].Topic, topics[req.CorrelationID]; got != want {
			t.Errorf("request %d: topic of %d bytes, want %d", req.CorrelationID, len(got), len(want))
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	c := dialRaw(t, addr)
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 200, 250, 300, 5000, 40000}
	const n = 120
	var stream []byte
	for i := int32(0); i < n; i++ {
		name := strings.Repeat(string(rune('a'+i%26)), sizes[rng.IntN(len(sizes))])
		topics[i] = name
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(name)}}
		stream = append(stream, reqFrame(req, 12, i)...)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(stream) > 0 {
			k := min(len(stream), 1+rng.IntN(600))
			if rng.IntN(4) == 0 {
				k = min(len(stream), 1+rng.IntN(3)) // a byte or three
			}
			if _, err := c.nc.Write(stream[:k]); err != nil {
				t.Error(err)
				return
			}
			stream = stream[k:]
			if rng.IntN(3) == 0 {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond) // let the server wait idle
			}
		}
	}()
	for i := int32(0); i < n; i++ {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 12
		if corr := c.readResp(3, resp); corr != i {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	for i, corr := range seen {
		if corr != int32(i) {
			t.Fatalf("handled out of order: %v", seen)
		}
	}
}
