package broker

// GetTelemetrySubscriptions: v0 (client listeners; served, not advertised)
//
// Behavior (ClientMetricsManager.processGetTelemetrySubscriptionRequest,
// KIP-714):
//   - kgo-broker has no metrics exporter that receives client telemetry,
//     so, as Kafka without one, the API is left out of ApiVersions (a
//     client that reads ApiVersions never asks) but is answered when asked.
//   - The client instance id is the client's, or a new random one when it
//     sends the zero id.
//   - The subscriptions are the CLIENT_METRICS configs in the metadata
//     image (kafka-client-metrics.sh, 44_incremental_alter_configs.go);
//     those whose every match selector's regex matches the client whole
//     (no selector: every client) apply: client_instance_id (Uuid's base64
//     form), client_id (the request header's), client_software_name and
//     _version (the connection's ApiVersions v3+, "unknown" before one),
//     client_source_address (Java's InetAddress.getHostAddress form) and
//     client_source_port. The answer requests the union of their metric
//     prefixes ("*" alone if any subscription has it) at the smallest of
//     their intervals and the default 5 minutes; none applying: no
//     metrics (the client pushes nothing) every 5 minutes.
//   - The union comes out in Java HashSet order (config.JavaHashOrder),
//     the subscriptions in Kafka's map order, and the subscription id is
//     Kafka's: CRC32C of the set's toString followed by the interval,
//     XORed with the instance id's hash; PushTelemetry recomputes it, so a
//     subscription change makes a client's old id unknown, as Kafka's
//     re-evaluation on its subscription version does.
//   - Accepted compression types zstd, lz4, gzip, snappy;
//     telemetry.max.bytes; delta temporality.
//   - Kafka throttles a client asking again before its push interval
//     (THROTTLING_QUOTA_EXCEEDED); kgo-broker keeps no per-client state
//     and answers every time.

import (
	"context"
	"encoding/binary"
	"hash/crc32"
	"net"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regHiddenKey(71, 0, 0, onBroker, handleGetTelemetrySubscriptions) }

// telemetryCompressionTypes are ClientMetricsManager's
// SUPPORTED_COMPRESSION_TYPES: zstd, lz4, gzip, snappy (the first is the
// preferred one).
var telemetryCompressionTypes = []int8{4, 3, 1, 2}

var crc32c = crc32.MakeTable(crc32.Castagnoli)

func handleGetTelemetrySubscriptions(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.GetTelemetrySubscriptionsRequest)
	resp := r.ResponseKind().(*kmsg.GetTelemetrySubscriptionsResponse)
	id := r.ClientInstanceID
	if id == ([16]byte{}) {
		id = config.RandomUUID()
	}
	metrics, interval := telemetrySubscription(b.meta.Image(), req, id)
	resp.ClientInstanceID = id
	resp.SubscriptionID = telemetrySubscriptionID(metrics, interval, id)
	resp.AcceptedCompressionTypes = telemetryCompressionTypes
	resp.PushIntervalMillis = interval
	resp.TelemetryMaxBytes = b.cfg.Int("telemetry.max.bytes")
	resp.DeltaTemporality = true
	resp.RequestedMetrics = metrics
	return protocol.Response{Msg: resp}, nil
}

// telemetrySubscription is ClientMetricsManager.createClientInstance: the
// metrics and push interval the subscriptions matching this client ask for.
func telemetrySubscription(img *metadatacache.Image, req *protocol.Request, id [16]byte) ([]string, int32) {
	attrs := telemetryClientAttributes(req, id)
	var names []string
	for _, cr := range img.ConfigResources() {
		if cr.Type == metadatacache.ConfigResourceClientMetrics {
			names = append(names, cr.Name)
		}
	}
	interval := int32(config.ClientMetricsDefaultInterval)
	var metrics []string
	all := false
	for _, name := range config.JavaHashOrder(names, true) {
		sub, err := config.ParseClientMetrics(name, img.Configs(metadatacache.ConfigResource{Type: metadatacache.ConfigResourceClientMetrics, Name: name}))
		if err != nil || !telemetryMatches(sub, attrs) {
			continue
		}
		for _, m := range sub.Metrics {
			all = all || m == config.ClientMetricsAllMetrics
		}
		metrics = append(metrics, sub.Metrics...)
		interval = min(interval, sub.IntervalMs)
	}
	if all {
		return []string{config.ClientMetricsAllMetrics}, interval
	}
	out := config.JavaHashOrder(metrics, false)
	if out == nil {
		out = []string{}
	}
	return out, interval
}

// telemetryClientAttributes is ClientMetricsInstanceMetadata's attribute
// map; an attribute the request does not carry is absent (never matches).
func telemetryClientAttributes(req *protocol.Request, id [16]byte) map[string]string {
	attrs := map[string]string{
		config.ClientMetricsInstanceID: config.UUID(id).String(),
		config.ClientMetricsClientID:   req.ClientID,
	}
	if req.ClientSoftwareName != "" {
		attrs[config.ClientMetricsSoftwareName] = req.ClientSoftwareName
		attrs[config.ClientMetricsSoftwareVersion] = req.ClientSoftwareVersion
	}
	if ta, ok := req.RemoteAddr.(*net.TCPAddr); ok {
		attrs[config.ClientMetricsSourceAddress] = javaHostAddress(ta.IP)
		attrs[config.ClientMetricsSourcePort] = strconv.Itoa(ta.Port)
	}
	return attrs
}

// telemetryMatches is ClientMetricsInstanceMetadata.isMatch.
func telemetryMatches(sub config.ClientMetricsSubscription, attrs map[string]string) bool {
	for sel, re := range sub.Match {
		v, ok := attrs[sel]
		if !ok || !re.MatchString(v) {
			return false
		}
	}
	return true
}

// javaHostAddress is InetAddress.getHostAddress: dotted IPv4, or all
// eight IPv6 groups in lowercase hex without leading zeros and without
// "::" compression.
func javaHostAddress(ip net.IP) string {
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	if len(ip) != net.IPv6len {
		return ip.String()
	}
	groups := make([]string, 8)
	for i := range groups {
		groups[i] = strconv.FormatUint(uint64(binary.BigEndian.Uint16(ip[2*i:])), 16)
	}
	return strings.Join(groups, ":")
}

// telemetrySubscriptionID is ClientMetricsManager.computeSubscriptionId:
// CRC32C of the metric set's toString ("[a, b]") followed by the interval,
// XORed with Uuid.hashCode of the client instance id.
func telemetrySubscriptionID(metrics []string, interval int32, id [16]byte) int32 {
	crc := int32(crc32.Checksum([]byte(config.JavaSetString(metrics)+strconv.Itoa(int(interval))), crc32c))
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return crc ^ (int32(h>>32) ^ int32(h))
}
