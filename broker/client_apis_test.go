package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/zap"

	"github.com/kgo-broker/kgo-broker/config"
	"github.com/kgo-broker/kgo-broker/controller"
	"github.com/kgo-broker/kgo-broker/metadatacache"
	"github.com/kgo-broker/kgo-broker/protocol"
)

// apiTestBroker is a Broker with only what the image-answered client APIs
// need: node 1 of cluster "cid", metadata.version 4.4-IV2, brokers 1 (with
// PLAINTEXT) and 2 (fenced), controller 3, topic t with partitions 0 (led
// by its preferred replica 1), 1 (replicas 2,1, led by 1, 2 fenced) and 2
// (leaderless, replicas 2), a client quota for user alice and a SCRAM
// credential for bob.
func apiTestBroker(t *testing.T) *Broker {
	t.Helper()
	c := metadatacache.NewCache(metadatacache.Config{ClusterID: "cid"})
	fl := metadatacache.NewFeatureLevelRecord()
	fl.Name, fl.FeatureLevel = metadatacache.MetadataVersionFeature, metadatacache.MV4_4_IV2
	recs := []metadatacache.Record{fl}
	for id := int32(1); id <= 2; id++ {
		r := metadatacache.NewRegisterBrokerRecord()
		r.BrokerID, r.BrokerEpoch, r.Fenced = id, 10, id == 2
		r.EndPoints = []metadatacache.BrokerEndpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 9092}}
		recs = append(recs, r)
	}
	cr := metadatacache.NewRegisterControllerRecord()
	cr.ControllerID = 3
	recs = append(recs, cr)
	tr := metadatacache.NewTopicRecord()
	tr.Name, tr.TopicID = "t", [16]byte{7}
	recs = append(recs, tr)
	for _, p := range []struct {
		id       int32
		replicas []int32
		leader   int32
	}{{0, []int32{1}, 1}, {1, []int32{2, 1}, 1}, {2, []int32{2}, -1}} {
		pr := metadatacache.NewPartitionRecord()
		pr.PartitionID, pr.TopicID, pr.Replicas, pr.Leader = p.id, tr.TopicID, p.replicas, p.leader
		pr.Isr = p.replicas
		if p.leader < 0 {
			pr.Isr = nil
		}
		recs = append(recs, pr)
	}
	alice := "alice"
	q := metadatacache.NewClientQuotaRecord()
	q.Entity = []metadatacache.ClientQuotaEntityData{{EntityType: "user", EntityName: &alice}}
	q.QuotaKey, q.Value = "producer_byte_rate", 1024
	recs = append(recs, q)
	sc := metadatacache.NewUserScramCredentialRecord()
	sc.Name, sc.Mechanism, sc.Iterations = "bob", 1, 8192
	recs = append(recs, sc)
	if err := c.Apply(metadatacache.Batch{BaseOffset: 0, LastOffset: int64(len(recs)) - 1, Epoch: 1, Records: recs}); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.SingleNode(map[string]string{"log.dirs": t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return &Broker{nodeID: 1, clusterID: "cid", meta: c, cfg: cfg, logger: zap.NewNop(),
		controllerListeners: map[string]bool{"CONTROLLER": true}}
}

// call serves r at version v on listener as Broker.Handle would.
func call[R kmsg.Response](t *testing.T, b *Broker, listener string, r kmsg.Request, v int16) R {
	t.Helper()
	r.SetVersion(v)
	resp, err := b.Handle(context.Background(), &protocol.Request{Key: r.Key(), Version: v, Msg: r, Listener: listener})
	if err != nil {
		t.Fatalf("%s v%d: %v", kmsg.NameForKey(r.Key()), v, err)
	}
	return resp.Msg.(R)
}

// TestBrokerAPIsAreKafka44s: the client listener serves every API of Kafka
// 4.4's broker table (franz-go's kversion.V4_4_0) up to its maximum
// version, and nothing else; GetTelemetrySubscriptions and PushTelemetry
// are served but not advertised, as Kafka without a metrics reporter.
func TestBrokerAPIsAreKafka44s(t *testing.T) {
	v := kversion.V4_4_0()
	for k := int16(0); k < 200; k++ {
		kmax, want := v.LookupMaxKeyVersion(k)
		e, served := brokerAPIs[k]
		switch {
		case want != served:
			t.Errorf("%s (%d): Kafka 4.4 serves it: %v, kgo-broker: %v", kmsg.NameForKey(k), k, want, served)
		case served && e.max != kmax:
			t.Errorf("%s (%d): max v%d, Kafka 4.4's is v%d", kmsg.NameForKey(k), k, e.max, kmax)
		case served && e.hidden != (k == 71 || k == 72):
			t.Errorf("%s (%d): hidden %v", kmsg.NameForKey(k), k, e.hidden)
		}
	}
}

func TestApiVersionsV5(t *testing.T) {
	b := apiTestBroker(t)
	cid := "cid"
	other := "other"
	req := func(cluster *string, node int32) *kmsg.ApiVersionsRequest {
		r := kmsg.NewPtrApiVersionsRequest()
		r.ClientSoftwareName, r.ClientSoftwareVersion = "test", "1.0"
		r.ClusterID, r.NodeID = cluster, node
		return r
	}
	for _, tc := range []struct {
		name     string
		listener string
		r        *kmsg.ApiVersionsRequest
		code     int16
	}{
		{"no ids", "PLAINTEXT", req(nil, -1), 0},
		{"matching ids", "PLAINTEXT", req(&cid, 1), 0},
		{"other cluster", "PLAINTEXT", req(&other, 1), kerr.RebootstrapRequired.Code},
		{"other node", "PLAINTEXT", req(&cid, 2), kerr.RebootstrapRequired.Code},
		{"cluster without node", "PLAINTEXT", req(&cid, -1), kerr.InvalidRequest.Code},
		{"node without cluster", "PLAINTEXT", req(nil, 1), kerr.InvalidRequest.Code},
		{"controller listener does not check", "CONTROLLER", req(&other, 9), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := call[*kmsg.ApiVersionsResponse](t, b, tc.listener, tc.r, 5)
			if resp.ErrorCode != tc.code {
				t.Fatalf("error %d, want %d", resp.ErrorCode, tc.code)
			}
			if (tc.code == 0) != (len(resp.ApiKeys) > 0) {
				t.Fatalf("error %d with %d keys (Kafka lists keys only without an error)", resp.ErrorCode, len(resp.ApiKeys))
			}
		})
	}
	bad := req(nil, -1)
	bad.ClientSoftwareName = "bad name"
	if resp := call[*kmsg.ApiVersionsResponse](t, b, "PLAINTEXT", bad, 3); resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 {
		t.Fatalf("invalid software name: error %d, %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}

	// Hidden keys are not listed; below v4 no supported feature has min 0.
	v3 := call[*kmsg.ApiVersionsResponse](t, b, "PLAINTEXT", req(nil, -1), 3)
	for _, k := range v3.ApiKeys {
		if k.ApiKey == 71 || k.ApiKey == 72 {
			t.Errorf("telemetry key %d advertised", k.ApiKey)
		}
	}
	for _, f := range v3.SupportedFeatures {
		if f.MinVersion == 0 {
			t.Errorf("v3 lists %s with min 0", f.Name)
		}
	}
	v4 := call[*kmsg.ApiVersionsResponse](t, b, "PLAINTEXT", req(nil, -1), 4)
	if len(v4.SupportedFeatures) <= len(v3.SupportedFeatures) {
		t.Errorf("v4 lists %d supported features, v3 %d", len(v4.SupportedFeatures), len(v3.SupportedFeatures))
	}
}

// TestTelemetrySubscriptionID: the id is Kafka's, checked against what
// Kafka 4.4.0 answered for this client instance id.
func TestTelemetrySubscriptionID(t *testing.T) {
	id := [16]byte{1, 152, 177, 238, 167, 194, 74, 187, 168, 160, 32, 181, 70, 156, 178, 213}
	if got := telemetrySubscriptionID([]string{}, 300000, id); got != -1667157269 {
		t.Fatalf("subscription id %d, Kafka's is -1667157269", got)
	}
	// Kafka 4.4.0's answers with subscriptions present.
	for _, tc := range []struct {
		id       [16]byte
		metrics  []string
		interval int32
		want     int32
	}{
		{[16]byte{81, 64, 94, 145, 119, 48, 79, 194, 164, 176, 123, 137, 61, 119, 18, 195}, []string{"org.apache.kafka.producer.", "a"}, 100, 764973339},
		{[16]byte{6, 249, 46, 123, 253, 54, 69, 18, 154, 48, 161, 146, 118, 42, 196, 100}, []string{"a"}, 100, -1739709451},
	} {
		if got := telemetrySubscriptionID(tc.metrics, tc.interval, tc.id); got != tc.want {
			t.Errorf("subscription id %d for %v, Kafka's is %d", got, tc.metrics, tc.want)
		}
	}
	b := apiTestBroker(t)
	get := kmsg.NewPtrGetTelemetrySubscriptionsRequest()
	sub := call[*kmsg.GetTelemetrySubscriptionsResponse](t, b, "PLAINTEXT", get, 0)
	if sub.ClientInstanceID == ([16]byte{}) || len(sub.RequestedMetrics) != 0 || sub.PushIntervalMillis != 300000 || sub.TelemetryMaxBytes != 1048576 {
		t.Fatalf("subscription %+v", sub)
	}
	push := func(id [16]byte, sub int32, compression int8) int16 {
		r := kmsg.NewPtrPushTelemetryRequest()
		r.ClientInstanceID, r.SubscriptionID, r.CompressionType, r.Metrics = id, sub, compression, []byte("x")
		return call[*kmsg.PushTelemetryResponse](t, b, "PLAINTEXT", r, 0).ErrorCode
	}
	for _, tc := range []struct {
		id          [16]byte
		sub         int32
		compression int8
		want        int16
	}{
		{sub.ClientInstanceID, sub.SubscriptionID, 4, 0},
		{[16]byte{}, 0, 0, kerr.InvalidRequest.Code},
		{[16]byte{15: 1}, 0, 0, kerr.InvalidRequest.Code},
		{sub.ClientInstanceID, sub.SubscriptionID + 1, 0, kerr.UnknownSubscriptionID.Code},
		{sub.ClientInstanceID, sub.SubscriptionID, 9, kerr.UnsupportedCompressionType.Code},
	} {
		if got := push(tc.id, tc.sub, tc.compression); got != tc.want {
			t.Errorf("push %x sub %d compression %d: %d, want %d", tc.id, tc.sub, tc.compression, got, tc.want)
		}
	}
}

func TestDescribeClientQuotasFromImage(t *testing.T) {
	b := apiTestBroker(t)
	alice := "alice"
	comp := func(typ string, match int8, name *string) kmsg.DescribeClientQuotasRequestComponent {
		return kmsg.DescribeClientQuotasRequestComponent{EntityType: typ, MatchType: kmsg.QuotasMatchType(match), Match: name}
	}
	for _, tc := range []struct {
		name    string
		comps   []kmsg.DescribeClientQuotasRequestComponent
		strict  bool
		code    int16
		entries int
	}{
		{"all", nil, false, 0, 1},
		{"exact", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, &alice)}, false, 0, 1},
		{"default user", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, nil)}, false, 0, 0},
		{"specified client-id", []kmsg.DescribeClientQuotasRequestComponent{comp("client-id", 2, nil)}, false, 0, 0},
		{"strict none", nil, true, 0, 0},
		{"exact without name", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 0, nil)}, false, kerr.InvalidRequest.Code, 0},
		{"twice", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 2, nil), comp("user", 2, nil)}, false, kerr.InvalidRequest.Code, 0},
		{"ip with user", []kmsg.DescribeClientQuotasRequestComponent{comp("ip", 2, nil), comp("user", 2, nil)}, false, kerr.InvalidRequest.Code, 0},
		{"custom type", []kmsg.DescribeClientQuotasRequestComponent{comp("group", 2, nil)}, false, kerr.UnsupportedVersion.Code, 0},
		{"unknown match type", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 3, nil)}, false, kerr.InvalidRequest.Code, 0},
		{"default with a name", []kmsg.DescribeClientQuotasRequestComponent{comp("user", 1, &alice)}, false, kerr.InvalidRequest.Code, 0},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components, req.Strict = tc.comps, tc.strict
		resp := call[*kmsg.DescribeClientQuotasResponse](t, b, "PLAINTEXT", req, 1)
		if resp.ErrorCode != tc.code || len(resp.Entries) != tc.entries || (tc.code == 0 && resp.Entries == nil) {
			t.Errorf("%s: error %d, %d entries (nil %v); want %d, %d", tc.name, resp.ErrorCode, len(resp.Entries), resp.Entries == nil, tc.code, tc.entries)
		}
	}
}

