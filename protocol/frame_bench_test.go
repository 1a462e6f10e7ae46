package protocol

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
)

// produceHandler answers every Produce like an acks=1 broker (one partition
// response per partition) and keeps nothing from the request; it lets the
// server reuse Produce frames (FrameReuser). Other keys go to testHandler.
type produceHandler struct{ testHandler }

func (h *produceHandler) Handle(ctx context.Context, req *Request) (Response, error) {
	r, ok := req.Msg.(*kmsg.ProduceRequest)
	if !ok {
		return h.testHandler.Handle(ctx, req)
	}
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range r.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = t.Topic
		for _, p := range t.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition = p.Partition
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return Response{Msg: resp}, nil
}

func (*produceHandler) ReusesFrame(key int16) bool { return key == 0 }

// BenchmarkServeProduce8x16KiB: one connection sending Produce requests of 8
// partitions with a 16 KiB batch each (the producer's defaults), request
// and response through the server; allocations include the server's.
func BenchmarkServeProduce8x16KiB(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := &Server{Logger: zap.NewNop(), Handler: &produceHandler{}, Versions: testVersions}
	go s.Serve(l)
	b.Cleanup(func() { s.Close() })
	c, err := Dial(context.Background(), l.Addr().String(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := kmsg.NewPtrProduceRequest()
	req.Acks = 1
	req.TimeoutMillis = 30000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = "bench"
	for p := range int32(8) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = p
		rp.Records = make([]byte, 16<<10)
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	req.SetVersion(9)
	b.SetBytes(8 * 16 << 10)
	b.ReportAllocs()
	for b.Loop() {
		r := *req
		if _, err := c.Request(context.Background(), &r); err != nil {
			b.Fatal(err)
		}
	}
}

// TestReusedFramesKeepRequestsApart: with frame reuse, every request still
// sees its own bytes (sizes vary so that buffers change class and length).
func TestReusedFramesKeepRequestsApart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := &checkingProduceHandler{}
	s := &Server{Logger: zap.NewNop(), Handler: h, Versions: testVersions}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	c, err := Dial(context.Background(), l.Addr().String(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 200 {
		req := kmsg.NewPtrProduceRequest()
		req.Acks = 1
		tp := kmsg.NewProduceRequestTopic()
		tp.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(i)
		rp.Records = make([]byte, (i*7919)%(40<<10)+1)
		for j := range rp.Records {
			rp.Records[j] = byte(i)
		}
		tp.Partitions = append(tp.Partitions, rp)
		req.Topics = append(req.Topics, tp)
		req.SetVersion(9)
		resp, err := c.Request(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; got != 0 {
			t.Fatalf("request %d: the handler saw bytes of another request", i)
		}
	}
}

type checkingProduceHandler struct{ testHandler }

func (h *checkingProduceHandler) Handle(ctx context.Context, req *Request) (Response, error) {
	r, ok := req.Msg.(*kmsg.ProduceRequest)
	if !ok {
		return h.testHandler.Handle(ctx, req)
	}
	p := r.Topics[0].Partitions[0]
	resp := r.ResponseKind().(*kmsg.ProduceResponse)
	st := kmsg.NewProduceResponseTopic()
	st.Topic = r.Topics[0].Topic
	sp := kmsg.NewProduceResponseTopicPartition()
	sp.Partition = p.Partition
	for _, b := range p.Records {
		if b != byte(p.Partition) {
			sp.ErrorCode = 2
			break
		}
	}
	st.Partitions = append(st.Partitions, sp)
	resp.Topics = append(resp.Topics, st)
	return Response{Msg: resp}, nil
}

func (*checkingProduceHandler) ReusesFrame(key int16) bool { return key == 0 }

// TestReusedFramesOddSizes: frames of size 0, 1 and just over a class
// boundary, with a FrameReuser handler, close the connection (malformed) and
// leave the server serving.
func TestReusedFramesOddSizes(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Logger: zap.NewNop(), Handler: &checkingProduceHandler{}, Versions: testVersions}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	for _, size := range []int{0, 1, 4097} {
		nc, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		frame := make([]byte, 4+size)
		frame[0], frame[1], frame[2], frame[3] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
		if _, err := nc.Write(frame); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err == nil {
			t.Fatalf("size %d: got a response to a malformed frame", size)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("size %d: connection left open", size)
		}
		nc.Close()
	}
	c, err := Dial(context.Background(), l.Addr().String(), "test")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}
