package replication

import (
	"bytes"
	"io"
	"math/rand/v2"
	"net"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/storage"
	"github.com/kgo-broker/kgo-broker/storage/vfs"
)

// The hand-encoded body decodes with kmsg to the same response as the
// materialized kmsg message, for every version, with records, errors and
// every tagged field set.
func TestFetchBodyMatchesKmsg(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		h.createTopic("t", 2, []int32{1}, 1, nil, nil)
		h.createTopic("u", 1, []int32{1}, 1, nil, nil)
		h.produce("t", 0, batch(3, "a"))
		h.produce("t", 0, batch(2, "b"))
		h.produce("u", 0, batch(1, "c"))

		for v := int16(4); v <= 18; v++ {
			req := fetchReq(v, 0, 1, 1<<20,
				fetchPartSpec{topic: "t", partition: 0, offset: 0, epoch: -1},
				fetchPartSpec{topic: "t", partition: 1, offset: 0, epoch: -1},
				fetchPartSpec{topic: "u", partition: 0, offset: 9, epoch: -1},
				fetchPartSpec{topic: "nope", partition: 0, offset: 0, epoch: -1})
			req.SessionEpoch = 0 // a full request: a session id comes back
			res := h.rm.Fetch(t.Context(), req)
			// Set every optional field the encoder knows.
			p := &res.Resp.Topics[0].Partitions[1]
			p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = 3, 77
			p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = 2, 9
			p.SnapshotID.EndOffset, p.SnapshotID.Epoch = 100, 4
			p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{ProducerID: 5, FirstOffset: 6}}
			p.PreferredReadReplica = 3
			rack := "r1"
			res.Resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 2, Host: "h2", Port: 9092, Rack: &rack}, {NodeID: 3, Host: "h3", Port: 9093}}
			res.Resp.ThrottleMillis = 12

			body := res.Body()
			var buf bytes.Buffer
			n, err := body.WriteTo(&buf)
			if err != nil || n != body.Size() || int64(buf.Len()) != n {
				t.Fatalf("v%d: wrote %d (%v), size %d, buffered %d", v, n, err, body.Size(), buf.Len())
			}
			got := kmsg.NewPtrFetchResponse()
			got.Version = v
			if err := got.ReadFrom(buf.Bytes()); err != nil {
				t.Fatalf("v%d: kmsg cannot read the body: %v", v, err)
			}

			if err := res.Materialize(); err != nil {
				t.Fatal(err)
			}
			want := res.Resp
			normalize(want, v)
			normalize(got, v)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("v%d:\n got %+v\nwant %+v", v, got, want)
			}
			if v >= 7 && got.SessionID == 0 {
				t.Fatalf("v%d: no session id", v)
			}
			if vals := values(t, got.Topics[0].Partitions[0].RecordBatches); len(vals) != 5 {
				t.Fatalf("v%d: %d records", v, len(vals))
			}
			// Re-encoding what kmsg read gives the same bytes.
			if re := got.AppendTo(nil); !bytes.Equal(re, buf.Bytes()) {
				t.Fatalf("v%d: kmsg re-encodes %d bytes, body has %d", v, len(re), buf.Len())
			}
		}
	})
}

// normalize clears what a version cannot carry and maps nil records to
// empty ones (the body sends empty records, as Kafka does; kmsg sends null).
func normalize(r *kmsg.FetchResponse, v int16) {
	if v < 16 {
		r.Brokers = nil
	}
	if v < 7 {
		r.ErrorCode, r.SessionID = 0, 0
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		if v >= 13 {
			t.Topic = ""
		} else {
			t.TopicID = [16]byte{}
		}
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.RecordBatches == nil {
				p.RecordBatches = []byte{}
			}
			if v < 12 {
				p.DivergingEpoch = kmsg.NewFetchResponseTopicPartitionDivergingEpoch()
				p.CurrentLeader = kmsg.NewFetchResponseTopicPartitionCurrentLeader()
				p.SnapshotID = kmsg.NewFetchResponseTopicPartitionSnapshotID()
			}
			if v < 11 {
				p.PreferredReadReplica = -1
			}
			if v < 5 {
				p.LogStartOffset = -1
			}
		}
	}
}

