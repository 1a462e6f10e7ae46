//go:build integration

package integration

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Admin returns a kadm client for this broker, closed at the end of the test.
func (b *Broker) Admin() *kadm.Client {
	return kadm.NewClient(b.Client())
}

// ctxT returns a context that ends after d or at the end of the test.
func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls fn every 100ms until it returns nil or timeout passes, then fails
// the test with fn's last error.
func waitFor(t testing.TB, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := fn()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createTopic creates a topic with franz-go's admin client and waits until
// Metadata shows a leader for every partition.
func createTopic(t testing.TB, b *Broker, topic string, partitions int32, configs map[string]string) {
	t.Helper()
	adm := b.Admin()
	var cfg map[string]*string
	if len(configs) > 0 {
		cfg = map[string]*string{}
		for k, v := range configs {
			cfg[k] = kadm.StringPtr(v)
		}
	}
	resp, err := adm.CreateTopic(ctxT(t, 30*time.Second), partitions, 1, cfg, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
	waitTopicReady(t, b, topic, partitions)
}

// waitTopicReady waits until Metadata lists topic with n partitions, each led by node 1.
func waitTopicReady(t testing.TB, b *Broker, topic string, n int32) {
	t.Helper()
	adm := b.Admin()
	waitFor(t, 15*time.Second, "topic "+topic+" to have leaders", func() error {
		md, err := adm.Metadata(ctxT(t, 5*time.Second), topic)
		if err != nil {
			return err
		}
		td, ok := md.Topics[topic]
		if !ok {
			return fmt.Errorf("not in metadata")
		}
		if td.Err != nil {
			return td.Err
		}
		if int32(len(td.Partitions)) != n {
			return fmt.Errorf("%d partitions, want %d", len(td.Partitions), n)
		}
		for p, pd := range td.Partitions {
			if pd.Err != nil || pd.Leader != 1 {
				return fmt.Errorf("partition %d: leader %d, err %v", p, pd.Leader, pd.Err)
			}
		}
		return nil
	})
}

// endOffsets returns the log end offset of each partition of topic.
func endOffsets(t testing.TB, b *Broker, topic string) map[int32]int64 {
	t.Helper()
	lo, err := b.Admin().ListEndOffsets(ctxT(t, 30*time.Second), topic)
	if err != nil {
		t.Fatalf("list end offsets of %s: %v", topic, err)
	}
	out := map[int32]int64{}
	for p, o := range lo[topic] {
		if o.Err != nil {
			t.Fatalf("end offset of %s-%d: %v", topic, p, o.Err)
		}
		out[p] = o.Offset
	}
	return out
}

func sumOffsets(m map[int32]int64) int64 {
	var n int64
	for _, o := range m {
		n += o
	}
	return n
}

// consumeAll reads every record of topic from the start until want records have
// arrived or timeout passes.
func consumeAll(t testing.TB, b *Broker, topic string, want int, timeout time.Duration, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := b.Client(append([]kgo.Opt{
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
	}, opts...)...)
	ctx := ctxT(t, timeout)
	var recs []*kgo.Record
	for len(recs) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records from %s before timeout %v", len(recs), want, topic, timeout)
		}
		fs.EachError(func(tp string, p int32, err error) {
			t.Logf("fetch error %s-%d: %v", tp, p, err)
		})
		recs = append(recs, fs.Records()...)
	}
	return recs
}

// lines splits tool output into lines, keeping trailing spaces (they matter in
// kafka-topics' describe output) but dropping a final empty line.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

var uuidRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

func mustAtoi64(t testing.TB, what, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		t.Fatalf("%s: %q is not an integer", what, s)
	}
	return n
}

// recordsFor makes n small keyed records for topic.
func recordsFor(topic string, n int) []*kgo.Record {
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))}
	}
	return recs
}
