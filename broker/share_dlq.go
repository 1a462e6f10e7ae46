package broker

// The share groups' dead-letter queue writer (KIP-1191, share.version 2;
// Kafka's DefaultShareGroupDLQManager and ShareGroupDLQStateManager). A
// share partition that archives records rejected by a client or past the
// delivery limit hands them here (share.DLQWriter) once their Archiving
// state is persisted, and archives them whatever this answers:
//
//	validate ─► [read the records: errors.deadletterqueue.copy.record.enable]
//	         ─► [CreateTopics: errors.deadletterqueue.auto.create.topics.enable]
//	         ─► Produce (acks=-1) to the leader of partition p % partitions
//
// Validation (ProduceRequestHandler.validateDlqTopic), in Kafka's order and
// words: the group's errors.deadletterqueue.topic.name is set, does not
// start with "__", names a topic whose errors.deadletterqueue.group.enable
// is true (or, absent, auto creation is enabled on the cluster), and starts
// with errors.deadletterqueue.topic.name.prefix when that is not "".
//
// One DLQ record per offset: the original key and value when copying
// (null otherwise, and for an offset the log no longer holds), the
// producing node's clock as CreateTime, no compression, and the headers
// __dlq.errors.topic, .partition, .offset, .group, .delivery.count and,
// when the archive has a cause, .message. A run larger than the DLQ
// topic's max.message.bytes is sent in several produce requests. A
// created DLQ topic takes the broker's partition count and replication
// factor, with errors.deadletterqueue.group.enable=true and
// message.timestamp.type=CreateTime. Retriable errors are retried 5 times,
// backing off 1 s doubling to 30 s (REQUEST_BACKOFF_MS,
// REQUEST_BACKOFF_MAX_MS, MAX_REQUEST_ATTEMPTS). No lock is held: it runs
// on the share manager's DLQ goroutine.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/share"
	"github.com/kgo-broker/kgo-broker/storage"
)

// shareDLQ is the node's share.DLQWriter.
type shareDLQ struct {
	b        *Broker
	backoff  time.Duration
	maxWait  time.Duration
	attempts int
}

var _ share.DLQWriter = (*shareDLQ)(nil)

func newShareDLQ(b *Broker) *shareDLQ {
	return &shareDLQ{b: b, backoff: time.Second, maxWait: 30 * time.Second, attempts: 5}
}

// The DLQ record headers (ShareGroupDLQStateManager.ProduceRequestHandler).
const (
	dlqHeaderTopic     = "__dlq.errors.topic"
	dlqHeaderPartition = "__dlq.errors.partition"
	dlqHeaderOffset    = "__dlq.errors.offset"
	dlqHeaderGroup     = "__dlq.errors.group"
	dlqHeaderCount     = "__dlq.errors.delivery.count"
	dlqHeaderMessage   = "__dlq.errors.message"
)

// errDLQConfig is a DLQ misconfiguration (Kafka's ConfigException).
var errDLQConfig = errors.New("DLQ config")

func dlqConfigError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errDLQConfig, fmt.Sprintf(format, args...))
}

// brokerValue is a broker config's current value: this node's dynamic
// value, else the cluster default, else the static one.
func (b *Broker) brokerValue(img *metadatacache.Image, name string) string {
	if v, ok := img.BrokerConfig(b.nodeID)[name]; ok {
		return v
	}
	if v, ok := img.DefaultBrokerConfig()[name]; ok {
		return v
	}
	return b.cfg.String(name)
}

// topicValue is a topic config's effective value.
func (b *Broker) topicValue(img *metadatacache.Image, topic, name string) string {
	if v, ok := img.TopicConfig(topic)[name]; ok {
		return v
	}
	tk, ok := config.LookupTopic(name)
	if !ok {
		return ""
	}
	v, _ := b.cfg.TopicValue(tk, img.BrokerConfig(b.nodeID), img.DefaultBrokerConfig())
	return v
}

// validate is ProduceRequestHandler.validateDlqTopic: the DLQ topic name
// and whether it exists.
func (d *shareDLQ) validate(img *metadatacache.Image, group string) (string, bool, error) {
	topic := strings.TrimSpace(d.b.GroupConfig(group).ErrorsDLQTopicName())
	prefix := d.b.brokerValue(img, "errors.deadletterqueue.topic.name.prefix")
	if topic == "" {
		return "", false, dlqConfigError("Configured DLQ topic name in share group: %s is empty.", group)
	}
	if strings.HasPrefix(topic, "__") {
		return "", false, dlqConfigError("Configured DLQ topic name in share group: %s cannot start with __, topic: %s.", group, topic)
	}
	exists := img.TopicByName(topic) != nil
	if exists && !strings.EqualFold(d.b.topicValue(img, topic, "errors.deadletterqueue.group.enable"), "true") {
		return "", false, dlqConfigError("DLQ is not enabled on configured DLQ topic for share group: %s, topic: %s.", group, topic)
	}
	if !exists && !strings.EqualFold(d.b.brokerValue(img, "errors.deadletterqueue.auto.create.topics.enable"), "true") {
		return "", false, dlqConfigError("DLQ topic does not exist and auto create is disabled on cluster for share group: %s, topic: %s.", group, topic)
	}
	if prefix != "" && !strings.HasPrefix(topic, prefix) {
		return "", false, dlqConfigError("Configured DLQ topic name does not comply with the DLQ topic prefix in share group: %s, topic: %s, prefix: %s.", group, topic, prefix)
	}
	return topic, exists, nil
}

