package broker

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kgo-broker/kgo-broker/protocol"
)

// controllerClient dials the node's CONTROLLER listener.
func (tn *testNode) controllerClient(t *testing.T) *protocol.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := protocol.Dial(ctx, tn.cfg.QuorumVoters[1].String(), "envelope-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func envelopeOf(req kmsg.Request, version int16, corr int32) *kmsg.EnvelopeRequest {
	req.SetVersion(version)
	env := kmsg.NewPtrEnvelopeRequest()
	env.RequestData = appendRequestWithHeader(nil, req, corr, "the-client")
	env.RequestPrincipal = encodePrincipal(protocol.Anonymous)
	env.ClientHostAddress = []byte{10, 1, 2, 3}
	return env
}

func sendEnvelope(t *testing.T, cl *protocol.Client, env *kmsg.EnvelopeRequest) *kmsg.EnvelopeResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cl.RequestVersion(ctx, env, 0)
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.EnvelopeResponse)
}

func TestEnvelopeOnController(t *testing.T) {
	n := startNode(t, "", nil)
	cl := n.controllerClient(t)

	// A forwarded CreateTopics v7 runs as if the client had sent it; the
	// answer carries the client's correlation id and version.
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "enveloped", 2, 1
	ct.Topics = append(ct.Topics, ctt)
	ct.TimeoutMillis = 10000
	er := sendEnvelope(t, cl, envelopeOf(ct, 7, 4242))
	if er.ErrorCode != 0 {
		t.Fatalf("envelope error %d", er.ErrorCode)
	}
	out := ct.ResponseKind().(*kmsg.CreateTopicsResponse)
	out.SetVersion(7)
	if err := readResponseWithHeader(er.ResponseData, 19, 4242, out); err != nil {
		t.Fatal(err)
	}
	if len(out.Topics) != 1 || out.Topics[0].ErrorCode != 0 || out.Topics[0].NumPartitions != 2 {
		t.Fatalf("create topics: %+v", out)
	}
	if err := readResponseWithHeader(er.ResponseData, 19, 4243, out); err == nil {
		t.Fatal("a foreign correlation id was accepted")
	}

	bad := func(name string, env *kmsg.EnvelopeRequest, want *kerr.Error) {
		t.Helper()
		if r := sendEnvelope(t, cl, env); r.ErrorCode != want.Code || r.ResponseData != nil {
			t.Errorf("%s: error %d data %d bytes, want %s", name, r.ErrorCode, len(r.ResponseData), want.Message)
		}
	}
	env := envelopeOf(ct, 7, 1)
	env.RequestPrincipal = nil
	bad("no principal", env, kerr.PrincipalDeserializationFailure)
	env = envelopeOf(ct, 7, 1)
	env.RequestPrincipal = []byte{0, 1, 0}
	bad("principal v1", env, kerr.PrincipalDeserializationFailure)
	env = envelopeOf(ct, 7, 1)
	env.ClientHostAddress = []byte{1, 2, 3}
	bad("3-byte address", env, kerr.InvalidRequest)
	env = envelopeOf(ct, 7, 1)
	env.RequestData = []byte{0, 19, 0}
	bad("short header", env, kerr.UnsupportedVersion)
	env = envelopeOf(ct, 7, 1)
	env.RequestData[0], env.RequestData[1] = 0x7f, 0x00
	bad("unknown key", env, kerr.UnsupportedVersion)
	bad("not forwardable", envelopeOf(kmsg.NewPtrMetadataRequest(), 12, 1), kerr.InvalidRequest)
	bad("nested envelope", envelopeOf(envelopeOf(ct, 7, 1), 0, 1), kerr.InvalidRequest)
	env = envelopeOf(ct, 7, 1)
	env.RequestData[3] = 99 // version 99
	bad("unsupported version", env, kerr.UnsupportedVersion)
	env = envelopeOf(ct, 7, 1)
	env.RequestData = env.RequestData[:len(env.RequestData)-3]
	bad("truncated body", env, kerr.UnsupportedVersion)

	// IPv6 client addresses are fine, and DescribeQuorum works forwarded.
	dq := kmsg.NewPtrDescribeQuorumRequest()
	dt := kmsg.NewDescribeQuorumRequestTopic()
	dt.Topic = "__cluster_metadata"
	dt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	dq.Topics = append(dq.Topics, dt)
	env = envelopeOf(dq, 2, 7)
	env.ClientHostAddress = net.ParseIP("::1")
	er = sendEnvelope(t, cl, env)
	dqr := dq.ResponseKind().(*kmsg.DescribeQuorumResponse)
	dqr.SetVersion(2)
	if er.ErrorCode != 0 {
		t.Fatalf("describe quorum: envelope error %d", er.ErrorCode)
	}
	if err := readResponseWithHeader(er.ResponseData, 55, 7, dqr); err != nil || dqr.Topics[0].Partitions[0].LeaderID != 1 {
		t.Fatalf("describe quorum: %v %+v", err, dqr)
	}

	// Envelope is not served on a client listener: the connection closes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bcl, err := protocol.Dial(ctx, n.addr, "envelope-test")
	if err != nil {
		t.Fatal(err)
	}
	defer bcl.Close()
	if _, _, ok := bcl.Versions(58); ok {
		t.Error("a client listener advertises Envelope")
	}
	if _, err := bcl.RequestVersion(ctx, envelopeOf(ct, 7, 1), 0); err == nil {
		t.Error("a client listener answered an Envelope")
	}
}

