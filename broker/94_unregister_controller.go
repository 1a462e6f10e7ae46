package broker

// UnregisterController: v0 (client listeners)
//
// Behavior (KafkaApis forwards it to the controller;
// ClusterControlManager.unregisterController, KIP-1312):
//   - Forwarded to the active controller once the CONTROLLER listener
//     serves UnregisterController.
//   - Until then answered from the metadata image as Kafka's controller
//     decides: UNSUPPORTED_VERSION "The current MetadataVersion is too old to
//     support controller unregistration." below 4.4-IV2,
//     CONTROLLER_ID_NOT_REGISTERED "Controller ID <id> is not currently
//     registered." for a controller without a registration; removing a
//     registration answers UNSUPPORTED_VERSION "Controller unregistration is
//     not implemented by kgo-broker".
//   - REQUEST_TIMED_OUT when no controller answers in time.

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(94, 0, 0, onBroker, handleUnregisterController) }

func handleUnregisterController(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.UnregisterControllerRequest)
	return forwardOr(ctx, b, req, func() kmsg.Response {
		resp := r.ResponseKind().(*kmsg.UnregisterControllerResponse)
		img := b.meta.Image()
		switch {
		case img.MetadataVersion() < metadatacache.MV4_4_IV2:
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ErrorMessage = strPtr("The current MetadataVersion is too old to support controller unregistration.")
		case img.Controller(r.ControllerID) == nil:
			resp.ErrorCode = kerr.ControllerIDNotRegistered.Code
			resp.ErrorMessage = strPtr(fmt.Sprintf("Controller ID %d is not currently registered.", r.ControllerID))
		default:
			resp.ErrorCode = kerr.UnsupportedVersion.Code
			resp.ErrorMessage = strPtr("Controller unregistration is not implemented by kgo-broker")
		}
		return resp
	}, func(resp kmsg.Response) {
		resp.(*kmsg.UnregisterControllerResponse).ErrorCode = kerr.RequestTimedOut.Code
	})
}