// WriteDLQ writes r's offsets to the group's DLQ topic.
func (d *shareDLQ) WriteDLQ(ctx context.Context, r share.DLQRecords) error {
	b := d.b
	img := b.meta.Image()
	topic, exists, err := d.validate(img, r.Group)
	if err != nil {
		return err
	}
	var originals map[int64]storage.Record
	if b.GroupConfig(r.Group).ErrorsDLQCopyRecordEnable() {
		// "Unable to fetch original record data ... DLQ records will be
		// produced with headers only": a failed read is not fatal
		originals = d.readOriginals(r)
	}
	if !exists {
		if err := d.createTopic(ctx, topic); err != nil {
			return err
		}
	}
	var lastErr error
	next := r.First
	for attempt := 0; next <= r.Last; {
		img = b.meta.Image()
		t := img.TopicByName(topic)
		if t == nil || len(t.Partitions) == 0 {
			lastErr = dlqConfigError("DLQ topic id could not be found for share group %s with DLQ topic %s.", r.Group, topic)
		} else {
			dest := r.Partition % int32(len(t.Partitions))
			p := t.Partition(dest)
			if p == nil || p.Leader < 0 {
				lastErr = dlqConfigError("DLQ topic partition leader node for share group %s with DLQ topic %s and partition %d could not be found.", r.Group, topic, dest)
			} else {
				maxBytes := int(parseIntDefault(b.topicValue(img, topic, "max.message.bytes"), 1048588))
				batch, last := dlqBatch(r, next, maxBytes, originals, b.shareNowMs())
				lastErr = d.produce(ctx, p.Leader, t, dest, batch)
				if lastErr == nil {
					next, attempt = last+1, 0
					continue
				}
			}
		}
		var ke *kerr.Error
		if errors.As(lastErr, &ke) && !ke.Retriable {
			return lastErr
		}
		attempt++
		if attempt >= d.attempts {
			return fmt.Errorf("Exhausted max retries to produce to DLQ topic without success: %w", lastErr)
		}
		if err := sleepCtx(ctx, d.wait(attempt)); err != nil {
			return err
		}
	}
	return nil
}

// wait is the backoff before attempt (1-based) n+1.
func (d *shareDLQ) wait(n int) time.Duration {
	w := d.backoff << min(n-1, 10)
	return min(w, d.maxWait)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func parseIntDefault(s string, def int64) int64 {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return v
	}
	return def
}

// readOriginals reads the records of [r.First, r.Last] from this node's
// log (the share partition's leader). Offsets it cannot read are absent.
func (d *shareDLQ) readOriginals(r share.DLQRecords) map[int64]storage.Record {
	out := map[int64]storage.Record{}
	for off := r.First; off <= r.Last; {
		read, err := d.b.replicas.ReadShare(r.Topic, r.Partition, off, 1<<20, true, false)
		if err != nil || len(read.Records) == 0 {
			break
		}
		recs, err := storage.DecodeRecords(read.Records)
		if err != nil {
			break
		}
		moved := false
		for _, rec := range recs {
			if rec.Offset >= r.First && rec.Offset <= r.Last {
				out[rec.Offset] = rec
			}
			if rec.Offset >= off {
				off, moved = rec.Offset+1, true
			}
		}
		if !moved {
			break
		}
	}
	return out
}

// dlqBatch builds one record batch of DLQ records from offset from, as
// many as fit in maxBytes (at least one), and returns its last offset.
func dlqBatch(r share.DLQRecords, from int64, maxBytes int, originals map[int64]storage.Record, nowMs int64) ([]byte, int64) {
	const batchOverhead = 61 // DefaultRecordBatch.RECORD_BATCH_OVERHEAD
	var recs []storage.Record
	size := batchOverhead
	last := from - 1
	for off := from; off <= r.Last; off++ {
		rec := storage.Record{Timestamp: nowMs, Headers: dlqHeaders(r, off)}
		if o, ok := originals[off]; ok {
			rec.Key, rec.Value = o.Key, o.Value
		}
		n := recordSize(len(recs), rec)
		if size+n > maxBytes && len(recs) > 0 {
			break
		}
		recs = append(recs, rec)
		size += n
		last = off
		if size > maxBytes {
			break
		}
	}
	return storage.BuildBatch(storage.BatchOptions{PartitionLeaderEpoch: storage.NoPartitionLeaderEpoch}, recs...), last
}

