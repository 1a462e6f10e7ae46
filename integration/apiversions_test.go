//go:build integration

package integration

// kgo-broker next to Apache Kafka 4.4 (integration/testdata/kafka-reference-broker,
// kafka.Kafka from the cached jars), both started from the same
// server.properties, asked the same questions:
//
//   - ApiVersions on the client and the CONTROLLER listener, key by key, and
//     the supported and finalized features;
//   - what each API answers where kgo-broker gives Kafka's answer for a
//     capability that is off (SASL on a PLAINTEXT listener, ACLs, delegation tokens, quotas, share
//     and streams groups, voter changes, telemetry, ...);
//   - DescribeConfigs of the broker, the cluster-wide defaults and a topic,
//     with synonyms and documentation.
//
// Every remaining difference is listed below with its reason; the test fails
// on a difference that is not listed and on a listed one that is gone, so the
// lists (and the table in docs/STATUS.md, which -update-status rewrites) stay
// true. Kafka is formatted with share.version 2 and streams.version 1, the
// levels kgo-broker supports, and its other defaults (eligible leader
// replicas on), so the two clusters finalize the same features.
//
//	make build && KGO_BROKER_BIN=$PWD/bin/kgo-broker go test -tags integration -count=1 -run TestAgainstKafka44 ./integration/

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var updateStatus = flag.Bool("update-status", false, "rewrite the Kafka 4.4 difference tables in docs/STATUS.md")

// The reference broker and the features kgo-broker finalizes (see
// controller/features.go).
const referenceBrokerScript = "integration/testdata/kafka-reference-broker"

var referenceFeatures = []string{"share.version=2", "streams.version=1"}

// parityOverrides are set on both nodes: a static synonym, a sensitive static
// key and keys Kafka does not know (a reporter's and a vendor's), as a real
// deployment's server.properties has them.
var parityOverrides = map[string]string{
	"log.retention.hours":                          "100",
	"ssl.keystore.password":                        "secret",
	"confluent.support.metrics.enable":             "false",
	"confluent.metrics.reporter.bootstrap.servers": "localhost:9092",
}

// apiVersionDiff is a remaining ApiVersions difference: the range each side
// lists ("" when it does not list the key).
type apiVersionDiff struct {
	Listener   string // "client" or "CONTROLLER"
	Key        int16
	Kafka, Kgo string
	Why        string
}

// apiVersionDiffs is empty: both listeners list Kafka 4.4's keys at its
// versions (raft Fetch v18, KIP-1166, and AssignReplicasToDirs, KIP-858,
// closed the CONTROLLER listener's last two gaps).
var apiVersionDiffs = []apiVersionDiff{}

// featureDiff is a supported feature range that differs.
type featureDiff struct {
	Name, Kafka, Kgo, Why string
}

var featureDiffs = []featureDiff{}

// answerDiff is an API whose answer differs: the error code each side gives.
type answerDiff struct {
	Case       string
	Kafka, Kgo int16
	Why        string
}

var answerDiffs = []answerDiff{}

// configDiff is a DescribeConfigs entry that differs.
type configDiff struct {
	Resource, Name, Field, Kafka, Kgo, Why string
}

var configDiffs = []configDiff{}

// kafkaPair is kgo-broker and Apache Kafka started from the same config.
type kafkaPair struct {
	kgo, kafka *Broker
	clusterID  string
}

func (p kafkaPair) sides() []*Broker { return []*Broker{p.kafka, p.kgo} }

func startKafkaPair(t *testing.T) kafkaPair {
	t.Helper()
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
	kafka := NewBroker(t, BrokerOptions{Bin: ref, Overrides: parityOverrides})
	args := []string{"format", "-t", id, "-c", kafka.Props}
	for _, f := range referenceFeatures {
		args = append(args, "--feature", f)
	}
	if r := RunCommand(t, RunOpts{Timeout: 2 * time.Minute, Hermetic: true, Dir: kafka.Dir}, ref, args...); r.ExitCode != 0 {
		t.Fatalf("formatting the reference broker:\n%s", r)
	}
	kgo := NewBroker(t, BrokerOptions{Overrides: parityOverrides, Env: []string{"CLUSTER_ID=" + id}})
	kafka.Start()
	kgo.Start()
	kgo.WaitReady()
	if err := kafka.waitReady(3 * time.Minute); err != nil {
		t.Fatalf("Apache Kafka not ready: %v", err)
	}
	return kafkaPair{kgo: kgo, kafka: kafka, clusterID: id}
}

