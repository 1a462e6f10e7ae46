package storage

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Config holds the topic-level settings the log acts on, named after Kafka's topic
// config keys (LogConfig.java). DefaultConfig returns Kafka's defaults.
type Config struct {
	SegmentBytes       int64 // segment.bytes
	SegmentMs          int64 // segment.ms
	SegmentJitterMs    int64 // segment.jitter.ms
	SegmentIndexBytes  int32 // segment.index.bytes
	IndexIntervalBytes int32 // index.interval.bytes
	FlushMessages      int64 // flush.messages
	FlushMs            int64 // flush.ms
	RetentionMs        int64 // retention.ms (-1 = unlimited)
	RetentionBytes     int64 // retention.bytes (-1 = unlimited)
	// MessageTimestampType is "CreateTime" or "LogAppendTime" (message.timestamp.type).
	MessageTimestampType string
	// message.timestamp.before.max.ms / after.max.ms (CreateTime only).
	MessageTimestampBeforeMaxMs int64
	MessageTimestampAfterMaxMs  int64
	MaxMessageBytes             int32  // max.message.bytes
	CleanupPolicy               string // cleanup.policy: "delete", "compact" or "compact,delete"
	CompressionType             string // compression.type (only "producer" is acted on)
	FileDeleteDelayMs           int64  // file.delete.delay.ms
	MinInSyncReplicas           int32  // min.insync.replicas (carried for replication)
	UncleanLeaderElection       bool   // unclean.leader.election.enable (carried)
	MessageDownconversion       bool   // accepted, not acted on
	Preallocate                 bool   // preallocate (accepted, not acted on)
	// ProducerIDExpirationMs is the broker's producer.id.expiration.ms.
	ProducerIDExpirationMs int64
	// Compaction (cleanup.policy=compact): delete.retention.ms (tombstones and
	// transaction markers), min.cleanable.dirty.ratio, min.compaction.lag.ms and
	// max.compaction.lag.ms. ConfigFromMap turns an explicit 0 for
	// delete.retention.ms into 1 ms and for the ratio into 1e-9 so that they survive
	// normalized.
	DeleteRetentionMs      int64
	MinCleanableDirtyRatio float64
	MinCompactionLagMs     int64
	MaxCompactionLagMs     int64
}

// normalized replaces zero values that are invalid or surely unintended (a partly
// filled Config literal) with Kafka's defaults: SegmentBytes, SegmentMs,
// SegmentIndexBytes, MaxMessageBytes, FlushMessages, RetentionMs,
// MessageTimestampBeforeMaxMs/AfterMaxMs, ProducerIDExpirationMs and the string
// settings. ConfigFromMap turns an explicit 0 for retention.ms and the timestamp
// bounds into 1 ms so that it survives this.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentIndexBytes < 8 {
		c.SegmentIndexBytes = d.SegmentIndexBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.FlushMessages <= 0 {
		c.FlushMessages = d.FlushMessages
	}
	if c.RetentionMs == 0 {
		c.RetentionMs = d.RetentionMs
	}
	if c.MessageTimestampBeforeMaxMs <= 0 {
		c.MessageTimestampBeforeMaxMs = d.MessageTimestampBeforeMaxMs
	}
	if c.MessageTimestampAfterMaxMs <= 0 {
		c.MessageTimestampAfterMaxMs = d.MessageTimestampAfterMaxMs
	}
	if c.ProducerIDExpirationMs <= 0 {
		c.ProducerIDExpirationMs = d.ProducerIDExpirationMs
	}
	if c.MessageTimestampType == "" {
		c.MessageTimestampType = d.MessageTimestampType
	}
	if c.CleanupPolicy == "" {
		c.CleanupPolicy = d.CleanupPolicy
	}
	if c.CompressionType == "" {
		c.CompressionType = d.CompressionType
	}
	if c.DeleteRetentionMs <= 0 {
		c.DeleteRetentionMs = d.DeleteRetentionMs
	}
	if c.MinCleanableDirtyRatio <= 0 {
		c.MinCleanableDirtyRatio = d.MinCleanableDirtyRatio
	}
	if c.MaxCompactionLagMs <= 0 {
		c.MaxCompactionLagMs = d.MaxCompactionLagMs
	}
	c.MinCompactionLagMs = max(c.MinCompactionLagMs, 0)
	return c
}

