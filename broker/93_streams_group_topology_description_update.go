package broker

// StreamsGroupTopologyDescriptionUpdate: v0 (client listeners)
//
// Behavior (KafkaApis with streams groups off): UNSUPPORTED_VERSION.
// streams.version is 0: kgo-broker does not implement streams groups
// (KIP-1071); Kafka Streams applications use the classic protocol
// (group.protocol=classic), which is served.
//
// Version notes: v0 (KIP-1331).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(93, 0, 0, onBroker, handleStreamsGroupTopologyDescriptionUpdate) }

func handleStreamsGroupTopologyDescriptionUpdate(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.StreamsGroupTopologyDescriptionUpdateRequest)
	resp := r.ResponseKind().(*kmsg.StreamsGroupTopologyDescriptionUpdateResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	return protocol.Response{Msg: resp}, nil
}
