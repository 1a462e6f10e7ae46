package broker

// Authorization of the client listeners' APIs, as Kafka 4.4's KafkaApis
// (Produce, Fetch and Metadata authorize inside their handlers; the rest
// here, before the handler runs). For each API authorizeClient returns one
// of: a whole answer (the request is refused entirely: a group, a
// transactional id or a cluster operation), or the request to run (the
// authorized part) and a function that adds the refused resources to the
// handler's answer.
//
//	ListOffsets          DESCRIBE topic                  TOPIC_AUTHORIZATION_FAILED
//	OffsetCommit         READ group, READ topic          GROUP_/TOPIC_AUTHORIZATION_FAILED
//	OffsetFetch          DESCRIBE group, DESCRIBE topic  GROUP_AUTHORIZATION_FAILED; topics
//	                                                     asked: TOPIC_AUTHORIZATION_FAILED,
//	                                                     all topics: the undescribable left out
//	FindCoordinator      DESCRIBE group / txn id         GROUP_/TRANSACTIONAL_ID_AUTHORIZATION_FAILED
//	Join/Sync/Heartbeat/LeaveGroup, ConsumerGroupHeartbeat   READ group
//	ConsumerGroupHeartbeat subscribed topics: DESCRIBE   TOPIC_AUTHORIZATION_FAILED
//	DescribeGroups, ConsumerGroupDescribe  DESCRIBE group
//	ListGroups           DESCRIBE cluster, else only the describable groups
//	DeleteGroups         DELETE group
//	OffsetDelete         DELETE group, READ topic
//	InitProducerId       WRITE txn id; without one IDEMPOTENT_WRITE cluster or
//	                     WRITE on some topic (authorizeByResourceType)
//	                                                     TRANSACTIONAL_ID_/CLUSTER_AUTHORIZATION_FAILED
//	AddPartitionsToTxn   v4+: CLUSTER_ACTION; v0-3: WRITE txn id, WRITE topic
//	                     (the others OPERATION_NOT_ATTEMPTED)
//	AddOffsetsToTxn      WRITE txn id, READ group
//	EndTxn               WRITE txn id
//	TxnOffsetCommit      WRITE txn id, READ group, READ topic
//	WriteTxnMarkers      CLUSTER_ACTION                  CLUSTER_AUTHORIZATION_FAILED per partition
//	DescribeTransactions DESCRIBE txn id (topics without DESCRIBE left out)
//	ListTransactions     only the describable txn ids
//	DescribeProducers    READ topic
//	DescribeConfigs      DESCRIBE_CONFIGS topic / cluster (BROKER, BROKER_LOGGER,
//	                     CLIENT_METRICS) / group
//	DeleteRecords        DELETE topic
//	OffsetForLeaderEpoch follower: CLUSTER_ACTION; consumer: DESCRIBE topic
//	DescribeLogDirs      DESCRIBE cluster
//	ElectLeaders, AlterPartitionReassignments, AlterReplicaLogDirs   ALTER cluster
//	AlterClientQuotas    ALTER_CONFIGS cluster (Kafka's controller asks the
//	                     same for the forwarded ones; ElectLeaders and
//	                     AlterClientQuotas are forwarded and the CONTROLLER
//	                     listener checks them again as the Envelope's
//	                     principal, the other two are answered on the broker)
//	DescribeUserScramCredentials, DescribeClientQuotas   DESCRIBE / DESCRIBE_CONFIGS cluster

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

var (
	codeTopicAuth   = kerr.TopicAuthorizationFailed.Code
	codeGroupAuth   = kerr.GroupAuthorizationFailed.Code
	codeTxnAuth     = kerr.TransactionalIDAuthorizationFailed.Code
	codeClusterAuth = kerr.ClusterAuthorizationFailed.Code
)

