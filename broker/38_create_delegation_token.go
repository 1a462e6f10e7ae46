package broker

// CreateDelegationToken: v1-3 (client and controller listeners)
//
// Behavior (ControllerApis.handleCreateDelegationTokenRequest; a Kafka
// broker forwards it there):
//   - Delegation tokens (KIP-48) may only be requested over an
//     authenticated SASL or mutual-TLS connection. kgo-broker's listeners
//     are PLAINTEXT, so, as Kafka on PLAINTEXT, every request answers
//     DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: owner and requester are the
//     connection's principal User:ANONYMOUS (the owner the request names
//     when it names one, v3+), timestamps -1, no token id or HMAC.
//
// Version notes: v0 was removed in 4.0 (KIP-896); v2: flexible; v3: owner
// principal in the request, token requester in the response (KIP-373).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(38, 1, 3, onBoth, handleCreateDelegationToken) }

// The principal of every kgo-broker connection: Kafka's
// KafkaPrincipal.ANONYMOUS on PLAINTEXT listeners.
const (
	principalType      = "User"
	anonymousPrincipal = "ANONYMOUS"
)

func handleCreateDelegationToken(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.CreateDelegationTokenRequest)
	resp := r.ResponseKind().(*kmsg.CreateDelegationTokenResponse)
	resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
	resp.PrincipalType, resp.PrincipalName = principalType, anonymousPrincipal
	if r.OwnerPrincipalName != nil && *r.OwnerPrincipalName != "" {
		resp.PrincipalName = *r.OwnerPrincipalName
		resp.PrincipalType = ""
		if r.OwnerPrincipalType != nil {
			resp.PrincipalType = *r.OwnerPrincipalType
		}
	}
	resp.TokenRequesterPrincipalType, resp.TokenRequesterPrincipalName = principalType, anonymousPrincipal
	resp.IssueTimestamp, resp.ExpiryTimestamp, resp.MaxTimestamp = -1, -1, -1
	resp.HMAC = []byte{}
	return protocol.Response{Msg: resp}, nil
}
