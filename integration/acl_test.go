//go:build integration

package integration

// Authorization end to end (authorizer.class.name=StandardAuthorizer): Kafka
// 4.4's kafka-acls.sh adds, lists and removes ACLs through a SASL_PLAINTEXT
// listener as a super user; franz-go produces and consumes as a principal
// with and without the ACLs it needs; and an ACL matrix (a representative
// set of APIs, each asked by its own principal before and after it gets the
// ACL the API needs) runs against kgo-broker and Apache Kafka 4.4 itself,
// which must give the same error codes.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// aclUsers are the PLAIN users of the ACL tests: admin is a super user, each
// matrix case has its own principal so that ACLs of one case never help
// another.
const aclUsers = 64

func aclJaas() string {
	var b strings.Builder
	b.WriteString(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret"`)
	for i := 0; i < aclUsers; i++ {
		fmt.Fprintf(&b, ` user_u%d="u%d-secret"`, i, i)
	}
	b.WriteString(";")
	return b.String()
}

// aclNode is a node with StandardAuthorizer and a SASL_PLAINTEXT listener.
type aclNode struct {
	*Broker
	sasl string // SASL_PLAINTEXT address
}

// newACLNode prepares (but does not start) a node of bin ("" for the binary
// under test). The PLAINTEXT and CONTROLLER listeners authenticate as
// User:ANONYMOUS, which is a super user, as Kafka's docs advise when the
// inter-broker and controller listeners are not authenticated.
func newACLNode(t *testing.T, bin string, env []string) *aclNode {
	t.Helper()
	b := NewBroker(t, BrokerOptions{Bin: bin, Env: env})
	port := freePorts(t, 1)[0]
	n := &aclNode{Broker: b, sasl: fmt.Sprintf("127.0.0.1:%d", port)}
	extra := fmt.Sprintf(`
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d,SASL_PLAINTEXT://%[3]s
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d,SASL_PLAINTEXT://%[3]s
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=%[4]s
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin;User:ANONYMOUS
`, b.Port, b.CtrlPort, n.sasl, aclJaas())
	f, err := os.OpenFile(b.Props, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(extra)
	f.Close()
	return n
}

func (n *aclNode) client(t *testing.T, user string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	pass := user + "-secret"
	base := []kgo.Opt{kgo.SeedBrokers(n.sasl), kgo.DialTimeout(5 * time.Second), kgo.RetryTimeout(10 * time.Second),
		kgo.SASL(plain.Auth{User: user, Pass: pass}.AsMechanism())}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// adminConfig writes the --command-config of the super user.
func (n *aclNode) adminConfig(t *testing.T) string {
	p := filepath.Join(n.Dir, "admin.properties")
	body := "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n" +
		`sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";` + "\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// awaitACLCount waits until the node's image (DescribeAcls as admin) holds n
// ACLs: ACL changes reach a broker through the metadata log.
func (n *aclNode) awaitACLCount(t *testing.T, admin *kgo.Client, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType, req.Operation, req.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(context.Background(), admin)
		got := -1
		if err == nil && resp.ErrorCode == 0 {
			got = 0
			for _, r := range resp.Resources {
				got += len(r.ACLs)
			}
		}
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("DescribeAcls: %d ACLs (err %v), want %d", got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestACLToolsAndClients(t *testing.T) {
	requireKafkaTools(t)
	n := newACLNode(t, "", nil)
	n.Start()
	n.WaitReady()
	cfg := n.adminConfig(t)
	admin := n.client(t, "admin")
	ctx := context.Background()
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "acl-t"); err != nil {
		t.Fatal(err)
	}
	acls := func(args ...string) ToolResult {
		return MustKafkaTool(t, RunOpts{Timeout: 2 * time.Minute}, "kafka-acls.sh",
			append([]string{"--bootstrap-server", n.sasl, "--command-config", cfg}, args...)...)
	}

	produce := func(user, topic string, opts ...kgo.Opt) error {
		cl := n.client(t, user, append(opts, kgo.RequestRetries(2))...)
		return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
	}
	consume := func(user, group string) error {
		cl := n.client(t, user, kgo.ConsumeTopics("acl-t"), kgo.ConsumerGroup(group),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		// Leave the group when done: a refused member that stays would
		// retry and share the partition with the next one.
		defer cl.Close()
		fctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(fctx)
			if err := fctx.Err(); err != nil {
				return err
			}
			var ferr error
			fs.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				return ferr
			}
			if fs.NumRecords() > 0 {
				return nil
			}
		}
	}

	// Without ACLs u1 may do nothing; admin (super user) may.
	if err := produce("u1", "acl-t"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("u1 produce without ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if err := produce("admin", "acl-t"); err != nil {
		t.Fatalf("admin produce: %v", err)
	}

	acls("--add", "--allow-principal", "User:u1", "--operation", "Write", "--operation", "Read", "--topic", "acl-t")
	n.awaitACLCount(t, admin, 2)
	r := acls("--list", "--topic", "acl-t")
	for _, want := range []string{"ResourcePattern(resourceType=TOPIC, name=acl-t, patternType=LITERAL)", "principal=User:u1", "operation=WRITE", "operation=READ", "permissionType=ALLOW"} {
		if !strings.Contains(r.Stdout, want) {
			t.Fatalf("kafka-acls.sh --list lacks %q:\n%s", want, r.Stdout)
		}
	}
	if err := produce("u1", "acl-t"); err != nil {
		t.Fatalf("u1 produce with WRITE: %v", err)
	}
	if err := produce("u2", "acl-t"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("u2 produce: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Consuming in a group needs READ on the group too.
	if err := consume("u1", "acl-g"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("u1 consume without group ACL: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	acls("--add", "--allow-principal", "User:u1", "--operation", "Read", "--group", "acl-", "--resource-pattern-type", "prefixed")
	n.awaitACLCount(t, admin, 3)
	if err := consume("u1", "acl-g"); err != nil {
		t.Fatalf("u1 consume with ACLs: %v", err)
	}
	// A DENY wins. The idempotent producer's InitProducerId then fails
	// first (no IDEMPOTENT_WRITE, and no WRITE on any topic that no DENY
	// covers: authorizeByResourceType), as with Kafka.
	acls("--add", "--deny-principal", "User:u1", "--operation", "Write", "--topic", "*")
	n.awaitACLCount(t, admin, 4)
	if err := produce("u1", "acl-t"); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("u1 idempotent produce with a DENY: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
	if err := produce("u1", "acl-t", kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("u1 produce with a DENY: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	acls("--remove", "--force", "--deny-principal", "User:u1", "--operation", "Write", "--topic", "*")
	acls("--remove", "--force", "--allow-principal", "User:u1", "--operation", "Write", "--topic", "acl-t")
	n.awaitACLCount(t, admin, 2)
	r = acls("--list")
	if strings.Contains(r.Stdout, "operation=WRITE") || !strings.Contains(r.Stdout, "operation=READ") {
		t.Fatalf("after --remove:\n%s", r.Stdout)
	}
	if err := produce("u1", "acl-t", kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("u1 produce after --remove: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// The ACLs are in the metadata log: after kill -9 and a restart (raft
	// replays the log or its snapshot into the image and the controller)
	// they still apply, and re-creating one is a duplicate.
	n.KillAndRestart()
	n.WaitReady()
	admin = n.client(t, "admin")
	n.awaitACLCount(t, admin, 2)
	if err := consume("u1", "acl-g"); err != nil {
		t.Fatalf("u1 consume after restart: %v", err)
	}
	acls("--add", "--allow-principal", "User:u1", "--operation", "Read", "--topic", "acl-t")
	n.awaitACLCount(t, admin, 2)

	// A non-super user may not change ACLs.
	u1 := n.client(t, "u1")
	cr := kmsg.NewPtrCreateACLsRequest()
	c := kmsg.NewCreateACLsRequestCreation()
	c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeLiteral
	c.Principal, c.Host, c.Operation, c.PermissionType = "User:u1", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
	cr.Creations = append(cr.Creations, c)
	cresp, err := cr.RequestWith(ctx, u1)
	if err != nil || len(cresp.Results) != 1 || cresp.Results[0].ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("CreateAcls as u1: %+v %v, want CLUSTER_AUTHORIZATION_FAILED", cresp, err)
	}
}

// aclCase is one row of the ACL matrix: a request and the ACL that lets
// its principal through.
type aclCase struct {
	name  string
	req   func(topicID [16]byte) kmsg.Request
	grant [][3]string // resource type, name ("prefixed:" for PREFIXED), operation
}

func aclMatrix() []aclCase {
	str := kmsg.StringPtr
	topic := func(op string) [][3]string { return [][3]string{{"TOPIC", "mt", op}} }
	return []aclCase{
		{"Metadata topic", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = str("mt")
			r.Topics = append(r.Topics, mt)
			return r
		}, topic("DESCRIBE")},
		{"Metadata auto-create", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = str("auto-mt")
			r.Topics, r.AllowAutoTopicCreation = append(r.Topics, mt), true
			return r
		}, [][3]string{{"TOPIC", "auto-mt", "DESCRIBE"}, {"TOPIC", "auto-mt", "CREATE"}}},
		{"ListOffsets", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "mt", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -1}}}}
			return r
		}, topic("DESCRIBE")},
		{"Fetch", func(id [16]byte) kmsg.Request {
			r := kmsg.NewPtrFetchRequest()
			r.ReplicaID, r.MaxWaitMillis, r.MaxBytes, r.SessionEpoch = -1, 10, 1<<20, -1
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = "mt", id
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 0, 1<<20, -1
			ft.Partitions = append(ft.Partitions, fp)
			r.Topics = append(r.Topics, ft)
			return r
		}, topic("READ")},
		{"DescribeConfigs topic", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rs := kmsg.NewDescribeConfigsRequestResource()
			rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeTopic, "mt"
			r.Resources = append(r.Resources, rs)
			return r
		}, topic("DESCRIBE_CONFIGS")},
		{"DescribeConfigs broker", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeConfigsRequest()
			rs := kmsg.NewDescribeConfigsRequestResource()
			rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeBroker, "1"
			r.Resources = append(r.Resources, rs)
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "DESCRIBE_CONFIGS"}}},
		{"IncrementalAlterConfigs topic", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rs := kmsg.NewIncrementalAlterConfigsRequestResource()
			rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeTopic, "mt"
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "retention.ms", str("100000")
			rs.Configs = append(rs.Configs, c)
			r.Resources = append(r.Resources, rs)
			return r
		}, topic("ALTER_CONFIGS")},
		{"CreateTopics", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrCreateTopicsRequest()
			ct := kmsg.NewCreateTopicsRequestTopic()
			ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "created-mt", 1, 1
			r.Topics, r.TimeoutMillis = append(r.Topics, ct), 30000
			return r
		}, [][3]string{{"TOPIC", "created-mt", "CREATE"}}},
		{"CreatePartitions", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrCreatePartitionsRequest()
			ct := kmsg.NewCreatePartitionsRequestTopic()
			ct.Topic, ct.Count = "mt2", 2
			r.Topics, r.TimeoutMillis = append(r.Topics, ct), 30000
			return r
		}, [][3]string{{"TOPIC", "mt2", "ALTER"}}},
		{"DeleteTopics", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDeleteTopicsRequest()
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = str("del-mt")
			r.Topics, r.TopicNames, r.TimeoutMillis = append(r.Topics, dt), []string{"del-mt"}, 30000
			return r
		}, [][3]string{{"TOPIC", "del-mt", "DELETE"}}},
		{"OffsetCommit", func(id [16]byte) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "mg", -1
			ot := kmsg.NewOffsetCommitRequestTopic()
			ot.Topic, ot.TopicID = "mt", id
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			op.Partition, op.Offset = 0, 0
			ot.Partitions = append(ot.Partitions, op)
			r.Topics = append(r.Topics, ot)
			return r
		}, [][3]string{{"GROUP", "mg", "READ"}, {"TOPIC", "mt", "READ"}}},
		{"OffsetCommit topic denied", func(id [16]byte) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "mg2", -1
			ot := kmsg.NewOffsetCommitRequestTopic()
			ot.Topic, ot.TopicID = "mt", id
			op := kmsg.NewOffsetCommitRequestTopicPartition()
			ot.Partitions = append(ot.Partitions, op)
			r.Topics = append(r.Topics, ot)
			return r
		}, [][3]string{{"GROUP", "mg2", "READ"}}},
		{"OffsetFetch", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrOffsetFetchRequest()
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "mg"
			r.Groups = append(r.Groups, g)
			return r
		}, [][3]string{{"GROUP", "mg", "DESCRIBE"}}},
		{"FindCoordinator group", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorKeys = []string{"mg"}
			return r
		}, [][3]string{{"GROUP", "mg", "DESCRIBE"}}},
		{"FindCoordinator transaction", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrFindCoordinatorRequest()
			r.CoordinatorType, r.CoordinatorKeys = 1, []string{"mtx"}
			return r
		}, [][3]string{{"TRANSACTIONAL_ID", "mtx", "DESCRIBE"}}},
		{"DescribeGroups", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{"mg"}
			return r
		}, [][3]string{{"GROUP", "mg", "DESCRIBE"}}},
		{"DeleteGroups", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDeleteGroupsRequest()
			r.Groups = []string{"no-such-group"}
			return r
		}, [][3]string{{"GROUP", "no-such-group", "DELETE"}}},
		{"InitProducerId transactional", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionalID, r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = str("mtx"), 60000, -1, -1
			return r
		}, [][3]string{{"TRANSACTIONAL_ID", "mtx", "WRITE"}}},
		{"InitProducerId idempotent", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = -1, -1, -1
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE"}}},
		{"InitProducerId idempotent by topic WRITE", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrInitProducerIDRequest()
			r.TransactionTimeoutMillis, r.ProducerID, r.ProducerEpoch = -1, -1, -1
			return r
		}, [][3]string{{"TOPIC", "any", "WRITE"}}},
		{"DescribeTransactions", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeTransactionsRequest()
			r.TransactionalIDs = []string{"no-such-txn"}
			return r
		}, [][3]string{{"TRANSACTIONAL_ID", "no-such-txn", "DESCRIBE"}}},
		{"DescribeProducers", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeProducersRequest()
			r.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "mt", Partitions: []int32{0}}}
			return r
		}, topic("READ")},
		{"DescribeLogDirs", func([16]byte) kmsg.Request {
			return kmsg.NewPtrDescribeLogDirsRequest()
		}, [][3]string{{"CLUSTER", "kafka-cluster", "DESCRIBE"}}},
		{"DescribeAcls", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny, kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "DESCRIBE"}}},
		{"Metadata prefixed ACL", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = str("mt2")
			r.Topics = append(r.Topics, mt)
			return r
		}, [][3]string{{"TOPIC", "prefixed:mt", "DESCRIBE"}}},
		{"ListOffsets wildcard ACL", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "mt", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -1}}}}
			return r
		}, [][3]string{{"TOPIC", "*", "READ"}}},
		{"DescribeTopicPartitions", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeTopicPartitionsRequest()
			r.Topics = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "mt"}}
			r.ResponsePartitionLimit = 10
			return r
		}, topic("DESCRIBE")},
		{"JoinGroup", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrJoinGroupRequest()
			r.Group, r.SessionTimeoutMillis, r.RebalanceTimeoutMillis, r.ProtocolType = "jg", 10000, 10000, "consumer"
			r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
			return r
		}, [][3]string{{"GROUP", "jg", "READ"}}},
		{"Heartbeat", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrHeartbeatRequest()
			r.Group, r.MemberID, r.Generation = "hg", "m", 1
			return r
		}, [][3]string{{"GROUP", "hg", "READ"}}},
		{"ConsumerGroupHeartbeat", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "cg", "Zk9ekRJiS0ycSN7bpZvDeg", 0, 10000
			r.SubscribedTopicNames, r.Topics = []string{"mt"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}, [][3]string{{"GROUP", "cg", "READ"}, {"TOPIC", "mt", "DESCRIBE"}}},
		{"ConsumerGroupHeartbeat topic denied", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			r.Group, r.MemberID, r.MemberEpoch, r.RebalanceTimeoutMillis = "cg2", "Zk9ekRJiS0ycSN7bpZvDeh", 0, 10000
			r.SubscribedTopicNames, r.Topics = []string{"mt"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
			return r
		}, [][3]string{{"GROUP", "cg2", "READ"}}},
		{"ConsumerGroupDescribe member topics denied", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrConsumerGroupDescribeRequest()
			r.Groups = []string{"cg"}
			return r
		}, [][3]string{{"GROUP", "cg", "DESCRIBE"}}},
		{"OffsetDelete", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrOffsetDeleteRequest()
			r.Group = "mg"
			r.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "mt", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
			return r
		}, [][3]string{{"GROUP", "mg", "DELETE"}, {"TOPIC", "mt", "READ"}}},
		{"AddOffsetsToTxn", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "atx", 1, 0, "ag"
			return r
		}, [][3]string{{"TRANSACTIONAL_ID", "atx", "WRITE"}, {"GROUP", "ag", "READ"}}},
		{"AddOffsetsToTxn group denied", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrAddOffsetsToTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Group = "atx2", 1, 0, "ag"
			return r
		}, [][3]string{{"TRANSACTIONAL_ID", "atx2", "WRITE"}}},
		{"EndTxn", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrEndTxnRequest()
			r.TransactionalID, r.ProducerID, r.ProducerEpoch, r.Commit = "etx", 1, 0, true
			return r
		}, [][3]string{{"TRANSACTIONAL_ID", "etx", "WRITE"}}},
		{"TxnOffsetCommit", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrTxnOffsetCommitRequest()
			r.TransactionalID, r.Group, r.ProducerID, r.ProducerEpoch, r.Generation = "ttx", "tg", 1, 0, -1
			r.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "mt", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}}}
			return r
		}, [][3]string{{"TRANSACTIONAL_ID", "ttx", "WRITE"}, {"GROUP", "tg", "READ"}, {"TOPIC", "mt", "READ"}}},
		{"AddPartitionsToTxn (v4+, brokers verifying)", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrAddPartitionsToTxnRequest()
			tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
			tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = "ptx", 1, 0, true
			tx.Topics = []kmsg.AddPartitionsToTxnRequestTransactionTopic{{Topic: "mt", Partitions: []int32{0}}}
			r.Transactions = append(r.Transactions, tx)
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "CLUSTER_ACTION"}}},
		{"DeleteRecords", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDeleteRecordsRequest()
			r.TimeoutMillis = 10000
			r.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: "mt", Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 0}}}}
			return r
		}, topic("DELETE")},
		{"OffsetForLeaderEpoch", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.ReplicaID = -1
			r.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "mt", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, LeaderEpoch: 0}}}}
			return r
		}, topic("DESCRIBE")},
		{"AlterConfigs broker", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			rs := kmsg.NewIncrementalAlterConfigsRequestResource()
			rs.ResourceType, rs.ResourceName = kmsg.ConfigResourceTypeBroker, ""
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = "log.cleaner.threads", str("1")
			rs.Configs = append(rs.Configs, c)
			r.Resources = append(r.Resources, rs)
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "ALTER_CONFIGS"}}},
		{"CreateAcls", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeGroup, "zz", kmsg.ACLResourcePatternTypeLiteral
			c.Principal, c.Host, c.Operation, c.PermissionType = "User:nobody", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
			r.Creations = append(r.Creations, c)
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "ALTER"}}},
		{"ElectLeaders", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.TimeoutMillis = 10000
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "mt", Partitions: []int32{0}}}
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "ALTER"}}},
		{"AlterPartitionReassignments", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.TimeoutMillis = 10000
			r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "mt", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}}}
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "ALTER"}}},
		{"ListPartitionReassignments (forwarded)", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrListPartitionReassignmentsRequest()
			r.TimeoutMillis = 10000
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "DESCRIBE"}}},
		{"DescribeQuorum (forwarded)", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeQuorumRequest()
			r.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "DESCRIBE"}}},
		{"AlterUserScramCredentials (forwarded)", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}}
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "ALTER"}}},
		{"UpdateFeatures (forwarded)", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrUpdateFeaturesRequest()
			r.TimeoutMillis, r.ValidateOnly = 10000, true
			r.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: "group.version", MaxVersionLevel: 1, UpgradeType: 1}}
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "ALTER"}}},
		{"DescribeUserScramCredentials", func([16]byte) kmsg.Request {
			r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			r.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "nobody"}}
			return r
		}, [][3]string{{"CLUSTER", "kafka-cluster", "DESCRIBE"}}},
	}
}

