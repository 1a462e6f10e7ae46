// Package broker serves Kafka's client APIs (and, in controller roles, the
// controller listener's APIs) on top of the rooms below it.
//
// One file per Kafka API, named by its key (00_produce.go, 01_fetch.go,
// 03_metadata.go, ...). Each file opens with a header saying the versions it
// serves and its behaviour, and registers itself with regKey in init; the
// ApiVersions answer is built from that registry.
//
//	client ── protocol.Server ──► Broker.Handle ──► handler (NN_api.go)
//	                                                 │
//	         metadatacache.Cache (image) ◄───────────┤ read metadata
//	         replication.ReplicaManager ◄────────────┤ produce / fetch / offsets
//	         controllerChannel ──► active controller ┘ admin requests (forwarded
//	                                                   over the CONTROLLER listener)
//
// node.go wires a whole node: storage, raft, controller, metadata cache,
// replica manager, listeners, broker registration and heartbeats.
package broker

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/group"
	"github.com/kgo-broker/kgo-broker/logging"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/replication"
	"github.com/kgo-broker/kgo-broker/security/authorizer"
	"github.com/kgo-broker/kgo-broker/share"
	"github.com/kgo-broker/kgo-broker/sharecoord"
	"github.com/kgo-broker/kgo-broker/sharestate"
	"github.com/kgo-broker/kgo-broker/txn"
)

// Broker is the request-serving half of a node. Its fields are set once by
// the node before the listeners start and are read-only afterwards, except
// autoCreating, which locks itself.
type Broker struct {
	nodeID    int32
	clusterID string
	logger    *zap.Logger
	now       func() time.Time
	cfg       *config.Config

	meta     *metadatacache.Cache
	replicas *replication.ReplicaManager
	forward  *controllerChannel
	groups   *group.Coordinator // group coordinator (group/); nil without the broker role
	txn      *txn.Coordinator   // transaction coordinator (txn/); nil without the broker role
	peers    *brokerClients     // requests to other brokers (interbroker.go); nil without the broker role

	// Share groups (KIP-932). shareCoord is the share coordinator
	// (sharecoord/) and sharePersister the client of it that share
	// partitions and the group coordinator use (share_persister.go); nil
	// without the broker role. shareMemberLeft is told, on a group
	// coordinator loop, that a share group member left or was fenced (the
	// share partitions release its records, share_groups.go); it must not
	// block; nil: no one to tell.
	shareCoord      *sharecoord.Coordinator
	sharePersister  sharestate.Persister
	shareMemberLeft func(groupID, memberID string)
	// shares are the share partitions of the partitions this node leads
	// (KIP-932, shares.go); nil without the broker role.
	shares *share.Manager
	// shareGroupConfig returns a share group's configs; nil reads the
	// image's GROUP config resources.
	shareGroupConfig func(groupID string) map[string]string

	// controllerHandler serves controller-listener APIs (raft and controller
	// RPCs); nil when this node is not a controller.
	controllerHandler func(ctx context.Context, req *protocol.Request) (protocol.Response, error)

	// kraftVersion is raft's kraft.version (a control record, not in the
	// image), which the broker listener's ApiVersions finalizes when above
	// 0 (KRaftMetadataCache.features); nil in tests.
	kraftVersion func() int16
	// authz is the StandardAuthorizer (authz.go); nil without
	// authorizer.class.name.
	authz *authorizer.Authorizer

	controllerListeners map[string]bool
	settings            settings

	autoCreating inflightTopics // topics whose auto-creation is in flight (03_metadata.go)

	// quotas are the client quota managers (quotas.go); nil in tests
	// that build a Broker by hand.
	quotas *clientQuotas
	// replQuotas are the replication throttles (replication_quotas.go);
	// nil in tests
	replQuotas *replicationQuotas

	// logLevels are the loggers' run-time levels (broker_loggers.go);
	// nil when the process's levels are fixed.
	logLevels *logging.Levels

	// bytesOut counts record bytes fetched by consumers (01_fetch.go):
	// BrokerTopicMetrics BytesOutPerSec, all topics (metrics.go).
	bytesOut atomic.Int64
}

// settings are the broker-level config values handlers consult.
type settings struct {
	autoCreateTopics  bool
	numPartitions     int32
	replicationFactor int16
}

func (b *Broker) isControllerListener(name string) bool { return b.controllerListeners[name] }

// Handle implements protocol.Handler.
func (b *Broker) Handle(ctx context.Context, req *protocol.Request) (protocol.Response, error) {
	where := onBroker
	if b.isControllerListener(req.Listener) {
		where = onController
	}
	e, ok := registry(where)[req.Key]
	if !ok || req.Version < e.min || req.Version > e.max {
		return protocol.Response{}, fmt.Errorf("api key %d v%d is not served on listener %s", req.Key, req.Version, req.Listener)
	}
	if where == onBroker && b.authorizing(req) {
		// authorization inside the quotas: a refused request is still
		// timed and throttled, as KafkaApis throttles every request
		orig, authorized := e, e
		authorized.handle = func(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
			return b.handleAuthorized(ctx, orig, req)
		}
		e = authorized
	}
	if b.quotas != nil {
		return b.handleWithQuotas(ctx, e, req)
	}
	return e.handle(ctx, b, req)
}

// handleAuthorized runs a client-listener request through authorizeClient
// (authz_client.go): refused entirely, or its authorized part handled and
// the refused resources added to the answer.
func (b *Broker) handleAuthorized(ctx context.Context, e apiEntry, req *protocol.Request) (protocol.Response, error) {
	deny, run, complete := b.authorizeClient(req)
	if deny != nil {
		deny.SetVersion(req.Version)
		return protocol.Response{Msg: deny}, nil
	}
	inner := req
	if run != req.Msg {
		cp := *req
		cp.Msg = run
		inner = &cp
	}
	out, err := e.handle(ctx, b, inner)
	if err != nil || complete == nil || out.Msg == nil {
		return out, err
	}
	complete(out.Msg)
	return out, nil
}

// ReusesFrame implements protocol.FrameReuser: a Produce request is done with
// once its handler returned and its response was written (the log copies the
// records into the segment with pwrite; acks=all waits inside the handler;
// nothing keeps the topic names or the client id), so the server reuses its
// buffer. Other keys keep allocating: their handlers may keep strings that
// alias the frame (group and session state, for instance).
func (b *Broker) ReusesFrame(key int16) bool { return key == 0 }
