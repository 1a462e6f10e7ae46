package broker

// SaslAuthenticate: v0-2 (client and controller listeners)
//
// Behavior:
//   - Served by protocol's authentication phase and re-authentication
//     (auth_conn.go, Kafka's SaslServerAuthenticator): the mechanism's token
//     in, the server's token out, SASL_AUTHENTICATION_FAILED with Kafka's
//     message and the connection closed on failure.
//   - One that reaches this handler came after authentication completed,
//     or on a listener without SASL: KafkaApis answers ILLEGAL_SASL_STATE
//     "SaslAuthenticate request received after successful authentication".
//
// Version notes:
//   - v1: SessionLifetimeMs in the response (KIP-368: the client must
//     re-authenticate before it ends; connections.max.reauth.ms)
//   - v2: flexible

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
	msg := "SaslAuthenticate request received after successful authentication"
	resp.ErrorMessage = &msg
	return protocol.Response{Msg: resp}, nil
}
