package broker

// ShareAcknowledge: v1-2 (client listeners)
//
// Behavior (KafkaApis.handleShareAcknowledgeRequest with share groups off):
// a top-level UNSUPPORTED_VERSION and no topics.
// share.version is 0: kgo-broker does not implement share groups (KIP-932),
// its controller never finalizes share.version above 0, and a node does not
// join a cluster that did (the finalized level would be unsupported).
//
// Version notes: v0 was the 4.0 early-access version, removed in 4.1; v1:
// first stable (KIP-932); v2: renew acknowledgements (KIP-1222).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(79, 1, 2, onBroker, handleShareAcknowledge) }

func handleShareAcknowledge(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ShareAcknowledgeRequest)
	resp := r.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return protocol.Response{Msg: resp}, nil
}
