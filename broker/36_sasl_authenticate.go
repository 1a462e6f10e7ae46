package broker

// SaslAuthenticate: v0-2 (client and controller listeners)
//
// Behavior (KafkaApis.handleSaslAuthenticateRequest):
//   - On a PLAINTEXT listener the connection is authenticated from the
//     start (as ANONYMOUS), so Kafka answers ILLEGAL_SASL_STATE "SaslAuthenticate
//     request received after successful authentication"; so does
//     kgo-broker, which has no SASL listeners.
//
// Version notes: v1: SessionLifetimeMillis (KIP-368); v2: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(36, 0, 2, onBoth, handleSaslAuthenticate) }

func handleSaslAuthenticate(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	resp.ErrorMessage = strPtr("SaslAuthenticate request received after successful authentication")
	return protocol.Response{Msg: resp}, nil
}