func TestAgainstKafka44(t *testing.T) {
	p := startKafkaPair(t)
	for _, b := range p.sides() {
		createTopic(t, b, "t1", 2, map[string]string{"retention.ms": "3600000", "cleanup.policy": "compact,delete"})
		// Metadata lists a leader before the partitions serve (Kafka's
		// metadata cache is updated before the replica manager).
		waitFor(t, 30*time.Second, "t1 to serve ListOffsets", func() error {
			r := kmsg.NewPtrListOffsetsRequest()
			r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t1", Partitions: []kmsg.ListOffsetsRequestTopicPartition{
				{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -1}, {Partition: 1, CurrentLeaderEpoch: -1, Timestamp: -1}}}}
			for _, rp := range rawRequest(t, b, b.Port, r, 10).(*kmsg.ListOffsetsResponse).Topics[0].Partitions {
				if rp.ErrorCode != 0 {
					return fmt.Errorf("partition %d: error %d", rp.Partition, rp.ErrorCode)
				}
			}
			return nil
		})
	}
	t.Run("ApiVersions", func(t *testing.T) { testApiVersionsParity(t, p) })
	t.Run("Answers", func(t *testing.T) { testAnswersParity(t, p) })
	t.Run("DescribeConfigs", func(t *testing.T) { testDescribeConfigsParity(t, p) })
	if *updateStatus && !t.Failed() {
		writeStatusTables(t)
	}
}

// ---------------------------------------------------------------------------
// ApiVersions

func testApiVersionsParity(t *testing.T, p kafkaPair) {
	var got []apiVersionDiff
	var kafkaFeatures, kgoFeatures map[string]string
	for _, l := range []struct {
		name string
		port func(*Broker) int
	}{{"client", func(b *Broker) int { return b.Port }}, {"CONTROLLER", func(b *Broker) int { return b.CtrlPort }}} {
		var ranges [2]map[int16]string
		var features [2]map[string]string
		var finalized [2]string
		for i, b := range p.sides() {
			req := kmsg.NewPtrApiVersionsRequest()
			req.ClientSoftwareName, req.ClientSoftwareVersion = "kgo-parity", "1"
			resp := rawRequest(t, b, l.port(b), req, 4).(*kmsg.ApiVersionsResponse)
			if resp.ErrorCode != 0 {
				t.Fatalf("%s ApiVersions on the %s listener: error %d", []string{"Kafka", "kgo-broker"}[i], l.name, resp.ErrorCode)
			}
			ranges[i] = map[int16]string{}
			for _, k := range resp.ApiKeys {
				ranges[i][k.ApiKey] = fmt.Sprintf("%d-%d", k.MinVersion, k.MaxVersion)
			}
			features[i] = map[string]string{}
			for _, f := range resp.SupportedFeatures {
				features[i][f.Name] = fmt.Sprintf("%d-%d", f.MinVersion, f.MaxVersion)
			}
			var fin []string
			for _, f := range resp.FinalizedFeatures {
				fin = append(fin, fmt.Sprintf("%s=%d-%d", f.Name, f.MinVersionLevel, f.MaxVersionLevel))
			}
			sort.Strings(fin)
			finalized[i] = strings.Join(fin, " ")
		}
		keys := map[int16]bool{}
		for _, m := range ranges {
			for k := range m {
				keys[k] = true
			}
		}
		for _, k := range slices.Sorted(mapKeys(keys)) {
			if ranges[0][k] != ranges[1][k] {
				got = append(got, apiVersionDiff{Listener: l.name, Key: k, Kafka: ranges[0][k], Kgo: ranges[1][k]})
			}
		}
		if finalized[0] != finalized[1] {
			t.Errorf("%s listener finalized features differ:\n Kafka      %s\n kgo-broker %s", l.name, finalized[0], finalized[1])
		}
		if l.name == "client" {
			kafkaFeatures, kgoFeatures = features[0], features[1]
		}
		t.Logf("%s listener: Kafka lists %d keys, kgo-broker %d", l.name, len(ranges[0]), len(ranges[1]))
	}
	checkDiffs(t, "ApiVersions", got, apiVersionDiffs, func(d apiVersionDiff) string {
		return fmt.Sprintf("%s %s (%d): Kafka %q, kgo-broker %q", d.Listener, kmsg.NameForKey(d.Key), d.Key, d.Kafka, d.Kgo)
	})

	var fgot []featureDiff
	names := map[string]bool{}
	for n := range kafkaFeatures {
		names[n] = true
	}
	for n := range kgoFeatures {
		names[n] = true
	}
	for _, n := range slices.Sorted(mapKeys(names)) {
		if kafkaFeatures[n] != kgoFeatures[n] {
			fgot = append(fgot, featureDiff{Name: n, Kafka: kafkaFeatures[n], Kgo: kgoFeatures[n]})
		}
	}
	checkDiffs(t, "supported features", fgot, featureDiffs, func(d featureDiff) string {
		return fmt.Sprintf("%s: Kafka %q, kgo-broker %q", d.Name, d.Kafka, d.Kgo)
	})
}