// authorizeClient decides a client-listener request. deny, when set, is the
// whole answer; otherwise run is the request for the handler and complete,
// when set, finishes the handler's answer.
func (b *Broker) authorizeClient(req *protocol.Request) (deny kmsg.Response, run kmsg.Request, complete func(kmsg.Response)) {
	run = req.Msg
	switch r := req.Msg.(type) {
	case *kmsg.ListOffsetsRequest:
		cp := *r
		cp.Topics = nil
		var denied []kmsg.ListOffsetsResponseTopic
		for _, t := range r.Topics {
			if b.authorize(req, opDescribe, resTopic, t.Topic) {
				cp.Topics = append(cp.Topics, t)
				continue
			}
			rt := kmsg.NewListOffsetsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewListOffsetsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.Timestamp, rp.Offset = p.Partition, codeTopicAuth, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.ListOffsetsResponse)
			resp.Topics = append(resp.Topics, denied...)
		}

	case *kmsg.OffsetCommitRequest:
		if !b.authorize(req, opRead, resGroup, r.Group) {
			return offsetCommitAll(r, codeGroupAuth), nil, nil
		}
		cp := *r
		cp.Topics = nil
		img := b.meta.Image()
		var denied []kmsg.OffsetCommitRequestTopic
		cp.Topics, denied = splitReadable(b, req, r.Topics, func(t kmsg.OffsetCommitRequestTopic) string {
			if r.Version >= 10 {
				if tp := img.TopicByID(t.TopicID); tp != nil {
					return tp.Name
				}
			}
			return t.Topic
		})
		if len(denied) == 0 {
			return nil, r, nil
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.OffsetCommitResponse)
			d := offsetCommitAll(&kmsg.OffsetCommitRequest{Version: r.Version, Topics: denied}, codeTopicAuth)
			resp.Topics = append(resp.Topics, d.Topics...)
		}

	case *kmsg.TxnOffsetCommitRequest:
		if !b.authorize(req, opWrite, resTxnID, r.TransactionalID) {
			return txnOffsetCommitAll(r, codeTxnAuth), nil, nil
		}
		if !b.authorize(req, opRead, resGroup, r.Group) {
			return txnOffsetCommitAll(r, codeGroupAuth), nil, nil
		}
		cp := *r
		cp.Topics = nil
		img := b.meta.Image()
		var denied []kmsg.TxnOffsetCommitRequestTopic
		cp.Topics, denied = splitReadable(b, req, r.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) string {
			if r.Version >= 6 {
				// An unknown topic id is the coordinator's UNKNOWN_TOPIC_ID.
				if tp := img.TopicByID(t.TopicID); tp != nil {
					return tp.Name
				}
				return ""
			}
			return t.Topic
		})
		if len(denied) == 0 {
			return nil, r, nil
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.TxnOffsetCommitResponse)
			d := txnOffsetCommitAll(&kmsg.TxnOffsetCommitRequest{Version: r.Version, Topics: denied}, codeTopicAuth)
			resp.Topics = append(resp.Topics, d.Topics...)
		}

	case *kmsg.OffsetFetchRequest:
		return b.authorizeOffsetFetch(req, r)

	case *kmsg.FindCoordinatorRequest:
		return nil, r, func(m kmsg.Response) {
			resp := m.(*kmsg.FindCoordinatorResponse)
			deny := func(key string) int16 {
				switch r.CoordinatorType {
				case 0:
					if !b.authorize(req, opDescribe, resGroup, key) {
						return codeGroupAuth
					}
				case 1:
					if !b.authorize(req, opDescribe, resTxnID, key) {
						return codeTxnAuth
					}
				}
				return 0
			}
			if r.Version < 4 {
				if code := deny(r.CoordinatorKey); code != 0 {
					resp.ErrorCode, resp.NodeID, resp.Host, resp.Port = code, -1, "", -1
					if r.Version >= 1 {
						resp.ErrorMessage = errDesc(code)
					}
				}
				return
			}
			for i := range resp.Coordinators {
				c := &resp.Coordinators[i]
				if code := deny(c.Key); code != 0 {
					c.ErrorCode, c.NodeID, c.Host, c.Port = code, -1, "", -1
					c.ErrorMessage = errDesc(code)
				}
			}
		}

	case *kmsg.JoinGroupRequest:
		if !b.authorize(req, opRead, resGroup, r.Group) {
			resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
			resp.ErrorCode, resp.Generation, resp.MemberID = codeGroupAuth, -1, ""
			return resp, nil, nil
		}
	case *kmsg.SyncGroupRequest:
		if !b.authorize(req, opRead, resGroup, r.Group) {
			resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
			resp.ErrorCode, resp.MemberAssignment = codeGroupAuth, []byte{}
			return resp, nil, nil
		}
	case *kmsg.HeartbeatRequest:
		if !b.authorize(req, opRead, resGroup, r.Group) {
			resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
			resp.ErrorCode = codeGroupAuth
			return resp, nil, nil
		}
	case *kmsg.LeaveGroupRequest:
		if !b.authorize(req, opRead, resGroup, r.Group) {
			resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
			resp.ErrorCode = codeGroupAuth
			return resp, nil, nil
		}
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		if !b.authorize(req, opRead, resGroup, r.Group) {
			resp.ErrorCode = codeGroupAuth
			return resp, nil, nil
		}
		for _, t := range r.SubscribedTopicNames {
			if !b.authorize(req, opDescribe, resTopic, t) {
				resp.ErrorCode = codeTopicAuth
				return resp, nil, nil
			}
		}

	case *kmsg.DescribeGroupsRequest:
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
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.DescribeGroupsResponse)
			for _, g := range denied {
				rg := kmsg.NewDescribeGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, codeGroupAuth
				resp.Groups = append(resp.Groups, rg)
			}
		}
	case *kmsg.ConsumerGroupDescribeRequest:
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
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.ConsumerGroupDescribeResponse)
			// A group whose members are assigned topics the client may
			// not describe is not described (KafkaApis.handleConsumerGroupDescribe).
			for i := range resp.Groups {
				g := &resp.Groups[i]
				if g.ErrorCode != 0 {
					continue
				}
				hidden := false
				img := b.meta.Image()
				check := func(ts []kmsg.AssignmentTopicPartition) {
					for _, t := range ts {
						name := t.Topic
						if tp := img.TopicByID(t.TopicID); name == "" && tp != nil {
							name = tp.Name
						}
						if !b.authorize(req, opDescribe, resTopic, name) {
							hidden = true
						}
					}
				}
				for _, mem := range g.Members {
					check(mem.Assignment.TopicPartitions)
					check(mem.TargetAssignment.TopicPartitions)
				}
				if hidden {
					g.ErrorCode = codeTopicAuth
					g.ErrorMessage = strPtr("The group has described topic(s) that the client is not authorized to describe.")
					g.Members = nil
				}
			}
			for _, g := range denied {
				rg := kmsg.NewConsumerGroupDescribeResponseGroup()
				rg.Group, rg.ErrorCode = g, codeGroupAuth
				resp.Groups = append(resp.Groups, rg)
			}
		}
	case *kmsg.ListGroupsRequest:
		if b.authorizeCluster(req, opDescribe) {
			return nil, r, nil
		}
		return nil, r, func(m kmsg.Response) {
			resp := m.(*kmsg.ListGroupsResponse)
			kept := resp.Groups[:0]
			for _, g := range resp.Groups {
				if b.authorize(req, opDescribe, resGroup, g.Group) {
					kept = append(kept, g)
				}
			}
			resp.Groups = kept
		}
	case *kmsg.DeleteGroupsRequest:
		cp := *r
		cp.Groups = nil
		var denied []string
		for _, g := range r.Groups {
			if b.authorize(req, opDelete, resGroup, g) {
				cp.Groups = append(cp.Groups, g)
			} else {
				denied = append(denied, g)
			}
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.DeleteGroupsResponse)
			for _, g := range denied {
				rg := kmsg.NewDeleteGroupsResponseGroup()
				rg.Group, rg.ErrorCode = g, codeGroupAuth
				resp.Groups = append(resp.Groups, rg)
			}
		}
	case *kmsg.OffsetDeleteRequest:
		resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
		if !b.authorize(req, opDelete, resGroup, r.Group) {
			resp.ErrorCode = codeGroupAuth
			return resp, nil, nil
		}
		cp := *r
		cp.Topics = nil
		var denied []kmsg.OffsetDeleteResponseTopic
		for _, t := range r.Topics {
			if b.authorize(req, opRead, resTopic, t.Topic) {
				cp.Topics = append(cp.Topics, t)
				continue
			}
			rt := kmsg.NewOffsetDeleteResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetDeleteResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, codeTopicAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
		}
		return nil, &cp, func(m kmsg.Response) {
			out := m.(*kmsg.OffsetDeleteResponse)
			out.Topics = append(out.Topics, denied...)
		}

	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if r.TransactionalID != nil {
			if !b.authorize(req, opWrite, resTxnID, *r.TransactionalID) {
				resp.ErrorCode = codeTxnAuth
				return resp, nil, nil
			}
		} else if !b.authorizeCluster(req, opIdempotentWrite) && !b.authorizeByResourceType(req, opWrite, resTopic) {
			resp.ErrorCode = codeClusterAuth
			return resp, nil, nil
		}
	case *kmsg.AddPartitionsToTxnRequest:
		return b.authorizeAddPartitionsToTxn(req, r)
	case *kmsg.AddOffsetsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		switch {
		case !b.authorize(req, opWrite, resTxnID, r.TransactionalID):
			resp.ErrorCode = codeTxnAuth
			return resp, nil, nil
		case !b.authorize(req, opRead, resGroup, r.Group):
			resp.ErrorCode = codeGroupAuth
			return resp, nil, nil
		}
	case *kmsg.EndTxnRequest:
		if !b.authorize(req, opWrite, resTxnID, r.TransactionalID) {
			resp := r.ResponseKind().(*kmsg.EndTxnResponse)
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = codeTxnAuth, -1, -1
			return resp, nil, nil
		}
	case *kmsg.WriteTxnMarkersRequest:
		if !b.authorizeCluster(req, opClusterAction) {
			resp := r.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
			for _, mk := range r.Markers {
				rm := kmsg.NewWriteTxnMarkersResponseMarker()
				rm.ProducerID = mk.ProducerID
				for _, t := range mk.Topics {
					rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
						rp.Partition, rp.ErrorCode = p, codeClusterAuth
						rt.Partitions = append(rt.Partitions, rp)
					}
					rm.Topics = append(rm.Topics, rt)
				}
				resp.Markers = append(resp.Markers, rm)
			}
			return resp, nil, nil
		}
	case *kmsg.DescribeTransactionsRequest:
		cp := *r
		cp.TransactionalIDs = nil
		var denied []string
		for _, id := range r.TransactionalIDs {
			if b.authorize(req, opDescribe, resTxnID, id) {
				cp.TransactionalIDs = append(cp.TransactionalIDs, id)
			} else {
				denied = append(denied, id)
			}
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.DescribeTransactionsResponse)
			for i := range resp.TransactionStates {
				s := &resp.TransactionStates[i]
				kept := s.Topics[:0]
				for _, t := range s.Topics {
					if b.authorize(req, opDescribe, resTopic, t.Topic) {
						kept = append(kept, t)
					}
				}
				s.Topics = kept
			}
			for _, id := range denied {
				s := kmsg.NewDescribeTransactionsResponseTransactionState()
				s.TransactionalID, s.ErrorCode = id, codeTxnAuth
				resp.TransactionStates = append(resp.TransactionStates, s)
			}
		}
	case *kmsg.ListTransactionsRequest:
		return nil, r, func(m kmsg.Response) {
			resp := m.(*kmsg.ListTransactionsResponse)
			kept := resp.TransactionStates[:0]
			for _, s := range resp.TransactionStates {
				if b.authorize(req, opDescribe, resTxnID, s.TransactionalID) {
					kept = append(kept, s)
				}
			}
			resp.TransactionStates = kept
		}
	case *kmsg.DescribeProducersRequest:
		cp := *r
		cp.Topics = nil
		var denied []kmsg.DescribeProducersResponseTopic
		for _, t := range r.Topics {
			if b.authorize(req, opRead, resTopic, t.Topic) {
				cp.Topics = append(cp.Topics, t)
				continue
			}
			rt := kmsg.NewDescribeProducersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDescribeProducersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codeTopicAuth
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.DescribeProducersResponse)
			resp.Topics = append(resp.Topics, denied...)
		}
	case *kmsg.DescribeConfigsRequest:
		cp := *r
		cp.Resources = nil
		var denied []kmsg.DescribeConfigsResponseResource
		for _, rs := range r.Resources {
			code := int16(0)
			switch rs.ResourceType {
			case kmsg.ConfigResourceTypeTopic:
				if !b.authorize(req, opDescribeConfigs, resTopic, rs.ResourceName) {
					code = codeTopicAuth
				}
			case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, 16: // CLIENT_METRICS
				if !b.authorizeCluster(req, opDescribeConfigs) {
					code = codeClusterAuth
				}
			case 32: // GROUP
				if !b.authorize(req, opDescribeConfigs, resGroup, rs.ResourceName) {
					code = codeGroupAuth
				}
			}
			if code == 0 {
				cp.Resources = append(cp.Resources, rs)
				continue
			}
			rr := kmsg.NewDescribeConfigsResponseResource()
			rr.ResourceType, rr.ResourceName, rr.ErrorCode = rs.ResourceType, rs.ResourceName, code
			rr.ErrorMessage = errDesc(code)
			denied = append(denied, rr)
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.DescribeConfigsResponse)
			resp.Resources = append(resp.Resources, denied...)
		}
	case *kmsg.DeleteRecordsRequest:
		cp := *r
		cp.Topics = nil
		var denied []kmsg.DeleteRecordsResponseTopic
		for _, t := range r.Topics {
			if b.authorize(req, opDelete, resTopic, t.Topic) {
				cp.Topics = append(cp.Topics, t)
				continue
			}
			rt := kmsg.NewDeleteRecordsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewDeleteRecordsResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LowWatermark = p.Partition, codeTopicAuth, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.DeleteRecordsResponse)
			resp.Topics = append(resp.Topics, denied...)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		follower := r.Version >= 3 && r.ReplicaID >= 0
		cp := *r
		cp.Topics = nil
		var denied []kmsg.OffsetForLeaderEpochResponseTopic
		for _, t := range r.Topics {
			code := int16(0)
			switch {
			case follower && !b.authorizeCluster(req, opClusterAction):
				code = codeClusterAuth
			case !follower && !b.authorize(req, opDescribe, resTopic, t.Topic):
				code = codeTopicAuth
			}
			if code == 0 {
				cp.Topics = append(cp.Topics, t)
				continue
			}
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, code, -1, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			denied = append(denied, rt)
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.OffsetForLeaderEpochResponse)
			resp.Topics = append(resp.Topics, denied...)
		}
	case *kmsg.ElectLeadersRequest:
		if !b.authorizeCluster(req, opAlter) {
			resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
			resp.ErrorCode = codeClusterAuth
			for _, t := range r.Topics {
				rt := kmsg.NewElectLeadersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewElectLeadersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, codeClusterAuth
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, nil
		}
	case *kmsg.AlterPartitionAssignmentsRequest:
		if !b.authorizeCluster(req, opAlter) {
			resp := r.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
			resp.ErrorCode, resp.ErrorMessage = codeClusterAuth, clusterDenied(req)
			for _, t := range r.Topics {
				rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, codeClusterAuth
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, nil
		}
	case *kmsg.AlterReplicaLogDirsRequest:
		if !b.authorizeCluster(req, opAlter) {
			resp := r.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
			for _, d := range r.Dirs {
				for _, t := range d.Topics {
					rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
						rp.Partition, rp.ErrorCode = p, codeClusterAuth
						rt.Partitions = append(rt.Partitions, rp)
					}
					resp.Topics = append(resp.Topics, rt)
				}
			}
			return resp, nil, nil
		}
	case *kmsg.AlterClientQuotasRequest:
		if !b.authorizeCluster(req, opAlterConfigs) {
			resp := r.ResponseKind().(*kmsg.AlterClientQuotasResponse)
			for _, e := range r.Entries {
				re := kmsg.NewAlterClientQuotasResponseEntry()
				re.ErrorCode, re.ErrorMessage = codeClusterAuth, clusterDenied(req)
				for _, en := range e.Entity {
					ren := kmsg.NewAlterClientQuotasResponseEntryEntity()
					ren.Type, ren.Name = en.Type, en.Name
					re.Entity = append(re.Entity, ren)
				}
				resp.Entries = append(resp.Entries, re)
			}
			return resp, nil, nil
		}
	case *kmsg.DescribeLogDirsRequest:
		if !b.authorizeCluster(req, opDescribe) {
			resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
			resp.ErrorCode = codeClusterAuth
			return resp, nil, nil
		}
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		if !b.authorizeCluster(req, opDescribe) {
			resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
			resp.ErrorCode, resp.ErrorMessage = codeClusterAuth, clusterDenied(req)
			return resp, nil, nil
		}
	case *kmsg.DescribeClientQuotasRequest:
		if !b.authorizeCluster(req, opDescribeConfigs) {
			resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
			resp.ErrorCode, resp.ErrorMessage = codeClusterAuth, clusterDenied(req)
			return resp, nil, nil
		}
	}
	return nil, run, nil
}

