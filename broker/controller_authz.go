package broker

// Authorization on the CONTROLLER listener, as Kafka 4.4's ControllerApis
// (also for the requests that arrive in an Envelope, with the forwarded
// principal): a cluster operation for the RPCs that need one
// (controllerClusterOps; CLUSTER_AUTHORIZATION_FAILED otherwise), and per
// resource for the topic and config APIs:
//
//	CreateTopics      CREATE on CLUSTER, else CREATE on each topic
//	                  (TOPIC_AUTHORIZATION_FAILED "Authorization failed.");
//	                  a created topic's configs are returned only with
//	                  DESCRIBE_CONFIGS on it (TopicConfigErrorCode
//	                  TOPIC_AUTHORIZATION_FAILED otherwise)
//	DeleteTopics      DELETE on CLUSTER, else DESCRIBE and DELETE on each
//	                  topic (a topic named but not describable, or
//	                  describable but not deletable: TOPIC_AUTHORIZATION_FAILED;
//	                  a topic id whose topic is not describable answers
//	                  without its name)
//	CreatePartitions  ALTER on each topic
//	(Incremental)AlterConfigs  ALTER_CONFIGS on CLUSTER for BROKER and
//	                  CLIENT_METRICS resources (CLUSTER_AUTHORIZATION_FAILED),
//	                  on the topic (TOPIC_AUTHORIZATION_FAILED), on the
//	                  group (GROUP_AUTHORIZATION_FAILED)
//
// The authorized part of a request goes to the controller; the refused
// resources are answered here, after the controller's results, as
// ControllerApis appends them.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security/authorizer"
)

// controllerClusterOps is the cluster operation each controller RPC
// requires (ControllerApis' authorizeClusterOperation calls).
var controllerClusterOps = map[int16]authorizer.Operation{
	1:  opClusterAction, // Fetch (raft)
	52: opClusterAction, // Vote
	53: opClusterAction, // BeginQuorumEpoch
	54: opClusterAction, // EndQuorumEpoch
	59: opClusterAction, // FetchSnapshot
	55: opDescribe,      // DescribeQuorum
	56: opClusterAction, // AlterPartition
	62: opClusterAction, // BrokerRegistration
	63: opClusterAction, // BrokerHeartbeat
	67: opClusterAction, // AllocateProducerIds
	70: opClusterAction, // ControllerRegistration
	73: opClusterAction, // AssignReplicasToDirs
	82: opClusterAction, // UpdateRaftVoter
	64: opAlter,         // UnregisterBroker
	57: opAlter,         // UpdateFeatures
	51: opAlter,         // AlterUserScramCredentials
	80: opAlter,         // AddRaftVoter
	81: opAlter,         // RemoveRaftVoter
	94: opAlter,         // UnregisterController
	49: opAlterConfigs,  // AlterClientQuotas
	60: opAlter,         // DescribeCluster: on a controller it needs ALTER
	45: opAlter,         // AlterPartitionReassignments
	46: opDescribe,      // ListPartitionReassignments
	43: opAlter,         // ElectLeaders
}

// authorizeControllerRequest answers req itself when authorization refuses
// it entirely; otherwise it returns the request to hand to the controller
// (the authorized part) and a function completing the controller's answer
// with the refused resources.
func (b *Broker) authorizeControllerRequest(req *protocol.Request) (deny kmsg.Response, forward kmsg.Request, complete func(kmsg.Response)) {
	if !b.authorizing(req) {
		return nil, req.Msg, nil
	}
	if op, ok := controllerClusterOps[req.Key]; ok {
		if !b.authorizeCluster(req, op) {
			return clusterAuthFailed(req), nil, nil
		}
		return nil, req.Msg, nil
	}
	switch r := req.Msg.(type) {
	case *kmsg.CreateTopicsRequest:
		return b.authorizeCreateTopics(req, r)
	case *kmsg.DeleteTopicsRequest:
		return b.authorizeDeleteTopics(req, r)
	case *kmsg.CreatePartitionsRequest:
		cp := *r
		cp.Topics = nil
		var denied []string
		for _, t := range r.Topics {
			if b.authorize(req, opAlter, resTopic, t.Topic) {
				cp.Topics = append(cp.Topics, t)
			} else {
				denied = append(denied, t.Topic)
			}
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.CreatePartitionsResponse)
			for _, n := range denied {
				rt := kmsg.NewCreatePartitionsResponseTopic()
				rt.Topic, rt.ErrorCode = n, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
			}
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		cp := *r
		cp.Resources = nil
		var denied []kmsg.IncrementalAlterConfigsResponseResource
		for _, rs := range r.Resources {
			if code := b.alterConfigsDenied(req, rs.ResourceType, rs.ResourceName); code != 0 {
				rr := kmsg.NewIncrementalAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = rs.ResourceType, rs.ResourceName, code
				denied = append(denied, rr)
				continue
			}
			cp.Resources = append(cp.Resources, rs)
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.IncrementalAlterConfigsResponse)
			resp.Resources = append(resp.Resources, denied...)
		}
	case *kmsg.AlterConfigsRequest:
		cp := *r
		cp.Resources = nil
		var denied []kmsg.AlterConfigsResponseResource
		for _, rs := range r.Resources {
			if code := b.alterConfigsDenied(req, rs.ResourceType, rs.ResourceName); code != 0 {
				rr := kmsg.NewAlterConfigsResponseResource()
				rr.ResourceType, rr.ResourceName, rr.ErrorCode = rs.ResourceType, rs.ResourceName, code
				denied = append(denied, rr)
				continue
			}
			cp.Resources = append(cp.Resources, rs)
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.AlterConfigsResponse)
			resp.Resources = append(resp.Resources, denied...)
		}
	}
	return nil, req.Msg, nil
}

