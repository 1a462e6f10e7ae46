package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// headerBytes is a request header as a client writes it.
func headerBytes(key, version int16, corr int32, clientID *string, flexible bool) []byte {
	b := kbin.AppendInt16(nil, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, corr)
	if !(key == apiKeyControlledShutdown && version == 0) {
		b = kbin.AppendNullableString(b, clientID)
	}
	if flexible {
		b = append(b, 0)
	}
	return b
}

// seedFrames are real kmsg requests (default values plus a filled-in
// Metadata/Produce/Fetch) for every key at its first, middle and last
// version, framed without the size.
func seedFrames() [][]byte {
	var out [][]byte
	id := "seed"
	add := func(req kmsg.Request, v int16) {
		req.SetVersion(v)
		out = append(out, append(headerBytes(req.Key(), v, 1, &id, req.IsFlexible()), req.AppendTo(nil)...))
	}
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		r := kmsg.RequestForKey(k)
		if r == nil {
			continue
		}
		max := r.MaxVersion()
		for _, v := range []int16{0, max / 2, max} {
			add(kmsg.RequestForKey(k), v)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("a")}, {Topic: kmsg.StringPtr("bb")}}
	add(meta, 1)
	add(meta, 12)
	prod := kmsg.NewPtrProduceRequest()
	prod.Acks = -1
	prod.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 3, Records: []byte("records")}}}}
	add(prod, 3)
	add(prod, 11)
	fetch := kmsg.NewPtrFetchRequest()
	fetch.Topics = []kmsg.FetchRequestTopic{{Topic: "t", Partitions: []kmsg.FetchRequestTopicPartition{{Partition: 1, FetchOffset: 9}}}}
	add(fetch, 4)
	add(fetch, 12)
	return out
}

// Every seed decodes, with its header fields, and nothing is left over.
func TestDecodeSeeds(t *testing.T) {
	for _, f := range seedFrames() {
		key := int16(binary.BigEndian.Uint16(f))
		version := int16(binary.BigEndian.Uint16(f[2:]))
		req, err := DecodeRequest(f, nil)
		if err != nil {
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), version, err)
		}
		wantID := "seed"
		if key == apiKeyControlledShutdown && version == 0 {
			wantID = "" // header v0: no client id
		}
		if req.Key != key || req.Version != version || req.CorrelationID != 1 || req.ClientID != wantID ||
			req.Msg.Key() != key || req.Msg.GetVersion() != version {
			t.Fatalf("%s v%d: decoded %+v", kmsg.NameForKey(key), version, req)
		}
		// Any extra byte is trailing garbage; any byte less is truncation.
		if _, err := DecodeRequest(append(f[:len(f):len(f)], 0), nil); !errors.Is(err, ErrMalformedRequest) {
			t.Fatalf("%s v%d with a trailing byte: %v", kmsg.NameForKey(key), version, err)
		}
		hdr := len(headerBytes(key, version, 1, kmsg.StringPtr("seed"), req.Msg.IsFlexible()))
		if len(f) > hdr {
			if _, err := DecodeRequest(f[:len(f)-1], nil); !errors.Is(err, ErrMalformedRequest) {
				t.Fatalf("%s v%d truncated: %v", kmsg.NameForKey(key), version, err)
			}
		}
	}
}

