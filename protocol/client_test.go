package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"
)

func dialTest(t *testing.T, addr string) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := DialOptions(ctx, addr, ClientOptions{ClientID: "test-client", Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func metadataFor(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	return req
}

// Dial does ApiVersions with the KIP-511 downgrade (kmsg v5 -> our v4) and
// sends the software name and version; Request uses min(kmsg, server) max.
func TestClientDialAndRequest(t *testing.T) {
	var mu sync.Mutex
	var apiVersions []int16
	var software, clientID string
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if r, ok := req.Msg.(*kmsg.ApiVersionsRequest); ok {
			mu.Lock()
			apiVersions = append(apiVersions, req.Version)
			software = r.ClientSoftwareName + "/" + r.ClientSoftwareVersion
			clientID = req.ClientID
			mu.Unlock()
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	c := dialTest(t, addr)

	mu.Lock()
	if fmt.Sprint(apiVersions) != "[4]" || software != DefaultSoftwareName+"/"+DefaultSoftwareVersion || clientID != "test-client" {
		t.Fatalf("handler saw ApiVersions %v from %q %q", apiVersions, software, clientID)
	}
	mu.Unlock()
	if min, max, ok := c.Versions(3); !ok || min != 0 || max != 12 {
		t.Fatalf("Versions(3) = %d %d %v", min, max, ok)
	}

	resp, err := c.Request(context.Background(), metadataFor("a"))
	if err != nil {
		t.Fatal(err)
	}
	m := resp.(*kmsg.MetadataResponse)
	if m.Version != 12 || len(m.Topics) != 1 || *m.Topics[0].Topic != "a" {
		t.Fatalf("metadata v%d %+v", m.Version, m)
	}

	// Not served by the server: nothing is sent.
	_, err = c.Request(context.Background(), kmsg.NewPtrCreateTopicsRequest())
	if !errors.Is(err, kerr.UnsupportedVersion) {
		t.Fatalf("CreateTopics: %v", err)
	}
	// Explicit version.
	resp, err = c.RequestVersion(context.Background(), metadataFor("b"), 4)
	if err != nil || resp.GetVersion() != 4 {
		t.Fatalf("v4: %v %v", resp, err)
	}
}

// A server whose ApiVersions is v0-v2 only (non-flexible) still completes
// the handshake in two steps.
func TestClientDialOldServer(t *testing.T) {
	versions := NewVersionTable(map[int16][2]int16{18: {0, 2}, 3: {0, 8}})
	var seen []int16
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if r, ok := req.Msg.(*kmsg.ApiVersionsRequest); ok {
			seen = append(seen, req.Version)
			resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
			for _, k := range versions.Keys() {
				min, max, _ := versions.Versions(k)
				resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: min, MaxVersion: max})
			}
			return Response{Msg: resp}, nil, true
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, &Server{Versions: versions}, hook)
	c := dialTest(t, addr)
	if fmt.Sprint(seen) != "[2]" {
		t.Fatalf("handled ApiVersions versions %v", seen)
	}
	resp, err := c.Request(context.Background(), metadataFor("x"))
	if err != nil || resp.GetVersion() != 8 {
		t.Fatalf("%v %v", resp, err)
	}
}

// Many goroutines share one connection; each gets its own response.
func TestClientConcurrent(t *testing.T) {
	addr, _ := startServer(t, nil, nil)
	c := dialTest(t, addr)
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				topic := fmt.Sprintf("t-%d-%d", g, i)
				resp, err := c.Request(context.Background(), metadataFor(topic))
				if err != nil {
					errs <- err
					return
				}
				if got := *resp.(*kmsg.MetadataResponse).Topics[0].Topic; got != topic {
					errs <- fmt.Errorf("asked %s, got %s", topic, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// A cancelled request returns at once; its late response is dropped and
// the connection stays usable.
func TestClientContextCancel(t *testing.T) {
	g := newGate()
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if m, ok := req.Msg.(*kmsg.MetadataRequest); ok && len(m.Topics) == 1 && *m.Topics[0].Topic == "slow" {
			if err := g.wait(ctx); err != nil {
				return Response{}, err, true
			}
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	c := dialTest(t, addr)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Request(ctx, metadataFor("slow"))
		done <- err
	}()
	<-g.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	// Queued behind the slow one on the server.
	next := make(chan error, 1)
	go func() {
		resp, err := c.Request(context.Background(), metadataFor("fast"))
		if err == nil && *resp.(*kmsg.MetadataResponse).Topics[0].Topic != "fast" {
			err = errors.New("wrong response")
		}
		next <- err
	}()
	g.open()
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	if c.Err() != nil {
		t.Fatal(c.Err())
	}

	// An expired context fails before anything is sent.
	ctx, cancel = context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	if _, err := c.Request(ctx, metadataFor("x")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

// A connection failure reaches every waiting request and fails the client.
func TestClientConnectionError(t *testing.T) {
	g := newGate()
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if req.Key == 3 {
			if err := g.wait(ctx); err != nil {
				return Response{}, err, true
			}
		}
		return Response{}, nil, false
	}
	addr, s := startServer(t, nil, hook)
	c := dialTest(t, addr)
	const n = 5
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			_, err := c.Request(context.Background(), metadataFor("x"))
			errs <- err
		}()
	}
	<-g.entered // the first is being handled; the rest are queued or on the way
	s.Close()
	for i := 0; i < n; i++ {
		if err := <-errs; err == nil {
			t.Fatal("request succeeded on a closed connection")
		}
	}
	<-c.Done()
	if c.Err() == nil {
		t.Fatal("Err() is nil after a connection failure")
	}
	if _, err := c.Request(context.Background(), metadataFor("y")); err == nil {
		t.Fatal("request on a failed client succeeded")
	}
}

func TestClientClose(t *testing.T) {
	addr, _ := startServer(t, nil, nil)
	c := dialTest(t, addr)
	c.Close()
	if _, err := c.Request(context.Background(), metadataFor("y")); !errors.Is(err, ErrClientClosed) {
		t.Fatal(err)
	}
	if !errors.Is(c.Err(), ErrClientClosed) {
		t.Fatal(c.Err())
	}
}

// acks=0 produce returns once written; the next request still matches.
func TestClientAcksZero(t *testing.T) {
	got := make(chan struct{}, 1)
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if req.Key == 0 {
			got <- struct{}{}
			return Response{NoResponse: true}, nil, true
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	c := dialTest(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 0
	resp, err := c.Request(context.Background(), p)
	if err != nil || resp != nil {
		t.Fatalf("%v %v", resp, err)
	}
	<-got
	if _, err := c.Request(context.Background(), metadataFor("m")); err != nil {
		t.Fatal(err)
	}
}

// A server that closes the connection during Dial fails Dial.
func TestClientDialFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		nc, err := l.Accept()
		if err == nil {
			nc.Close()
		}
	}()
	if _, err := Dial(context.Background(), l.Addr().String(), "x"); err == nil {
		t.Fatal("Dial succeeded against a closing server")
	}
	l.Close()
	if _, err := Dial(context.Background(), l.Addr().String(), "x"); err == nil {
		t.Fatal("Dial succeeded against a closed port")
	}
}

// A streamed, flexible (Fetch v16) response decodes through the client.
func TestClientBodyResponse(t *testing.T) {
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if r, ok := req.Msg.(*kmsg.FetchRequest); ok {
			resp := r.ResponseKind().(*kmsg.FetchResponse)
			resp.SessionID = 7
			return Response{Body: &bodyWriter{body: resp.AppendTo(nil)}}, nil, true
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	c := dialTest(t, addr)
	resp, err := c.Request(context.Background(), kmsg.NewPtrFetchRequest())
	if err != nil {
		t.Fatal(err)
	}
	if f := resp.(*kmsg.FetchResponse); f.Version != 16 || f.SessionID != 7 {
		t.Fatalf("fetch v%d session %d", f.Version, f.SessionID)
	}
}

// A response the client cannot match, or an oversize one, fails the
// connection for everyone.
func TestClientProtocolErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply func(corr int32) []byte
	}{
		{"wrong correlation id", func(corr int32) []byte {
			return AppendResponse(nil, 3, corr+1, kmsg.NewPtrMetadataResponse())
		}},
		{"oversize", func(corr int32) []byte { return []byte{0x7f, 0, 0, 0} }},
		{"undersize", func(corr int32) []byte { return []byte{0, 0, 0, 2, 0, 0} }},
		{"garbage body", func(corr int32) []byte {
			return append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 7), uint32(corr)), 0xff, 0xff, 0xff)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, cli := net.Pipe()
			defer srv.Close()
			c := NewClient(cli, ClientOptions{ClientID: "pipe", MaxResponseBytes: 1 << 20})
			defer c.Close()
			go func() {
				br := bufio.NewReader(srv)
				var sz [4]byte
				if _, err := io.ReadFull(br, sz[:]); err != nil {
					return
				}
				f := make([]byte, binary.BigEndian.Uint32(sz[:]))
				if _, err := io.ReadFull(br, f); err != nil {
					return
				}
				srv.Write(tc.reply(int32(binary.BigEndian.Uint32(f[4:]))))
			}()
			req := metadataFor("x")
			req.SetVersion(1)
			_, err := c.RequestVersion(context.Background(), req, 1)
			if err == nil {
				t.Fatal("request succeeded")
			}
			if tc.name == "garbage body" {
				// Only that request failed; the framing is intact.
				if c.Err() != nil {
					t.Fatalf("connection failed: %v", c.Err())
				}
				return
			}
			<-c.Done()
		})
	}
}

// Serve after Close returns ErrServerClosed at once.
func TestServeAfterClose(t *testing.T) {
	s := &Server{Handler: &testHandler{}}
	s.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(l); !errors.Is(err, ErrServerClosed) {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", l.Addr().String()); err == nil {
		t.Fatal("listener still open")
	}
}
