package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// A real franz-go client talks to the server: ApiVersions (with the KIP-511
// downgrade from kgo's v5 to our v4) and Metadata, at current and at old,
// non-flexible versions.
func TestKgoClient(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"latest", nil},
		{"kafka-0.11", []kgo.Opt{kgo.MaxVersions(kversion.V0_11_0())}},
		{"kafka-2.4", []kgo.Opt{kgo.MaxVersions(kversion.V2_4_0())}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := startServer(t, nil, nil)
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, tc.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cl.Ping(ctx); err != nil {
				t.Fatalf("ping: %v", err)
			}
			req := kmsg.NewPtrMetadataRequest()
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr("orders")
			req.Topics = append(req.Topics, rt)
			kresp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatalf("metadata: %v", err)
			}
			if len(kresp.Topics) != 1 || *kresp.Topics[0].Topic != "orders" || len(kresp.Brokers) != 1 {
				t.Fatalf("unexpected metadata response %+v", kresp)
			}
			// kgo learned our ApiVersions table.
			vresp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if vresp.ErrorCode != 0 || len(vresp.ApiKeys) != len(testVersions.Keys()) {
				t.Fatalf("api versions: %+v", vresp)
			}
		})
	}
}

// Every served version of ApiVersions and Metadata round-trips, flexible or
// not, with and without a null client id.
func TestAllVersionsRoundTrip(t *testing.T) {
	addr, _ := startServer(t, nil, nil)
	c := dialRaw(t, addr)
	corr := int32(100)
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.ClientSoftwareName, req.ClientSoftwareVersion = "raw", "1"
		c.write(reqFrame(req, v, corr))
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = v
		if got := c.readResp(18, resp); got != corr || resp.ErrorCode != 0 || len(resp.ApiKeys) != 4 {
			t.Fatalf("ApiVersions v%d: corr %d, %+v", v, got, resp)
		}
		corr++
	}
	for v := int16(0); v <= 12; v++ {
		req := kmsg.NewPtrMetadataRequest()
		req.SetVersion(v)
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("t")
		req.Topics = append(req.Topics, rt)
		c.write(frame(3, v, corr, nil, req.IsFlexible(), req.AppendTo(nil))) // null client id
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = v
		if got := c.readResp(3, resp); got != corr || len(resp.Topics) != 1 {
			t.Fatalf("Metadata v%d: corr %d, %+v", v, got, resp)
		}
		corr++
	}
}

// KIP-511: an ApiVersions version we do not serve is answered with a v0
// response, error 35 and only the ApiVersions range; the connection stays
// open and the retry works. The body of the unsupported version is not parsed.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	addr, _ := startServer(t, nil, nil)
	c := dialRaw(t, addr)
	id := "future-client"
	for _, tc := range []struct {
		version  int16
		flexible bool
	}{{127, true}, {5, true}, {-1, false}} {
		// Header v2 (tags) for v3+, and a body we could not parse anyway.
		c.write(frame(18, tc.version, 7, &id, tc.flexible, []byte{0xde, 0xad, 0xbe, 0xef}))
		f, err := c.readFrame()
		if err != nil {
			t.Fatalf("v%d: %v", tc.version, err)
		}
		if corr := int32(binary.BigEndian.Uint32(f)); corr != 7 {
			t.Fatalf("correlation id %d", corr)
		}
		// v0 body directly after the correlation id: no header tags.
		want := []byte{0, 35, 0, 0, 0, 1, 0, 18, 0, 0, 0, 4}
		if !bytes.Equal(f[4:], want) {
			t.Fatalf("v%d: body %x, want %x", tc.version, f[4:], want)
		}
	}
	c.write(reqFrame(kmsg.NewPtrApiVersionsRequest(), 4, 8))
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 4
	if corr := c.readResp(18, resp); corr != 8 || resp.ErrorCode != 0 {
		t.Fatalf("retry at v4: corr %d error %d", corr, resp.ErrorCode)
	}
}

