package broker

// ExpireDelegationToken: v1-2 (client and controller listeners)
//
// Behavior (ControllerApis.handleExpireDelegationTokenRequest): on a
// PLAINTEXT connection, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED with expiry
// timestamp -1 (see 38_create_delegation_token.go).
//
// Version notes: v0 was removed in 4.0 (KIP-896); v2: flexible.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(40, 1, 2, onBoth, handleExpireDelegationToken) }

func handleExpireDelegationToken(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ExpireDelegationTokenRequest)
	resp := r.ResponseKind().(*kmsg.ExpireDelegationTokenResponse)
	resp.ErrorCode, resp.ExpiryTimestamp = kerr.DelegationTokenRequestNotAllowed.Code, -1
	return protocol.Response{Msg: resp}, nil
}