// Through a real TCP connection and a buffered writer whose ReadFrom reaches
// the socket (as protocol's does), regions of files on disk arrive intact.
func TestFetchBodyOverTCP(t *testing.T) {
	dir := t.TempDir()
	log, err := storage.OpenLog(storage.LogOptions{FS: vfs.Default, Dir: dir + "/t-0", Config: storage.DefaultConfig(), HadCleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i := 0; i < 3; i++ {
		if _, err := log.AppendAsLeader(batch(50, "x"), 0); err != nil {
			t.Fatal(err)
		}
	}
	ri, err := log.Read(0, 1<<20, log.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	want, err := ri.Region.ReadAll()
	if err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	recv := make(chan []byte)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			recv <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		recv <- b
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	e := &bodyEncoder{}
	e.b = append(e.b, "head"...)
	e.region(ri.Region)
	e.b = append(e.b, "tail"...)
	body := e.finish()
	bw := newBufferedConn(c)
	n, err := body.WriteTo(bw)
	if err != nil || n != body.Size() {
		t.Fatalf("wrote %d of %d: %v", n, body.Size(), err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if bw.rawConns != 1 {
		t.Fatalf("the region took the copy path (%d SyscallConn calls)", bw.rawConns)
	}
	c.Close()
	got := <-recv
	exp := append(append(append([]byte("head"), 0, 0, 0, 0), want...), "tail"...)
	exp[4], exp[5], exp[6], exp[7] = byte(len(want)>>24), byte(len(want)>>16), byte(len(want)>>8), byte(len(want))
	if !bytes.Equal(got, exp) {
		t.Fatalf("received %d bytes, want %d", len(got), len(exp))
	}
}

// bufferedConn is a minimal bufio.Writer stand-in that records whether
// ReadFrom reached the connection.
type bufferedConn struct {
	c        net.Conn
	buf      []byte
	rawConns int // SyscallConn calls: regions sent with sendfile
}

func newBufferedConn(c net.Conn) *bufferedConn { return &bufferedConn{c: c} }

func (b *bufferedConn) Write(p []byte) (int, error) { b.buf = append(b.buf, p...); return len(p), nil }

func (b *bufferedConn) Flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.c.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

// SyscallConn flushes and hands out the socket, as protocol's response
// writer does, so that regions go out with sendfile.
func (b *bufferedConn) SyscallConn() (syscall.RawConn, error) {
	if err := b.Flush(); err != nil {
		return nil, err
	}
	b.rawConns++
	return b.c.(syscall.Conn).SyscallConn()
}

func (b *bufferedConn) ReadFrom(r io.Reader) (int64, error) {
	if err := b.Flush(); err != nil {
		return 0, err
	}
	return b.c.(io.ReaderFrom).ReadFrom(r)
}

// Random responses (errors, tags, aborted transactions, brokers, records in
// memory and in file regions) encode to what kmsg encodes, for every version.
func TestFetchBodyRandom(t *testing.T) {
	fs := vfs.NewMem()
	f, err := fs.Create("/seg")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		v := int16(4 + rng.IntN(15))
		resp := kmsg.NewPtrFetchResponse()
		resp.Version = v
		resp.ThrottleMillis = rng.Int32()
		if v >= 7 {
			resp.ErrorCode, resp.SessionID = int16(rng.IntN(120)), rng.Int32()
		}
		res := &FetchResult{Resp: resp}
		for ti := rng.IntN(4); ti > 0; ti-- {
			tp := kmsg.NewFetchResponseTopic()
			if v >= 13 {
				tp.TopicID[rng.IntN(16)] = byte(rng.IntN(256))
			} else {
				tp.Topic = strings.Repeat("t", rng.IntN(300))
			}
			var regs []storage.FileRegion
			for pi := rng.IntN(5); pi > 0; pi-- {
				p := kmsg.NewFetchResponseTopicPartition()
				p.Partition, p.ErrorCode = rng.Int32(), int16(rng.IntN(120))
				p.HighWatermark, p.LastStableOffset = rng.Int64(), rng.Int64()
				if v >= 5 {
					p.LogStartOffset = rng.Int64()
				}
				if rng.IntN(3) == 0 {
					p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
					for a := rng.IntN(3); a > 0; a-- {
						p.AbortedTransactions = append(p.AbortedTransactions, kmsg.FetchResponseTopicPartitionAbortedTransaction{ProducerID: rng.Int64(), FirstOffset: rng.Int64()})
					}
				}
				if v >= 11 {
					p.PreferredReadReplica = rng.Int32()
				}
				if v >= 12 {
					if rng.IntN(2) == 0 {
						p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = rng.Int32(), rng.Int64()
					}
					if rng.IntN(2) == 0 {
						p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32(), rng.Int32()
					}
					if rng.IntN(2) == 0 {
						p.SnapshotID.EndOffset, p.SnapshotID.Epoch = rng.Int64(), rng.Int32()
					}
				}
				var reg storage.FileRegion
				switch rng.IntN(3) {
				case 0:
					p.RecordBatches = data[:rng.IntN(200)]
				case 1:
					pos := int64(rng.IntN(4000))
					reg = storage.FileRegion{File: f, Pos: pos, Len: int64(rng.IntN(int(4096 - pos)))}
				}
				tp.Partitions = append(tp.Partitions, p)
				regs = append(regs, reg)
			}
			resp.Topics = append(resp.Topics, tp)
			res.Records = append(res.Records, regs)
		}
		if v >= 16 && rng.IntN(2) == 0 {
			for b := rng.IntN(3) + 1; b > 0; b-- {
				br := kmsg.NewFetchResponseBroker()
				br.NodeID, br.Host, br.Port = rng.Int32(), strings.Repeat("h", rng.IntN(200)), rng.Int32()
				if rng.IntN(2) == 0 {
					r := "rack"
					br.Rack = &r
				}
				resp.Brokers = append(resp.Brokers, br)
			}
		}

		var buf bytes.Buffer
		body := res.Body()
		if n, err := body.WriteTo(&buf); err != nil || n != body.Size() {
			t.Fatalf("iter %d v%d: wrote %d of %d: %v", iter, v, n, body.Size(), err)
		}
		if err := res.Materialize(); err != nil {
			t.Fatal(err)
		}
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if p := &resp.Topics[i].Partitions[j]; p.RecordBatches == nil {
					p.RecordBatches = []byte{} // the body sends empty, not null, records
				}
			}
		}
		if want := resp.AppendTo(nil); !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("iter %d v%d: body differs from kmsg (%d vs %d bytes)", iter, v, buf.Len(), len(want))
		}
	}
}