// Every way a frame can be bad closes that connection, and only that one.
func TestBadFramesCloseConnection(t *testing.T) {
	metaV1 := kmsg.NewPtrMetadataRequest()
	metaV1.SetVersion(1)
	metaV1.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("x")}}
	validMetaV1 := metaV1.AppendTo(nil)
	id := "bad"

	sized := func(size int32, rest ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(size)), rest...)
	}
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"oversize frame", sized(1<<20 + 1)},
		{"max int32 frame", sized(0x7fffffff)},
		{"negative frame size", sized(-1)},
		{"empty frame", sized(0)},
		{"short header", sized(3, 0, 3, 0)},
		{"unknown key", frame(999, 0, 1, &id, false, nil)},
		{"negative key", frame(-1, 0, 1, &id, false, nil)},
		{"key not served", frame(19, 5, 1, &id, true, nil)}, // CreateTopics
		{"version too high", frame(3, 13, 1, &id, true, nil)},
		{"version too low", frame(0, 2, 1, &id, false, nil)},
		{"truncated client id", sized(10, 0, 3, 0, 1, 0, 0, 0, 1, 0, 9)},
		{"garbage body", frame(3, 1, 1, &id, false, []byte{0xff, 0xff, 0xff, 0x00, 0x01})},
		{"truncated body", frame(3, 1, 1, &id, false, validMetaV1[:len(validMetaV1)-1])},
		{"trailing byte", frame(3, 1, 1, &id, false, append(validMetaV1, 0))},
		{"huge array count", frame(3, 1, 1, &id, false, []byte{0x7f, 0xff, 0xff, 0xff})},
		{"huge header tag count", frame(3, 9, 1, &id, false, []byte{0xff, 0xff, 0xff, 0xff, 0x0f})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, s := startServer(t, &Server{MaxRequestBytes: 1 << 20}, nil)
			good := dialRaw(t, addr)
			bad := dialRaw(t, addr)
			bad.write(tc.bytes)
			bad.expectClosed()

			// The other connection, opened before, still works, and
			// so does a new one.
			for _, c := range []*rawConn{good, dialRaw(t, addr)} {
				c.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 2))
				resp := kmsg.NewPtrMetadataResponse()
				resp.Version = 1
				if corr := c.readResp(3, resp); corr != 2 {
					t.Fatalf("corr %d", corr)
				}
			}
			_ = s
		})
	}
}

// Requests written back to back are all answered, in order; a bad frame
// after them closes the connection only after they were answered.
func TestPipeliningAndOrder(t *testing.T) {
	for _, budget := range []int64{0, 1} { // default, and one frame at a time
		t.Run(fmt.Sprint("MaxQueuedBytes=", budget), func(t *testing.T) { testPipelining(t, budget) })
	}
}

func testPipelining(t *testing.T, budget int64) {
	var seen []int32
	var inHandler atomic.Int32
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if inHandler.Add(1) != 1 {
			t.Errorf("two requests of one connection handled at once")
		}
		defer inHandler.Add(-1)
		seen = append(seen, req.CorrelationID) // one request at a time: no lock needed
		return Response{}, nil, false
	}
	addr, _ := startServer(t, &Server{MaxQueuedBytes: budget}, hook)
	c := dialRaw(t, addr)
	var all []byte
	const n = 50 // more than the read-ahead queue
	for i := int32(0); i < n; i++ {
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
		all = append(all, reqFrame(req, int16(i%13), i)...)
	}
	all = append(all, frame(999, 0, 1000, nil, false, nil)...)
	c.write(all)
	for i := int32(0); i < n; i++ {
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = int16(i % 13)
		if corr := c.readResp(3, resp); corr != i {
			t.Fatalf("response %d has correlation id %d", i, corr)
		}
	}
	c.expectClosed()
	for i, corr := range seen {
		if corr != int32(i) {
			t.Fatalf("handled out of order: %v", seen)
		}
	}
}

