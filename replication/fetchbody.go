package replication

import (
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/storage"
)

// The zero-copy Fetch response body. A FetchResponse is encoded by hand for
// the request version (FetchResponse.json, v4-18, flexible from v12), with
// every partition's record bytes left in the segment file: the body is a
// list of pieces, encoded bytes and file regions alternating, and WriteTo
// streams them, the regions with sendfile(2) when the writer reaches a TCP
// connection. Tests decode the body with kmsg.FetchResponse.ReadFrom for
// every version.
//
//	ThrottleMillis int32 | ErrorCode int16 (v7+) | SessionID int32 (v7+)
//	Topics [ Topic string (v4-12) | TopicID uuid (v13+)
//	         Partitions [ Partition int32, ErrorCode int16, HighWatermark int64,
//	                      LastStableOffset int64, LogStartOffset int64 (v5+),
//	                      AbortedTransactions nullable [ProducerID int64, FirstOffset int64],
//	                      PreferredReadReplica int32 (v11+),
//	                      RecordBatches nullable bytes   <- the file region
//	                      tags (v12+): 0 DivergingEpoch, 1 CurrentLeader, 2 SnapshotID ]
//	         tags (v12+) ]
//	tags (v12+): 0 NodeEndpoints (v16+)
//
// Arrays and strings are compact (uvarint length + 1) from v12.

// bodyPiece is encoded bytes or a file region.
type bodyPiece struct {
	b      []byte
	region storage.FileRegion
}

// fetchBody implements protocol.BodyWriter.
type fetchBody struct {
	pieces []bodyPiece
	size   int64
}

var _ protocol.BodyWriter = (*fetchBody)(nil)

// Body returns the response as a zero-copy protocol.BodyWriter at
// r.Resp.Version. RecordBatches already set in Resp (e.g. by Materialize)
// are written from memory.
func (r *FetchResult) Body() protocol.BodyWriter {
	resp := r.Resp
	v := resp.Version
	flex := v >= 12
	e := &bodyEncoder{flex: flex}
	e.b = kbin.AppendInt32(e.b, resp.ThrottleMillis)
	if v >= 7 {
		e.b = kbin.AppendInt16(e.b, resp.ErrorCode)
		e.b = kbin.AppendInt32(e.b, resp.SessionID)
	}
	e.arrayLen(len(resp.Topics))
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if v >= 13 {
			e.b = kbin.AppendUuid(e.b, t.TopicID)
		} else {
			e.string(t.Topic)
		}
		e.arrayLen(len(t.Partitions))
		for j := range t.Partitions {
			p := &t.Partitions[j]
			e.b = kbin.AppendInt32(e.b, p.Partition)
			e.b = kbin.AppendInt16(e.b, p.ErrorCode)
			e.b = kbin.AppendInt64(e.b, p.HighWatermark)
			e.b = kbin.AppendInt64(e.b, p.LastStableOffset)
			if v >= 5 {
				e.b = kbin.AppendInt64(e.b, p.LogStartOffset)
			}
			e.nullableArrayLen(len(p.AbortedTransactions), p.AbortedTransactions == nil)
			for _, a := range p.AbortedTransactions {
				e.b = kbin.AppendInt64(e.b, a.ProducerID)
				e.b = kbin.AppendInt64(e.b, a.FirstOffset)
				e.noTags()
			}
			if v >= 11 {
				e.b = kbin.AppendInt32(e.b, p.PreferredReadReplica)
			}
			var reg storage.FileRegion
			if i < len(r.Records) && j < len(r.Records[i]) {
				reg = r.Records[i][j]
			}
			if p.RecordBatches != nil || reg.Len == 0 {
				e.bytes(p.RecordBatches)
			} else {
				e.region(reg)
			}
			if flex {
				e.partitionTags(p)
			}
		}
		e.noTags()
	}
	if flex {
		if v >= 16 && len(resp.Brokers) > 0 {
			e.b = kbin.AppendUvarint(e.b, 1)
			var nb []byte
			nb = kbin.AppendCompactArrayLen(nb, len(resp.Brokers))
			for _, br := range resp.Brokers {
				nb = kbin.AppendInt32(nb, br.NodeID)
				nb = kbin.AppendCompactString(nb, br.Host)
				nb = kbin.AppendInt32(nb, br.Port)
				nb = kbin.AppendCompactNullableString(nb, br.Rack)
				nb = kbin.AppendUvarint(nb, 0)
			}
			e.tag(0, nb)
		} else {
			e.b = kbin.AppendUvarint(e.b, 0)
		}
	}
	return e.finish()
}

type bodyEncoder struct {
	flex   bool
	b      []byte
	pieces []bodyPiece
	size   int64
}

