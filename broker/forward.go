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

// controllerChannel carries requests from this broker to the active
// controller over the CONTROLLER listener, as a Kafka broker's
// NodeToControllerChannelManager does. It is used even when the controller
// runs in this very process, so combined and split nodes share one path.
type controllerChannel struct {
	nodeID   int32
	logger   *zap.Logger
	clientID string
	// leader reports the active controller's id and CONTROLLER address, or
	// ok=false while there is none.
	leader func() (id int32, addr string, ok bool)

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
// NOT_CONTROLLER, until ctx is done.
func (c *controllerChannel) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	return c.request(ctx, req, -1)
}

// RequestVersion is Request at exactly the given version, which forwarded
// client requests need so the answer carries the fields the client expects.
func (c *controllerChannel) RequestVersion(ctx context.Context, req kmsg.Request, version int16) (kmsg.Response, error) {
	return c.request(ctx, req, version)
}

func (c *controllerChannel) request(ctx context.Context, req kmsg.Request, version int16) (kmsg.Response, error) {
	backoff := 20 * time.Millisecond
	for {
		resp, err := c.try(ctx, req, version)
		if err == nil && !notController(resp) {
			return resp, nil
		}
		if ctx.Err() != nil {
			if err == nil {
				return resp, nil
			}
			return nil, fmt.Errorf("forwarding %s to the controller: %w (last error: %v)", kmsg.NameForKey(req.Key()), ctx.Err(), err)
		}
		c.logger.Debug("retrying request to controller", zap.String("api", kmsg.NameForKey(req.Key())), zap.Error(err))
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

func (c *controllerChannel) try(ctx context.Context, req kmsg.Request, version int16) (kmsg.Response, error) {
	_, addr, ok := c.leader()
	if !ok {
		return nil, errNoController
	}
	cl, err := c.client(ctx, addr)
	if err != nil {
		return nil, err
	}
	var resp kmsg.Response
	if version >= 0 {
		resp, err = cl.RequestVersion(ctx, req, version)
	} else {
		resp, err = cl.Request(ctx, req)
	}
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
	if cl != nil {
		return cl, nil
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cl, err := protocol.Dial(dctx, addr, c.clientID)
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
	}
	return code == kerr.NotController.Code
}

// hostPort joins a host and port the way Kafka prints endpoints.
func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
