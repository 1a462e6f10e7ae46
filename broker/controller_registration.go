package broker

// controllerRegistration registers this controller with the active
// controller (ControllerRegistration, key 70; KIP-919), as Kafka 4.4's
// ControllerRegistrationManager does, on every node with the controller
// role, the active controller included (it sends to itself over its
// CONTROLLER listener):
//
//	image has metadata.version >= 3.7-IV0 and no registration of this
//	incarnation -> send ControllerRegistration (incarnation id, the
//	advertised CONTROLLER listeners, the supported feature ranges,
//	ZkMigrationReady false)
//	error or no answer -> retry after an exponential backoff (100ms doubling
//	up to 120s, ExponentialBackoff(100, 2, 120000, 0.02))
//	acknowledged -> wait until the RegisterControllerRecord is in the image;
//	a later registration of another incarnation (or its removal) sends again
//
// The image is the node's own metadata image; every change wakes the loop
// (Kafka reacts to feature changes and changes of this node's registration).
// One goroutine owns the state; it sends holding no lock.

import (
	"context"
	"crypto/rand"
	"math"
	mrand "math/rand/v2"
	"os"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/metadatacache"
)

type controllerRegistration struct {
	channel *controllerChannel
	logger  *zap.Logger
	image   func() *metadatacache.Image
	// req is the request every attempt sends.
	req *kmsg.ControllerRegistrationRequest
	// wake is poked on every new image.
	wake chan struct{}
	// registered is closed once this incarnation is in the image.
	registered chan struct{}
}

// newControllerRegistration builds the registration of controller id with
// the given CONTROLLER listeners and a new incarnation id.
func newControllerRegistration(ch *controllerChannel, id int32, listeners []config.Listener, protocols map[string]string,
	image func() *metadatacache.Image, logger *zap.Logger) *controllerRegistration {
	req := kmsg.NewPtrControllerRegistrationRequest()
	req.ControllerID = id
	if _, err := rand.Read(req.IncarnationID[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	req.ZkMigrationReady = false
	for _, l := range listeners {
		rl := kmsg.NewControllerRegistrationRequestListener()
		rl.Name, rl.Host, rl.Port = l.Name, l.Host, uint16(l.Port)
		if rl.Host == "" || rl.Host == "0.0.0.0" || rl.Host == "::" {
			// ListenerInfo.withWildcardHostnamesResolved: the local host name.
			if h, err := os.Hostname(); err == nil {
				rl.Host = h
			}
		}
		proto := l.SecurityProtocol
		if p, ok := protocols[l.Name]; ok {
			proto = p
		}
		rl.SecurityProtocol = securityProtocolID(proto)
		req.Listeners = append(req.Listeners, rl)
	}
	for _, f := range supportedFeatures {
		rf := kmsg.NewControllerRegistrationRequestFeature()
		rf.Name, rf.MinSupportedVersion, rf.MaxSupportedVersion = f.Name, f.Min, f.Max
		req.Features = append(req.Features, rf)
	}
	sort.Slice(req.Features, func(i, j int) bool { return req.Features[i].Name < req.Features[j].Name })
	return &controllerRegistration{
		channel:    ch,
		logger:     logger,
		image:      image,
		req:        req,
		wake:       make(chan struct{}, 1),
		registered: make(chan struct{}),
	}
}

// onImage wakes the loop; it is a metadatacache subscriber and never blocks.
func (r *controllerRegistration) onImage(_, _ *metadatacache.Image) {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// inImage reports whether img holds this incarnation's registration.
func (r *controllerRegistration) inImage(img *metadatacache.Image) bool {
	c := img.Controller(r.req.ControllerID)
	return c != nil && c.IncarnationID == r.req.IncarnationID
}

// registrationBackoff is Kafka's ExponentialBackoff(100, 2, 120000, 0.02)
// for the n-th consecutive failure.
func registrationBackoff(failures int) time.Duration {
	d := 100 * math.Pow(2, float64(failures))
	if d > 120000 {
		d = 120000
	}
	d *= 1 + 0.02*(2*mrand.Float64()-1)
	return time.Duration(d) * time.Millisecond
}

// run registers until ctx is done.
func (r *controllerRegistration) run(ctx context.Context) {
	failures := 0
	var retry <-chan time.Time
	wasRegistered := false
	// acked: the active controller acknowledged a registration that the
	// image does not show yet (it answers once the record is committed, so
	// it is on its way); nothing is sent meanwhile.
	acked := false
	for {
		img := r.image()
		if c := img.Controller(r.req.ControllerID); acked && c != nil && c.IncarnationID != r.req.IncarnationID {
			acked = false // another incarnation registered after ours was acknowledged
		}
		switch registered := r.inImage(img); {
		case registered:
			if !wasRegistered {
				r.logger.Info("our controller registration is in the metadata log",
					zap.Int32("controller", r.req.ControllerID), zap.Int64("offset", img.Offset))
				select {
				case <-r.registered:
				default:
					close(r.registered)
				}
			}
			wasRegistered, failures, retry, acked = true, 0, nil, false
		case acked:
		case img.MetadataVersion() < metadatacache.MV3_7_IV0:
			// Not yet: a feature change wakes us.
		case retry != nil:
			// Backing off after a failure.
		default:
			if wasRegistered {
				r.logger.Info("our controller registration was replaced or removed; registering again")
				wasRegistered = false
			}
			if err := r.send(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				d := registrationBackoff(failures)
				failures++
				r.logger.Info("controller registration failed; retrying", zap.Duration("backoff", d), zap.Error(err))
				retry = time.After(d)
			} else {
				failures, acked = 0, true
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-retry:
			retry = nil
		}
	}
}

func (r *controllerRegistration) send(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req := *r.req
	kresp, err := r.channel.Request(rctx, &req)
	if err != nil {
		return err
	}
	resp := kresp.(*kmsg.ControllerRegistrationResponse)
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		if resp.ErrorMessage != nil {
			return &registrationError{err: err, msg: *resp.ErrorMessage}
		}
		return err
	}
	r.logger.Info("the controller acknowledged our controller registration", zap.Int32("controller", r.req.ControllerID))
	return nil
}

type registrationError struct {
	err error
	msg string
}

func (e *registrationError) Error() string { return e.err.Error() + " (" + e.msg + ")" }
func (e *registrationError) Unwrap() error { return e.err }
