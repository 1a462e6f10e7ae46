package broker

// PushTelemetry: v0 (client listeners; served, not advertised)
//
// Behavior (ClientMetricsManager.processPushTelemetryRequest, KIP-714),
// with no metrics reporter receiving the metrics (see
// 71_get_telemetry_subscriptions.go):
//   - INVALID_REQUEST for a reserved client instance id (zero or one);
//     UNKNOWN_SUBSCRIPTION_ID when the subscription id is not the one
//     GetTelemetrySubscriptions gives that instance now (recomputed from
//     the current subscriptions and this request's client, so a changed
//     subscription makes an old id unknown); UNSUPPORTED_COMPRESSION_TYPE
//     for a compression id Kafka does not know; TELEMETRY_TOO_LARGE above
//     telemetry.max.bytes (the compressed size, as Kafka checks it).
//     Otherwise NONE, and the metrics are dropped unread: with no
//     exporter nothing is ever decompressed, so a compression bomb costs
//     nothing beyond the request itself (socket.request.max.bytes).
//   - Kafka's per-instance checks (a push before the push interval, a push
//     after a terminating one) need state kgo-broker does not keep.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regHiddenKey(72, 0, 0, onBroker, handlePushTelemetry) }

func handlePushTelemetry(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.PushTelemetryRequest)
	resp := r.ResponseKind().(*kmsg.PushTelemetryResponse)
	switch id := config.UUID(r.ClientInstanceID); {
	case id == config.ZeroUUID || id == config.OneUUID:
		resp.ErrorCode = kerr.InvalidRequest.Code
	case r.SubscriptionID != pushSubscriptionID(b, req, r.ClientInstanceID):
		resp.ErrorCode = kerr.UnknownSubscriptionID.Code
	case r.CompressionType < 0 || r.CompressionType > 4:
		resp.ErrorCode = kerr.UnsupportedCompressionType.Code
	case len(r.Metrics) > int(b.cfg.Int("telemetry.max.bytes")):
		resp.ErrorCode = kerr.TelemetryTooLarge.Code
	}
	return protocol.Response{Msg: resp}, nil
}

// pushSubscriptionID is the subscription id GetTelemetrySubscriptions
// would give this client instance now.
func pushSubscriptionID(b *Broker, req *protocol.Request, id [16]byte) int32 {
	metrics, interval := telemetrySubscription(b.meta.Image(), req, id)
	return telemetrySubscriptionID(metrics, interval, id)
}