func TestDescribeUserScramCredentialsFromImage(t *testing.T) {
	b := apiTestBroker(t)
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	resp := call[*kmsg.DescribeUserSCRAMCredentialsResponse](t, b, "PLAINTEXT", req, 0)
	if len(resp.Results) != 1 || resp.Results[0].User != "bob" || resp.Results[0].CredentialInfos[0].Iterations != 8192 {
		t.Fatalf("all users: %+v", resp.Results)
	}
	if resp.ErrorMessage == nil || *resp.ErrorMessage != "" {
		t.Errorf("top-level message %v, want Kafka's empty string", resp.ErrorMessage)
	}
	// Kafka's CONTROLLER listener lists the API too.
	if r := call[*kmsg.DescribeUserSCRAMCredentialsResponse](t, b, "CONTROLLER", req, 0); len(r.Results) != 1 {
		t.Errorf("CONTROLLER listener: %+v", r.Results)
	}
	req.Users = []kmsg.DescribeUserSCRAMCredentialsRequestUser{{Name: "bob"}, {Name: "carol"}, {Name: "carol"}}
	resp = call[*kmsg.DescribeUserSCRAMCredentialsResponse](t, b, "PLAINTEXT", req, 0)
	if len(resp.Results) != 2 || resp.Results[0].ErrorCode != 0 || resp.Results[1].ErrorCode != kerr.DuplicateResource.Code {
		t.Fatalf("named users: %+v", resp.Results)
	}
}