// TestForwardThroughEnvelope: admin requests sent to the broker reach the
// controller in an Envelope (the node has the controller role, so the
// forwarding path is the real one, over its CONTROLLER listener).
func TestForwardThroughEnvelope(t *testing.T) {
	n := startNode(t, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(n.client(t))
	if r, err := adm.CreateTopic(ctx, 1, 1, nil, "fwd"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	if _, err := adm.CreatePartitions(ctx, 3, "fwd"); err != nil {
		t.Fatal(err)
	}
	if r, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1234")}}, "fwd"); err != nil || r[0].Err != nil {
		t.Fatalf("alter configs: %v %+v", err, r)
	}
	if r, err := adm.DeleteTopics(ctx, "fwd"); err != nil || r["fwd"].Err != nil {
		t.Fatalf("delete: %v %+v", err, r)
	}
	// The in-process request goes through the same Forward: a request
	// decoded from a frame, with the client's header.
	req := &protocol.Request{Key: 19, Version: 5, CorrelationID: 99, ClientID: "direct", RemoteAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}}
	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "fwd-direct", 1, 1
	ct.Topics, ct.TimeoutMillis = append(ct.Topics, ctt), 10000
	req.Msg = ct
	resp, err := n.channel.Forward(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	cr := resp.(*kmsg.CreateTopicsResponse)
	if cr.Version != 5 || len(cr.Topics) != 1 || cr.Topics[0].ErrorCode != 0 {
		t.Fatalf("forwarded: %+v", cr)
	}
}

// TestControllerRegistration: the node registers as a controller
// (KIP-919), the active controller writes the RegisterControllerRecord, and
// DescribeCluster on the CONTROLLER listener lists the registration.
func TestControllerRegistration(t *testing.T) {
	n := startNode(t, "", nil)
	select {
	case <-n.ctrlReg.registered:
	case <-time.After(30 * time.Second):
		t.Fatal("the controller did not register")
	}
	c := n.cache.Image().Controller(1)
	if c == nil || c.IncarnationID != n.ctrlReg.req.IncarnationID || len(c.Listeners) != 1 || c.Listeners[0].Name != "CONTROLLER" ||
		c.SupportedFeatures["metadata.version"].Max == 0 || c.ZkMigrationReady {
		t.Fatalf("registration %+v", c)
	}
	if got := n.ctrl.Image().Controller(1); got == nil || got.IncarnationID != c.IncarnationID {
		t.Fatalf("controller image %+v", got)
	}
	cl := n.controllerClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.EndpointType = endpointTypeController
	resp, err := cl.Request(ctx, dc)
	if err != nil {
		t.Fatal(err)
	}
	dr := resp.(*kmsg.DescribeClusterResponse)
	hp := n.cfg.QuorumVoters[1]
	if dr.ErrorCode != 0 || len(dr.Brokers) != 1 || dr.Brokers[0].NodeID != 1 || dr.Brokers[0].Host != hp.Host || dr.Brokers[0].Port != hp.Port {
		t.Fatalf("describe cluster %+v", dr)
	}
}
