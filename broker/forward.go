package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// controllerChannel carries requests from this node to the active
// controller over the CONTROLLER listener, as a Kafka broker's
// NodeToControllerChannelManager does. It is used even when the controller
// runs in this very process, so combined and split nodes share one path.
//
// Two kinds of request use it:
//
//	Request  the node's own requests (BrokerRegistration, BrokerHeartbeat,
//	         AlterPartition, AllocateProducerIds, topic auto-creation,
//	         ControllerRegistration), at the newest version both sides serve
//	Forward  a client's admin request, wrapped in an Envelope (58) with the
//	         client's header, principal and address and unwrapped at the
//	         client's version (ForwardingManager; forward_apis.go lists them)
//
// Both retry on the next controller while it is unknown, unreachable or
// answers NOT_CONTROLLER (for an Envelope, the Envelope's error code), until
// the caller's context ends. c.mu (the client cache) is a leaf, never held
// while sending.
type controllerChannel struct {
	nodeID   int32
	logger   *zap.Logger
	clientID string
	// leader reports the active controller's id and CONTROLLER address, or
	// ok=false while there is none.
	leader func() (id int32, addr string, ok bool)

	// opts are the controller listener's TLS and SASL; set before use.
	opts protocol.ClientOptions

	mu      lockrank.Mutex              // closes clients (their leaf lock) under it
	clients map[string]*protocol.Client // by address
}

func newControllerChannel(nodeID int32, leader func() (int32, string, bool), logger *zap.Logger) *controllerChannel {
	c := &controllerChannel{
		nodeID:   nodeID,
		logger:   logger,
		clientID: "broker-" + strconv.Itoa(int(nodeID)) + "-to-controller",
		leader:   leader,
		clients:  make(map[string]*protocol.Client),
	}
	c.mu.SetRank(lockrank.ControllerChannel)
	return c
}

// errNoController is returned while no controller is known; handlers turn it
// into the retriable error Kafka uses for the API (NOT_CONTROLLER or
// REQUEST_TIMED_OUT).
var errNoController = errors.New("no active controller is known")

// Request sends req to the active controller and returns its response. It
// retries while the controller is unknown, unreachable or answers
// NOT_CONTROLLER, until ctx is done. This broker's own requests
// (registration, heartbeats, AlterPartition, producer id blocks, automatic
// topic creation) go this way, with the broker's identity.
func (c *controllerChannel) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.request(ctx, func(ctx context.Context, cl *protocol.Client) (kmsg.Response, error) {
		return cl.Request(ctx, req)
	}, req.Key())
}

// errForwardUnsupported is Forward's answer when the controller refused the
// embedded request's version (UNSUPPORTED_VERSION in the Envelope): Kafka's
// broker closes the client's connection so the client refreshes the
// versions it may use (KafkaApis.handleInvalidVersionsDuringForwarding).
var errForwardUnsupported = errors.New("the controller does not support the forwarded request version")

// Forward sends a client's request to the active controller in an Envelope
// (58), as Kafka's ForwardingManager does: the embedded request keeps the
// client's header (its correlation id and client id) and version, and the
// Envelope names the client's principal and address, so the controller
// decides as if the client had asked it. The answer is the controller's
// response to the embedded request at the client's version. An Envelope
// error other than NOT_CONTROLLER (retried on the new controller) and
// UNSUPPORTED_VERSION (errForwardUnsupported) is answered with the API's
// UNKNOWN_SERVER_ERROR response, as Kafka does.
//
// A controller that does not serve Envelope (a kgo-broker controller before
// it did) gets the request directly at the client's version, the path every
// forwarded request took before.
func (c *controllerChannel) Forward(ctx context.Context, req *protocol.Request) (kmsg.Response, error) {
	env := kmsg.NewPtrEnvelopeRequest()
	req.Msg.SetVersion(req.Version)
	env.RequestData = appendRequestWithHeader(nil, req.Msg, req.CorrelationID, req.ClientID)
	env.RequestPrincipal = encodePrincipal(req.Principal)
	env.ClientHostAddress = clientAddress(req.RemoteAddr)
	var envErr int16
	resp, err := c.request(ctx, func(ctx context.Context, cl *protocol.Client) (kmsg.Response, error) {
		if _, _, ok := cl.Versions(env.Key()); !ok {
			return cl.RequestVersion(ctx, req.Msg, req.Version)
		}
		return cl.RequestVersion(ctx, env, 0)
	}, req.Key)
	if err != nil {
		return nil, err
	}
	er, ok := resp.(*kmsg.EnvelopeResponse)
	if !ok {
		return resp, nil // sent directly
	}
	envErr = er.ErrorCode
	switch {
	case envErr == kerr.UnsupportedVersion.Code:
		return nil, errForwardUnsupported
	case envErr != 0:
		c.logger.Debug("forwarded request failed with an envelope error", zap.String("api", kmsg.NameForKey(req.Key)), zap.Int16("error", envErr))
		return errorResponse(req.Msg, kerr.UnknownServerError.Code), nil
	}
	out := req.Msg.ResponseKind()
	out.SetVersion(req.Version)
	if err := readResponseWithHeader(er.ResponseData, req.Key, req.CorrelationID, out); err != nil {
		c.logger.Warn("unparseable response in an envelope", zap.String("api", kmsg.NameForKey(req.Key)), zap.Error(err))
		return errorResponse(req.Msg, kerr.UnknownServerError.Code), nil
	}
	return out, nil
}