// aclRetriable: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
// COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE.
var aclRetriable = map[int16]bool{3: true, 5: true, 14: true, 15: true}

var aclEnums = map[string]int8{
	"TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5,
	"READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8, "CLUSTER_ACTION": 9,
	"DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12,
}

// runACLMatrix runs every case as its own principal before and after it is
// granted the case's ACLs, and returns the error codes.
func runACLMatrix(t *testing.T, n *aclNode) map[string][2]int16 {
	t.Helper()
	ctx := context.Background()
	admin := n.client(t, "admin")
	adm := kadm.NewClient(admin)
	for _, tp := range []string{"mt", "mt2", "del-mt"} {
		if _, err := adm.CreateTopic(ctx, 1, 1, nil, tp); err != nil {
			t.Fatalf("creating %s: %v", tp, err)
		}
	}
	md, err := adm.Metadata(ctx, "mt")
	if err != nil {
		t.Fatal(err)
	}
	id := md.Topics["mt"].ID
	cases := aclMatrix()
	if len(cases) > aclUsers {
		t.Fatalf("%d cases for %d users", len(cases), aclUsers)
	}
	out := map[string][2]int16{}
	total := 0
	for i, c := range cases {
		user := fmt.Sprintf("u%d", i)
		cl := n.client(t, user, kgo.RequestRetries(0))
		var codes [2]int16
		for round := 0; round < 2; round++ {
			if round == 1 {
				cr := kmsg.NewPtrCreateACLsRequest()
				for _, g := range c.grant {
					ac := kmsg.NewCreateACLsRequestCreation()
					name, pattern := g[1], kmsg.ACLResourcePatternTypeLiteral
					if p, ok := strings.CutPrefix(name, "prefixed:"); ok {
						name, pattern = p, kmsg.ACLResourcePatternTypePrefixed
					}
					ac.ResourceType, ac.ResourceName, ac.ResourcePatternType = kmsg.ACLResourceType(aclEnums[g[0]]), name, pattern
					ac.Principal, ac.Host, ac.Operation, ac.PermissionType = "User:"+user, "*", kmsg.ACLOperation(aclEnums[g[2]]), kmsg.ACLPermissionTypeAllow
					cr.Creations = append(cr.Creations, ac)
				}
				resp, err := cr.RequestWith(ctx, admin)
				if err != nil {
					t.Fatalf("%s: CreateAcls: %v", c.name, err)
				}
				for _, r := range resp.Results {
					if r.ErrorCode != 0 {
						t.Fatalf("%s: CreateAcls: error %d", c.name, r.ErrorCode)
					}
				}
				total += len(c.grant)
				n.awaitACLCount(t, admin, total)
			}
			// Once granted, retriable answers (internal topics being
			// created or loaded, an auto-created topic without a leader
			// yet) are retried, as clients do: the two nodes differ in how
			// long that takes, not in what they authorize.
			deadline := time.Now().Add(30 * time.Second)
			for {
				rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				// Straight to the node: the client's sharding would turn
				// authorization errors into request errors.
				resp, err := cl.SeedBrokers()[0].Request(rctx, c.req(id))
				cancel()
				if err != nil {
					t.Fatalf("%s (round %d): %v", c.name, round, err)
				}
				codes[round] = firstErrorCode(resp)
				if round == 0 || !aclRetriable[codes[round]] || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
		out[c.name] = codes
		if c.name == "CreateAcls" && codes[1] == 0 {
			total++ // the ACL the case's request created
		}
	}
	return out
}

// TestACLMatrix runs the ACL matrix against the binary under test and checks
// the denials are authorization errors and the grants lift them.
func TestACLMatrix(t *testing.T) {
	n := newACLNode(t, "", nil)
	n.Start()
	n.WaitReady()
	got := runACLMatrix(t, n)
	for _, c := range aclMatrix() {
		codes := got[c.name]
		if e := kerr.ErrorForCode(codes[0]); !strings.Contains(fmt.Sprint(e), "AUTHORIZATION_FAILED") {
			t.Errorf("%s without ACL: %v, want an authorization error", c.name, e)
		}
		// "... denied" cases grant only part of what they need.
		if e := kerr.ErrorForCode(codes[1]); strings.Contains(fmt.Sprint(e), "AUTHORIZATION_FAILED") != strings.Contains(c.name, "denied") {
			t.Errorf("%s with %v: %v", c.name, c.grant, e)
		}
	}
}

// TestACLMatrixAgainstKafka44 runs the matrix against Apache Kafka 4.4 and
// kgo-broker configured alike: every case must answer the same codes.
func TestACLMatrixAgainstKafka44(t *testing.T) {
	requireKafkaTools(t)
	ref := filepath.Join(repoRoot, referenceBrokerScript)
	if filepath.Base(brokerBin) == filepath.Base(ref) {
		t.Skip("KGO_BROKER_BIN is the reference broker: nothing to compare Kafka with")
	}
	r := RunCommand(t, RunOpts{Timeout: 2 * time.Minute, Hermetic: true}, ref, "random-uuid")
	id := strings.TrimSpace(r.Stdout)
	if r.ExitCode != 0 || !uuidRE.MatchString(id) {
		t.Fatalf("random-uuid:\n%s", r)
	}
	kafka := newACLNode(t, ref, []string{"CLUSTER_ID=" + id})
	kgoNode := newACLNode(t, "", nil)
	kafka.Start()
	kgoNode.Start()
	kgoNode.WaitReady()
	if err := kafka.waitReady(3 * time.Minute); err != nil {
		t.Fatalf("Apache Kafka not ready: %v", err)
	}
	want := runACLMatrix(t, kafka)
	got := runACLMatrix(t, kgoNode)
	for _, c := range aclMatrix() {
		if got[c.name] != want[c.name] {
			t.Errorf("%s: Kafka %v, kgo-broker %v (without, with the ACL)", c.name, want[c.name], got[c.name])
		}
	}
	wantHosts, gotHosts := aclHosts(t, kafka), aclHosts(t, kgoNode)
	for k, w := range wantHosts {
		if gotHosts[k] != w {
			t.Errorf("%s: Kafka %d, kgo-broker %d", k, w, gotHosts[k])
		}
	}
	wantOps, gotOps := authorizedOps(t, kafka), authorizedOps(t, kgoNode)
	for k, w := range wantOps {
		if gotOps[k] != w {
			t.Errorf("authorized operations of %s: Kafka %#x, kgo-broker %#x", k, w, gotOps[k])
		}
	}
}

// authorizedOps asks, as a principal with a few ACLs (after the matrix ran:
// the topic mt and the group mg exist), the KIP-430 authorized operations
// of a topic, the cluster and a group.
func authorizedOps(t *testing.T, n *aclNode) map[string]int32 {
	t.Helper()
	ctx := context.Background()
	admin := n.client(t, "admin")
	cr := kmsg.NewPtrCreateACLsRequest()
	for _, g := range [][4]string{{"TOPIC", "mt", "READ"}, {"TOPIC", "m", "ALTER_CONFIGS"}, {"CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE"}, {"GROUP", "mg", "DELETE"}} {
		ac := kmsg.NewCreateACLsRequestCreation()
		pattern := kmsg.ACLResourcePatternTypeLiteral
		if g[1] == "m" {
			pattern = kmsg.ACLResourcePatternTypePrefixed
		}
		ac.ResourceType, ac.ResourceName, ac.ResourcePatternType = kmsg.ACLResourceType(aclEnums[g[0]]), g[1], pattern
		ac.Principal, ac.Host, ac.Operation, ac.PermissionType = "User:u47", "*", kmsg.ACLOperation(aclEnums[g[2]]), kmsg.ACLPermissionTypeAllow
		cr.Creations = append(cr.Creations, ac)
	}
	if _, err := cr.RequestWith(ctx, admin); err != nil {
		t.Fatal(err)
	}
	// The ACLs reach the broker through the metadata log.
	cl := n.client(t, "u47", kgo.RequestRetries(0))
	out := map[string]int32{}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md := kmsg.NewPtrMetadataRequest()
		md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("mt")}}
		md.IncludeTopicAuthorizedOperations = true
		mresp, err := md.RequestWith(ctx, cl)
		if err == nil && len(mresp.Topics) == 1 && mresp.Topics[0].ErrorCode == 0 {
			out["topic mt (Metadata)"] = mresp.Topics[0].AuthorizedOperations
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Metadata as u47: %v %+v", err, mresp)
		}
		time.Sleep(50 * time.Millisecond)
	}
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.IncludeClusterAuthorizedOperations = true
	if resp, err := dc.RequestWith(ctx, cl); err == nil {
		out["cluster (DescribeCluster)"] = resp.ClusterAuthorizedOperations
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups, dg.IncludeAuthorizedOperations = []string{"mg"}, true
	if resp, err := cl.SeedBrokers()[0].Request(ctx, dg); err == nil {
		g := resp.(*kmsg.DescribeGroupsResponse).Groups[0]
		out["group mg (DescribeGroups)"] = g.AuthorizedOperations
		out["group mg (DescribeGroups) error"] = int32(g.ErrorCode)
	}
	dt := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dt.Topics, dt.ResponsePartitionLimit = []kmsg.DescribeTopicPartitionsRequestTopic{{Topic: "mt"}, {Topic: "nope"}}, 10
	if resp, err := dt.RequestWith(ctx, cl); err == nil {
		for _, tp := range resp.Topics {
			out["topic "+*tp.Topic+" (DescribeTopicPartitions)"] = tp.AuthorizedOperations
		}
	}
	return out
}

