//go:build integration

package integration

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadInput sends malformed requests over raw TCP. Each of these must close
// the connection (Kafka's SocketServer drops a connection it cannot parse):
// a frame larger than socket.request.max.bytes, a negative frame size, an
// unknown API key, a garbage body. ApiVersions at an unknown version must be
// answered with UNSUPPORTED_VERSION (35) and ApiVersions' own range (KIP-511),
// and a produce whose batch CRC does not match must get CORRUPT_MESSAGE (2).
// After all that, a normal client still works.
func TestBadInput(t *testing.T) {
	t.Parallel()
	const maxRequest = 65536
	b := StartBroker(t, BrokerOptions{Overrides: map[string]string{
		"socket.request.max.bytes": fmt.Sprint(maxRequest),
	}})
	const topic = "it-badinput"
	createTopic(t, b, topic, 1, nil)
	fmtr := kmsg.NewRequestFormatter(kmsg.FormatterClientID("kgo-it-bad"))

	t.Run("frame over socket.request.max.bytes", func(t *testing.T) {
		c := rawDial(t, b)
		frame := binary.BigEndian.AppendUint32(nil, maxRequest+1)
		frame = append(frame, make([]byte, 64)...)
		rawWrite(t, c, frame)
		expectClosed(t, c)
	})

	t.Run("negative frame size", func(t *testing.T) {
		c := rawDial(t, b)
		rawWrite(t, c, []byte{0xff, 0xff, 0xff, 0xf0, 0, 0, 0, 0})
		expectClosed(t, c)
	})

	t.Run("unknown API key", func(t *testing.T) {
		c := rawDial(t, b)
		body := binary.BigEndian.AppendUint16(nil, 32000) // api key
		body = binary.BigEndian.AppendUint16(body, 0)     // version
		body = binary.BigEndian.AppendUint32(body, 1)     // correlation id
		body = binary.BigEndian.AppendUint16(body, 2)     // client id length
		body = append(body, "it"...)
		rawWrite(t, c, frameOf(body))
		expectClosed(t, c)
	})

	t.Run("garbage body", func(t *testing.T) {
		c := rawDial(t, b)
		// Metadata v12 header (flexible), then a body whose topic array claims
		// 2^32-2 entries in a few bytes, followed by junk.
		body := binary.BigEndian.AppendUint16(nil, 3)
		body = binary.BigEndian.AppendUint16(body, 12)
		body = binary.BigEndian.AppendUint32(body, 2)
		body = binary.BigEndian.AppendUint16(body, 2)
		body = append(body, "it"...)
		body = append(body, 0)                                                    // header tags
		body = append(body, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xde, 0xad, 0xbe, 0xef) // garbage
		rawWrite(t, c, frameOf(body))
		expectClosed(t, c)
	})

	t.Run("ApiVersions v127", func(t *testing.T) {
		c := rawDial(t, b)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 127
		req.ClientSoftwareName = "kgo-it"
		req.ClientSoftwareVersion = "1"
		rawWrite(t, c, fmtr.AppendRequest(nil, req, 7))
		resp := rawRead(t, c)
		if corr := int32(binary.BigEndian.Uint32(resp)); corr != 7 {
			t.Fatalf("correlation id %d, want 7", corr)
		}
		// The response header is v0 (no tags) and the body is ApiVersions v0:
		// ErrorCode int16, ApiKeys [int32 count]{ApiKey, MinVersion, MaxVersion int16}.
		var av kmsg.ApiVersionsResponse
		av.Version = 0
		if err := av.ReadFrom(resp[4:]); err != nil {
			t.Fatalf("decoding the response as ApiVersions v0: %v (% x)", err, resp)
		}
		if want := 4 + 2 + 4 + 6*len(av.ApiKeys); len(resp) != want {
			t.Errorf("response is %d bytes, want %d for a v0 body with %d keys", len(resp), want, len(av.ApiKeys))
		}
		if av.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("ErrorCode %d, want %d (UNSUPPORTED_VERSION)", av.ErrorCode, kerr.UnsupportedVersion.Code)
		}
		found := false
		for _, k := range av.ApiKeys {
			if k.ApiKey == 18 {
				found = true
				if k.MinVersion != 0 || k.MaxVersion < 3 {
					t.Errorf("ApiVersions range %d-%d, want 0-(>=3)", k.MinVersion, k.MaxVersion)
				}
			}
		}
		if !found {
			t.Errorf("response lists no ApiVersions (18) range: %+v", av.ApiKeys)
		}
	})

	t.Run("produce with a corrupted CRC", func(t *testing.T) {
		c := rawDial(t, b)
		version := produceVersion(t, c, fmtr)
		batch := buildBatch(t, 3)
		batch[len(batch)-2] ^= 0xff // flip a value byte after computing the CRC
		req := kmsg.NewPtrProduceRequest()
		req.Version = version
		req.Acks = -1
		req.TimeoutMillis = 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = 0
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		rawWrite(t, c, fmtr.AppendRequest(nil, req, 9))
		raw := rawRead(t, c)
		if corr := int32(binary.BigEndian.Uint32(raw)); corr != 9 {
			t.Fatalf("correlation id %d, want 9", corr)
		}
		body := raw[4:]
		if req.IsFlexible() {
			body = body[1:] // response header v1: empty tagged fields
		}
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.Version = version
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("decoding Produce v%d response: %v", version, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("produce response shape: %+v", resp)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != kerr.CorruptMessage.Code {
			t.Errorf("produce with a bad CRC: error code %d (%v), want %d (CORRUPT_MESSAGE)", code, kerr.ErrorForCode(code), kerr.CorruptMessage.Code)
		}
		// The same batch with the right CRC is accepted on the same connection.
		good := buildBatch(t, 3)
		req.Topics[0].Partitions[0].Records = good
		rawWrite(t, c, fmtr.AppendRequest(nil, req, 10))
		raw = rawRead(t, c)
		body = raw[4:]
		if req.IsFlexible() {
			body = body[1:]
		}
		resp = req.ResponseKind().(*kmsg.ProduceResponse)
		resp.Version = version
		if err := resp.ReadFrom(body); err != nil {
			t.Fatalf("decoding Produce v%d response: %v", version, err)
		}
		if code := resp.Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Errorf("produce of a valid batch: error code %d (%v)", code, kerr.ErrorForCode(code))
		}
	})

	// The broker is still up and serves a normal client.
	select {
	case <-b.Exited():
		t.Fatalf("broker exited during the bad-input tests (broker log at the end of the test output)")
	default:
	}
	cl := b.Client(kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Key: []byte("after"), Value: []byte("bad input")}).FirstErr(); err != nil {
		t.Fatalf("produce after bad input: %v", err)
	}
	end := endOffsets(t, b, topic)[0]
	recs := consumeAll(t, b, topic, int(end), 30*time.Second)
	last := recs[len(recs)-1]
	if string(last.Key) != "after" || string(last.Value) != "bad input" {
		t.Errorf("last record %q=%q, want after=bad input", last.Key, last.Value)
	}
	// Nothing of the corrupted batch was appended: 3 valid records + 1.
	if end != 4 {
		t.Errorf("log end offset %d, want 4 (3 from the valid raw batch, 1 from the client)", end)
	}
}

