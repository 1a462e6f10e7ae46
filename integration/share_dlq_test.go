//go:build integration

package integration

// The share groups' dead-letter queue (KIP-1191, share.version 2): Apache
// Kafka 4.4's KafkaShareConsumer (ShareTool) rejects records and releases
// one until the delivery count limit; the broker writes each to the group's
// DLQ topic with the original key and value (copy.record.enable) and the
// __dlq.errors.* headers, as Kafka 4.4 writes them. Invalid DLQ group
// configs are refused with Kafka's error and message.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestShareGroupDLQ(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	b := StartBroker(t, BrokerOptions{Overrides: shareOverrides(nil)})
	const topic, dlq, group, n = "it-share-dlq", "dlq.it-share-dlq", "it-share-dlq-g", 10
	createTopic(t, b, topic, 1, nil)
	createTopic(t, b, dlq, 1, map[string]string{"errors.deadletterqueue.group.enable": "true"})
	setGroupConfig(t, b, group, "share.auto.offset.reset=earliest", "share.delivery.count.limit=2",
		"errors.deadletterqueue.topic.name="+dlq, "errors.deadletterqueue.copy.record.enable=true")

	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < n; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprintf("x%d", i))}}})
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// v2 and v5 rejected, v7 released on each of its 2 deliveries (archived
	// at the limit), the rest accepted.
	r := runShareTool(t, 120*time.Second, b.Addr, "consume", "topic="+topic, "group="+group,
		fmt.Sprint("expect=", n-1), "reject=2,5", "releasealways=7", "idle.ms=3000")
	if r.ExitCode != 0 || len(eventsOf(r.Events, "done")) == 0 {
		t.Fatalf("ShareTool consume failed: %s\n%s", javaFailure(r), tail(r.String(), 80))
	}

	type dlqRecord struct {
		key, value string
		headers    []string
	}
	want := map[string]dlqRecord{}
	for _, c := range []struct {
		i, count int
		cause    string
	}{{2, 1, "Offset rejected by client."}, {5, 1, "Offset rejected by client."}, {7, 2, "Offset delivery count exceeded the threshold."}} {
		h := []string{"__dlq.errors.topic=" + topic, "__dlq.errors.partition=0", fmt.Sprintf("__dlq.errors.offset=%d", c.i),
			"__dlq.errors.group=" + group, fmt.Sprintf("__dlq.errors.delivery.count=%d", c.count)}
		if c.cause != "" {
			h = append(h, "__dlq.errors.message="+c.cause)
		}
		want[fmt.Sprint(c.i)] = dlqRecord{fmt.Sprintf("k%d", c.i), fmt.Sprintf("v%d", c.i), h}
	}
	got := map[string]dlqRecord{}
	rd := b.Client(kgo.ConsumeTopics(dlq), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for len(got) < len(want) && ctx.Err() == nil {
		fs := rd.PollFetches(ctx)
		fs.EachRecord(func(rec *kgo.Record) {
			d := dlqRecord{key: string(rec.Key), value: string(rec.Value)}
			off := ""
			for _, h := range rec.Headers {
				d.headers = append(d.headers, h.Key+"="+string(h.Value))
				if h.Key == "__dlq.errors.offset" {
					off = string(h.Value)
				}
			}
			t.Logf("DLQ record at %d: key %q value %q headers %v timestamp type %d", rec.Offset, d.key, d.value, d.headers, rec.Attrs.TimestampType())
			if rec.Attrs.TimestampType() != 0 {
				t.Errorf("DLQ record at %d: timestamp type %d, want CreateTime", rec.Offset, rec.Attrs.TimestampType())
			}
			if _, dup := got[off]; dup {
				t.Errorf("offset %s written to the DLQ twice", off)
			}
			got[off] = d
		})
	}
	// nothing more arrives (accepted records never reach the DLQ)
	more, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	rd.PollFetches(more).EachRecord(func(rec *kgo.Record) {
		t.Errorf("unexpected DLQ record at %d: %q %v", rec.Offset, rec.Value, rec.Headers)
	})
	for off, w := range want {
		g, ok := got[off]
		if !ok {
			t.Errorf("offset %s not in the DLQ (got %v)", off, got)
			continue
		}
		if g.key != w.key || g.value != w.value || strings.Join(g.headers, "|") != strings.Join(w.headers, "|") {
			t.Errorf("DLQ record of offset %s:\n got key %q value %q headers %v\nwant key %q value %q headers %v", off, g.key, g.value, g.headers, w.key, w.value, w.headers)
		}
	}
	// every record is done: lag 0 (the start offset persisted with the
	// last archive is the one before it, as in Kafka)
	waitFor(t, 30*time.Second, "lag 0", func() error {
		res := shareGroupsTool(t, b, "--describe", "--group", group)
		if rows := shareOffsetRows(t, res.Stdout, group, topic); rows["0"][1] != "0" {
			return fmt.Errorf("rows %v:\n%s%s", rows, res.Stdout, res.Stderr)
		}
		return nil
	})
}

