//go:build integration

package integration

import (
	"bytes"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFranzCodecs produces with each compression codec and headers (acks=all,
// idempotent: franz-go's defaults), consumes everything back in order, and checks
// that the stored batches keep the producer's codec (compression.type=producer).
func TestFranzCodecs(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	codecs := []struct {
		name  string
		codec kgo.CompressionCodec
		attr  int16 // batch attributes bits 0-2
	}{
		{"none", kgo.NoCompression(), 0},
		{"gzip", kgo.GzipCompression(), 1},
		{"snappy", kgo.SnappyCompression(), 2},
		{"lz4", kgo.Lz4Compression(), 3},
		{"zstd", kgo.ZstdCompression(), 4},
	}
	const n = 500
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "it-codec-" + c.name
			createTopic(t, b, topic, 2, nil)
			p := b.Client(kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(c.codec),
				kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2*time.Millisecond))
			var recs []*kgo.Record
			for i := 0; i < n; i++ {
				recs = append(recs, &kgo.Record{
					Partition: int32(i % 2),
					Key:       []byte(fmt.Sprintf("key-%d", i)),
					// Compressible values of varying size.
					Value: bytes.Repeat([]byte(fmt.Sprintf("value-%d-", i)), 1+i%50),
					Headers: []kgo.RecordHeader{
						{Key: "seq", Value: []byte(strconv.Itoa(i))},
						{Key: "codec", Value: []byte(c.name)},
						{Key: "empty", Value: nil},
					},
				})
			}
			if err := p.ProduceSync(ctxT(t, 60*time.Second), recs...).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", c.name, err)
			}

			got := consumeAll(t, b, topic, n, 60*time.Second)
			if len(got) != n {
				t.Fatalf("consumed %d records, want %d", len(got), n)
			}
			next := map[int32]int64{}
			for _, r := range got {
				i, err := strconv.Atoi(string(headerValue(r, "seq")))
				if err != nil {
					t.Fatalf("record %s-%d@%d without a seq header: %+v", r.Topic, r.Partition, r.Offset, r.Headers)
				}
				w := recs[i]
				if r.Partition != w.Partition || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) ||
					len(r.Headers) != 3 || string(headerValue(r, "codec")) != c.name || r.Headers[2].Key != "empty" || len(r.Headers[2].Value) != 0 {
					t.Fatalf("record %d came back different: partition %d key %q headers %+v", i, r.Partition, r.Key, r.Headers)
				}
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition %d: offset %d, want %d (gap or reorder)", r.Partition, r.Offset, next[r.Partition])
				}
				next[r.Partition]++
			}

			// The first stored batch of partition 0 carries the producer's codec.
			if attr := firstBatchAttributes(t, b, topic, 0); attr&7 != c.attr {
				t.Errorf("stored batch attributes %#x: codec %d, want %d (%s)", attr, attr&7, c.attr, c.name)
			}
		})
	}
}

func headerValue(r *kgo.Record, key string) []byte {
	for _, h := range r.Headers {
		if h.Key == key {
			return h.Value
		}
	}
	return nil
}

// firstBatchAttributes fetches partition p from offset 0 with a raw Fetch request
// and returns the attributes of the first record batch the broker sends.
func firstBatchAttributes(t testing.TB, b *Broker, topic string, p int32) int16 {
	t.Helper()
	cl := b.Client()
	ctx := ctxT(t, 30*time.Second)
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	mdResp, err := md.RequestWith(ctx, cl)
	if err != nil || len(mdResp.Topics) != 1 {
		t.Fatalf("metadata for %s: %v %+v", topic, err, mdResp)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis = 500
	req.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	ft.TopicID = mdResp.Topics[0].TopicID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition = p
	fp.FetchOffset = 0
	fp.PartitionMaxBytes = 1 << 20
	fp.CurrentLeaderEpoch = -1
	fp.LogStartOffset = -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response shape: %+v", resp)
	}
	rp := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		t.Fatalf("fetch %s-%d: %v", topic, p, err)
	}
	var batch kmsg.RecordBatch
	if err := batch.ReadFrom(rp.RecordBatches); err != nil {
		t.Fatalf("decoding the first batch of %s-%d (%d bytes): %v", topic, p, len(rp.RecordBatches), err)
	}
	return batch.Attributes
}

// TestRestartNoLoss produces continuously with acks=all (idempotent) while the
// broker is stopped with SIGTERM and restarted, and again while it is killed with
// SIGKILL and restarted. Every acknowledged record must be readable afterwards.
func TestRestartNoLoss(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{})
	const topic = "it-durable"
	createTopic(t, b, topic, 3, nil)

	p := b.Client(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(2000))

	var mu sync.Mutex
	acked := map[string]bool{}
	var failed int
	var seq int
	pctx := ctxT(t, 10*time.Minute)
	produce := func(k int) {
		for i := 0; i < k; i++ {
			mu.Lock()
			seq++
			v := fmt.Sprintf("rec-%07d", seq)
			mu.Unlock()
			p.Produce(pctx, &kgo.Record{Value: []byte(v)}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed++
					return
				}
				acked[string(r.Value)] = true
			})
		}
	}
	// background produces until stop is closed.
	background := func() (stop func()) {
		done := make(chan struct{})
		exited := make(chan struct{})
		go func() {
			defer close(exited)
			for {
				select {
				case <-done:
					return
				default:
				}
				produce(50)
			}
		}()
		return func() { close(done); <-exited }
	}
	flush := func(what string) {
		t.Helper()
		if err := p.Flush(ctxT(t, 2*time.Minute)); err != nil {
			t.Fatalf("flush after %s: %v", what, err)
		}
		mu.Lock()
		t.Logf("after %s: %d records produced, %d acknowledged, %d failed", what, seq, len(acked), failed)
		mu.Unlock()
	}

	produce(2000)
	flush("warm-up")

	// SIGTERM + start while producing.
	stop := background()
	time.Sleep(300 * time.Millisecond)
	b.Restart()
	time.Sleep(300 * time.Millisecond)
	stop()
	flush("SIGTERM restart")

	// kill -9 + start while producing.
	stop = background()
	time.Sleep(300 * time.Millisecond)
	b.KillAndRestart()
	time.Sleep(300 * time.Millisecond)
	stop()
	produce(1000)
	flush("SIGKILL restart")

	mu.Lock()
	want := len(acked)
	mu.Unlock()
	end := sumOffsets(endOffsets(t, b, topic))
	if end < int64(want) {
		t.Errorf("log end offsets sum to %d but %d records were acknowledged", end, want)
	}
	got := consumeAll(t, b, topic, int(end), 2*time.Minute)
	seen := map[string]int{}
	for _, r := range got {
		seen[string(r.Value)]++
	}
	var lost, dup int
	for v := range acked {
		if seen[v] == 0 {
			lost++
			if lost <= 10 {
				t.Errorf("acknowledged record %s lost", v)
			}
		}
	}
	for _, c := range seen {
		if c > 1 {
			dup += c - 1
		}
	}
	t.Logf("acknowledged %d, read back %d (distinct %d), lost %d, duplicates %d", want, len(got), len(seen), lost, dup)
	if lost > 0 {
		t.Fatalf("%d acknowledged records lost", lost)
	}
	if dup > 0 {
		// An idempotent producer's retries must be deduplicated by the broker
		// (producer state survives restarts).
		t.Errorf("%d duplicate records despite idempotence", dup)
	}
}