// checkDiffs fails on a difference not in want (with its values) and on an
// entry of want that is no longer a difference.
func checkDiffs[D any](t *testing.T, what string, got, want []D, desc func(D) string) {
	t.Helper()
	key := func(d D) string { return desc(d) }
	wantSet := map[string]bool{}
	for _, d := range want {
		wantSet[key(d)] = true
	}
	gotSet := map[string]bool{}
	for _, d := range got {
		gotSet[key(d)] = true
		if !wantSet[key(d)] {
			t.Errorf("%s: new difference from Kafka 4.4: %s (fix it, or list it with its reason in integration/apiversions_test.go and docs/STATUS.md)", what, desc(d))
		}
	}
	for _, d := range want {
		if !gotSet[key(d)] {
			t.Errorf("%s: listed difference is gone, remove it from the list and rewrite docs/STATUS.md (-args -update-status): %s", what, desc(d))
		}
	}
}

func mapKeys[K comparable, V any](m map[K]V) func(func(K) bool) {
	return func(yield func(K) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Answers of the APIs whose capability is off

// answerCase sends the same request to both (built per side, for ids and
// paths that differ) and compares the decoded responses.
type answerCase struct {
	name    string
	version int16
	req     func(side kafkaSide) kmsg.Request
}

// kafkaSide is what a request may need of the node it goes to.
type kafkaSide struct {
	b         *Broker
	clusterID string
	topicID   [16]byte // t1's
	dataDir   string   // absolute
}

func testAnswersParity(t *testing.T, p kafkaPair) {
	sides := make([]kafkaSide, 2)
	for i, b := range p.sides() {
		md := kmsg.NewPtrMetadataRequest()
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("t1")
		md.Topics = append(md.Topics, mt)
		resp := rawRequest(t, b, b.Port, md, 12).(*kmsg.MetadataResponse)
		abs, _ := filepath.Abs(b.DataDir)
		sides[i] = kafkaSide{b: b, clusterID: p.clusterID, topicID: resp.Topics[0].TopicID, dataDir: abs}
	}
	tid := [16]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	sharePart := func() []kmsg.InitializeShareGroupStateRequestTopic {
		return []kmsg.InitializeShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	}
	str := kmsg.StringPtr
	fixedInstance := [16]byte{1, 152, 177, 238, 167, 194, 74, 187, 168, 160, 32, 181, 70, 156, 178, 213}
	cases := []answerCase{
		{"ApiVersions v5 other cluster", 5, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.ClientSoftwareName, r.ClientSoftwareVersion, r.ClusterID, r.NodeID = "a", "1", str("nope"), 1
			return r
		}},
		{"ApiVersions v5 other node", 5, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.ClientSoftwareName, r.ClientSoftwareVersion, r.ClusterID, r.NodeID = "a", "1", str(s.clusterID), 2
			return r
		}},
		{"ApiVersions v5 cluster without node", 5, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.ClientSoftwareName, r.ClientSoftwareVersion, r.ClusterID = "a", "1", str(s.clusterID)
			return r
		}},
		{"ApiVersions v3 bad software name", 3, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrApiVersionsRequest()
			r.ClientSoftwareName, r.ClientSoftwareVersion = "bad name", "1"
			return r
		}},
		{"ListOffsets v11 earliest pending upload", 11, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t1", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -6}}}}
			return r
		}},
		{"ListOffsets v10 earliest pending upload", 10, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrListOffsetsRequest()
			r.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t1", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 0, CurrentLeaderEpoch: -1, Timestamp: -6}}}}
			return r
		}},
		{"OffsetCommit v10 unknown topic id", 10, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Group, r.Generation = "g", -1
			r.Topics = []kmsg.OffsetCommitRequestTopic{{TopicID: tid, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
			return r
		}},
		{"SaslHandshake v0", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrSASLHandshakeRequest()
			r.Mechanism = "PLAIN"
			return r
		}},
		{"SaslHandshake", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrSASLHandshakeRequest()
			r.Mechanism = "PLAIN"
			return r
		}},
		{"SaslAuthenticate", 2, func(s kafkaSide) kmsg.Request { return kmsg.NewPtrSASLAuthenticateRequest() }},
		{"DescribeAcls", 3, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDescribeACLsRequest()
			r.ResourceType, r.ResourcePatternType, r.Operation, r.PermissionType = 1, 1, 1, 1
			return r
		}},
		{"CreateAcls", 3, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrCreateACLsRequest()
			r.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: 2, ResourceName: "t", ResourcePatternType: 3, Principal: "User:a", Host: "*", Operation: 3, PermissionType: 3}}
			return r
		}},
		{"DeleteAcls", 3, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDeleteACLsRequest()
			r.Filters = []kmsg.DeleteACLsRequestFilter{{ResourceType: 1, ResourcePatternType: 1, Operation: 1, PermissionType: 1}}
			return r
		}},
		{"CreateDelegationToken", 3, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrCreateDelegationTokenRequest()
			r.MaxLifetimeMillis = -1
			return r
		}},
		{"CreateDelegationToken with owner", 3, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrCreateDelegationTokenRequest()
			r.MaxLifetimeMillis, r.OwnerPrincipalType, r.OwnerPrincipalName = -1, str("User"), str("alice")
			return r
		}},
		{"RenewDelegationToken", 2, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrRenewDelegationTokenRequest()
			r.HMAC, r.RenewTimeMillis = []byte("abc"), 1000
			return r
		}},
		{"ExpireDelegationToken", 2, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrExpireDelegationTokenRequest()
			r.HMAC, r.ExpiryPeriodMillis = []byte("abc"), 1000
			return r
		}},
		{"DescribeDelegationToken", 3, func(s kafkaSide) kmsg.Request { return kmsg.NewPtrDescribeDelegationTokenRequest() }},
		{"DescribeClientQuotas", 1, func(s kafkaSide) kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() }},
		{"DescribeClientQuotas bad filter", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDescribeClientQuotasRequest()
			r.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "ip", MatchType: 2}, {EntityType: "user", MatchType: 2}}
			return r
		}},
		{"DescribeClientQuotas custom type", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDescribeClientQuotasRequest()
			r.Components = []kmsg.DescribeClientQuotasRequestComponent{{EntityType: "group", MatchType: 2}}
			return r
		}},
		{"AlterClientQuotas", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAlterClientQuotasRequest()
			r.ValidateOnly = true
			r.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: str("b")}},
				Ops: []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1000}}}}
			return r
		}},
		{"DescribeUserScramCredentials all", 0, func(s kafkaSide) kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() }},
		{"DescribeUserScramCredentials named", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
			r.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "bob"}}
			return r
		}},
		{"AlterUserScramCredentials invalid", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Deletions = []kmsg.AlterUserSCRAMCredentialsRequestDeletion{{Name: "nobody", Mechanism: 1}, {Name: "nobody2", Mechanism: 3}}
			r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{
				{Name: "bob", Mechanism: 9, Iterations: 8192, Salt: []byte("abc"), SaltedPassword: []byte("abc")},
				{Name: "carl", Mechanism: 1, Iterations: 10, Salt: []byte("abc"), SaltedPassword: []byte("abc")},
				{Name: "", Mechanism: 1, Iterations: 8192, Salt: []byte("abc"), SaltedPassword: []byte("abc")},
			}
			return r
		}},
		{"AlterUserScramCredentials upsert", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			r.Upsertions = []kmsg.AlterUserSCRAMCredentialsRequestUpsertion{{Name: "dora", Mechanism: 1, Iterations: 8192, Salt: []byte("abc"), SaltedPassword: []byte("abc")}}
			return r
		}},
		{"ElectLeaders preferred", 2, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.TimeoutMillis = 5000
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t1", Partitions: []int32{0, 1}}, {Topic: "nope", Partitions: []int32{0}}}
			return r
		}},
		{"ElectLeaders unclean", 2, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrElectLeadersRequest()
			r.ElectionType, r.TimeoutMillis = 1, 5000
			r.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t1", Partitions: []int32{0, 7}}}
			return r
		}},
		{"AlterPartitionReassignments", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAlterPartitionAssignmentsRequest()
			r.TimeoutMillis = 5000
			r.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t1", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{
				{Partition: 0, Replicas: []int32{1}}, {Partition: 1}, {Partition: 0, Replicas: []int32{1, 2}}}},
				{Topic: "nope", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0, Replicas: []int32{1}}}}}
			return r
		}},
		{"AlterReplicaLogDirs", 2, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAlterReplicaLogDirsRequest()
			r.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{
				{Dir: s.dataDir, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t1", Partitions: []int32{0}}, {Topic: "nope", Partitions: []int32{0}}}},
				{Dir: "/nonexistent/dir", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "t1", Partitions: []int32{1}}}},
			}
			return r
		}},
		{"UnregisterBroker", 0, func(s kafkaSide) kmsg.Request { r := kmsg.NewPtrUnregisterBrokerRequest(); r.BrokerID = 5; return r }},
		{"UnregisterController", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrUnregisterControllerRequest()
			r.ControllerID = 5
			return r
		}},
		{"AddRaftVoter other cluster", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAddRaftVoterRequest()
			r.ClusterID, r.TimeoutMillis, r.VoterID, r.VoterDirectoryID = str("x"), 1000, 2, tid
			r.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "h", Port: 1}}
			return r
		}},
		{"AddRaftVoter", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAddRaftVoterRequest()
			r.ClusterID, r.TimeoutMillis, r.VoterID, r.VoterDirectoryID = str(s.clusterID), 1000, 2, tid
			r.Listeners = []kmsg.AddRaftVoterRequestListener{{Name: "CONTROLLER", Host: "h", Port: 1}}
			return r
		}},
		{"RemoveRaftVoter", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrRemoveRaftVoterRequest()
			r.ClusterID, r.VoterID, r.VoterDirectoryID = str(s.clusterID), 2, tid
			return r
		}},
		{"ListConfigResources v0", 0, func(s kafkaSide) kmsg.Request { return kmsg.NewPtrListConfigResourcesRequest() }},
		{"ListConfigResources v1 brokers", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrListConfigResourcesRequest()
			r.ResourceTypes = []int8{4, 8, 16, 32}
			return r
		}},
		{"ListConfigResources v1 unsupported type", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrListConfigResourcesRequest()
			r.ResourceTypes = []int8{2, 64}
			return r
		}},
		{"GetTelemetrySubscriptions", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
			r.ClientInstanceID = fixedInstance
			return r
		}},
		{"PushTelemetry unknown subscription", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrPushTelemetryRequest()
			r.ClientInstanceID, r.SubscriptionID = fixedInstance, 1
			return r
		}},
		{"PushTelemetry zero instance", 0, func(s kafkaSide) kmsg.Request { return kmsg.NewPtrPushTelemetryRequest() }},
		{"ShareGroupHeartbeat", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrShareGroupHeartbeatRequest()
			r.GroupID, r.MemberID, r.SubscribedTopicNames = "sg", "aaaaaaaaaaaaaaaaaaaaaa", []string{"t1"}
			return r
		}},
		{"ShareGroupDescribe", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrShareGroupDescribeRequest()
			r.GroupIDs = []string{"sg", "sg2"}
			return r
		}},
		{"ShareFetch", 2, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrShareFetchRequest()
			r.GroupID, r.MemberID, r.MaxWaitMillis = str("sg"), str("m"), 100
			return r
		}},
		{"ShareAcknowledge", 2, func(s kafkaSide) kmsg.Request {
			// A member that never fetched: SHARE_SESSION_NOT_FOUND. (The
			// ShareFetch case's member "m" opened a session on a connection
			// that is closed by now; when a broker drops it is a race.)
			r := kmsg.NewPtrShareAcknowledgeRequest()
			r.GroupID, r.MemberID, r.ShareSessionEpoch = str("sg"), str("m-ack"), 1
			return r
		}},
		{"InitializeShareGroupState", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrInitializeShareGroupStateRequest()
			r.GroupID, r.Topics = "sg", sharePart()
			return r
		}},
		{"ReadShareGroupState", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateRequest()
			r.GroupID = "sg"
			r.Topics = []kmsg.ReadShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{"WriteShareGroupState", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrWriteShareGroupStateRequest()
			r.GroupID = "sg"
			r.Topics = []kmsg.WriteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{"DeleteShareGroupState", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupStateRequest()
			r.GroupID = "sg"
			r.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{TopicID: tid, Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{"ReadShareGroupStateSummary", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrReadShareGroupStateSummaryRequest()
			r.GroupID = "sg"
			r.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{TopicID: tid, Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
			return r
		}},
		{"DescribeShareGroupOffsets", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
			r.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "sg"}}
			return r
		}},
		{"AlterShareGroupOffsets", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrAlterShareGroupOffsetsRequest()
			r.GroupID = "sg"
			return r
		}},
		{"DeleteShareGroupOffsets", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrDeleteShareGroupOffsetsRequest()
			r.GroupID = "sg"
			return r
		}},
		{"StreamsGroupHeartbeat", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			r.Group, r.MemberID, r.RebalanceTimeoutMillis = "stg", "m", 1000
			return r
		}},
		{"StreamsGroupDescribe", 1, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrStreamsGroupDescribeRequest()
			r.Groups = []string{"stg"}
			return r
		}},
		{"StreamsGroupTopologyDescriptionUpdate", 0, func(s kafkaSide) kmsg.Request {
			r := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
			r.Group, r.MemberID = "stg", "m"
			return r
		}},
	}
	var got []answerDiff
	for _, c := range cases {
		var out [2]string
		var codes [2]int16
		for i, s := range sides {
			req := c.req(s)
			resp := rawRequest(t, s.b, s.b.Port, req, c.version)
			out[i] = normalizeAnswer(t, resp, s)
			codes[i] = firstErrorCode(resp)
		}
		if out[0] != out[1] {
			if codes[0] != codes[1] {
				got = append(got, answerDiff{Case: c.name, Kafka: codes[0], Kgo: codes[1]})
				continue
			}
			t.Errorf("%s v%d answers differ:\n Kafka      %s\n kgo-broker %s", c.name, c.version, out[0], out[1])
		}
	}
	checkDiffs(t, "answers", got, answerDiffs, func(d answerDiff) string {
		return fmt.Sprintf("%s: Kafka error %d, kgo-broker %d", d.Case, d.Kafka, d.Kgo)
	})
}

