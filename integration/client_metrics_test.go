//go:build integration

package integration

// Client metrics subscriptions (KIP-714): kafka-client-metrics.sh and
// kafka-configs.sh --entity-type client-metrics create, describe, list
// and delete them with Kafka 4.4's answers (and its refusals of an
// interval out of range, a bad regex, an unknown key), ListConfigResources
// lists them, and GetTelemetrySubscriptions answers a client with the
// metrics and the smallest interval of the subscriptions matching its
// client id, software name and source address, under Kafka's
// subscription id, which PushTelemetry then accepts.

import (
	"encoding/binary"
	"hash/crc32"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClientMetricsSubscriptions(t *testing.T) {
	t.Parallel()
	requireKafkaTools(t)
	b := StartBroker(t, BrokerOptions{})
	tool := func(name string, args ...string) ToolResult {
		return KafkaTool(t, RunOpts{Timeout: 60 * time.Second}, name, append([]string{"--bootstrap-server", b.Addr}, args...)...)
	}
	ok := func(r ToolResult, want string) {
		t.Helper()
		if r.ExitCode != 0 || r.Stdout != want {
			t.Fatalf("want exit 0 and stdout %q:\n%s", want, r)
		}
	}
	fails := func(r ToolResult, want ...string) {
		t.Helper()
		if r.ExitCode != 1 {
			t.Fatalf("want exit 1:\n%s", r)
		}
		for _, w := range want {
			if !strings.Contains(r.Stdout+r.Stderr, w) {
				t.Fatalf("want %q in the output:\n%s", w, r)
			}
		}
	}
	cm := func(args ...string) ToolResult { return tool("kafka-client-metrics.sh", args...) }

	ok(cm("--alter", "--name", "sub1", "--metrics", "org.apache.kafka.producer.", "--interval", "1000", "--match", "client_id=abc.*"),
		"Altered client metrics config for sub1.\n")
	sub1 := "Client metrics configs for sub1 are:\n  interval.ms=1000\n  match=client_id=abc.*\n  metrics=org.apache.kafka.producer.\n"
	ok(cm("--describe"), sub1)
	ok(cm("--list"), "sub1\n")
	ok(cm("--describe", "--name", "nosuch"), "The client metric resource nosuch doesn't exist and doesn't have dynamic config.\n")

	// Refused: nothing is written.
	fails(cm("--alter", "--name", "sub2", "--interval", "50"),
		"Error while executing client metrics command : Invalid value 50 for interval.ms, interval must be between 100 and 3600000 (1 hour)",
		"org.apache.kafka.common.errors.InvalidRequestException: Invalid value 50 for interval.ms")
	fails(cm("--alter", "--name", "sub2", "--match", "client_id=["),
		"Error while executing client metrics command : Illegal client matching pattern: client_id=[",
		"org.apache.kafka.common.errors.InvalidConfigurationException: Illegal client matching pattern: client_id=[")
	fails(cm("--alter", "--name", "sub2", "--match", "foo=bar"), "Illegal client matching pattern: foo=bar")
	fails(tool("kafka-configs.sh", "--alter", "--entity-type", "client-metrics", "--entity-name", "sub2", "--add-config", "foo=bar"),
		"Caused by: org.apache.kafka.common.errors.InvalidRequestException: Unknown client metrics configuration: foo")
	fails(tool("kafka-configs.sh", "--alter", "--entity-type", "client-metrics", "--entity-name", "sub2", "--add-config", "interval.ms=abc"),
		"Caused by: org.apache.kafka.common.errors.InvalidConfigurationException: Invalid value abc for configuration interval.ms: Not a number of type INT")

	// A second subscription through kafka-configs.sh: Java clients from
	// this host, both prefixes (the duplicate dropped), every 2s.
	ok(tool("kafka-configs.sh", "--alter", "--entity-type", "client-metrics", "--entity-name", "sub2", "--add-config",
		`metrics=[org.apache.kafka.consumer.,org.apache.kafka.producer.,org.apache.kafka.consumer.],interval.ms=2000,match=[client_software_name=apache-kafka-java,client_source_address=127\.0\.0\.1]`),
		"Completed updating config for client-metric sub2.\n")
	ok(tool("kafka-configs.sh", "--describe", "--entity-type", "client-metrics", "--entity-name", "sub1"),
		"Dynamic configs for client-metric sub1 are:\n"+
			"  interval.ms=1000 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=1000}\n"+
			"  match=client_id=abc.* sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:match=client_id=abc.*}\n"+
			"  metrics=org.apache.kafka.producer. sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:metrics=org.apache.kafka.producer.}\n")
	all := tool("kafka-configs.sh", "--describe", "--entity-type", "client-metrics")
	if all.ExitCode != 0 || !strings.Contains(all.Stdout, "Dynamic configs for client-metric sub1 are:\n") ||
		!strings.Contains(all.Stdout, "Dynamic configs for client-metric sub2 are:\n"+
			"  interval.ms=2000 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:interval.ms=2000}\n"+
			`  match=client_software_name=apache-kafka-java,client_source_address=127\.0\.0\.1 sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:match=client_software_name=apache-kafka-java,client_source_address=127\.0\.0\.1}`+"\n"+
			"  metrics=org.apache.kafka.consumer.,org.apache.kafka.producer. sensitive=false synonyms={DYNAMIC_CLIENT_METRICS_CONFIG:metrics=org.apache.kafka.consumer.,org.apache.kafka.producer.}\n") {
		t.Fatalf("describe all:\n%s", all)
	}
	// Kafka's subscription map order.
	ok(cm("--list"), "sub2\nsub1\n")
	for v := int16(0); v <= 1; v++ {
		req := kmsg.NewPtrListConfigResourcesRequest()
		req.ResourceTypes = []int8{16}
		resp := rawRequest(t, b, b.Port, req, v).(*kmsg.ListConfigResourcesResponse)
		var names []string
		for _, r := range resp.ConfigResources {
			names = append(names, r.Name+"/"+strconv.Itoa(int(r.Type)))
		}
		if resp.ErrorCode != 0 || !slices.Equal(names, []string{"sub2/16", "sub1/16"}) {
			t.Fatalf("ListConfigResources v%d: error %d, %v", v, resp.ErrorCode, names)
		}
	}

	for _, tc := range []struct {
		clientID, software string
		metrics            []string
		interval           int32
	}{
		{"abc1", "apache-kafka-java", []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."}, 1000},
		{"abc1", "librdkafka", []string{"org.apache.kafka.producer."}, 1000},
		{"xyz", "apache-kafka-java", []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."}, 2000},
		{"xyz", "librdkafka", []string{}, 300000},
	} {
		conn := telemetryConn(t, b, tc.clientID, tc.software)
		sub := telemetryCall(t, conn, tc.clientID, kmsg.NewPtrGetTelemetrySubscriptionsRequest()).(*kmsg.GetTelemetrySubscriptionsResponse)
		if sub.ErrorCode != 0 || !slices.Equal(sub.RequestedMetrics, tc.metrics) || sub.PushIntervalMillis != tc.interval ||
			sub.ClientInstanceID == ([16]byte{}) || !slices.Equal(sub.AcceptedCompressionTypes, []int8{4, 3, 1, 2}) || !sub.DeltaTemporality {
			t.Fatalf("%s (%s): %+v, want metrics %q every %dms", tc.clientID, tc.software, sub, tc.metrics, tc.interval)
		}
		if want := kafkaSubscriptionID(tc.metrics, tc.interval, sub.ClientInstanceID); sub.SubscriptionID != want {
			t.Fatalf("%s (%s): subscription id %d, Kafka's formula gives %d", tc.clientID, tc.software, sub.SubscriptionID, want)
		}
		push := kmsg.NewPtrPushTelemetryRequest()
		push.ClientInstanceID, push.SubscriptionID, push.CompressionType, push.Metrics = sub.ClientInstanceID, sub.SubscriptionID, 0, []byte{}
		if r := telemetryCall(t, conn, tc.clientID, push).(*kmsg.PushTelemetryResponse); r.ErrorCode != 0 {
			t.Fatalf("%s: push with the subscription id: error %d", tc.clientID, r.ErrorCode)
		}
		conn.Close()
	}

	// Deleting sub1: only sub2 is left, and abc1 gets its metrics alone.
	ok(cm("--delete", "--name", "sub1"), "Deleted client metrics config for sub1.\n")
	ok(cm("--list"), "sub2\n")
	conn := telemetryConn(t, b, "abc1", "apache-kafka-java")
	defer conn.Close()
	sub := telemetryCall(t, conn, "abc1", kmsg.NewPtrGetTelemetrySubscriptionsRequest()).(*kmsg.GetTelemetrySubscriptionsResponse)
	if !slices.Equal(sub.RequestedMetrics, []string{"org.apache.kafka.producer.", "org.apache.kafka.consumer."}) || sub.PushIntervalMillis != 2000 {
		t.Fatalf("abc1 after deleting sub1: %+v", sub)
	}
}

// kafkaSubscriptionID is ClientMetricsManager.computeSubscriptionId:
// CRC32C of the metric set's toString and the interval, XORed with the
// Uuid's hashCode.
func kafkaSubscriptionID(metrics []string, interval int32, id [16]byte) int32 {
	s := "[" + strings.Join(metrics, ", ") + "]" + strconv.Itoa(int(interval))
	crc := int32(crc32.Checksum([]byte(s), crc32.MakeTable(crc32.Castagnoli)))
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return crc ^ int32(h>>32) ^ int32(h)
}

// telemetryConn opens a connection that introduced itself with ApiVersions
// v3 (software name and version 4.4.0). GetTelemetrySubscriptions and
// PushTelemetry are not in ApiVersions (no telemetry exporter), so franz-go's
// client would not send them: they go raw, encoded by kmsg.
func telemetryConn(t *testing.T, b *Broker, clientID, software string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", b.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(60 * time.Second))
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = software, "4.4.0"
	if r := telemetryCall(t, conn, clientID, av).(*kmsg.ApiVersionsResponse); r.ErrorCode != 0 {
		t.Fatalf("ApiVersions: error %d", r.ErrorCode)
	}
	return conn
}

// telemetryCall sends req (ApiVersions at v3, the others at v0) on conn
// and decodes the answer.
func telemetryCall(t *testing.T, conn net.Conn, clientID string, req kmsg.Request) kmsg.Response {
	t.Helper()
	var version int16
	if req.Key() == 18 {
		version = 3
	}
	req.SetVersion(version)
	buf := []byte{0, 0, 0, 0}
	buf = kbin.AppendInt16(buf, req.Key())
	buf = kbin.AppendInt16(buf, version)
	buf = kbin.AppendInt32(buf, 1)
	buf = kbin.AppendNullableString(buf, &clientID)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	body = body[4:]
	if resp.IsFlexible() && req.Key() != 18 {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}