func (e *bodyEncoder) arrayLen(n int) {
	if e.flex {
		e.b = kbin.AppendCompactArrayLen(e.b, n)
	} else {
		e.b = kbin.AppendArrayLen(e.b, n)
	}
}

func (e *bodyEncoder) nullableArrayLen(n int, isNil bool) {
	if e.flex {
		e.b = kbin.AppendCompactNullableArrayLen(e.b, n, isNil)
	} else {
		e.b = kbin.AppendNullableArrayLen(e.b, n, isNil)
	}
}

func (e *bodyEncoder) string(s string) {
	if e.flex {
		e.b = kbin.AppendCompactString(e.b, s)
	} else {
		e.b = kbin.AppendString(e.b, s)
	}
}

// bytes writes non-null bytes (Kafka sends empty records, not null).
func (e *bodyEncoder) bytes(b []byte) {
	if e.flex {
		e.b = kbin.AppendCompactBytes(e.b, b)
	} else {
		e.b = kbin.AppendBytes(e.b, b)
	}
}

func (e *bodyEncoder) region(r storage.FileRegion) {
	if e.flex {
		e.b = kbin.AppendUvarint(e.b, uint32(r.Len)+1)
	} else {
		e.b = kbin.AppendInt32(e.b, int32(r.Len))
	}
	e.flush()
	e.pieces = append(e.pieces, bodyPiece{region: r})
	e.size += r.Len
}

func (e *bodyEncoder) noTags() {
	if e.flex {
		e.b = kbin.AppendUvarint(e.b, 0)
	}
}

func (e *bodyEncoder) tag(id uint32, val []byte) {
	e.b = kbin.AppendUvarint(e.b, id)
	e.b = kbin.AppendUvarint(e.b, uint32(len(val)))
	e.b = append(e.b, val...)
}

func (e *bodyEncoder) partitionTags(p *kmsg.FetchResponseTopicPartition) {
	div := p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1
	cur := p.CurrentLeader.LeaderID != -1 || p.CurrentLeader.LeaderEpoch != -1
	snap := p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1
	n := 0
	for _, b := range []bool{div, cur, snap} {
		if b {
			n++
		}
	}
	e.b = kbin.AppendUvarint(e.b, uint32(n))
	if div {
		var v []byte
		v = kbin.AppendInt32(v, p.DivergingEpoch.Epoch)
		v = kbin.AppendInt64(v, p.DivergingEpoch.EndOffset)
		v = kbin.AppendUvarint(v, 0)
		e.tag(0, v)
	}
	if cur {
		var v []byte
		v = kbin.AppendInt32(v, p.CurrentLeader.LeaderID)
		v = kbin.AppendInt32(v, p.CurrentLeader.LeaderEpoch)
		v = kbin.AppendUvarint(v, 0)
		e.tag(1, v)
	}
	if snap {
		var v []byte
		v = kbin.AppendInt64(v, p.SnapshotID.EndOffset)
		v = kbin.AppendInt32(v, p.SnapshotID.Epoch)
		v = kbin.AppendUvarint(v, 0)
		e.tag(2, v)
	}
}

func (e *bodyEncoder) flush() {
	if len(e.b) > 0 {
		e.pieces = append(e.pieces, bodyPiece{b: e.b})
		e.size += int64(len(e.b))
		e.b = nil
	}
}

func (e *bodyEncoder) finish() *fetchBody {
	e.flush()
	return &fetchBody{pieces: e.pieces, size: e.size}
}

// Size implements protocol.BodyWriter.
func (f *fetchBody) Size() int64 { return f.size }

// WriteTo implements protocol.BodyWriter: encoded pieces are written, file
// regions go through writeRegion.
func (f *fetchBody) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for _, p := range f.pieces {
		var n int64
		var err error
		if p.b != nil {
			var m int
			m, err = w.Write(p.b)
			n = int64(m)
		} else {
			n, err = writeRegion(w, p.region)
		}
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// writeRegion writes a file region: w is the protocol's response writer,
// whose SyscallConn flushes what was buffered and hands out the socket, so
// storage.FileRegion.WriteTo sends the region with sendfile(2) at an explicit
// offset, holding the segment's descriptor for the duration (ReadAt + Write
// when there is no descriptor, as with the in-memory file system).
func writeRegion(w io.Writer, r storage.FileRegion) (int64, error) {
	n, err := r.WriteTo(w)
	if err == nil && n != r.Len {
		err = fmt.Errorf("segment %s is shorter than the fetched region: %w", r.File.Name(), io.ErrUnexpectedEOF)
	}
	return n, err
}