// normalizeAnswer is a response as JSON with what legitimately differs
// between two nodes replaced: throttle times, the data dir.
func normalizeAnswer(t *testing.T, resp kmsg.Response, s kafkaSide) string {
	t.Helper()
	js, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka answers some APIs from hash maps (AlterReplicaLogDirs,
	// AlterUserScramCredentials, ElectLeaders for all partitions): the
	// order of results is not part of the answer.
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	if js, err = json.Marshal(sortArrays(v)); err != nil {
		t.Fatal(err)
	}
	out := regexp.MustCompile(`"ThrottleMillis":\d+`).ReplaceAllString(string(js), `"ThrottleMillis":0`)
	out = strings.ReplaceAll(out, s.dataDir, "<data dir>")
	// Empty and null arrays are alike to clients (kmsg decodes both as nil
	// or empty depending on the field).
	out = strings.ReplaceAll(out, ":[]", ":null")
	return out
}

// sortArrays sorts every JSON array by the elements' encodings.
func sortArrays(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = sortArrays(e)
		}
	case []any:
		for i, e := range x {
			x[i] = sortArrays(e)
		}
		slices.SortFunc(x, func(a, b any) int {
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			return bytes.Compare(ja, jb)
		})
	}
	return v
}

// firstErrorCode is the first error code in a response (top level, else the
// first nested one), 0 if none.
func firstErrorCode(resp kmsg.Response) int16 {
	js, _ := json.Marshal(resp)
	for _, m := range regexp.MustCompile(`"ErrorCode":(-?\d+)`).FindAllStringSubmatch(string(js), -1) {
		if n, _ := strconv.Atoi(m[1]); n != 0 {
			return int16(n)
		}
	}
	return 0
}

