package broker

// ApiVersions: v0-4 (client and controller listeners)
//
// Behavior:
//   - Lists exactly the API keys and version ranges the listener serves, built
//     from the registry in registry.go.
//   - An unknown ApiVersions version never reaches this handler: protocol
//     answers it with a v0 UNSUPPORTED_VERSION response carrying the
//     ApiVersions range (KIP-511), so the client retries lower.
//   - v3+ reports supported features (every production feature, at the
//     ranges kgo-broker implements: controller.SupportedFeatures) and the
//     finalized ones from the metadata image; on a broker listener also
//     kraft.version from raft when it is above 0 (KRaftMetadataCache.features:
//     it is a raft control record, not a FeatureLevelRecord; a controller's
//     FeatureControlManager.finalizedFeatures leaves it out).
//
// Version notes:
//   - v1: ThrottleMillis
//   - v3: flexible; ClientSoftwareName/Version in the request; features (KIP-584)
//   - v4: no change to the body (KIP-511 fallback clarified)
//   - v5 (KIP-1242, cluster/node id) is not served yet.

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(18, 0, 4, onBoth, handleApiVersions) }

func handleApiVersions(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	if r.Version >= 3 && (!validSoftwareName(r.ClientSoftwareName) || !validSoftwareName(r.ClientSoftwareVersion)) {
		// Kafka answers INVALID_REQUEST for malformed client software fields
		// (ApiVersionsRequest.isValid), still listing the keys.
		resp.ErrorCode = kerr.InvalidRequest.Code
	}
	where := onBroker
	if req.Listener != "" && b.isControllerListener(req.Listener) {
		where = onController
	}
	for _, e := range servedKeys(where) {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = e.key, e.min, e.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if r.Version >= 3 {
		b.fillFeatures(resp, where)
	}
	return protocol.Response{Msg: resp}, nil
}

// validSoftwareName mirrors ApiVersionsRequest's pattern [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?
func validSoftwareName(s string) bool {
	if s == "" {
		return false
	}
	isAlnum := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	if !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// fillFeatures adds the supported and finalized features (KIP-584) that
// kafka-features.sh describe prints. The finalized epoch is the offset of
// the metadata image, as a KRaft broker reports it.
func (b *Broker) fillFeatures(resp *kmsg.ApiVersionsResponse, where listenerKind) {
	for _, f := range supportedFeatures {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	if b.meta == nil {
		return
	}
	img := b.meta.Image()
	resp.FinalizedFeaturesEpoch = img.Offset
	finalized := img.Features() // a copy
	if where == onBroker && b.kraftVersion != nil {
		if kv := b.kraftVersion(); kv > 0 {
			finalized["kraft.version"] = kv
		}
	}
	for _, name := range sortedKeys(finalized) {
		level := finalized[name]
		if level == 0 {
			continue
		}
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = name, level, level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