// acks=0 produce writes nothing; the next response is the next request's.
func TestNoResponse(t *testing.T) {
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if p, ok := req.Msg.(*kmsg.ProduceRequest); ok {
			if p.Acks != 0 {
				t.Errorf("acks %d", p.Acks)
			}
			return Response{NoResponse: true}, nil, true
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	c := dialRaw(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 0
	p.TimeoutMillis = 1000
	c.write(append(reqFrame(p, 9, 1), reqFrame(kmsg.NewPtrMetadataRequest(), 9, 2)...))
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 9
	if corr := c.readResp(3, resp); corr != 2 {
		t.Fatalf("corr %d", corr)
	}
}

// bodyWriter streams a pre-encoded body in three ways: small Writes, a
// ReadFrom, and a raw write on the socket (like sendfile).
type bodyWriter struct {
	body []byte
	lie  int64
}

func (b *bodyWriter) Size() int64 { return int64(len(b.body)) + b.lie }
func (b *bodyWriter) WriteTo(w io.Writer) (int64, error) {
	third := len(b.body) / 3
	var n int64
	for i := 0; i < third; i++ {
		m, err := w.Write(b.body[i : i+1])
		n += int64(m)
		if err != nil {
			return n, err
		}
	}
	rf, ok := w.(io.ReaderFrom)
	if !ok {
		return n, errors.New("writer is not an io.ReaderFrom")
	}
	m, err := rf.ReadFrom(bytes.NewReader(b.body[third : 2*third]))
	n += m
	if err != nil {
		return n, err
	}
	sc, ok := w.(syscall.Conn)
	if !ok {
		return n, errors.New("writer is not a syscall.Conn")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return n, err
	}
	rest := b.body[2*third:]
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for len(rest) > 0 {
			k, e := syscall.Write(int(fd), rest)
			if e == syscall.EAGAIN {
				return false
			}
			if e != nil {
				werr = e
				return true
			}
			n += int64(k)
			rest = rest[k:]
		}
		return true
	})
	if err == nil {
		err = werr
	}
	return n, err
}

// A streamed Body gets the right size and header (tags byte when flexible).
func TestBodyResponse(t *testing.T) {
	var lie atomic.Int64
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		r, ok := req.Msg.(*kmsg.FetchRequest)
		if !ok {
			return Response{}, nil, false
		}
		resp := r.ResponseKind().(*kmsg.FetchResponse)
		resp.SessionID = 42
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.HighWatermark = 99
		rp.RecordBatches = bytes.Repeat([]byte{7}, 10000)
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return Response{Body: &bodyWriter{body: resp.AppendTo(nil), lie: lie.Load()}}, nil, true
	}
	addr, _ := startServer(t, nil, hook)
	c := dialRaw(t, addr)
	for _, v := range []int16{4, 11, 12} {
		c.write(reqFrame(kmsg.NewPtrFetchRequest(), v, int32(v)))
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		if corr := c.readResp(1, resp); corr != int32(v) {
			t.Fatalf("corr %d", corr)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].Partitions[0].HighWatermark != 99 ||
			len(resp.Topics[0].Partitions[0].RecordBatches) != 10000 || (v >= 7 && resp.SessionID != 42) {
			t.Fatalf("v%d: bad fetch response", v)
		}
	}
	// A body shorter than its Size closes the connection.
	lie.Store(1)
	c.write(reqFrame(kmsg.NewPtrFetchRequest(), 12, 1))
	f, err := c.readFrame()
	if err == nil {
		t.Fatalf("read a complete %d byte frame from a lying body", len(f))
	}
}

// A panicking or failing handler closes its connection; the server and other
// connections go on.
func TestHandlerPanicAndError(t *testing.T) {
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if m, ok := req.Msg.(*kmsg.MetadataRequest); ok && len(m.Topics) == 1 {
			switch *m.Topics[0].Topic {
			case "panic":
				panic("boom")
			case "error":
				return Response{}, errors.New("handler says no"), true
			case "wrong":
				return Response{Msg: kmsg.NewPtrFetchResponse()}, nil, true
			case "empty":
				return Response{}, nil, true
			}
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	other := dialRaw(t, addr)
	for _, topic := range []string{"panic", "error", "wrong", "empty"} {
		c := dialRaw(t, addr)
		req := kmsg.NewPtrMetadataRequest()
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
		c.write(reqFrame(req, 1, 1))
		c.expectClosed()
		other.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 2))
		resp := kmsg.NewPtrMetadataResponse()
		resp.Version = 1
		if corr := other.readResp(3, resp); corr != 2 {
			t.Fatalf("corr %d", corr)
		}
	}
}

