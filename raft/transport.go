package raft

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/lockrank"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// ClientTransport sends KRaft requests over protocol.Client connections to
// the peers' CONTROLLER endpoints, one connection per address, redialled
// after a failure. A request names its address (the core knows the voters'
// endpoints from the voter set, the leader's from its messages); without
// one it goes to the static voter of that id. Requests on one connection are
// served in order by the peer, as in Kafka.
type ClientTransport struct {
	voters   map[int32]VoterEndpoint
	clientID string
	log      *zap.Logger
	opts     protocol.ClientOptions // TLS and SASL of the controller listener

	mu     lockrank.Mutex            // a leaf
	conns  map[string]*transportConn // by address
	closed bool
}

type transportConn struct {
	mu lockrank.Mutex // serialises dialling; takes ClientTransport.mu and the client's lock
	c  *protocol.Client
}

// NewClientTransport returns a Transport dialling voters' endpoints.
func NewClientTransport(voters map[int32]VoterEndpoint, clientID string, log *zap.Logger) *ClientTransport {
	if log == nil {
		log = zap.NewNop()
	}
	t := &ClientTransport{voters: voters, clientID: clientID, log: log, conns: map[string]*transportConn{}}
	t.mu.SetRank(lockrank.RaftTransport)
	return t
}

// NewClientTransportOptions is NewClientTransport dialling with opts (the
// TLS and SASL of the voters' controller listener); opts.ClientID is set
// to clientID.
func NewClientTransportOptions(voters map[int32]VoterEndpoint, clientID string, log *zap.Logger, opts protocol.ClientOptions) *ClientTransport {
	t := NewClientTransport(voters, clientID, log)
	opts.ClientID = clientID
	t.opts = opts
	return t
}

// Send implements Transport.
func (t *ClientTransport) Send(ctx context.Context, to Peer, req kmsg.Request) (kmsg.Response, error) {
	addr := to.Addr
	if addr == "" {
		ep, ok := t.voters[to.ID]
		if !ok {
			return nil, fmt.Errorf("raft: no endpoint for node %d", to.ID)
		}
		addr = net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port))
	}
	c, err := t.client(ctx, addr)
	if err != nil {
		return nil, err
	}
	if fr, ok := req.(*kmsg.FetchRequest); ok {
		clearFetcherHWBelow18(c, fr)
	}
	resp, err := c.Request(ctx, req)
	if err != nil && c.Err() != nil {
		t.drop(addr, c)
	}
	return resp, err
}

func (t *ClientTransport) client(ctx context.Context, addr string) (*protocol.Client, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, ErrClosed
	}
	tc := t.conns[addr]
	if tc == nil {
		tc = &transportConn{}
		tc.mu.SetRank(lockrank.RaftDial)
		t.conns[addr] = tc
	}
	t.mu.Unlock()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.c != nil && tc.c.Err() == nil {
		return tc.c, nil
	}
	if tc.c != nil {
		tc.c.Close()
		tc.c = nil
	}
	opts := t.opts
	opts.ClientID = t.clientID
	c, err := protocol.DialOptions(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		c.Close()
		return nil, ErrClosed
	}
	tc.c = c
	return c, nil
}

func (t *ClientTransport) drop(addr string, c *protocol.Client) {
	t.mu.Lock()
	tc := t.conns[addr]
	t.mu.Unlock()
	if tc == nil {
		return
	}
	tc.mu.Lock()
	if tc.c == c {
		tc.c = nil
	}
	tc.mu.Unlock()
	c.Close()
}

// Close closes every connection.
func (t *ClientTransport) Close() error {
	t.mu.Lock()
	t.closed = true
	conns := t.conns
	t.conns = map[string]*transportConn{}
	t.mu.Unlock()
	for _, tc := range conns {
		tc.mu.Lock()
		if tc.c != nil {
			tc.c.Close()
			tc.c = nil
		}
		tc.mu.Unlock()
	}
	return nil
}

// clearFetcherHWBelow18 leaves Fetch's HighWatermark at its default when the
// peer serves Fetch only up to v17: the field is v18's (KIP-1166), and
// Kafka's serializer leaves an ignorable field of a newer version off the
// wire (kmsg would write the tag at any flexible version).
func clearFetcherHWBelow18(c *protocol.Client, r *kmsg.FetchRequest) {
	if _, max, ok := c.Versions(r.Key()); !ok || max >= 18 {
		return
	}
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			r.Topics[i].Partitions[j].HighWatermark = FetcherHWNotSupported
		}
	}
}
