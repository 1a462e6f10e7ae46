package broker

// StreamsGroupHeartbeat: v0-1 (client listeners; KIP-1071, group.Coordinator.StreamsGroupHeartbeat)
//
// Behavior (KafkaApis.handleStreamsGroupHeartbeat):
//   - UNSUPPORTED_VERSION while streams.version is 0 (streams groups off),
//     with an empty status list.
//   - GROUP_AUTHORIZATION_FAILED without READ on the group;
//     TOPIC_AUTHORIZATION_FAILED without DESCRIBE on a topic of the
//     topology (source, repartition and changelog topics).
//   - Member epoch 0 joins with the topology, -1 leaves, -2 is a static
//     member leaving for a while. The coordinator configures the topology
//     against the metadata: the status list says MISSING_SOURCE_TOPICS,
//     INCORRECTLY_PARTITIONED_TOPICS, MISSING_INTERNAL_TOPICS,
//     STALE_TOPOLOGY, ASSIGNMENT_DELAYED or SHUTDOWN_APPLICATION. Missing
//     internal topics are created here (AutoTopicCreationManager), unless
//     the caller may not CREATE them: then the status says so.
//   - Active and standby tasks come from the sticky task assignor; a task
//     moves only once its previous owner revoked it.
//
// Version notes: v1: MISSING_CLIENT_TAGS status, acceptable recovery lag as
// a long and the topology description request (KIP-1331).

import (
	"context"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() { regKey(88, 0, 1, onBroker, handleStreamsGroupHeartbeat) }

func handleStreamsGroupHeartbeat(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	r := req.Msg.(*kmsg.StreamsGroupHeartbeatRequest)
	resp := r.ResponseKind().(*kmsg.StreamsGroupHeartbeatResponse)
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	switch {
	case !b.streamsGroupsEnabled():
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		return protocol.Response{Msg: resp}, nil
	case b.groups == nil:
		resp.ErrorCode = kerr.NotCoordinator.Code
		return protocol.Response{Msg: resp}, nil
	case !b.authorize(req, opRead, resGroup, r.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return protocol.Response{Msg: resp}, nil
	}
	if t := r.Topology; t != nil {
		var unauthorized []string
		seen := map[string]bool{}
		check := func(name string) {
			if !seen[name] {
				seen[name] = true
				if !b.authorize(req, opDescribe, resTopic, name) {
					unauthorized = append(unauthorized, name)
				}
			}
		}
		for _, s := range t.Subtopologies {
			for _, n := range s.SourceTopics {
				check(n)
			}
			for _, n := range s.RepartitionSinkTopics {
				check(n)
			}
			for _, ti := range s.RepartitionSourceTopics {
				check(ti.Topic)
			}
			for _, ti := range s.StateChangelogTopics {
				check(ti.Topic)
			}
		}
		if len(unauthorized) > 0 {
			sort.Strings(unauthorized)
			msg := "The client is not authorized to describe topics: " + strings.Join(unauthorized, ", ")
			resp.ErrorCode, resp.ErrorMessage = kerr.TopicAuthorizationFailed.Code, &msg
			return protocol.Response{Msg: resp}, nil
		}
	}
	out, create := b.groups.StreamsGroupHeartbeat(r, req.ClientID, clientHost(req.RemoteAddr))
	if len(create) > 0 {
		var denied []string
		if !b.authorizeCluster(req, opCreate) {
			for _, t := range create {
				if !b.authorize(req, opCreate, resTopic, t.Name) {
					denied = append(denied, t.Name)
				}
			}
		}
		if len(denied) > 0 {
			out.Status = append(out.Status, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: 3,
				StatusDetail: "Unauthorized to CREATE on topics " + strings.Join(denied, ",") + "."})
		} else {
			b.createStreamsInternalTopics(create)
		}
	}
	return protocol.Response{Msg: out}, nil
}
