package broker

// Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-599) as Kafka's
// QuotaFactory wires them: one quota.ClientManager per quota type, fed from
// the image's ClientQuotaRecords (ClientQuotaMetadataManager), and the hooks
// that record into them:
//
//   - Produce (00_produce.go): the request's size against producer_byte_rate;
//   - Fetch (01_fetch.go): the response's size against consumer_byte_rate
//     (max_bytes capped at what the quota window allows; a throttled fetch
//     answers no records and takes its bytes back);
//   - every client request (Handle, below): the handler's time, less what
//     it spent parked in the purgatory, as a percentage of one thread
//     against request_percentage (inter-broker and follower requests are
//     exempt, as Kafka's cluster actions are);
//   - CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+ (strict) and
//     older versions (permissive) on the controller: partitions against
//     controller_mutation_rate (controller.MutationQuota).
//
// The largest throttle time goes in the response's throttle_time_ms and
// mutes the connection for that long after the response (protocol.Response
// Throttle). A forwarded request's throttle from the controller is applied
// by the broker that forwarded it, as KafkaApis.sendForwardedResponse does.

import (
	"context"
	"math"
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/controller"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/quota"
)

type clientQuotas struct {
	produce, fetch, request, mutation *quota.ClientManager
	conns                             *quota.ConnectionQuotas

	last []*metadatacache.ClientQuota // the delivery goroutine's only
}

func newClientQuotas(cfg *config.Config, conns *quota.ConnectionQuotas) *clientQuotas {
	now := func() int64 { return time.Now().UnixMilli() }
	w := quota.Window{Samples: int(cfg.Int("quota.window.num")), WindowMs: int64(cfg.Int("quota.window.size.seconds")) * 1000}
	cw := quota.Window{Samples: int(cfg.Int("controller.quota.window.num")), WindowMs: int64(cfg.Int("controller.quota.window.size.seconds")) * 1000}
	return &clientQuotas{
		produce:  quota.NewClientManager(quota.Produce, w, now),
		fetch:    quota.NewClientManager(quota.Fetch, w, now),
		request:  quota.NewClientManager(quota.Request, w, now),
		mutation: quota.NewClientManager(quota.ControllerMutation, cw, now),
		conns:    conns,
	}
}

// onImage is an image subscriber: it hands changed quotas to the managers
// (ClientQuotaMetadataManager.update).
func (q *clientQuotas) onImage(_, img *metadatacache.Image) {
	qs := img.ClientQuotas()
	if reflect.DeepEqual(qs, q.last) {
		return
	}
	q.last = qs
	byKind := map[quota.Kind]map[quota.Entity]float64{
		quota.Produce: {}, quota.Fetch: {}, quota.Request: {}, quota.ControllerMutation: {},
	}
	ipRates := map[string]int{}
	defaultIPRate := -1
	for _, cq := range qs {
		var e quota.Entity
		var ip *string
		isIP := false
		for _, p := range cq.Entity {
			part := quota.DefaultPart
			if p.Name != nil {
				part = quota.Named(*p.Name)
			}
			switch p.Type {
			case quotaEntityUser:
				e.User = part
			case quotaEntityClientID:
				e.ClientID = part
			case quotaEntityIP:
				isIP, ip = true, p.Name
			}
		}
		if isIP {
			if v, ok := cq.Values["connection_creation_rate"]; ok {
				if ip == nil {
					defaultIPRate = int(v)
				} else {
					ipRates[*ip] = int(v)
				}
			}
			continue
		}
		for kind, m := range byKind {
			if v, ok := cq.Values[kind.Key()]; ok {
				m[e] = v
			}
		}
	}
	for kind, m := range byKind {
		q.manager(kind).SetQuotas(m)
	}
	if q.conns != nil {
		q.conns.SetIPRates(ipRates, defaultIPRate)
	}
}

func (q *clientQuotas) manager(k quota.Kind) *quota.ClientManager {
	switch k {
	case quota.Produce:
		return q.produce
	case quota.Fetch:
		return q.fetch
	case quota.Request:
		return q.request
	}
	return q.mutation
}

// exemptFromRequestQuota are the cluster actions (ApiKeys clusterAction):
// inter-node requests Kafka answers with sendResponseExemptThrottle.
var exemptFromRequestQuota = [kmsg.MaxKey + 1]bool{
	4: true, 5: true, 6: true, 7: true, 27: true, 52: true, 53: true, 54: true, 55: true,
	56: true, 58: true, 62: true, 63: true, 67: true, 80: true, 81: true, 82: true,
}

// requestTimer is the request quota's view of one request, in its context
// as its protocol.ParkedTracker. Only the request's own goroutine touches
// it (replication parks on the handler's goroutine).
type requestTimer struct {
	start    time.Time
	parked   time.Duration
	recorded bool
}

// AddParked implements protocol.ParkedTracker.
func (rt *requestTimer) AddParked(d time.Duration) { rt.parked += d }

func requestTimerOf(ctx context.Context) *requestTimer {
	rt, _ := protocol.ParkedTrackerOf(ctx).(*requestTimer)
	return rt
}

// requestThrottle records the request's handler time once (ClientRequestQuotaManager.
// maybeRecordAndGetThrottleTimeMs) and returns the throttle time in ms; 0
// without a request quota or for a request already recorded.
func (b *Broker) requestThrottle(ctx context.Context, req *protocol.Request) int {
	rt := requestTimerOf(ctx)
	if rt == nil || rt.recorded {
		return 0
	}
	rt.recorded = true
	busy := time.Since(rt.start) - rt.parked
	// nanosToPercentage: 100% is one thread busy for the whole second.
	pct := float64(max(busy, 0)) * 100 / float64(time.Second)
	return b.quotas.request.Record(req.Principal.Name, req.ClientID, pct)
}