// encodePrincipal serializes the client's principal as
// DefaultKafkaPrincipalBuilder.serialize does: a version-prefixed
// DefaultPrincipalData v0 with the type, name and whether a delegation
// token authenticated it. A request with no principal (served in-process)
// is User:ANONYMOUS.
func encodePrincipal(p protocol.Principal) []byte {
	if p.IsZero() {
		p = protocol.Anonymous
	}
	d := kmsg.DefaultPrincipalData{Version: 0, Type: p.Type, Name: p.Name, TokenAuthenticated: p.TokenAuthenticated}
	return d.AppendTo(nil)
}

// clientAddress is InetAddress.getAddress of the client: 4 bytes for IPv4,
// 16 for IPv6 (0.0.0.0 when unknown).
func clientAddress(a net.Addr) []byte {
	var ip net.IP
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UDPAddr:
		ip = a.IP
	}
	if v4 := ip.To4(); v4 != nil {
		return []byte(v4)
	}
	if len(ip) == net.IPv6len {
		return []byte(ip)
	}
	return []byte{0, 0, 0, 0}
}

func (c *controllerChannel) request(ctx context.Context, send func(context.Context, *protocol.Client) (kmsg.Response, error), key int16) (kmsg.Response, error) {
	backoff := 20 * time.Millisecond
	for {
		resp, err := c.try(ctx, send)
		if err == nil && !notController(resp) {
			return resp, nil
		}
		if ctx.Err() != nil {
			if err == nil {
				return resp, nil
			}
			return nil, fmt.Errorf("forwarding %s to the controller: %w (last error: %v)", kmsg.NameForKey(key), ctx.Err(), err)
		}
		c.logger.Debug("retrying request to controller", zap.String("api", kmsg.NameForKey(key)), zap.Error(err))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
		if backoff < 500*time.Millisecond {
			backoff *= 2
		}
	}
}

func (c *controllerChannel) try(ctx context.Context, send func(context.Context, *protocol.Client) (kmsg.Response, error)) (kmsg.Response, error) {
	_, addr, ok := c.leader()
	if !ok {
		return nil, errNoController
	}
	cl, err := c.client(ctx, addr)
	if err != nil {
		return nil, err
	}
	resp, err := send(ctx, cl)
	if err != nil {
		c.drop(addr, cl)
		return nil, err
	}
	return resp, nil
}

func (c *controllerChannel) client(ctx context.Context, addr string) (*protocol.Client, error) {
	c.mu.Lock()
	cl := c.clients[addr]
	c.mu.Unlock()
	if cl != nil && cl.Err() == nil {
		return cl, nil
	}
	if cl != nil {
		// Failed, or its SASL session is about to end (KIP-368): a new
		// connection authenticates again.
		c.drop(addr, cl)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	opts := c.opts
	opts.ClientID = c.clientID
	cl, err := protocol.DialOptions(dctx, addr, opts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.clients[addr]; old != nil {
		cl.Close()
		return old, nil
	}
	c.clients[addr] = cl
	return cl, nil
}

func (c *controllerChannel) drop(addr string, cl *protocol.Client) {
	c.mu.Lock()
	if c.clients[addr] == cl {
		delete(c.clients, addr)
	}
	c.mu.Unlock()
	cl.Close()
}

func (c *controllerChannel) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, cl := range c.clients {
		cl.Close()
		delete(c.clients, addr)
	}
}

// notController reports whether a controller answered that it is not the
// active controller (any more), so the request should go to the new one.
func notController(resp kmsg.Response) bool {
	code := int16(0)
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, t := range r.Results {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.CreateACLsResponse:
		for _, t := range r.Results {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.DeleteACLsResponse:
		for _, t := range r.Results {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == kerr.NotController.Code {
				return true
			}
		}
	case *kmsg.BrokerRegistrationResponse:
		code = r.ErrorCode
	case *kmsg.BrokerHeartbeatResponse:
		code = r.ErrorCode
	case *kmsg.AllocateProducerIDsResponse:
		code = r.ErrorCode
	case *kmsg.ListPartitionReassignmentsResponse:
		code = r.ErrorCode
	case *kmsg.AlterPartitionAssignmentsResponse:
		code = r.ErrorCode
	case *kmsg.ElectLeadersResponse:
		code = r.ErrorCode
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotController.Code {
					return true
				}
			}
		}
	case *kmsg.DescribeQuorumResponse:
		code = r.ErrorCode
		if code == 0 {
			for _, t := range r.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == kerr.NotLeaderForPartition.Code {
						return true
					}
				}
			}
		}
	case *kmsg.UnregisterBrokerResponse:
		code = r.ErrorCode
	case *kmsg.ControllerRegistrationResponse:
		code = r.ErrorCode
	case *kmsg.EnvelopeResponse:
		code = r.ErrorCode
	}
	return code == kerr.NotController.Code
}

// hostPort joins a host and port the way Kafka prints endpoints.
func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