// Timestamp types.
const (
	TimestampCreateTime    = "CreateTime"
	TimestampLogAppendTime = "LogAppendTime"
)

// DefaultConfig returns Kafka 4.x's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:                1 << 30,
		SegmentMs:                   7 * 24 * 3600 * 1000,
		SegmentJitterMs:             0,
		SegmentIndexBytes:           10 << 20,
		IndexIntervalBytes:          4096,
		FlushMessages:               math.MaxInt64,
		FlushMs:                     math.MaxInt64,
		RetentionMs:                 7 * 24 * 3600 * 1000,
		RetentionBytes:              -1,
		MessageTimestampType:        TimestampCreateTime,
		MessageTimestampBeforeMaxMs: math.MaxInt64,
		MessageTimestampAfterMaxMs:  3600000, // KIP-1030: 1 hour since 4.0
		MaxMessageBytes:             1048588,
		CleanupPolicy:               "delete",
		CompressionType:             "producer",
		FileDeleteDelayMs:           60000,
		MinInSyncReplicas:           1,
		ProducerIDExpirationMs:      86400000,
		DeleteRetentionMs:           86400000,
		MinCleanableDirtyRatio:      0.5,
		MinCompactionLagMs:          0,
		MaxCompactionLagMs:          math.MaxInt64,
	}
}

// Compact reports whether cleanup.policy includes compact.
func (c Config) Compact() bool { return strings.Contains(c.CleanupPolicy, "compact") }

// Delete reports whether cleanup.policy includes delete.
func (c Config) Delete() bool { return strings.Contains(c.CleanupPolicy, "delete") }

// ConfigFromMap applies Kafka topic-level config keys on top of DefaultConfig. Unknown
// keys are ignored (they belong to other layers); a bad value is an error naming the key.
func ConfigFromMap(m map[string]string) (Config, error) {
	return DefaultConfig().With(m)
}

// With returns c with the topic-level keys in m applied.
func (c Config) With(m map[string]string) (Config, error) {
	for k, v := range m {
		if err := c.set(k, strings.TrimSpace(v)); err != nil {
			return c, fmt.Errorf("invalid value %q for configuration %s: %w", v, k, err)
		}
	}
	return c, nil
}

// WithValid is With that skips each key whose value is invalid, telling bad (if
// set), so that one bad value never keeps the others from applying.
func (c Config) WithValid(m map[string]string, bad func(key string, err error)) Config {
	for k, v := range m {
		next := c
		if err := next.set(k, strings.TrimSpace(v)); err != nil {
			if bad != nil {
				bad(k, fmt.Errorf("invalid value %q for configuration %s: %w", v, k, err))
			}
			continue
		}
		c = next
	}
	return c
}

func parseInt(v string, lo, hi int64) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("value must be in [%d, %d]", lo, hi)
	}
	return n, nil
}