// handleWithQuotas runs h and applies the request quota and the throttle
// the handler (or the controller it forwarded to) chose.
func (b *Broker) handleWithQuotas(ctx context.Context, e apiEntry, req *protocol.Request) (protocol.Response, error) {
	timed := b.quotas.request.Enabled() && !exemptFromRequestQuota[req.Key] && !b.isControllerListener(req.Listener)
	if timed {
		ctx = protocol.WithParkedTracker(ctx, &requestTimer{start: time.Now()})
	}
	resp, err := e.handle(ctx, b, req)
	if err != nil {
		return resp, err
	}
	throttle := int(resp.Throttle / time.Millisecond)
	if tr, ok := resp.Msg.(kmsg.ThrottleResponse); ok {
		ms, _ := tr.Throttle()
		throttle = max(throttle, int(ms))
	}
	if timed {
		t := b.requestThrottle(ctx, req)
		if t > throttle {
			b.quotas.request.Throttled(req.Principal.Name, req.ClientID, t)
			throttle = t
		}
	}
	if throttle > 0 {
		if st, ok := resp.Msg.(kmsg.SetThrottleResponse); ok {
			st.SetThrottle(int32(min(throttle, math.MaxInt32)))
		}
		resp.Throttle = time.Duration(throttle) * time.Millisecond
	}
	return resp, nil
}

// byteThrottle records n bytes for the request's client in m and returns
// the throttle time in ms, noting it in the throttle-time metric.
func (b *Broker) byteThrottle(m *quota.ClientManager, req *protocol.Request, n int) int {
	t := m.Record(req.Principal.Name, req.ClientID, float64(n))
	if t > 0 {
		m.Throttled(req.Principal.Name, req.ClientID, t)
	}
	return t
}

// withMutationQuota puts the controller mutation quota of a CreateTopics,
// CreatePartitions or DeleteTopics in ctx (ControllerMutationQuotaManager.newQuotaFor:
// strict from v6, v3 and v5).
func (q *clientQuotas) withMutationQuota(ctx context.Context, req *protocol.Request) (context.Context, *quota.Mutation) {
	var strictSince int16
	switch req.Key {
	case 19:
		strictSince = 6
	case 37:
		strictSince = 3
	case 20:
		strictSince = 5
	default:
		return ctx, nil
	}
	mq := q.mutation.MutationQuota(req.Principal.Name, req.ClientID, req.Version >= strictSince)
	if mq == nil {
		return ctx, nil
	}
	return controller.WithMutationQuota(ctx, mq), mq
}

// skipRequestQuota marks the request as not counted by the request quota
// (an acks=0 produce, a follower's fetch).
func skipRequestQuota(ctx context.Context) {
	if rt := requestTimerOf(ctx); rt != nil {
		rt.recorded = true
	}
}

// connectionQuotas builds the client listeners' ConnectionQuotas from
// max.connections, max.connections.per.ip(.overrides),
// max.connection.creation.rate and their listener.name.<l>. forms.
func connectionQuotas(cfg *config.Config, logger *zap.Logger) *quota.ConnectionQuotas {
	cc := quota.ConnConfig{
		MaxConnections:      int(cfg.Int("max.connections")),
		MaxPerIP:            int(cfg.Int("max.connections.per.ip")),
		MaxCreationRate:     int(cfg.Int("max.connection.creation.rate")),
		Listeners:           map[string]quota.ListenerLimits{},
		InterBrokerListener: cfg.InterBrokerListenerName,
		Window:              quota.Window{Samples: int(cfg.Int("quota.window.num")), WindowMs: int64(cfg.Int("quota.window.size.seconds")) * 1000},
	}
	cc.PerIPOverrides = ipOverrides(cfg.String("max.connections.per.ip.overrides"), logger)
	for _, l := range cfg.Listeners {
		prefix := "listener.name." + strings.ToLower(l.Name) + "."
		var ll quota.ListenerLimits
		if v, _, ok := cfg.Get(prefix + "max.connections"); ok {
			ll.MaxConnections, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if v, _, ok := cfg.Get(prefix + "max.connection.creation.rate"); ok {
			ll.MaxCreationRate, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		cc.Listeners[l.Name] = ll
	}
	return quota.NewConnectionQuotas(cc, func() int64 { return time.Now().UnixMilli() })
}

// admitConn is protocol.Server.Admit over the connection quotas: after a
// connection is counted, an unprotected listener gives up connections if
// the inter-broker listener took the broker over max.connections.
func (q *clientQuotas) admitConn(ctx context.Context, listener string, ip net.IP) error {
	if err := q.conns.Admit(ctx, listener, ip); err != nil {
		return err
	}
	q.conns.EnforceMax()
	return nil
}

// ipOverrides parses max.connections.per.ip.overrides (host:count,...) into
// counts by IP; a host is resolved as InetAddress.getByName does.
func ipOverrides(v string, logger *zap.Logger) map[string]int {
	out := map[string]int{}
	for _, e := range strings.Split(v, ",") {
		host, n, ok := strings.Cut(strings.TrimSpace(e), ":")
		if !ok {
			continue
		}
		count, err := strconv.Atoi(strings.TrimSpace(n))
		if err != nil {
			continue
		}
		// InetAddress.getByName: an address, or the host's first address.
		host = strings.TrimSpace(host)
		ip := net.ParseIP(host)
		if ip == nil {
			addrs, err := net.LookupIP(host)
			if err != nil || len(addrs) == 0 {
				logger.Warn("max.connections.per.ip.overrides: cannot resolve host; ignoring it", zap.String("host", host), zap.Error(err))
				continue
			}
			ip = addrs[0]
		}
		out[ip.String()] = count
	}
	return out
}