// recordSize is a record's encoded size (DefaultRecord.sizeInBytes) at
// offset delta n with timestamp delta 0.
func recordSize(n int, r storage.Record) int {
	vl := func(v int) int { return len(binary.AppendVarint(nil, int64(v))) }
	bytesSize := func(b []byte) int {
		if b == nil {
			return vl(-1)
		}
		return vl(len(b)) + len(b)
	}
	body := 1 + vl(0) + vl(n) + bytesSize(r.Key) + bytesSize(r.Value) + vl(len(r.Headers))
	for _, h := range r.Headers {
		body += vl(len(h.Key)) + len(h.Key) + bytesSize(h.Value)
	}
	return vl(body) + body
}

func dlqHeaders(r share.DLQRecords, off int64) []storage.RecordHeader {
	h := []storage.RecordHeader{
		{Key: dlqHeaderTopic, Value: []byte(r.Topic)},
		{Key: dlqHeaderPartition, Value: []byte(strconv.Itoa(int(r.Partition)))},
		{Key: dlqHeaderOffset, Value: []byte(strconv.FormatInt(off, 10))},
		{Key: dlqHeaderGroup, Value: []byte(r.Group)},
		{Key: dlqHeaderCount, Value: []byte(strconv.Itoa(int(r.Deliveries)))},
	}
	if r.Cause != "" {
		h = append(h, storage.RecordHeader{Key: dlqHeaderMessage, Value: []byte(r.Cause)})
	}
	return h
}

// createTopic asks the controller to create the DLQ topic
// (ProduceRequestHandler.createTopicBuilder), then waits for this node's
// image to hold it. TOPIC_ALREADY_EXISTS is success.
func (d *shareDLQ) createTopic(ctx context.Context, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(forwardTimeout.Milliseconds())
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, -1, -1
	for _, c := range [][2]string{{"errors.deadletterqueue.group.enable", "true"}, {"message.timestamp.type", "CreateTime"}} {
		tc := kmsg.NewCreateTopicsRequestTopicConfig()
		tc.Name, tc.Value = c[0], kmsg.StringPtr(c[1])
		t.Configs = append(t.Configs, tc)
	}
	req.Topics = append(req.Topics, t)
	for attempt := 1; ; attempt++ {
		resp, err := d.b.forward.Request(ctx, req)
		if err == nil {
			cr, _ := resp.(*kmsg.CreateTopicsResponse)
			if cr == nil || len(cr.Topics) != 1 {
				err = fmt.Errorf("DLQ topic not found in create topic response")
			} else if code := cr.Topics[0].ErrorCode; code != 0 && code != kerr.TopicAlreadyExists.Code {
				ke := kerr.ErrorForCode(code)
				if !kerr.IsRetriable(ke) {
					return fmt.Errorf("Unable to create DLQ topic %s: %w", topic, ke)
				}
				err = ke
			} else {
				break
			}
		}
		if attempt >= d.attempts {
			return fmt.Errorf("Exhausted max retries to create DLQ topic without success: %w", err)
		}
		if err := sleepCtx(ctx, d.wait(attempt)); err != nil {
			return err
		}
	}
	for {
		if t := d.b.meta.Image().TopicByName(topic); t != nil && len(t.Partitions) > 0 {
			return nil
		}
		if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return err
		}
	}
}

// produce sends one DLQ batch to the leader of the destination partition
// (acks=-1, 30 s timeout, as ShareGroupDLQStateManager's produce).
func (d *shareDLQ) produce(ctx context.Context, leader int32, t *metadatacache.Topic, partition int32, batch []byte) error {
	if d.b.peers == nil {
		return errors.New("no inter-broker clients")
	}
	req := kmsg.NewPtrProduceRequest()
	if e, ok := registry(onBroker)[req.Key()]; ok {
		req.Version = e.max
	}
	req.Acks, req.TimeoutMillis = -1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic, rt.TopicID = t.Name, t.ID
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := d.b.peers.Request(ctx, leader, req)
	if err != nil {
		return kerr.NetworkException
	}
	pr, _ := resp.(*kmsg.ProduceResponse)
	if pr == nil || len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return kerr.UnknownServerError
	}
	if code := pr.Topics[0].Partitions[0].ErrorCode; code != 0 {
		return kerr.ErrorForCode(code)
	}
	return nil
}

// logDLQError logs a DLQ write that failed; the records are archived
// regardless (SharePartition: "Failed to write to DLQ, proceeding to
// ARCHIVED regardless.").
func (b *Broker) logDLQError(p *share.Partition, batch share.DLQBatch, err error) {
	b.logger.Error("Failed to write to DLQ, proceeding to ARCHIVED regardless.", zap.String("group", p.Group),
		zap.String("topic", p.Topic), zap.Int32("partition", p.Partition),
		zap.Int64("first_offset", batch.First), zap.Int64("last_offset", batch.Last), zap.Error(err))
}
