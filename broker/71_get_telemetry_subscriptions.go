package broker

// GetTelemetrySubscriptions: v0 (client listeners; served, not advertised)
//
// Behavior (ClientMetricsManager.processGetTelemetrySubscriptionRequest,
// KIP-714):
//   - kgo-broker has no metrics reporter that receives client telemetry,
//     so, as Kafka without one, the API is left out of ApiVersions (a
//     client that reads ApiVersions never asks) but is answered when asked.
//   - No subscriptions exist (there are no CLIENT_METRICS configs): the
//     answer carries the client's instance id (a new random one when the
//     client sends the zero id), no requested metrics (so the client
//     pushes nothing), the default push interval of 5 minutes, the
//     accepted compression types zstd, lz4, gzip, snappy,
//     telemetry.max.bytes and delta temporality. The subscription id is
//     Kafka's: CRC32C of the metric set and interval, XORed with the
//     instance id's hash, so PushTelemetry can check it without state.
//   - Kafka throttles a client asking again before its push interval
//     (THROTTLING_QUOTA_EXCEEDED); kgo-broker keeps no per-client state
//     and answers every time.

import (
	"context"
	"encoding/binary"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regHiddenKey(71, 0, 0, onBroker, handleGetTelemetrySubscriptions) }

// Client telemetry constants (ClientMetricsConfigs, ClientMetricsManager).
const telemetryPushIntervalMs = 5 * 60 * 1000

// telemetryCompressionTypes are ClientMetricsManager's
// SUPPORTED_COMPRESSION_TYPES: zstd, lz4, gzip, snappy (the first is the
// preferred one).
var telemetryCompressionTypes = []int8{4, 3, 1, 2}

func handleGetTelemetrySubscriptions(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := r.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	id := r.ClientInstanceID
	if id == ([16]byte{}) {
		id = config.RandomUUID()
	}
	resp.ClientInstanceID = id
	resp.SubscriptionID = telemetrySubscriptionID(id)
	resp.AcceptedCompressionTypes = telemetryCompressionTypes
	resp.PushIntervalMillis = telemetryPushIntervalMs
	resp.TelemetryMaxBytes = b.cfg.Int("telemetry.max.bytes")
	resp.DeltaTemporality = true
	resp.RequestedMetrics = []string{}
	return protocol.Response{Msg: resp}, nil
}

// telemetrySubscriptionID is ClientMetricsManager.computeSubscriptionId for
// the empty metric set at the default interval: CRC32C of "[]300000" (Java's
// Set.toString plus the interval), XORed with Uuid.hashCode of the client
// instance id.
func telemetrySubscriptionID(id [16]byte) int32 {
	crc := int32(crc32.Checksum([]byte("[]300000"), crc32.MakeTable(crc32.Castagnoli)))
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return crc ^ (int32(h>>32) ^ int32(h))
}
