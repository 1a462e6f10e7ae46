package broker

import (
	"context"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
	"github.com/kgo-broker/kgo-broker/security/authorizer"
)

// authzTestBroker is apiTestBroker with StandardAuthorizer (super user
// User:admin) and the ACLs given, in the image.
func authzTestBroker(t *testing.T, acls ...authorizer.ACL) *Broker {
	t.Helper()
	b := apiTestBroker(t)
	var recs []metadatacache.Record
	for i, a := range acls {
		r := metadatacache.NewAccessControlEntryRecord()
		r.ID = [16]byte{0xac, byte(i + 1)}
		r.ResourceType, r.ResourceName, r.PatternType = int8(a.ResourceType), a.ResourceName, int8(a.PatternType)
		r.Principal, r.Host, r.Operation, r.PermissionType = a.Principal, a.Host, int8(a.Operation), int8(a.Permission)
		recs = append(recs, r)
	}
	b.authz = authorizer.New(authorizer.Config{SuperUsers: []string{"User:admin"}})
	b.meta.Subscribe(watchACLs(b.authz))
	if len(recs) > 0 {
		off := b.meta.Image().Offset + 1
		if err := b.meta.Apply(metadatacache.Batch{BaseOffset: off, LastOffset: off + int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
			t.Fatal(err)
		}
	}
	watchACLs(b.authz)(nil, b.meta.Image())
	return b
}

func callAs[R kmsg.Response](t *testing.T, b *Broker, user string, r kmsg.Request, v int16) R {
	t.Helper()
	r.SetVersion(v)
	resp, err := b.Handle(context.Background(), &protocol.Request{Key: r.Key(), Version: v, Msg: r, Listener: "PLAINTEXT",
		Principal: protocol.Principal{Type: "User", Name: user}, RemoteAddr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 5555}})
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(r.Key()), v, err)
	}
	return resp.Msg.(R)
}

func allowACL(rt authorizer.ResourceType, name, principal string, op authorizer.Operation) authorizer.ACL {
	return authorizer.ACL{ResourceType: rt, ResourceName: name, PatternType: authorizer.PatternLiteral, Principal: principal,
		Host: "*", Operation: op, Permission: authorizer.PermissionAllow}
}

func TestDescribeAclsWithoutAuthorizer(t *testing.T) {
	b := apiTestBroker(t)
	r := kmsg.NewPtrDescribeACLsRequest()
	resp := call[*kmsg.DescribeACLsResponse](t, b, "PLAINTEXT", r, 3)
	if resp.ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("DescribeAcls without an authorizer: %d", resp.ErrorCode)
	}
	cr := kmsg.NewPtrCreateACLsRequest()
	cr.Creations = make([]kmsg.CreateACLsRequestCreation, 2)
	cresp := call[*kmsg.CreateACLsResponse](t, b, "PLAINTEXT", cr, 3)
	if len(cresp.Results) != 2 || cresp.Results[1].ErrorCode != kerr.SecurityDisabled.Code {
		t.Fatalf("CreateAcls without an authorizer: %+v", cresp.Results)
	}
}

func TestDescribeAclsFromImage(t *testing.T) {
	b := authzTestBroker(t,
		allowACL(resTopic, "t", "User:alice", opRead),
		allowACL(resTopic, "t", "User:bob", opWrite),
		allowACL(resGroup, "g", "User:alice", opRead),
		allowACL(resCluster, "kafka-cluster", "User:carol", opDescribe))
	all := func() *kmsg.DescribeACLsRequest {
		r := kmsg.NewPtrDescribeACLsRequest()
		r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		return r
	}
	if resp := callAs[*kmsg.DescribeACLsResponse](t, b, "alice", all(), 3); resp.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice: %d, want CLUSTER_AUTHORIZATION_FAILED", resp.ErrorCode)
	}
	resp := callAs[*kmsg.DescribeACLsResponse](t, b, "carol", all(), 3)
	if resp.ErrorCode != 0 || len(resp.Resources) != 3 || len(resp.Resources[0].ACLs) != 2 {
		t.Fatalf("carol: %+v", resp)
	}
	r := all()
	r.ResourceType, r.ResourcePatternType, r.ResourceName = kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeMatch, kmsg.StringPtr("t")
	r.Principal = kmsg.StringPtr("User:bob")
	resp = callAs[*kmsg.DescribeACLsResponse](t, b, "admin", r, 3)
	if len(resp.Resources) != 1 || len(resp.Resources[0].ACLs) != 1 || resp.Resources[0].ACLs[0].Operation != kmsg.ACLOperationWrite {
		t.Fatalf("filtered: %+v", resp.Resources)
	}
}

