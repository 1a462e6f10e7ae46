package broker

// UnregisterBroker: v0 (client listeners; the CONTROLLER listener serves
// it in controller_apis.go)
//
// Behavior (KafkaApis forwards it to the controller; ClusterControlManager):
//   - Forwarded to the active controller, which removes the broker's
//     registration (kafka-cluster.sh unregister), or answers
//     BROKER_ID_NOT_REGISTERED "Broker ID <id> is not currently registered".
//   - REQUEST_TIMED_OUT when no controller answers in time.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(64, 0, 0, onBroker, handleUnregisterBroker) }

func handleUnregisterBroker(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	return forwardOr(ctx, b, req, func() kmsg.Response {
		resp := req.Msg.ResponseKind().(*kmsg.UnregisterBrokerResponse)
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return resp
	}, func(r kmsg.Response) {
		r.(*kmsg.UnregisterBrokerResponse).ErrorCode = kerr.RequestTimedOut.Code
	})
}