// Invalid DLQ group configs are refused as Kafka 4.4 refuses them
// (GroupConfig.validate), with IncrementalAlterConfigs.
func TestShareGroupDLQConfigErrors(t *testing.T) {
	t.Parallel()
	b := StartBroker(t, BrokerOptions{Overrides: shareOverrides(nil)})
	cl := b.Client()
	for _, c := range []struct {
		name, value string
		code        int16
		msg         string
	}{
		{"errors.deadletterqueue.topic.name", "__dlq", 40, "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'"},
		{"errors.deadletterqueue.copy.record.enable", "maybe", 40, "Invalid value maybe for configuration errors.deadletterqueue.copy.record.enable: Expected value to be either true or false"},
		{"errors.deadletterqueue.topic.name", "dlq.fine", 0, ""},
	} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rs := kmsg.NewIncrementalAlterConfigsRequestResource()
		rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceType(32), "it-share-dlq-bad"
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value = c.name, kmsg.StringPtr(c.value)
		rs.Configs = append(rs.Configs, rc)
		req.Resources = append(req.Resources, rs)
		resp, err := req.RequestWith(ctxT(t, 30*time.Second), cl)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Resources[0]
		msg := ""
		if got.ErrorMessage != nil {
			msg = *got.ErrorMessage
		}
		t.Logf("%s=%s: code %d message %q", c.name, c.value, got.ErrorCode, msg)
		if got.ErrorCode != c.code || c.code != 0 && msg != c.msg {
			t.Errorf("%s=%s: code %d message %q, want %d %q", c.name, c.value, got.ErrorCode, msg, c.code, c.msg)
		}
	}
}

// With errors.deadletterqueue.auto.create.topics.enable the DLQ topic is
// created on first use (errors.deadletterqueue.group.enable=true,
// CreateTime); without copy.record.enable the DLQ record has a null key
// and value. A DLQ topic not enabled for groups gets nothing, and the
// records are archived regardless.
func TestShareGroupDLQAutoCreate(t *testing.T) {
	t.Parallel()
	javaClasspath(t)
	b := StartBroker(t, BrokerOptions{Overrides: shareOverrides(map[string]string{"errors.deadletterqueue.auto.create.topics.enable": "true"})})
	const topic, dlq, off = "it-share-dlq-auto", "dlq.it-share-dlq-auto", "dlq.it-share-dlq-off"
	createTopic(t, b, topic, 1, nil)
	createTopic(t, b, off, 1, nil)
	cl := b.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	for i := 0; i < 4; i++ {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i))})
	}
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ group, dlq string }{{"it-share-dlq-auto-g", dlq}, {"it-share-dlq-off-g", off}} {
		setGroupConfig(t, b, c.group, "share.auto.offset.reset=earliest", "errors.deadletterqueue.topic.name="+c.dlq)
		r := runShareTool(t, 120*time.Second, b.Addr, "consume", "topic="+topic, "group="+c.group, "expect=4", "reject=1", "idle.ms=2000")
		if r.ExitCode != 0 || len(eventsOf(r.Events, "done")) == 0 {
			t.Fatalf("ShareTool consume (%s) failed: %s\n%s", c.group, javaFailure(r), tail(r.String(), 80))
		}
		waitFor(t, 30*time.Second, c.group+" lag 0", func() error {
			res := shareGroupsTool(t, b, "--describe", "--group", c.group)
			if rows := shareOffsetRows(t, res.Stdout, c.group, topic); rows["0"][1] != "0" {
				return fmt.Errorf("rows %v:\n%s%s", rows, res.Stdout, res.Stderr)
			}
			return nil
		})
	}

	rd := b.Client(kgo.ConsumeTopics(dlq, off), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	var got []*kgo.Record
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil && len(got) == 0 {
		rd.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	more, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	rd.PollFetches(more).EachRecord(func(r *kgo.Record) { got = append(got, r) })
	if len(got) != 1 {
		t.Fatalf("DLQ records %d, want 1 (in %s): %v", len(got), dlq, got)
	}
	r := got[0]
	var hs []string
	for _, h := range r.Headers {
		hs = append(hs, h.Key+"="+string(h.Value))
	}
	want := []string{"__dlq.errors.topic=" + topic, "__dlq.errors.partition=0", "__dlq.errors.offset=1",
		"__dlq.errors.group=it-share-dlq-auto-g", "__dlq.errors.delivery.count=1", "__dlq.errors.message=Offset rejected by client."}
	t.Logf("DLQ record in %s at %d: key %v value %v headers %v", r.Topic, r.Offset, r.Key, r.Value, hs)
	if r.Topic != dlq || r.Key != nil || r.Value != nil || strings.Join(hs, "|") != strings.Join(want, "|") {
		t.Errorf("DLQ record in %s: key %q value %q headers %v, want in %s a null key and value and %v", r.Topic, r.Key, r.Value, hs, dlq, want)
	}
	rc, err := b.Admin().DescribeTopicConfigs(ctxT(t, 30*time.Second), dlq)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]string{}
	for _, c := range rc[0].Configs {
		if c.Value != nil {
			cfg[c.Key] = *c.Value
		}
	}
	if cfg["errors.deadletterqueue.group.enable"] != "true" || cfg["message.timestamp.type"] != "CreateTime" {
		t.Errorf("created DLQ topic configs: group.enable %q, message.timestamp.type %q", cfg["errors.deadletterqueue.group.enable"], cfg["message.timestamp.type"])
	}
}