// TestClientAPIAuthorization: refusals answered before the handler runs
// and the describe rules of Metadata.
func TestClientAPIAuthorization(t *testing.T) {
	b := authzTestBroker(t, allowACL(resTopic, "t", "User:alice", opRead), allowACL(resGroup, "g", "User:alice", opDescribe))

	md := kmsg.NewPtrMetadataRequest()
	md.Topics = nil // all topics
	if resp := callAs[*kmsg.MetadataResponse](t, b, "bob", md, 12); len(resp.Topics) != 0 {
		t.Fatalf("bob sees %d topics", len(resp.Topics))
	}
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}, {Topic: kmsg.StringPtr("absent")}}
	md.IncludeTopicAuthorizedOperations = true
	resp := callAs[*kmsg.MetadataResponse](t, b, "alice", md, 12)
	if resp.Topics[0].ErrorCode != 0 || resp.Topics[1].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice metadata: %d %d", resp.Topics[0].ErrorCode, resp.Topics[1].ErrorCode)
	}
	if ops := resp.Topics[0].AuthorizedOperations; ops != 1<<opRead|1<<opDescribe {
		t.Fatalf("alice's operations on t: %#x", ops)
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0}}}}
	if r := callAs[*kmsg.ListOffsetsResponse](t, b, "bob", lo, 9); r.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob ListOffsets: %+v", r.Topics)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"g"}
	if r := callAs[*kmsg.FindCoordinatorResponse](t, b, "bob", fc, 4); r.Coordinators[0].ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("bob FindCoordinator: %+v", r.Coordinators)
	}
	ip := kmsg.NewPtrInitProducerIDRequest()
	if r := callAs[*kmsg.InitProducerIDResponse](t, b, "alice", ip, 5); r.ErrorCode != kerr.ClusterAuthorizationFailed.Code || r.ProducerID != -1 {
		t.Fatalf("alice InitProducerId without IDEMPOTENT_WRITE or topic WRITE: %+v", r)
	}
	ip.TransactionalID = kmsg.StringPtr("tx")
	if r := callAs[*kmsg.InitProducerIDResponse](t, b, "alice", ip, 5); r.ErrorCode != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("alice transactional InitProducerId: %+v", r)
	}
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group = "g" // DESCRIBE is not READ
	if r := callAs[*kmsg.JoinGroupResponse](t, b, "alice", jg, 9); r.ErrorCode != kerr.GroupAuthorizationFailed.Code {
		t.Fatalf("alice JoinGroup: %d", r.ErrorCode)
	}
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	wm.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0, 1}}}}}
	if r := callAs[*kmsg.WriteTxnMarkersResponse](t, b, "alice", wm, 1); r.Markers[0].Topics[0].Partitions[1].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("alice WriteTxnMarkers: %+v", r.Markers)
	}
}

// TestEnvelopeForwardedPrincipalAuthorized: the controller authorizes an
// enveloped request as the client the broker forwarded, not as the broker.
func TestEnvelopeForwardedPrincipalAuthorized(t *testing.T) {
	n := startNode(t, "", map[string]string{
		"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":           "User:ANONYMOUS",
	})
	cl := n.controllerClient(t)
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "enveloped", 1, 1
	ct.Topics, ct.TimeoutMillis = append(ct.Topics, ctt), 10000
	env := envelopeOf(ct, 7, 1)
	env.RequestPrincipal = encodePrincipal(protocol.Principal{Type: "User", Name: "bob"})
	er := sendEnvelope(t, cl, env)
	if er.ErrorCode != 0 {
		t.Fatalf("envelope error %d", er.ErrorCode)
	}
	out := kmsg.NewPtrCreateTopicsResponse()
	out.SetVersion(7)
	if err := readResponseWithHeader(er.ResponseData, 19, 1, out); err != nil {
		t.Fatal(err)
	}
	if len(out.Topics) != 1 || out.Topics[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("bob's forwarded CreateTopics: %+v", out.Topics)
	}
}
