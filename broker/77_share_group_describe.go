package broker

// ShareGroupDescribe: v1 (client listeners; KIP-932, group.Coordinator.ShareGroupDescribe)
//
// Behavior:
//   - Per group: state (Empty, Stable), group epoch, assignment epoch,
//     assignor ("simple"), and members with their epoch, rack, client,
//     subscribed topics and assignment (topic ids and names).
//   - GROUP_AUTHORIZATION_FAILED without DESCRIBE on the group; a group
//     whose members hold topics the client may not describe answers
//     TOPIC_AUTHORIZATION_FAILED without members
//     (KafkaApis.handleShareGroupDescribe); GROUP_ID_NOT_FOUND for unknown
//     groups and for classic or consumer groups ("is not a share group");
//     INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS.
//   - Authorized operations when asked (else INT32_MIN).
//   - UNSUPPORTED_VERSION for every group while share.version is 0.
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
	fail := func(code int16) protocol.Response {
		resp := r.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
		for _, g := range r.GroupIDs {
			rg := kmsg.NewShareGroupDescribeResponseGroup()
			rg.GroupID, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
		return protocol.Response{Msg: resp}
	}
	switch {
	case !b.shareGroupsEnabled():
		return fail(kerr.UnsupportedVersion.Code), nil
	case b.groups == nil:
		return fail(kerr.NotCoordinator.Code), nil
	}
	cp := *r
	cp.GroupIDs = nil
	var denied []string
	for _, g := range r.GroupIDs {
		if b.authorize(req, opDescribe, resGroup, g) {
			cp.GroupIDs = append(cp.GroupIDs, g)
		} else {
			denied = append(denied, g)
		}
	}
	resp := b.groups.ShareGroupDescribe(&cp)
	// The coordinator's errors carry Kafka's message (Errors.message()), as
	// GroupCoordinatorService.shareGroupDescribe answers them.
	for i := range resp.Groups {
		if g := &resp.Groups[i]; g.ErrorCode != 0 && g.ErrorMessage == nil {
			if e, ok := kerr.ErrorForCode(g.ErrorCode).(*kerr.Error); ok {
				g.ErrorMessage = strPtr(e.Description)
			}
		}
	}
	img := b.meta.Image()
	for i := range resp.Groups {
		g := &resp.Groups[i]
		if g.ErrorCode != 0 {
			continue
		}
		hidden := false
		for _, m := range g.Members {
			for _, t := range m.Assignment.TopicPartitions {
				name := t.Topic
				if ti := img.TopicByID(t.TopicID); name == "" && ti != nil {
					name = ti.Name
				}
				if !b.authorize(req, opDescribe, resTopic, name) {
					hidden = true
				}
			}
		}
		if hidden {
			g.ErrorCode = kerr.TopicAuthorizationFailed.Code
			g.ErrorMessage = strPtr("The group has described topic(s) that the client is not authorized to describe.")
			g.Members = nil
			continue
		}
		if r.IncludeAuthorizedOperations {
			g.AuthorizedOperations = b.authorizedOperations(req, resGroup, g.GroupID)
		}
	}
	for _, g := range denied {
		rg := kmsg.NewShareGroupDescribeResponseGroup()
		rg.GroupID, rg.ErrorCode = g, kerr.GroupAuthorizationFailed.Code
		resp.Groups = append(resp.Groups, rg)
	}
	return protocol.Response{Msg: resp}, nil
}