func offsetCommitAll(r *kmsg.OffsetCommitRequest, code int16) *kmsg.OffsetCommitResponse {
	resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func txnOffsetCommitAll(r *kmsg.TxnOffsetCommitRequest, code int16) *kmsg.TxnOffsetCommitResponse {
	resp := r.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range r.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// authorizeOffsetFetch is KafkaApis.handleOffsetFetchRequest's checks:
// DESCRIBE on each group (GROUP_AUTHORIZATION_FAILED for the group),
// DESCRIBE on each topic asked for (TOPIC_AUTHORIZATION_FAILED on its
// partitions); when all topics are asked for, the undescribable ones are
// left out of the answer.
func (b *Broker) authorizeOffsetFetch(req *protocol.Request, r *kmsg.OffsetFetchRequest) (kmsg.Response, kmsg.Request, func(kmsg.Response)) {
	img := b.meta.Image()
	topicName := func(name string, id [16]byte) string {
		if r.Version >= 10 {
			if t := img.TopicByID(id); t != nil {
				return t.Name
			}
			return ""
		}
		return name
	}
	describable := func(name string, id [16]byte) bool {
		n := topicName(name, id)
		return n == "" || b.authorize(req, opDescribe, resTopic, n)
	}
	if r.Version < 8 {
		if !b.authorize(req, opDescribe, resGroup, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.ErrorCode = codeGroupAuth
			return resp, nil, nil
		}
		cp := *r
		var denied []kmsg.OffsetFetchRequestTopic
		if r.Topics != nil {
			cp.Topics = []kmsg.OffsetFetchRequestTopic{}
			for _, t := range r.Topics {
				if describable(t.Topic, [16]byte{}) {
					cp.Topics = append(cp.Topics, t)
				} else {
					denied = append(denied, t)
				}
			}
		}
		return nil, &cp, func(m kmsg.Response) {
			resp := m.(*kmsg.OffsetFetchResponse)
			if r.Topics == nil {
				kept := resp.Topics[:0]
				for _, t := range resp.Topics {
					if describable(t.Topic, [16]byte{}) {
						kept = append(kept, t)
					}
				}
				resp.Topics = kept
			}
			for _, t := range denied {
				rt := kmsg.NewOffsetFetchResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, codeTopicAuth
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
	}
	cp := *r
	cp.Groups = nil
	deniedGroups := map[string]bool{}
	deniedTopics := map[string][]kmsg.OffsetFetchRequestGroupTopic{}
	for _, g := range r.Groups {
		if !b.authorize(req, opDescribe, resGroup, g.Group) {
			deniedGroups[g.Group] = true
			continue
		}
		gc := g
		if g.Topics != nil {
			gc.Topics = []kmsg.OffsetFetchRequestGroupTopic{}
			for _, t := range g.Topics {
				if describable(t.Topic, t.TopicID) {
					gc.Topics = append(gc.Topics, t)
				} else {
					deniedTopics[g.Group] = append(deniedTopics[g.Group], t)
				}
			}
		}
		cp.Groups = append(cp.Groups, gc)
	}
	return nil, &cp, func(m kmsg.Response) {
		resp := m.(*kmsg.OffsetFetchResponse)
		asked := map[string]bool{}
		for _, g := range r.Groups {
			asked[g.Group] = g.Topics != nil
		}
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if !asked[g.Group] {
				kept := g.Topics[:0]
				for _, t := range g.Topics {
					if describable(t.Topic, t.TopicID) {
						kept = append(kept, t)
					}
				}
				g.Topics = kept
			}
			for _, t := range deniedTopics[g.Group] {
				rt := kmsg.NewOffsetFetchResponseGroupTopic()
				rt.Topic, rt.TopicID = t.Topic, t.TopicID
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, codeTopicAuth
					rt.Partitions = append(rt.Partitions, rp)
				}
				g.Topics = append(g.Topics, rt)
			}
		}
		for _, g := range r.Groups {
			if deniedGroups[g.Group] {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, codeGroupAuth
				resp.Groups = append(resp.Groups, rg)
			}
		}
	}
}

// authorizeAddPartitionsToTxn: v4+ (brokers verifying, KIP-890) needs
// CLUSTER_ACTION; v0-3 WRITE on the transactional id (every partition
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic (the refused
// ones TOPIC_AUTHORIZATION_FAILED, unknown ones UNKNOWN_TOPIC_OR_PARTITION,
// the rest OPERATION_NOT_ATTEMPTED).
func (b *Broker) authorizeAddPartitionsToTxn(req *protocol.Request, r *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, kmsg.Request, func(kmsg.Response)) {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if r.Version >= 4 {
		if !b.authorizeCluster(req, opClusterAction) {
			resp.ErrorCode = codeClusterAuth
			return resp, nil, nil
		}
		return nil, r, nil
	}
	all := func(code func(topic string) int16) *kmsg.AddPartitionsToTxnResponse {
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, code(t.Topic)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	if !b.authorize(req, opWrite, resTxnID, r.TransactionalID) {
		return all(func(string) int16 { return codeTxnAuth }), nil, nil
	}
	img := b.meta.Image()
	anyDenied := false
	for _, t := range r.Topics {
		if !b.authorize(req, opWrite, resTopic, t.Topic) {
			anyDenied = true
		}
	}
	if !anyDenied {
		return nil, r, nil
	}
	return all(func(topic string) int16 {
		switch {
		case !b.authorize(req, opWrite, resTopic, topic):
			return codeTopicAuth
		case img.TopicByName(topic) == nil:
			return kerr.UnknownTopicOrPartition.Code
		}
		return kerr.OperationNotAttempted.Code
	}), nil, nil
}

// errDesc is an error code's default message (Errors.message()).
func errDesc(code int16) *string {
	if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		return strPtr(e.Description)
	}
	return nil
}

// splitReadable splits topics into those the principal may READ and those
// it may not; a topic whose name is "" (an unknown topic id) is kept for the
// handler to answer.
func splitReadable[T any](b *Broker, req *protocol.Request, topics []T, name func(T) string) (allowed, denied []T) {
	for _, t := range topics {
		if n := name(t); n != "" && !b.authorize(req, opRead, resTopic, n) {
			denied = append(denied, t)
			continue
		}
		allowed = append(allowed, t)
	}
	return allowed, denied
}
