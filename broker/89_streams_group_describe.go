package broker

// StreamsGroupDescribe: v0-1 (client listeners; KIP-1071, group.Coordinator.StreamsGroupDescribe)
//
// Behavior (KafkaApis.handleStreamsGroupDescribe):
//   - UNSUPPORTED_VERSION for every group while streams.version is 0.
//   - GROUP_AUTHORIZATION_FAILED for groups without DESCRIBE; a group
//     whose topology names a topic the caller may not DESCRIBE answers
//     TOPIC_AUTHORIZATION_FAILED.
//   - Each group: state (Empty, NotReady, Assigning, Reconciling, Stable),
//     group and assignment epochs, the topology, and each member with its
//     process, endpoint, client tags, current and target assignment.
//     GROUP_ID_NOT_FOUND for unknown groups or groups of another type.
//
// Version notes: v1: IncludeTopologyDescription (KIP-1331); without a
// topology description plugin (group.streams.topology.description.plugin.class
// unset) no description is returned.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(89, 0, 1, onBroker, handleStreamsGroupDescribe) }

func handleStreamsGroupDescribe(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.StreamsGroupDescribeRequest)
	fail := func(code int16) protocol.Response {
		resp := r.ResponseKind().(*kmsg.StreamsGroupDescribeResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewStreamsGroupDescribeResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
		return protocol.Response{Msg: resp}
	}
	switch {
	case !b.streamsGroupsEnabled():
		return fail(kerr.UnsupportedVersion.Code), nil
	case b.groups == nil:
		return fail(kerr.NotCoordinator.Code), nil
	}
	cp := *r
	cp.Groups = nil
	var denied []string
	for _, g := range r.Groups {
		if b.authorize(req, opDescribe, resGroup, g) {
			cp.Groups = append(cp.Groups, g)
		} else {
			denied = append(denied, g)
		}
	}
	resp := b.groups.StreamsGroupDescribe(&cp)
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if g.ErrorCode != 0 {
			continue
		}
		hidden := false
		if t := g.Topology; t != nil {
			for _, s := range t.Subtopologies {
				names := append([]string{}, s.SourceTopics...)
				names = append(names, s.RepartitionSinkTopics...)
				for _, ti := range s.RepartitionSourceTopics {
					names = append(names, ti.Topic)
				}
				for _, ti := range s.StateChangelogTopics {
					names = append(names, ti.Topic)
				}
				for _, n := range names {
					if !b.authorize(req, opDescribe, resTopic, n) {
						hidden = true
					}
				}
			}
		}
		if hidden {
			g.ErrorCode = kerr.TopicAuthorizationFailed.Code
			g.ErrorMessage = strPtr("The described group uses topics that the client is not authorized to describe.")
			g.Members, g.Topology = nil, nil
			continue
		}
		if r.IncludeAuthorizedOperations {
			g.AuthorizedOperations = b.authorizedOperations(req, resGroup, g.Group)
		}
	}
	for _, g := range denied {
		rg := kmsg.NewStreamsGroupDescribeResponseGroup()
		rg.Group, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return protocol.Response{Msg: resp}, nil
}
