package broker

// StreamsGroupTopologyDescriptionUpdate: v0 (client listeners; KIP-1331)
//
// Behavior (KafkaApis.handleStreamsGroupTopologyDescriptionUpdate,
// GroupCoordinatorService.streamsGroupTopologyDescriptionUpdate):
//   - UNSUPPORTED_VERSION while streams.version is 0.
//   - GROUP_AUTHORIZATION_FAILED without READ on the group.
//   - kgo-broker has no topology description plugin
//     (group.streams.topology.description.plugin.class is not supported),
//     so it answers as Kafka 4.4 does without one: UNSUPPORTED_VERSION,
//     "The broker has no streams group topology description plugin
//     configured." Heartbeats never ask for a description
//     (TopologyDescriptionRequired false).
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
	switch {
	case !b.streamsGroupsEnabled():
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	case !b.authorize(req, opRead, resGroup, r.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
	default:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ErrorMessage = strPtr("The broker has no streams group topology description plugin configured.")
	}
	return protocol.Response{Msg: resp}, nil
}
