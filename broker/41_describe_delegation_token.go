package broker

// DescribeDelegationToken: v1-3 (client and controller listeners)
//
// Behavior (KafkaApis.handleDescribeTokensRequest): on a PLAINTEXT
// connection, DELEGATION_TOKEN_REQUEST_NOT_ALLOWED and no tokens (see
// 38_create_delegation_token.go). Kafka's CONTROLLER listener lists the
// API but answers UNKNOWN_SERVER_ERROR; kgo-broker gives the broker's
// answer on both.
//
// Version notes: v0 was removed in 4.0 (KIP-896); v2: flexible; v3: token
// requester in the response (KIP-373).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(41, 1, 3, onBoth, handleDescribeDelegationToken) }

func handleDescribeDelegationToken(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeDelegationTokenRequest)
	resp := r.ResponseKind().(*kmsg.DescribeDelegationTokenResponse)
	resp.ErrorCode = kerr.DelegationTokenRequestNotAllowed.Code
	return protocol.Response{Msg: resp}, nil
}