// alterConfigsDenied is ControllerApis.authorizeAlterResource: the error
// code for a config resource the request may not alter, 0 if it may.
// Other resource types are left to the controller's validation.
func (b *Broker) alterConfigsDenied(req *protocol.Request, typ kmsg.ConfigResourceType, name string) int16 {
	switch typ {
	case kmsg.ConfigResourceTypeBroker, 16: // BROKER, CLIENT_METRICS
		if !b.authorizeCluster(req, opAlterConfigs) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeTopic:
		if !b.authorize(req, opAlterConfigs, resTopic, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case 32: // GROUP
		if !b.authorize(req, opAlterConfigs, resGroup, name) {
			return kerr.GroupAuthorizationFailed.Code
		}
	}
	return 0
}

func (b *Broker) authorizeCreateTopics(req *protocol.Request, r *kmsg.CreateTopicsRequest) (kmsg.Response, kmsg.Request, func(kmsg.Response)) {
	cluster := b.authorize(req, opCreate, resCluster, authorizer.ClusterName)
	count := map[string]int{}
	for _, t := range r.Topics {
		count[t.Topic]++
	}
	cp := *r
	cp.Topics = nil
	var denied []string
	for _, t := range r.Topics {
		// Duplicates and __cluster_metadata are refused by the controller
		// whatever the ACLs.
		if count[t.Topic] == 1 && t.Topic != "__cluster_metadata" && !cluster && !b.authorize(req, opCreate, resTopic, t.Topic) {
			denied = append(denied, t.Topic)
			continue
		}
		cp.Topics = append(cp.Topics, t)
	}
	return nil, &cp, func(m kmsg.Response) {
		resp := m.(*kmsg.CreateTopicsResponse)
		for i := range resp.Topics {
			t := &resp.Topics[i]
			if t.ErrorCode == 0 && !b.authorize(req, opDescribeConfigs, resTopic, t.Topic) {
				t.Configs = nil
				t.ConfigErrorCode = kerr.TopicAuthorizationFailed.Code
			}
		}
		for _, n := range denied {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = n, kerr.TopicAuthorizationFailed.Code, strPtr("Authorization failed.")
			resp.Topics = append(resp.Topics, rt)
		}
	}
}

func (b *Broker) authorizeDeleteTopics(req *protocol.Request, r *kmsg.DeleteTopicsRequest) (kmsg.Response, kmsg.Request, func(kmsg.Response)) {
	if b.authorize(req, opDelete, resCluster, authorizer.ClusterName) {
		return nil, r, nil
	}
	img := b.meta.Image()
	type refusal struct {
		name *string
		id   [16]byte
	}
	var denied []refusal
	// byName: describable first, then existence (the controller's
	// UNKNOWN_TOPIC_OR_PARTITION), then deletable.
	byName := func(name string) bool {
		if !b.authorize(req, opDescribe, resTopic, name) {
			denied = append(denied, refusal{name: strPtr(name)})
			return false
		}
		if img.TopicByName(name) != nil && !b.authorize(req, opDelete, resTopic, name) {
			denied = append(denied, refusal{name: strPtr(name)})
			return false
		}
		return true
	}
	cp := *r
	cp.TopicNames, cp.Topics = nil, nil
	for _, n := range r.TopicNames {
		if byName(n) {
			cp.TopicNames = append(cp.TopicNames, n)
		}
	}
	for _, t := range r.Topics {
		if t.Topic != nil {
			if byName(*t.Topic) {
				cp.Topics = append(cp.Topics, t)
			}
			continue
		}
		if tp := img.TopicByID(t.TopicID); tp != nil && !b.authorize(req, opDelete, resTopic, tp.Name) {
			var name *string
			if b.authorize(req, opDescribe, resTopic, tp.Name) {
				name = strPtr(tp.Name)
			}
			denied = append(denied, refusal{name: name, id: t.TopicID})
			continue
		}
		cp.Topics = append(cp.Topics, t)
	}
	return nil, &cp, func(m kmsg.Response) {
		resp := m.(*kmsg.DeleteTopicsResponse)
		for _, d := range denied {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = d.name, d.id, kerr.TopicAuthorizationFailed.Code
			resp.Topics = append(resp.Topics, rt)
		}
	}
}

// runAuthorizedControllerAPI authorizes a controller-listener request and
// runs its authorized part.
func runAuthorizedControllerAPI(ctx context.Context, b *Broker, req *protocol.Request) (protocol.Response, error) {
	deny, fwd, complete := b.authorizeControllerRequest(req)
	if deny != nil {
		return protocol.Response{Msg: deny}, nil
	}
	inner := req
	if fwd != req.Msg {
		cp := *req
		cp.Msg = fwd
		inner = &cp
	}
	out, err := b.controllerHandler(ctx, inner)
	if dc, ok := req.Msg.(*kmsg.DescribeClusterRequest); ok && err == nil && dc.IncludeClusterAuthorizedOperations {
		if resp, ok := out.Msg.(*kmsg.DescribeClusterResponse); ok && resp.ErrorCode == 0 {
			resp.ClusterAuthorizedOperations = b.clusterAuthorizedOperations(req)
		}
	}
	if err != nil || complete == nil || out.Msg == nil {
		return out, err
	}
	complete(out.Msg)
	return out, nil
}
