package broker

// Admin APIs a KRaft broker forwards to the active controller
// (KafkaApis.maybeForwardToController / forwardToControllerOrFail), each in
// an Envelope (58) with the client's principal and address
// (controllerChannel.Forward, ForwardingManager in Kafka):
//
//	CreateTopics v2-7, DeleteTopics v1-6, CreatePartitions v0-3,
//	IncrementalAlterConfigs v0-1, AlterConfigs v0-2,
//	DescribeQuorum v0-2, UpdateFeatures v0-2,
//	AlterUserScramCredentials v0, AlterClientQuotas v0-1, AddRaftVoter v0-1,
//	RemoveRaftVoter v0 (KIP-853: kafka-metadata-quorum.sh add-controller /
//	remove-controller with --bootstrap-server), UnregisterController v0
//	(KIP-1223), ElectLeaders v0-2 (43_elect_leaders.go),
//	AlterPartitionReassignments v0-1 and ListPartitionReassignments v0
//	(45_alter_partition_reassignments.go, 46_list_partition_reassignments.go).
//
// These are the forwardable APIs (forwardableKeys, ApiKeys.forwardable in
// Kafka 4.4) that kgo-broker's controller serves; CreateAcls and DeleteAcls
// (30_create_acls.go, 31_delete_acls.go) are forwarded the same way when an
// authorizer is configured. UnregisterBroker, AddRaftVoter, RemoveRaftVoter
// and UnregisterController go through forwardOr (forward_local.go):
// forwarded the same way whenever the CONTROLLER listener serves them (it
// does: 64_unregister_broker.go and the KIP-853 files), answered on the
// broker as Kafka's controller answers with the capability off otherwise.
// Kafka also forwards the delegation token APIs; a kgo-broker broker
// answers those itself, with Kafka's answers for the capability off
// (their files say which).
// Kafka's broker also advertises a forwardable API's versions intersected
// with the active controller's (ApiVersionsResponse.intersectForwardableApis);
// kgo-broker advertises its own ranges, which Kafka 4.4's controller serves
// in full.
//
// The request goes to the controller at the version the client used, so
// the controller's answer has exactly the fields that version carries. If no
// controller answers within the request's timeout, each topic gets
// REQUEST_TIMED_OUT (or the top-level error where the API has one), which
// the Java admin client retries. A controller that refuses the embedded
// version (UNSUPPORTED_VERSION in the Envelope) makes the broker close the
// client's connection, so the client asks for versions again.
//
// The broker's own requests to the controller (registration, heartbeats,
// AlterPartition, AllocateProducerIds, automatic topic creation from
// Metadata) are sent directly, without an Envelope, as Kafka's broker sends
// them.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/protocol"
)

func init() {
	regKey(19, 2, 7, onBroker, handleForwarded) // CreateTopics
	regKey(20, 1, 6, onBroker, handleForwarded) // DeleteTopics
	regKey(37, 0, 3, onBroker, handleForwarded) // CreatePartitions
	// IncrementalAlterConfigs (44) and AlterConfigs (33):
	// 44_incremental_alter_configs.go and 33_alter_configs.go forward what
	// their preprocessing (BROKER_LOGGER, BROKER validation) leaves.
	regKey(55, 0, 2, onBroker, handleForwarded) // DescribeQuorum
	regKey(57, 0, 2, onBroker, handleForwarded) // UpdateFeatures
	regKey(51, 0, 0, onBroker, handleForwarded) // AlterUserScramCredentials (controller/scram.go)
}

// forwardTimeout bounds a forwarded request when it carries no timeout of
// its own.
const forwardTimeout = 30 * time.Second

func handleForwarded(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	timeout := forwardTimeout
	if t, ok := req.Msg.(kmsg.TimeoutRequest); ok && t.Timeout() > 0 {
		timeout = time.Duration(t.Timeout()) * time.Millisecond
	}
	fctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := b.forward.Forward(fctx, req)
	if err == errForwardUnsupported {
		b.logger.Info("closing the client connection: the controller does not support the forwarded request version",
			zap.String("api", kmsg.NameForKey(req.Key)), zap.Int16("version", req.Version))
		return protocol.Response{}, err
	}
	if err != nil {
		b.logger.Debug("forwarding to controller failed", zap.Error(err))
		return protocol.Response{Msg: timedOut(req.Msg)}, nil
	}
	return protocol.Response{Msg: resp}, nil
}

// timedOut builds the answer for a forwarded request that no controller
// answered in time.
func timedOut(r kmsg.Request) kmsg.Response { return errorResponse(r, kerr.RequestTimedOut.Code) }

