package broker

// ShareGroupDescribe: v1 (client listeners)
//
// Behavior (KafkaApis.handleShareGroupDescribe with share groups off):
// UNSUPPORTED_VERSION for every requested group.
// share.version is 0: kgo-broker does not implement share groups (KIP-932),
// its controller never finalizes share.version above 0, and a node does not
// join a cluster that did (the finalized level would be unsupported).
//
// Version notes: v0 was the 4.0 early-access version, removed in 4.1; v1
// is the first stable one (KIP-932).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(77, 1, 1, onBroker, handleShareGroupDescribe) }

func handleShareGroupDescribe(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.ShareGroupDescribeRequest)
	resp := r.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	for _, g := range r.GroupIDs {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.ErrorCode = g, kerr.UnsupportedVersion.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return protocol.Response{Msg: resp}, nil
}
