package broker

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// brokerClients sends requests from this broker to other brokers on their
// inter.broker.listener.name endpoint, as Kafka's inter-broker
// NetworkClients do (TransactionMarkerChannelManager's WriteTxnMarkers,
// AddPartitionsToTxnManager's verification requests). One connection per
// broker, dialled on first use and again after it failed. A request to this
// very node is served by its own handlers, without a connection, so a
// single-node cluster and a coordinator that leads its own partitions take
// the same path as any other.
type brokerClients struct {
	nodeID   int32
	listener string
	image    func() *metadatacache.Image
	local    func(ctx context.Context, req *protocol.Request) (protocol.Response, error)
	logger   *zap.Logger
	clientID string
	opts     protocol.ClientOptions // the inter-broker listener's TLS and SASL

	mu      lockrank.Mutex          // checks and closes clients (their leaf lock) under it
	clients map[int32]*brokerClient // guarded by mu
	closed  bool
}

type brokerClient struct {
	addr string
	cl   *protocol.Client
}

func newBrokerClients(nodeID int32, listener string, image func() *metadatacache.Image,
	local func(ctx context.Context, req *protocol.Request) (protocol.Response, error), logger *zap.Logger) *brokerClients {
	c := &brokerClients{nodeID: nodeID, listener: listener, image: image, local: local, logger: logger,
		clientID: "broker-" + strconv.Itoa(int(nodeID)) + "-inter-broker", clients: map[int32]*brokerClient{}}
	c.mu.SetRank(lockrank.BrokerClients)
	return c
}

// Request sends req (at the version set on it) to broker id and returns its
// response. Errors are transport errors: the broker is unknown, has no
// inter-broker endpoint, cannot be reached, or the connection broke; the
// caller retries as its protocol says.
func (c *brokerClients) Request(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	if id == c.nodeID && c.local != nil {
		resp, err := c.local(ctx, &protocol.Request{Key: req.Key(), Version: req.GetVersion(), ClientID: c.clientID,
			Msg: req, Listener: c.listener})
		if err != nil {
			return nil, err
		}
		if resp.Msg == nil {
			return nil, fmt.Errorf("local %s gave no response", kmsg.NameForKey(req.Key()))
		}
		return resp.Msg, nil
	}
	cl, err := c.client(ctx, id)
	if err != nil {
		return nil, err
	}
	resp, err := cl.RequestVersion(ctx, req, req.GetVersion())
	if err != nil {
		c.drop(id, cl)
		return nil, err
	}
	return resp, nil
}

func (c *brokerClients) client(ctx context.Context, id int32) (*protocol.Client, error) {
	b := c.image().Broker(id)
	if b == nil {
		return nil, fmt.Errorf("broker %d is not registered", id)
	}
	ep, ok := b.Listener(c.listener)
	if !ok {
		return nil, fmt.Errorf("broker %d has no %s listener", id, c.listener)
	}
	addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("broker %d: inter-broker clients closed", c.nodeID)
	}
	if e := c.clients[id]; e != nil && e.addr == addr && e.cl.Err() == nil {
		c.mu.Unlock()
		return e.cl, nil
	}
	c.mu.Unlock()
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	opts := c.opts
	opts.ClientID, opts.Logger = c.clientID, c.logger
	cl, err := protocol.DialOptions(dctx, addr, opts)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		cl.Close()
		return nil, fmt.Errorf("broker %d: inter-broker clients closed", c.nodeID)
	}
	if e := c.clients[id]; e != nil && e.addr == addr && e.cl.Err() == nil {
		cl.Close() // another request dialled first
		return e.cl, nil
	} else if e != nil {
		e.cl.Close()
	}
	c.clients[id] = &brokerClient{addr: addr, cl: cl}
	return cl, nil
}

func (c *brokerClients) drop(id int32, cl *protocol.Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.clients[id]; e != nil && e.cl == cl {
		delete(c.clients, id)
	}
	cl.Close()
}

// Close closes every connection.
func (c *brokerClients) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for id, e := range c.clients {
		e.cl.Close()
		delete(c.clients, id)
	}
}