func TestDecodeVersionTable(t *testing.T) {
	id := "c"
	for _, tc := range []struct {
		name    string
		frame   []byte
		wantErr error
	}{
		{"served", headerBytes(3, 4, 1, &id, false), nil}, // Metadata v4 with an empty body fails below
		{"unknown key", headerBytes(500, 0, 1, &id, false), ErrUnknownAPIKey},
		{"not in table", headerBytes(19, 2, 1, &id, false), ErrUnknownAPIKey},
		{"above table", headerBytes(3, 13, 1, &id, true), ErrUnsupportedVersion},
		{"below table", headerBytes(0, 1, 1, &id, false), ErrUnsupportedVersion},
		{"negative", headerBytes(3, -1, 1, &id, false), ErrUnsupportedVersion},
		{"api versions above", headerBytes(18, 99, 1, &id, true), ErrUnsupportedVersion},
		{"short", []byte{0, 3, 0}, ErrMalformedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := DecodeRequest(tc.frame, testVersions)
			if tc.wantErr == nil {
				if !errors.Is(err, ErrMalformedRequest) { // the body is missing
					t.Fatalf("err %v", err)
				}
				return
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if tc.name == "api versions above" && (req == nil || req.Msg != nil || req.Key != 18 || req.Version != 99) {
				t.Fatalf("KIP-511 request %+v", req)
			}
		})
	}
	// A table wider than kmsg is clamped to what kmsg decodes.
	wide := NewVersionTable(map[int16][2]int16{3: {0, 300}})
	if _, err := DecodeRequest(headerBytes(3, 200, 1, &id, true), wide); !errors.Is(err, ErrUnsupportedVersion) {
		t.Fatal(err)
	}
}

// A huge array or tag count in a tiny frame must fail without allocating
// for the count (as kmsg's TestReadCountPastInput checks for kmsg itself).
func TestDecodeAllocationBounded(t *testing.T) {
	maxUvarint := []byte{0xff, 0xff, 0xff, 0xff, 0x0f}
	maxInt32 := []byte{0x7f, 0xff, 0xff, 0xff}
	id := "c"
	var cases []struct {
		name  string
		frame []byte
	}
	add := func(name string, parts ...[]byte) {
		cases = append(cases, struct {
			name  string
			frame []byte
		}{name, bytes.Join(parts, nil)})
	}
	add("metadata v1 topics", headerBytes(3, 1, 1, &id, false), maxInt32)
	add("metadata v12 topics", headerBytes(3, 12, 1, &id, true), maxUvarint)
	add("header tag count", headerBytes(18, 3, 1, &id, false), maxUvarint)
	add("header tag size", headerBytes(18, 3, 1, &id, false), []byte{1, 0}, maxUvarint)
	add("body tag count", headerBytes(18, 3, 1, &id, true), []byte{1, 1}, maxUvarint)
	add("produce v9 topics", headerBytes(0, 9, 1, &id, true), []byte{0, 0xff, 0xff, 0, 0, 0, 0}, maxUvarint)
	add("produce v3 partitions", headerBytes(0, 3, 1, &id, false), []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 't'}, maxInt32)
	add("produce v3 records", headerBytes(0, 3, 1, &id, false), []byte{0xff, 0xff, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 0}, maxInt32)
	add("client id length", []byte{0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0xff})
	// Every key at its max version, a body of maximal counts.
	for k := int16(0); k <= kmsg.MaxKey; k++ {
		r := kmsg.RequestForKey(k)
		if r == nil {
			continue
		}
		r.SetVersion(r.MaxVersion())
		body := bytes.Repeat(maxUvarint, 4)
		if !r.IsFlexible() {
			body = bytes.Repeat(maxInt32, 4)
		}
		add(kmsg.NameForKey(k), headerBytes(k, r.MaxVersion(), 1, &id, r.IsFlexible()), body)
	}
	for _, tc := range cases {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecodeRequest(tc.frame, nil)
		runtime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s: decoded", tc.name)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%s: allocated %d bytes", tc.name, n)
		}
	}
}

// FuzzDecodeRequest: any frame decodes or fails cleanly; what decodes is
// consistent and re-encodes to something that decodes.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, versions := range []VersionTable{nil, testVersions} {
			req, err := DecodeRequest(frame, versions)
			if err != nil {
				if req != nil && req.Msg != nil {
					t.Fatalf("error %v with a decoded message", err)
				}
				continue
			}
			if req.Msg == nil || req.Msg.Key() != req.Key || req.Msg.GetVersion() != req.Version {
				t.Fatalf("inconsistent request %+v", req)
			}
			again := append(headerBytes(req.Key, req.Version, req.CorrelationID, &req.ClientID, req.Msg.IsFlexible()), req.Msg.AppendTo(nil)...)
			if _, err := DecodeRequest(again, versions); err != nil {
				t.Fatalf("%s v%d: re-encoded request does not decode: %v", kmsg.NameForKey(req.Key), req.Version, err)
			}
		}
	})
}

