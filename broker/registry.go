package broker

import (
	"context"
	"fmt"
	"sort"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// A handler serves one Kafka API. It follows the same steps every time:
// type-assert the request, make the response with ResponseKind(), act, and
// fill the response. A returned error closes the client's connection, which
// is what Apache Kafka does for requests it cannot make sense of.
type handler func(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error)

// listenerKind says which listeners serve an API: client listeners
// (PLAINTEXT, ...), the CONTROLLER listener, or both, as in Kafka's
// ApiMessageType listeners (ZK_BROKER/BROKER/CONTROLLER).
type listenerKind uint8

const (
	onBroker listenerKind = 1 << iota
	onController
	onBoth = onBroker | onController
)

type apiEntry struct {
	key      int16
	min, max int16
	where    listenerKind
	handle   handler
	// hidden APIs are served but not listed in ApiVersions, as Kafka serves
	// GetTelemetrySubscriptions and PushTelemetry without advertising them
	// when no metrics reporter receives client telemetry (KIP-714,
	// ApiVersionsResponse.filterApis).
	hidden bool
}

// The registries of client-listener and controller-listener APIs. The same
// key can be served differently on each (Fetch is a consumer/replica fetch on
// a client listener and a raft fetch on the CONTROLLER listener).
var (
	brokerAPIs     = map[int16]apiEntry{}
	controllerAPIs = map[int16]apiEntry{}
)

// regKey registers the versions an API file really implements. ApiVersions
// answers are built from this registry, so a version is advertised only where
// a handler serves it.
func regKey(key, min, max int16, where listenerKind, h handler) {
	register(apiEntry{key: key, min: min, max: max, where: where, handle: h})
}

// regHiddenKey registers an API that is served but not advertised.
func regHiddenKey(key, min, max int16, where listenerKind, h handler) {
	register(apiEntry{key: key, min: min, max: max, where: where, handle: h, hidden: true})
}

func register(e apiEntry) {
	key, min, max, where := e.key, e.min, e.max, e.where
	if min < 0 || max < min {
		panic(fmt.Sprintf("broker: api key %d has invalid versions %d-%d", key, min, max))
	}
	for _, reg := range []struct {
		kind listenerKind
		m    map[int16]apiEntry
	}{{onBroker, brokerAPIs}, {onController, controllerAPIs}} {
		if where&reg.kind == 0 {
			continue
		}
		if _, dup := reg.m[key]; dup {
			panic(fmt.Sprintf("broker: api key %d registered twice", key))
		}
		reg.m[key] = e
	}
}

func registry(where listenerKind) map[int16]apiEntry {
	if where == onController {
		return controllerAPIs
	}
	return brokerAPIs
}

// versionTable is the protocol.VersionTable of one listener kind.
type versionTable listenerKind

func (t versionTable) Versions(key int16) (min, max int16, ok bool) {
	e, ok := registry(listenerKind(t))[key]
	if !ok {
		return 0, 0, false
	}
	return e.min, e.max, true
}

// servedKeys lists the API keys a listener kind advertises in ApiVersions
// (every served key but the hidden ones), in key order.
func servedKeys(where listenerKind) []apiEntry {
	reg := registry(where)
	out := make([]apiEntry, 0, len(reg))
	for _, e := range reg {
		if !e.hidden {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}
