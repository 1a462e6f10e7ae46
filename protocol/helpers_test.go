package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"
)

// testVersions is what the test server serves.
var testVersions = NewVersionTable(map[int16][2]int16{
	0:  {3, 11}, // Produce
	1:  {4, 16}, // Fetch
	3:  {0, 12}, // Metadata
	18: {0, 4},  // ApiVersions: below kmsg's max (5), to exercise KIP-511
})

// testHandler answers ApiVersions from testVersions and Metadata with one
// broker (the listener itself) and one partition per requested topic. hook,
// if set, runs first and may answer instead.
type testHandler struct {
	host string
	port int32
	hook func(ctx context.Context, req *Request) (Response, error, bool)
}

func (h *testHandler) Handle(ctx context.Context, req *Request) (Response, error) {
	if h.hook != nil {
		if resp, err, ok := h.hook(ctx, req); ok {
			return resp, err
		}
	}
	switch r := req.Msg.(type) {
	case *kmsg.ApiVersionsRequest:
		resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
		for _, k := range testVersions.Keys() {
			min, max, _ := testVersions.Versions(k)
			ak := kmsg.NewApiVersionsResponseApiKey()
			ak.ApiKey, ak.MinVersion, ak.MaxVersion = k, min, max
			resp.ApiKeys = append(resp.ApiKeys, ak)
		}
		return Response{Msg: resp}, nil
	case *kmsg.MetadataRequest:
		resp := r.ResponseKind().(*kmsg.MetadataResponse)
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = 1, h.host, h.port
		resp.Brokers = append(resp.Brokers, b)
		resp.ControllerID = 1
		id := "test-cluster"
		resp.ClusterID = &id
		for _, t := range r.Topics {
			mt := kmsg.NewMetadataResponseTopic()
			mt.Topic = t.Topic
			p := kmsg.NewMetadataResponseTopicPartition()
			p.Leader, p.Replicas, p.ISR = 1, []int32{1}, []int32{1}
			mt.Partitions = append(mt.Partitions, p)
			resp.Topics = append(resp.Topics, mt)
		}
		return Response{Msg: resp}, nil
	}
	return Response{}, errors.New("test handler: unexpected request " + kmsg.NameForKey(req.Key))
}

// startServerB is startServer for benchmarks.
func startServerB(b *testing.B, s *Server) (string, *Server) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	host, portStr, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(portStr)
	s.Handler = &testHandler{host: host, port: int32(port)}
	s.Versions = testVersions
	go s.Serve(l)
	b.Cleanup(func() { s.Close(); s.waitConns() })
	return l.Addr().String(), s
}

// startServer serves s (Handler defaults to a testHandler) on 127.0.0.1:0
// and returns the address. The server is closed at cleanup.
func startServer(t *testing.T, s *Server, hook func(context.Context, *Request) (Response, error, bool)) (string, *Server) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host, portStr, _ := net.SplitHostPort(l.Addr().String())
	port, _ := strconv.Atoi(portStr)
	if s == nil {
		s = &Server{}
	}
	if s.Handler == nil {
		s.Handler = &testHandler{host: host, port: int32(port), hook: hook}
	}
	if s.Versions == nil {
		s.Versions = testVersions
	}
	if s.Logger == nil {
		s.Logger = zaptest.NewLogger(t)
	}
	s.ListenerName = "PLAINTEXT"
	served := make(chan error, 1)
	go func() { served <- s.Serve(l) }()
	t.Cleanup(func() {
		s.Close()
		s.waitConns()
		if err := <-served; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return l.Addr().String(), s
}

// rawConn is a test client that writes hand-made frames.
type rawConn struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	// A safety net against hangs, not a timing assumption.
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawConn{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *rawConn) write(b []byte) {
	c.t.Helper()
	if _, err := c.nc.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// frame returns a request frame built by hand.
func frame(key, version int16, corr int32, clientID *string, flexibleHeader bool, body []byte) []byte {
	b := make([]byte, 4)
	b = kbin.AppendInt16(b, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, clientID)
	if flexibleHeader {
		b = append(b, 0)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// reqFrame frames a kmsg request at version with correlation id corr.
func reqFrame(req kmsg.Request, version int16, corr int32) []byte {
	req.SetVersion(version)
	id := "raw"
	return frame(req.Key(), version, corr, &id, req.IsFlexible(), req.AppendTo(nil))
}

// readResp reads a response frame and decodes it as resp (version set).
func (c *rawConn) readResp(key int16, resp kmsg.Response) int32 {
	c.t.Helper()
	f, err := c.readFrame()
	if err != nil {
		c.t.Fatalf("reading response: %v", err)
	}
	corr := int32(binary.BigEndian.Uint32(f))
	body := f[4:]
	if resp.IsFlexible() && key != 18 {
		if body[0] != 0 {
			c.t.Fatalf("response header tags byte = %d", body[0])
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		c.t.Fatalf("decoding %T v%d: %v", resp, resp.GetVersion(), err)
	}
	return corr
}

func (c *rawConn) readFrame() ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(c.br, sz[:]); err != nil {
		return nil, err
	}
	f := make([]byte, binary.BigEndian.Uint32(sz[:]))
	_, err := io.ReadFull(c.br, f)
	return f, err
}

// expectClosed asserts the server closes the connection without answering.
func (c *rawConn) expectClosed() {
	c.t.Helper()
	f, err := c.readFrame()
	if err == nil {
		c.t.Fatalf("got a %d byte response, want the connection closed", len(f))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("connection not closed: %v", err)
	}
}

// gate blocks a handler until released and reports when it was entered.
type gate struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{entered: make(chan struct{}, 100), release: make(chan struct{})} }

func (g *gate) wait(ctx context.Context) error {
	g.entered <- struct{}{}
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }
