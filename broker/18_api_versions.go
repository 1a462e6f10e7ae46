package broker

// ApiVersions: v0-5 (client and controller listeners)
//
// Behavior (KafkaApis.handleApiVersionsRequest, ControllerApis'):
//   - Lists exactly the API keys and version ranges the listener advertises,
//     built from the registry in registry.go (served keys registered hidden,
//     the telemetry APIs, are left out as Kafka leaves them out without a
//     metrics reporter).
//   - An unknown ApiVersions version never reaches this handler: protocol
//     answers it with a v0 UNSUPPORTED_VERSION response carrying the
//     ApiVersions range (KIP-511), so the client retries lower.
//   - INVALID_REQUEST, with no keys, for a request that fails
//     ApiVersionsRequest.isValid: v3+ client software name or version not
//     matching [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?, or v5+ with only
//     one of ClusterId and NodeId.
//   - v5+ on a client listener: REBOOTSTRAP_REQUIRED, with no keys, when
//     the client names a cluster id and node id and either is not this
//     node's (KIP-1242): the client reached a different node than the one
//     its metadata names, e.g. after an address was reused. The CONTROLLER
//     listener does not check them, as Kafka's ControllerApis does not.
//   - v3+ reports supported features (every production feature, at the
//     ranges kgo-broker implements: controller.SupportedFeatures) and the
//     finalized ones at a non-zero level from the metadata image; on a
//     broker listener also kraft.version from raft when it is above 0
//     (KRaftMetadataCache.features: it is a raft control record, not a
//     FeatureLevelRecord; a controller's FeatureControlManager.finalizedFeatures
//     leaves it out). Below v4 a supported feature whose minimum is 0 is left
//     out (KAFKA-17011: older clients reject a 0 minimum).
//
// Version notes:
//   - v1: ThrottleMillis
//   - v3: flexible; ClientSoftwareName/Version in the request; features (KIP-584)
//   - v4: supported features may have minimum 0 (KAFKA-17011)
//   - v5: ClusterId and NodeId in the request, REBOOTSTRAP_REQUIRED (KIP-1242)

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(18, 0, 5, onBoth, handleApiVersions) }

func handleApiVersions(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	where := onBroker
	if req.Listener != "" && b.isControllerListener(req.Listener) {
		where = onController
	}
	switch {
	case !validApiVersionsRequest(r):
		resp.ErrorCode = kerr.InvalidRequest.Code
		return protocol.Response{Msg: resp}, nil
	case where == onBroker && r.Version >= 5 && r.ClusterID != nil && (*r.ClusterID != b.clusterID || r.NodeID != b.nodeID):
		resp.ErrorCode = kerr.RebootstrapRequired.Code
		return protocol.Response{Msg: resp}, nil
	}
	for _, e := range servedKeys(where) {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = e.key, e.min, e.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if r.Version >= 3 {
		b.fillFeatures(resp, where, r.Version < 4)
	}
	return protocol.Response{Msg: resp}, nil
}

// validApiVersionsRequest is ApiVersionsRequest.isValid.
func validApiVersionsRequest(r *kmsg.ApiVersionsRequest) bool {
	if r.Version >= 5 && (r.ClusterID == nil) != (r.NodeID == -1) {
		return false
	}
	if r.Version >= 3 {
		return validSoftwareName(r.ClientSoftwareName) && validSoftwareName(r.ClientSoftwareVersion)
	}
	return true
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
// the metadata image, as a KRaft broker reports it. skipMinZero drops
// supported features whose minimum is 0 (requests below v4,
// ApiVersionsResponse.maybeFilterSupportedFeatureKeys).
func (b *Broker) fillFeatures(resp *kmsg.ApiVersionsResponse, where listenerKind, skipMinZero bool) {
	for _, f := range supportedFeatures {
		if skipMinZero && f.Min == 0 {
			continue
		}
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