func (c *Config) set(k, v string) error {
	var err error
	i64 := func(dst *int64, lo, hi int64) {
		var n int64
		if n, err = parseInt(v, lo, hi); err == nil {
			*dst = n
		}
	}
	i32 := func(dst *int32, lo int64) {
		var n int64
		if n, err = parseInt(v, lo, math.MaxInt32); err == nil {
			*dst = int32(n)
		}
	}
	bl := func(dst *bool) {
		var b bool
		if b, err = strconv.ParseBool(v); err == nil {
			*dst = b
		}
	}
	switch k {
	case "segment.bytes":
		i64(&c.SegmentBytes, 14, math.MaxInt32) // LegacyRecord.RECORD_OVERHEAD_V0
	case "segment.ms":
		i64(&c.SegmentMs, 1, math.MaxInt64)
	case "segment.jitter.ms":
		i64(&c.SegmentJitterMs, 0, math.MaxInt64)
	case "segment.index.bytes":
		i32(&c.SegmentIndexBytes, 4)
	case "index.interval.bytes":
		i32(&c.IndexIntervalBytes, 0)
	case "flush.messages":
		i64(&c.FlushMessages, 1, math.MaxInt64)
	case "flush.ms":
		i64(&c.FlushMs, 0, math.MaxInt64)
	case "retention.ms":
		i64(&c.RetentionMs, -1, math.MaxInt64)
		if c.RetentionMs == 0 {
			c.RetentionMs = 1 // 0 is "default" in a Config literal
		}
	case "retention.bytes":
		i64(&c.RetentionBytes, math.MinInt64, math.MaxInt64)
	case "max.message.bytes":
		i32(&c.MaxMessageBytes, 0)
	case "file.delete.delay.ms":
		i64(&c.FileDeleteDelayMs, 0, math.MaxInt64)
	case "min.insync.replicas":
		i32(&c.MinInSyncReplicas, 1)
	case "message.timestamp.before.max.ms":
		i64(&c.MessageTimestampBeforeMaxMs, 0, math.MaxInt64)
		c.MessageTimestampBeforeMaxMs = max(c.MessageTimestampBeforeMaxMs, 1)
	case "message.timestamp.after.max.ms":
		i64(&c.MessageTimestampAfterMaxMs, 0, math.MaxInt64)
		c.MessageTimestampAfterMaxMs = max(c.MessageTimestampAfterMaxMs, 1)
	case "message.timestamp.type":
		switch v {
		case TimestampCreateTime, TimestampLogAppendTime:
			c.MessageTimestampType = v
		default:
			err = fmt.Errorf("string must be one of: %s, %s", TimestampCreateTime, TimestampLogAppendTime)
		}
	case "cleanup.policy":
		parts := strings.Split(v, ",")
		var out []string
		for _, p := range parts {
			p = strings.TrimSpace(p)
			if p != "delete" && p != "compact" {
				return fmt.Errorf("string must be one of: compact, delete")
			}
			out = append(out, p)
		}
		c.CleanupPolicy = strings.Join(out, ",")
	case "compression.type":
		switch v {
		case "producer", "uncompressed", "gzip", "snappy", "lz4", "zstd":
			c.CompressionType = v
		default:
			err = fmt.Errorf("string must be one of: uncompressed, zstd, lz4, snappy, gzip, producer")
		}
	case "unclean.leader.election.enable":
		bl(&c.UncleanLeaderElection)
	case "preallocate":
		bl(&c.Preallocate)
	case "message.downconversion.enable":
		bl(&c.MessageDownconversion)
	case "delete.retention.ms":
		i64(&c.DeleteRetentionMs, 0, math.MaxInt64)
		c.DeleteRetentionMs = max(c.DeleteRetentionMs, 1)
	case "min.compaction.lag.ms":
		i64(&c.MinCompactionLagMs, 0, math.MaxInt64)
	case "max.compaction.lag.ms":
		i64(&c.MaxCompactionLagMs, 1, math.MaxInt64)
	case "min.cleanable.dirty.ratio":
		var f float64
		if f, err = strconv.ParseFloat(v, 64); err == nil {
			if f < 0 || f > 1 {
				err = fmt.Errorf("value must be in [0, 1]")
			} else {
				c.MinCleanableDirtyRatio = max(f, 1e-9)
			}
		}
	case "producer.id.expiration.ms":
		i64(&c.ProducerIDExpirationMs, 1, math.MaxInt64)
	}
	return err
}
