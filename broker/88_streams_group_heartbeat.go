package broker

// StreamsGroupHeartbeat: v0-1 (client listeners)
//
// Behavior (KafkaApis.handleStreamsGroupHeartbeat with streams groups off):
// UNSUPPORTED_VERSION, an empty status list, no tasks.
// streams.version is 0: kgo-broker does not implement streams groups
// (KIP-1071); Kafka Streams applications use the classic protocol
// (group.protocol=classic), which is served.
//
// Version notes: v1: MISSING_CLIENT_TAGS status, acceptable recovery lag as
// a long and the topology description request (KIP-1331).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(88, 0, 1, onBroker, handleStreamsGroupHeartbeat) }

func handleStreamsGroupHeartbeat(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.StreamsGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	return protocol.Response{Msg: resp}, nil
}
