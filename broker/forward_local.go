package broker

// Client APIs a Kafka broker forwards to its controller whose controller
// side may not be served yet (the CONTROLLER listener's registry says):
// forwardOr forwards them when it is and answers them locally otherwise,
// with what Kafka's controller answers while the capability is off. So
// UnregisterBroker is forwarded today, and AddRaftVoter, RemoveRaftVoter
// and UnregisterController start being forwarded as soon as the
// controller listener serves them, with no change here.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// controllerServes reports whether the CONTROLLER listener serves key at
// version. Every kgo-broker node of a build registers the same APIs, so the
// active controller's answer is this node's registry.
func controllerServes(key, version int16) bool {
	e, ok := controllerAPIs[key]
	return ok && !e.hidden && version >= e.min && version <= e.max
}

// forwardOr forwards req to the active controller in an Envelope (Kafka's
// maybeForwardToController; controllerChannel.Forward) when the controller
// serves it, else answers local(). timedOut fills the answer when no
// controller answers within the request's timeout (forwardTimeout without
// one); a controller refusing the version closes the client's connection,
// as handleForwarded does.
func forwardOr(ctx context.Context, b *Broker, req *protocol.Request, local func() kmsg.Response, timedOut func(kmsg.Response)) (protocol.Response, error) {
	if !controllerServes(req.Key, req.Version) {
		return protocol.Response{Msg: local()}, nil
	}
	timeout := forwardTimeout
	if t, ok := req.Msg.(kmsg.TimeoutRequest); ok && t.Timeout() > 0 {
		timeout = time.Duration(t.Timeout()) * time.Millisecond
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := b.forward.Forward(fctx, req)
	if err == errForwardUnsupported {
		b.logger.Info("closing the client connection: the controller does not support the forwarded request version",
			zap.String("api", kmsg.NameForKey(req.Key)), zap.Int16("version", req.Version))
		return protocol.Response{}, err
	}
	if err != nil {
		b.logger.Debug("forwarding to controller failed", zap.String("api", kmsg.NameForKey(req.Key)), zap.Error(err))
		resp = req.Msg.ResponseKind()
		timedOut(resp)
	}
	return protocol.Response{Msg: resp}, nil
}