// TestUnregisterControllerLocal: without the controller side, the answer is
// decided from the image.
func TestUnregisterControllerLocal(t *testing.T) {
	if controllerServes(94, 0) {
		t.Skip("the CONTROLLER listener serves UnregisterController: it is forwarded")
	}
	b := apiTestBroker(t)
	req := kmsg.NewPtrUnregisterControllerRequest()
	req.ControllerID = 5
	if resp := call[*kmsg.UnregisterControllerResponse](t, b, "PLAINTEXT", req, 0); resp.ErrorCode != kerr.ControllerIDNotRegistered.Code {
		t.Fatalf("unknown controller: %d", resp.ErrorCode)
	}
	req.ControllerID = 3
	if resp := call[*kmsg.UnregisterControllerResponse](t, b, "PLAINTEXT", req, 0); resp.ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("registered controller: %d", resp.ErrorCode)
	}
}

// TestDescribeLogDirsCordoned: v5 marks the dirs of cordoned.log.dirs
// (KIP-1066, here set dynamically once a topic exists: with its only dir
// cordoned the broker takes no new replicas) at metadata.version 4.3-IV0
// and later; AlterReplicaLogDirs to the dir a replica is in is a no-op, to
// an unknown dir LOG_DIR_NOT_FOUND.
func TestDescribeLogDirsCordoned(t *testing.T) {
	dir := t.TempDir()
	// Formatted as kgo-broker format does: metadata.version 4.4-IV2.
	if err := controller.WriteBootstrapCheckpoint(dir, controller.BootstrapRecords(controller.DefaultBootstrapFeatures()), 1000); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, dir, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := n.client(t)
	adm := kadm.NewClient(cl)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, "c"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "cordoned.log.dirs", Value: kadm.StringPtr(dir)}}, 1); err != nil {
		t.Fatal(err)
	}
	var resp *kmsg.DescribeLogDirsResponse
	for {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		// Straight to the broker: kgo's DescribeLogDirs sharding does not carry
		// is_cordoned into its merged answer.
		raw, err := cl.Broker(1).Request(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		resp = raw.(*kmsg.DescribeLogDirsResponse)
		if len(resp.Dirs) == 1 && resp.Dirs[0].IsCordoned || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond) // the dynamic config reaches the image
	}
	if resp.Version != 5 || len(resp.Dirs) != 1 || !resp.Dirs[0].IsCordoned {
		t.Fatalf("v%d %+v", resp.Version, resp.Dirs)
	}
	abs := resp.Dirs[0].Dir
	alter := kmsg.NewPtrAlterReplicaLogDirsRequest()
	alter.Dirs = []kmsg.AlterReplicaLogDirsRequestDir{
		{Dir: abs, Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "c", Partitions: []int32{0}}}},
		{Dir: "/nonexistent", Topics: []kmsg.AlterReplicaLogDirsRequestDirTopic{{Topic: "c", Partitions: []int32{0}}}},
	}
	var got []int16
	for { // the replica exists once the node has become its leader
		raw, err := cl.Broker(1).Request(ctx, alter) // unsharded: results in request order
		if err != nil {
			t.Fatal(err)
		}
		ar := raw.(*kmsg.AlterReplicaLogDirsResponse)
		got = got[:0]
		for _, p := range ar.Topics[0].Partitions {
			got = append(got, p.ErrorCode)
		}
		if got[0] != kerr.ReplicaNotAvailable.Code {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("c-0 has no replica")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if len(got) != 2 || got[0] != 0 || got[1] != kerr.LogDirNotFound.Code {
		t.Fatalf("AlterReplicaLogDirs: %v", got)
	}
}
