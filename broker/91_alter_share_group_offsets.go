package broker

// AlterShareGroupOffsets: v0 (client listeners)
//
// Behavior (KafkaApis.handleAlterShareGroupOffsetsRequest with share groups
// off): a top-level UNSUPPORTED_VERSION with Kafka's generic message "The
// version of API is not supported." and no topics.
// share.version is 0: kgo-broker does not implement share groups (KIP-932),
// its controller never finalizes share.version above 0, and a node does not
// join a cluster that did (the finalized level would be unsupported).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(91, 0, 0, onBroker, handleAlterShareGroupOffsets) }

// unsupportedVersionMessage is UnsupportedVersionException's default
// message, which Kafka puts in the share offsets APIs' ErrorMessage.
const unsupportedVersionMessage = "The version of API is not supported."

func handleAlterShareGroupOffsets(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.AlterShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.ErrorMessage = strPtr(unsupportedVersionMessage)
	return protocol.Response{Msg: resp}, nil
}