func rawDial(t *testing.T, b *Broker) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func rawWrite(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// rawRead reads one response frame and returns it without the size prefix.
func rawRead(t *testing.T, c net.Conn) []byte {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(c, size[:]); err != nil {
		t.Fatalf("reading response size: %v", err)
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 4 || n > 64<<20 {
		t.Fatalf("response size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("reading a %d-byte response: %v", n, err)
	}
	return buf
}

// expectClosed waits up to 10s for the broker to close the connection without
// sending anything.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	switch {
	case n > 0:
		t.Errorf("broker answered (%d bytes: % x) instead of closing the connection", n, buf[:n])
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		// closed, as wanted
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("connection still open 10s after the bad request")
	default:
		t.Errorf("read: %v (want EOF or connection reset)", err)
	}
}

// produceVersion asks the broker (ApiVersions v3 on c) for its Produce range and
// picks the highest version that still addresses topics by name (<= 12).
func produceVersion(t *testing.T, c net.Conn, fmtr *kmsg.RequestFormatter) int16 {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = 3
	req.ClientSoftwareName = "kgo-it"
	req.ClientSoftwareVersion = "1"
	rawWrite(t, c, fmtr.AppendRequest(nil, req, 1))
	raw := rawRead(t, c)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 3
	if err := resp.ReadFrom(raw[4:]); err != nil {
		t.Fatalf("ApiVersions v3 response: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions v3: error %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 0 {
			v := min(k.MaxVersion, 12)
			if v < k.MinVersion || v < 3 {
				t.Fatalf("Produce range %d-%d has no version in 3-12", k.MinVersion, k.MaxVersion)
			}
			return v
		}
	}
	t.Fatal("ApiVersions lists no Produce range")
	return 0
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// buildBatch encodes an uncompressed magic-2 batch of n records with a valid CRC.
func buildBatch(t *testing.T, n int) []byte {
	t.Helper()
	var records []byte
	for i := 0; i < n; i++ {
		r := kmsg.Record{OffsetDelta: int32(i), Key: []byte(fmt.Sprintf("raw-%d", i)), Value: []byte("raw value")}
		enc := r.AppendTo(nil) // Length 0 encodes as one byte
		r.Length = int32(len(enc) - 1)
		records = r.AppendTo(records)
	}
	now := time.Now().UnixMilli()
	batch := kmsg.RecordBatch{
		FirstOffset:          0,
		PartitionLeaderEpoch: -1,
		Magic:                2,
		LastOffsetDelta:      int32(n - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		FirstSequence:        -1,
		NumRecords:           int32(n),
		Records:              records,
	}
	batch.Length = int32(49 + len(records))
	raw := batch.AppendTo(nil)
	if len(raw) != 61+len(records) {
		t.Fatalf("batch encodes to %d bytes, want %d", len(raw), 61+len(records))
	}
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], castagnoli))
	return raw
}