// TestACLCluster: three nodes with StandardAuthorizer whose inter-broker
// listener is SASL_PLAINTEXT with SCRAM for the super user broker: the
// followers' fetches (CLUSTER_ACTION) and the replication of an acks=all
// produce go through, a client needs its WRITE, and a client posing as a
// follower is refused.
func TestACLCluster(t *testing.T) {
	ov := map[string]string{
		"listener.security.protocol.map":                        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
		"listener.name.internal.sasl.enabled.mechanisms":        "SCRAM-SHA-512",
		"listener.name.internal.scram-sha-512.sasl.jaas.config": `org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="broker-secret";`,
		"sasl.mechanism.inter.broker.protocol":                  "SCRAM-SHA-512",
		"authorizer.class.name":                                 "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"super.users":                                           "User:broker;User:ANONYMOUS",
		"default.replication.factor":                            "3",
		"min.insync.replicas":                                   "2",
		"offsets.topic.replication.factor":                      "3",
		"transaction.state.log.replication.factor":              "3",
		"transaction.state.log.min.isr":                         "2",
	}
	c := StartCluster(t, ClusterOptions{
		Combined: 3, Overrides: ov, InterBrokerListener: "INTERNAL",
		FormatArgs: []string{"--add-scram", "SCRAM-SHA-512=[name=broker,password=broker-secret]",
			"--add-scram", "SCRAM-SHA-512=[name=alice,password=alice-secret]"},
	})
	var inter []string
	for _, n := range c.Brokers() {
		inter = append(inter, n.InterAddr)
	}
	alice := kgo.SASL(scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha512Mechanism())
	adm := c.Node(1).Admin() // PLAINTEXT: User:ANONYMOUS, a super user
	ctx := ctxT(t, 60*time.Second)
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "acl-cluster"); err != nil {
		t.Fatal(err)
	}
	produce := func() error {
		cl, err := kgo.NewClient(kgo.SeedBrokers(inter...), alice, kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.DisableIdempotentWrite(), kgo.RequestRetries(2))
		if err != nil {
			return err
		}
		defer cl.Close()
		for i := 0; i < 9; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "acl-cluster", Value: []byte("v")}).FirstErr(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := produce(); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alice without WRITE: %v", err)
	}
	acl := kadm.NewACLs().Allow("User:alice").Topics("acl-cluster").Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)
	if _, err := adm.CreateACLs(ctx, acl); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "alice's WRITE on every broker", func() error { return produce() })
	for _, n := range c.Brokers() {
		if got := sumOffsets(endOffsets(t, n.Broker, "acl-cluster")); got < 9 {
			t.Fatalf("node %d: %d records", n.ID, got)
		}
	}
	// alice posing as follower 2: CLUSTER_ACTION is required.
	cl, err := kgo.NewClient(kgo.SeedBrokers(inter[0]), alice)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.ReplicaState.ID, f.ReplicaState.Epoch, f.MaxWaitMillis, f.MaxBytes, f.SessionEpoch = 2, 2, 1, 10, 1<<20, -1
	md, err := adm.Metadata(ctx, "acl-cluster")
	if err != nil {
		t.Fatal(err)
	}
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic, ft.TopicID = "acl-cluster", md.Topics["acl-cluster"].ID
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	resp, err := cl.SeedBrokers()[0].Request(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	if code := firstErrorCode(resp); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("alice's follower fetch: error %d, want TOPIC_AUTHORIZATION_FAILED", code)
	}
}

