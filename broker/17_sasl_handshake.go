package broker

// SaslHandshake: v0-1 (client and controller listeners)
//
// Behavior:
//   - The SASL exchange itself runs in protocol (auth_conn.go) before a
//     connection's first other request, as Kafka's SaslServerAuthenticator
//     does inside the channel: SaslHandshake picks the mechanism, then
//     SaslAuthenticate (or, after v0, raw tokens) carry the exchange, and a
//     SaslHandshake on an authenticated connection whose session expires
//     begins a re-authentication (KIP-368).
//   - A SaslHandshake that reaches this handler came on a listener without
//     SASL, or after authentication with no re-authentication possible:
//     Kafka's KafkaApis answers ILLEGAL_SASL_STATE.
//
// Version notes:
//   - v0: the tokens after the handshake travel without Kafka headers
//   - v1: the tokens travel in SaslAuthenticate requests (KIP-152)

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
