package raft

import (
	"fmt"

	"github.com/kgo-broker/kgo-broker/storage"
)

// Raft batch framing (BatchBuilder.java): magic 2, PartitionLeaderEpoch = epoch,
// producer id/epoch/sequence -1, CreateTime, base = max timestamp = append time,
// each record with a null key (control records: key {0, type}) and the opaque
// value given to Append. Uncompressed.

// EncodeEntry renders e as one magic-2 batch at e.Offset.
func EncodeEntry(e Entry) []byte {
	recs := make([]storage.Record, len(e.Records))
	for i, v := range e.Records {
		recs[i] = storage.Record{Timestamp: e.AppendTimeMs, Value: v}
		if e.Control {
			recs[i].Key = storage.ControlRecordKey(e.ControlType)
		}
	}
	return storage.BuildBatch(storage.BatchOptions{
		BaseOffset:           e.Offset,
		PartitionLeaderEpoch: e.Epoch,
		Control:              e.Control,
	}, recs...)
}

// entriesFromBatches splits raw batches into Entries carrying only offsets,
// epochs and Raw (what the core needs); framing and CRC are verified.
func entriesFromBatches(b []byte) ([]Entry, error) {
	var out []Entry
	err := storage.WalkBatches(b, true, func(h storage.BatchHeader, raw []byte) error {
		out = append(out, Entry{Offset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch,
			AppendTimeMs: h.MaxTimestamp, Control: h.IsControl(), Raw: append([]byte(nil), raw...)})
		return nil
	})
	return out, err
}

// Batch is a committed batch of records as delivered to listeners.
type Batch struct {
	BaseOffset   int64
	LastOffset   int64
	Epoch        int32
	AppendTimeMs int64
	Records      [][]byte
}

// decodeBatches decodes raw batches into listener Batches; control batches are
// returned with control=true so the caller can skip them.
func decodeBatches(b []byte, fn func(bt Batch, control bool) error) error {
	return storage.WalkBatches(b, true, func(h storage.BatchHeader, raw []byte) error {
		recs, err := storage.DecodeRecords(raw)
		if err != nil {
			return fmt.Errorf("raft: batch at %d: %w", h.BaseOffset, err)
		}
		bt := Batch{BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Epoch: h.PartitionLeaderEpoch,
			AppendTimeMs: h.MaxTimestamp, Records: make([][]byte, len(recs))}
		for i := range recs {
			bt.Records[i] = recs[i].Value
		}
		return fn(bt, h.IsControl())
	})
}

var errStopDecode = errorString("stop")

type errorString string

func (e errorString) Error() string { return string(e) }