// Shutdown lets an in-flight request finish and its response be written,
// closes idle connections, and refuses new ones.
func TestShutdownDrains(t *testing.T) {
	g := newGate()
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if m, ok := req.Msg.(*kmsg.MetadataRequest); ok && len(m.Topics) == 1 && *m.Topics[0].Topic == "slow" {
			if err := g.wait(ctx); err != nil {
				return Response{}, err, true
			}
		}
		return Response{}, nil, false
	}
	addr, s := startServer(t, nil, hook)
	idle := dialRaw(t, addr)
	idle.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1))
	if corr := idle.readResp(3, metaResp(1)); corr != 1 {
		t.Fatal(corr)
	}

	busy := dialRaw(t, addr)
	slow := kmsg.NewPtrMetadataRequest()
	slow.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("slow")}}
	// The slow request and one queued behind it.
	busy.write(append(reqFrame(slow, 1, 10), reqFrame(kmsg.NewPtrMetadataRequest(), 1, 11)...))
	<-g.entered

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()

	idle.expectClosed()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while a request was in flight", err)
	default:
	}
	g.open()
	if corr := busy.readResp(3, metaResp(1)); corr != 10 {
		t.Fatal(corr)
	}
	if corr := busy.readResp(3, metaResp(1)); corr != 11 {
		t.Fatal(corr)
	}
	busy.expectClosed()
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if nc, err := net.Dial("tcp", addr); err == nil {
		nc.Close()
		t.Fatal("dial after Shutdown succeeded")
	}
}

func metaResp(v int16) *kmsg.MetadataResponse {
	r := kmsg.NewPtrMetadataResponse()
	r.Version = v
	return r
}

// Shutdown whose context ends closes what is left and cancels handlers.
func TestShutdownContextExpires(t *testing.T) {
	g := newGate()
	cancelled := make(chan struct{})
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		err := g.wait(ctx)
		if err != nil {
			close(cancelled)
		}
		return Response{}, err, true
	}
	addr, s := startServer(t, nil, hook)
	c := dialRaw(t, addr)
	c.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1))
	<-g.entered
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v", err)
	}
	<-cancelled
	c.expectClosed()
}

func TestIdleTimeout(t *testing.T) {
	addr, _ := startServer(t, &Server{IdleTimeout: 20 * time.Millisecond}, nil)
	c := dialRaw(t, addr)
	c.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1))
	c.readResp(3, metaResp(1))
	c.expectClosed()
}

// With MaxConnections 1 a second connection is served only once the first
// one closed; ConnState sees both.
func TestMaxConnections(t *testing.T) {
	var opened, closed atomic.Int32
	s := &Server{MaxConnections: 1, ConnState: func(_ net.Conn, st ConnState) {
		if st == StateNew {
			opened.Add(1)
		} else {
			closed.Add(1)
		}
	}}
	addr, s := startServer(t, s, nil)
	a := dialRaw(t, addr)
	a.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1))
	a.readResp(3, metaResp(1))
	b := dialRaw(t, addr) // TCP-accepted by the kernel, not by Serve
	b.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 2))
	a.nc.Close()
	if corr := b.readResp(3, metaResp(1)); corr != 2 {
		t.Fatal(corr)
	}
	b.nc.Close()
	s.Close()
	s.waitConns()
	if opened.Load() != 2 || closed.Load() != 2 {
		t.Fatalf("opened %d closed %d", opened.Load(), closed.Load())
	}
}

