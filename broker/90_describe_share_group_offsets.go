package broker

// DescribeShareGroupOffsets: v0-1 (client listeners)
//
// Behavior (KafkaApis.handleDescribeShareGroupOffsetsRequest with share
// groups off): UNSUPPORTED_VERSION for every requested group, no topics.
// share.version is 0: kgo-broker does not implement share groups (KIP-932),
// its controller never finalizes share.version above 0, and a node does not
// join a cluster that did (the finalized level would be unsupported).
//
// Version notes: v1: lag in the response (KIP-1226).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(90, 0, 1, onBroker, handleDescribeShareGroupOffsets) }

func handleDescribeShareGroupOffsets(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.DescribeShareGroupOffsetsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	for _, g := range r.Groups {
		rg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		rg.GroupID, rg.ErrorCode = g.GroupID, kerr.UnsupportedVersion.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return protocol.Response{Msg: resp}, nil
}
