package broker

// SaslHandshake: v0-1 (client and controller listeners)
//
// Behavior (KafkaApis.handleSaslHandshakeRequest):
//   - kgo-broker's listeners are PLAINTEXT, where the handshake never
//     reaches an authenticator: every SaslHandshake is answered
//     ILLEGAL_SASL_STATE with no mechanisms, as Kafka answers one sent on
//     a PLAINTEXT listener or after authentication. SASL listeners (KIP-43,
//     KIP-152) are not implemented.
//
// Version notes: v1: the client follows with SaslAuthenticate frames
// instead of raw tokens (KIP-152).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(17, 0, 1, onBoth, handleSaslHandshake) }

func handleSaslHandshake(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.ErrorCode = kerr.IllegalSaslState.Code
	return protocol.Response{Msg: resp}, nil
}
