package broker

// ListConfigResources: v0-1 (client listeners)
//
// Behavior (KafkaApis.handleListConfigResources, KIP-1142):
//   - The resource types asked for (all supported ones when none is
//     named): v0 (ListClientMetricsResources) supports CLIENT_METRICS only,
//     v1 also TOPIC, BROKER, BROKER_LOGGER and GROUP. A type outside that
//     set answers a top-level UNSUPPORTED_VERSION and no resources.
//   - In Kafka's order: GROUP (the groups with dynamic group configs in
//     the metadata image), CLIENT_METRICS (the client metrics
//     subscriptions, KIP-714, in the order of Kafka's ClientMetricsManager
//     map: config.JavaHashOrder), BROKER_LOGGER and BROKER
//     (every unfenced broker with an endpoint on the listener the request
//     came in on), TOPIC (every topic, internal ones included); the other
//     types sorted within a type (brokers by id).
//
// Version notes: v0 was ListClientMetricsResources (KIP-714); v1:
// ResourceTypes and the other resource types (KIP-1142).

import (
	"context"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(74, 0, 1, onBroker, handleListConfigResources) }

func handleListConfigResources(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ListConfigResourcesRequest)
	resp := r.ResponseKind().(*kmsg.ListConfigResourcesResponse)
	supported := []int8{metadatacache.ConfigResourceClientMetrics}
	if r.Version >= 1 {
		supported = []int8{metadatacache.ConfigResourceTopic, metadatacache.ConfigResourceBroker,
			metadatacache.ConfigResourceBrokerLogger, metadatacache.ConfigResourceClientMetrics, metadatacache.ConfigResourceGroup}
	}
	want := r.ResourceTypes
	if len(want) == 0 {
		want = supported
	}
	for _, t := range want {
		if !slices.Contains(supported, t) {
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			return protocol.Response{Msg: resp}, nil
		}
	}
	add := func(typ int8, names []string) {
		if !slices.Contains(want, typ) {
			return
		}
		for _, n := range names {
			cr := kmsg.NewListConfigResourcesResponseConfigResource()
			cr.Name, cr.Type = n, typ
			resp.ConfigResources = append(resp.ConfigResources, cr)
		}
	}
	img := b.meta.Image()
	var groups, brokers, subscriptions []string
	for _, cr := range img.ConfigResources() {
		switch cr.Type {
		case metadatacache.ConfigResourceGroup:
			groups = append(groups, cr.Name)
		case metadatacache.ConfigResourceClientMetrics:
			subscriptions = append(subscriptions, cr.Name)
		}
	}
	for _, br := range img.Brokers() {
		if br.Fenced || !slices.ContainsFunc(br.Listeners, func(e metadatacache.Endpoint) bool { return e.Name == req.Listener }) {
			continue
		}
		brokers = append(brokers, strconv.Itoa(int(br.ID)))
	}
	slices.Sort(groups)
	add(metadatacache.ConfigResourceGroup, groups)
	add(metadatacache.ConfigResourceClientMetrics, config.JavaHashOrder(subscriptions, true))
	add(metadatacache.ConfigResourceBrokerLogger, slices.Clone(brokers))
	add(metadatacache.ConfigResourceBroker, brokers)
	add(metadatacache.ConfigResourceTopic, img.TopicNames())
	return protocol.Response{Msg: resp}, nil
}
