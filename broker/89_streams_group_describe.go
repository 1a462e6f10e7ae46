package broker

// StreamsGroupDescribe: v0-1 (client listeners)
//
// Behavior (KafkaApis.handleStreamsGroupDescribe with streams groups off):
// UNSUPPORTED_VERSION for every requested group.
// streams.version is 0: kgo-broker does not implement streams groups
// (KIP-1071); Kafka Streams applications use the classic protocol
// (group.protocol=classic), which is served.
//
// Version notes: v1: IncludeTopologyDescription (KIP-1331).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(89, 0, 1, onBroker, handleStreamsGroupDescribe) }

func handleStreamsGroupDescribe(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.StreamsGroupDescribeRequest)
	resp := r.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
	for _, g := range r.Groups {
		rg := kmsg.NewStreamsGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.UnsupportedVersion.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return protocol.Response{Msg: resp}, nil
}