// The request context carries the header fields and the listener.
func TestRequestFields(t *testing.T) {
	got := make(chan *Request, 1)
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if req.Key == 3 {
			got <- req
		}
		return Response{}, nil, false
	}
	addr, _ := startServer(t, nil, hook)
	c := dialRaw(t, addr)
	id := "my-client"
	c.write(frame(3, 9, 77, &id, true, kmsg.NewPtrMetadataRequest().AppendTo(nil)))
	// (Metadata v9 is flexible; AppendTo at v0 of an empty request is the
	// same as v9's only if we set the version, so build it properly.)
	_ = c
	c2 := dialRaw(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(9)
	c2.write(frame(3, 9, 77, &id, true, req.AppendTo(nil)))
	r := <-got
	if r.Key != 3 || r.Version != 9 || r.CorrelationID != 77 || r.ClientID != id ||
		r.Listener != "PLAINTEXT" || r.RemoteAddr.String() != c2.nc.LocalAddr().String() {
		t.Fatalf("request fields: %+v", r)
	}
	c2.readResp(3, metaResp(9))
}

// Header tags of a flexible request are skipped, whatever they hold.
func TestFlexibleHeaderTags(t *testing.T) {
	addr, _ := startServer(t, nil, nil)
	c := dialRaw(t, addr)
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	b := make([]byte, 4)
	b = kbin.AppendInt16(b, 3)
	b = kbin.AppendInt16(b, 12)
	b = kbin.AppendInt32(b, 5)
	b = kbin.AppendNullableString(b, kmsg.StringPtr("c"))
	b = append(b, 2, 0, 3, 'a', 'b', 'c', 7, 0) // two tags: 0 -> "abc", 7 -> ""
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	c.write(b)
	if corr := c.readResp(3, metaResp(12)); corr != 5 {
		t.Fatal(corr)
	}
	_ = kerr.UnsupportedVersion
}

// A client that disconnects cancels the context of its pending request.
func TestClientGoneCancelsHandler(t *testing.T) {
	g := newGate()
	cancelled := make(chan error, 1)
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		err := g.wait(ctx)
		cancelled <- err
		return Response{}, err, true
	}
	addr, _ := startServer(t, nil, hook)
	c := dialRaw(t, addr)
	c.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1))
	<-g.entered
	c.nc.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("handler returned %v", err)
	}
}

// A handler slower than the idle timeout does not make its connection idle.
func TestIdleTimeoutNotWhileBusy(t *testing.T) {
	g := newGate()
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if req.CorrelationID == 1 {
			if err := g.wait(ctx); err != nil {
				return Response{}, err, true
			}
		}
		return Response{}, nil, false
	}
	busy := make(chan struct{}, 1)
	s := &Server{IdleTimeout: 5 * time.Millisecond, testHookBusyNotIdle: func() {
		select {
		case busy <- struct{}{}:
		default:
		}
	}}
	addr, s := startServer(t, s, hook)
	c := dialRaw(t, addr)
	c.write(reqFrame(kmsg.NewPtrMetadataRequest(), 1, 1))
	<-g.entered
	<-busy // the idle deadline fired while the request was pending
	g.open()
	if corr := c.readResp(3, metaResp(1)); corr != 1 {
		t.Fatal(corr)
	}
	c.expectClosed() // and now it is idle
	_ = s
}

// Server.Observe sees every request once it was answered, acks=0 produce
// (no response) included, in order, with its key and version.
func TestObserve(t *testing.T) {
	type obs struct{ key, version int16 }
	seen := make(chan obs, 4)
	hook := func(ctx context.Context, req *Request) (Response, error, bool) {
		if _, ok := req.Msg.(*kmsg.ProduceRequest); ok {
			return Response{NoResponse: true}, nil, true
		}
		return Response{}, nil, false
	}
	s := &Server{Observe: func(key, version int16, d time.Duration) {
		if d < 0 {
			t.Errorf("duration %v", d)
		}
		seen <- obs{key, version}
	}}
	addr, _ := startServer(t, s, hook)
	c := dialRaw(t, addr)
	p := kmsg.NewPtrProduceRequest()
	p.Acks = 0
	c.write(append(reqFrame(p, 9, 1), reqFrame(kmsg.NewPtrMetadataRequest(), 9, 2)...))
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 9
	if corr := c.readResp(3, resp); corr != 2 {
		t.Fatalf("corr %d", corr)
	}
	for _, want := range []obs{{0, 9}, {3, 9}} {
		select {
		case got := <-seen:
			if got != want {
				t.Fatalf("observed %+v, want %+v", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%+v not observed", want)
		}
	}
}
