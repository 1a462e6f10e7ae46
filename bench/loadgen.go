package main

// The Go load generator (issue 16): several franz-go producers, each with its
// own connections, pipelining produce requests over many partitions, so that
// the broker, not the client, is what saturates; or, with a rate, a constant
// offered load (the OpenMessaging Benchmark way) with a consumer attached,
// for end-to-end latency at a load both brokers sustain. Latencies go into
// HDR histograms (1 µs to 2 min, 3 significant digits). Each record's value
// starts with the time it was meant to be sent (UnixNano): at a constant rate
// a record delayed behind a slow one still counts from its intended time, so
// a stall is not hidden by the generator waiting it out (no coordinated
// omission).

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	franz "github.com/twmb/franz-go/pkg/kgo"
)

type genOpts struct {
	Seeds   []string // bootstrap brokers: one node, or every node of a cluster
	Topic   string
	Size    int
	Acks    string // "1" or "all" (idempotent)
	Clients int
	Records int64   // in total
	Rate    float64 // records/s in total; 0: as fast as the broker acknowledges
	Consume bool    // attach a consumer: end-to-end latency
	Timeout time.Duration
}

type genResult struct {
	Records, Bytes int64
	Wall           time.Duration
	Ack, E2E       *hdrhistogram.Histogram // µs
}

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, 120_000_000, 3) }

// runGen produces o.Records records and waits for every acknowledgement (and,
// with o.Consume, until the consumer has read them all).
func runGen(ctx context.Context, o genOpts) (genResult, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res := genResult{Ack: newHist(), E2E: newHist()}
	var (
		mu       sync.Mutex
		firstErr error
		acked    atomic.Int64
	)
	record := func(h *hdrhistogram.Histogram, sentNs int64) {
		us := (time.Now().UnixNano() - sentNs) / 1000
		mu.Lock()
		_ = h.RecordValue(max(us, 1))
		mu.Unlock()
	}
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		mu.Unlock()
	}

	var consumed sync.WaitGroup
	if o.Consume {
		c, err := franz.NewClient(franz.SeedBrokers(o.Seeds...), franz.ConsumeTopics(o.Topic),
			franz.ConsumeResetOffset(franz.NewOffset().AtStart()), franz.FetchMaxWait(500*time.Millisecond))
		if err != nil {
			return res, err
		}
		defer c.Close()
		consumed.Add(1)
		go func() {
			defer consumed.Done()
			var n int64
			for n < o.Records && ctx.Err() == nil {
				fs := c.PollFetches(ctx)
				fs.EachError(func(t string, p int32, err error) {
					if ctx.Err() == nil {
						fail(fmt.Errorf("consume %s/%d: %w", t, p, err))
					}
				})
				fs.EachRecord(func(r *franz.Record) {
					if len(r.Value) >= 8 {
						record(res.E2E, int64(binary.BigEndian.Uint64(r.Value)))
					}
					n++
				})
			}
		}()
	}

	per := o.Records / int64(o.Clients)
	start := time.Now()
	var producers sync.WaitGroup
	for i := 0; i < o.Clients; i++ {
		n := per
		if i == 0 {
			n += o.Records % int64(o.Clients)
		}
		opts := []franz.Opt{franz.SeedBrokers(o.Seeds...), franz.DefaultProduceTopic(o.Topic),
			franz.ProducerBatchCompression(franz.NoCompression()), franz.ProducerBatchMaxBytes(1 << 20),
			franz.MaxBufferedRecords(1 << 16), franz.ProducerLinger(0), franz.ClientID(fmt.Sprintf("kgo-bench-gen-%d", i))}
		if o.Acks == "all" {
			opts = append(opts, franz.RequiredAcks(franz.AllISRAcks()))
		} else {
			opts = append(opts, franz.RequiredAcks(franz.LeaderAck()), franz.DisableIdempotentWrite())
		}
		cl, err := franz.NewClient(opts...)
		if err != nil {
			cancel()
			producers.Wait()
			return res, err
		}
		defer cl.Close()
		producers.Add(1)
		go func(cl *franz.Client, n int64, rate float64) {
			defer producers.Done()
			// One value per client: the first 8 bytes are rewritten per
			// record, so each record needs its own copy.
			t0 := time.Now()
			for j := int64(0); j < n && ctx.Err() == nil; j++ {
				intended := time.Now()
				if rate > 0 {
					intended = t0.Add(time.Duration(float64(j) / rate * float64(time.Second)))
					if d := time.Until(intended); d > 0 {
						select {
						case <-time.After(d):
						case <-ctx.Done():
							return
						}
					}
				}
				v := make([]byte, o.Size)
				binary.BigEndian.PutUint64(v, uint64(intended.UnixNano()))
				cl.Produce(ctx, &franz.Record{Value: v}, func(r *franz.Record, err error) {
					if err != nil {
						if ctx.Err() == nil {
							fail(err)
						}
						return
					}
					record(res.Ack, int64(binary.BigEndian.Uint64(r.Value)))
					acked.Add(1)
				})
			}
			if err := cl.Flush(ctx); err != nil && ctx.Err() == nil {
				fail(err)
			}
		}(cl, n, o.Rate/float64(o.Clients))
	}
	producers.Wait()
	res.Wall = time.Since(start)
	consumed.Wait()
	res.Records = acked.Load()
	res.Bytes = res.Records * int64(o.Size)
	if firstErr != nil {
		return res, firstErr
	}
	if res.Records != o.Records {
		return res, fmt.Errorf("%d of %d records acknowledged: %v", res.Records, o.Records, ctx.Err())
	}
	if o.Consume && res.E2E.TotalCount() < o.Records {
		return res, fmt.Errorf("consumed %d of %d records: %v", res.E2E.TotalCount(), o.Records, ctx.Err())
	}
	return res, nil
}

// ms returns a histogram's quantile q in milliseconds.
func ms(h *hdrhistogram.Histogram, q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1000 }