// ---------------------------------------------------------------------------
// DescribeConfigs

func testDescribeConfigsParity(t *testing.T, p kafkaPair) {
	// The same dynamic configs on both: one for this broker, one
	// cluster-wide default.
	for _, b := range p.sides() {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		for _, rc := range []struct{ name, key, value string }{{"1", "log.cleaner.threads", "2"}, {"", "log.retention.bytes", "123456789"}} {
			r := kmsg.NewIncrementalAlterConfigsRequestResource()
			r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeBroker, rc.name
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Value = rc.key, kmsg.StringPtr(rc.value)
			r.Configs = append(r.Configs, c)
			req.Resources = append(req.Resources, r)
		}
		resp := rawRequest(t, b, b.Port, req, 1).(*kmsg.IncrementalAlterConfigsResponse)
		for _, r := range resp.Resources {
			if r.ErrorCode != 0 {
				t.Fatalf("IncrementalAlterConfigs %q: error %d %v", r.ResourceName, r.ErrorCode, r.ErrorMessage)
			}
		}
	}
	var got []configDiff
	for _, res := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeBroker, "1"}, {kmsg.ConfigResourceTypeBroker, ""}, {kmsg.ConfigResourceTypeTopic, "t1"}} {
		label := fmt.Sprintf("%s %s", res.typ, res.name)
		var entries [2]map[string]map[string]string
		for i, b := range p.sides() {
			// Kafka updates its dynamic config maps before the current
			// config: wait until the values too are the new ones.
			waitFor(t, 20*time.Second, "the dynamic configs on "+b.Dir, func() error {
				entries[i] = describeConfigs(t, b, res.typ, res.name)
				if res.name == "" && entries[i]["log.retention.bytes"] == nil {
					return fmt.Errorf("log.retention.bytes not set cluster-wide yet")
				}
				if res.name == "1" && (entries[i]["log.cleaner.threads"]["Value"] != "2" || entries[i]["log.retention.bytes"]["Value"] != "123456789") {
					return fmt.Errorf("the dynamic values are not applied on broker 1 yet")
				}
				return nil
			})
		}
		names := map[string]bool{}
		for _, e := range entries {
			for n := range e {
				names[n] = true
			}
		}
		for _, n := range slices.Sorted(mapKeys(names)) {
			a, b := entries[0][n], entries[1][n]
			if (a == nil) != (b == nil) {
				got = append(got, configDiff{Resource: label, Name: n, Field: "Present", Kafka: strconv.FormatBool(a != nil), Kgo: strconv.FormatBool(b != nil)})
				continue
			}
			for _, f := range []string{"Value", "Source", "ReadOnly", "IsSensitive", "ConfigType", "Documentation", "Synonyms"} {
				if a[f] != b[f] {
					got = append(got, configDiff{Resource: label, Name: n, Field: f, Kafka: a[f], Kgo: b[f]})
				}
			}
		}
		t.Logf("%s: Kafka %d entries, kgo-broker %d", label, len(entries[0]), len(entries[1]))
	}
	checkDiffs(t, "DescribeConfigs", got, configDiffs, func(d configDiff) string {
		return fmt.Sprintf("%s %s %s: Kafka %q, kgo-broker %q", d.Resource, d.Name, d.Field, d.Kafka, d.Kgo)
	})
}