// FuzzRequestHeader: a well-formed header, whatever its field values and
// header tags, decodes back to the same fields or is refused for its key or
// version only.
func FuzzRequestHeader(f *testing.F) {
	f.Add(int16(3), int16(12), int32(1), "client", false, []byte("tag"))
	f.Add(int16(18), int16(3), int32(-1), "", true, []byte{})
	f.Add(int16(18), int16(127), int32(5), "x", false, []byte{1, 2})
	f.Add(int16(7), int16(0), int32(5), "no-client-id", false, []byte{})
	f.Add(int16(-1), int16(0), int32(0), "", true, []byte(nil))
	f.Fuzz(func(t *testing.T, key, version int16, corr int32, clientID string, nullID bool, tag []byte) {
		if len(clientID) > 0x7fff {
			return
		}
		msg := kmsg.RequestForKey(key)
		flexible := key == apiKeyApiVersions && version >= 3
		var body []byte
		if msg != nil && version >= 0 && version <= msg.MaxVersion() {
			msg.SetVersion(version)
			flexible = msg.IsFlexible()
			body = msg.AppendTo(nil)
		}
		id := &clientID
		if nullID {
			id = nil
		}
		b := kbin.AppendInt16(nil, key)
		b = kbin.AppendInt16(b, version)
		b = kbin.AppendInt32(b, corr)
		noClientID := key == apiKeyControlledShutdown && version == 0
		if !noClientID {
			b = kbin.AppendNullableString(b, id)
		}
		if flexible {
			b = append(b, 1) // one tag
			b = kbin.AppendUvarint(b, 0)
			b = kbin.AppendUvarint(b, uint32(len(tag)))
			b = append(b, tag...)
		}
		b = append(b, body...)

		req, err := DecodeRequest(b, nil)
		switch {
		case msg == nil:
			if !errors.Is(err, ErrUnknownAPIKey) {
				t.Fatalf("unknown key %d: %v", key, err)
			}
			return
		case version < 0 || version > msg.MaxVersion():
			if !errors.Is(err, ErrUnsupportedVersion) {
				t.Fatalf("%d v%d: %v", key, version, err)
			}
			if key == apiKeyApiVersions && (req == nil || req.Msg != nil || req.CorrelationID != corr) {
				t.Fatalf("KIP-511 request %+v", req)
			}
			return
		case err != nil:
			t.Fatalf("%s v%d: %v", kmsg.NameForKey(key), version, err)
		}
		wantID := clientID
		if nullID || noClientID {
			wantID = ""
		}
		if req.Key != key || req.Version != version || req.CorrelationID != corr || req.ClientID != wantID {
			t.Fatalf("decoded %+v", req)
		}
	})
}

// A frame that claims to be big but ends early costs about firstFrameChunk,
// not its claimed size; a size beyond the limit costs nothing.
func TestFrameSizeClaimAllocation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int32
		wantErr error
	}{
		{"claims 100 MiB, sends 10 bytes", 100 << 20, nil},
		{"claims 1 GiB", 1 << 30, ErrInvalidFrameSize},
		{"negative", -5, ErrInvalidFrameSize},
	} {
		in := binary.BigEndian.AppendUint32(nil, uint32(tc.size))
		in = append(in, make([]byte, 10)...)
		c := &conn{srv: &Server{}, br: bufio.NewReader(bytes.NewReader(in)), freed: make(chan struct{}, 1), stop: make(chan struct{})}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := c.readFrame()
		runtime.ReadMemStats(&after)
		if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
			t.Errorf("%s: err %v", tc.name, err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > firstFrameChunk+64<<10 {
			t.Errorf("%s: allocated %d bytes", tc.name, n)
		}
	}
}