// aclHosts creates ACLs with odd principals and hosts (CIDR blocks,
// KIP-1276) as the super user, and asks Metadata as u60 (granted from
// 127.0.0.0/8, where the test connects from) and u61 (granted from
// 10.0.0.0/8 only).
func aclHosts(t *testing.T, n *aclNode) map[string]int16 {
	t.Helper()
	ctx := context.Background()
	admin := n.client(t, "admin")
	out := map[string]int16{}
	for _, c := range []struct{ principal, host string }{
		{"User:u60", "127.0.0.0/8"}, {"User:u61", "10.0.0.0/8"}, {"User:u61", "2001:db8::/32"}, {"User:u61", "host.example"},
		{"nocolon", "*"}, {"User:u61", ""}, {"User:u61", "10.0.0.0/33"}, {"User:u61", "10.0.0.0/"}, {"User:u61", "::1/129"},
	} {
		cr := kmsg.NewPtrCreateACLsRequest()
		ac := kmsg.NewCreateACLsRequestCreation()
		ac.ResourceType, ac.ResourceName, ac.ResourcePatternType = kmsg.ACLResourceTypeTopic, "mt", kmsg.ACLResourcePatternTypeLiteral
		ac.Principal, ac.Host, ac.Operation, ac.PermissionType = c.principal, c.host, kmsg.ACLOperationDescribe, kmsg.ACLPermissionTypeAllow
		cr.Creations = append(cr.Creations, ac)
		resp, err := cr.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		out[fmt.Sprintf("CreateAcls %s from %q", c.principal, c.host)] = resp.Results[0].ErrorCode
	}
	for _, u := range []string{"u60", "u61"} {
		cl := n.client(t, u, kgo.RequestRetries(0))
		want := int16(0)
		if u == "u61" {
			want = kerr.TopicAuthorizationFailed.Code
		}
		var code int16
		deadline := time.Now().Add(20 * time.Second)
		for {
			md := kmsg.NewPtrMetadataRequest()
			md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("mt")}}
			resp, err := cl.SeedBrokers()[0].Request(ctx, md)
			if err != nil {
				t.Fatal(err)
			}
			code = firstErrorCode(resp)
			// The ACLs reach the broker through the metadata log.
			if code == want || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		out["Metadata as "+u] = code
	}
	return out
}