// errorResponse is AbstractRequest.getErrorResponse for the forwardable
// APIs: the request's response with code on every resource (and at the top
// level where the API has one).
func errorResponse(r kmsg.Request, code int16) kmsg.Response {
	resp := r.ResponseKind()
	switch req := r.(type) {
	case *kmsg.CreateTopicsRequest:
		out := resp.(*kmsg.CreateTopicsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.DeleteTopicsRequest:
		out := resp.(*kmsg.DeleteTopicsResponse)
		for _, n := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			name := n
			rt.Topic, rt.ErrorCode = &name, code
			out.Topics = append(out.Topics, rt)
		}
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.CreatePartitionsRequest:
		out := resp.(*kmsg.CreatePartitionsResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewCreatePartitionsResponseTopic()
			rt.Topic, rt.ErrorCode = t.Topic, code
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		out := resp.(*kmsg.IncrementalAlterConfigsResponse)
		for _, rs := range req.Resources {
			rr := kmsg.NewIncrementalAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = rs.ResourceType, rs.ResourceName, code
			out.Resources = append(out.Resources, rr)
		}
	case *kmsg.AlterConfigsRequest:
		out := resp.(*kmsg.AlterConfigsResponse)
		for _, rs := range req.Resources {
			rr := kmsg.NewAlterConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = rs.ResourceType, rs.ResourceName, code
			out.Resources = append(out.Resources, rr)
		}
	case *kmsg.ListPartitionReassignmentsRequest:
		resp.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode = code
	case *kmsg.AlterPartitionAssignmentsRequest:
		// AlterPartitionReassignmentsRequest.getErrorResponse
		out := resp.(*kmsg.AlterPartitionAssignmentsResponse)
		out.ErrorCode = code
		out.AllowReplicationFactorChange = req.Version < 1 || req.AllowReplicationFactorChange
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.ElectLeadersRequest:
		out := resp.(*kmsg.ElectLeadersResponse)
		out.ErrorCode = code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			out.Topics = append(out.Topics, rt)
		}
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		out := resp.(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		for _, n := range append(scramNames(req.Deletions), scramUpsertNames(req.Upsertions)...) {
			if !seen[n] {
				seen[n] = true
				rr := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				rr.User, rr.ErrorCode = n, code
				out.Results = append(out.Results, rr)
			}
		}
	case *kmsg.CreateACLsRequest:
		out := resp.(*kmsg.CreateACLsResponse)
		for range req.Creations {
			res := kmsg.NewCreateACLsResponseResult()
			res.ErrorCode = code
			out.Results = append(out.Results, res)
		}
	case *kmsg.DeleteACLsRequest:
		out := resp.(*kmsg.DeleteACLsResponse)
		for range req.Filters {
			res := kmsg.NewDeleteACLsResponseResult()
			res.ErrorCode = code
			out.Results = append(out.Results, res)
		}
	case *kmsg.UnregisterBrokerRequest:
		resp.(*kmsg.UnregisterBrokerResponse).ErrorCode = code
	case *kmsg.AllocateProducerIDsRequest:
		resp.(*kmsg.AllocateProducerIDsResponse).ErrorCode = code
	case *kmsg.DescribeQuorumRequest:
		resp.(*kmsg.DescribeQuorumResponse).ErrorCode = code
	case *kmsg.AlterClientQuotasRequest:
		quotaTimedOut(req, resp.(*kmsg.AlterClientQuotasResponse), code)
	case *kmsg.UpdateFeaturesRequest:
		out := resp.(*kmsg.UpdateFeaturesResponse)
		out.ErrorCode = code
		if req.Version <= 1 {
			for _, u := range req.FeatureUpdates {
				res := kmsg.NewUpdateFeaturesResponseResult()
				res.Feature, res.ErrorCode = u.Feature, code
				out.Results = append(out.Results, res)
			}
		}
	case *kmsg.AddRaftVoterRequest:
		resp.(*kmsg.AddRaftVoterResponse).ErrorCode = code
	case *kmsg.RemoveRaftVoterRequest:
		resp.(*kmsg.RemoveRaftVoterResponse).ErrorCode = code
	case *kmsg.UnregisterControllerRequest:
		resp.(*kmsg.UnregisterControllerResponse).ErrorCode = code
	}
	return resp
}

func scramNames(ds []kmsg.AlterUserSCRAMCredentialsRequestDeletion) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}

func scramUpsertNames(us []kmsg.AlterUserSCRAMCredentialsRequestUpsertion) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Name)
	}
	return out
}