// describeConfigs returns a resource's entries (v4, synonyms and
// documentation), each field as a string, with the node's own ports and
// dirs replaced by placeholders.
func describeConfigs(t *testing.T, b *Broker, typ kmsg.ConfigResourceType, name string) map[string]map[string]string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = typ, name
	req.Resources = append(req.Resources, r)
	resp := rawRequest(t, b, b.Port, req, 4).(*kmsg.DescribeConfigsResponse)
	if rr := resp.Resources[0]; rr.ErrorCode != 0 {
		t.Fatalf("DescribeConfigs %s %q: error %d %v", typ, name, rr.ErrorCode, rr.ErrorMessage)
	}
	norm := func(s string) string {
		s = strings.ReplaceAll(s, b.DataDir, "<data dir>")
		s = strings.ReplaceAll(s, ":"+strconv.Itoa(b.Port), ":<port>")
		return strings.ReplaceAll(s, ":"+strconv.Itoa(b.CtrlPort), ":<controller port>")
	}
	ptr := func(p *string) string {
		if p == nil {
			return "<null>"
		}
		return norm(*p)
	}
	out := map[string]map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		var syn []string
		for _, s := range c.ConfigSynonyms {
			syn = append(syn, fmt.Sprintf("%s=%s(%s)", s.Name, ptr(s.Value), s.Source))
		}
		out[c.Name] = map[string]string{
			"Value": ptr(c.Value), "Source": c.Source.String(), "ReadOnly": strconv.FormatBool(c.ReadOnly),
			"IsSensitive": strconv.FormatBool(c.IsSensitive), "ConfigType": c.ConfigType.String(),
			"Documentation": ptr(c.Documentation), "Synonyms": strings.Join(syn, " "),
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Raw requests at an exact version

// rawRequest sends req at version on a fresh connection to 127.0.0.1:port
// and decodes the answer; a closed connection fails the test.
func rawRequest(t *testing.T, b *Broker, port int, req kmsg.Request, version int16) kmsg.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	req.SetVersion(version)
	buf := []byte{0, 0, 0, 0}
	buf = kbin.AppendInt16(buf, req.Key())
	buf = kbin.AppendInt16(buf, version)
	buf = kbin.AppendInt32(buf, 7)
	buf = kbin.AppendNullableString(buf, kmsg.StringPtr("kgo-parity"))
	if req.IsFlexible() {
		buf = append(buf, 0) // no header tags
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := conn.Write(buf); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatalf("%s v%d to %s: %v (connection closed?)", kmsg.NameForKey(req.Key()), version, b.Dir, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, body); err != nil {
		t.Fatal(err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	body = body[4:] // correlation id
	if resp.IsFlexible() && req.Key() != 18 {
		body = body[1:] // the ApiVersions response header never has tags
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("decoding %s v%d from %s: %v", kmsg.NameForKey(req.Key()), version, b.Dir, err)
	}
	return resp
}

// ---------------------------------------------------------------------------
// docs/STATUS.md

const (
	statusBegin = "<!-- BEGIN kafka-4.4-differences (go test -tags integration -run TestAgainstKafka44 ./integration/ -args -update-status) -->"
	statusEnd   = "<!-- END kafka-4.4-differences -->"
)

// statusTables renders the difference lists as docs/STATUS.md shows them.
func statusTables() string {
	var b bytes.Buffer
	cell := func(s string) string {
		if s == "" {
			return "(not listed)"
		}
		return strings.ReplaceAll(s, "|", `\|`)
	}
	listeners := "the client listeners list exactly what Kafka 4.4's do"
	if !slices.ContainsFunc(apiVersionDiffs, func(d apiVersionDiff) bool { return d.Listener == "CONTROLLER" }) {
		listeners = "the client and CONTROLLER listeners list exactly what Kafka 4.4's do"
	}
	fmt.Fprintf(&b, "ApiVersions (%s):\n\n| Listener | API | Kafka 4.4 | kgo-broker | Why |\n|---|---|---|---|---|\n", listeners)
	for _, d := range apiVersionDiffs {
		fmt.Fprintf(&b, "| %s | %s (%d) | %s | %s | %s |\n", d.Listener, kmsg.NameForKey(d.Key), d.Key, cell(d.Kafka), cell(d.Kgo), d.Why)
	}
	fmt.Fprintf(&b, "\nSupported features (ApiVersions v3+):\n\n| Feature | Kafka 4.4 | kgo-broker | Why |\n|---|---|---|---|\n")
	for _, d := range featureDiffs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", d.Name, d.Kafka, d.Kgo, d.Why)
	}
	fmt.Fprintf(&b, "\nAnswers (error codes; every other compared request gets Kafka's answer field for field):\n\n| Request | Kafka 4.4 | kgo-broker | Why |\n|---|---|---|---|\n")
	for _, d := range answerDiffs {
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", d.Case, d.Kafka, d.Kgo, d.Why)
	}
	fmt.Fprintf(&b, "\nDescribeConfigs (broker 1, the cluster-wide defaults \"\", topic t1; every other entry and field is Kafka's):\n\n| Resource | Key | Field | Kafka 4.4 | kgo-broker | Why |\n|---|---|---|---|---|---|\n")
	for _, d := range configDiffs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", strings.TrimSpace(d.Resource), d.Name, d.Field, cell(d.Kafka), cell(d.Kgo), d.Why)
	}
	return b.String()
}

func writeStatusTables(t *testing.T) {
	path := filepath.Join(repoRoot, "docs", "STATUS.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, statusBegin), strings.Index(s, statusEnd)
	if i < 0 || j < i {
		t.Fatalf("docs/STATUS.md has no %q ... %q block", statusBegin, statusEnd)
	}
	s = s[:i+len(statusBegin)] + "\n" + statusTables() + s[j:]
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestStatusTablesUpToDate: docs/STATUS.md shows the difference lists above
// (no processes: it runs in every integration run).
func TestStatusTablesUpToDate(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "STATUS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), statusBegin+"\n"+statusTables()+statusEnd) {
		t.Fatalf("docs/STATUS.md does not show the current Kafka 4.4 difference tables; run go test -tags integration -run TestAgainstKafka44 ./integration/ -args -update-status (or paste):\n%s", statusTables())
	}
}
